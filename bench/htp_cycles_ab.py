"""Emulated HTP cycles per training step of several edgegrad builds, measured side by side.

    .venv/bin/python bench/htp_cycles_ab.py --build first=/tmp/eg_87df3d3 --build main=/tmp/eg_main \\
        --build new=. [--families squeezenet1_1,resnet18,mobilenet_v2] [--regime full]
        [--runs 5] [--soc SM8650] [--size 64] [--prepare fast] [--workdir DIR] [--json OUT.json]

Each --build NAME=REPO is an edgegrad checkout with its CLI built in REPO/build/edgegrad (a git
worktree of another commit, e.g. `git worktree add /tmp/eg_87df3d3 87df3d3` and a Release
build there). For each family (tests/models/run_models.py's, under the regime: full, head or
bias) and each build, the training step is exported with THAT checkout's own Python package and
run_models.py (its build() and trainable(): batch 2 of 3 x SIZE x SIZE, as `make htp-check`
builds the families), compiled for --soc (`edgegrad compile`), run once in fp32 with
`edgegrad run --dump-partitions` (the partitions' real inputs) and its NPU partitions written
as ONNX (`edgegrad export-onnx`). A QNN HTP session (tests/htp/qnn_ref.py, the SoC's QNN
soc_model, QNN's --prepare effort, detailed profiling) is built per partition, and then the
builds' steps are run INTERLEAVED: --runs rounds, each running every build's partitions once
(the builds' order rotated each round), so that the host's load, which moves the emulator's
counts (bench/htp_cycles.md), falls on every build alike. Per partition the run with the fewest
cycles counts; a step's cycles are its partitions' minima summed.

Prints, per family, a Markdown table: the builds side by side (partitions, QNN ops built,
cycles per step, ratio to the first build; and each QNN op's own minimum over the runs summed,
without the partitions' input/output staging: a steadier statistic under load, as every op
gets its luckiest run, where the cheapest run's per-op counts of unchanged ops still move 1.5x
between builds on a loaded host) and the cycles per QNN op type, and per role of
the ops (roles(): the ONNX node name edgegrad's lowering gives each op says what it is: the
layout Transposes of trainable filters, of the weight gradient's operands and result, the
forward/input-gradient/weight-gradient convolutions, batch-norm, elementwise, ...).
--json writes every partition's numbers (by op type, by role, each op's cycles).

What the numbers are: the time QNN's x86 emulation of the HTP took on this host, not NPU time
(bench/htp_cycles.md); compare builds within one run only. Needs onnxruntime-qnn, onnx and
PyTorch 2 (scripts/install-deps.sh test). The machine load (1-minute load average) before and
after is printed with the tables.
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "htp"))

# Exports one family's training step with the checkout's own package; argv: repo, family,
# regime, size, folder. Writes folder/model.json (via export_training_step), folder/inputs/*.npy
# and prints the --input arguments as JSON.
EXPORT_CHILD = r"""
import json, os, sys
repo, family, regime, size, folder = sys.argv[1:]
for sub in ("python", "tests/models", "tests/conformance"):
    sys.path.insert(0, os.path.join(repo, sub))
import numpy as np
import torch
import torch.nn.functional as F
import run_models as rm
from edgegrad import export_training_step
model, x, y = rm.build(family, int(size))
try:
    train = rm.trainable(model, regime, family)
except TypeError:  # an older run_models.py: trainable(model, regime)
    train = rm.trainable(model, regime)
result = export_training_step(model, F.cross_entropy, (x, y), os.path.join(folder, "model"),
                              trainable=train)
known = {"input": x, "target": y, **result.draws}
known.update({rm._flat(n): p for n, p in model.named_parameters()})
known.update({rm._flat(n): b for n, b in model.named_buffers()})
in_dir = os.path.join(folder, "inputs")
os.makedirs(in_dir, exist_ok=True)
argv = []
for e in result.graph["inputs"]:
    path = os.path.join(in_dir, e["name"] + ".npy")
    np.save(path, np.asarray(known[e["name"]].detach().numpy(), order="C"))
    argv += ["--input", e["name"] + "=" + path]
print(json.dumps({"json": result.json_path, "argv": argv}))
"""

# A QNN op's role, from its ONNX node (named after the IR node it lowers, plus "_op<k>" for a
# node's further ops: convolution_backward_3_op2) and its output tensor (named after the IR
# value it defines, or the builder's temporary: convolution_3_w_hwio, ..._x_chwn, ..._dw_conv).
WEIGHT_LAYOUT = re.compile(r"_(w_hwio|w_tconv|w_dw|w_hwoi)$")
GRAD_W_OPERAND = re.compile(r"_(x_chwn|x_moved|x_grouped|gy_hwnc|gy_nhwc|gy_cnhw|x_nhwc)$")


def ir_op(node_name):
    """The IR op of an ONNX node name: convolution_backward_3_op2 -> convolution_backward."""
    base = re.sub(r"(_op\d+)?(/.*)?$", "", node_name)
    return re.sub(r"(_\d+)+$", "", base)


def role(op_type, node_name, out_name):
    op = ir_op(node_name)
    if op_type == "Transpose":
        if WEIGHT_LAYOUT.search(out_name):
            return "Transpose: trainable filter to QNN layout"
        if GRAD_W_OPERAND.search(out_name):
            return "Transpose: weight-gradient operands (input, grad_output)"
        if op == "convolution_backward":
            return "Transpose: weight-gradient result to OIHW"
        if "weight" in op:  # an older export: <param>_transpose<k>
            return "Transpose: trainable filter to QNN layout"
        return f"Transpose: other ({op})"
    if op == "convolution_backward":
        if re.search(r"_dw_(conv|tap)", out_name):
            return f"{op_type}: weight gradient"
        if op_type in ("TransposeConv2d", "Conv2d", "DepthWiseConv2d"):
            return f"{op_type}: input gradient"
        if op_type == "ReduceSum":
            return "ReduceSum: bias gradient"
    return f"{op_type}: {op}"


def sh(argv, **kw):
    proc = subprocess.run(argv, capture_output=True, text=True, **kw)
    if proc.returncode:
        lines = (proc.stderr.strip() or proc.stdout.strip() or "(no message)").splitlines()
        raise RuntimeError(f"{' '.join(argv[:3])[:80]}: exit {proc.returncode}: {lines[-1]}")
    return proc.stdout


def prepare_case(build, repo, family, regime, args, soc_model):
    """Exports, compiles, runs (dump) and writes ONNX of one build's step; returns a list of
    (partition name, onnx path, feeds)."""
    import numpy as np
    import onnx
    folder = os.path.join(args.workdir, family, build)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    exe = os.path.join(repo, "build", "edgegrad")
    out = json.loads(sh([sys.executable, "-c", EXPORT_CHILD, repo, family, regime,
                         str(args.size), folder]).strip().splitlines()[-1])
    egp = os.path.join(folder, "program.egp")
    sh([exe, "compile", out["json"], "--soc", args.soc, "-o", egp, "-q"])
    dump, onnx_dir = os.path.join(folder, "dump32"), os.path.join(folder, "onnx")
    sh([exe, "run", egp, *out["argv"], "--dump-partitions", dump, "-q", "--precision", "fp32",
        "--output-dir", os.path.join(folder, "out32")])
    sh([exe, "export-onnx", egp, onnx_dir])
    info = json.loads(sh([exe, "inspect", egp, "--json"]))
    parts = []
    for p in info["partitions"]:
        path = os.path.join(onnx_dir, p["name"] + ".onnx")
        model = onnx.load(path, load_external_data=False)
        feeds = {i.name: np.load(os.path.join(dump, p["name"], i.name + ".npy"))
                 for i in model.graph.input}
        parts.append((p["name"], path, feeds))
    return parts


def node_outputs(model):
    """{ONNX node name: the edgegrad tensor it yields}: its output, or where that is a helper of
    the ONNX form ("<node>/out_nchw", a Conv's NCHW result), the tensor the helper Transposes
    after it yield."""
    nodes = model.graph.node
    consumers = collections.defaultdict(list)
    for n in nodes:
        for i in n.input:
            consumers[i].append(n)
    out = {}
    for n in nodes:
        name = n.output[0] if n.output else ""
        for _ in range(3):
            if "/" not in name or len(consumers[name]) != 1:
                break
            name = consumers[name][0].output[0]
        out[n.name] = name
    return out


def summarize(qnn_ref, session, runs):
    """The cheapest run's {total, by_type, by_role, ops} of one partition."""
    import onnx
    ops, total = min(runs, key=lambda r: r[1])
    outputs = node_outputs(onnx.load(session.onnx_path, load_external_data=False))
    types = {}
    for graph in qnn_ref.qnn_graphs(session):
        types.update(graph)
    by_type, by_role = collections.Counter(), collections.Counter()
    for name, c in ops.items():
        t = types.get(name, "(unnamed)")
        by_type[t] += c
        onnx_name = qnn_ref.onnx_node(session, name) or name
        by_role[role(t, onnx_name, outputs.get(onnx_name, ""))] += c
    op_min = {}
    for run_ops, _ in runs:
        for name, c in run_ops.items():
            op_min[name] = min(op_min.get(name, c), c)
    return {"total": total, "runs": [r[1] for r in runs], "qnn_ops": len(types),
            "ops_min_sum": sum(op_min.values()),
            "by_type": dict(by_type), "by_role": dict(by_role),
            "ops": {name: [types.get(name, "(unnamed)"), c] for name, c in ops.items()}}


def measure_family(qnn_ref, family, builds, args, soc_model):
    sessions = {}
    for name, repo in builds:
        start = time.monotonic()
        parts = prepare_case(name, repo, family, args.regime, args, soc_model)
        sessions[name] = [(p, qnn_ref.qnn_session(path, soc_model, prepare=args.prepare), feeds)
                          for p, path, feeds in parts]
        print(f"{family} {name}: {len(parts)} partitions prepared in "
              f"{time.monotonic() - start:.0f} s", flush=True)
    order = [n for n, _ in builds]
    for r in range(args.runs):
        for name in order[r % len(order):] + order[:r % len(order)]:
            for _, session, feeds in sessions[name]:
                qnn_ref.run(session, feeds)
    result = {}
    for name, parts in sessions.items():
        result[name] = {p: summarize(qnn_ref, s, qnn_ref.cycles_runs(s)) for p, s, _ in parts}
    return result


def step_totals(parts):
    total = sum(p["total"] for p in parts.values())
    by_type, by_role = collections.Counter(), collections.Counter()
    for p in parts.values():
        by_type.update(p["by_type"])
        by_role.update(p["by_role"])
    return total, by_type, by_role


def print_family(family, regime, result, builds):
    names = [n for n, _ in builds]
    steps = {n: step_totals(result[n]) for n in names}
    base = steps[names[0]][0]
    print(f"\n### {family}, {regime} training\n")
    print("| | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    print("| NPU partitions | " + " | ".join(str(len(result[n])) for n in names) + " |")
    print("| QNN ops built | " + " | ".join(str(sum(p["qnn_ops"] for p in result[n].values()))
                                          for n in names) + " |")
    print("| HTP cycles per step (M) | " + " | ".join(f"{steps[n][0] / 1e6:.1f}" for n in names)
          + " |")
    print(f"| vs {names[0]} | " + " | ".join(f"{steps[n][0] / base:.3f}" for n in names) + " |")
    mins = {n: sum(p["ops_min_sum"] for p in result[n].values()) for n in names}
    print("| ops' own minima summed (M) | " + " | ".join(f"{mins[n] / 1e6:.1f}" for n in names) +
          " |")
    print(f"| vs {names[0]} | " + " | ".join(f"{mins[n] / mins[names[0]]:.3f}" for n in names) +
          " |")
    for key, idx in (("op type", 1), ("role", 2)):
        rows = sorted({k for n in names for k in steps[n][idx]},
                      key=lambda k: -max(steps[n][idx].get(k, 0) for n in names))
        for k in rows:
            print(f"| {key}: {k} (M) | " + " | ".join(
                f"{steps[n][idx].get(k, 0) / 1e6:.1f}" for n in names) + " |")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", action="append", required=True, metavar="NAME=REPO",
                   help="an edgegrad checkout with build/edgegrad (repeat; the first is the "
                   "baseline of the ratios)")
    p.add_argument("--families", default="squeezenet1_1,resnet18,mobilenet_v2")
    p.add_argument("--regime", default="full", choices=("full", "head", "bias"))
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--soc", default="SM8650")
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--prepare", default="fast", choices=("fast", "default"))
    p.add_argument("--workdir", default="/tmp/htp-cycles-ab")
    p.add_argument("--json", help="write every partition's numbers here")
    args = p.parse_args(argv)
    builds = []
    for b in args.build:
        name, sep, repo = b.partition("=")
        if not sep or not os.path.isfile(os.path.join(repo, "build", "edgegrad")):
            p.error(f"--build {b}: must be NAME=REPO with REPO/build/edgegrad built")
        builds.append((name, os.path.abspath(repo)))
    import qnn_ref
    exe = os.path.join(builds[-1][1], "build", "edgegrad")
    out = sh([exe, "targets"])
    m = re.search(rf"^{args.soc}\s.*\s(?:yes|no)\s+(\d+)\s", out, re.M)
    if not m:
        p.error(f"--soc {args.soc}: no QNN soc_model in `edgegrad targets`")
    soc_model = int(m.group(1))
    load_before = os.getloadavg()[0]
    results = {}
    for family in args.families.split(","):
        results[family] = measure_family(qnn_ref, family, builds, args, soc_model)
        print_family(family, args.regime, results[family], builds)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"builds": dict(builds), "soc": args.soc, "runs": args.runs,
                           "prepare": args.prepare, "results": results}, f, indent=1)
    print(f"\n{args.soc} (soc_model {soc_model}), batch 2 of 3x{args.size}x{args.size}, QNN "
          f"{args.prepare} preparation, min of {args.runs} interleaved runs per partition; load "
          f"average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after; emulated cycles, "
          "not NPU time (bench/htp_cycles.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
