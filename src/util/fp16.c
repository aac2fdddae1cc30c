/* fp16.c — binary16 <-> binary32 by bit manipulation (contract in fp16.h). */
#include "util/fp16.h"

#include <string.h>

static uint32_t bits_of(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static float float_of(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* Shifts the 24-bit significand `m` right by `s` (1..25) and rounds to nearest even. */
static uint32_t shift_rne(uint32_t m, uint32_t s) {
  const uint32_t q = m >> s, rest = m & ((1u << s) - 1), half = 1u << (s - 1);
  return q + (rest > half || (rest == half && (q & 1u)));
}

uint16_t eg_fp16_from_f32(float x) {
  const uint32_t u = bits_of(x), sign = (u >> 16) & 0x8000u, e = (u >> 23) & 0xFFu,
                 frac = u & 0x7FFFFFu;
  if (e == 0xFF) /* inf, or NaN with the top payload bits kept and the quiet bit set */
    return (uint16_t)(sign | 0x7C00u | (frac ? 0x200u | (frac >> 13) : 0));
  const int32_t exp = (int32_t)e - 127; /* unbiased; zeros and f32 subnormals fall below */
  if (exp > 15) return (uint16_t)(sign | 0x7C00u);
  if (exp >= -14) { /* normal: rounding may carry into the exponent, up to infinity */
    const uint32_t m = ((uint32_t)(exp + 15) << 10) + shift_rne(frac | 0x800000u, 13) - 0x400u;
    return (uint16_t)(sign | m);
  }
  if (exp < -25) return (uint16_t)sign; /* below half the smallest subnormal (2^-25) */
  /* subnormal: value = m * 2^-24; m = significand (24 bits, 2^(exp-23) units) >> (-exp - 1) */
  return (uint16_t)(sign | shift_rne(frac | 0x800000u, (uint32_t)(-exp - 1)));
}

float eg_fp16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0x1F) return float_of(sign | 0x7F800000u | (m << 13));
  if (e != 0) return float_of(sign | ((e + 112) << 23) | (m << 13));
  if (m == 0) return float_of(sign);
  const float mag = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
  return sign ? -mag : mag;
}

void eg_fp16_store_result_f32(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const float v = x[i], a = v < 0 ? -v : v;
    if (!(a >= 65520.0f)) { /* fp16's range rounds alike (65520 is the tie to 65536); NaN */
      x[i] = eg_fp16_to_f32(eg_fp16_from_f32(v));
    } else if (a >= 131040.0f) { /* rounds past 131008 (the tie to 131072), infinities */
      x[i] = v < 0 ? -EG_FP16_RESULT_MAX : EG_FP16_RESULT_MAX;
    } else { /* a normal float32: keep 10 of its 23 fraction bits, to nearest even */
      const uint32_t u = bits_of(v);
      x[i] = float_of((u + 0x0FFFu + ((u >> 13) & 1u)) & ~0x1FFFu);
    }
  }
}

void eg_fp16_store_f32(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float v = x[i];
    if (v > EG_FP16_MAX) v = EG_FP16_MAX;       /* false for NaN: kept */
    else if (v < -EG_FP16_MAX) v = -EG_FP16_MAX;
    x[i] = eg_fp16_to_f32(eg_fp16_from_f32(v));
  }
}
