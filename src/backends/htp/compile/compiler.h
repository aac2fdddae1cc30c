/* compiler.h — the htp backend's side of the compiler interface (compiler/backend.h): its
 * gates (the op -> builder table of npu_ops.h, the target's float path and HTP generation,
 * QNN's 32-bit dims), its builders' supports(), and lowering a partition (lower.h).
 *
 * gate() in order; the first "no" wins and its reason is the node's:
 *   a. the op has a builder         else "no NPU lowering for aten.X"
 *   b. float tensors need a target with the FLOAT feature (V69+, fp16 not rejected)
 *                                   else "float ops need HTP V69+ with fp16; SM8350 is V68"
 *   c. the target's HTP arch >= the builder's min_htp_arch
 *                                   else "aten.X needs HTP V73+; SM8450 is V69"
 *   d. every dim of every tensor the node reads or defines fits QNN's uint32 dims
 *                                   else "dimension 8589934592 of x exceeds QNN's 32-bit dims"
 * supports() is the node's builder's (npu_ops.h): it only ever sees nodes that passed a-d. */
#ifndef EG_BACKENDS_HTP_COMPILER_H
#define EG_BACKENDS_HTP_COMPILER_H

#include "compiler/backend.h"
#include "backends/htp/compile/npu_ops.h"
#include "backends/htp/runtime.h"

/* Writes lowered partition `lp` into its .egp record (egp_write.c; read back by
 * eg_htp_egp_read). */
void eg_htp_egp_write(const eg_lowered *lp, eg_egp_sink *sink);

/* The htp backend over the builder table eg_htp_builders. */
extern const eg_backend eg_htp_backend;

/* The htp backend over another builder table (EG_OP_COUNT entries): tests pretend ops are
 * NPU-capable, or that none is, with it. */
eg_backend eg_htp_backend_with_builders(const eg_htp_builder *const *builders);

/* Gate d: whether every dim of every tensor node `n` reads or defines fits QNN's uint32 dims.
 * On false writes the reason into reason[size] ("dimension 8589934592 of x exceeds QNN's 32-bit
 * dims (at most 4294967295)"). The NPU lowering asks it again for every node it lowers, so no
 * dim is ever truncated into a QNN tensor. */
bool eg_htp_dims_fit(const eg_graph *g, const eg_node *n, char *reason, size_t size);

#endif
