/* test_fp16.c — util/fp16.h's conversions, bit-exact over every fp16 value.
 *
 * - eg_fp16_to_f32 of all 65536 bit patterns against the value the bits mean
 *   (sign * significand * 2^exponent, computed with ldexp), and back to the same bits
 *   (NaNs: to a quiet NaN of the same sign);
 * - round to nearest even at every tie: for each pair of neighbouring fp16 magnitudes a < b
 *   (the subnormals, the normals, and 65504 with 65536, where rounding up overflows to
 *   infinity), their midpoint goes to whichever has the even significand, and the floats just
 *   below and above it go to a and b — also negated;
 * - magnitudes below half the smallest subnormal become signed zero, above 65520 infinity;
 * - with a compiler that has _Float16, every 997th float32 pattern against its conversion;
 * - eg_fp16_store_f32 saturates at +-65504 (also infinities) and keeps NaN. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "eg_test.h"
#include "util/fp16.h"

static uint32_t bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static float from_bits(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* The value of fp16 bits h with exponent field below 31, by the definition. */
static double meaning(uint16_t h) {
  const int e = (h >> 10) & 0x1F, m = h & 0x3FF;
  const double mag = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
  return (h & 0x8000) ? -mag : mag;
}

static void test_every_value(void) {
  int wrong = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    const float f = eg_fp16_to_f32((uint16_t)h);
    const bool nan = ((h >> 10) & 0x1F) == 0x1F && (h & 0x3FF);
    if (nan) {
      const uint16_t back = eg_fp16_from_f32(f);
      wrong += !isnan(f) || (back & 0x7E00) != 0x7E00 || (back & 0x8000) != (h & 0x8000);
    } else if (((h >> 10) & 0x1F) == 0x1F) {
      wrong += !isinf(f) || !!signbit(f) != !!(h & 0x8000) || eg_fp16_from_f32(f) != h;
    } else {
      wrong += (double)f != meaning((uint16_t)h) || eg_fp16_from_f32(f) != h ||
               !!signbit(f) != !!(h & 0x8000);
    }
    if (wrong == 1) {
      EG_CHECK_MSG(false, "fp16 0x%04x -> %a -> 0x%04x", (unsigned)h, (double)f,
                   (unsigned)eg_fp16_from_f32(f));
      wrong++;
    }
  }
  EG_CHECK(wrong == 0);
}

/* Midpoints of neighbours a = h, b = h + 1 (h in [0, 0x7BFF]; b = 0x7C00 stands for 65536). */
static void test_ties_to_even(void) {
  int wrong = 0;
  for (uint32_t h = 0; h < 0x7C00; h++) {
    const double a = meaning((uint16_t)h), b = h + 1 == 0x7C00 ? 65536.0 : meaning((uint16_t)(h + 1));
    const float mid = (float)((a + b) / 2); /* exact: 12 significant bits */
    const uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
    for (int s = 0; s < 2; s++) {
      const float sm = s ? -mid : mid;
      const uint16_t sign = s ? 0x8000 : 0;
      const float below = from_bits(bits(mid) - 1), above = from_bits(bits(mid) + 1);
      const bool ok = (double)mid * 2 == a + b &&
                      eg_fp16_from_f32(sm) == (uint16_t)(sign | even) &&
                      eg_fp16_from_f32(s ? -below : below) == (uint16_t)(sign | h) &&
                      eg_fp16_from_f32(s ? -above : above) == (uint16_t)(sign | (h + 1));
      if (!ok && wrong++ == 0)
        EG_CHECK_MSG(false, "tie between 0x%04x and 0x%04x (%a): got 0x%04x, below 0x%04x, "
                     "above 0x%04x", (unsigned)h, (unsigned)h + 1, (double)sm,
                     (unsigned)eg_fp16_from_f32(sm), (unsigned)eg_fp16_from_f32(below),
                     (unsigned)eg_fp16_from_f32(above));
    }
  }
  EG_CHECK(wrong == 0);
}

static void test_edges(void) {
  EG_CHECK(eg_fp16_from_f32(65520.0f) == 0x7C00);               /* tie above 65504: inf */
  EG_CHECK(eg_fp16_from_f32(nextafterf(65520.0f, 0)) == 0x7BFF); /* just below: 65504 */
  EG_CHECK(eg_fp16_from_f32(1e30f) == 0x7C00 && eg_fp16_from_f32(-1e30f) == 0xFC00);
  EG_CHECK(eg_fp16_from_f32(INFINITY) == 0x7C00 && eg_fp16_from_f32(-INFINITY) == 0xFC00);
  EG_CHECK(eg_fp16_from_f32(ldexpf(1, -25)) == 0x0000);          /* tie with 0: even */
  EG_CHECK(eg_fp16_from_f32(nextafterf(ldexpf(1, -25), 1)) == 0x0001);
  EG_CHECK(eg_fp16_from_f32(-ldexpf(1, -26)) == 0x8000);         /* signed zero */
  EG_CHECK(eg_fp16_from_f32(1e-40f) == 0x0000);                  /* f32 subnormal */
  EG_CHECK(eg_fp16_from_f32(nextafterf(ldexpf(1, -14), 0)) == 0x0400); /* rounds up to normal */
  EG_CHECK((eg_fp16_from_f32(NAN) & 0x7E00) == 0x7E00);
}

static void test_against_float16(void) {
#if defined(__FLT16_MAX__)
  int wrong = 0;
  for (uint64_t u = 0; u <= 0xFFFFFFFFu; u += 997) {
    const float f = from_bits((uint32_t)u);
    if (isnan(f)) continue;
    const _Float16 h = (_Float16)f;
    uint16_t hb;
    memcpy(&hb, &h, sizeof hb);
    if (hb != eg_fp16_from_f32(f) && wrong++ == 0)
      EG_CHECK_MSG(false, "%a: _Float16 0x%04x, eg_fp16_from_f32 0x%04x", (double)f,
                   (unsigned)hb, (unsigned)eg_fp16_from_f32(f));
  }
  EG_CHECK(wrong == 0);
#endif
}

static void test_store(void) {
  float x[] = {70000.0f, -1e9f, INFINITY, -INFINITY, 65519.0f, 1.0f / 3, NAN, -0.0f, 1e-8f};
  eg_fp16_store_f32(x, sizeof x / sizeof x[0]);
  EG_CHECK(x[0] == 65504.0f && x[1] == -65504.0f && x[2] == 65504.0f && x[3] == -65504.0f);
  EG_CHECK(x[4] == 65504.0f);
  EG_CHECK(x[5] == eg_fp16_to_f32(eg_fp16_from_f32(1.0f / 3)) && x[5] != 1.0f / 3);
  EG_CHECK(isnan(x[6]) && x[7] == 0 && signbit(x[7]) && x[8] == 0);
}

/* Op results: fp16's rounding below 65520, 11 significant bits (spacing 32 up to 65536, 64
 * above) up to 131008, saturated past it; checked against rounding in double. */
static double round11(double v) {
  int e;
  const double m = frexp(v, &e); /* v = m * 2^e, 0.5 <= |m| < 1: 11 bits are m * 2^11 */
  return ldexp(nearbyint(m * 2048.0), e - 11);
}

static void test_store_result(void) {
  float x[] = {65519.0f, 65520.0f, 65552.0f, 65569.0f, 100000.0f, -100016.0f,  131008.0f,
               131039.0f, 131040.0f, 1e9f,     INFINITY, -INFINITY, NAN,        1.0f / 3,
               1e-8f,     -0.0f};
  float want[] = {65504.0f,  65536.0f,  65536.0f, 65600.0f, 99968.0f, -100032.0f, 131008.0f,
                  131008.0f, 131008.0f, 131008.0f, 131008.0f, -131008.0f, NAN, 0, 0, -0.0f};
  want[13] = eg_fp16_to_f32(eg_fp16_from_f32(1.0f / 3));
  eg_fp16_store_result_f32(x, sizeof x / sizeof x[0]);
  for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
    EG_CHECK_MSG(isnan(want[i]) ? isnan(x[i]) : x[i] == want[i] && signbit(x[i]) == signbit(want[i]),
                 "[%zu]: %.9g, want %.9g", i, (double)x[i], (double)want[i]);
  int wrong = 0; /* every 61st float32 from 2^-14 up to 131008, both signs */
  for (uint32_t u = 0x38800000u; u <= 0x47FFE000u; u += 61) {
    for (int s = 0; s < 2; s++) {
      const float f = from_bits(u | (s ? 0x80000000u : 0));
      float got = f;
      eg_fp16_store_result_f32(&got, 1);
      const double want_d = round11((double)f);
      if ((double)got != (fabs(want_d) > 131008.0 ? copysign(131008.0, f) : want_d) &&
          wrong++ == 0)
        EG_CHECK_MSG(false, "%a: got %a, want %a", (double)f, (double)got, want_d);
    }
  }
  EG_CHECK(wrong == 0);
}

int main(void) {
  EG_RUN(test_every_value);
  EG_RUN(test_store_result);
  EG_RUN(test_ties_to_even);
  EG_RUN(test_edges);
  EG_RUN(test_against_float16);
  EG_RUN(test_store);
  return eg_test_summary();
}
