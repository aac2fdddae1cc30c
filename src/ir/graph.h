/* graph.h — edgegrad's graph IR.
 *
 * A graph is plain data owned by one arena. Values (tensors and tuples) are numbered densely
 * from 0 and everything refers to them by id: node arguments, tuple elements, graph inputs,
 * statics and outputs. Each value is defined exactly once — as a graph input, as a static
 * (frozen weight or traced constant, bytes in `static_data`), or by one node. Nodes are stored
 * in a topological order; each carries its arguments exactly as traced (`args`, `kwargs`) and
 * the attributes its op's check parsed from them (`attrs`, a per-op struct).
 *
 * Invariants after eg_graph_verify(): every id is in range; every argument is defined before its
 * use; tuples appear only as getitem arguments; each node's outputs have the dtype and shape the
 * op's rules give for its arguments. */
#ifndef EG_IR_GRAPH_H
#define EG_IR_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edgegrad.h"
#include "util/arena.h"

/* ---- ops (ops.def) ---- */
typedef enum eg_op {
#define EG_OP(id, target) EG_OP_##id,
#include "ir/ops.def"
#undef EG_OP
  EG_OP_COUNT
} eg_op;

const char *eg_op_target(eg_op op);
/* The op's user-facing name: its traced target without a ".default" overload
 * ("aten.convolution_backward", "aten.add.Tensor", "getitem"), written into buf. */
const char *eg_op_display_name(eg_op op, char *buf, size_t size);
/* The op whose traced target is `target`; EG_OP_COUNT if none. */
eg_op eg_op_from_target(const char *target);

/* ---- arguments ---- */
typedef enum eg_arg_kind {
  EG_ARG_NONE,
  EG_ARG_INT,
  EG_ARG_FLOAT,
  EG_ARG_BOOL,
  EG_ARG_VALUE,  /* a tensor or tuple value id */
  EG_ARG_LIST,
  EG_ARG_DTYPE,
  EG_ARG_LAYOUT, /* str: "strided", ... */
  EG_ARG_DEVICE, /* str: "cpu", ... */
  EG_ARG_MEMORY_FORMAT, /* str: "preserve_format", "contiguous_format", ... */
  EG_ARG_STR            /* str: a Python str argument ("trunc", "tanh", ...); each op checks
                         * its own values */
} eg_arg_kind;

typedef struct eg_arg eg_arg;
struct eg_arg {
  eg_arg_kind kind;
  union {
    int64_t i;
    double f;
    bool b;
    int32_t value;
    eg_dtype dtype;
    const char *str;
    struct {
      int32_t n;
      eg_arg *items;
    } list;
  };
};

/* ---- values ---- */
typedef enum eg_value_kind { EG_VALUE_TENSOR, EG_VALUE_TUPLE } eg_value_kind;
typedef enum eg_value_role {
  EG_ROLE_UNDEFINED,
  EG_ROLE_INPUT,
  EG_ROLE_STATIC,
  EG_ROLE_NODE
} eg_value_role;

/* Axis order a tensor is held in inside NPU graphs. CPU kernels always see the traced order
 * (NCHW for rank 4); pass layout_nhwc sets NHWC on the values NPU nodes hold channels-last, and
 * partition boundaries convert (runtime/npu_step.h). */
typedef enum eg_axis_order { EG_AXES_TRACED = 0, EG_AXES_NHWC } eg_axis_order;

/* Quantization attributes of a value (pass annotate_quant): the value is (or, inside an NPU
 * partition after fold_qdq, is stored as) integers q with real value (q - zero_point) * scale,
 * q in [qmin, qmax]. Per tensor (axis -1, n 1) or per channel along `axis` (n = shape[axis]).
 * Owned by the graph's arena. */
typedef struct eg_quant {
  eg_dtype dtype;            /* storage: EG_DTYPE_INT8, EG_DTYPE_UINT8 or EG_DTYPE_INT32 */
  int32_t axis;              /* -1: per tensor */
  int32_t n;                 /* number of scales and zero points */
  const double *scale;       /* n, each > 0 */
  const int64_t *zero_point; /* n, each in [qmin, qmax] */
  int64_t qmin, qmax;
} eg_quant;

typedef struct eg_value {
  eg_value_kind kind;
  eg_dtype dtype;          /* tensors */
  int32_t rank;            /* tensors */
  int64_t shape[EG_MAX_RANK];
  int32_t n_elems;         /* tuples: element ids, -1 for None */
  int32_t *elems;
  eg_value_role role;
  int32_t def;             /* defining node / input index / static index, by role */
  /* Compiler annotations (tensors; zero = none), set by passes (src/compiler/passes), read by the
   * partitioner, the NPU lowering and the .egp writer: */
  eg_axis_order axes;      /* layout_nhwc */
  bool npu_int32;          /* i64_to_i32: an int64 value held as int32 inside NPU graphs */
  const eg_quant *quant;   /* annotate_quant; NULL: not quantized */
} eg_value;

/* ---- nodes ---- */
#define EG_ATTRS_SIZE 256

/* A node's placement in a compile (compiler/partition/partition.h). */
typedef enum eg_node_place {
  EG_PLACE_UNDECIDED = 0, /* not placed yet (a graph as loaded, or before pass `place`) */
  EG_PLACE_CPU,
  EG_PLACE_NPU
} eg_node_place;

typedef struct eg_node {
  const char *name;
  eg_op op;
  int32_t n_args;
  eg_arg *args;
  int32_t n_kwargs;
  const char **kwarg_names;
  eg_arg *kwargs;
  int32_t output;          /* value id, or -1 (a getitem of a None element) */
  const char *source;      /* a node a pass made: the traced node it replaces (NULL: as traced) */
  eg_node_place place;     /* where it runs: set once per compile by pass `place` (partition.h,
                              eg_place_graph) and kept up to date by the passes after it */
  const char *place_reason; /* EG_PLACE_CPU: why, one sentence (graph arena or static) */
  size_t scratch_bytes;    /* CPU kernel scratch, set by the op's check */
  _Alignas(16) unsigned char attrs[EG_ATTRS_SIZE]; /* per-op struct, see EG_ATTRS */
} eg_node;

/* The node's attributes as the op's own struct type. */
#define EG_ATTRS(node, type) ((type *)(void *)(node)->attrs)
#define EG_ATTRS_FIT(type) _Static_assert(sizeof(type) <= EG_ATTRS_SIZE, #type " too large")

typedef struct eg_named {
  const char *name;
  int32_t value;
  const char *state_dict; /* inputs: the PyTorch state_dict name of a trainable parameter or
                             state buffer ("layer1.0.conv1.weight"); NULL when none */
  eg_random_kind random;  /* inputs: EG_RANDOM_BERNOULLI for a random draw of the traced step
                             (a Dropout mask) that a training loop draws afresh per step */
  double random_p;        /* EG_RANDOM_BERNOULLI: the probability of a one, in [0, 1]; NAN
                             where the step took it from a tensor */
  eg_io_role role;        /* inputs and outputs: the role in a training step, as recorded by
                             the exporter (ir/io_role.h has the rules the readers check) */
  int32_t pair;           /* a gradient's parameter input, a buffer_update's buffer input (an
                             input index); a parameter's gradient, a buffer's update (an output
                             index); -1 for none */
} eg_named;

typedef struct eg_static {
  const char *name;
  int32_t value;
  const void *data;        /* aligned to 64, owned by the graph */
  size_t nbytes;
} eg_static;

typedef struct eg_graph {
  eg_arena *arena;
  int32_t n_values;
  eg_value *values;
  int32_t n_nodes;
  eg_node *nodes;
  int32_t n_inputs;
  eg_named *inputs;
  int32_t n_statics;
  eg_static *statics;
  int32_t n_outputs;
  eg_named *outputs;
} eg_graph;

eg_graph *eg_graph_create(void);
void eg_graph_destroy(eg_graph *g);

int64_t eg_value_numel(const eg_value *v);
size_t eg_value_nbytes(const eg_value *v);
/* A copy of `q` (with its scale and zero-point arrays) in arena `a`; NULL when out of memory. */
eg_quant *eg_quant_copy(eg_arena *a, const eg_quant *q);
/* Same dtype, axis, range, scales and zero points (two NULLs are equal). */
bool eg_quant_equal(const eg_quant *a, const eg_quant *b);
/* A short name for a value in messages: the node that defines it, the input or static name. */
const char *eg_value_label(const eg_graph *g, int32_t id);

/* eg_graph_verify (ops/verify.h) checks these invariants; it needs the op rules (src/ops). */

/* ---- argument access for op checks ----
 * Each looks up argument `pos` (positional) or, if absent, keyword `kw`; `kw` may be NULL.
 * Failures name the node, the argument and what was expected. */
const eg_arg *eg_node_arg(const eg_node *n, int pos, const char *kw);
eg_status eg_arg_tensor(const eg_graph *g, const eg_node *n, int pos, const char *kw,
                        const eg_value **out);
/* Like eg_arg_tensor but a missing or None argument gives *out = NULL. */
eg_status eg_arg_opt_tensor(const eg_graph *g, const eg_node *n, int pos, const char *kw,
                            const eg_value **out);
eg_status eg_arg_int(const eg_node *n, int pos, const char *kw, int64_t *out);
/* A missing or None argument leaves *out unchanged (the default). */
eg_status eg_arg_opt_int(const eg_node *n, int pos, const char *kw, int64_t *out);
eg_status eg_arg_bool(const eg_node *n, int pos, const char *kw, bool *out);
eg_status eg_arg_opt_bool(const eg_node *n, int pos, const char *kw, bool *out);
/* A Python number (int, float or bool) as double. */
eg_status eg_arg_scalar(const eg_node *n, int pos, const char *kw, double *out);
eg_status eg_arg_opt_scalar(const eg_node *n, int pos, const char *kw, double *out);
/* An int list of length in [min_n, max_n]; a single int is accepted when min_n <= 1 (ATen's
 * int[1] broadcasting is done by the caller). *n_out gets the length. */
eg_status eg_arg_int_list(const eg_node *n, int pos, const char *kw, int64_t *out, int min_n,
                          int max_n, int *n_out);
/* Missing or None gives *n_out = -1. */
eg_status eg_arg_opt_int_list(const eg_node *n, int pos, const char *kw, int64_t *out,
                              int min_n, int max_n, int *n_out);
eg_status eg_arg_bool_list(const eg_node *n, int pos, const char *kw, bool *out, int count);
/* Optional dtype: missing or None leaves *out unchanged. */
eg_status eg_arg_opt_dtype(const eg_node *n, int pos, const char *kw, eg_dtype *out);
/* A str argument that must be one of `choices` (NULL-terminated): *out gets its index. Missing
 * (or None, when none_ok) leaves *out unchanged (the default); another kind or another string
 * is EG_ERR_INVALID, e.g. "rounding_mode 'ceil' not in {trunc, floor}". */
eg_status eg_arg_choice(const eg_node *n, int pos, const char *kw, const char *const *choices,
                        bool none_ok, int *out);
/* Rejects positional arguments past `max_pos` and keywords not in `known` (NULL-terminated). */
eg_status eg_node_check_arity(const eg_node *n, int min_pos, int max_pos, const char *const *known);

/* ---- output checks for op checks ----
 * Compare what the op's rules give with what the file recorded for the node's output. */
eg_status eg_out_tensor(const eg_graph *g, const eg_node *n, eg_dtype dtype, int rank,
                        const int64_t *shape);
/* The node must define a tuple of `count` elements. */
eg_status eg_out_tuple(const eg_graph *g, const eg_node *n, int count);
/* Element `i` of the node's tuple: present (a tensor of this type) or None. */
eg_status eg_out_elem(const eg_graph *g, const eg_node *n, int i, bool present, eg_dtype dtype,
                      int rank, const int64_t *shape);

/* Message helper: "node <name>: " prefix is added by these; ops use it for their own rules. */
eg_status eg_node_error(const eg_node *n, eg_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Normalises a possibly negative dim against `rank` (ATen's wrap rule); -1 if out of range. */
int eg_wrap_dim(int64_t dim, int rank);
/* Broadcasts two shapes (NumPy rules). Returns false if incompatible. */
bool eg_broadcast_shapes(const int64_t *a, int ra, const int64_t *b, int rb, int64_t *out,
                         int *rout);

#endif
