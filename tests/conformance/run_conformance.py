#!/usr/bin/python3
"""edgegrad conformance suite: export cases with edgegrad.export, run them with the edgegrad
CLI, compare every output with PyTorch's eager result.

    /usr/bin/python3 tests/conformance/run_conformance.py --edgegrad build/edgegrad \
        [--soc SOC[,SOC...]] [--workdir DIR] [--filter SUBSTR] [--filter-not PREFIX] [-j N]

For each case the CLI is called as
    EDGEGRAD run MODEL.json --input NAME=FILE.npy ... --output-dir DIR
and must write DIR/<output>.npy for every graph output. Pass rule: compare.py. Model-zoo,
inference and SGD cases first require `EDGEGRAD info --json MODEL.json` to exit 0 with every op of the graph
listed (the loader rejects an op it lacks); SGD cases run with `--steps N --lr LR` and also
compare DIR/losses.npy (the loss of each step) and DIR/final/<input>.npy (every parameter and
buffer after the last step) with PyTorch's N eager steps.

NPU path (--soc): each case is exported once and then run on every path named: `cpu` (the
default when --soc is absent: the CPU path only) and each SoC, for which the CLI is called as
    EDGEGRAD compile MODEL.json --soc SOC --precision fp32 --report DIR/report-SOC.json -q
    EDGEGRAD run MODEL.json --soc SOC --precision fp32 --input ... --output-dir DIR/out-SOC [...]
(fp32, the precision PyTorch computes in; compiling defaults to the SoC's own, fp16 on every SoC
with a float path). The outputs must pass compare.py exactly as on the CPU path, and the report
must list every node and place it as placement.py computes independently of the C code (format
and gate order; a float node on a SoC without fp16, e.g. SM8350, on the CPU with "float ops need
HTP V69+ with fp16; SM8350 is V68" or, for an op without builder, "no NPU lowering for aten.X";
every aten.convolution_backward on the NPU exactly where its lowering's scope says — for the
sweep computed from the case's configuration and PyTorch's eager call — and otherwise on the CPU
with one reason naming a violated condition). One more check runs over all reports: an op's
reason is "no NPU lowering" on every SoC or on none.
A case counts once per path: prints one line per failure (`FAIL case [path]: ...`), a
breakdown line per path (for a SoC with its NPU node counts, and a line of the tuple-output
ops placed on its NPU), for SM8650 a line on the frozen-backbone training steps, and last
`conformance: N passed, M failed` (N + M = cases x paths, plus the cross-SoC check when a SoC
ran).
Exit status 0 only if every case passed and at least one ran; 2 for usage errors.
--edgegrad may be a command line (split like a shell would), e.g. the PyTorch stand-in
"tests/conformance/pyexec_cli.py" used to test this harness (CPU path only: it has no
`compile`; tests/conformance/test_placement.py tests the report checks).
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
CPU = "cpu"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--edgegrad", required=True, help="the edgegrad CLI binary (or command)")
    p.add_argument("--soc", default=CPU, metavar="SOC[,SOC...]",
                   help="paths to run every case on: 'cpu' (the portable CPU kernels, the "
                   "default) and/or SoC names (compiled for that SoC's NPU, e.g. "
                   "SM8450,SM8650,SM8850,SM8350)")
    p.add_argument("--workdir", help="keep case files here (default: a temporary folder, "
                   "removed when every case passes)")
    p.add_argument("--filter", default="", help="run only cases whose name contains SUBSTR")
    p.add_argument("--filter-not", default=None, metavar="PREFIX",
                   help="leave out cases whose name starts with PREFIX (e.g. conv_: the "
                   "convolution_backward sweep)")
    p.add_argument("-j", "--jobs", type=int, default=2, help="parallel worker processes")
    args = p.parse_args(argv)
    import placement
    paths = []
    for token in args.soc.split(","):
        token = token.strip()
        name = CPU if token.lower() == CPU else token.upper()
        if name != CPU and name not in placement.SOCS:
            p.error(f"--soc {token}: unknown SoC: choose 'cpu' or one of "
                    f"{', '.join(placement.SOCS)}")
        if name not in paths:
            paths.append(name)
    args.paths = paths
    return args


def _init_worker():
    import torch
    torch.set_num_threads(1)


def run_case(task):
    """Build one case, run and compare it on every path; returns one result per path:
    (name, kind, path, failures, seconds, stats)."""
    case, _, _, paths = task
    try:
        return _run_case(*task)
    except Exception as e:  # a harness bug must not take the other cases down
        return [(case.name, case.kind, path, [f"harness error: {type(e).__name__}: {e}"], 0.0,
                 None) for path in paths]


def _run_case(case, folder, command, paths):
    import cases
    start = time.monotonic()
    try:
        built = cases.build(case, folder)
    except Exception as e:  # an export failure is a failed case, reported like any other
        return [(case.name, case.kind, path, [f"export failed: {type(e).__name__}: {e}"], 0.0,
                 None) for path in paths]
    inputs = _save_inputs(built.inputs, os.path.join(folder, "inputs"))
    _save_reference(built, os.path.join(folder, "reference"))
    info_failures = _check_info(command, built.json_path) if built.info else []
    build_seconds = time.monotonic() - start
    results = []
    for path in paths:
        start = time.monotonic()
        failures, stats = list(info_failures), None
        if path != CPU:
            compile_failures, stats = _compile_and_check(command, built, folder, path)
            failures += compile_failures
        failures += _run_and_compare(command, built, inputs, folder, path)
        failures = [f"{f} [{built.description}]" for f in failures]
        results.append((case.name, case.kind, path, failures,
                        build_seconds / len(paths) + time.monotonic() - start, stats))
    return results


def _run_and_compare(command, built, inputs, folder, path):
    """`edgegrad run` on one path, then every output against PyTorch's."""
    out_dir = os.path.join(folder, "out" if path == CPU else f"out-{path}")
    shutil.rmtree(out_dir, ignore_errors=True)
    argv = command + ["run", built.json_path]
    for name, file in inputs:
        argv += ["--input", f"{name}={file}"]
    argv += ["--output-dir", out_dir]
    if path != CPU:
        argv += ["--soc", path, "--precision", "fp32"]
    if built.steps > 1:
        argv += ["--steps", str(built.steps), "--lr", repr(built.lr), "--quiet"]
    failures = _invoke(argv, "edgegrad run")
    if not failures:
        failures = _compare_outputs(built.reference, out_dir)
        if built.steps > 1:
            failures += _compare_steps(built, out_dir)
    return failures


def _compile_and_check(command, built, folder, soc, program=None):
    """`edgegrad compile --soc SOC --report` (and `-o program`, an .egp path, when given): the
    report must exist and place every node as placement.check_report expects. Returns
    (failures, stats or None)."""
    import placement
    report_path = os.path.join(folder, f"report-{soc}.json")
    if os.path.exists(report_path):
        os.remove(report_path)
    argv = command + ["compile", built.json_path, "--soc", soc, "--precision", "fp32", "--report",
                      report_path, "-q"] + (["-o", program] if program else [])
    failures = _invoke(argv, "edgegrad compile")
    if not os.path.exists(report_path):
        return failures + [f"edgegrad compile wrote no report {report_path}"], None
    try:
        with open(report_path, encoding="utf-8") as f:
            report = json.load(f)
        with open(built.json_path, encoding="utf-8") as f:
            graph = json.load(f)
    except ValueError as e:
        return failures + [f"report {report_path}: unreadable JSON ({e})"], None
    placed, stats = placement.check_report(graph, report, soc, built.conv_scopes)
    return failures + placed, stats


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


def _invoke(argv, what="edgegrad"):
    """Run the CLI; [] on exit 0, else one failure line with its message."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=CASE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return [f"{what} timed out after {CASE_TIMEOUT_S} s"]
    except OSError as e:
        return [f"{what} could not start: {e}"]
    if proc.returncode == 0:
        return []
    lines = (proc.stderr.strip() or proc.stdout.strip() or "(no message)").splitlines()
    return [f"{what} exit {proc.returncode}: {lines[-1] if lines else ''}"]


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
    selected = [c for c in cases.all_cases() if args.filter in c.name and
                not (args.filter_not and c.name.startswith(args.filter_not))]
    workdir = args.workdir or tempfile.mkdtemp(prefix="edgegrad-conformance-")
    tasks = [(c, os.path.join(workdir, c.name), command, args.paths) for c in selected]
    start = time.monotonic()
    results = [r for rs in _run_all(tasks, max(1, args.jobs)) for r in rs]
    return report(results, args.paths, time.monotonic() - start, workdir,
                  keep=bool(args.workdir))


def _run_all(tasks, jobs):
    if jobs == 1 or len(tasks) <= 1:
        _init_worker()
        return [run_case(t) for t in tasks]
    with multiprocessing.get_context("fork").Pool(jobs, initializer=_init_worker) as pool:
        return list(pool.imap_unordered(run_case, tasks, chunksize=4))


LABELS = {"convolution_backward": ("convolution_backward sweep", "config"),
          "training_step": ("training steps", None),
          "model_zoo": ("model zoo", "model"),
          "inference": ("inference", "model"),
          "sgd_steps": ("sgd steps", "run")}

# The tuple-producing ops of the zoo whose NPU placement the summary shows per SoC.
TUPLE_OPS = ["aten.native_batch_norm.default", "aten.native_batch_norm_backward.default",
             "aten.max_pool2d_with_indices.default", "aten.native_group_norm.default",
             "aten.native_group_norm_backward.default", "aten.adaptive_max_pool2d.default",
             "aten.convolution_backward.default"]


def report(results, paths, seconds, workdir, keep):
    """Print failures, a breakdown per path and the summary; return the exit status."""
    import placement
    results.sort(key=lambda r: (r[0], paths.index(r[2])))
    socs = [p for p in paths if p != CPU]
    if socs:
        triples = [(path, target, reason) for _, _, path, _, _, stats in results if stats
                   for target, reason in stats["reasons"]]
        consistency = placement.builder_consistency(triples)
        results.append(("cross-SoC builder consistency", "consistency", "all", consistency,
                        0.0, None))
    failed = [r for r in results if r[3]]
    for name, _, path, failures, _, _ in failed:
        for line in failures:
            print(f"FAIL {name} [{path}]: {line}")
    for path in paths:
        print(_path_line(path, [r for r in results if r[2] == path]))
        if path != CPU:
            print(_tuple_ops_line(path, [r for r in results if r[2] == path]))
    if "SM8650" in socs:
        print(_frozen_backbone_line([r for r in results if r[2] == "SM8650"]))
    n_cases = len({r[0] for r in results if r[2] != "all"})
    n_sweep = len({r[0] for r in results if r[1] == "convolution_backward"})
    print(f"{n_cases} cases x {len(paths)} path{'s' if len(paths) != 1 else ''} "
          f"({', '.join(paths)}); every path runs all {n_sweep} selected convolution_backward "
          f"sweep configs (no subset); {seconds:.1f} s")
    if failed or keep:
        print(f"case files: {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"conformance: {len(results) - len(failed)} passed, {len(failed)} failed")
    return 0 if results and not failed else 1


def _path_line(path, results):
    """One path's breakdown: per kind counts; for a SoC also the placement counts."""
    kinds = collections.Counter(r[1] for r in results)
    failed_kinds = collections.Counter(r[1] for r in results if r[3])
    parts = []
    order = list(LABELS)
    for kind, n in sorted(kinds.items(), key=lambda item: (
            order.index(item[0]) if item[0] in order else len(order), item[0])):
        label, unit = LABELS.get(kind, (kind, None))
        unit = f" {unit}{'s' if n != 1 else ''}" if unit else ""
        parts.append(f"{label}: {n}{unit} ({failed_kinds[kind]} failed)")
    n_failed = sum(1 for r in results if r[3])
    line = f"{path}: {len(results) - n_failed} passed, {n_failed} failed; " + "; ".join(
        parts or ["no cases ran"])
    stats = [r[5] for r in results if r[5]]
    if path != CPU and stats:
        total = lambda key: sum(s[key] for s in stats)
        line += (f"; NPU nodes {total('npu')}/{total('nodes')}; convolution_backward on the "
                 f"NPU {total('conv_bwd_npu')}/{total('conv_bwd')} (in scope: "
                 f"{total('conv_bwd_in_scope')})")
    return line


def _tuple_ops_line(path, results):
    counts = collections.defaultdict(lambda: [0, 0])
    for r in results:
        if r[5] and r[1] != "convolution_backward":
            for target, (npu, cpu) in r[5]["by_target"].items():
                counts[target][0] += npu
                counts[target][1] += cpu
    parts = [f"{placement_name(t)} {counts[t][0]}/{sum(counts[t])}" for t in TUPLE_OPS
             if t in counts]
    return f"{path}: tuple-output ops on the NPU (all cases but the sweep): " + (
        ", ".join(parts) or "none in the cases run")


def placement_name(target):
    import placement
    return placement.display_name(target)


def _frozen_backbone_line(results):
    """SM8650: the frozen-backbone steps (a convolution_backward with a static weight)."""
    parts = []
    for name, kind, _, failures, _, stats in results:
        if kind == "convolution_backward" or not stats or not stats["conv_bwd"]:
            continue
        if name not in FROZEN_BACKBONE:
            continue
        note = (f", {stats['conv_bwd_unread_gw']} with an unread grad_weight PyTorch returns "
                "unasked" if stats["conv_bwd_unread_gw"] else "")
        parts.append(f"{name} {stats['conv_bwd_npu']}/{stats['conv_bwd']} "
                     f"(in scope {stats['conv_bwd_in_scope']}{note})"
                     f"{' FAILED' if failures else ''}")
    return "SM8650 frozen-backbone steps, convolution_backward on the NPU: " + (
        "; ".join(parts) or "none in the cases run")


# The training steps that train biases / heads / BN affine over frozen conv weights.
FROZEN_BACKBONE = ["train_strided_frozen_convs", "zoo_finetune_bias_only",
                   "zoo_finetune_bn_affine", "zoo_finetune_head", "zoo_finetune_frozen_bn_stats"]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
