#!/usr/bin/python3
"""Exports the conformance zoo's steps (tests/conformance/zoo.py: ZOO, INFERENCE, SGD_RUNS, with
the seeds run_conformance.py gives them) into one folder, DIR/<case>.json and its weights, for
the test backends' ctests (backends/<name>@zoo run test_backend_<name> on DIR).

    /usr/bin/python3 tests/backends/export_zoo.py DIR

DIR is emptied first (no step of an earlier run is left over). Exit status 0 only if every
case exported; prints one line per failure and the count.
"""
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CONFORMANCE = os.path.join(HERE, "..", "conformance")
sys.path[:0] = [CONFORMANCE, os.path.join(HERE, "..", "..", "python")]

import cases  # noqa: E402
import zoo  # noqa: E402


def main(argv):
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[0]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    start = time.monotonic()
    builders = {**zoo.ZOO, **zoo.INFERENCE, **zoo.SGD_RUNS}
    failed = 0
    for name, build in builders.items():
        try:
            build(os.path.join(out, name), cases._seed(name))
        except Exception as e:  # a builder's check failed: this case is missing from DIR
            print(f"FAIL {name}: export failed: {type(e).__name__}: {e}")
            failed += 1
    print(f"export_zoo: {len(builders) - failed} of {len(builders)} zoo steps exported to {out} "
          f"in {time.monotonic() - start:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
