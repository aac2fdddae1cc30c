/* executor.c — plans and runs an htp graph on the NHWC kernels (contract in executor.h).
 *
 * Each op gets, at create, a `plan`: its kernel's parameter struct filled from the tensors'
 * dims and the op's parsed attrs, and the scratch it needs. The kernel table is expanded from
 * qnn_ops.def (prepare_<id>, run_<id>; ops sharing an implementation map to it by macro), so an
 * op without a kernel does not compile. Run functions only read plans and tensor pointers:
 * nothing is allocated while running (Concat's pointer array lives in its plan).
 *
 * Which ops it folds or skips, and which tensors convs read their filters from or write their
 * outputs to, is the executor plan's (exec_plan.h), made at compile time by the layout pass: the
 * executor follows it. A folded op (a Transpose of a constant, as QNN's graph finalize folds
 * them) is run once at create, into a buffer of its own outside the NATIVE arena that lives as
 * long as the executor, and not by execute; its output stays a NATIVE tensor of the graph. A
 * TransposeConv2d whose filter is constant (STATIC or folded) is planned with
 * params.prepacked, and when its algorithm reads the filter in a form of its own (Winograd's
 * transformed filter) that form is computed once at create into the plan's `packed`.
 *
 * fp16 precision (executor.h) is storage only, in three places: STATIC tensors are rounded once
 * into `f16` copies before anything reads them (folding and packing then work on the rounded
 * weights), APP_WRITE inputs are rounded into their `f16` copies when bound, and execute rounds
 * each op's float output in place (the tensor it wrote: its output, or y_dst). The kernels are
 * the fp32 ones: measured against QNN's HTP (docs/fp16.md, tests/htp/fp16_probe.py), Conv2d,
 * MatMul, ReduceSum and ElementWiseAdd on fp16 values accumulate at least as wide as fp32. */
#include "backends/htp/executor.h"

#include <stdlib.h>
#include <string.h>

#include "backends/htp/runtime.h"

#include "kernels/concat_nhwc_f32.h"
#include "kernels/conv2d_nhwc_f32.h"
#include "kernels/depthwise_conv2d_nhwc_f32.h"
#include "kernels/elementwise_nhwc_f32.h"
#include "kernels/equal_nhwc_i32.h"
#include "kernels/matmul_nhwc_f32.h"
#include "kernels/norm_nhwc_f32.h"
#include "kernels/parallel_nhwc_f32.h"
#include "kernels/pool2d_nhwc_f32.h"
#include "kernels/reduce_nhwc_f32.h"
#include "kernels/softmax_nhwc_f32.h"
#include "kernels/strided_copy.h"
#include "kernels/tile_nhwc_f32.h"
#include "kernels/transpose_conv2d_nhwc_f32.h"
#include "kernels/transpose_f32.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/fp16.h"

typedef struct plan {
  size_t scratch;
  void *scratch_at; /* its own scratch (eg_htp_qnn_executor_set_tensor_memory), else ex->scratch */
  bool folded; /* run once at create (the plan's FOLD), not by execute */
  bool skipped;   /* never run (the plan's SKIP): its reader or producer reads or writes the
                     other layout instead */
  bool unwritten; /* its output is neither written nor read (a skipped Transpose's whose
                     readers read its input; a Conv2d's that writes y_dst): it gets no bytes */
  bool aliased;   /* never run (the plan's ALIAS, a Reshape): its output, with no bytes of its
                     own, points at its input's bytes, set as execute reaches it */
  bool fused;     /* never run on its own (the plan's FUSED): the tail of its group computes
                     it, its output gets no bytes */
  eg_ew_chain *chain;    /* a group's tail: the group as one kernel (its ops in order); a
                            reduction's: the group of the FUSED op it reads, summed
                            (chain_reduce) */
  bool chain_reduce;
  int32_t *chain_leaves; /* and the tensor each of its leaves reads */
  uint8_t filter_read; /* the plan's: eg_htp_filter_read of filter_src */
  int32_t filter_src; /* Conv2d, TransposeConv2d: tensor its filter is read from (the plan's)
                         instead of input 1; -1 (every op) when none */
  int32_t y_dst;      /* Conv2d: tensor it writes (perm [3,0,1,2] of its output: a skipped
                         Transpose's output) instead of its own output; -1 (every op) when none */
  float *packed; /* TransposeConv2d: its constant filter as the kernel reads it, or NULL */
  size_t packed_floats;
  union {
    eg_conv2d_nhwc_params conv;
    eg_dwconv2d_nhwc_params dw;
    eg_transpose_conv2d_nhwc_params tconv;
    eg_pool2d_nhwc_params pool;
    struct { int64_t m, k, units; } fc;
    eg_matmul_nhwc_params mm;
    struct { int rank; int64_t dims[EG_HTP_QNN_MAX_RANK]; uint32_t perm[EG_HTP_QNN_MAX_RANK]; } tr;
    struct { int rank; int64_t dims[EG_HTP_QNN_MAX_RANK], multiples[EG_HTP_QNN_MAX_RANK]; } tile;
    struct { size_t nbytes; } copy;
    struct { eg_strided_copy_params box; int64_t offset; } slice; /* StridedSlice, Pad */
    struct { int64_t outer, inner; int64_t *sizes; const float **xs; } concat;
    struct { eg_cast_type from, to; int64_t n; } cast;
    eg_reduce_nhwc_params reduce;
    struct { eg_ew_op op; eg_ew_shape shape; } ew;
    struct { eg_unary_op op; int64_t n; float lo, hi; } unary;
    struct { int64_t outer, axis, inner; float beta; } sm;
    struct { int64_t rows, c; } bn;
    eg_norm_nhwc_params norm;
  } u;
} plan;

struct eg_htp_qnn_executor {
  const eg_htp_qnn_graph *g;
  void **ptr;                /* per tensor: where its bytes are (APP_* bound per execute) */
  plan *plans;               /* per op */
  unsigned char *arena;      /* NATIVE tensors, 64-byte aligned (in `work` when shared) */
  unsigned char *consts;     /* outputs of folded ops, 64-byte aligned */
  size_t consts_bytes;
  size_t arena_bytes, native_sum;
  void *scratch;             /* 64-byte aligned (in `work` when shared) */
  size_t scratch_bytes;
  size_t *offset;            /* per tensor: its offset in the arena, SIZE_MAX if not NATIVE */
  int32_t *read_until;       /* per tensor: the last op reading its bytes, through ALIAS
                                Reshapes of it (-1: none) */
  int32_t *run_at;           /* per op: the op that computes it (a FUSED op's group tail, else
                                itself): when its inputs are read */
  int32_t n_work;            /* the NATIVE tensors with bytes, in order of production */
  eg_htp_qnn_work_tensor *work;
  bool shared;               /* the tensors and scratch are the caller's (set_tensor_memory) */
  bool has_work;             /* shared: set_tensor_memory was called */
  int64_t *op_times;         /* profiling (eg_htp_qnn_executor_set_op_times): start, ns per op */
  struct qstate *quant;      /* fixed-point tensors (executor.h; NULL when there are none) */
  bool fp16;                 /* eg_precision FP16: float tensors stored as fp16 values */
  float **f16;               /* fp16: per tensor, the rounded copy of a FLOAT_32 STATIC or
                                APP_WRITE tensor (in f16_block), else NULL */
  unsigned char *f16_block;  /* those copies, each 64-byte aligned */
};

typedef eg_htp_qnn_executor exec_t;
typedef eg_htp_qnn_op_node op_t;

/* ---- helpers ---- */

static const eg_htp_qnn_tensor *tin(const exec_t *ex, const op_t *op, int i) {
  return i < op->n_inputs && op->inputs[i] >= 0 ? eg_htp_qnn_graph_tensor(ex->g, op->inputs[i]) : NULL;
}

static const eg_htp_qnn_tensor *tout(const exec_t *ex, const op_t *op) {
  return eg_htp_qnn_graph_tensor(ex->g, op->outputs[0]);
}

/* Data of input i (NULL when omitted) and of the output. */
static void *in_ptr(const exec_t *ex, const op_t *op, int i) {
  return i < op->n_inputs && op->inputs[i] >= 0 ? ex->ptr[op->inputs[i]] : NULL;
}

static void *out_ptr(const exec_t *ex, const op_t *op) { return ex->ptr[op->outputs[0]]; }

static void *scratch_of(const exec_t *ex, const plan *pl) {
  return pl->scratch_at ? pl->scratch_at : ex->scratch;
}

static int64_t dim(const eg_htp_qnn_tensor *t, int i) { return (int64_t)t->dims[i]; }

static void dims64(const eg_htp_qnn_tensor *t, int64_t *out) {
  for (int i = 0; i < t->rank; i++) out[i] = t->dims[i];
}

/* ---- convolution ---- */

/* The plan gave op a form its kernel does not take. */
static eg_status refuse_form(const exec_t *ex, const op_t *op, const char *form, const char *rule) {
  return eg_error(EG_ERR_INVALID, "executor %s: op %s (%s): the executor plan has it %s, which "
                  "its kernel cannot (%s): compile the graph again", eg_htp_qnn_graph_name(ex->g),
                  op->name, eg_htp_qnn_op_name(op->type), form, rule);
}

static eg_status prepare_conv(exec_t *ex, const op_t *op, plan *pl) {
  pl->u.conv = eg_htp_conv2d_params(ex->g, op);
  pl->u.conv.chunk_bytes = eg_nhwc_chunk_bytes();
  pl->u.conv.threads = omp_get_max_threads();
  pl->u.conv.winograd = eg_conv2d_nhwc_f32_winograd_pays(&pl->u.conv);
  if (pl->filter_src >= 0 || pl->y_dst >= 0) { /* the plan's OIHW filter, transposed output */
    if (!eg_conv2d_nhwc_f32_takes_oihw(&pl->u.conv))
      return refuse_form(ex, op, pl->y_dst >= 0 ? "write its output transposed" :
                         "read its filter OIHW", "groups 1, not run by Winograd");
    pl->u.conv.filter_oihw = pl->filter_src >= 0;
    pl->u.conv.y_cnhw = pl->y_dst >= 0;
  }
  pl->scratch = eg_conv2d_nhwc_f32_scratch(&pl->u.conv);
  return EG_OK;
}

static void run_conv(exec_t *ex, const op_t *op, const plan *pl) {
  eg_conv2d_nhwc_f32(&pl->u.conv, in_ptr(ex, op, 0),
                     pl->filter_src >= 0 ? ex->ptr[pl->filter_src] : in_ptr(ex, op, 1),
                     in_ptr(ex, op, 2), pl->y_dst >= 0 ? ex->ptr[pl->y_dst] : out_ptr(ex, op),
                     scratch_of(ex, pl));
}

static eg_status prepare_dwconv(exec_t *ex, const op_t *op, plan *pl) {
  const eg_htp_qnn_tensor *x = tin(ex, op, 0), *f = tin(ex, op, 1), *y = tout(ex, op);
  const eg_htp_qnn_conv_attrs *a = &op->attrs.conv;
  pl->u.dw = (eg_dwconv2d_nhwc_params){
      .n = dim(x, 0), .h_in = dim(x, 1), .w_in = dim(x, 2), .c_in = dim(x, 3),
      .h_out = dim(y, 1), .w_out = dim(y, 2), .mult = dim(y, 3) / dim(x, 3), .k_h = dim(f, 0),
      .k_w = dim(f, 1), .stride = {a->stride[0], a->stride[1]},
      .dilation = {a->dilation[0], a->dilation[1]}, .pad = {a->pad[0][0], a->pad[1][0]}};
  return EG_OK;
}

static void run_dwconv(exec_t *ex, const op_t *op, const plan *pl) {
  eg_depthwise_conv2d_nhwc_f32(&pl->u.dw, in_ptr(ex, op, 0), in_ptr(ex, op, 1),
                               in_ptr(ex, op, 2), out_ptr(ex, op));
}

/* Whether t is FLOAT_32 and holds the same values on every execute: STATIC, or the output of a
 * folded op (ops are planned in graph order, so a producer's plan is final). */
static bool is_constant(const exec_t *ex, const eg_htp_qnn_tensor *t) {
  if (t->dtype != EG_HTP_QNN_DTYPE_FLOAT_32) return false; /* fixed point: float views per execute */
  return t->type == EG_HTP_QNN_TENSOR_STATIC || (t->type == EG_HTP_QNN_TENSOR_NATIVE &&
                                             t->producer >= 0 && ex->plans[t->producer].folded);
}

static eg_status prepare_tconv(exec_t *ex, const op_t *op, plan *pl) {
  const eg_htp_qnn_tensor *f =
      pl->filter_src >= 0 ? eg_htp_qnn_graph_tensor(ex->g, pl->filter_src) : tin(ex, op, 1);
  pl->u.tconv = eg_htp_tconv2d_params(ex->g, op);
  pl->u.tconv.chunk_bytes = eg_nhwc_chunk_bytes();
  pl->u.tconv.prepacked = is_constant(ex, f);
  pl->u.tconv.filter_oi = pl->filter_read == EG_HTP_FILTER_READ_OI;
  pl->u.tconv.filter_oihw = pl->filter_read == EG_HTP_FILTER_READ_OIHW;
  if (pl->u.tconv.filter_oi && !eg_transpose_conv2d_nhwc_f32_takes_filter_oi(&pl->u.tconv))
    return refuse_form(ex, op, "read its filter as the forward weight (OI)", "groups 1");
  if (pl->u.tconv.filter_oihw && !eg_transpose_conv2d_nhwc_f32_takes_oihw(&pl->u.tconv))
    return refuse_form(ex, op, "read its filter OIHW", "groups 1");
  /* pieces and algorithm are fixed now, for the thread count sgemm has now */
  eg_transpose_conv2d_nhwc_f32_plan(&pl->u.tconv, eg_nhwc_blas_threads());
  pl->packed_floats =
      pl->u.tconv.prepacked ? eg_transpose_conv2d_nhwc_f32_packed_floats(&pl->u.tconv) : 0;
  if (!pl->packed_floats) pl->u.tconv.prepacked = false; /* the kernel reads f as it is */
  pl->scratch = eg_transpose_conv2d_nhwc_f32_scratch(&pl->u.tconv);
  return EG_OK;
}

static void run_tconv(exec_t *ex, const op_t *op, const plan *pl) {
  const float *f = pl->packed        ? pl->packed
                   : pl->filter_src >= 0 ? (const float *)ex->ptr[pl->filter_src]
                                         : (const float *)in_ptr(ex, op, 1);
  eg_transpose_conv2d_nhwc_f32(&pl->u.tconv, in_ptr(ex, op, 0), f, in_ptr(ex, op, 2),
                               out_ptr(ex, op), scratch_of(ex, pl));
}

/* ---- pooling ---- */

static eg_status prepare_pool(exec_t *ex, const op_t *op, plan *pl) {
  const eg_htp_qnn_tensor *x = tin(ex, op, 0), *y = tout(ex, op);
  const eg_htp_qnn_pool_attrs *a = &op->attrs.pool;
  pl->u.pool = (eg_pool2d_nhwc_params){
      .n = dim(x, 0), .h_in = dim(x, 1), .w_in = dim(x, 2), .c = dim(x, 3),
      .h_out = dim(y, 1), .w_out = dim(y, 2), .k = {a->filter[0], a->filter[1]},
      .stride = {a->stride[0], a->stride[1]},
      .pad = {{a->pad[0][0], a->pad[0][1]}, {a->pad[1][0], a->pad[1][1]}},
      .count_pad = a->count_pad_for_edges};
  return EG_OK;
}

static void run_pool_max(exec_t *ex, const op_t *op, const plan *pl) {
  eg_max_pool2d_nhwc_f32(&pl->u.pool, in_ptr(ex, op, 0), out_ptr(ex, op));
}

static void run_pool_avg(exec_t *ex, const op_t *op, const plan *pl) {
  eg_avg_pool2d_nhwc_f32(&pl->u.pool, in_ptr(ex, op, 0), out_ptr(ex, op));
}

/* ---- matrix products ---- */

static eg_status prepare_fc(exec_t *ex, const op_t *op, plan *pl) {
  const eg_htp_qnn_tensor *x = tin(ex, op, 0), *w = tin(ex, op, 1);
  pl->u.fc.k = dim(w, 1);
  pl->u.fc.units = dim(w, 0);
  pl->u.fc.m = eg_htp_qnn_tensor_numel(x) / pl->u.fc.k;
  return EG_OK;
}

static void run_fc(exec_t *ex, const op_t *op, const plan *pl) {
  eg_fully_connected_nhwc_f32(pl->u.fc.m, pl->u.fc.k, pl->u.fc.units, in_ptr(ex, op, 0),
                              in_ptr(ex, op, 1), in_ptr(ex, op, 2), out_ptr(ex, op));
}

static eg_status prepare_matmul(exec_t *ex, const op_t *op, plan *pl) {
  const eg_htp_qnn_tensor *a = tin(ex, op, 0), *b = tin(ex, op, 1), *y = tout(ex, op);
  eg_matmul_nhwc_params *p = &pl->u.mm;
  const int br = y->rank - 2;
  if (br > EG_MATMUL_MAX_BATCH_RANK)
    return eg_error(EG_ERR_UNSUPPORTED, "op %s (MatMul): batch rank %d: the executor handles up "
                    "to %d", op->name, br, EG_MATMUL_MAX_BATCH_RANK);
  *p = (eg_matmul_nhwc_params){.batch_rank = br, .trans_a = op->attrs.matmul.transpose_in0,
                               .trans_b = op->attrs.matmul.transpose_in1,
                               .m = dim(y, br), .p = dim(y, br + 1)};
  p->k = dim(a, a->rank - (p->trans_a ? 2 : 1));
  for (int i = 0; i < br; i++) {
    const int ia = i - (br - (a->rank - 2)), ib = i - (br - (b->rank - 2));
    p->batch_a[i] = ia >= 0 ? dim(a, ia) : 1;
    p->batch_b[i] = ib >= 0 ? dim(b, ib) : 1;
    p->batch_out[i] = dim(y, i);
  }
  return EG_OK;
}

static void run_matmul(exec_t *ex, const op_t *op, const plan *pl) {
  eg_matmul_nhwc_f32(&pl->u.mm, in_ptr(ex, op, 0), in_ptr(ex, op, 1), in_ptr(ex, op, 2),
                     out_ptr(ex, op));
}

/* ---- layout and shape ---- */

static eg_status prepare_transpose(exec_t *ex, const op_t *op, plan *pl) {
  const eg_htp_qnn_tensor *x = tin(ex, op, 0);
  pl->u.tr.rank = x->rank;
  dims64(x, pl->u.tr.dims);
  memcpy(pl->u.tr.perm, op->attrs.transpose.perm, sizeof pl->u.tr.perm);
  return EG_OK;
}

static void run_transpose(exec_t *ex, const op_t *op, const plan *pl) {
  eg_transpose_f32(pl->u.tr.rank, pl->u.tr.dims, pl->u.tr.perm, in_ptr(ex, op, 0),
                   out_ptr(ex, op));
}

static eg_status prepare_copy(exec_t *ex, const op_t *op, plan *pl) {
  const eg_htp_qnn_tensor *y = tout(ex, op); /* a fixed-point one is copied as its float view */
  pl->u.copy.nbytes = eg_htp_qnn_dtype_is_fixed_point(y->dtype)
                          ? sizeof(float) * (size_t)eg_htp_qnn_tensor_numel(y) : y->nbytes;
  return EG_OK;
}

static void run_copy(exec_t *ex, const op_t *op, const plan *pl) {
  void *dst = out_ptr(ex, op);
  const void *src = in_ptr(ex, op, 0);
  if (dst != src) memcpy(dst, src, pl->u.copy.nbytes);
}

static eg_status prepare_tile(exec_t *ex, const op_t *op, plan *pl) {
  const eg_htp_qnn_tensor *x = tin(ex, op, 0);
  pl->u.tile.rank = x->rank;
  dims64(x, pl->u.tile.dims);
  for (int d = 0; d < x->rank; d++) pl->u.tile.multiples[d] = op->attrs.tile.multiples[d];
  return EG_OK;
}

static void run_tile(exec_t *ex, const op_t *op, const plan *pl) {
  eg_tile_nhwc_f32(pl->u.tile.rank, pl->u.tile.dims, pl->u.tile.multiples, in_ptr(ex, op, 0),
                   out_ptr(ex, op));
}

/* The strided copy between dense tensor `box` and the box of dense tensor `big` that starts at
 * `at` and steps `step` (NULL: 1) per dim: big's strides on the source side (`big_is_src`,
 * StridedSlice) or the destination side (Pad); box's own dense strides on the other. */
static void box_copy_plan(const eg_htp_qnn_tensor *big, const eg_htp_qnn_tensor *box, const uint32_t *at,
                          const uint32_t *step, bool big_is_src, plan *pl) {
  int64_t bdims[EG_HTP_QNN_MAX_RANK], bstride[EG_HTP_QNN_MAX_RANK], own[EG_HTP_QNN_MAX_RANK];
  dims64(big, bdims);
  eg_dense_strides(bdims, big->rank, bstride);
  eg_strided_copy_params *b = &pl->u.slice.box;
  memset(b, 0, sizeof *b);
  b->rank = box->rank;
  b->elsize = 4; /* FLOAT_32 or INT_32; a fixed-point tensor runs as its float view */
  dims64(box, b->shape);
  eg_dense_strides(b->shape, box->rank, own);
  pl->u.slice.offset = 0;
  for (int d = 0; d < box->rank; d++) {
    const int64_t far = bstride[d] * (step ? step[d] : 1);
    b->src_stride[d] = big_is_src ? far : own[d];
    b->dst_stride[d] = big_is_src ? own[d] : far;
    pl->u.slice.offset += bstride[d] * at[d];
  }
}

/* StridedSlice: the output is the box of in[0] starting at `begin`, stepping `step` per dim
 * (qnn_graph.c check_strided_slice): one strided copy. */
static eg_status prepare_strided_slice(exec_t *ex, const op_t *op, plan *pl) {
  box_copy_plan(tin(ex, op, 0), tout(ex, op), op->attrs.slice.begin, op->attrs.slice.step, true,
                pl);
  return EG_OK;
}

static void run_strided_slice(exec_t *ex, const op_t *op, const plan *pl) {
  eg_strided_copy(out_ptr(ex, op), (const float *)in_ptr(ex, op, 0) + pl->u.slice.offset,
                  &pl->u.slice.box);
}

/* Pad: the output filled with the constant, then in[0] copied into its box at offset `before`
 * per dim (qnn_graph.c check_pad): one fill and one strided copy. */
static eg_status prepare_pad(exec_t *ex, const op_t *op, plan *pl) {
  box_copy_plan(tout(ex, op), tin(ex, op, 0), op->attrs.pad.before, NULL, false, pl);
  return EG_OK;
}

static void run_pad(exec_t *ex, const op_t *op, const plan *pl) {
  float *y = out_ptr(ex, op);
  const int64_t n = eg_htp_qnn_tensor_numel(tout(ex, op));
  const float v = op->attrs.pad.value;
  for (int64_t i = 0; i < n; i++) y[i] = v;
  eg_strided_copy(y + pl->u.slice.offset, in_ptr(ex, op, 0), &pl->u.slice.box);
}

static eg_status prepare_concat(exec_t *ex, const op_t *op, plan *pl) {
  const eg_htp_qnn_tensor *x = tin(ex, op, 0);
  const uint32_t axis = op->attrs.concat.axis;
  pl->u.concat.outer = pl->u.concat.inner = 1;
  for (int i = 0; i < x->rank; i++) {
    if (i < (int)axis) pl->u.concat.outer *= dim(x, i);
    if (i > (int)axis) pl->u.concat.inner *= dim(x, i);
  }
  pl->u.concat.sizes = calloc((size_t)op->n_inputs, sizeof(int64_t));
  pl->u.concat.xs = calloc((size_t)op->n_inputs, sizeof(float *));
  if (!pl->u.concat.sizes || !pl->u.concat.xs)
    return eg_error(EG_ERR_NOMEM, "op %s (Concat): out of memory", op->name);
  for (int k = 0; k < op->n_inputs; k++) pl->u.concat.sizes[k] = dim(tin(ex, op, k), (int)axis);
  return EG_OK;
}

static void run_concat(exec_t *ex, const op_t *op, const plan *pl) {
  for (int k = 0; k < op->n_inputs; k++) pl->u.concat.xs[k] = in_ptr(ex, op, k);
  eg_concat_nhwc_f32(op->n_inputs, pl->u.concat.xs, pl->u.concat.sizes, pl->u.concat.outer,
                     pl->u.concat.inner, out_ptr(ex, op));
}

static bool cast_type_of(eg_htp_qnn_dtype d, eg_cast_type *out) {
  switch (d) {
  case EG_HTP_QNN_DTYPE_FLOAT_32: *out = EG_CAST_F32; return true;
  case EG_HTP_QNN_DTYPE_INT_32: *out = EG_CAST_I32; return true;
  case EG_HTP_QNN_DTYPE_UINT_32: *out = EG_CAST_U32; return true;
  case EG_HTP_QNN_DTYPE_INT_8: *out = EG_CAST_I8; return true;
  case EG_HTP_QNN_DTYPE_UINT_8: *out = EG_CAST_U8; return true;
  case EG_HTP_QNN_DTYPE_BOOL_8: *out = EG_CAST_BOOL; return true;
  default: return false;
  }
}

static eg_status prepare_cast(exec_t *ex, const op_t *op, plan *pl) {
  const eg_htp_qnn_tensor *x = tin(ex, op, 0), *y = tout(ex, op);
  pl->u.cast.n = eg_htp_qnn_tensor_numel(x);
  if (!cast_type_of(x->dtype, &pl->u.cast.from) || !cast_type_of(y->dtype, &pl->u.cast.to))
    return eg_error(EG_ERR_UNSUPPORTED, "op %s (Cast): %s -> %s: the executor casts between "
                    "float32, int32, uint32, int8, uint8 and bool8", op->name,
                    eg_htp_qnn_dtype_name(x->dtype), eg_htp_qnn_dtype_name(y->dtype));
  return EG_OK;
}

static void run_cast(exec_t *ex, const op_t *op, const plan *pl) {
  eg_cast_nhwc(pl->u.cast.n, pl->u.cast.from, in_ptr(ex, op, 0), pl->u.cast.to, out_ptr(ex, op));
}

/* ---- reductions ---- */

static eg_status prepare_reduce(exec_t *ex, const op_t *op, plan *pl, bool mean) {
  const eg_htp_qnn_tensor *x = tin(ex, op, 0);
  pl->u.reduce = (eg_reduce_nhwc_params){.rank = x->rank, .mask = op->attrs.reduce.mask,
                                         .mean = mean};
  dims64(x, pl->u.reduce.dims);
  pl->scratch = eg_reduce_nhwc_f32_scratch(&pl->u.reduce);
  return EG_OK;
}

static eg_status prepare_reduce_sum(exec_t *ex, const op_t *op, plan *pl) {
  return prepare_reduce(ex, op, pl, false);
}

static eg_status prepare_reduce_mean(exec_t *ex, const op_t *op, plan *pl) {
  return prepare_reduce(ex, op, pl, true);
}

static eg_status prepare_reduce_max(exec_t *ex, const op_t *op, plan *pl) {
  EG_TRY(prepare_reduce(ex, op, pl, false));
  pl->u.reduce.max = true;
  return EG_OK;
}

static void run_reduce(exec_t *ex, const op_t *op, const plan *pl) {
  eg_reduce_nhwc_f32(&pl->u.reduce, in_ptr(ex, op, 0), out_ptr(ex, op), scratch_of(ex, pl));
}

/* ---- elementwise ---- */

static eg_ew_op ew_op_of(eg_htp_qnn_op t) {
  switch (t) {
  case EG_HTP_QNN_OP_ELEMENT_WISE_ADD: return EG_EW_ADD;
  case EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT: return EG_EW_SUB;
  case EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY: return EG_EW_MUL;
  case EG_HTP_QNN_OP_ELEMENT_WISE_DIVIDE: return EG_EW_DIV;
  case EG_HTP_QNN_OP_ELEMENT_WISE_GREATER: return EG_EW_GREATER;
  case EG_HTP_QNN_OP_ELEMENT_WISE_GREATER_EQUAL: return EG_EW_GREATER_EQUAL;
  case EG_HTP_QNN_OP_ELEMENT_WISE_LESS_EQUAL: return EG_EW_LESS_EQUAL;
  default: return EG_EW_SELECT;
  }
}

static eg_status prepare_ew(exec_t *ex, const op_t *op, plan *pl) {
  int ranks[3];
  int64_t d[3][EG_HTP_QNN_MAX_RANK];
  const int64_t *dp[3];
  for (int k = 0; k < op->n_inputs; k++) {
    ranks[k] = tin(ex, op, k)->rank;
    dims64(tin(ex, op, k), d[k]);
    dp[k] = d[k];
  }
  pl->u.ew.op = ew_op_of(op->type);
  if (!eg_ew_shape_init(&pl->u.ew.shape, op->n_inputs, ranks, dp))
    return eg_error(EG_ERR_INVALID, "op %s (%s): inputs: shapes do not broadcast", op->name,
                    eg_htp_qnn_op_name(op->type));
  return EG_OK;
}

static void run_ew(exec_t *ex, const op_t *op, const plan *pl) {
  const void *in[3] = {in_ptr(ex, op, 0), in_ptr(ex, op, 1), in_ptr(ex, op, 2)};
  eg_elementwise_nhwc_f32(pl->u.ew.op, &pl->u.ew.shape, in, out_ptr(ex, op));
}

/* ElementWiseEqual: INT_32 operands only (check_supported), its own kernel. */
static void run_equal(exec_t *ex, const op_t *op, const plan *pl) {
  eg_equal_nhwc_i32(&pl->u.ew.shape, in_ptr(ex, op, 0), in_ptr(ex, op, 1), out_ptr(ex, op));
}

static eg_status prepare_unary(exec_t *ex, const op_t *op, plan *pl) {
  pl->u.unary.n = eg_htp_qnn_tensor_numel(tin(ex, op, 0));
  switch (op->type) {
  case EG_HTP_QNN_OP_ELEMENT_WISE_NEG: pl->u.unary.op = EG_UNARY_NEG; break;
  case EG_HTP_QNN_OP_RELU: pl->u.unary.op = EG_UNARY_RELU; break;
  case EG_HTP_QNN_OP_SIGMOID: pl->u.unary.op = EG_UNARY_SIGMOID; break;
  case EG_HTP_QNN_OP_TANH: pl->u.unary.op = EG_UNARY_TANH; break;
  case EG_HTP_QNN_OP_GELU: pl->u.unary.op = EG_UNARY_GELU; break;
  case EG_HTP_QNN_OP_ELEMENT_WISE_RSQRT: pl->u.unary.op = EG_UNARY_RSQRT; break;
  case EG_HTP_QNN_OP_ELEMENT_WISE_EXP: pl->u.unary.op = EG_UNARY_EXP; break;
  case EG_HTP_QNN_OP_ELEMENT_WISE_LOG: pl->u.unary.op = EG_UNARY_LOG; break;
  case EG_HTP_QNN_OP_ELEMENT_WISE_NEURON: /* validation admits HARD_SWISH and HARD_SIGMOID only */
    pl->u.unary.op = op->attrs.neuron.operation == EG_HTP_QNN_NEURON_HARD_SWISH
                         ? EG_UNARY_HARD_SWISH : EG_UNARY_HARD_SIGMOID;
    pl->u.unary.lo = op->attrs.neuron.alpha;
    pl->u.unary.hi = op->attrs.neuron.beta;
    break;
  default:
    pl->u.unary.op = EG_UNARY_RELU_MIN_MAX;
    pl->u.unary.lo = op->attrs.relu_min_max.min_value;
    pl->u.unary.hi = op->attrs.relu_min_max.max_value;
  }
  return EG_OK;
}

static void run_unary(exec_t *ex, const op_t *op, const plan *pl) {
  eg_unary_nhwc_f32(pl->u.unary.op, pl->u.unary.n, in_ptr(ex, op, 0), out_ptr(ex, op),
                    pl->u.unary.lo, pl->u.unary.hi);
}

static eg_status prepare_log_softmax(exec_t *ex, const op_t *op, plan *pl) {
  const eg_htp_qnn_tensor *x = tin(ex, op, 0);
  const int axis = (int)op->attrs.softmax.axis;
  pl->u.sm.outer = pl->u.sm.inner = 1;
  pl->u.sm.axis = dim(x, axis);
  pl->u.sm.beta = op->attrs.softmax.beta;
  for (int i = 0; i < x->rank; i++) {
    if (i < axis) pl->u.sm.outer *= dim(x, i);
    if (i > axis) pl->u.sm.inner *= dim(x, i);
  }
  return EG_OK;
}

static void run_log_softmax(exec_t *ex, const op_t *op, const plan *pl) {
  eg_log_softmax_nhwc_f32(pl->u.sm.outer, pl->u.sm.axis, pl->u.sm.inner, pl->u.sm.beta,
                          in_ptr(ex, op, 0), out_ptr(ex, op));
}

static void run_softmax(exec_t *ex, const op_t *op, const plan *pl) {
  eg_softmax_nhwc_f32(pl->u.sm.outer, pl->u.sm.axis, pl->u.sm.inner, pl->u.sm.beta,
                      in_ptr(ex, op, 0), out_ptr(ex, op));
}

/* ---- normalization ---- */

static eg_status prepare_batchnorm(exec_t *ex, const op_t *op, plan *pl) {
  const eg_htp_qnn_tensor *x = tin(ex, op, 0);
  pl->u.bn.c = dim(x, x->rank - 1);
  pl->u.bn.rows = eg_htp_qnn_tensor_numel(x) / pl->u.bn.c;
  return EG_OK;
}

static void run_batchnorm(exec_t *ex, const op_t *op, const plan *pl) {
  eg_batch_norm_nhwc_f32(pl->u.bn.rows, pl->u.bn.c, in_ptr(ex, op, 0), in_ptr(ex, op, 1),
                        in_ptr(ex, op, 2), out_ptr(ex, op));
}

/* [batch, spatial, c] view of a channel-last tensor. */
static eg_norm_nhwc_params norm_view(const eg_htp_qnn_tensor *x, const eg_htp_qnn_norm_attrs *a) {
  eg_norm_nhwc_params p = {.batch = dim(x, 0), .c = dim(x, x->rank - 1), .spatial = 1,
                           .epsilon = a->epsilon, .normalize_variance = true};
  for (int i = 1; i < x->rank - 1; i++) p.spatial *= dim(x, i);
  return p;
}

static eg_status prepare_instance_norm(exec_t *ex, const op_t *op, plan *pl) {
  const eg_htp_qnn_norm_attrs *a = &op->attrs.norm;
  eg_norm_nhwc_params p = norm_view(tin(ex, op, 0), a);
  p.groups = a->region == 2 ? 1 : p.c; /* ACROSS_ALL : ACROSS_SPATIAL */
  p.across_channel = a->region == 1;
  p.rms = a->mode == 1;
  p.normalize_variance = a->normalize_variance;
  pl->u.norm = p;
  pl->scratch = eg_norm_nhwc_f32_scratch(&p);
  return EG_OK;
}

static eg_status prepare_group_norm(exec_t *ex, const op_t *op, plan *pl) {
  eg_norm_nhwc_params p = norm_view(tin(ex, op, 0), &op->attrs.norm);
  p.groups = op->attrs.norm.group;
  pl->u.norm = p;
  pl->scratch = eg_norm_nhwc_f32_scratch(&p);
  return EG_OK;
}

static void run_norm(exec_t *ex, const op_t *op, const plan *pl) {
  eg_norm_nhwc_f32(&pl->u.norm, in_ptr(ex, op, 0), in_ptr(ex, op, 1), in_ptr(ex, op, 2),
                   out_ptr(ex, op), scratch_of(ex, pl));
}

/* ---- fused elementwise groups (the plan's FUSED) ---- */

/* Appends op k's group to ch, its FUSED producers' steps first; its step. */
static int chain_add(exec_t *ex, int32_t k, const eg_htp_qnn_tensor *y, eg_ew_chain *ch,
                     int32_t *leaves) {
  const op_t *op = eg_htp_qnn_graph_op(ex->g, k);
  eg_ew_chain_op c = EG_EW_CHAIN_ADD;
  eg_htp_chain_op(op, &c);
  eg_ew_chain_step st = {.op = (uint8_t)c};
  if (c == EG_EW_CHAIN_RELU_MIN_MAX) {
    st.lo = op->attrs.relu_min_max.min_value;
    st.hi = op->attrs.relu_min_max.max_value;
  }
  for (int i = 0; i < op->n_inputs; i++) {
    const eg_htp_qnn_tensor *x = tin(ex, op, i);
    if (x->producer >= 0 && ex->plans[x->producer].fused) {
      st.arg[i] = (int8_t)chain_add(ex, x->producer, y, ch, leaves);
      continue;
    }
    leaves[ch->n_leaves] = x->id;
    ch->leaf_form[ch->n_leaves] = (uint8_t)eg_htp_leaf_form(x, y);
    st.arg[i] = (int8_t)(-1 - ch->n_leaves++);
  }
  ch->step[ch->n_steps] = st;
  return ch->n_steps++;
}

/* Tail k's chain (the plan was checked: the group fits the kernel); a reduction's, the group
 * of the FUSED op whose output it reads (its scratch, the reduction's, holds the sums). */
static eg_status prepare_chain(exec_t *ex, int32_t k) {
  plan *pl = &ex->plans[k];
  const op_t *op = eg_htp_qnn_graph_op(ex->g, k);
  pl->chain_reduce = op->n_inputs == 1 && eg_htp_reduces_rows(op, tin(ex, op, 0));
  const eg_htp_qnn_tensor *y = pl->chain_reduce ? tin(ex, op, 0) : tout(ex, op);
  pl->chain = calloc(1, sizeof *pl->chain);
  pl->chain_leaves = calloc(EG_EW_CHAIN_MAX_LEAVES, sizeof(int32_t));
  if (!pl->chain || !pl->chain_leaves)
    return eg_error(EG_ERR_NOMEM, "executor %s: out of memory", eg_htp_qnn_graph_name(ex->g));
  pl->chain->n = eg_htp_qnn_tensor_numel(y);
  pl->chain->c = y->rank > 0 && y->dims[y->rank - 1] > 0 ? y->dims[y->rank - 1] : 1;
  chain_add(ex, pl->chain_reduce ? y->producer : k, y, pl->chain, pl->chain_leaves);
  return EG_OK;
}

static void run_chain(exec_t *ex, const op_t *op, const plan *pl) {
  const void *leaves[EG_EW_CHAIN_MAX_LEAVES];
  for (int l = 0; l < pl->chain->n_leaves; l++) leaves[l] = ex->ptr[pl->chain_leaves[l]];
  void (*round)(float *, size_t) = ex->fp16 ? eg_fp16_store_result_f32 : NULL;
  if (pl->chain_reduce)
    eg_ew_chain_reduce_nhwc_f32(pl->chain, leaves, pl->u.reduce.mean, out_ptr(ex, op),
                                scratch_of(ex, pl), round);
  else
    eg_ew_chain_nhwc_f32(pl->chain, leaves, out_ptr(ex, op), round);
}

/* ---- the kernel table ---- */

#define prepare_CONV_2D prepare_conv
#define run_CONV_2D run_conv
#define prepare_DEPTH_WISE_CONV_2D prepare_dwconv
#define run_DEPTH_WISE_CONV_2D run_dwconv
#define prepare_TRANSPOSE_CONV_2D prepare_tconv
#define run_TRANSPOSE_CONV_2D run_tconv
#define prepare_POOL_MAX_2D prepare_pool
#define run_POOL_MAX_2D run_pool_max
#define prepare_POOL_AVG_2D prepare_pool
#define run_POOL_AVG_2D run_pool_avg
#define prepare_FULLY_CONNECTED prepare_fc
#define run_FULLY_CONNECTED run_fc
#define prepare_MAT_MUL prepare_matmul
#define run_MAT_MUL run_matmul
#define prepare_TRANSPOSE prepare_transpose
#define run_TRANSPOSE run_transpose
#define prepare_RESHAPE prepare_copy
#define run_RESHAPE run_copy
#define prepare_CONCAT prepare_concat
#define run_CONCAT run_concat
#define prepare_TILE prepare_tile
#define run_TILE run_tile
#define prepare_CAST prepare_cast
#define run_CAST run_cast
#define prepare_REDUCE_SUM prepare_reduce_sum
#define run_REDUCE_SUM run_reduce
#define prepare_REDUCE_MEAN prepare_reduce_mean
#define run_REDUCE_MEAN run_reduce
#define prepare_REDUCE_MAX prepare_reduce_max
#define run_REDUCE_MAX run_reduce
#define prepare_ELEMENT_WISE_ADD prepare_ew
#define run_ELEMENT_WISE_ADD run_ew
#define prepare_ELEMENT_WISE_SUBTRACT prepare_ew
#define run_ELEMENT_WISE_SUBTRACT run_ew
#define prepare_ELEMENT_WISE_MULTIPLY prepare_ew
#define run_ELEMENT_WISE_MULTIPLY run_ew
#define prepare_ELEMENT_WISE_DIVIDE prepare_ew
#define run_ELEMENT_WISE_DIVIDE run_ew
#define prepare_ELEMENT_WISE_GREATER prepare_ew
#define run_ELEMENT_WISE_GREATER run_ew
#define prepare_ELEMENT_WISE_GREATER_EQUAL prepare_ew
#define run_ELEMENT_WISE_GREATER_EQUAL run_ew
#define prepare_ELEMENT_WISE_LESS_EQUAL prepare_ew
#define run_ELEMENT_WISE_LESS_EQUAL run_ew
#define prepare_ELEMENT_WISE_EQUAL prepare_ew
#define run_ELEMENT_WISE_EQUAL run_equal
#define prepare_STRIDED_SLICE prepare_strided_slice
#define run_STRIDED_SLICE run_strided_slice
#define prepare_PAD prepare_pad
#define run_PAD run_pad
#define prepare_ELEMENT_WISE_SELECT prepare_ew
#define run_ELEMENT_WISE_SELECT run_ew
#define prepare_ELEMENT_WISE_NEG prepare_unary
#define run_ELEMENT_WISE_NEG run_unary
#define prepare_ELEMENT_WISE_EXP prepare_unary
#define run_ELEMENT_WISE_EXP run_unary
#define prepare_ELEMENT_WISE_LOG prepare_unary
#define run_ELEMENT_WISE_LOG run_unary
#define prepare_ELEMENT_WISE_RSQRT prepare_unary
#define run_ELEMENT_WISE_RSQRT run_unary
#define prepare_RELU prepare_unary
#define run_RELU run_unary
#define prepare_RELU_MIN_MAX prepare_unary
#define run_RELU_MIN_MAX run_unary
#define prepare_SIGMOID prepare_unary
#define run_SIGMOID run_unary
#define prepare_TANH prepare_unary
#define run_TANH run_unary
#define prepare_GELU prepare_unary
#define run_GELU run_unary
#define prepare_ELEMENT_WISE_NEURON prepare_unary
#define run_ELEMENT_WISE_NEURON run_unary
#define prepare_LOG_SOFTMAX prepare_log_softmax
#define run_LOG_SOFTMAX run_log_softmax
#define prepare_SOFTMAX prepare_log_softmax
#define run_SOFTMAX run_softmax
#define prepare_BATCHNORM prepare_batchnorm
#define run_BATCHNORM run_batchnorm
#define prepare_INSTANCE_NORM prepare_instance_norm
#define run_INSTANCE_NORM run_norm
#define prepare_GROUP_NORM prepare_group_norm
#define run_GROUP_NORM run_norm

typedef struct kernel {
  eg_status (*prepare)(exec_t *ex, const op_t *op, plan *pl);
  void (*run)(exec_t *ex, const op_t *op, const plan *pl);
} kernel;

#define QNN_OP_KERNEL(id) [EG_HTP_QNN_OP_##id] = {prepare_##id, run_##id},
static const kernel kernels[] = {
#define QNN_OP(id, name) QNN_OP_KERNEL(id)
#include "backends/htp/qnn_ops.def"
#undef QNN_OP
};
_Static_assert(sizeof kernels / sizeof kernels[0] == EG_HTP_QNN_OP_COUNT, "one kernel per QNN op");

/* ---- quantized tensors (executor.h): integers in ptr's place, float views for the kernels ---- */

/* Fixed-point dtypes with a kernel storage; their tensors stand in for FLOAT_32 ones. */
static bool runs_fixed(eg_htp_qnn_dtype d) {
  return d == EG_HTP_QNN_DTYPE_UFIXED_POINT_8 || d == EG_HTP_QNN_DTYPE_SFIXED_POINT_8 ||
         d == EG_HTP_QNN_DTYPE_SFIXED_POINT_32;
}

eg_status eg_htp_qnn_qview_make(const eg_htp_qnn_tensor *t, eg_htp_qnn_qview *out) {
  memset(out, 0, sizeof *out);
  eg_dtype storage;
  int64_t lo, hi;
  switch (t->dtype) {
  case EG_HTP_QNN_DTYPE_UFIXED_POINT_8: storage = EG_DTYPE_UINT8, lo = 0, hi = 255; break;
  case EG_HTP_QNN_DTYPE_SFIXED_POINT_8: storage = EG_DTYPE_INT8, lo = -128, hi = 127; break;
  case EG_HTP_QNN_DTYPE_SFIXED_POINT_32: storage = EG_DTYPE_INT32, lo = INT32_MIN, hi = INT32_MAX; break;
  default:
    return eg_error(EG_ERR_UNSUPPORTED, "tensor %s is %s: the executor runs quantized tensors "
                    "of 8-bit and 32-bit fixed point only", t->name, eg_htp_qnn_dtype_name(t->dtype));
  }
  const bool axis = t->quant.encoding == EG_HTP_QNN_QUANT_AXIS_SCALE_OFFSET;
  const int32_t n = axis ? t->quant.n_axis : 1;
  out->scale = malloc(sizeof(double) * (size_t)n);
  out->zero_point = malloc(sizeof(int64_t) * (size_t)n);
  if (!out->scale || !out->zero_point) {
    eg_boundary_qview_free(out);
    return eg_error(EG_ERR_NOMEM, "tensor %s: out of memory", t->name);
  }
  for (int32_t k = 0; k < n; k++) {
    out->scale[k] = axis ? t->quant.scales[k] : t->quant.scale;
    out->zero_point[k] = -(int64_t)(axis ? t->quant.offsets[k] : t->quant.offset);
  }
  eg_quant_view v = {.storage = storage, .outer = 1, .channels = 1, .inner = 1,
                     .scale = out->scale, .zero_point = out->zero_point, .qmin = lo, .qmax = hi,
                     .per_channel = axis};
  for (int d = 0; d < t->rank; d++) {
    if (!axis || d < t->quant.axis) v.outer *= t->dims[d];
    else if (d == t->quant.axis) v.channels = t->dims[d];
    else v.inner *= t->dims[d];
  }
  out->v = v;
  return EG_OK;
}

/* Per tensor: its view, its integers (where ptr would point) and its float view (what ptr
 * points to, so every kernel reads and writes floats). */
typedef struct qstate {
  int32_t n;
  eg_htp_qnn_qview *view;
  void **ints;
  float **real;
} qstate;

static bool is_quantized(const exec_t *ex, int32_t t) {
  return ex->quant && ex->quant->real[t] != NULL;
}

/* After allocate: moves each fixed-point tensor's integers out of ptr, gives it a float view,
 * and dequantizes STATIC ones once. */
static eg_status quant_create(exec_t *ex) {
  const int32_t nt = eg_htp_qnn_graph_num_tensors(ex->g);
  bool any = false;
  for (int32_t t = 0; t < nt; t++) any = any || eg_htp_qnn_dtype_is_fixed_point(eg_htp_qnn_graph_tensor(ex->g, t)->dtype);
  if (!any) return EG_OK;
  qstate *q = calloc(1, sizeof *q);
  ex->quant = q;
  if (!q || !(q->view = calloc((size_t)nt, sizeof *q->view)) ||
      !(q->ints = calloc((size_t)nt, sizeof *q->ints)) ||
      !(q->real = calloc((size_t)nt, sizeof *q->real)))
    return eg_error(EG_ERR_NOMEM, "executor %s: out of memory", eg_htp_qnn_graph_name(ex->g));
  q->n = nt;
  for (int32_t t = 0; t < nt; t++) {
    const eg_htp_qnn_tensor *x = eg_htp_qnn_graph_tensor(ex->g, t);
    if (!eg_htp_qnn_dtype_is_fixed_point(x->dtype)) continue;
    EG_TRY(eg_htp_qnn_qview_make(x, &q->view[t]));
    q->real[t] = aligned_alloc(64, (sizeof(float) * (size_t)eg_htp_qnn_tensor_numel(x) + 64) & ~(size_t)63);
    if (!q->real[t])
      return eg_error(EG_ERR_NOMEM, "executor %s: tensor %s: out of memory for its float view",
                      eg_htp_qnn_graph_name(ex->g), x->name);
    q->ints[t] = ex->ptr[t]; /* STATIC data / NATIVE slot; APP ones are bound per execute */
    ex->ptr[t] = q->real[t];
    if (x->type == EG_HTP_QNN_TENSOR_STATIC) eg_dequantize_f32(&q->view[t].v, x->data, q->real[t]);
  }
  return EG_OK;
}

static void quant_destroy(exec_t *ex) {
  qstate *q = ex->quant;
  if (!q) return;
  for (int32_t t = 0; q->view && q->real && t < q->n; t++) {
    eg_boundary_qview_free(&q->view[t]);
    free(q->real[t]);
  }
  free(q->view);
  free(q->ints);
  free(q->real);
  free(q);
}

/* After binding: the bound buffers of fixed-point APP tensors hold integers; inputs are
 * dequantized into their float views. */
static void quant_bind(exec_t *ex) {
  for (int32_t t = 0; ex->quant && t < ex->quant->n; t++) {
    if (!is_quantized(ex, t)) continue;
    const eg_htp_qnn_tensor *x = eg_htp_qnn_graph_tensor(ex->g, t);
    if (x->type != EG_HTP_QNN_TENSOR_APP_WRITE && x->type != EG_HTP_QNN_TENSOR_APP_READ) continue;
    ex->quant->ints[t] = ex->ptr[t];
    ex->ptr[t] = ex->quant->real[t];
    if (x->type == EG_HTP_QNN_TENSOR_APP_WRITE)
      eg_dequantize_f32(&ex->quant->view[t].v, ex->quant->ints[t], ex->quant->real[t]);
  }
}

/* After an op: a fixed-point output is quantized on write, and its float view becomes what
 * the integers hold. */
static void quant_write(exec_t *ex, const op_t *op) {
  const int32_t t = op->outputs[0];
  if (!is_quantized(ex, t)) return;
  const eg_quant_view *v = &ex->quant->view[t].v;
  eg_quantize_f32(v, ex->quant->real[t], ex->quant->ints[t]);
  eg_dequantize_f32(v, ex->quant->ints[t], ex->quant->real[t]);
}

/* ---- dtypes the executor runs ---- */

/* Every tensor an op touches is FLOAT_32, except a comparison's output and
 * ElementWiseSelect's condition (BOOL_8) and Cast's (checked by prepare_cast), and has fewer than
 * 2^31 elements (so every GEMM dimension fits sgemm's int). Reshape, Transpose, StridedSlice,
 * Concat, Tile and ElementWiseSelect's operands only move 4-byte elements (memcpy, register
 * shuffles, a conditional copy), so they also run all-INT_32 (the int64 values pass i64_to_i32
 * narrows; max pool's indices). ElementWiseEqual runs on INT_32
 * operands only (the class indices of nll_loss's one-hot mask). */
static eg_status check_supported(const exec_t *ex, const op_t *op) {
  if (op->type == EG_HTP_QNN_OP_CAST) return EG_OK;
  for (int i = 0; i <= op->n_inputs; i++) { /* inputs, then (i == n_inputs) the output */
    const bool is_out = i == op->n_inputs;
    const eg_htp_qnn_tensor *t = is_out ? tout(ex, op) : tin(ex, op, i);
    if (!t) continue;
    const bool mask = (is_out && eg_htp_qnn_op_is_comparison(op->type)) ||
                      (i == 0 && op->type == EG_HTP_QNN_OP_ELEMENT_WISE_SELECT);
    const bool moves = op->type == EG_HTP_QNN_OP_RESHAPE || op->type == EG_HTP_QNN_OP_TRANSPOSE ||
                       op->type == EG_HTP_QNN_OP_CONCAT || op->type == EG_HTP_QNN_OP_STRIDED_SLICE ||
                       op->type == EG_HTP_QNN_OP_TILE || op->type == EG_HTP_QNN_OP_ELEMENT_WISE_SELECT;
    const bool int_in = op->type == EG_HTP_QNN_OP_ELEMENT_WISE_EQUAL ||
                        (moves && tout(ex, op)->dtype == EG_HTP_QNN_DTYPE_INT_32);
    const eg_htp_qnn_dtype want = mask ? EG_HTP_QNN_DTYPE_BOOL_8
                              : int_in ? EG_HTP_QNN_DTYPE_INT_32 : EG_HTP_QNN_DTYPE_FLOAT_32;
    if (eg_htp_qnn_tensor_numel(t) > INT32_MAX) /* sgemm takes int dimensions */
      return eg_error(EG_ERR_UNSUPPORTED, "op %s (%s): tensor %s has %lld elements: the executor "
                      "handles up to 2^31-1 per tensor", op->name, eg_htp_qnn_op_name(op->type),
                      t->name, (long long)eg_htp_qnn_tensor_numel(t));
    if (t->dtype != want && !(want == EG_HTP_QNN_DTYPE_FLOAT_32 && runs_fixed(t->dtype)))
      return eg_error(EG_ERR_UNSUPPORTED, "op %s (%s): tensor %s is %s: the executor runs %s "
                      "here (fp16 and quantized graphs need the QNN SDK backend)", op->name,
                      eg_htp_qnn_op_name(op->type), t->name, eg_htp_qnn_dtype_name(t->dtype),
                      eg_htp_qnn_dtype_name(want));
  }
  return EG_OK;
}

/* ---- memory planning ---- */

/* Lifetime of each NATIVE tensor [first, last] in op indices (read when its readers run:
 * run_at); -1 for others. */
static void lifetimes(const eg_htp_qnn_graph *g, const int32_t *run_at, int32_t *first,
                      int32_t *last) {
  const int32_t nt = eg_htp_qnn_graph_num_tensors(g);
  for (int32_t t = 0; t < nt; t++) {
    const eg_htp_qnn_tensor *x = eg_htp_qnn_graph_tensor(g, t);
    first[t] = last[t] = x->type == EG_HTP_QNN_TENSOR_NATIVE ? x->producer : -1;
  }
  for (int32_t k = 0; k < eg_htp_qnn_graph_num_ops(g); k++) {
    const op_t *op = eg_htp_qnn_graph_op(g, k);
    for (int i = 0; i < op->n_inputs; i++)
      if (op->inputs[i] >= 0 && first[op->inputs[i]] >= 0 && run_at[k] > last[op->inputs[i]])
        last[op->inputs[i]] = run_at[k];
  }
}

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* First fit over ex->work (lifetimes first, last per tensor): each NATIVE tensor, in order of
 * production, takes the lowest offset (offset[t]) that overlaps no earlier tensor whose
 * lifetime overlaps its own; the arena's bytes. Quadratic in the tensors. */
static size_t first_fit(const exec_t *ex, const int32_t *first, const int32_t *last,
                        size_t *offset) {
  const eg_htp_qnn_graph *g = ex->g;
  const int32_t nt = eg_htp_qnn_graph_num_tensors(g);
  size_t arena = 0;
  for (int32_t i = 0; i < ex->n_work; i++) {
    const int32_t t = ex->work[i].tensor;
    const size_t size = ex->work[i].bytes;
    if (t < 0) continue;
    size_t off = 0;
    for (bool moved = true; moved;) { /* bump past every live conflict until none is left */
      moved = false;
      for (int32_t u = 0; u < nt; u++) {
        if (u == t || first[u] < 0 || offset[u] == SIZE_MAX) continue;
        const bool live = first[u] <= last[t] && first[t] <= last[u];
        const size_t us = align64(eg_htp_qnn_graph_tensor(g, u)->nbytes);
        if (live && off < offset[u] + us && offset[u] < off + size) {
          off = offset[u] + us;
          moved = true;
        }
      }
    }
    offset[t] = off;
    if (off + size > arena) arena = off + size;
  }
  return arena;
}

/* The working memory: each NATIVE tensor with bytes, in order of production, with its
 * lifetime, then each op's scratch (ex->work); placed in the arena (offset) unless shared. */
static eg_status plan_native(exec_t *ex, size_t *offset) {
  const eg_htp_qnn_graph *g = ex->g;
  const int32_t nt = eg_htp_qnn_graph_num_tensors(g);
  int32_t *first = calloc((size_t)nt + 1, sizeof(int32_t)), *last = calloc((size_t)nt + 1, sizeof(int32_t));
  if (!first || !last) {
    free(first);
    free(last);
    return eg_error(EG_ERR_NOMEM, "executor %s: out of memory planning", eg_htp_qnn_graph_name(g));
  }
  lifetimes(g, ex->run_at, first, last);
  for (int32_t k = 0; k < eg_htp_qnn_graph_num_ops(g); k++) { /* a Conv2d writing a later op's output */
    const int32_t t = ex->plans[k].y_dst;
    if (t >= 0 && first[t] > k) first[t] = k;
  }
  /* an aliased Reshape's input lives while its output is read (last to first: along chains) */
  for (int32_t k = eg_htp_qnn_graph_num_ops(g) - 1; k >= 0; k--) {
    const op_t *op = eg_htp_qnn_graph_op(g, k);
    const int32_t x = op->inputs[0], y = op->outputs[0];
    if (ex->plans[k].aliased && first[x] >= 0 && last[y] > last[x]) last[x] = last[y];
  }
  ex->work = calloc(2 * (size_t)eg_htp_qnn_graph_num_ops(g) + 1, sizeof *ex->work);
  if (!ex->work) {
    free(first);
    free(last);
    return eg_error(EG_ERR_NOMEM, "executor %s: out of memory planning", eg_htp_qnn_graph_name(g));
  }
  for (int32_t k = 0; k < eg_htp_qnn_graph_num_ops(g); k++) {
    const int32_t t = eg_htp_qnn_graph_op(g, k)->outputs[0];
    if (first[t] < 0 || ex->plans[k].folded || ex->plans[k].unwritten)
      continue; /* folded: in ex->consts; unwritten: no bytes */
    const size_t size = align64(eg_htp_qnn_graph_tensor(g, t)->nbytes);
    ex->work[ex->n_work++] = (eg_htp_qnn_work_tensor){.tensor = t, .bytes = size,
                                                  .first_op = first[t], .last_op = last[t]};
    ex->native_sum += size;
  }
  for (int32_t k = 0; k < eg_htp_qnn_graph_num_ops(g); k++) /* each op's scratch, at its op */
    if (ex->plans[k].scratch && !ex->plans[k].folded && !ex->plans[k].skipped)
      ex->work[ex->n_work++] = (eg_htp_qnn_work_tensor){
          .tensor = -1, .bytes = align64(ex->plans[k].scratch), .first_op = k, .last_op = k};
  /* the arena's layout: only an executor with memory of its own has one (a shared one's
   * tensors are placed by its caller, the runtime, once: eg_htp_qnn_executor_get_stats lays
   * them out for its numbers alone) */
  if (!ex->shared) ex->arena_bytes = first_fit(ex, first, last, offset);
  free(first);
  free(last);
  return EG_OK;
}

/* ex->read_until: each tensor's last direct reader (when it runs: run_at), then (last op to
 * first: along chains) an aliased Reshape's input read as long as its output. */
static eg_status plan_reads(exec_t *ex) {
  const int32_t nt = eg_htp_qnn_graph_num_tensors(ex->g), no = eg_htp_qnn_graph_num_ops(ex->g);
  if (!(ex->read_until = malloc(((size_t)nt + 1) * sizeof(int32_t))))
    return eg_error(EG_ERR_NOMEM, "executor %s: out of memory planning",
                    eg_htp_qnn_graph_name(ex->g));
  for (int32_t t = 0; t < nt; t++) ex->read_until[t] = -1;
  for (int32_t k = 0; k < no; k++) {
    const op_t *op = eg_htp_qnn_graph_op(ex->g, k);
    for (int i = 0; i < op->n_inputs; i++)
      if (op->inputs[i] >= 0 && ex->run_at[k] > ex->read_until[op->inputs[i]])
        ex->read_until[op->inputs[i]] = ex->run_at[k];
  }
  for (int32_t k = no - 1; k >= 0; k--) {
    const op_t *op = eg_htp_qnn_graph_op(ex->g, k);
    if (!ex->plans[k].aliased) continue;
    int32_t *x = &ex->read_until[op->inputs[0]];
    if (ex->read_until[op->outputs[0]] > *x) *x = ex->read_until[op->outputs[0]];
  }
  return EG_OK;
}

int32_t eg_htp_qnn_executor_input_last_op(const eg_htp_qnn_executor *ex, int32_t tensor) {
  return tensor >= 0 && tensor < eg_htp_qnn_graph_num_tensors(ex->g) ? ex->read_until[tensor]
                                                                     : -1;
}

/* ---- lifecycle ---- */

/* ex->run_at (a FUSED op's, last to first: its reader's), and each group tail's chain. */
static eg_status fused_groups(exec_t *ex, const eg_htp_exec_plan *xp) {
  const int32_t no = eg_htp_qnn_graph_num_ops(ex->g), nt = eg_htp_qnn_graph_num_tensors(ex->g);
  ex->run_at = malloc(((size_t)no + 1) * sizeof(int32_t));
  int32_t *readers = calloc(2 * ((size_t)nt + 1), sizeof(int32_t)), *reader_of = readers + nt + 1;
  if (!ex->run_at || !readers) {
    free(readers);
    return eg_error(EG_ERR_NOMEM, "executor %s: out of memory", eg_htp_qnn_graph_name(ex->g));
  }
  eg_htp_count_readers(ex->g, readers, reader_of);
  for (int32_t k = no - 1; k >= 0; k--)
    ex->run_at[k] = ex->plans[k].fused
                        ? ex->run_at[reader_of[eg_htp_qnn_graph_op(ex->g, k)->outputs[0]]] : k;
  free(readers);
  for (int32_t k = 0; xp && k < no; k++)
    if (!ex->plans[k].skipped && !ex->plans[k].folded && eg_htp_reads_fused(ex->g, xp, k))
      EG_TRY(prepare_chain(ex, k));
  return EG_OK;
}

/* Each op's kernel planned in graph order, the executor plan's decisions applied (exec_plan.h:
 * checked first, so every tensor it names is one this code may point at). */
static eg_status prepare_ops(exec_t *ex, const eg_htp_exec_plan *xp) {
  char why[512];
  if (xp && !eg_htp_exec_plan_check(ex->g, xp, why, sizeof why))
    return eg_error(EG_ERR_INVALID, "executor %s: executor plan: %s", eg_htp_qnn_graph_name(ex->g),
                    why);
  const bool planned = xp && xp->n_ops > 0;
  for (int32_t t = 0; t < eg_htp_qnn_graph_num_tensors(ex->g); t++) {
    const eg_htp_qnn_tensor *x = eg_htp_qnn_graph_tensor(ex->g, t);
    if (x->type == EG_HTP_QNN_TENSOR_APP_READ && x->producer < 0)
      return eg_error(EG_ERR_INVALID, "executor %s: output tensor %s (APP_READ, no producer): "
                      "every graph output must be written by an op", eg_htp_qnn_graph_name(ex->g),
                      x->name);
  }
  for (int32_t k = 0; k < eg_htp_qnn_graph_num_ops(ex->g); k++) {
    const op_t *op = eg_htp_qnn_graph_op(ex->g, k);
    const eg_htp_exec_op *e = planned ? &xp->ops[k] : NULL;
    plan *pl = &ex->plans[k];
    EG_TRY(check_supported(ex, op));
    pl->folded = e && e->how == EG_HTP_EXEC_FOLD;
    pl->aliased = e && e->how == EG_HTP_EXEC_ALIAS;
    pl->fused = e && e->how == EG_HTP_EXEC_FUSED;
    pl->skipped = pl->unwritten = pl->aliased || pl->fused || (e && e->how == EG_HTP_EXEC_SKIP);
    pl->filter_read = e ? e->filter_read : EG_HTP_FILTER_READ_AS_IS;
    pl->filter_src = e ? e->filter_src : -1;
    pl->y_dst = e ? e->y_dst : -1;
    EG_TRY(kernels[op->type].prepare(ex, op, pl));
    if (pl->scratch > ex->scratch_bytes) ex->scratch_bytes = pl->scratch;
    if (pl->folded) ex->consts_bytes += align64(tout(ex, op)->nbytes);
  }
  for (int32_t k = 0; k < eg_htp_qnn_graph_num_ops(ex->g); k++) { /* a Conv2d writing y_dst */
    const int32_t t = ex->plans[k].y_dst;
    if (t < 0) continue;
    ex->plans[k].unwritten = true; /* its own output: no bytes */
    ex->plans[eg_htp_qnn_graph_tensor(ex->g, t)->producer].unwritten = false; /* y_dst has them */
  }
  return fused_groups(ex, planned ? xp : NULL);
}

/* NATIVE tensor t's bytes at `at`: its pointer, or for a fixed-point one (after quant_create)
 * where its integers are. */
static void point_tensor(exec_t *ex, int32_t t, void *at) {
  if (is_quantized(ex, t)) ex->quant->ints[t] = at;
  else ex->ptr[t] = at;
}

/* NATIVE tensors into the arena. */
static void point_native(exec_t *ex) {
  for (int32_t i = 0; i < ex->n_work; i++)
    if (ex->work[i].tensor >= 0)
      point_tensor(ex, ex->work[i].tensor, ex->arena + ex->offset[ex->work[i].tensor]);
}

/* Whether tensor t gets an fp16 copy: a FLOAT_32 STATIC or APP_WRITE tensor in fp16 mode. */
static bool has_f16_copy(const exec_t *ex, const eg_htp_qnn_tensor *t) {
  return ex->fp16 && t->dtype == EG_HTP_QNN_DTYPE_FLOAT_32 &&
         (t->type == EG_HTP_QNN_TENSOR_STATIC || t->type == EG_HTP_QNN_TENSOR_APP_WRITE);
}

/* fp16 mode: one block for the rounded copies; STATIC ones rounded now and read from there. */
static eg_status fp16_copies(exec_t *ex) {
  if (!ex->fp16) return EG_OK;
  const int32_t nt = eg_htp_qnn_graph_num_tensors(ex->g);
  size_t bytes = 0;
  for (int32_t t = 0; t < nt; t++)
    if (has_f16_copy(ex, eg_htp_qnn_graph_tensor(ex->g, t)))
      bytes += align64(eg_htp_qnn_graph_tensor(ex->g, t)->nbytes);
  ex->f16 = calloc((size_t)nt + 1, sizeof *ex->f16);
  ex->f16_block = bytes ? aligned_alloc(64, bytes) : NULL;
  if (!ex->f16 || (bytes && !ex->f16_block))
    return eg_error(EG_ERR_NOMEM, "executor %s: out of memory (%zu bytes of fp16 inputs and "
                    "weights)", eg_htp_qnn_graph_name(ex->g), bytes);
  size_t at = 0;
  for (int32_t t = 0; t < nt; t++) {
    const eg_htp_qnn_tensor *x = eg_htp_qnn_graph_tensor(ex->g, t);
    if (!has_f16_copy(ex, x)) continue;
    ex->f16[t] = (float *)(ex->f16_block + at);
    at += align64(x->nbytes);
    if (x->type != EG_HTP_QNN_TENSOR_STATIC) continue;
    memcpy(ex->f16[t], x->data, x->nbytes);
    eg_fp16_store_f32(ex->f16[t], (size_t)eg_htp_qnn_tensor_numel(x));
    ex->ptr[t] = ex->f16[t];
  }
  return EG_OK;
}

/* fp16 mode, after binding: each float input rounded into its copy, which the ops read. */
static void fp16_bind(exec_t *ex) {
  for (int32_t t = 0; ex->fp16 && t < eg_htp_qnn_graph_num_tensors(ex->g); t++) {
    const eg_htp_qnn_tensor *x = eg_htp_qnn_graph_tensor(ex->g, t);
    if (x->type != EG_HTP_QNN_TENSOR_APP_WRITE || !ex->f16[t]) continue;
    memcpy(ex->f16[t], ex->ptr[t], x->nbytes);
    eg_fp16_store_f32(ex->f16[t], (size_t)eg_htp_qnn_tensor_numel(x));
    ex->ptr[t] = ex->f16[t];
  }
}

/* fp16 mode, after op k ran: the float tensor it wrote, rounded in place to the format the HTP
 * keeps op results in (fp16's precision, one binade more range: eg_fp16_store_result_f32). */
static void fp16_store_output(exec_t *ex, int32_t k) {
  if (!ex->fp16) return;
  const plan *pl = &ex->plans[k];
  const int32_t t = pl->y_dst >= 0 ? pl->y_dst : eg_htp_qnn_graph_op(ex->g, k)->outputs[0];
  const eg_htp_qnn_tensor *y = eg_htp_qnn_graph_tensor(ex->g, t);
  if (y->dtype != EG_HTP_QNN_DTYPE_FLOAT_32 || !ex->ptr[t]) return;
  eg_fp16_store_result_f32(ex->ptr[t], (size_t)eg_htp_qnn_tensor_numel(y));
}

/* The folded constants, and the arena and scratch unless they are the caller's (shared). */
static eg_status allocate(exec_t *ex) {
  const int32_t nt = eg_htp_qnn_graph_num_tensors(ex->g);
  if (!ex->shared) {
    ex->arena = ex->arena_bytes ? aligned_alloc(64, align64(ex->arena_bytes)) : NULL;
    ex->scratch = ex->scratch_bytes ? aligned_alloc(64, align64(ex->scratch_bytes)) : NULL;
  }
  ex->consts = ex->consts_bytes ? aligned_alloc(64, ex->consts_bytes) : NULL;
  if ((!ex->shared && ex->arena_bytes && !ex->arena) || (ex->consts_bytes && !ex->consts) ||
      (!ex->shared && ex->scratch_bytes && !ex->scratch))
    return eg_error(EG_ERR_NOMEM, "executor %s: out of memory (%zu bytes of tensors, %zu of "
                    "folded constants, %zu of scratch)", eg_htp_qnn_graph_name(ex->g),
                    ex->arena_bytes, ex->consts_bytes, ex->scratch_bytes);
  for (int32_t t = 0; t < nt; t++) {
    const eg_htp_qnn_tensor *x = eg_htp_qnn_graph_tensor(ex->g, t);
    if (x->type == EG_HTP_QNN_TENSOR_STATIC) ex->ptr[t] = (void *)x->data;
  }
  EG_TRY(fp16_copies(ex)); /* before folded outputs take their inputs' pointers */
  if (!ex->shared) point_native(ex);
  size_t at = 0;
  for (int32_t k = 0; k < eg_htp_qnn_graph_num_ops(ex->g); k++) {
    if (!ex->plans[k].folded) continue;
    const eg_htp_qnn_tensor *y = tout(ex, eg_htp_qnn_graph_op(ex->g, k));
    ex->ptr[y->id] = ex->consts + at;
    at += align64(y->nbytes);
  }
  return EG_OK;
}

/* Runs the folded ops once and packs constant TransposeConv2d filters, in graph order (their
 * inputs are STATIC or folded before them). */
static eg_status fold_constants(exec_t *ex) {
  for (int32_t k = 0; k < eg_htp_qnn_graph_num_ops(ex->g); k++) {
    const op_t *op = eg_htp_qnn_graph_op(ex->g, k);
    plan *pl = &ex->plans[k];
    if (pl->folded) {
      kernels[op->type].run(ex, op, pl);
      fp16_store_output(ex, k);
    }
    if (pl->packed_floats) {
      pl->packed = aligned_alloc(64, align64(sizeof(float) * pl->packed_floats));
      if (!pl->packed)
        return eg_error(EG_ERR_NOMEM, "executor %s: op %s: out of memory (%zu bytes of packed "
                        "filter)", eg_htp_qnn_graph_name(ex->g), op->name,
                        sizeof(float) * pl->packed_floats);
      eg_transpose_conv2d_nhwc_f32_pack(
          &pl->u.tconv, pl->filter_src >= 0 ? ex->ptr[pl->filter_src] : in_ptr(ex, op, 1),
          pl->packed);
    }
  }
  return EG_OK;
}

/* Folded ops read constants and write ex->consts only (no arena, no scratch), so folding
 * runs at create also when the arena is the caller's and not handed over yet. */
static eg_status create(const eg_htp_qnn_graph *g, const eg_htp_exec_plan *xp,
                        eg_precision precision, bool shared, eg_htp_qnn_executor **out) {
  *out = NULL;
  if (precision != EG_PRECISION_DEFAULT && precision != EG_PRECISION_FP32 &&
      precision != EG_PRECISION_FP16)
    return eg_error(EG_ERR_ARGUMENT, "executor %s: precision (%d): must be EG_PRECISION_DEFAULT, "
                    "_FP32 or _FP16", eg_htp_qnn_graph_name(g), (int)precision);
  const int32_t nt = eg_htp_qnn_graph_num_tensors(g), no = eg_htp_qnn_graph_num_ops(g);
  exec_t *ex = calloc(1, sizeof *ex);
  eg_status st = EG_ERR_NOMEM;
  if (!ex) goto fail;
  ex->g = g;
  ex->shared = shared;
  ex->fp16 = precision == EG_PRECISION_FP16;
  ex->ptr = calloc((size_t)nt + 1, sizeof(void *));
  ex->plans = calloc((size_t)no + 1, sizeof(plan));
  ex->offset = calloc((size_t)nt + 1, sizeof(size_t));
  if (!ex->ptr || !ex->plans || !ex->offset) goto fail;
  for (int32_t t = 0; t < nt; t++) ex->offset[t] = SIZE_MAX;
  if ((st = prepare_ops(ex, xp)) != EG_OK) goto fail;
  if ((st = plan_native(ex, ex->offset)) != EG_OK) goto fail;
  if ((st = plan_reads(ex)) != EG_OK) goto fail;
  if ((st = allocate(ex)) != EG_OK) goto fail;
  if ((st = quant_create(ex)) != EG_OK) goto fail;
  if ((st = fold_constants(ex)) != EG_OK) goto fail;
  *out = ex;
  return EG_OK;
fail:
  if (st == EG_ERR_NOMEM && (!ex || !ex->ptr || !ex->plans || !ex->offset))
    eg_error(EG_ERR_NOMEM, "executor %s: out of memory", eg_htp_qnn_graph_name(g));
  eg_htp_qnn_executor_destroy(ex);
  return st;
}

eg_status eg_htp_qnn_executor_create(const eg_htp_qnn_graph *g, eg_htp_qnn_executor **out) {
  return create(g, NULL, EG_PRECISION_FP32, false, out);
}

eg_status eg_htp_qnn_executor_create_shared(const eg_htp_qnn_graph *g, eg_htp_qnn_executor **out) {
  return create(g, NULL, EG_PRECISION_FP32, true, out);
}

eg_status eg_htp_qnn_executor_create_plan(const eg_htp_qnn_graph *g, const eg_htp_exec_plan *xp,
                                      eg_precision precision, bool shared,
                                      eg_htp_qnn_executor **out) {
  return create(g, xp, precision, shared, out);
}

int32_t eg_htp_qnn_executor_work_tensors(const eg_htp_qnn_executor *ex, const eg_htp_qnn_work_tensor **out) {
  *out = ex->work;
  return ex->n_work;
}

void eg_htp_qnn_executor_set_tensor_memory(eg_htp_qnn_executor *ex, void *const *buffers, void *scratch) {
  for (int32_t i = 0; i < ex->n_work; i++)
    if (ex->work[i].tensor >= 0) point_tensor(ex, ex->work[i].tensor, buffers[i]);
    else ex->plans[ex->work[i].first_op].scratch_at = buffers[i];
  ex->scratch = scratch;
  ex->has_work = true;
}

void eg_htp_qnn_executor_set_op_times(eg_htp_qnn_executor *ex, int64_t *times) {
  ex->op_times = times;
  for (int32_t k = 0; times && k < eg_htp_qnn_graph_num_ops(ex->g); k++)
    times[2 * k] = times[2 * k + 1] = 0;
}

void eg_htp_qnn_executor_destroy(eg_htp_qnn_executor *ex) {
  if (!ex) return;
  for (int32_t k = 0; ex->plans && k < eg_htp_qnn_graph_num_ops(ex->g); k++) {
    if (eg_htp_qnn_graph_op(ex->g, k)->type == EG_HTP_QNN_OP_CONCAT) {
      free(ex->plans[k].u.concat.sizes);
      free((void *)ex->plans[k].u.concat.xs);
    }
    free(ex->plans[k].packed);
    free(ex->plans[k].chain);
    free(ex->plans[k].chain_leaves);
  }
  quant_destroy(ex);
  free(ex->plans);
  free(ex->ptr);
  free(ex->offset);
  free(ex->read_until);
  free(ex->run_at);
  free(ex->work);
  if (!ex->shared) {
    free(ex->arena);
    free(ex->scratch);
  }
  free(ex->consts);
  free(ex->f16);
  free(ex->f16_block);
  free(ex);
}

void eg_htp_qnn_executor_get_stats(const eg_htp_qnn_executor *ex, eg_htp_qnn_executor_stats *out) {
  size_t arena = ex->arena_bytes;
  const size_t nt = (size_t)eg_htp_qnn_graph_num_tensors(ex->g);
  int32_t *first = ex->shared ? malloc(2 * (nt + 1) * sizeof(int32_t)) : NULL;
  int32_t *last = first ? first + nt + 1 : NULL;
  size_t *offset = first ? malloc((nt + 1) * sizeof(size_t)) : NULL;
  if (offset) { /* shared: laid out for the number alone (0 when out of memory) */
    for (size_t t = 0; t < nt; t++) first[t] = last[t] = -1, offset[t] = SIZE_MAX;
    for (int32_t i = 0; i < ex->n_work; i++)
      if (ex->work[i].tensor >= 0) {
        first[ex->work[i].tensor] = ex->work[i].first_op;
        last[ex->work[i].tensor] = ex->work[i].last_op;
      }
    arena = first_fit(ex, first, last, offset);
  }
  free(first);
  free(offset);
  *out = (eg_htp_qnn_executor_stats){.native_bytes = arena,
                                 .native_sum_bytes = ex->native_sum,
                                 .scratch_bytes = ex->scratch_bytes};
}

/* ---- execute ---- */

/* Binds each APP tensor of `type` to its buffer; every such tensor exactly once. */
static eg_status bind(exec_t *ex, const eg_htp_qnn_binding *b, int n, eg_htp_qnn_tensor_type type,
                      const char *what) {
  const char *gname = eg_htp_qnn_graph_name(ex->g);
  const int32_t nt = eg_htp_qnn_graph_num_tensors(ex->g);
  if (n < 0 || (n > 0 && !b))
    return eg_error(EG_ERR_ARGUMENT, "execute %s: %s (%d bindings): a negative count or a NULL "
                    "array", gname, what, n);
  for (int32_t t = 0; t < nt; t++)
    if (eg_htp_qnn_graph_tensor(ex->g, t)->type == type) ex->ptr[t] = NULL;
  for (int i = 0; i < n; i++) {
    const eg_htp_qnn_tensor *t = eg_htp_qnn_graph_tensor(ex->g, b[i].tensor);
    if (!t || t->type != type)
      return eg_error(EG_ERR_ARGUMENT, "execute %s: %s[%d] (tensor id %d%s%s): must name an %s "
                      "tensor", gname, what, i, (int)b[i].tensor, t ? ", " : "",
                      t ? t->name : "", type == EG_HTP_QNN_TENSOR_APP_WRITE ? "APP_WRITE" : "APP_READ");
    if (b[i].nbytes != t->nbytes || !b[i].data)
      return eg_error(EG_ERR_ARGUMENT, "execute %s: %s %s (%zu bytes%s): needs a buffer of "
                      "exactly %zu bytes", gname, what, t->name, b[i].nbytes,
                      b[i].data ? "" : ", NULL", t->nbytes);
    if (ex->ptr[t->id])
      return eg_error(EG_ERR_ARGUMENT, "execute %s: %s %s (bound twice): bind each tensor once",
                      gname, what, t->name);
    ex->ptr[t->id] = b[i].data;
  }
  for (int32_t t = 0; t < nt; t++) {
    const eg_htp_qnn_tensor *x = eg_htp_qnn_graph_tensor(ex->g, t);
    if (x->type == type && !ex->ptr[t])
      return eg_error(EG_ERR_ARGUMENT, "execute %s: %s %s (not bound): every %s tensor needs a "
                      "buffer", gname, what, x->name,
                      type == EG_HTP_QNN_TENSOR_APP_WRITE ? "APP_WRITE" : "APP_READ");
  }
  return EG_OK;
}

eg_status eg_htp_qnn_executor_execute(eg_htp_qnn_executor *ex, const eg_htp_qnn_binding *inputs,
                                  int n_inputs, const eg_htp_qnn_binding *outputs, int n_outputs) {
  if (ex->shared && !ex->has_work)
    return eg_error(EG_ERR_STATE, "execute %s: no working memory: an executor made with "
                    "eg_htp_qnn_executor_create_shared needs eg_htp_qnn_executor_set_tensor_memory "
                    "first",
                    eg_htp_qnn_graph_name(ex->g));
  EG_TRY(bind(ex, inputs, n_inputs, EG_HTP_QNN_TENSOR_APP_WRITE, "input"));
  EG_TRY(bind(ex, outputs, n_outputs, EG_HTP_QNN_TENSOR_APP_READ, "output"));
  quant_bind(ex);
  fp16_bind(ex);
  int64_t *times = ex->op_times;
  for (int32_t k = 0; k < eg_htp_qnn_graph_num_ops(ex->g); k++) {
    const op_t *op = eg_htp_qnn_graph_op(ex->g, k);
    if (ex->plans[k].aliased) ex->ptr[op->outputs[0]] = ex->ptr[op->inputs[0]];
    if (ex->plans[k].folded || ex->plans[k].skipped) continue;
    const int64_t t0 = times ? eg_now_ns() : 0;
    if (ex->plans[k].chain) run_chain(ex, op, &ex->plans[k]);
    else kernels[op->type].run(ex, op, &ex->plans[k]);
    quant_write(ex, op);
    fp16_store_output(ex, k);
    if (times) {
      times[2 * k] = t0;
      times[2 * k + 1] = eg_now_ns() - t0;
    }
  }
  return EG_OK;
}

/* ---- the runtime half of the backend interface (backends/executor.h) ---- */

/* The plan the lowered graph carries (eg_htp_qnn_graph_plan: the layout pass's). */
static eg_status htp_create(const void *g, eg_precision precision, void **out) {
  eg_htp_qnn_executor *ex = NULL;
  eg_status s = eg_htp_qnn_executor_create_plan(g, eg_htp_qnn_graph_plan(g), precision, true, &ex);
  *out = ex;
  return s;
}

static size_t htp_scratch_bytes(const void *ex) {
  return ((const eg_htp_qnn_executor *)ex)->scratch_bytes;
}

static eg_status htp_run(void *ex, const eg_backend_binding *inputs, int n_inputs,
                         const eg_backend_binding *outputs, int n_outputs) {
  return eg_htp_qnn_executor_execute(ex, inputs, n_inputs, outputs, n_outputs);
}

static void htp_destroy(void *ex) { eg_htp_qnn_executor_destroy(ex); }

static int32_t htp_spans(const void *ex, const eg_backend_span **out) {
  return eg_htp_qnn_executor_work_tensors(ex, out);
}

static void htp_set_spans(void *ex, void *const *buffers, void *scratch) {
  eg_htp_qnn_executor_set_tensor_memory(ex, buffers, scratch);
}

static void htp_set_op_times(void *ex, int64_t *times) { eg_htp_qnn_executor_set_op_times(ex, times); }

static int32_t htp_input_last_op(const void *ex, int32_t tensor) {
  return eg_htp_qnn_executor_input_last_op(ex, tensor);
}

const eg_backend_executor eg_htp_executor = {
    .create = htp_create, .spans = htp_spans, .scratch_bytes = htp_scratch_bytes,
    .set_spans = htp_set_spans, .run = htp_run, .destroy = htp_destroy,
    .set_op_times = htp_set_op_times, .input_last_op = htp_input_last_op};
