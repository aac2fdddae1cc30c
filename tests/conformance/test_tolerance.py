"""Self-test of edgegrad.tolerance, the project's tolerance on the Python side: every case of
tests/data/tolerance_cases.json (which tests/unit/test_compare.c also decides with the C
library's eg_tensor_compare) must get its recorded verdict, and the conformance and op-test
harnesses' rules (compare.compare, optest.allclose_report) must decide every case alike. Needs
no edgegrad binary; PyTorch only because optest imports it.

    PYTHONPATH=python python3 tests/conformance/test_tolerance.py

Prints one line per failed check and last `tolerance self-test: N passed, M failed`; exit 0
only if every check passed.
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "ops"), os.path.join(HERE, "..", "..", "python")]

from edgegrad import tolerance  # noqa: E402
import compare  # noqa: E402
import optest  # noqa: E402

CASES = os.path.join(HERE, "..", "data", "tolerance_cases.json")
WORDS = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "-0": -0.0}


def array(values, dtype, shape):
    """The case's values as an array of numpy dtype `dtype` and shape `shape`."""
    vals = [WORDS[v] if isinstance(v, str) else v for v in values]
    return np.array(vals, dtype=np.dtype(dtype)).reshape(shape)


def main():
    passed = failed = 0

    def expect(what, ok, detail=""):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print(f"FAIL {what}: {detail}")

    with open(CASES, encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    expect("cases file holds the table", len(cases) >= 20, f"{len(cases)} cases")
    for c in cases:
        got = array(c["got"], c["dtype"], c["shape"])
        want = array(c["want"], c.get("want_dtype", c["dtype"]), c.get("want_shape", c["shape"]))
        reason = tolerance.compare(got, want)
        for harness, rule in (("compare.compare", compare.compare),
                              ("optest.allclose_report", optest.allclose_report)):
            expect(f"{c['name']} ({harness})", rule(got, want) == reason,
                   f"{rule(got, want)!r}, edgegrad.tolerance says {reason!r}")
        if c.get("error"):
            try:
                tolerance.check(got, want)
                expect(c["name"], False, "check() accepted a dtype or shape difference")
            except ValueError:
                expect(c["name"], reason is not None, "compare() passed it")
            continue
        v = tolerance.check(got, want, tolerance.RTOL, tolerance.ATOL_SCALE)
        expect(c["name"], (v.num_bad, v.worst) == (c["bad"], c["worst"]),
               f"{v.num_bad} bad, worst {v.worst}; want {c['bad']} bad, worst {c['worst']}")
        expect(c["name"] + " (compare)", (reason is None) == (c["bad"] == 0), f"reason {reason!r}")

    # the fields at the worst element, and a tighter per-call tolerance
    v = tolerance.check(np.float32([1, 2.5, 3]), np.float32([1, 2, 3]))
    expect("result fields", v == (1, 1, 2.5, 2.0, 0.5, 1e-4 * 2 + 1e-5 * 3), repr(v))
    near = np.float32([2.0002]), np.float32([2])
    expect("project tolerance", tolerance.check(*near).num_bad == 0)
    expect("tighter tolerance", tolerance.check(*near, 1e-6, 1e-7).num_bad == 1)
    expect("reason names the worst element", "at [1, 0]" in (tolerance.compare(
        np.float64([[0], [5]]), np.float64([[0], [1]])) or ""))

    b = tolerance.bound(np.float32([np.inf, -3, np.nan]))
    expect("bound: scale over finite want", b[1] == 1e-4 * 3 + 1e-5 * 3 and np.isinf(b[0]), repr(b))
    expect("compare.py's constants", (compare.RTOL, compare.ATOL_SCALE) == (1e-4, 1e-5))

    print(f"tolerance self-test: {passed} passed, {failed} failed")
    return 0 if passed and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
