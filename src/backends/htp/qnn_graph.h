/* qnn_graph.h — the htp backend's graph: QNN-named ops over QNN-typed tensors.
 *
 * This is the NPU side of a partition, modelled on the QNN API (QnnGraph / Qnn_Tensor_t /
 * Qnn_OpConfig_t / Qnn_Param_t) so that a real QNN SDK backend could consume it 1:1, and so that
 * our own executor (executor.h) can run it on the CPU the way QNN's x86 simulator does.
 *
 * Conventions (QNN's):
 *   activations NHWC [batch, height, width, channel];
 *   Conv2d filter HWIO [kH, kW, Cin/group, Cout]; DepthWiseConv2d filter [kH, kW, 1, Cin*mult];
 *   TransposeConv2d filter [kH, kW, Cin, Cout/group]; FullyConnected weight [out, in];
 *   pad_amount is a [2, 2] uint32 tensor [[top, bottom], [left, right]].
 *
 * Ownership and invariants:
 *   - One arena per graph owns every tensor, op, name and param; eg_htp_qnn_graph_destroy frees it
 *     in one go. STATIC bytes are either copied into the arena or referenced (the caller keeps
 *     them alive for the graph's life), as the tensor's description says.
 *   - Tensors are numbered densely from 0; ops refer to them by id. Names are unique per graph
 *     (tensors and ops separately), as QNN requires.
 *   - Each tensor may carry an int64 source key (>= 0; eg_htp_qnn_key packs (value id, output index)).
 *     A key names at most one tensor: asking for a known key again returns the SAME tensor (so a
 *     frozen weight shared by a forward Conv2d and a backward Transpose is stored once) and is an
 *     error if the description differs.
 *   - Ops are validated when added (eg_htp_qnn_graph_add_op): input count, dtypes, ranks, shapes,
 *     parameter names, kinds, shapes and values per QNN's rules, and the graph stays in
 *     topological order: every NATIVE / APP_READ input was produced by an earlier op, and each
 *     such tensor is produced exactly once. STATIC and APP_WRITE tensors are never outputs.
 *   - Failures return an eg_status and leave one line "<where>: <what> (<values>): <rule>"
 *     (eg_last_error); a failed add leaves the graph unchanged.
 *
 * Parsed attributes (stride, pads, axes, ...) are kept next to the QNN params on each op so the
 * executor never re-parses; the params stay the serializable truth. */
#ifndef EG_BACKENDS_HTP_QNN_GRAPH_H
#define EG_BACKENDS_HTP_QNN_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "edgegrad.h"

/* ---- ops (qnn_ops.def) ---- */
typedef enum eg_htp_qnn_op {
#define QNN_OP(id, name) EG_HTP_QNN_OP_##id,
#include "backends/htp/qnn_ops.def"
#undef QNN_OP
  EG_HTP_QNN_OP_COUNT
} eg_htp_qnn_op;

/* QNN's op type name ("Conv2d"); "?" when out of range. */
const char *eg_htp_qnn_op_name(eg_htp_qnn_op op);
/* The op whose QNN name is `name`; EG_HTP_QNN_OP_COUNT if none. */
eg_htp_qnn_op eg_htp_qnn_op_from_name(const char *name);
/* Whether op is a comparison (ElementWiseGreater, GreaterEqual, LessEqual: two float inputs;
 * ElementWiseEqual: two float or two INT_32 inputs): a BOOL_8 output. */
bool eg_htp_qnn_op_is_comparison(eg_htp_qnn_op op);

/* ElementWiseNeuron's `operation` param: QNN's numbering (QnnOpDef.h), of which edgegrad
 * models these two. */
typedef enum eg_htp_qnn_neuron_op {
  EG_HTP_QNN_NEURON_HARD_SIGMOID = 2, /* max(0, min(1, alpha * x + beta)) */
  EG_HTP_QNN_NEURON_HARD_SWISH = 3    /* x * max(0, min(6, x + 3)) / 6 */
} eg_htp_qnn_neuron_op;

/* ---- tensors ---- */
#define EG_HTP_QNN_MAX_RANK 8
#define EG_HTP_QNN_KEY_NONE ((int64_t)-1)

typedef enum eg_htp_qnn_tensor_type {
  EG_HTP_QNN_TENSOR_APP_WRITE, /* graph input, written by the application before each run */
  EG_HTP_QNN_TENSOR_APP_READ,  /* graph output, read by the application after each run */
  EG_HTP_QNN_TENSOR_NATIVE,    /* intermediate, owned by the executor */
  EG_HTP_QNN_TENSOR_STATIC     /* constant bytes baked into the graph (weights) */
} eg_htp_qnn_tensor_type;

/* QNN data types (Qnn_DataType_t). The executor runs FLOAT_32 (and BOOL_8 masks); the others
 * keep the door open for fp16 and quantized graphs. */
typedef enum eg_htp_qnn_dtype {
  EG_HTP_QNN_DTYPE_FLOAT_32,
  EG_HTP_QNN_DTYPE_FLOAT_16,
  EG_HTP_QNN_DTYPE_INT_32,
  EG_HTP_QNN_DTYPE_UINT_32,
  EG_HTP_QNN_DTYPE_INT_8,
  EG_HTP_QNN_DTYPE_UINT_8,
  EG_HTP_QNN_DTYPE_BOOL_8,
  EG_HTP_QNN_DTYPE_SFIXED_POINT_8,
  EG_HTP_QNN_DTYPE_UFIXED_POINT_8,
  EG_HTP_QNN_DTYPE_SFIXED_POINT_16,
  EG_HTP_QNN_DTYPE_UFIXED_POINT_16,
  EG_HTP_QNN_DTYPE_SFIXED_POINT_32,
  EG_HTP_QNN_DTYPE_COUNT
} eg_htp_qnn_dtype;

/* "float32", "ufixed_point_8", ...; "?" if out of range. */
const char *eg_htp_qnn_dtype_name(eg_htp_qnn_dtype dtype);
/* Bytes per element; 0 if out of range. */
size_t eg_htp_qnn_dtype_size(eg_htp_qnn_dtype dtype);
/* True for the fixed-point dtypes, which need a quantization encoding. */
bool eg_htp_qnn_dtype_is_fixed_point(eg_htp_qnn_dtype dtype);

/* Quantization (Qnn_QuantizeParams_t): real = scale * (q + offset). Per-axis encodings give one
 * scale/offset per index of dims[axis]. Unused (NONE) for float tensors. */
typedef enum eg_htp_qnn_quant_encoding {
  EG_HTP_QNN_QUANT_NONE,
  EG_HTP_QNN_QUANT_SCALE_OFFSET,
  EG_HTP_QNN_QUANT_AXIS_SCALE_OFFSET
} eg_htp_qnn_quant_encoding;

typedef struct eg_htp_qnn_quant {
  eg_htp_qnn_quant_encoding encoding;
  float scale;           /* SCALE_OFFSET */
  int32_t offset;        /* SCALE_OFFSET */
  int32_t axis;          /* AXIS_SCALE_OFFSET: the quantized dimension */
  int32_t n_axis;        /* AXIS_SCALE_OFFSET: dims[axis] entries in scales/offsets */
  const float *scales;   /* arena copies once in the graph */
  const int32_t *offsets;
} eg_htp_qnn_quant;

typedef struct eg_htp_qnn_tensor {
  int32_t id;
  const char *name;
  eg_htp_qnn_tensor_type type;
  eg_htp_qnn_dtype dtype;
  eg_htp_qnn_quant quant;
  int32_t rank;                  /* 0..EG_HTP_QNN_MAX_RANK */
  uint32_t dims[EG_HTP_QNN_MAX_RANK];
  const void *data;              /* STATIC only: nbytes of C-ordered elements, 64-byte aligned
                                    when copied */
  size_t nbytes;                 /* product(dims) * dtype size */
  int64_t key;                   /* source key, or EG_HTP_QNN_KEY_NONE */
  int32_t producer;              /* index of the op that writes it; -1 for none (yet) */
} eg_htp_qnn_tensor;

/* What eg_htp_qnn_graph_add_tensor needs. `data` is for STATIC tensors only (NULL otherwise):
 * `copy_data` copies it into the graph's arena, otherwise the graph keeps the pointer. */
typedef struct eg_htp_qnn_tensor_desc {
  const char *name;
  eg_htp_qnn_tensor_type type;
  eg_htp_qnn_dtype dtype;
  eg_htp_qnn_quant quant;            /* zero-initialised = NONE */
  int32_t rank;
  const uint32_t *dims;          /* rank entries, each >= 1 */
  const void *data;
  size_t nbytes;
  bool copy_data;
  int64_t key;                   /* EG_HTP_QNN_KEY_NONE (-1) or >= 0 */
} eg_htp_qnn_tensor_desc;

/* Packs (value id, output index) into a source key (>= 0). */
static inline int64_t eg_htp_qnn_key(int32_t value_id, int32_t index) {
  return ((int64_t)(uint32_t)value_id << 16) | (int64_t)(uint16_t)index;
}

/* ---- params (Qnn_Param_t) ---- */
#define EG_HTP_QNN_PARAM_MAX_RANK 2
#define EG_HTP_QNN_PARAM_MAX_VALUES 16

typedef enum eg_htp_qnn_param_kind { EG_HTP_QNN_PARAM_SCALAR, EG_HTP_QNN_PARAM_TENSOR } eg_htp_qnn_param_kind;

/* A named value: a scalar (UINT_32, INT_32, FLOAT_32 or BOOL_8) or a small UINT_32 / INT_32
 * tensor (rank 1 or 2, at most EG_HTP_QNN_PARAM_MAX_VALUES values), stored by value. */
typedef struct eg_htp_qnn_param {
  const char *name;
  eg_htp_qnn_param_kind kind;
  eg_htp_qnn_dtype dtype;
  union {
    uint32_t u32;
    int32_t i32;
    float f32;
    bool b;
  } scalar;
  int32_t rank;                  /* tensor params */
  uint32_t dims[EG_HTP_QNN_PARAM_MAX_RANK];
  int32_t n_values;
  union {
    uint32_t u32[EG_HTP_QNN_PARAM_MAX_VALUES];
    int32_t i32[EG_HTP_QNN_PARAM_MAX_VALUES];
  } values;
} eg_htp_qnn_param;

eg_htp_qnn_param eg_htp_qnn_param_u32(const char *name, uint32_t v);
eg_htp_qnn_param eg_htp_qnn_param_i32(const char *name, int32_t v);
eg_htp_qnn_param eg_htp_qnn_param_f32(const char *name, float v);
eg_htp_qnn_param eg_htp_qnn_param_bool(const char *name, bool v);
/* A UINT_32 tensor param of shape dims[0..rank); values in C order. A request that does not fit
 * (rank > 2, too many values) yields a param that add_op rejects with a message. */
eg_htp_qnn_param eg_htp_qnn_param_u32_tensor(const char *name, int32_t rank, const uint32_t *dims,
                                     const uint32_t *values);
/* The same for an INT_32 tensor param (StridedSlice's ranges). */
eg_htp_qnn_param eg_htp_qnn_param_i32_tensor(const char *name, int32_t rank, const uint32_t *dims,
                                     const int32_t *values);

/* ---- parsed attributes (filled by validation; the executor reads these) ---- */
typedef struct eg_htp_qnn_conv_attrs {
  uint32_t stride[2], dilation[2], output_padding[2];
  uint32_t pad[2][2];            /* [[top, bottom], [left, right]] */
  uint32_t group;
} eg_htp_qnn_conv_attrs;

typedef struct eg_htp_qnn_pool_attrs {
  uint32_t filter[2], stride[2];
  uint32_t pad[2][2];
  uint32_t rounding_mode;        /* 0 floor, 1 ceil */
  bool count_pad_for_edges;      /* PoolAvg2d */
} eg_htp_qnn_pool_attrs;

typedef struct eg_htp_qnn_norm_attrs {
  float epsilon;
  uint32_t group;                /* GroupNorm */
  uint32_t mode;                 /* InstanceNorm: 0 MU_SIGMA, 1 RMS */
  uint32_t region;               /* InstanceNorm: 0 ACROSS_SPATIAL, 1 ACROSS_CHANNEL, 2 ACROSS_ALL */
  bool normalize_variance;       /* InstanceNorm */
} eg_htp_qnn_norm_attrs;

typedef union eg_htp_qnn_attrs {
  eg_htp_qnn_conv_attrs conv;
  eg_htp_qnn_pool_attrs pool;
  eg_htp_qnn_norm_attrs norm;
  struct { uint32_t perm[EG_HTP_QNN_MAX_RANK]; } transpose;
  struct { uint32_t multiples[EG_HTP_QNN_MAX_RANK]; } tile;
  struct { uint32_t begin[EG_HTP_QNN_MAX_RANK], step[EG_HTP_QNN_MAX_RANK]; } slice;
  struct { uint32_t before[EG_HTP_QNN_MAX_RANK]; float value; } pad; /* Pad: leading pads, fill */
  struct { uint32_t mask; bool keep_dims; } reduce; /* bit d set: dim d is reduced */
  struct { float min_value, max_value; } relu_min_max;
  struct { uint32_t operation; float alpha, beta; } neuron; /* ElementWiseNeuron */
  struct { uint32_t axis; float beta; } softmax;
  struct { uint32_t axis; } concat;
  struct { bool transpose_in0, transpose_in1; } matmul;
  struct { bool keep_dims; } fully_connected;
} eg_htp_qnn_attrs;

/* ---- ops (Qnn_OpConfig_t) ---- */
typedef struct eg_htp_qnn_op_node {
  const char *name;
  eg_htp_qnn_op type;
  int32_t n_inputs;
  int32_t *inputs;               /* tensor ids; -1 for an omitted optional input (QNN's NULL) */
  int32_t n_outputs;
  int32_t *outputs;
  int32_t n_params;
  eg_htp_qnn_param *params;
  eg_htp_qnn_attrs attrs;
} eg_htp_qnn_op_node;

/* What eg_htp_qnn_graph_add_op needs; arrays are copied. */
typedef struct eg_htp_qnn_op_desc {
  const char *name;
  eg_htp_qnn_op type;
  int32_t n_inputs;
  const int32_t *inputs;
  int32_t n_outputs;
  const int32_t *outputs;
  int32_t n_params;
  const eg_htp_qnn_param *params;
} eg_htp_qnn_op_desc;

/* ---- the graph ---- */
typedef struct eg_htp_qnn_graph eg_htp_qnn_graph;

eg_status eg_htp_qnn_graph_create(const char *name, eg_htp_qnn_graph **out);
void eg_htp_qnn_graph_destroy(eg_htp_qnn_graph *g);

/* The executor plan the graph carries (exec_plan.h: how the htp executor runs its ops, the
 * layout pass's, set by the lowering or the .egp reader; n_ops 0 when none): the graph owns
 * it and frees it with itself, so whatever holds the graph holds its plan (the executor's
 * create finds it here). The graph itself is what QNN would run; the plan is not part of it. */
struct eg_htp_exec_plan;
const struct eg_htp_exec_plan *eg_htp_qnn_graph_plan(const eg_htp_qnn_graph *g);
struct eg_htp_exec_plan *eg_htp_qnn_graph_plan_mut(eg_htp_qnn_graph *g);

const char *eg_htp_qnn_graph_name(const eg_htp_qnn_graph *g);
int32_t eg_htp_qnn_graph_num_tensors(const eg_htp_qnn_graph *g);
int32_t eg_htp_qnn_graph_num_ops(const eg_htp_qnn_graph *g);
/* NULL when out of range. Pointers stay valid until the next add on the graph. */
const eg_htp_qnn_tensor *eg_htp_qnn_graph_tensor(const eg_htp_qnn_graph *g, int32_t id);
const eg_htp_qnn_op_node *eg_htp_qnn_graph_op(const eg_htp_qnn_graph *g, int32_t index);

/* Adds a tensor, or — when d->key names an existing tensor — checks that the description
 * matches it (type, dtype, dims; STATIC bytes are not compared) and returns its id. */
eg_status eg_htp_qnn_graph_add_tensor(eg_htp_qnn_graph *g, const eg_htp_qnn_tensor_desc *d, int32_t *id);
/* The tensor with this source key, or -1. */
int32_t eg_htp_qnn_graph_find_key(const eg_htp_qnn_graph *g, int64_t key);
/* The tensor with this name, or -1. */
int32_t eg_htp_qnn_graph_find_tensor(const eg_htp_qnn_graph *g, const char *name);

/* Validates the op against QNN's rules for its type and appends it (index in *index, may be
 * NULL). */
eg_status eg_htp_qnn_graph_add_op(eg_htp_qnn_graph *g, const eg_htp_qnn_op_desc *d, int32_t *index);

/* The op's param called `name`, or NULL. */
const eg_htp_qnn_param *eg_htp_qnn_op_param(const eg_htp_qnn_op_node *op, const char *name);

/* Elements of a tensor (1 for rank 0). */
int64_t eg_htp_qnn_tensor_numel(const eg_htp_qnn_tensor *t);

/* Human-readable dump, one line per tensor and per op (for `inspect`). */
void eg_htp_qnn_graph_dump(const eg_htp_qnn_graph *g, FILE *out);

#endif
