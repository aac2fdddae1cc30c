"""What do the cycle counts of QNN's emulated HTP track? (findings: bench/htp_cycles.md)

    .venv/bin/python bench/htp_cycles_probe.py [--soc 57] [--runs 7] [--sessions 3] [--load]

Runs single-op ONNX graphs on QNN's HTP backend (onnxruntime-qnn's x86 emulation, through
tests/htp/qnn_ref.py) with detailed profiling, and prints markdown tables of the per-op cycle
counts QNN reports:
  1. one 3x3 Conv, scaled in channels, spatial size and batch: do cycles follow the FLOPs?
  2. the same work in two forms: MatMul by a constant (QNN FullyConnected) vs. MatMul of two
     graph inputs (QNN MatMul); a 1x1 Conv vs. the same product as a MatMul on [H*W, C];
     Conv alone vs. Conv + Relu (where does a fused pair put its cycles?)
  3. spread: the same graph over --runs runs in each of --sessions sessions, and how the
     cycles of a run follow its wall time (correlation);
  4. with --load: the probe pinned to one CPU core, idle, then sharing that core with a busy
     loop it starts (and kills), then idle again: do cycles count host time?
Each graph gets its own sessions; cycles are those of the op the ONNX node became (its QNN
name, via qnn_ref.onnx_node), not of the layout Transposes the EP adds. FLOPs = 2 * MACs.
Wall time per run is the emulator's, on this host: not a device figure. A probe, not a test:
it asserts nothing. Takes about 20 s on a quiet host.
"""
import argparse
import atexit
import os
import shutil
import subprocess
import statistics
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "htp"))
import qnn_ref  # noqa: E402

RNG = np.random.default_rng(0)
TMP = tempfile.mkdtemp(prefix="htp-cycles-")
atexit.register(shutil.rmtree, TMP, True)


def save(name, nodes, inputs, outputs, inits):
    """Writes the ONNX graph; inputs/outputs are (name, shape) pairs, inits numpy arrays."""
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs]
    vo = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in outputs]
    init = [numpy_helper.from_array(a, n) for n, a in inits.items()]
    model = helper.make_model(helper.make_graph(nodes, name, vi, vo, init),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = os.path.join(TMP, name + ".onnx")
    onnx.save(model, path)
    return path


def conv(n, c, hw, k=3, cout=None, relu=False):
    cout = cout or c
    w = RNG.standard_normal((cout, c, k, k)).astype(np.float32) / np.float32(np.sqrt(c * k * k))
    nodes = [helper.make_node("Conv", ["x", "w"], ["c" if relu else "y"], name="op",
                              pads=[k // 2] * 4)]
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y"], name="relu"))
    name = f"conv_n{n}_c{c}_hw{hw}_k{k}" + ("_relu" if relu else "")
    path = save(name, nodes, [("x", (n, c, hw, hw))], [("y", (n, cout, hw, hw))], {"w": w})
    return path, {"x": (n, c, hw, hw)}, 2 * n * cout * hw * hw * c * k * k


def matmul(m, k, n, const_weight):
    """[m,k] x [k,n]; with a constant weight QNN makes it FullyConnected, else MatMul."""
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="op")
    w = RNG.standard_normal((k, n)).astype(np.float32) / np.float32(np.sqrt(k))
    inits = {"w": w} if const_weight else {}
    inputs = [("x", (m, k))] + ([] if const_weight else [("w", (k, n))])
    name = f"matmul_{m}x{k}x{n}_" + ("const" if const_weight else "input")
    feeds = dict(inputs)
    return save(name, [node], inputs, [("y", (m, n))], inits), feeds, 2 * m * k * n


def measure(graph, soc, runs, sessions=1):
    """[(op cycles, total cycles, wall s)] for every run, sessions x runs, plus the QNN op
    types of the graph."""
    path, shapes, _ = graph
    feeds = {n: RNG.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
    out = []
    for _ in range(sessions):
        sess = qnn_ref.qnn_session(path, soc)
        for _ in range(runs):
            t = time.perf_counter()
            qnn_ref.run(sess, feeds)
            wall = time.perf_counter() - t
            per_op, total = qnn_ref.cycles(sess)
            mine = sum(c for name, c in per_op.items() if qnn_ref.onnx_node(sess, name) == "op")
            fused = {name: c for name, c in per_op.items()
                     if qnn_ref.onnx_node(sess, name) not in (None, "op")}
            out.append((mine, total, wall, fused))
        types = qnn_ref.qnn_graphs(sess)[0]
    return out, types


def stats(values):
    return min(values), statistics.median(values), max(values)


def row(label, graph, results):
    flops = graph[2]
    op = [r[0] for r in results]
    tot = [r[1] for r in results]
    wall = [r[2] for r in results]
    lo, med, hi = stats(op)
    tlo, tmed, _ = stats(tot)
    return (f"| {label} | {flops / 1e6:.1f} | {lo} | {med:.0f} | {hi} | {hi / max(lo, 1):.2f} "
            f"| {lo / (flops / 1e6):.0f} | {tlo} | {min(wall) * 1e3:.0f} |")


HEADER = ("| graph | MFLOP | op cycles min | median | max | max/min | min cycles/MFLOP "
          "| total min | wall ms min |\n|---|---|---|---|---|---|---|---|---|")


def load_section(args):
    """Section 4: the same Conv pinned to one core, idle / beside a busy loop / idle again."""
    print("\n## 4. Host load: the probe pinned to one core, with and without a busy loop there\n")
    print(HEADER)
    cpu = min(os.sched_getaffinity(0))
    saved = os.sched_getaffinity(0)
    g = conv(1, 64, 32)
    os.sched_setaffinity(0, {cpu})
    try:
        for label, busy in [("idle", False), ("busy loop on the same core", True),
                            ("idle again", False)]:
            burner = subprocess.Popen(["sh", "-c", "while :; do :; done"]) if busy else None
            try:
                if burner:
                    os.sched_setaffinity(burner.pid, {cpu})
                results, _ = measure(g, args.soc, args.runs)
            finally:
                if burner:
                    burner.kill()
                    burner.wait()
            print(row(f"Conv 3x3 C64 32x32, {label}", g, results), flush=True)
    finally:
        os.sched_setaffinity(0, saved)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--soc", type=int, default=57, help="QNN soc_model (57: SM8650)")
    ap.add_argument("--runs", type=int, default=7, help="runs per session")
    ap.add_argument("--sessions", type=int, default=3, help="sessions for the spread table")
    ap.add_argument("--load", action="store_true",
                    help="also section 4 (runs a busy loop on one core for a few seconds)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    print(f"QNN HTP emulation, soc_model {args.soc}; {args.runs} runs per session\n")

    print("## 1. One 3x3 Conv, scaled (stride 1, same padding, Cout = Cin)\n")
    print(HEADER)
    for label, g in [
            ("channels 16, 32x32, N1", conv(1, 16, 32)),
            ("channels 32, 32x32, N1", conv(1, 32, 32)),
            ("channels 64, 32x32, N1", conv(1, 64, 32)),
            ("channels 128, 32x32, N1", conv(1, 128, 32)),
            ("spatial 16x16, C32, N1", conv(1, 32, 16)),
            ("spatial 64x64, C32, N1", conv(1, 32, 64)),
            ("spatial 96x96, C32, N1", conv(1, 32, 96)),
            ("batch 2, C32, 32x32", conv(2, 32, 32)),
            ("batch 4, C32, 32x32", conv(4, 32, 32)),
            ("batch 8, C32, 32x32", conv(8, 32, 32))]:
        results, _ = measure(g, args.soc, args.runs)
        print(row(label, g, results), flush=True)

    print("\n## 2. The same work in two forms\n")
    print(HEADER.replace("| graph |", "| graph (QNN op) |"))
    pairs = [("MatMul 256x512x512, weight constant", matmul(256, 512, 512, True)),
             ("MatMul 256x512x512, weight an input", matmul(256, 512, 512, False)),
             ("1x1 Conv C256->256 on 16x16", conv(1, 256, 16, k=1)),
             ("MatMul [256,256]x[256,256] constant", matmul(256, 256, 256, True)),
             ("Conv 3x3 C64 32x32", conv(1, 64, 32)),
             ("Conv 3x3 C64 32x32 + Relu", conv(1, 64, 32, relu=True))]
    fused_notes = []
    for label, g in pairs:
        results, types = measure(g, args.soc, args.runs)
        op_types = "+".join(sorted({types[n] for n in types if n != "Transpose"
                                    and not n.startswith("Transpose_token")}))
        print(row(f"{label} ({op_types})", g, results), flush=True)
        if results[0][3]:
            fused_notes.append(f"{label}: other ONNX nodes' QNN ops, cycles per run: "
                               + ", ".join(str(r[3]) for r in results))
    for note in fused_notes:
        print(f"\n{note}")

    print(f"\n## 3. Spread: {args.sessions} sessions x {args.runs} runs of one graph\n")
    print("| graph | session | op cycles per run | min | max/min |\n|---|---|---|---|---|")
    corr = []
    for label, g in [("Conv 3x3 C32 32x32", conv(1, 32, 32)),
                     ("Conv 3x3 C128 32x32", conv(1, 128, 32))]:
        results, _ = measure(g, args.soc, args.runs, args.sessions)
        corr.append((label, np.corrcoef([r[0] for r in results], [r[2] for r in results])[0, 1]))
        mins = []
        for s in range(args.sessions):
            ops = [r[0] for r in results[s * args.runs:(s + 1) * args.runs]]
            mins.append(min(ops))
            print(f"| {label} | {s + 1} | {' '.join(map(str, ops))} | {min(ops)} "
                  f"| {max(ops) / max(min(ops), 1):.2f} |")
        print(f"| {label} | min per session | {' '.join(map(str, mins))} | {min(mins)} "
              f"| {max(mins) / max(min(mins), 1):.2f} |", flush=True)
    for label, c in corr:
        print(f"\n{label}: correlation of a run's op cycles with its wall time: {c:.2f}")
    if args.load:
        load_section(args)
    print(f"\n(probe took {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
