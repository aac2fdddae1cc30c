/* npu_step.h — running one lowered NPU partition from the runtime. A boundary value the NPU
 * holds as the CPU does (same order, dtype and bytes) is bound in place: the executor reads an
 * input from, and writes an output into, the IR value's runtime buffer, with no copy. Only a
 * value that needs converting is staged: one the pass layout_nhwc holds NHWC (boundary flag
 * nhwc) is permuted NCHW -> NHWC as it goes in and back as it comes out, unless no CPU node
 * sees it (held_nhwc below: its runtime buffer is NHWC, bound in place); an int64 value marked
 * npu_int32 (pass i64_to_i32) is narrowed to int32 going in (EG_ERR_RUNTIME naming the value if
 * an element does not fit) and widened coming out; a value held quantized (fold_qdq) is
 * quantized going in and dequantized coming out (backends/lowered.h eg_boundary says which,
 * the partition's backend its grid). The partition runs on its backend's executor.
 *
 * Memory: the staging buffers and the executor's intermediate tensors live only while the step
 * runs, so they are one block (eg_npu_step_block_bytes) the runtime plans in its activation
 * arena like a value live for that step alone, sharing bytes with values dead by then — or each
 * of them is planned alone, over the ops that use it (eg_npu_step_spans); the executor's
 * scratch (eg_npu_step_scratch_bytes) is the runtime's CPU kernel scratch, which nothing else
 * uses while the step runs, or per op a span too. The step keeps what the plan chose
 * (eg_npu_step_place_*). Creation needs no buffers; eg_npu_step_bind, once before the first
 * run, hands the step the runtime's buffers and its memory; running allocates nothing. */
#ifndef EG_RUNTIME_NPU_STEP_H
#define EG_RUNTIME_NPU_STEP_H

#include "backends/lowered.h"
#include "runtime/plan.h"

typedef struct eg_npu_step eg_npu_step;

/* The step of partition `part` (lowered as `hp`), the program's step `program_step`.
 * `held_nhwc` (per value id, or NULL: none) marks the values whose runtime buffers hold NHWC
 * order already (eg_nhwc_between_partitions: only NPU steps touch them): those are bound
 * in place. The executor computes floats at `precision` (edgegrad.h eg_precision). */
eg_status eg_npu_step_create(const eg_graph *g, const eg_lowered *hp, const eg_partition *part,
                             int32_t program_step, const bool *held_nhwc, eg_precision precision,
                             eg_npu_step **out);
void eg_npu_step_destroy(eg_npu_step *s);
/* Its step in the program's order (eg_program.steps). */
int32_t eg_npu_step_program_step(const eg_npu_step *s);
/* The bytes of working memory the step needs while it runs as one block (staging + its
 * executor's). */
size_t eg_npu_step_block_bytes(const eg_npu_step *s);
/* The executor's intermediate tensors one by one, for the runtime to plan among its values
 * like values of the partition's nodes instead of in one block live through the step (a
 * partition's peak and the values around it then share bytes as on the CPU path): per tensor
 * its bytes and the partition nodes (graph node ids) whose ops write it first and read it
 * last. The ops are matched to the nodes the partition lists, in its order, by the names
 * lowering gives them ("<node>", then "<node>_op<k>"); when that fails or the executor keeps
 * its tensors to itself, -1: the step has only its block. Else the count: the executor's
 * tensors and its ops' scratch (eg_npu_step_span_is_scratch), then the staging buffers (an
 * input's from the step's start to its last reader, an output's from its writer to the step's
 * end); ticks order the step's work (0: the conversions in, op k: k + 1, ops + 1: the
 * conversions out). *out (the step's) stays valid until it is destroyed. */
int32_t eg_npu_step_spans(const eg_npu_step *s, const eg_plan_block **out);
/* For input boundary k (of the partition's inputs): the index, in eg_npu_step_spans, of the
 * span of the buffer it is staged in (converted, or copied to outlive the executor's reads of
 * it: npu_step.c mark_copies), live from the step's start to the last op reading its bytes
 * (backends/executor.h input_last_op); -1 when it is bound in place or the step has no
 * spans. */
int32_t eg_npu_step_input_span(const eg_npu_step *s, int32_t k);
/* For output boundary k (of the partition's outputs): the value of an earlier output whose
 * bytes it repeats (held alike, same dtype and shape, and the same tensor or a copy of the
 * same value: eg_npu_copy_root), which the runtime may plan it onto; -1 if none. A repeat is
 * not converted on its own: its buffer gets the first one's bytes (nothing to do when it is
 * the same buffer). */
int32_t eg_npu_step_output_repeats(const eg_npu_step *s, int32_t k);
/* The value whose bytes v's repeat, through copies (eg_copy_source: detach, view, ...): v
 * itself when it is no copy. */
int32_t eg_npu_copy_root(const eg_graph *g, int32_t v);
/* Whether outputs i and j of hp hold the same values (root: eg_npu_copy_root of each output's
 * value): one tensor, or copies of one value. */
bool eg_npu_outputs_same_bytes(const eg_lowered *hp, const int32_t *root, int32_t i,
                               int32_t j);
/* Whether span i is an op's scratch (a span of the op's tick alone): given no bytes
 * (eg_npu_step_place_spans), the op uses the shared scratch instead. */
bool eg_npu_step_span_is_scratch(const eg_npu_step *s, int32_t i);
/* The bytes of kernel scratch its executor's ops need while it runs (what the ops without a
 * scratch span use). */
size_t eg_npu_step_scratch_bytes(const eg_npu_step *s);
/* Where the runtime's plan put the step's memory in its activation arena, before
 * eg_npu_step_bind: its block at `offset` (EG_PLAN_NONE: no bytes), or each span at offsets[i]
 * (one per eg_npu_step_spans entry; EG_PLAN_NONE for a scratch span given no bytes: that op
 * uses the shared scratch). The last call counts. */
void eg_npu_step_place_block(eg_npu_step *s, size_t offset);
eg_status eg_npu_step_place_spans(eg_npu_step *s, const size_t *offsets);
/* Binds the step to the runtime's per-value buffer table `data` of graph g (fixed for the
 * runtime's life; every boundary value must have a buffer) and hands it its working memory in
 * `arena` (64-byte aligned, where it was placed) and scratch (64-byte aligned,
 * eg_npu_step_scratch_bytes long, free for it while it runs; NULL when every op with scratch
 * has its span). Once, before the first run. */
eg_status eg_npu_step_bind(eg_npu_step *s, const eg_graph *g, void *const *data,
                           unsigned char *arena, void *scratch);
/* Runs the partition: converts its inputs, executes, converts its outputs back. With
 * `convert_ns` (NULL: not timed), the nanoseconds the conversions took (the profile's). */
eg_status eg_npu_step_run(eg_npu_step *s, int64_t *convert_ns);
/* Profiling: per op of the partition's graph, start and duration of the next runs
 * (eg_backend_executor.set_op_times); NULL turns it off. */
void eg_npu_step_set_op_times(eg_npu_step *s, int64_t *times);

/* NCHW <-> NHWC of a rank-4 value of shape s (NCHW dims) and element size es; to_nhwc chooses
 * the direction. 4-byte elements (float32, int32) go through the tiled transpose kernel. */
void eg_npu_permute_nc(const void *src, void *dst, const int64_t *s, size_t es, bool to_nhwc);

#endif
