/* equal_nhwc_i32 — QNN ElementWiseEqual on INT_32 operands (any layout): out = (a == b) as
 * 1/0 bytes, NumPy broadcasting as eg_ew_shape describes it (kernels/elementwise_nhwc_f32.h:
 * every input right-aligned to the output rank, a dim of 1 read with stride 0).
 *
 * The htp executor runs Equal only on int32 (the class indices the NPU holds as INT_32:
 * nll_loss's one-hot mask); float equality has no lowering that needs it. Never allocates. */
#ifndef EG_KERNELS_EQUAL_NHWC_I32_H
#define EG_KERNELS_EQUAL_NHWC_I32_H

#include <stdint.h>

#include "kernels/elementwise_nhwc_f32.h"

/* s: two inputs (eg_ew_shape_init with n_in 2). */
void eg_equal_nhwc_i32(const eg_ew_shape *s, const int32_t *a, const int32_t *b, uint8_t *out);

#endif
