/* quant_f32 — affine quantization of float32 tensors to 8/32-bit integers and back, with
 * PyTorch 1.13's CPU arithmetic (verified bit for bit against torch.quantize_per_tensor /
 * quantize_per_channel / dequantize, tests/ops/test_quant.py):
 *
 *   quantize:   q = clamp(nearbyint(x * (1.0f / (float)scale)) + zero_point, qmin, qmax)
 *               in float32 (ATen multiplies by the float reciprocal, it does not divide; ties
 *               round half to even; NaN gives qmin)
 *   dequantize: per tensor   x = (float)(q - zero_point) * (float)scale        (float32)
 *               per channel  x = (float)((double)(q - zero_point) * scale)     (double, rounded)
 *
 * A tensor is viewed as [outer, channels, inner] (C order) with one scale and zero point per
 * channel index; per-tensor quantization is channels == 1. The integer storage is uint8, int8 or
 * int32 (PyTorch's quint8, qint8, qint32). No allocation; x and q must not overlap. */
#ifndef EG_KERNELS_QUANT_F32_H
#define EG_KERNELS_QUANT_F32_H

#include <stdbool.h>
#include <stdint.h>

#include "edgegrad.h"

typedef struct eg_quant_view {
  eg_dtype storage;          /* EG_DTYPE_UINT8, EG_DTYPE_INT8 or EG_DTYPE_INT32 */
  int64_t outer, channels, inner;
  const double *scale;       /* channels entries, each > 0 */
  const int64_t *zero_point; /* channels entries */
  int64_t qmin, qmax;
  bool per_channel;          /* selects the dequantize arithmetic above */
} eg_quant_view;

void eg_quantize_f32(const eg_quant_view *v, const float *x, void *q);
void eg_dequantize_f32(const eg_quant_view *v, const void *q, float *x);

#endif
