/* fp16.h — IEEE-754 binary16 conversions in portable C (no F16C / NEON intrinsics, no
 * _Float16), bit-exact on every host.
 *
 * eg_fp16_from_f32 rounds to nearest, ties to even, as the hardware conversions do: magnitudes
 * from 65520 up become infinity, those below 2^-14 become subnormals (or zero below 2^-25), NaN
 * stays NaN (quiet, its sign kept). eg_fp16_to_f32 is exact. eg_fp16_store_f32 is the storage
 * rule of the NPU executor's fp16 precision (executor.h): each float becomes the fp16 value it
 * rounds to, with magnitudes above 65504 saturated to 65504 as QNN's HTP saturates (never
 * infinity; docs/fp16.md), NaN kept. */
#ifndef EG_UTIL_FP16_H
#define EG_UTIL_FP16_H

#include <stddef.h>
#include <stdint.h>

#define EG_FP16_MAX 65504.0f

uint16_t eg_fp16_from_f32(float x);
float eg_fp16_to_f32(uint16_t h);
/* x[i] = the fp16 value x[i] rounds to, saturated to [-65504, 65504], for i < n. */
void eg_fp16_store_f32(float *x, size_t n);

#endif
