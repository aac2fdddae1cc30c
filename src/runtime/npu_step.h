/* npu_step.h — running one lowered NPU partition from the runtime. A boundary value the NPU
 * holds as the CPU does (same order, dtype and bytes) is bound in place: the executor reads an
 * input from, and writes an output into, the IR value's runtime buffer, with no copy. Only a
 * value that needs converting is staged: one the pass layout_nhwc holds NHWC (boundary flag
 * nhwc) is permuted NCHW -> NHWC as it goes in and back as it comes out; an int64 value marked
 * npu_int32 (pass i64_to_i32) is narrowed to int32 going in (EG_ERR_RUNTIME naming the value if
 * an element does not fit) and widened coming out; a value held quantized (fold_qdq, values.h
 * eg_htp_held_quantized) is quantized going in and dequantized coming out.
 *
 * Memory: the staging buffers and the executor's working memory (intermediate tensors,
 * scratch) live only while the step runs, so they are one block the runtime hands every step
 * (eg_npu_step_work_bytes, the largest of which it allocates once; eg_npu_step_set_work, once,
 * before the first run). Creation makes the bindings; running allocates nothing. */
#ifndef EG_RUNTIME_NPU_STEP_H
#define EG_RUNTIME_NPU_STEP_H

#include "backends/executor.h"
#include "backends/htp/values.h"

typedef struct eg_npu_step eg_npu_step;

/* `data` is the runtime's per-value buffer table (fixed for the runtime's life). */
eg_status eg_npu_step_create(const eg_graph *g, const eg_htp_partition *hp, void *const *data,
                             eg_npu_step **out);
void eg_npu_step_destroy(eg_npu_step *s);
/* The bytes of working memory the step needs while it runs (staging + its executor's). */
size_t eg_npu_step_work_bytes(const eg_npu_step *s);
/* Hands the step its working memory (64-byte aligned, eg_npu_step_work_bytes long, may be
 * shared with other steps and the CPU kernels' scratch); once, before the first run. */
void eg_npu_step_set_work(eg_npu_step *s, void *work);
/* Runs the partition: converts its inputs, executes, converts its outputs back. With
 * `convert_ns` (NULL: not timed), the nanoseconds the conversions took (the profile's). */
eg_status eg_npu_step_run(eg_npu_step *s, int64_t *convert_ns);
/* Profiling: per op of the partition's graph, start and duration of the next runs
 * (eg_backend_executor.set_op_times); NULL turns it off. */
void eg_npu_step_set_op_times(eg_npu_step *s, int64_t *times);

#endif
