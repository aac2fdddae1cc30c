/* quant_rule.c — see quant_rule.h. */
#include "ir/quant_rule.h"

#include <math.h>

bool eg_quant_scale_ok(double scale) {
  return isfinite(scale) && scale >= EG_QUANT_SCALE_MIN && scale <= EG_QUANT_SCALE_MAX;
}

bool eg_quant_storage_range(eg_dtype storage, int64_t *qmin, int64_t *qmax) {
  switch (storage) {
  case EG_DTYPE_UINT8: *qmin = 0; *qmax = 255; return true;
  case EG_DTYPE_INT8: *qmin = -128; *qmax = 127; return true;
  case EG_DTYPE_INT32: *qmin = INT32_MIN; *qmax = INT32_MAX; return true;
  default: return false;
  }
}
