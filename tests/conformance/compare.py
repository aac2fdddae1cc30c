"""The conformance pass rule for one output.

Contract: ``compare(got, want)`` returns None when ``got`` passes against the reference
``want`` (numpy arrays), else a one-line reason. Dtype and shape must be equal; then, elementwise,

    |got - want| <= 1e-4 * |want| + 1e-5 * max(1, max |want|)

(computed in float64; NaN passes only where the reference is NaN, an infinity only where the
reference holds the same infinity). Integer and bool outputs must match exactly.
"""
import numpy as np

RTOL = 1e-4
ATOL_SCALE = 1e-5


def compare(got, want):
    """None if ``got`` passes against ``want``; else a one-line description of the failure."""
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, want {want.dtype}"
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, want {list(want.shape)}"
    if want.size == 0:
        return None
    if not np.issubdtype(want.dtype, np.floating):
        return _exact(got, want)
    g, w = got.astype(np.float64), want.astype(np.float64)
    finite = np.isfinite(w)
    scale = max(1.0, float(np.max(np.abs(w[finite]))) if finite.any() else 1.0)
    tol = RTOL * np.abs(w) + ATOL_SCALE * scale
    with np.errstate(invalid="ignore"):
        err = np.abs(g - w)
        bad = ~(err <= tol)
    same_special = (np.isnan(g) & np.isnan(w)) | (np.isinf(w) & (g == w))
    bad &= ~same_special
    if not bad.any():
        return None
    excess = np.where(bad, np.nan_to_num(err - tol, nan=np.inf, posinf=np.inf), -np.inf)
    where = np.unravel_index(int(np.argmax(excess)), w.shape)
    return (f"{int(bad.sum())}/{w.size} elements off; max err {err[where]:.3g} at "
            f"{list(map(int, where))} (got {g[where]:.7g}, want {w[where]:.7g}, "
            f"tol {tol[where]:.3g})")


def _exact(got, want):
    bad = got != want
    if not bad.any():
        return None
    where = np.unravel_index(int(np.argmax(bad)), want.shape)
    return (f"{int(bad.sum())}/{want.size} elements differ; first at {list(map(int, where))} "
            f"(got {got[where]}, want {want[where]})")
