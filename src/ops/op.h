/* op.h — what each op provides: its argument/shape rules (check) and its CPU execution (run).
 *
 * For every EG_OP(id, target) in ops.def, a family file in src/ops/ defines
 *   eg_status eg_check_<id>(eg_graph *g, eg_node *n);
 *     Validates the arguments (kinds, dtypes, ranks, ranges), parses them into the node's attrs
 *     (EG_ATTRS), sets n->scratch_bytes for the CPU kernel, and checks the recorded output
 *     value(s) with eg_out_tensor / eg_out_tuple + eg_out_elem. Never trusts the file: anything
 *     wrong returns a status with a message naming the node and argument.
 *   eg_status eg_run_<id>(const eg_exec *ex, const eg_node *n);
 *     Executes the node on the CPU: reads argument tensors from ex->data, writes the output(s).
 *     Only called on verified graphs; returns EG_ERR_RUNTIME for data-dependent failures (e.g. a
 *     class index out of range) with a message.
 * A missing definition is a link error, so no op can be half-added. */
#ifndef EG_OPS_OP_H
#define EG_OPS_OP_H

#include "ir/graph.h"
#include "util/error.h"

/* Execution context handed to run functions. data[id] points at value id's dense C-ordered
 * buffer (NULL for tuples and for values not live now); scratch has at least the node's
 * scratch_bytes, 64-byte aligned; prepared: what eg_op_prepare derived for the node being run
 * from the bytes its argument holds now, or NULL (the run derives it itself). */
typedef struct eg_exec {
  const eg_graph *g;
  void *const *data;
  void *scratch;
  const void *prepared;
} eg_exec;

typedef eg_status (*eg_check_fn)(eg_graph *g, eg_node *n);
typedef eg_status (*eg_run_fn)(const eg_exec *ex, const eg_node *n);

#define EG_OP(id, target)                                   \
  eg_status eg_check_##id(eg_graph *g, eg_node *n);         \
  eg_status eg_run_##id(const eg_exec *ex, const eg_node *n);
#include "ir/ops.def"
#undef EG_OP

/* A checked getitem node's tuple element: its value id, or -1 for a None element. */
int32_t eg_getitem_element(const eg_graph *g, const eg_node *n);
/* The value whose bytes a checked node's result repeats exactly (a getitem's element; the self
 * of view, _unsafe_view, reshape, _reshape_alias, detach, alias, clone), or -1. The runtime
 * may plan the result onto that value (an alias); the run functions then copy nothing. */
int32_t eg_copy_source(const eg_graph *g, const eg_node *n);

/* Data a checked node derives on every run from one argument's bytes alone (a convolution's
 * flipped weights and Winograd filter transform), which a runtime derives once where those
 * bytes cannot change between runs (a static of the graph): eg_op_prepared_bytes gives its
 * size (0: the node derives nothing) and, in *from, that argument's value id; eg_op_prepare
 * fills `out` (that many bytes, 64-byte aligned) from the argument's data. A run handed it
 * (eg_exec.prepared) gives the same result bit for bit. */
size_t eg_op_prepared_bytes(const eg_node *n, int32_t *from);
void eg_op_prepare(const eg_node *n, const void *from_data, void *out);

/* ---- fused chains of CPU nodes (the runtime decides them: runtime/fuse.h) ----
 *
 * A batch-norm forward whose output only a clamping activation reads (or only an add of
 * another tensor that only such an activation reads: a residual connection) runs as one pass
 * that writes the activation's values (into the batch norm's output buffer, which the activation's
 * result then shares); a batch-norm backward whose grad_out only a masking activation backward
 * produced reads that backward's operands and masks them in its own passes; a sum over
 * {0, 2, 3} of mul(d, d), d = sub(x, per-channel mean) (a batch norm's variance statistic),
 * reads x and the mean and sums the squares without storing d or d * d. Each gives bit for
 * bit what its nodes give. */

/* A clamp y = min(max(x, lo), hi) in hardtanh's order (kernels/activation_f32.h). */
typedef struct eg_clamp {
  float lo, hi;
} eg_clamp;

/* A gradient mask: gx = (x <= lo || x >= hi) ? 0 : gy, where gy and x are value ids of float32
 * tensors of the result's shape (hi NaN: no upper bound). */
typedef struct eg_grad_mask {
  int32_t gy, x;
  float lo, hi;
} eg_grad_mask;

/* Whether op is a batch-norm forward (native_batch_norm, _native_batch_norm_legit*). */
bool eg_op_is_batch_norm(eg_op op);
/* Whether checked node n is a float32 activation that is a clamp of its one tensor argument
 * (relu: [0, +inf]; hardtanh; clamp, clamp_min, clamp_max), with *c its bounds. */
bool eg_op_clamp_of(const eg_graph *g, const eg_node *n, eg_clamp *c);
/* Whether checked node n is a gradient mask (threshold_backward, hardtanh_backward) of float32
 * operands of the result's shape (no broadcast, no conversion), with *m its operands and
 * bounds. */
bool eg_op_grad_mask_of(const eg_graph *g, const eg_node *n, eg_grad_mask *m);
/* Whether checked node n is add.Tensor of two float32 tensors as large as its result (no
 * broadcast, no conversion) with alpha 1, with *operand their value ids. */
bool eg_op_add_f32(const eg_graph *g, const eg_node *n, int32_t operand[2]);
/* Whether checked node n is sub.Tensor of two float32 tensors in float32, the first as large
 * as its result, the second any shape that broadcasts (no conversion), with *operand their
 * value ids and *alpha the kernel's factor of the second (-alpha: the result is
 * operand[0] + *alpha * operand[1]). */
bool eg_op_sub_f32(const eg_graph *g, const eg_node *n, int32_t operand[2], float *alpha);
/* Whether checked node n is mul.Tensor(x, x) of a float32 tensor x in float32, with *x. */
bool eg_op_square_f32(const eg_graph *g, const eg_node *n, int32_t *x);
/* Whether checked node n is sum.dim_IntList of a float32 [N, C, H, W] tensor over {0, 2, 3}
 * (keepdim either way) into float32, with H * W > 1. */
bool eg_op_sum_channels_f32(const eg_graph *g, const eg_node *n);
/* Whether checked threshold_backward node n computes in float32 on float32 tensors, with
 * *threshold its threshold. */
bool eg_threshold_backward_f32(const eg_node *n, float *threshold);
/* Batch-norm forward n, its output (element 0) written plus value `add` (-1: none), in float,
 * then clamped by c. */
eg_status eg_run_batch_norm_clamped(const eg_exec *ex, const eg_node *n, int32_t add,
                                    eg_clamp c);
/* native_batch_norm_backward n with grad_out read as the mask m gives it (n's own grad_out
 * argument is not read). */
eg_status eg_run_batch_norm_backward_masked(const eg_exec *ex, const eg_node *n,
                                            eg_grad_mask m);
/* Sum node n (eg_op_sum_channels_f32) run on the squared deviations (x + alpha * m)^2 of
 * float32 values x (n's shape) and m (one per channel, or one), which n's own input holds
 * when a sub and a mul compute it; bit for bit what the three nodes give. */
eg_status eg_run_sum_sq_dev(const eg_exec *ex, const eg_node *n, int32_t x, int32_t m,
                            float alpha);

extern const eg_check_fn eg_op_check[EG_OP_COUNT];
extern const eg_run_fn eg_op_run[EG_OP_COUNT];

/* Run-time argument access (arguments were validated by the check). */
/* Value id of tensor argument pos/kw, or -1 when missing or None. */
int32_t eg_exec_arg_id(const eg_node *n, int pos, const char *kw);
/* Data and value of a tensor argument; NULL when missing or None. */
void *eg_exec_arg(const eg_exec *ex, const eg_node *n, int pos, const char *kw);
const eg_value *eg_exec_argv(const eg_exec *ex, const eg_node *n, int pos, const char *kw);
/* The node's tensor output buffer and value. */
void *eg_exec_out(const eg_exec *ex, const eg_node *n);
const eg_value *eg_exec_outv(const eg_exec *ex, const eg_node *n);
/* Tuple element i's buffer, NULL for a None element. */
void *eg_exec_elem(const eg_exec *ex, const eg_node *n, int i);

#endif
