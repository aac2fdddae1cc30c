"""The project's tolerance: whether an output passes against a reference.

The same rule as the C library's ``eg_tensor_compare`` (src/runtime/compare.c); the cases in
tests/data/tolerance_cases.json must be decided alike by both. Dtype and shape must be equal;
an empty array passes; integer and bool elements must be equal; float elements, computed in
float64, pass when

    |got - want| <= RTOL * |want| + ATOL_SCALE * max(1, max |want| over finite want)

with NaN passing only where ``want`` is NaN and an infinity only where ``want`` holds the same
infinity.

Contract:
- ``check(got, want, rtol, atol_scale)`` returns a ``Verdict`` (the fields of the C library's
  eg_compare_result: ``num_bad``, ``worst`` as a C-order flat index or -1, and ``got``, ``want``,
  ``err``, ``tol`` at it), or raises ValueError when dtype or shape differ.
- ``bound(want, rtol, atol_scale)`` is the float64 array of each element's tolerance.
- ``compare(got, want)`` returns None when ``got`` passes at the project tolerance, else a
  one-line reason (a dtype or shape difference included).
"""
from typing import NamedTuple

import numpy as np

RTOL = 1e-4
ATOL_SCALE = 1e-5


class Verdict(NamedTuple):
    num_bad: int
    worst: int
    got: float
    want: float
    err: float
    tol: float


def bound(want, rtol=RTOL, atol_scale=ATOL_SCALE):
    """Each element's tolerance, rtol * |want| + atol_scale * max(1, max |want| over finite)."""
    w = np.asarray(want, dtype=np.float64)
    finite = np.isfinite(w)
    scale = max(1.0, float(np.max(np.abs(w[finite]))) if finite.any() else 1.0)
    return rtol * np.abs(w) + atol_scale * scale


def check(got, want, rtol=RTOL, atol_scale=ATOL_SCALE):
    """The Verdict of ``got`` against ``want``; ValueError when their dtype or shape differ."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype:
        raise ValueError(f"dtype {got.dtype}, want {want.dtype}")
    if got.shape != want.shape:
        raise ValueError(f"shape {list(got.shape)}, want {list(want.shape)}")
    g, w = got.reshape(-1), want.reshape(-1)
    if w.size == 0:
        return Verdict(0, -1, 0.0, 0.0, 0.0, 0.0)
    if not np.issubdtype(w.dtype, np.floating):
        bad = g != w
        if not bad.any():
            return Verdict(0, -1, 0.0, 0.0, 0.0, 0.0)
        i = int(np.argmax(bad))
        gi, wi = int(g[i]), int(w[i])
        return Verdict(int(bad.sum()), i, float(gi), float(wi), float(abs(gi - wi)), 0.0)
    g, w = g.astype(np.float64), w.astype(np.float64)
    tol = bound(w, rtol, atol_scale)
    with np.errstate(invalid="ignore"):
        err = np.abs(g - w)
        passes = np.where(np.isnan(w), np.isnan(g),
                          np.where(np.isinf(w), g == w, err <= tol))
        bad = ~passes
        if not bad.any():
            return Verdict(0, -1, 0.0, 0.0, 0.0, 0.0)
        both_finite = np.isfinite(w) & np.isfinite(g)
        excess = np.where(bad, np.where(both_finite, err - tol, np.inf), -np.inf)
    i = int(np.argmax(excess))
    return Verdict(int(bad.sum()), i, float(g[i]), float(w[i]), float(err[i]), float(tol[i]))


def compare(got, want):
    """None if ``got`` passes against ``want``; else a one-line description of the failure."""
    try:
        v = check(got, want)
    except ValueError as e:
        return str(e)
    if v.num_bad == 0:
        return None
    where = list(map(int, np.unravel_index(v.worst, np.shape(want))))
    want = np.asarray(want)
    if not np.issubdtype(want.dtype, np.floating):
        return (f"{v.num_bad}/{want.size} elements differ; first at {where} "
                f"(got {np.asarray(got).reshape(-1)[v.worst]}, want {want.reshape(-1)[v.worst]})")
    return (f"{v.num_bad}/{want.size} elements off; err {v.err:.3g} at {where} "
            f"(got {v.got:.7g}, want {v.want:.7g}, tol {v.tol:.3g})")
