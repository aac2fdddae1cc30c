/* fp16.h — IEEE-754 binary16 conversions in portable C (no F16C / NEON intrinsics, no
 * _Float16), bit-exact on every host.
 *
 * eg_fp16_from_f32 rounds to nearest, ties to even, as the hardware conversions do: magnitudes
 * from 65520 up become infinity, those below 2^-14 become subnormals (or zero below 2^-25), NaN
 * stays NaN (quiet, its sign kept). eg_fp16_to_f32 is exact. eg_fp16_store_f32 is the storage
 * rule of the NPU executor's fp16 precision (executor.h): each float becomes the fp16 value it
 * rounds to, with magnitudes above 65504 saturated to 65504 as QNN's HTP saturates (never
 * infinity; docs/fp16.md), NaN kept. eg_fp16_store_result_f32 is the rule for what an op
 * writes: the HTP keeps op results in a format of fp16's precision with one binade more range
 * (measured: a product of fp16 values between 65504 and 131008 comes out rounded to 11
 * significant bits, and 131008 = (2 - 2^-10) * 2^16 is its largest). */
#ifndef EG_UTIL_FP16_H
#define EG_UTIL_FP16_H

#include <stddef.h>
#include <stdint.h>

#define EG_FP16_MAX 65504.0f
#define EG_FP16_RESULT_MAX 131008.0f

uint16_t eg_fp16_from_f32(float x);
float eg_fp16_to_f32(uint16_t h);
/* x[i] = the fp16 value x[i] rounds to, saturated to [-65504, 65504], for i < n. */
void eg_fp16_store_f32(float *x, size_t n);
/* x[i] = x[i] rounded to 11 significant bits (to nearest, ties to even; below 2^-14 to fp16's
 * subnormals), saturated to [-131008, 131008], NaN kept, for i < n: eg_fp16_store_f32 with
 * one binade more range. */
void eg_fp16_store_result_f32(float *x, size_t n);

#endif
