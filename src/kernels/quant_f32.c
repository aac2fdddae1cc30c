/* quant_f32.c — see quant_f32.h for the arithmetic and its PyTorch source. */
#include "kernels/quant_f32.h"

#include <math.h>

/* One element: the float reciprocal product, rounded half to even (nearbyint in the default
 * rounding mode), shifted and clamped. The clamp is done in double so that values far outside
 * the integer range never reach an out-of-range conversion. */
static inline int64_t quantize_one(float x, float inv_scale, int64_t zp, int64_t qmin,
                                   int64_t qmax) {
  const double r = (double)nearbyintf(x * inv_scale) + (double)zp;
  if (!(r >= (double)qmin)) return qmin; /* also NaN */
  if (r > (double)qmax) return qmax;
  return (int64_t)r;
}

static inline int64_t load(eg_dtype storage, const void *q, int64_t i) {
  switch (storage) {
    case EG_DTYPE_UINT8: return ((const uint8_t *)q)[i];
    case EG_DTYPE_INT8: return ((const int8_t *)q)[i];
    default: return ((const int32_t *)q)[i];
  }
}

static inline void store(eg_dtype storage, void *q, int64_t i, int64_t v) {
  switch (storage) {
    case EG_DTYPE_UINT8: ((uint8_t *)q)[i] = (uint8_t)v; break;
    case EG_DTYPE_INT8: ((int8_t *)q)[i] = (int8_t)v; break;
    default: ((int32_t *)q)[i] = (int32_t)v; break;
  }
}

void eg_quantize_f32(const eg_quant_view *v, const float *x, void *q) {
  int64_t i = 0;
  for (int64_t o = 0; o < v->outer; o++)
    for (int64_t c = 0; c < v->channels; c++) {
      const float inv = 1.0f / (float)v->scale[c];
      const int64_t zp = v->zero_point[c];
      for (int64_t k = 0; k < v->inner; k++, i++)
        store(v->storage, q, i, quantize_one(x[i], inv, zp, v->qmin, v->qmax));
    }
}

void eg_dequantize_f32(const eg_quant_view *v, const void *q, float *x) {
  int64_t i = 0;
  for (int64_t o = 0; o < v->outer; o++)
    for (int64_t c = 0; c < v->channels; c++) {
      const int64_t zp = v->zero_point[c];
      const double scale = v->scale[c];
      const float fscale = (float)scale;
      if (v->per_channel)
        for (int64_t k = 0; k < v->inner; k++, i++)
          x[i] = (float)((double)(load(v->storage, q, i) - zp) * scale);
      else
        for (int64_t k = 0; k < v->inner; k++, i++)
          x[i] = (float)(load(v->storage, q, i) - zp) * fscale;
    }
}
