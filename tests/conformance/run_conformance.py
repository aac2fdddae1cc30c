#!/usr/bin/python3
"""edgegrad conformance suite: export cases with edgegrad.export, run them with the edgegrad
CLI, compare every output with PyTorch's eager result.

    /usr/bin/python3 tests/conformance/run_conformance.py --edgegrad build/edgegrad \
        [--workdir DIR] [--filter SUBSTR] [-j N]

For each case the CLI is called as
    EDGEGRAD run MODEL.json --input NAME=FILE.npy ... --output-dir DIR
and must write DIR/<output>.npy for every graph output. Pass rule: compare.py. Model-zoo and
SGD cases first require `EDGEGRAD info --json MODEL.json` to exit 0 with every op of the graph
listed (the loader rejects an op it lacks); SGD cases run with `--steps N --lr LR` and also
compare DIR/losses.npy (the loss of each step) and DIR/final/<input>.npy (every parameter and
buffer after the last step) with PyTorch's N eager steps.
Prints one line per failure, a breakdown line, and last `conformance: N passed, M failed`.
Exit status 0 only if every case passed and at least one ran; 2 for usage errors.
--edgegrad may be a command line (split like a shell would), e.g. the PyTorch stand-in
"tests/conformance/pyexec_cli.py" used to test this harness.
"""
import argparse
import collections
import json
import multiprocessing
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "python")]

import numpy as np  # noqa: E402

CASE_TIMEOUT_S = 120


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--edgegrad", required=True, help="the edgegrad CLI binary (or command)")
    p.add_argument("--workdir", help="keep case files here (default: a temporary folder, "
                   "removed when every case passes)")
    p.add_argument("--filter", default="", help="run only cases whose name contains SUBSTR")
    p.add_argument("-j", "--jobs", type=int, default=2, help="parallel worker processes")
    return p.parse_args(argv)


def _init_worker():
    import torch
    torch.set_num_threads(1)


def run_case(task):
    """Build, run and compare one case; returns (name, kind, failures, seconds)."""
    case = task[0]
    try:
        return _run_case(*task)
    except Exception as e:  # a harness bug must not take the other cases down
        return case.name, case.kind, [f"harness error: {type(e).__name__}: {e}"], 0.0


def _run_case(case, folder, command):
    import cases
    start = time.monotonic()
    try:
        built = cases.build(case, folder)
    except Exception as e:  # an export failure is a failed case, reported like any other
        return case.name, case.kind, [f"export failed: {type(e).__name__}: {e}"], 0.0
    inputs = _save_inputs(built.inputs, os.path.join(folder, "inputs"))
    _save_reference(built, os.path.join(folder, "reference"))
    out_dir = os.path.join(folder, "out")
    shutil.rmtree(out_dir, ignore_errors=True)
    failures = _check_info(command, built.json_path) if built.info else []
    argv = command + ["run", built.json_path]
    for name, path in inputs:
        argv += ["--input", f"{name}={path}"]
    argv += ["--output-dir", out_dir]
    if built.steps > 1:
        argv += ["--steps", str(built.steps), "--lr", repr(built.lr), "--quiet"]
    failures = failures or _invoke(argv)
    if not failures:
        failures = _compare_outputs(built.reference, out_dir)
        if built.steps > 1:
            failures += _compare_steps(built, out_dir)
    failures = [f"{f} [{built.description}]" for f in failures]
    return case.name, case.kind, failures, time.monotonic() - start


def _check_info(command, json_path):
    """`edgegrad info --json` must accept the graph and list every op it holds."""
    try:
        proc = subprocess.run(command + ["info", "--json", json_path], capture_output=True,
                              text=True, timeout=CASE_TIMEOUT_S)
    except (subprocess.TimeoutExpired, OSError) as e:
        return [f"edgegrad info: {e}"]
    if proc.returncode != 0:
        lines = (proc.stderr.strip() or proc.stdout.strip() or "(no message)").splitlines()
        return [f"edgegrad info exit {proc.returncode}: {lines[-1] if lines else ''}"]
    try:
        listed = set(json.loads(proc.stdout)["ops"])
    except (ValueError, KeyError, TypeError) as e:
        return [f"edgegrad info --json: unreadable output ({e})"]
    with open(json_path, encoding="utf-8") as f:
        traced = {n["target"] for n in json.load(f)["nodes"]}
    missing = sorted(traced - listed)
    return [f"edgegrad info --json does not list ops {missing}"] if missing else []


def _compare_steps(built, out_dir):
    """losses.npy against PyTorch's loss of each step; final/<input>.npy against PyTorch's
    parameters and buffers after the last step."""
    failures = _compare_outputs({"losses": built.losses}, out_dir)
    failures += [f"final {f}"
                 for f in _compare_outputs(built.final, os.path.join(out_dir, "final"))]
    return failures


def _save_inputs(inputs, folder):
    os.makedirs(folder, exist_ok=True)
    saved = []
    for name, array in inputs.items():
        path = os.path.join(folder, name + ".npy")
        np.save(path, np.asarray(array, order="C"))
        saved.append((name, path))
    return saved


def _save_reference(built, folder):
    """PyTorch's values beside the case, laid out like the CLI's output folder (for
    `edgegrad run ... --expect DIR` and for debugging a failure)."""
    _save_inputs(built.reference, folder)
    if built.steps > 1:
        _save_inputs({"losses": built.losses}, folder)
        _save_inputs(built.final, os.path.join(folder, "final"))


def _invoke(argv):
    """Run the CLI; [] on exit 0, else one failure line with its message."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=CASE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return [f"edgegrad timed out after {CASE_TIMEOUT_S} s"]
    except OSError as e:
        return [f"edgegrad could not start: {e}"]
    if proc.returncode == 0:
        return []
    lines = (proc.stderr.strip() or proc.stdout.strip() or "(no message)").splitlines()
    return [f"edgegrad exit {proc.returncode}: {lines[-1] if lines else ''}"]


def _compare_outputs(reference, out_dir):
    import compare
    failures = []
    for name, want in reference.items():
        path = os.path.join(out_dir, name + ".npy")
        if not os.path.exists(path):
            failures.append(f"output {name}: {path} not written")
            continue
        try:
            got = np.load(path)
        except Exception as e:
            failures.append(f"output {name}: unreadable .npy: {e}")
            continue
        reason = compare.compare(got, want)
        if reason:
            failures.append(f"output {name}: {reason}")
    return failures


def main(argv):
    args = parse_args(argv)
    command = shlex.split(args.edgegrad)
    if not command or shutil.which(command[0]) is None and not os.access(command[0], os.X_OK):
        print(f"run_conformance: --edgegrad {args.edgegrad!r} is not an executable",
              file=sys.stderr)
        return 2
    command[0] = os.path.abspath(command[0]) if os.path.exists(command[0]) else command[0]
    import cases
    selected = [c for c in cases.all_cases() if args.filter in c.name]
    workdir = args.workdir or tempfile.mkdtemp(prefix="edgegrad-conformance-")
    tasks = [(c, os.path.join(workdir, c.name), command) for c in selected]
    start = time.monotonic()
    results = _run_all(tasks, max(1, args.jobs))
    return report(results, time.monotonic() - start, workdir, keep=bool(args.workdir))


def _run_all(tasks, jobs):
    if jobs == 1 or len(tasks) <= 1:
        _init_worker()
        return [run_case(t) for t in tasks]
    with multiprocessing.get_context("fork").Pool(jobs, initializer=_init_worker) as pool:
        return list(pool.imap_unordered(run_case, tasks, chunksize=4))


def report(results, seconds, workdir, keep):
    """Print failures, the breakdown and the summary; return the exit status."""
    results.sort(key=lambda r: r[0])
    failed = [r for r in results if r[2]]
    for name, _, failures, _ in failed:
        for line in failures:
            print(f"FAIL {name}: {line}")
    kinds = collections.Counter(kind for _, kind, _, _ in results)
    failed_kinds = collections.Counter(kind for _, kind, _, _ in failed)
    labels = {"convolution_backward": ("convolution_backward sweep", "config"),
              "training_step": ("training steps", None),
              "model_zoo": ("model zoo", "model"),
              "sgd_steps": ("sgd steps", "run")}
    parts = []
    order = list(labels)
    for kind, n in sorted(kinds.items(), key=lambda item: (
            order.index(item[0]) if item[0] in order else len(order), item[0])):
        label, unit = labels.get(kind, (kind, None))
        unit = f" {unit}{'s' if n != 1 else ''}" if unit else ""
        parts.append(f"{label}: {n}{unit} ({failed_kinds[kind]} failed)")
    print("; ".join(parts or ["no cases ran"]) + f"; {seconds:.1f} s")
    if failed or keep:
        print(f"case files: {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"conformance: {len(results) - len(failed)} passed, {len(failed)} failed")
    return 0 if results and not failed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
