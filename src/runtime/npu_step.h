/* npu_step.h — running one lowered NPU partition from the runtime: boundary values are copied
 * into staging buffers (those the pass layout_nhwc holds NHWC — boundary flag nhwc — permuted
 * NCHW -> NHWC), the partition's executor runs, and its outputs are copied back (NHWC -> NCHW)
 * into the IR values' buffers. Staging buffers and bindings are made once at creation; running
 * allocates nothing. An int64 value marked npu_int32 (pass i64_to_i32) is narrowed to int32 as
 * it is staged in (EG_ERR_RUNTIME naming the value if an element does not fit) and widened back
 * to int64 as it is read out. A value held quantized on the NPU (fold_qdq, values.h
 * eg_htp_held_quantized) is quantized as it is staged in and dequantized as it is read out. */
#ifndef EG_RUNTIME_NPU_STEP_H
#define EG_RUNTIME_NPU_STEP_H

#include "backends/executor.h"
#include "backends/htp/values.h"

typedef struct eg_npu_step eg_npu_step;

/* `data` is the runtime's per-value buffer table (fixed for the runtime's life). */
eg_status eg_npu_step_create(const eg_graph *g, const eg_htp_partition *hp, void *const *data,
                             eg_npu_step **out);
void eg_npu_step_destroy(eg_npu_step *s);
eg_status eg_npu_step_run(eg_npu_step *s);

#endif
