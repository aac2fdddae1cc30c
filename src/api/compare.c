/* compare.c — the project's pass rule for an output against a reference (eg_tensor_compare).
 *
 * Floats, computed in float64: |got - want| <= rtol * |want| + atol_scale * scale, where scale
 * is max(1, max |want| over the finite elements of want). NaN passes only where want is NaN, an
 * infinity only where want holds the same infinity. Integers and bools must be equal. The
 * Python twin is python/edgegrad/tolerance.py; tests/data/tolerance_cases.json holds the cases
 * both must decide alike. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "api/struct_size.h"
#include "edgegrad.h"
#include "util/error.h"

#define WHERE "eg_tensor_compare"

static double half_to_double(uint16_t h) {
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0) v = ldexp(mant, -24);
  else if (exp == 31) v = mant ? NAN : INFINITY;
  else v = ldexp(mant | 0x400, exp - 25);
  return (h & 0x8000) ? -v : v;
}

static double float_at(const eg_tensor *t, int64_t i) {
  switch (t->dtype) {
  case EG_DTYPE_FLOAT32: return ((const float *)t->data)[i];
  case EG_DTYPE_FLOAT64: return ((const double *)t->data)[i];
  default: return half_to_double(((const uint16_t *)t->data)[i]);
  }
}

static int64_t int_at(const eg_tensor *t, int64_t i) {
  switch (t->dtype) {
  case EG_DTYPE_INT64: return ((const int64_t *)t->data)[i];
  case EG_DTYPE_INT32: return ((const int32_t *)t->data)[i];
  case EG_DTYPE_INT8: return ((const int8_t *)t->data)[i];
  default: return ((const uint8_t *)t->data)[i]; /* uint8, bool */
  }
}

static eg_status check_tensor(const eg_tensor *t, const char *which) {
  if (!t) return eg_error(EG_ERR_ARGUMENT, WHERE ": %s is NULL", which);
  if ((unsigned)t->dtype >= EG_DTYPE_COUNT)
    return eg_error(EG_ERR_ARGUMENT, WHERE ": %s dtype invalid (%d): must be an eg_dtype", which,
                    (int)t->dtype);
  if (t->rank < 0 || t->rank > EG_MAX_RANK)
    return eg_error(EG_ERR_ARGUMENT, WHERE ": %s rank invalid (%d): must be in [0, %d]", which,
                    (int)t->rank, EG_MAX_RANK);
  for (int i = 0; i < t->rank; i++)
    if (t->shape[i] < 0)
      return eg_error(EG_ERR_ARGUMENT, WHERE ": %s shape invalid (dim %d is %lld): dims must be "
                      ">= 0", which, i, (long long)t->shape[i]);
  if (eg_tensor_numel(t) < 0) {
    char dims[160];
    return eg_error(EG_ERR_ARGUMENT, WHERE ": %s shape too large (%s): the non-zero dims "
                    "multiply to at most 2^40", which, eg_fmt_ints(dims, sizeof dims, t->shape,
                                                                   t->rank));
  }
  if (!t->data && eg_tensor_numel(t) > 0)
    return eg_error(EG_ERR_ARGUMENT, WHERE ": %s data is NULL (%lld elements): a non-empty "
                    "tensor needs data", which, (long long)eg_tensor_numel(t));
  return EG_OK;
}

static eg_status check_args(const eg_tensor *got, const eg_tensor *want, double rtol,
                            double atol_scale) {
  EG_TRY(check_tensor(got, "got"));
  EG_TRY(check_tensor(want, "want"));
  if (!(rtol >= 0 && atol_scale >= 0 && isfinite(rtol) && isfinite(atol_scale)))
    return eg_error(EG_ERR_ARGUMENT, WHERE ": tolerance invalid (rtol %g, atol_scale %g): both "
                    "must be finite and >= 0", rtol, atol_scale);
  if (got->dtype != want->dtype)
    return eg_error(EG_ERR_ARGUMENT, WHERE ": dtypes differ (got %s, want %s): got and want must "
                    "have the same dtype and shape", eg_dtype_name(got->dtype),
                    eg_dtype_name(want->dtype));
  bool same = got->rank == want->rank;
  for (int i = 0; same && i < got->rank; i++) same = got->shape[i] == want->shape[i];
  if (!same) {
    char g[160], w[160];
    eg_fmt_ints(g, sizeof g, got->shape, got->rank);
    eg_fmt_ints(w, sizeof w, want->shape, want->rank);
    return eg_error(EG_ERR_ARGUMENT, WHERE ": shapes differ (got %s, want %s): got and want must "
                    "have the same dtype and shape", g, w);
  }
  return EG_OK;
}

/* Records element i as out of tolerance by `excess`; the first of the largest excesses wins. */
static void note_bad(eg_compare_result *r, double *worst_excess, int64_t i, double excess,
                     double got, double want, double err, double tol) {
  if (r->num_bad++ == 0 || excess > *worst_excess) {
    *worst_excess = excess;
    r->worst = i;
    r->got = got;
    r->want = want;
    r->err = err;
    r->tol = tol;
  }
}

static void compare_floats(const eg_tensor *got, const eg_tensor *want, int64_t n, double rtol,
                           double atol_scale, eg_compare_result *r) {
  double scale = 1, worst_excess = 0;
  for (int64_t i = 0; i < n; i++) {
    double w = fabs(float_at(want, i));
    if (isfinite(w) && w > scale) scale = w;
  }
  for (int64_t i = 0; i < n; i++) {
    double g = float_at(got, i), w = float_at(want, i);
    double err = fabs(g - w), tol = rtol * fabs(w) + atol_scale * scale;
    if (isfinite(err) && err > r->max_err) r->max_err = err;
    bool pass = isnan(w) ? isnan(g) : isinf(w) ? g == w : err <= tol;
    if (pass) continue;
    /* a NaN or infinity where it does not belong is further off than any finite error */
    double excess = isfinite(w) && isfinite(g) ? err - tol : INFINITY;
    note_bad(r, &worst_excess, i, excess, g, w, err, tol);
  }
}

static void compare_ints(const eg_tensor *got, const eg_tensor *want, int64_t n,
                         eg_compare_result *r) {
  for (int64_t i = 0; i < n; i++) {
    int64_t g = int_at(got, i), w = int_at(want, i);
    double err = fabs((double)g - (double)w);
    if (err > r->max_err) r->max_err = err;
    /* Every differing element is equally bad: the first one is the one reported. */
    if (g != w) note_bad(r, &(double){0}, i, 0, (double)g, (double)w, err, 0);
  }
}

eg_status(eg_tensor_compare)(const eg_tensor *got, const eg_tensor *want, double rtol,
                              double atol_scale, eg_compare_result *out, size_t out_size) {
  if (!out) return eg_error(EG_ERR_ARGUMENT, WHERE ": out is NULL");
  eg_compare_result r = {.worst = -1};
  EG_TRY(EG_STRUCT_WRITE(eg_compare_result, out, out_size, &r, WHERE)); /* as it is on failure */
  EG_TRY(check_args(got, want, rtol, atol_scale));
  int64_t n = eg_tensor_numel(want);
  if (want->dtype == EG_DTYPE_FLOAT32 || want->dtype == EG_DTYPE_FLOAT64 ||
      want->dtype == EG_DTYPE_FLOAT16)
    compare_floats(got, want, n, rtol, atol_scale, &r);
  else
    compare_ints(got, want, n, &r);
  return EG_STRUCT_WRITE(eg_compare_result, out, out_size, &r, WHERE);
}
