/* exec_plan.h — how the htp executor runs each op of a lowered partition's QNN graph: the
 * executor plan, decided once at compile time by the layout pass (layout_pass.h), recorded beside
 * the graph in the lowered partition (values.h) and in the .egp (program/egp_format.h), and
 * followed by the executor (executor.h), which decides nothing of it at create. The graph itself
 * stays what QNN would run (edgegrad export-onnx writes it as it is): the plan only says which
 * of its ops this executor computes differently.
 *
 * Per op (eg_htp_exec_op):
 *   how RUN   run by every execute (every op of a graph without a plan);
 *   how FOLD  a Transpose of a constant (a FLOAT_32 STATIC tensor or a folded op's output) into
 *             a NATIVE FLOAT_32 tensor: run once at create, its output held for the executor's
 *             life outside the NATIVE arena (as QNN's graph finalize folds constants);
 *   how SKIP  a Transpose never run, whose output gets no bytes of its own, because either
 *             (i) every reader of its output reads it as input 1 of a Conv2d or TransposeConv2d
 *             that reads the Transpose's input instead (filter_src, filter_read below), or
 *             (ii) it is perm [3,0,1,2] and the only reader of a NATIVE Conv2d output, and that
 *             Conv2d writes the Transpose's output itself (y_dst);
 *   how ALIAS a Reshape never run (eg_htp_reshape_aliases): its NATIVE output gets no bytes of
 *             its own and is its input's bytes (every tensor is dense, so a Reshape moves
 *             none), the input's lifetime stretched to the output's last reader (a graph
 *             input's bound buffer: the caller's, told by the executor how long it is read);
 *   how FUSED an elementwise op (eg_htp_chain_op) computed by the one op reading its output,
 *             inside that op's kernel (kernels/elementwise_nhwc_f32.h eg_ew_chain_nhwc_f32):
 *             its NATIVE output, read by that one op alone and over the same elements (the
 *             same dims), gets no bytes; the reader is FUSED too or the chain's tail, a RUN
 *             chain op with a float output, which computes its group (itself and the FUSED
 *             ops feeding it, through chains) element by element with each op's own
 *             arithmetic, so its results are bit for bit those of the ops run one by one.
 *             Every operand of the group that is not a FUSED op's output (a leaf) is read at
 *             the tail, its life stretched to it: of the op's dtype (BOOL_8 Select's condition,
 *             FLOAT_32 else) and dense over the output's elements, one per channel (the last
 *             dim, others 1) or one element (a mask: not per channel); a group has at most
 *             EG_EW_CHAIN_MAX_STEPS ops and EG_EW_CHAIN_MAX_LEAVES leaf operands. The tail
 *             may also be a ReduceSum or ReduceMean over every dim but the last of a FUSED
 *             op's float output (eg_htp_reduces_rows; .egp 13): it sums the group's values
 *             row by row as it would sum that output (eg_ew_chain_reduce_nhwc_f32), bit for
 *             bit, and the output gets no bytes;
 *   filter_src, filter_read (Conv2d, TransposeConv2d; -1 and AS_IS otherwise): input 1 is the
 *             output of a SKIP Transpose of tensor filter_src, read as
 *             OI   TransposeConv2d, perm [0,1,3,2] of a FLOAT_32 STATIC tensor: the forward
 *                  conv's HWIO weight, [kh, kw, c_out, c_in] to the TransposeConv2d (kernel
 *                  filter_oi): a frozen weight is held once, by the forward and its gradient;
 *             OIHW perm [2,3,1,0] (Conv2d) or [2,3,0,1] (TransposeConv2d) of a FLOAT_32
 *                  APP_WRITE tensor: a trainable weight as PyTorch holds it (kernel
 *                  filter_oihw);
 *   y_dst     (Conv2d; -1 otherwise) the output of the SKIP Transpose (ii) reading its output:
 *             it writes that tensor, its own output transposed (kernel y_cnhw), and its own
 *             output gets no bytes.
 * eg_htp_exec_plan_check holds every such rule; which ops the pass plans so, and why, is in
 * layout_pass.h. */
#ifndef EG_BACKENDS_HTP_EXEC_PLAN_H
#define EG_BACKENDS_HTP_EXEC_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/htp/qnn_graph.h"
#include "kernels/conv2d_nhwc_f32.h"
#include "kernels/elementwise_nhwc_f32.h"
#include "kernels/transpose_conv2d_nhwc_f32.h"

typedef enum eg_htp_exec_how {
  EG_HTP_EXEC_RUN,
  EG_HTP_EXEC_FOLD,
  EG_HTP_EXEC_SKIP,
  EG_HTP_EXEC_ALIAS,
  EG_HTP_EXEC_FUSED,
  EG_HTP_EXEC_HOW_COUNT
} eg_htp_exec_how;

typedef enum eg_htp_filter_read {
  EG_HTP_FILTER_READ_AS_IS,
  EG_HTP_FILTER_READ_OI,
  EG_HTP_FILTER_READ_OIHW,
  EG_HTP_FILTER_READ_COUNT
} eg_htp_filter_read;

typedef struct eg_htp_exec_op {
  uint8_t how;         /* eg_htp_exec_how */
  uint8_t filter_read; /* eg_htp_filter_read */
  int32_t filter_src;  /* tensor id, or -1 */
  int32_t y_dst;       /* tensor id, or -1 */
} eg_htp_exec_op;

/* n_ops 0 (ops NULL): no plan, every op runs as it is; else one entry per op of the graph. */
typedef struct eg_htp_exec_plan {
  int32_t n_ops;
  eg_htp_exec_op *ops;
} eg_htp_exec_plan;

/* A plan of n_ops entries, each RUN with no filter_src or y_dst. */
eg_status eg_htp_exec_plan_init(eg_htp_exec_plan *p, int32_t n_ops);
void eg_htp_exec_plan_free(eg_htp_exec_plan *p);
/* Per tensor of g: how many op inputs read it (readers) and the last op reading it
 * (reader_of, -1: none); each array holds the graph's tensors. */
void eg_htp_count_readers(const eg_htp_qnn_graph *g, int32_t *readers, int32_t *reader_of);
/* Whether entry `op` differs from plain RUN (the .egp stores those only). */
bool eg_htp_exec_op_planned(const eg_htp_exec_op *op);
/* Whether Reshape op `op` of g may be ALIAS: its output NATIVE (not a graph output), input and
 * output of one dtype, FLOAT_32 or INT_32 (not fixed point, whose integers and float views the
 * executor keeps apart), the input NATIVE, STATIC or APP_WRITE: a graph input's bound buffer
 * is then read until the alias's last reader (eg_htp_qnn_executor_input_last_op, which the
 * runtime plans the buffer's life by), not only until the Reshape. */
bool eg_htp_reshape_aliases(const eg_htp_qnn_graph *g, const eg_htp_qnn_op_node *op);

/* Elementwise fusion (how FUSED). The chain op of op `op` (its own kernel's arithmetic) into
 * *out: false for an op no chain runs. */
bool eg_htp_chain_op(const eg_htp_qnn_op_node *op, eg_ew_chain_op *out);
/* How a chain over y's elements reads operand x (eg_ew_leaf_form), or -1 when it cannot. */
int eg_htp_leaf_form(const eg_htp_qnn_tensor *x, const eg_htp_qnn_tensor *y);
/* Whether op r is a ReduceSum or ReduceMean of x (its one input) over every dim but the last
 * (rank 2 or more, elements, FLOAT_32): the reduction a group may end in
 * (eg_ew_chain_reduce_nhwc_f32; batch norm's statistics, per channel of NHWC). */
bool eg_htp_reduces_rows(const eg_htp_qnn_op_node *r, const eg_htp_qnn_tensor *x);
/* Whether op k of g may be FUSED into its reader: a chain op, its output NATIVE, of the
 * op's dtype (BOOL_8 for a comparison, else FLOAT_32) and read once (readers: per tensor, how
 * many op inputs read it), by a later chain op (*reader) whose output has its dims and which
 * reads it as an operand of that dtype, or by a reduction eg_htp_reduces_rows allows. Its
 * other operands are the group's rules. */
bool eg_htp_fuse_candidate(const eg_htp_qnn_graph *g, int32_t k, const int32_t *readers,
                           const int32_t *reader_of, int32_t *reader);
/* Whether the group of chain op `tail` of g under plan p (itself and the FUSED ops feeding
 * it, through chains) fits the kernel: a float output for the tail, every leaf operand of
 * the op's dtype and a leaf form (a mask FULL or SCALAR), at most EG_EW_CHAIN_MAX_STEPS ops
 * and EG_EW_CHAIN_MAX_LEAVES leaves. A reduction tail (eg_htp_reduces_rows): the group of
 * the FUSED op whose output it reads fits so, over that output's elements. */
bool eg_htp_fused_group_fits(const eg_htp_qnn_graph *g, const eg_htp_exec_plan *p,
                             int32_t tail);
/* Whether op k of g reads the output of a FUSED op of p (k is then a tail or FUSED). */
bool eg_htp_reads_fused(const eg_htp_qnn_graph *g, const eg_htp_exec_plan *p, int32_t k);

/* Whether plan p fits graph g by every rule above (one entry per op, known codes, ids in range,
 * op kinds, perms, tensor types and dtypes, every reader of a SKIP output redirected), in time
 * linear in the graph. On false writes why into why[size]: "op 5 (dgrad, TransposeConv2d): reads
 * op 3 (w_t, SKIP)'s output as input 0: every reader of a skipped Transpose's output must read
 * it as a filter redirected to its input". A plan that passes is safe to run whatever kernel it
 * chooses (the executor checks the kernels take the forms at create). */
bool eg_htp_exec_plan_check(const eg_htp_qnn_graph *g, const eg_htp_exec_plan *p, char *why,
                            size_t size);

/* Kernel parameters of Conv2d / TransposeConv2d op `op` of g from its tensors' dims and attrs
 * (no mode flags, no chunk size, algo AUTO): what the executor plans and the layout pass's
 * criteria read. */
eg_conv2d_nhwc_params eg_htp_conv2d_params(const eg_htp_qnn_graph *g, const eg_htp_qnn_op_node *op);
eg_transpose_conv2d_nhwc_params eg_htp_tconv2d_params(const eg_htp_qnn_graph *g,
                                                      const eg_htp_qnn_op_node *op);

#endif
