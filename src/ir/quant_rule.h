/* quant_rule.h — the one definition of what a quantization's parameters may be. The graph
 * verifier (ops/quant.c, on quantize nodes), the .egp reader (program/egp_read.c, on the value
 * annotations it reads back) and the NPU lowering (which holds scales as float32)
 * all apply these rules, so whatever `compile -o` writes its reader accepts, and the reverse.
 *
 *   scale       finite and in [EG_QUANT_SCALE_MIN, EG_QUANT_SCALE_MAX]: a normal float32 whose
 *               float32 reciprocal is normal too (the CPU kernels multiply by 1.0f / (float)scale,
 *               QNN stores the scale as float32), so no scale rounds to 0 or to infinity
 *   storage     uint8 [0, 255], int8 [-128, 127], int32 [INT32_MIN, INT32_MAX]
 *   qmin, qmax  within the storage range, qmin <= qmax
 *   zero point  in [qmin, qmax] */
#ifndef EG_IR_QUANT_RULE_H
#define EG_IR_QUANT_RULE_H

#include <stdbool.h>
#include <stdint.h>

#include "edgegrad.h"

#define EG_QUANT_SCALE_MIN 1e-30
#define EG_QUANT_SCALE_MAX 1e30
/* The rule as it ends an error message ("<what> (<value>): " EG_QUANT_SCALE_RULE). */
#define EG_QUANT_SCALE_RULE                                                                   \
  "must be finite and in [1e-30, 1e30] (held as float32 by the kernels and QNN, with its "    \
  "reciprocal)"

/* The scale rule above. */
bool eg_quant_scale_ok(double scale);

/* The storage range of quantized dtype `storage` (uint8, int8 or int32); false (and *qmin,
 * *qmax untouched) for any other dtype. */
bool eg_quant_storage_range(eg_dtype storage, int64_t *qmin, int64_t *qmax);

#endif
