"""What the Python runtime's tests (tests/python/test_*.py) share: their command line, the loop
that runs each case in a folder of its own and prints one line for it, and the check that a
call raises the edgegrad.Error subclass of its status with the library's one-line message.

A case is a function ``(args, work) -> None | str``: None when it passes, else why not; an
exception it raises fails it with its type and message.
"""
import argparse
import os
import shutil
import sys

import edgegrad


def main(doc, label, jobs, required=()):
    """Parses --edgegrad, --workdir, --filter and each flag of ``required``; runs every job
    ``(name, case)`` whose name holds the filter in WORKDIR/<name>; prints a line per case and
    `<label>: N passed, M failed`, and exits 1 on any failure (or when none ran)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--edgegrad", required=True)
    for flag in required:
        ap.add_argument(flag, required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--filter", default="")
    a = ap.parse_args()
    a.edgegrad = os.path.abspath(a.edgegrad)
    shutil.rmtree(a.workdir, ignore_errors=True)
    passed = failed = 0
    for name, job in jobs:
        if a.filter not in name:
            continue
        work = os.path.join(a.workdir, name.replace("/", "_"))
        os.makedirs(work)
        try:
            why = job(a, work)
        except Exception as e:  # a harness error is a failure, with its reason
            why = f"{type(e).__name__}: {e}"
        print(f"{'ok  ' if why is None else 'FAIL'} {name}{'' if why is None else ': ' + why}",
              flush=True)
        passed += why is None
        failed += why is not None
    print(f"{label}: {passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


def raises(fn, cls, needle):
    """None when ``fn()`` raises exactly ``cls`` (an edgegrad.Error subclass) with its status
    and a one-line message holding ``needle``; else what happened instead."""
    try:
        fn()
    except edgegrad.Error as e:
        msg = str(e)
        if type(e) is not cls or e.status != cls.status:
            return f"{type(e).__name__} (status {e.status!r}), want {cls.__name__}: {msg}"
        if needle not in msg or "\n" in msg:
            return f"{cls.__name__} message {msg!r}: want one line with {needle!r}"
        return None
    return f"no exception, want {cls.__name__} with {needle!r}"
