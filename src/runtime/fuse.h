/* fuse.h — chains of CPU nodes a runtime runs as one kernel, decided once when it is created
 * (runtime/engine.c), from the graph and the program alone; the memory plan (runtime/memory.h)
 * and the step loop follow the decision. Two chains, each giving bit for bit what its nodes
 * give (ops/op.h, "fused chains"):
 *
 *   BN_CLAMP     a batch-norm forward (training or eval) whose output (element 0, through its
 *                getitem) only a clamping activation reads (relu, hardtanh as ReLU6, clamp*):
 *                the batch norm writes the activation's values in its write pass, into its own
 *                output's buffer, which the activation's result shares (planned as an alias
 *                of it); the activation and the getitem then do nothing. The pre-activation
 *                values are never stored. A residual block's batch norm whose output only an
 *                add.Tensor reads, whose sum only such an activation reads, adds the other
 *                operand in the same pass (when that operand exists before the batch norm
 *                runs); the sum gets no bytes.
 *   BN_BWD_MASK  a native_batch_norm_backward whose grad_out is the result of a gradient mask
 *                (threshold_backward, i.e. relu's backward; hardtanh_backward) that nothing
 *                else reads: the backward reads the mask's operands (the incoming gradient
 *                and the activation's output or input) and applies the mask in its passes; the
 *                mask's result gets no bytes, and its operands stay live until the backward.
 *                A hardtanh_backward (ReLU6's) reads the hardtanh's input; where a hardtanh of
 *                the same bounds (lo < hi) put out r from it, the fused mask reads r instead,
 *                bit for bit the same mask, and the input is no longer read there: its batch
 *                norm then fuses with the hardtanh too (BN_CLAMP), its output never stored.
 *   SUM_SQ_DEV   a batch norm's variance statistic as the exporter writes it: d = sub(x, m)
 *                (m one mean per channel, broadcast), sq = mul(d, d), sum(sq, [0, 2, 3]) of a
 *                float32 [N, C, H, W] x (H * W > 1), d read by the mul alone and sq by the sum
 *                alone: the sum reads x and m and sums the squares as it would sum sq
 *                (eg_sum_sq_dev_f32, bit for bit); d and sq get no bytes, x and m stay live
 *                until the sum.
 *
 * None fuses where a value of the chain is a graph output, is read by another node (a
 * detach or view of it included), or a node of the chain runs in an NPU partition. */
#ifndef EG_RUNTIME_FUSE_H
#define EG_RUNTIME_FUSE_H

#include "ops/op.h"
#include "program/program.h"

typedef enum eg_fuse_role {
  EG_FUSE_NONE = 0,
  EG_FUSE_FOLDED,      /* runs inside another node's kernel: the step does nothing */
  EG_FUSE_BN_CLAMP,    /* a batch-norm forward that also clamps: .clamp, .with (activation) */
  EG_FUSE_BN_BWD_MASK, /* a batch-norm backward that masks: .mask, .with (the mask node) */
  EG_FUSE_SUM_SQ_DEV,  /* a sum of squared deviations: .dev, .with (the mul), .dev.sub */
} eg_fuse_role;

typedef struct eg_fusion {
  eg_fuse_role role;
  int32_t with;    /* the node folded into this one, or the one this one is folded into; -1 */
  bool redirected; /* BN_BWD_MASK of a hardtanh_backward: the mask reads the hardtanh's output,
                      not its input (the same mask when lo < hi), so the input need not be
                      kept for the backward */
  int32_t add_node; /* BN_CLAMP of a residual: the add folded in too (-1: none), */
  int32_t add;      /* the value it adds to the batch norm's output */
  eg_clamp clamp;
  eg_grad_mask mask;
  struct {
    int32_t x, m; /* SUM_SQ_DEV: the sub's operands, summed as (x + alpha * m)^2 */
    float alpha;
    int32_t sub; /* the sub node (folded, as is the mul) */
  } dev;
} eg_fusion;

/* Per node of g (run as program p, NULL: every node on the CPU), its role in a fused chain:
 * *out (n_nodes entries, malloc'ed; the caller frees it), *n_fused the chains found. */
eg_status eg_fusions_find(const eg_graph *g, const eg_program *p, eg_fusion **out,
                          int32_t *n_fused);

#endif
