"""The conformance pass rule for one output: the project's tolerance, edgegrad.tolerance.

Contract: ``compare(got, want)`` returns None when ``got`` passes against the reference
``want`` (numpy arrays), else a one-line reason; ``bound(want)`` is each element's tolerance.
The rule (python/edgegrad/tolerance.py, the same as the C library's eg_tensor_compare): dtype
and shape equal; then, elementwise,

    |got - want| <= 1e-4 * |want| + 1e-5 * max(1, max |want| over finite want)

(computed in float64; NaN passes only where the reference is NaN, an infinity only where the
reference holds the same infinity). Integer and bool outputs must match exactly.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from edgegrad.tolerance import ATOL_SCALE, RTOL, bound, compare  # noqa: E402,F401
