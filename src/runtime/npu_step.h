/* npu_step.h — running one lowered NPU partition from the runtime: boundary values are copied
 * into staging buffers (rank-4 ones permuted NCHW -> NHWC), the partition's executor runs, and
 * its outputs are copied back (NHWC -> NCHW) into the IR values' buffers. Staging buffers and
 * bindings are made once at creation; running allocates nothing. */
#ifndef EG_RUNTIME_NPU_STEP_H
#define EG_RUNTIME_NPU_STEP_H

#include "backends/htp/executor.h"
#include "backends/htp/lower.h"

typedef struct eg_npu_step eg_npu_step;

/* `data` is the runtime's per-value buffer table (fixed for the runtime's life). */
eg_status eg_npu_step_create(const eg_graph *g, const eg_htp_partition *hp, void *const *data,
                             eg_npu_step **out);
void eg_npu_step_destroy(eg_npu_step *s);
eg_status eg_npu_step_run(eg_npu_step *s);

#endif
