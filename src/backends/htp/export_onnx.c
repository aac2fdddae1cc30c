/* export_onnx.c — the htp backend's eg_backend_rt.export_onnx (eg_model_export_onnx of the public
 * API, api/program_info.c): an NPU partition of a compiled program as a standard
 * ONNX model, so that another implementation of QNN's op semantics — ONNX Runtime's CPU, and
 * Qualcomm's own HTP backend behind ONNX Runtime's QNN execution provider — can run exactly the
 * function edgegrad's executor runs and be compared with it (docs/onnx-export.md).
 *
 * The model is written op for op from the partition's QNN graph (backends/htp/qnn_graph.h):
 *   - graph inputs and outputs are the partition's boundary tensors as the CPU side holds them
 *     (the IR value's NCHW layout and dtype), named by eg_export_name; a value held NHWC
 *     inside the graph gets a Transpose, an int64 value held as int32 a Cast, at the boundary;
 *   - STATIC tensors are initializers in their QNN layout and dtype, each stored once however
 *     many ops read it (a frozen weight shared by a forward Conv2d and a backward Transpose);
 *   - each QNN op becomes the ONNX op(s) that compute it; layout-bound ops (convolutions,
 *     pooling, instance and group norm) are NCHW in ONNX, so their NHWC operands pass through
 *     Transposes, which ONNX Runtime's layout transformation cancels again for the QNN EP;
 *   - every node's name is its QNN op's name (the IR node's name, or "<node>_op<k>"), the
 *     helper nodes a translation adds "<op>/<role>"; every tensor is typed and shaped.
 * Quantized (fixed-point) tensors are not exported: such a partition is refused by name. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/htp/runtime.h"
#include "backends/htp/values.h"
#include "util/error.h"
#include "util/names.h"
#include "util/file.h"
#include "util/protobuf.h"

/* onnx.proto field numbers and enums (ONNX IR version 8, default domain opset 17). */
enum { ONNX_IR_VERSION = 8, ONNX_OPSET = 17 };
enum { MODEL_IR_VERSION = 1, MODEL_PRODUCER_NAME = 2, MODEL_PRODUCER_VERSION = 3,
       MODEL_DOC = 6, MODEL_GRAPH = 7, MODEL_OPSET = 8, MODEL_METADATA = 14 };
enum { OPSET_DOMAIN = 1, OPSET_VERSION = 2 };
enum { KV_KEY = 1, KV_VALUE = 2 };
enum { GRAPH_NODE = 1, GRAPH_NAME = 2, GRAPH_INIT = 5, GRAPH_DOC = 10, GRAPH_INPUT = 11,
       GRAPH_OUTPUT = 12, GRAPH_VALUE_INFO = 13 };
enum { NODE_INPUT = 1, NODE_OUTPUT = 2, NODE_NAME = 3, NODE_OP = 4, NODE_ATTR = 5 };
enum { ATTR_NAME = 1, ATTR_F = 2, ATTR_I = 3, ATTR_INTS = 8, ATTR_TYPE = 20 };
enum { ATTR_TYPE_FLOAT = 1, ATTR_TYPE_INT = 2, ATTR_TYPE_INTS = 7 };
enum { TENSOR_DIMS = 1, TENSOR_TYPE = 2, TENSOR_NAME = 8, TENSOR_RAW = 9 };
enum { VI_NAME = 1, VI_TYPE = 2 };
enum { TYPE_TENSOR = 1, TT_ELEM = 1, TT_SHAPE = 2, SHAPE_DIM = 1, DIM_VALUE = 1 };
enum { ONNX_FLOAT = 1, ONNX_UINT8 = 2, ONNX_INT8 = 3, ONNX_INT32 = 6, ONNX_INT64 = 7,
       ONNX_BOOL = 9, ONNX_FLOAT16 = 10, ONNX_DOUBLE = 11, ONNX_UINT32 = 12 };

#define MAX_IO 8 /* inputs or outputs of one emitted ONNX node (Conv: 3, Slice: 5) */

typedef struct exporter {
  const eg_graph *ir;     /* the compiled graph */
  const eg_lowered *hp;
  const eg_htp_qnn_graph *g;
  const char *part_name;
  char **name;           /* per QNN tensor: its ONNX name */
  char **used;           /* every ONNX name given so far (a hash set, open addressing) */
  size_t n_used, cap_used;
  eg_pb nodes, inits, inputs, outputs, infos;
  const char *op;        /* the QNN op being translated (messages, helper node names) */
  const char *op_type;   /* its QNN type */
  int helper;            /* helper nodes of that op so far */
  eg_status status;      /* first failure (out of memory, an op not exportable) */
} exporter;

/* ---- names ---- */

static uint64_t hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static bool name_used(const exporter *x, const char *s) {
  if (!x->cap_used) return false;
  for (size_t i = hash(s) & (x->cap_used - 1); x->used[i]; i = (i + 1) & (x->cap_used - 1))
    if (strcmp(x->used[i], s) == 0) return true;
  return false;
}

static bool fail_nomem(exporter *x) {
  if (x->status == EG_OK)
    x->status = eg_error(EG_ERR_NOMEM, "export-onnx: %s: out of memory", x->part_name);
  return false;
}

/* Records `s` (owned by the set from now on). */
static bool name_add(exporter *x, char *s) {
  if (2 * (x->n_used + 1) > x->cap_used) {
    size_t cap = x->cap_used ? 2 * x->cap_used : 256;
    char **more = calloc(cap, sizeof *more);
    if (!more) return free(s), fail_nomem(x);
    for (size_t i = 0; i < x->cap_used; i++) {
      if (!x->used[i]) continue;
      size_t j = hash(x->used[i]) & (cap - 1);
      while (more[j]) j = (j + 1) & (cap - 1);
      more[j] = x->used[i];
    }
    free(x->used);
    x->used = more;
    x->cap_used = cap;
  }
  size_t i = hash(s) & (x->cap_used - 1);
  while (x->used[i]) i = (i + 1) & (x->cap_used - 1);
  x->used[i] = s;
  x->n_used++;
  return true;
}

/* A name not given yet: `base`, else base_2, base_3, ... NULL when out of memory. The set owns
 * the result. */
static const char *unique(exporter *x, const char *base) {
  size_t n = strlen(base) + 24;
  char *s = malloc(n);
  if (!s) return fail_nomem(x), NULL;
  snprintf(s, n, "%s", base);
  for (int k = 2; name_used(x, s); k++) snprintf(s, n, "%s_%d", base, k);
  return name_add(x, s) ? s : NULL;
}

/* ---- dtypes ---- */

static int onnx_qnn_dtype(eg_htp_qnn_dtype d) {
  switch (d) {
  case EG_HTP_QNN_DTYPE_FLOAT_32: return ONNX_FLOAT;
  case EG_HTP_QNN_DTYPE_FLOAT_16: return ONNX_FLOAT16;
  case EG_HTP_QNN_DTYPE_INT_32: return ONNX_INT32;
  case EG_HTP_QNN_DTYPE_UINT_32: return ONNX_UINT32;
  case EG_HTP_QNN_DTYPE_INT_8: return ONNX_INT8;
  case EG_HTP_QNN_DTYPE_UINT_8: return ONNX_UINT8;
  case EG_HTP_QNN_DTYPE_BOOL_8: return ONNX_BOOL;
  default: return 0; /* fixed point: not exported */
  }
}

static int onnx_ir_dtype(eg_dtype d) {
  switch (d) {
  case EG_DTYPE_FLOAT32: return ONNX_FLOAT;
  case EG_DTYPE_FLOAT64: return ONNX_DOUBLE;
  case EG_DTYPE_FLOAT16: return ONNX_FLOAT16;
  case EG_DTYPE_INT64: return ONNX_INT64;
  case EG_DTYPE_INT32: return ONNX_INT32;
  case EG_DTYPE_INT8: return ONNX_INT8;
  case EG_DTYPE_UINT8: return ONNX_UINT8;
  case EG_DTYPE_BOOL: return ONNX_BOOL;
  default: return 0;
  }
}

/* ---- graph pieces ---- */

/* A ValueInfoProto: name, tensor type `elem` and dims. */
static void value_info(exporter *x, eg_pb *list, uint32_t field, const char *name, int elem,
                       int rank, const int64_t *dims) {
  eg_pb shape = {0}, tt = {0}, type = {0}, vi = {0};
  for (int d = 0; d < rank; d++) {
    eg_pb dim = {0};
    eg_pb_int(&dim, DIM_VALUE, dims[d]);
    eg_pb_message(&shape, SHAPE_DIM, &dim);
    eg_pb_free(&dim);
  }
  eg_pb_int(&tt, TT_ELEM, elem);
  eg_pb_message(&tt, TT_SHAPE, &shape);
  eg_pb_message(&type, TYPE_TENSOR, &tt);
  eg_pb_string(&vi, VI_NAME, name);
  eg_pb_message(&vi, VI_TYPE, &type);
  eg_pb_message(list, field, &vi);
  eg_pb_free(&shape);
  eg_pb_free(&tt);
  eg_pb_free(&type);
  eg_pb_free(&vi);
  (void)x;
}

static void qnn_dims(const eg_htp_qnn_tensor *t, int64_t *dims) {
  for (int d = 0; d < t->rank; d++) dims[d] = t->dims[d];
}

/* An initializer of `elem` type and dims holding `size` raw (little-endian) bytes. */
static void initializer(exporter *x, const char *name, int elem, int rank, const int64_t *dims,
                        const void *data, size_t size) {
  eg_pb t = {0};
  for (int d = 0; d < rank; d++) eg_pb_int(&t, TENSOR_DIMS, dims[d]);
  eg_pb_int(&t, TENSOR_TYPE, elem);
  eg_pb_string(&t, TENSOR_NAME, name);
  eg_pb_bytes(&t, TENSOR_RAW, data, size);
  eg_pb_message(&x->inits, GRAPH_INIT, &t);
  eg_pb_free(&t);
}

/* A helper constant of the op being translated: int64 values (shapes, axes) or one float. */
static const char *const_i64(exporter *x, const char *role, const int64_t *v, int n) {
  char base[320];
  snprintf(base, sizeof base, "%s/%s", x->op, role);
  const char *name = unique(x, base);
  if (!name) return NULL;
  unsigned char raw[8 * EG_HTP_QNN_MAX_RANK * 2];
  EG_ASSERT(n >= 0 && (size_t)n * 8 <= sizeof raw);
  for (int i = 0; i < n; i++)
    for (int b = 0; b < 8; b++) raw[8 * i + b] = (unsigned char)((uint64_t)v[i] >> (8 * b));
  const int64_t dims[1] = {n};
  initializer(x, name, ONNX_INT64, 1, dims, raw, (size_t)n * 8);
  return name;
}

static const char *const_f32(exporter *x, const char *role, float v, int rank, int64_t count) {
  char base[320];
  snprintf(base, sizeof base, "%s/%s", x->op, role);
  const char *name = unique(x, base);
  if (!name) return NULL;
  float *data = malloc((size_t)count * sizeof *data);
  if (!data) return fail_nomem(x), NULL;
  for (int64_t i = 0; i < count; i++) data[i] = v;
  const int64_t dims[1] = {count};
  initializer(x, name, ONNX_FLOAT, rank, dims, data, (size_t)count * sizeof *data);
  free(data);
  return name;
}

/* Attributes, appended to a node's attribute list. */
static void attr_int(eg_pb *attrs, const char *name, int64_t v) {
  eg_pb a = {0};
  eg_pb_string(&a, ATTR_NAME, name);
  eg_pb_int(&a, ATTR_I, v);
  eg_pb_int(&a, ATTR_TYPE, ATTR_TYPE_INT);
  eg_pb_message(attrs, NODE_ATTR, &a);
  eg_pb_free(&a);
}

static void attr_float(eg_pb *attrs, const char *name, float v) {
  eg_pb a = {0};
  eg_pb_string(&a, ATTR_NAME, name);
  eg_pb_float(&a, ATTR_F, v);
  eg_pb_int(&a, ATTR_TYPE, ATTR_TYPE_FLOAT);
  eg_pb_message(attrs, NODE_ATTR, &a);
  eg_pb_free(&a);
}

static void attr_ints(eg_pb *attrs, const char *name, const int64_t *v, int n) {
  eg_pb a = {0};
  eg_pb_string(&a, ATTR_NAME, name);
  for (int i = 0; i < n; i++) eg_pb_int(&a, ATTR_INTS, v[i]);
  eg_pb_int(&a, ATTR_TYPE, ATTR_TYPE_INTS);
  eg_pb_message(attrs, NODE_ATTR, &a);
  eg_pb_free(&a);
}

/* A node `type` named `name` (NULL: the next helper name of the op); inputs may hold "" for an
 * omitted optional input. `attrs` (may be NULL) is consumed. */
static void node(exporter *x, const char *type, const char *name, const char *const *in, int n_in,
                 const char *const *out, int n_out, eg_pb *attrs) {
  eg_pb nd = {0};
  for (int i = 0; i < n_in; i++) eg_pb_string(&nd, NODE_INPUT, in[i] ? in[i] : "");
  for (int i = 0; i < n_out; i++) eg_pb_string(&nd, NODE_OUTPUT, out[i]);
  char helper[320];
  if (!name) {
    snprintf(helper, sizeof helper, "%s/%s_%d", x->op, type, ++x->helper);
    name = helper;
  }
  eg_pb_string(&nd, NODE_NAME, name);
  eg_pb_string(&nd, NODE_OP, type);
  if (attrs) { /* its NODE_ATTR fields, written already */
    eg_pb_append(&nd, attrs);
    eg_pb_free(attrs);
  }
  eg_pb_message(&x->nodes, GRAPH_NODE, &nd);
  eg_pb_free(&nd);
}

/* A helper tensor of the op: a fresh name, typed and shaped in value_info. */
static const char *helper_tensor(exporter *x, const char *role, int elem, int rank,
                                 const int64_t *dims) {
  char base[320];
  snprintf(base, sizeof base, "%s/%s", x->op, role);
  const char *name = unique(x, base);
  if (name) value_info(x, &x->infos, GRAPH_VALUE_INFO, name, elem, rank, dims);
  return name;
}

/* Transpose of `in` (elem, rank, dims) by perm into `out` (NULL: a helper tensor); returns
 * the output's name. */
static const char *transpose(exporter *x, const char *in, int elem, int rank, const int64_t *dims,
                             const int *perm, const char *out, const char *role) {
  int64_t od[EG_HTP_QNN_MAX_RANK], p[EG_HTP_QNN_MAX_RANK];
  for (int i = 0; i < rank; i++) {
    od[i] = dims[perm[i]];
    p[i] = perm[i];
  }
  if (!out) out = helper_tensor(x, role, elem, rank, od);
  if (!out) return NULL;
  eg_pb attrs = {0};
  attr_ints(&attrs, "perm", p, rank);
  node(x, "Transpose", NULL, &in, 1, &out, 1, &attrs);
  return out;
}

/* ---- ops ---- */

/* One QNN op being translated. in / in_name hold at least MAX_IO entries (those past the op's
 * inputs NULL: an absent optional input) and as many as its inputs (a Concat may have dozens). */
typedef struct op_ctx {
  const eg_htp_qnn_op_node *op;
  const eg_htp_qnn_tensor **in;
  const char **in_name;
  const eg_htp_qnn_tensor *out;
  const char *out_name;
} op_ctx;

static const int TO_NCHW[4] = {0, 3, 1, 2}, TO_NHWC[4] = {0, 2, 3, 1};

static eg_status unsupported(exporter *x, const char *what) {
  if (x->status == EG_OK)
    x->status = eg_error(EG_ERR_UNSUPPORTED, "export-onnx: %s: op %s (%s): %s", x->part_name,
                         x->op, x->op_type, what);
  return x->status;
}

/* in[i] as an NCHW tensor (a Transpose of the NHWC operand). */
static const char *nchw(exporter *x, const op_ctx *c, int i, const char *role) {
  int64_t d[4];
  qnn_dims(c->in[i], d);
  return transpose(x, c->in_name[i], onnx_qnn_dtype(c->in[i]->dtype), 4, d, TO_NCHW, NULL, role);
}

/* The op's NCHW result tensor (a helper), and the Transpose that makes it the NHWC output. */
static const char *nchw_result(exporter *x, const op_ctx *c) {
  int64_t d[4], n[4];
  qnn_dims(c->out, d);
  for (int i = 0; i < 4; i++) n[i] = d[TO_NCHW[i]];
  return helper_tensor(x, "out_nchw", onnx_qnn_dtype(c->out->dtype), 4, n);
}

static void to_nhwc_output(exporter *x, const op_ctx *c, const char *y) {
  int64_t d[4], n[4];
  qnn_dims(c->out, d);
  for (int i = 0; i < 4; i++) n[i] = d[TO_NCHW[i]];
  transpose(x, y, onnx_qnn_dtype(c->out->dtype), 4, n, TO_NHWC, c->out_name, NULL);
}

/* A filter in the QNN layout as the ONNX layout (perm over its 4 dims). */
static const char *filter(exporter *x, const op_ctx *c, const int *perm) {
  int64_t d[4];
  qnn_dims(c->in[1], d);
  return transpose(x, c->in_name[1], onnx_qnn_dtype(c->in[1]->dtype), 4, d, perm, NULL, "filter");
}

static void conv_attrs(eg_pb *a, const eg_htp_qnn_conv_attrs *ca, const eg_htp_qnn_tensor *w, int kh_axis) {
  const int64_t k[2] = {w->dims[kh_axis], w->dims[kh_axis + 1]};
  const int64_t s[2] = {ca->stride[0], ca->stride[1]};
  const int64_t pads[4] = {ca->pad[0][0], ca->pad[1][0], ca->pad[0][1], ca->pad[1][1]};
  attr_ints(a, "kernel_shape", k, 2);
  attr_ints(a, "strides", s, 2);
  attr_ints(a, "pads", pads, 4);
}

static void conv(exporter *x, const op_ctx *c) {
  static const int HWIO_TO_OIHW[4] = {3, 2, 0, 1}, HWIC_TO_IOHW[4] = {2, 3, 0, 1};
  const eg_htp_qnn_conv_attrs *ca = &c->op->attrs.conv;
  const eg_htp_qnn_op t = c->op->type;
  const char *in[3] = {nchw(x, c, 0, "in_nchw"),
                       filter(x, c, t == EG_HTP_QNN_OP_TRANSPOSE_CONV_2D ? HWIC_TO_IOHW : HWIO_TO_OIHW),
                       c->op->n_inputs > 2 && c->op->inputs[2] >= 0 ? c->in_name[2] : NULL};
  const char *y = nchw_result(x, c);
  if (!in[0] || !in[1] || !y) return;
  eg_pb a = {0};
  conv_attrs(&a, ca, c->in[1], 0);
  if (t == EG_HTP_QNN_OP_TRANSPOSE_CONV_2D) {
    const int64_t op[2] = {ca->output_padding[0], ca->output_padding[1]};
    attr_ints(&a, "output_padding", op, 2);
    attr_int(&a, "group", ca->group);
  } else {
    const int64_t dil[2] = {ca->dilation[0], ca->dilation[1]};
    attr_ints(&a, "dilations", dil, 2);
    attr_int(&a, "group", t == EG_HTP_QNN_OP_DEPTH_WISE_CONV_2D ? c->in[0]->dims[3] : ca->group);
  }
  node(x, t == EG_HTP_QNN_OP_TRANSPOSE_CONV_2D ? "ConvTranspose" : "Conv", c->op->name, in,
       in[2] ? 3 : 2, &y, 1, &a);
  to_nhwc_output(x, c, y);
}

static void pool(exporter *x, const op_ctx *c) {
  const eg_htp_qnn_pool_attrs *pa = &c->op->attrs.pool;
  const char *in = nchw(x, c, 0, "in_nchw"), *y = nchw_result(x, c);
  if (!in || !y) return;
  eg_pb a = {0};
  const int64_t k[2] = {pa->filter[0], pa->filter[1]}, s[2] = {pa->stride[0], pa->stride[1]};
  const int64_t pads[4] = {pa->pad[0][0], pa->pad[1][0], pa->pad[0][1], pa->pad[1][1]};
  attr_ints(&a, "kernel_shape", k, 2);
  attr_ints(&a, "strides", s, 2);
  attr_ints(&a, "pads", pads, 4);
  attr_int(&a, "ceil_mode", pa->rounding_mode == 1);
  const bool avg = c->op->type == EG_HTP_QNN_OP_POOL_AVG_2D;
  if (avg) attr_int(&a, "count_include_pad", pa->count_pad_for_edges);
  node(x, avg ? "AveragePool" : "MaxPool", c->op->name, &in, 1, &y, 1, &a);
  to_nhwc_output(x, c, y);
}

/* Swaps the last two dims of in[i] when `swap` (MatMul's transpose_in0 / transpose_in1). */
static const char *last_two(exporter *x, const op_ctx *c, int i, bool swap, const char *role) {
  if (!swap) return c->in_name[i];
  const int r = c->in[i]->rank;
  int perm[EG_HTP_QNN_MAX_RANK];
  int64_t d[EG_HTP_QNN_MAX_RANK];
  for (int k = 0; k < r; k++) perm[k] = k;
  perm[r - 2] = r - 1;
  perm[r - 1] = r - 2;
  qnn_dims(c->in[i], d);
  return transpose(x, c->in_name[i], onnx_qnn_dtype(c->in[i]->dtype), r, d, perm, NULL, role);
}

/* y = a @ b (+ bias): MatMul, then Add when there is a bias. */
static void matmul_bias(exporter *x, const op_ctx *c, const char *a, const char *b) {
  const bool bias = c->op->n_inputs > 2 && c->op->inputs[2] >= 0;
  int64_t d[EG_HTP_QNN_MAX_RANK];
  qnn_dims(c->out, d);
  const char *y = bias ? helper_tensor(x, "product", onnx_qnn_dtype(c->out->dtype), c->out->rank, d)
                       : c->out_name;
  if (!a || !b || !y) return;
  const char *in[2] = {a, b};
  node(x, "MatMul", c->op->name, in, 2, &y, 1, NULL);
  if (bias) {
    const char *add[2] = {y, c->in_name[2]};
    node(x, "Add", NULL, add, 2, &c->out_name, 1, NULL);
  }
}

static void mat_mul(exporter *x, const op_ctx *c) {
  matmul_bias(x, c, last_two(x, c, 0, c->op->attrs.matmul.transpose_in0, "in0_t"),
              last_two(x, c, 1, c->op->attrs.matmul.transpose_in1, "in1_t"));
}

/* FullyConnected: in[0] flattened to [rows, n] (keep_dims: as it is) times weights [units, n]
 * transposed, plus bias. */
static void fully_connected(exporter *x, const op_ctx *c) {
  const eg_htp_qnn_tensor *w = c->in[1];
  const char *a = c->in_name[0];
  if (!c->op->attrs.fully_connected.keep_dims && c->in[0]->rank != 2) {
    const int64_t shape[2] = {eg_htp_qnn_tensor_numel(c->in[0]) / w->dims[1], w->dims[1]};
    const char *s = const_i64(x, "rows", shape, 2);
    const char *r = helper_tensor(x, "in_rows", onnx_qnn_dtype(c->in[0]->dtype), 2, shape);
    if (!s || !r) return;
    const char *in[2] = {a, s};
    node(x, "Reshape", NULL, in, 2, &r, 1, NULL);
    a = r;
  }
  static const int SWAP[2] = {1, 0};
  int64_t d[2];
  qnn_dims(w, d);
  matmul_bias(x, c, a, transpose(x, c->in_name[1], onnx_qnn_dtype(w->dtype), 2, d, SWAP, NULL,
                                 "weights_t"));
}

static void one_to_one(exporter *x, const op_ctx *c, const char *type, eg_pb *attrs) {
  node(x, type, c->op->name, c->in_name, c->op->n_inputs, &c->out_name, 1, attrs);
}

static void reshape(exporter *x, const op_ctx *c) {
  int64_t d[EG_HTP_QNN_MAX_RANK];
  qnn_dims(c->out, d);
  const char *in[2] = {c->in_name[0], const_i64(x, "shape", d, c->out->rank)};
  if (in[1]) node(x, "Reshape", c->op->name, in, 2, &c->out_name, 1, NULL);
}

/* Tile: ONNX Tile, its repeats an int64 initializer of the multiples. */
static void tile(exporter *x, const op_ctx *c) {
  int64_t m[EG_HTP_QNN_MAX_RANK];
  for (int d = 0; d < c->in[0]->rank; d++) m[d] = c->op->attrs.tile.multiples[d];
  const char *in[2] = {c->in_name[0], const_i64(x, "repeats", m, c->in[0]->rank)};
  if (in[1]) node(x, "Tile", c->op->name, in, 2, &c->out_name, 1, NULL);
}

static void strided_slice(exporter *x, const op_ctx *c) {
  const eg_htp_qnn_param *p = eg_htp_qnn_op_param(c->op, "ranges");
  const int r = c->in[0]->rank;
  int64_t v[4][EG_HTP_QNN_MAX_RANK];
  for (int d = 0; d < r; d++) {
    v[0][d] = p->values.i32[3 * d];
    v[1][d] = p->values.i32[3 * d + 1];
    v[2][d] = d;
    v[3][d] = p->values.i32[3 * d + 2];
  }
  const char *in[5] = {c->in_name[0], const_i64(x, "starts", v[0], r),
                       const_i64(x, "ends", v[1], r), const_i64(x, "axes", v[2], r),
                       const_i64(x, "steps", v[3], r)};
  if (in[1] && in[2] && in[3] && in[4]) node(x, "Slice", c->op->name, in, 5, &c->out_name, 1, NULL);
}

/* Pad (scheme CONSTANT, check_pad) -> ONNX Pad, mode constant: pads [befores..., afters...]
 * and the fill as a scalar constant_value. */
static void pad(exporter *x, const op_ctx *c) {
  const eg_htp_qnn_param *p = eg_htp_qnn_op_param(c->op, "pad_amount");
  const int r = c->in[0]->rank;
  int64_t v[2 * EG_HTP_QNN_MAX_RANK];
  for (int d = 0; d < r; d++) {
    v[d] = p->values.u32[2 * d];
    v[r + d] = p->values.u32[2 * d + 1];
  }
  const char *in[3] = {c->in_name[0], const_i64(x, "pads", v, 2 * r),
                       const_f32(x, "constant_value", c->op->attrs.pad.value, 0, 1)};
  if (in[1] && in[2]) node(x, "Pad", c->op->name, in, 3, &c->out_name, 1, NULL);
}

static void reduce(exporter *x, const op_ctx *c) {
  int64_t axes[EG_HTP_QNN_MAX_RANK];
  int n = 0;
  for (int d = 0; d < c->in[0]->rank; d++)
    if (c->op->attrs.reduce.mask >> d & 1u) axes[n++] = d;
  eg_pb a = {0};
  attr_int(&a, "keepdims", c->op->attrs.reduce.keep_dims);
  if (c->op->type != EG_HTP_QNN_OP_REDUCE_SUM) { /* opset 17: axes an attribute */
    attr_ints(&a, "axes", axes, n);
    one_to_one(x, c, c->op->type == EG_HTP_QNN_OP_REDUCE_MAX ? "ReduceMax" : "ReduceMean", &a);
    return;
  }
  const char *in[2] = {c->in_name[0], const_i64(x, "axes", axes, n)};
  if (in[1]) node(x, "ReduceSum", c->op->name, in, 2, &c->out_name, 1, &a);
  else eg_pb_free(&a);
}

static void rsqrt(exporter *x, const op_ctx *c) {
  int64_t d[EG_HTP_QNN_MAX_RANK];
  qnn_dims(c->out, d);
  const char *s = helper_tensor(x, "sqrt", onnx_qnn_dtype(c->out->dtype), c->out->rank, d);
  if (!s) return;
  node(x, "Sqrt", c->op->name, c->in_name, 1, &s, 1, NULL);
  node(x, "Reciprocal", NULL, &s, 1, &c->out_name, 1, NULL);
}

static void relu_min_max(exporter *x, const op_ctx *c) {
  const char *in[3] = {c->in_name[0], const_f32(x, "min", c->op->attrs.relu_min_max.min_value, 0, 1),
                       const_f32(x, "max", c->op->attrs.relu_min_max.max_value, 0, 1)};
  if (in[1] && in[2]) node(x, "Clip", c->op->name, in, 3, &c->out_name, 1, NULL);
}

/* ElementWiseNeuron's two modelled operations are ONNX ops of their own (QNN's EP maps them
 * back to ElementWiseNeuron). */
static void neuron(exporter *x, const op_ctx *c) {
  if (c->op->attrs.neuron.operation == EG_HTP_QNN_NEURON_HARD_SWISH) {
    one_to_one(x, c, "HardSwish", NULL);
    return;
  }
  eg_pb a = {0};
  attr_float(&a, "alpha", c->op->attrs.neuron.alpha);
  attr_float(&a, "beta", c->op->attrs.neuron.beta);
  one_to_one(x, c, "HardSigmoid", &a);
}

/* Gelu (erf form): opset 17 has no Gelu op, so it is written as ONNX's own decomposition,
 * Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5), which ONNX Runtime computes exactly and QNN's
 * EP fuses back into one QNN Gelu (ONNX Erf alone it refuses). */
static void gelu(exporter *x, const op_ctx *c) {
  int64_t d[EG_HTP_QNN_MAX_RANK];
  qnn_dims(c->out, d);
  const int r = c->out->rank, dt = onnx_qnn_dtype(c->out->dtype);
  const char *t[4] = {helper_tensor(x, "scaled", dt, r, d), helper_tensor(x, "erf", dt, r, d),
                      helper_tensor(x, "erf_1", dt, r, d), helper_tensor(x, "x_erf_1", dt, r, d)};
  const char *k[3] = {const_f32(x, "sqrt2", 1.41421356237309505f, 0, 1),
                      const_f32(x, "one", 1.0f, 0, 1), const_f32(x, "half", 0.5f, 0, 1)};
  if (!t[0] || !t[1] || !t[2] || !t[3] || !k[0] || !k[1] || !k[2]) return;
  const char *div[2] = {c->in_name[0], k[0]}, *add[2] = {t[1], k[1]},
             *mul[2] = {c->in_name[0], t[2]}, *half[2] = {t[3], k[2]};
  node(x, "Div", c->op->name, div, 2, &t[0], 1, NULL);
  node(x, "Erf", NULL, &t[0], 1, &t[1], 1, NULL);
  node(x, "Add", NULL, add, 2, &t[2], 1, NULL);
  node(x, "Mul", NULL, mul, 2, &t[3], 1, NULL);
  node(x, "Mul", NULL, half, 2, &c->out_name, 1, NULL);
}

/* Softmax and LogSoftmax: ONNX's op of the same name along the axis, after a Mul by beta when
 * beta is not 1. */
static void softmax(exporter *x, const op_ctx *c, const char *type) {
  const char *in = c->in_name[0];
  if (c->op->attrs.softmax.beta != 1.0f) {
    int64_t d[EG_HTP_QNN_MAX_RANK];
    qnn_dims(c->in[0], d);
    const char *mul[2] = {in, const_f32(x, "beta", c->op->attrs.softmax.beta, 0, 1)};
    in = helper_tensor(x, "scaled", ONNX_FLOAT, c->in[0]->rank, d);
    if (!mul[1] || !in) return;
    node(x, "Mul", NULL, mul, 2, &in, 1, NULL);
  }
  eg_pb a = {0};
  attr_int(&a, "axis", c->op->attrs.softmax.axis);
  node(x, type, c->op->name, &in, 1, &c->out_name, 1, &a);
}

/* Batchnorm (channel last, statistics folded): in * weights (+ bias). */
static void batchnorm(exporter *x, const op_ctx *c) {
  const bool bias = c->op->n_inputs > 2 && c->op->inputs[2] >= 0;
  int64_t d[EG_HTP_QNN_MAX_RANK];
  qnn_dims(c->out, d);
  const char *y = bias ? helper_tensor(x, "scaled", ONNX_FLOAT, c->out->rank, d) : c->out_name;
  if (!y) return;
  node(x, "Mul", c->op->name, c->in_name, 2, &y, 1, NULL);
  if (bias) {
    const char *add[2] = {y, c->in_name[2]};
    node(x, "Add", NULL, add, 2, &c->out_name, 1, NULL);
  }
}

/* Channel-last x [n, ..., c] as channel-first [n, c, ...] (perm) and back (inverse). */
static void channel_perms(int r, int *first, int *last) {
  first[0] = 0;
  first[1] = r - 1;
  for (int i = 2; i < r; i++) first[i] = i - 1;
  for (int i = 0; i < r; i++) last[first[i]] = i;
}

/* Per-channel affine y * gamma + beta on the channel-last result (either may be omitted),
 * written into the op's output. */
static void affine_out(exporter *x, const op_ctx *c, const char *y) {
  const bool gamma = c->op->n_inputs > 1 && c->op->inputs[1] >= 0;
  const bool beta = c->op->n_inputs > 2 && c->op->inputs[2] >= 0;
  int64_t d[EG_HTP_QNN_MAX_RANK];
  qnn_dims(c->out, d);
  if (gamma) {
    const char *mul[2] = {y, c->in_name[1]};
    const char *o = beta ? helper_tensor(x, "scaled", ONNX_FLOAT, c->out->rank, d) : c->out_name;
    if (!o) return;
    node(x, "Mul", NULL, mul, 2, &o, 1, NULL);
    y = o;
  }
  if (beta) {
    const char *add[2] = {y, c->in_name[2]};
    node(x, "Add", NULL, add, 2, &c->out_name, 1, NULL);
  }
  if (!gamma && !beta) {
    node(x, "Identity", NULL, &y, 1, &c->out_name, 1, NULL);
  }
}

/* InstanceNorm (MU_SIGMA, ACROSS_SPATIAL, variance normalized) and GroupNorm: the statistics by
 * InstanceNormalization over [n, groups, rest] (scale 1, bias 0), the affine per channel after
 * it, channel last. */
static void norm(exporter *x, const op_ctx *c, uint32_t groups) {
  const eg_htp_qnn_tensor *t = c->in[0];
  const int r = t->rank;
  int first[EG_HTP_QNN_MAX_RANK], last[EG_HTP_QNN_MAX_RANK];
  int64_t d[EG_HTP_QNN_MAX_RANK], cf[EG_HTP_QNN_MAX_RANK];
  channel_perms(r, first, last);
  qnn_dims(t, d);
  for (int i = 0; i < r; i++) cf[i] = d[first[i]];
  const char *xf = transpose(x, c->in_name[0], ONNX_FLOAT, r, d, first, NULL, "in_cf");
  const int64_t numel = eg_htp_qnn_tensor_numel(t);
  const int64_t grouped[3] = {d[0], groups, numel / d[0] / groups};
  const char *shape = const_i64(x, "grouped_shape", grouped, 3);
  const char *g = helper_tensor(x, "grouped", ONNX_FLOAT, 3, grouped);
  const char *ones = const_f32(x, "ones", 1.0f, 1, groups);
  const char *zeros = const_f32(x, "zeros", 0.0f, 1, groups);
  const char *n = helper_tensor(x, "normalized", ONNX_FLOAT, 3, grouped);
  const char *back = const_i64(x, "channel_first_shape", cf, r);
  const char *yf = helper_tensor(x, "out_cf", ONNX_FLOAT, r, cf);
  const char *y = helper_tensor(x, "out_cl", ONNX_FLOAT, r, d);
  if (!xf || !shape || !g || !ones || !zeros || !n || !back || !yf || !y) return;
  const char *rs[2] = {xf, shape};
  node(x, "Reshape", NULL, rs, 2, &g, 1, NULL);
  const char *in[3] = {g, ones, zeros};
  eg_pb a = {0};
  attr_float(&a, "epsilon", c->op->attrs.norm.epsilon);
  node(x, "InstanceNormalization", c->op->name, in, 3, &n, 1, &a);
  const char *rb[2] = {n, back};
  node(x, "Reshape", NULL, rb, 2, &yf, 1, NULL);
  transpose(x, yf, ONNX_FLOAT, r, cf, last, y, NULL);
  affine_out(x, c, y);
}

static void instance_norm(exporter *x, const op_ctx *c) {
  const eg_htp_qnn_norm_attrs *na = &c->op->attrs.norm;
  if (na->mode != 0 || na->region != 0 || !na->normalize_variance) {
    char what[160];
    snprintf(what, sizeof what, "mode %u, region %u, normalize_variance %d: only MU_SIGMA "
             "across spatial dims with the variance normalized is exported", na->mode, na->region,
             (int)na->normalize_variance);
    unsupported(x, what);
    return;
  }
  norm(x, c, c->in[0]->dims[c->in[0]->rank - 1]);
}

static void translate(exporter *x, const op_ctx *c) {
  switch (c->op->type) {
  case EG_HTP_QNN_OP_CONV_2D:
  case EG_HTP_QNN_OP_DEPTH_WISE_CONV_2D:
  case EG_HTP_QNN_OP_TRANSPOSE_CONV_2D: conv(x, c); return;
  case EG_HTP_QNN_OP_POOL_MAX_2D:
  case EG_HTP_QNN_OP_POOL_AVG_2D: pool(x, c); return;
  case EG_HTP_QNN_OP_FULLY_CONNECTED: fully_connected(x, c); return;
  case EG_HTP_QNN_OP_MAT_MUL: mat_mul(x, c); return;
  case EG_HTP_QNN_OP_TRANSPOSE: {
    int64_t p[EG_HTP_QNN_MAX_RANK];
    for (int i = 0; i < c->in[0]->rank; i++) p[i] = c->op->attrs.transpose.perm[i];
    eg_pb a = {0};
    attr_ints(&a, "perm", p, c->in[0]->rank);
    one_to_one(x, c, "Transpose", &a);
    return;
  }
  case EG_HTP_QNN_OP_RESHAPE: reshape(x, c); return;
  case EG_HTP_QNN_OP_STRIDED_SLICE: strided_slice(x, c); return;
  case EG_HTP_QNN_OP_PAD: pad(x, c); return;
  case EG_HTP_QNN_OP_TILE: tile(x, c); return;
  case EG_HTP_QNN_OP_CONCAT: {
    eg_pb a = {0};
    attr_int(&a, "axis", c->op->attrs.concat.axis);
    one_to_one(x, c, "Concat", &a);
    return;
  }
  case EG_HTP_QNN_OP_CAST: {
    eg_pb a = {0};
    attr_int(&a, "to", onnx_qnn_dtype(c->out->dtype));
    one_to_one(x, c, "Cast", &a);
    return;
  }
  case EG_HTP_QNN_OP_REDUCE_SUM:
  case EG_HTP_QNN_OP_REDUCE_MEAN:
  case EG_HTP_QNN_OP_REDUCE_MAX: reduce(x, c); return;
  case EG_HTP_QNN_OP_ELEMENT_WISE_ADD: one_to_one(x, c, "Add", NULL); return;
  case EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT: one_to_one(x, c, "Sub", NULL); return;
  case EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY: one_to_one(x, c, "Mul", NULL); return;
  case EG_HTP_QNN_OP_ELEMENT_WISE_DIVIDE: one_to_one(x, c, "Div", NULL); return;
  case EG_HTP_QNN_OP_ELEMENT_WISE_GREATER: one_to_one(x, c, "Greater", NULL); return;
  case EG_HTP_QNN_OP_ELEMENT_WISE_GREATER_EQUAL: one_to_one(x, c, "GreaterOrEqual", NULL); return;
  case EG_HTP_QNN_OP_ELEMENT_WISE_LESS_EQUAL: one_to_one(x, c, "LessOrEqual", NULL); return;
  case EG_HTP_QNN_OP_ELEMENT_WISE_EQUAL: one_to_one(x, c, "Equal", NULL); return;
  case EG_HTP_QNN_OP_ELEMENT_WISE_SELECT: one_to_one(x, c, "Where", NULL); return;
  case EG_HTP_QNN_OP_ELEMENT_WISE_NEG: one_to_one(x, c, "Neg", NULL); return;
  case EG_HTP_QNN_OP_ELEMENT_WISE_EXP: one_to_one(x, c, "Exp", NULL); return;
  case EG_HTP_QNN_OP_ELEMENT_WISE_LOG: one_to_one(x, c, "Log", NULL); return;
  case EG_HTP_QNN_OP_ELEMENT_WISE_RSQRT: rsqrt(x, c); return;
  case EG_HTP_QNN_OP_RELU: one_to_one(x, c, "Relu", NULL); return;
  case EG_HTP_QNN_OP_RELU_MIN_MAX: relu_min_max(x, c); return;
  case EG_HTP_QNN_OP_SIGMOID: one_to_one(x, c, "Sigmoid", NULL); return;
  case EG_HTP_QNN_OP_TANH: one_to_one(x, c, "Tanh", NULL); return;
  case EG_HTP_QNN_OP_GELU: gelu(x, c); return;
  case EG_HTP_QNN_OP_ELEMENT_WISE_NEURON: neuron(x, c); return;
  case EG_HTP_QNN_OP_SOFTMAX: softmax(x, c, "Softmax"); return;
  case EG_HTP_QNN_OP_LOG_SOFTMAX: softmax(x, c, "LogSoftmax"); return;
  case EG_HTP_QNN_OP_BATCHNORM: batchnorm(x, c); return;
  case EG_HTP_QNN_OP_INSTANCE_NORM: instance_norm(x, c); return;
  case EG_HTP_QNN_OP_GROUP_NORM: norm(x, c, c->op->attrs.norm.group); return;
  case EG_HTP_QNN_OP_COUNT: break;
  }
  unsupported(x, "no ONNX form");
}

/* ---- the model ---- */

/* Whether boundary value v is held in another form inside the graph than the CPU holds it:
 * NHWC, or int64 narrowed to int32. */
static bool converted(const eg_value *v, const eg_htp_qnn_tensor *t, bool nhwc) {
  return nhwc || onnx_ir_dtype(v->dtype) != onnx_qnn_dtype(t->dtype);
}

/* Graph input for boundary b: the IR value as the CPU holds it, converted into the QNN tensor. */
static void boundary_in(exporter *x, const eg_boundary *b, const char *ename) {
  const eg_value *v = &x->ir->values[b->value];
  const eg_htp_qnn_tensor *t = eg_htp_qnn_graph_tensor(x->g, b->tensor);
  value_info(x, &x->inputs, GRAPH_INPUT, ename, onnx_ir_dtype(v->dtype), v->rank, v->shape);
  if (!converted(v, t, b->nhwc)) return;
  char op[EG_EXPORT_NAME_MAX + 8];
  snprintf(op, sizeof op, "%s/in", ename); /* helper names apart from the ops' "<op>/<Type>_k" */
  x->op = op;
  x->helper = 0;
  const char *cur = ename;
  if (onnx_ir_dtype(v->dtype) != onnx_qnn_dtype(t->dtype)) {
    const char *o = b->nhwc ? helper_tensor(x, "cast", onnx_qnn_dtype(t->dtype), v->rank, v->shape)
                            : x->name[b->tensor];
    eg_pb a = {0};
    attr_int(&a, "to", onnx_qnn_dtype(t->dtype));
    if (!o) return;
    node(x, "Cast", NULL, &cur, 1, &o, 1, &a);
    cur = o;
  }
  if (b->nhwc)
    transpose(x, cur, onnx_qnn_dtype(t->dtype), 4, v->shape, TO_NHWC, x->name[b->tensor], NULL);
}

/* Graph output for boundary b: the QNN tensor converted back into the IR value's form. */
static void boundary_out(exporter *x, const eg_boundary *b, const char *ename) {
  const eg_value *v = &x->ir->values[b->value];
  const eg_htp_qnn_tensor *t = eg_htp_qnn_graph_tensor(x->g, b->tensor);
  value_info(x, &x->outputs, GRAPH_OUTPUT, ename, onnx_ir_dtype(v->dtype), v->rank, v->shape);
  if (!converted(v, t, b->nhwc)) return;
  char op[EG_EXPORT_NAME_MAX + 8];
  snprintf(op, sizeof op, "%s/out", ename);
  x->op = op;
  x->helper = 0;
  const bool cast = onnx_ir_dtype(v->dtype) != onnx_qnn_dtype(t->dtype);
  const char *cur = x->name[b->tensor];
  if (b->nhwc) {
    int64_t d[4];
    qnn_dims(t, d);
    cur = transpose(x, cur, onnx_qnn_dtype(t->dtype), 4, d, TO_NCHW, cast ? NULL : ename, "nchw");
    if (!cur) return;
  }
  if (cast) {
    eg_pb a = {0};
    attr_int(&a, "to", onnx_ir_dtype(v->dtype));
    node(x, "Cast", NULL, &cur, 1, &ename, 1, &a);
  }
}

/* The first boundary of `list` on tensor `tensor` (outputs may repeat a tensor), or -1. */
static int first_on(const eg_boundary *list, int32_t n, int32_t tensor) {
  for (int32_t i = 0; i < n; i++)
    if (list[i].tensor == tensor) return i;
  return -1;
}

static eg_status build_graph(exporter *x, eg_pb *graph) {
  const eg_lowered *hp = x->hp;
  const int32_t nt = eg_htp_qnn_graph_num_tensors(x->g);
  for (int32_t i = 0; i < nt; i++) {
    const eg_htp_qnn_tensor *t = eg_htp_qnn_graph_tensor(x->g, i);
    if (!onnx_qnn_dtype(t->dtype))
      return eg_error(EG_ERR_UNSUPPORTED, "export-onnx: %s: tensor %s (%s): quantized tensors are "
                      "not exported (their ops would need QDQ pairs)", x->part_name, t->name,
                      eg_htp_qnn_dtype_name(t->dtype));
  }
  /* names: boundary names first (as the dump names its files), then every other tensor's */
  char **ename = calloc((size_t)nt, sizeof *ename);
  bool *io = calloc((size_t)nt, sizeof *io);
  int max_in = MAX_IO;
  for (int32_t k = 0; k < eg_htp_qnn_graph_num_ops(x->g); k++)
    if (eg_htp_qnn_graph_op(x->g, k)->n_inputs > max_in) max_in = eg_htp_qnn_graph_op(x->g, k)->n_inputs;
  const eg_htp_qnn_tensor **in = calloc((size_t)max_in, sizeof *in);
  const char **in_name = calloc((size_t)max_in, sizeof *in_name);
  if (!ename || !io || !in || !in_name) {
    free(ename);
    free(io);
    free(in);
    free(in_name);
    return eg_error(EG_ERR_NOMEM, "export-onnx: %s: out of memory", x->part_name);
  }
  for (int side = 0; side < 2; side++) {
    const eg_boundary *list = side ? hp->outputs : hp->inputs;
    const int32_t n = side ? hp->n_outputs : hp->n_inputs;
    for (int32_t k = 0; k < n; k++) {
      const int32_t id = list[k].tensor;
      if (ename[id]) continue;
      char buf[EG_EXPORT_NAME_MAX];
      eg_export_name(eg_htp_qnn_graph_tensor(x->g, id)->name, id, buf, sizeof buf);
      ename[id] = (char *)unique(x, buf);
      if (!ename[id]) goto done;
      const eg_value *v = &x->ir->values[list[k].value];
      if (!converted(v, eg_htp_qnn_graph_tensor(x->g, id), list[k].nhwc)) {
        x->name[id] = ename[id];
        io[id] = true;
      }
    }
  }
  for (int32_t i = 0; i < nt; i++)
    if (!x->name[i] && !(x->name[i] = (char *)unique(x, eg_htp_qnn_graph_tensor(x->g, i)->name)))
      goto done;
  for (int32_t k = 0; k < hp->n_inputs; k++)
    boundary_in(x, &hp->inputs[k], ename[hp->inputs[k].tensor]);
  for (int32_t i = 0; i < nt; i++) {
    const eg_htp_qnn_tensor *t = eg_htp_qnn_graph_tensor(x->g, i);
    int64_t d[EG_HTP_QNN_MAX_RANK];
    qnn_dims(t, d);
    if (t->type == EG_HTP_QNN_TENSOR_STATIC)
      initializer(x, x->name[i], onnx_qnn_dtype(t->dtype), t->rank, d, t->data, t->nbytes);
    else if (!io[i])
      value_info(x, &x->infos, GRAPH_VALUE_INFO, x->name[i], onnx_qnn_dtype(t->dtype), t->rank, d);
  }
  for (int32_t k = 0; k < eg_htp_qnn_graph_num_ops(x->g) && x->status == EG_OK; k++) {
    op_ctx c = {.op = eg_htp_qnn_graph_op(x->g, k), .in = in, .in_name = in_name};
    EG_ASSERT(c.op->n_inputs <= max_in);
    if (c.op->n_outputs != 1) {
      x->op = c.op->name;
      x->op_type = eg_htp_qnn_op_name(c.op->type);
      unsupported(x, "an op with other than one output has no ONNX form here");
      break;
    }
    memset(in, 0, (size_t)max_in * sizeof *in);
    memset(in_name, 0, (size_t)max_in * sizeof *in_name);
    for (int i = 0; i < c.op->n_inputs; i++) {
      c.in[i] = c.op->inputs[i] >= 0 ? eg_htp_qnn_graph_tensor(x->g, c.op->inputs[i]) : NULL;
      c.in_name[i] = c.in[i] ? x->name[c.op->inputs[i]] : NULL;
    }
    c.out = eg_htp_qnn_graph_tensor(x->g, c.op->outputs[0]);
    c.out_name = x->name[c.op->outputs[0]];
    x->op = c.op->name;
    x->op_type = eg_htp_qnn_op_name(c.op->type);
    x->helper = 0;
    translate(x, &c);
  }
  for (int32_t k = 0; k < hp->n_outputs; k++)
    if (first_on(hp->outputs, hp->n_outputs, hp->outputs[k].tensor) == k)
      boundary_out(x, &hp->outputs[k], ename[hp->outputs[k].tensor]);
  eg_pb_append(graph, &x->nodes);
  eg_pb_string(graph, GRAPH_NAME, x->part_name);
  eg_pb_append(graph, &x->inits);
  eg_pb_append(graph, &x->inputs);
  eg_pb_append(graph, &x->outputs);
  eg_pb_append(graph, &x->infos);
done:
  free(ename);
  free(io);
  free(in);
  free(in_name);
  if (x->status == EG_OK && graph->failed)
    x->status = eg_error(EG_ERR_NOMEM, "export-onnx: %s: out of memory", x->part_name);
  return x->status;
}

static void metadata(eg_pb *model, const char *key, const char *value) {
  eg_pb kv = {0};
  eg_pb_string(&kv, KV_KEY, key);
  eg_pb_string(&kv, KV_VALUE, value);
  eg_pb_message(model, MODEL_METADATA, &kv);
  eg_pb_free(&kv);
}

eg_status eg_htp_export_onnx(const eg_graph *ir, const eg_target *target, const eg_lowered *hp,
                             const char *path) {
  exporter x = {.ir = ir, .hp = hp, .g = hp->graph, .part_name = eg_htp_qnn_graph_name(hp->graph)};
  x.name = calloc((size_t)eg_htp_qnn_graph_num_tensors(x.g) + 1, sizeof *x.name);
  eg_pb graph = {0}, onnx = {0}, opset = {0};
  eg_status s = x.name ? build_graph(&x, &graph)
                       : eg_error(EG_ERR_NOMEM, "export-onnx: %s: out of memory", x.part_name);
  if (s == EG_OK) {
    char doc[256], arch[16];
    snprintf(doc, sizeof doc, "NPU partition %s of a training step compiled by edgegrad for %s "
             "(%s, HTP V%d)", x.part_name, target->soc, target->product, target->htp_arch);
    snprintf(arch, sizeof arch, "%d", target->htp_arch);
    eg_pb_int(&onnx, MODEL_IR_VERSION, ONNX_IR_VERSION);
    eg_pb_string(&opset, OPSET_DOMAIN, "");
    eg_pb_int(&opset, OPSET_VERSION, ONNX_OPSET);
    eg_pb_message(&onnx, MODEL_OPSET, &opset);
    eg_pb_string(&onnx, MODEL_PRODUCER_NAME, "edgegrad");
    eg_pb_string(&onnx, MODEL_PRODUCER_VERSION, eg_version_string());
    eg_pb_string(&onnx, MODEL_DOC, doc);
    eg_pb_message(&onnx, MODEL_GRAPH, &graph);
    metadata(&onnx, "edgegrad.soc", target->soc);
    metadata(&onnx, "edgegrad.htp_arch", arch);
    metadata(&onnx, "edgegrad.partition", x.part_name);
    if (onnx.failed) s = eg_error(EG_ERR_NOMEM, "export-onnx: %s: out of memory", x.part_name);
  }
  if (s == EG_OK) {
    const eg_file_part part = {onnx.data, onnx.len};
    s = eg_file_write_atomic(path, &part, 1);
  }
  for (size_t i = 0; i < x.cap_used; i++) free(x.used[i]);
  free(x.used);
  free(x.name);
  eg_pb_free(&x.nodes);
  eg_pb_free(&x.inits);
  eg_pb_free(&x.inputs);
  eg_pb_free(&x.outputs);
  eg_pb_free(&x.infos);
  eg_pb_free(&graph);
  eg_pb_free(&onnx);
  eg_pb_free(&opset);
  return s;
}
