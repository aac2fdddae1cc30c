"""`make htp-check`: every NPU partition edgegrad compiles, checked on Qualcomm's own HTP stack.

    PYTHONPATH=python .venv/bin/python tests/htp/htp_check.py --edgegrad build/edgegrad \\
        [--workdir DIR] [--sets conformance,families] [--socs SM8650,SM8550,SM8750]
        [--family-socs SM8650] [--families resnet18,...] [--regimes full,head,bias]
        [--family-prepare fast|default] [--default-budget 1800] [--size 64] [--filter SUBSTR] [-j 2]
        [--json FILE [--resume]]

Cases: ``conformance`` is every case of the PyTorch conformance run (tests/conformance/cases.py:
the convolution_backward sweep, the training steps, the model zoo, the frozen-model inference
graphs, the SGD runs), built as that run builds them; ``families`` is the twelve torchvision
families of ``make models`` x full/head/bias, built as tests/models/run_models.py builds them
at batch 2 of 3 x SIZE x SIZE (64, as there: smaller inputs leave the last stages 1x1, where a
batch norm over two values makes every output chaotic). Each case is compiled for each SoC (--socs for the
conformance cases; --family-socs for the families, whose large partitions cost QNN's graph
compiler about a minute each even with its fast preparation, --family-prepare fast, and up to
an hour at its default effort; a partition failing under fast preparation is checked again at
the default effort, whose verdict counts: the fast one miscomputes some graphs), run twice by ``edgegrad run --dump-partitions`` (fp32, and
``--precision fp16``), and each NPU partition written as ONNX by ``edgegrad export-onnx``. Then,
per partition, with QNN HTP's session for the SoC's soc_model (ONNX Runtime's CPU fallback
disabled) and ONNX Runtime's CPU session (the exact fp32 function of the ONNX graph):

  export   the ONNX graph computes what edgegrad's fp32 executor computed: CPU(in32) against
           edgegrad's fp32 outputs, err <= 1e-4 (fp32 summation order) + 3 * cond32, the
           conditioning: how far the function moves when its inputs move by one fp32 rounding,
           or every op's output by one fp32 ulp (the largest of three draws);
  accepted QNN HTP builds the whole partition (a refusal fails the partition, naming QNN's
           message);
  agree    on the fp16 run's inputs, QNN HTP is as close to the fp32 function as edgegrad's
           fp16 mode: err(QNN(in16), CPU(in16)) <= 4 * err16 + 2^-10, where err16 =
           err(eg16, CPU(in16)) (4: ElementWiseRsqrt's ONNX stand-in rounds twice, see
           AGREE_FACTOR); and on the fp32 run's inputs QNN HTP agrees with edgegrad's fp32
           outputs within the HTP's own rounding: err(QNN(in32), eg32) <= 4 * max(err16,
           err(QNN(in16), CPU(in16)), err(CPU(fp16(in32)), CPU(in32))) + 2^-10 (the last: what
           rounding the fp32 run's inputs to fp16, as the HTP takes them in, moves);
  fp16     edgegrad's fp16 mode is as close to the fp32 function as QNN HTP is:
           err16 <= 3 * err(QNN(in16), CPU(in16)) + 2^-11; and edgegrad's fp16 mode differs
           from the fp32 function somewhere (the emulation is real).
  flips    where QNN fails the agree rules, each float comparison QNN HTP decided the other way
           than the fp32 function (a ReLU mask, a max pool's tap) is imposed on the fp32
           function and QNN judged against that instead, if every such decision sits at a near
           tie: its operands closer than QNN's own error on them, and that error at most 2^-6
           of the partition's magnitude M (imposed_decisions); the row says how many were
           imposed.
  In the fp16 rules each error is taken as at least cond16, the partition's conditioning at
  fp16: how far the fp32 function moves on in16 moved by up to one fp16 rounding (relative
  2^-11), and with every op's output moved so as well (the HTP rounds each op's output; the
  largest of three draws): a chaotic output (a batch norm over two values) or one that
  cancels to rounding noise (a bias's gradient under a normalization) differs between any two
  fp16 implementations by about that much.

err(a, b) = max|a - b| / max(max|b|, floor) per float output (the worst output counts), the
floor M * 2^-12 in fp32 and M * 2^-10 in fp16, M the partition's largest boundary value: an
output that cancels to rounding noise (a bias's gradient under a normalization) is judged
against the partition's magnitude, as fp16 cannot resolve it. Integer and boolean outputs
compare exactly. QNN's emulated cycles of each partition's fp32 run are recorded (min over the
two runs: bench/htp_cycles.md says why they measure the emulating host, not the NPU).

Prints one line per failing partition, a table per QNN op kind (partitions holding it,
accepted, worst agreement ratio) and per SoC, and the summary line ``htp-check: N passed,
M failed`` (partitions); --json writes every partition's row. Exit 0 only if all passed.
"""
import argparse
import collections
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
for sub in ("tests/htp", "tests/conformance", "tests/models", "python"):
    sys.path.insert(0, os.path.join(ROOT, sub))
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402

EXPORT_TOL = 1e-4
# 4, not 3, in the direction QNN vs edgegrad: ElementWiseRsqrt (every batch norm) has no ONNX
# form, and QNN HTP computes its stand-in Sqrt + Reciprocal with two roundings (measured: up to
# 1.70 fp16 ulps, mean 0.47, against 0.50 and 0.25 for rsqrt rounded once, as edgegrad's fp16
# mode computes the op it emits); through a small batch's batch norm that was 3.5x
AGREE_FACTOR, AGREE_FLOOR = 4.0, 2.0 ** -10
FP16_FACTOR, FP16_FLOOR = 3.0, 2.0 ** -11
ROUNDING_DRAWS = 3
EXPORT_DRAWS = 9  # more draws where the export check fails with ROUNDING_DRAWS
RUN_TIMEOUT_S = 900


def soc_models(edgegrad):
    """{soc: soc_model} from `edgegrad targets` (the SoC table is edgegrad's, not ours)."""
    import re
    out = subprocess.run([edgegrad, "targets"], capture_output=True, text=True, check=True).stdout
    rows = [re.match(r"^(\S+)\s.*\s(?:yes|no)\s+(\d+)\s", line) for line in out.splitlines()[1:]]
    return {m.group(1): int(m.group(2)) for m in rows if m}


# ---- cases ---------------------------------------------------------------------------------

def conformance_cases(filt):
    import cases
    return [("conformance", c.name, c) for c in cases.all_cases() if filt in c.name]


def family_cases(families, regimes, filt):
    return [("families", f"{f}_{r}", (f, r)) for f in families for r in regimes
            if filt in f"{f}_{r}"]


def build_case(kind, spec, folder):
    """(graph json path, {input name: array}) of one case."""
    if kind == "conformance":
        import cases
        built = cases.build(spec, folder)
        return built.json_path, built.inputs
    import torch
    import torch.nn.functional as F
    import run_models as rm
    from edgegrad import export_training_step
    family, regime = spec
    model, x, y = rm.build(family, ARGS.size)
    train = rm.trainable(model, regime, family)
    result = export_training_step(model, F.cross_entropy, (x, y), os.path.join(folder, "model"),
                                  trainable=train)
    known = {"input": x, "target": y, **result.draws}
    known.update({rm._flat(n): p for n, p in model.named_parameters()})
    known.update({rm._flat(n): b for n, b in model.named_buffers()})
    torch.set_num_threads(1)
    return result.json_path, {e["name"]: known[e["name"]].detach().numpy()
                              for e in result.graph["inputs"]}


# ---- one case ------------------------------------------------------------------------------

def sh(argv):
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if proc.returncode:
        lines = (proc.stderr.strip() or proc.stdout.strip() or "(no message)").splitlines()
        raise RuntimeError(f"{' '.join(os.path.basename(a) for a in argv[:2])} exit "
                           f"{proc.returncode}: {lines[-1]}")
    return proc.stdout


def err(got, want, floor=0.0):
    """The comparison of one output: (error, kind). Floats: max|d| / max(max|want|, floor)
    (inf when the non-finite positions differ); others: the share of differing elements."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return float("inf"), "shape"
    if want.dtype.kind != "f":
        return float(np.mean(got != want)) if want.size else 0.0, "exact"
    g, w = got.astype(np.float64), want.astype(np.float64)
    fin = np.isfinite(w)
    if not np.array_equal(fin, np.isfinite(g)) or not np.array_equal(g[~fin], w[~fin]):
        return float("inf"), "float"
    if not fin.any():
        return 0.0, "float"
    scale = max(float(np.max(np.abs(w[fin]))), floor)
    d = float(np.max(np.abs(g[fin] - w[fin])))
    return (d / scale if scale > 0 else (0.0 if d == 0 else float("inf"))), "float"


def magnitude(*arrays):
    """The largest finite |value| of the float arrays (a partition's scale)."""
    m = 0.0
    for a in arrays:
        a = np.asarray(a)
        if a.dtype.kind == "f" and a.size:
            fin = a[np.isfinite(a)]
            m = max(m, float(np.max(np.abs(fin)))) if fin.size else m
    return m


def rounded_runs(onnx_path, feeds, rel, seeds=range(ROUNDING_DRAWS)):
    """The ONNX graph's outputs on `feeds` with every op's output moved by up to `rel`
    (rounding_variant), for each seed (ROUNDING_DRAWS of them by default)."""
    import qnn_ref
    runs = []
    for seed in seeds:
        variant = rounding_variant(onnx_path, os.path.splitext(onnx_path)[0] + ".rounded.onnx",
                                   rel, seed)
        runs.append(qnn_ref.run(qnn_ref.cpu_session(variant), feeds))
        os.remove(variant)
    return runs


def rounding_variant(onnx_path, out_path, rel, seed):
    """The ONNX graph with every float op output moved by up to `rel` relative (uniform, each
    element its own draw, fixed seeds), written to out_path: the function as an implementation
    that rounds each op's output computes it. QNN HTP rounds every op's output to fp16 (a
    chain of Mul/Sub/Mul matches fp16 rounding after each op in 91-100 % of the elements and
    rounding once at the end in 61-74 %), so an output that cancels to noise (a bias's
    gradient under a normalization) moves by the rounding noise of everything summed into it,
    which moving only the partition's inputs does not show."""
    import onnx
    from onnx import TensorProto, helper
    model = onnx.load(onnx_path)
    g = model.graph
    float_names = {v.name for v in list(g.value_info) + list(g.output)
                   if v.type.tensor_type.elem_type == TensorProto.FLOAT}
    nodes = []
    for k, node in enumerate(g.node):
        moved = [o for o in node.output if o in float_names]
        raw = {o: o + "/unrounded" for o in moved}
        node.output[:] = [raw.get(o, o) for o in node.output]
        nodes.append(node)
        for j, o in enumerate(moved):
            # x + x * r (x * (1 + r) would not move x at all for |r| below fp32's 2^-24)
            nodes += [helper.make_node("RandomUniformLike", [raw[o]], [o + "/r"], low=-rel,
                                       high=rel, seed=float(seed * 100003 + k * 7 + j)),
                      helper.make_node("Mul", [raw[o], o + "/r"], [o + "/xr"]),
                      helper.make_node("Add", [raw[o], o + "/xr"], [o])]
    del g.node[:]
    g.node.extend(nodes)
    onnx.save(model, out_path)
    return out_path


DECISIONS = ("Less", "LessOrEqual", "Greater", "GreaterOrEqual")
FLIP_ERROR = 2.0 ** -6


def near_ties(a, b, qa, qb, differ, magnitude):
    """Whether every element where a comparison of a and b (the fp32 function's operands; qa, qb
    QNN's) came out differently (`differ`) is a near tie: |a - b| within QNN's own error on the
    operands (the largest |qa - a| plus the largest |qb - b|), that error itself at most
    FLIP_ERROR of the partition's magnitude (the fp16 rounding a deep partition accumulates,
    not a fault)."""
    slack = float(np.max(np.abs(qa - a))) + float(np.max(np.abs(qb - b)))
    gap = np.abs(np.broadcast_to(a, differ.shape) - np.broadcast_to(b, differ.shape))
    return slack <= FLIP_ERROR * magnitude and not np.any(gap[differ] > slack)


def imposed_decisions(onnx_path, soc_model, prepare, in16, in32, magnitude):
    """The fp32 function (ONNX Runtime's CPU) on the fp16 and fp32 runs' inputs with QNN HTP's own
    decisions imposed where QNN decided a float comparison the other way at a near tie: every
    differing element's operands closer than QNN's own error on them (the largest |QNN - fp32|
    over each operand tensor, summed), that error itself at most FLIP_ERROR of the partition's
    magnitude `magnitude` (fp16 rounding accumulated over a deep partition, not a fault: 0.3 to
    0.7 % of the operands' own magnitude where MobileNetV3's ReLU masks flipped), as QNN
    reports them from the graph with each comparison's output and operands made graph
    outputs. None when no comparison differs, or when one differs
    where QNN's error cannot reach (a fault, not a flip). Else {"ref16", "ref32": outputs,
    "what": a line}."""
    import copy
    import onnx
    import qnn_ref
    from onnx import TensorProto, helper, numpy_helper
    model = onnx.shape_inference.infer_shapes(onnx.load(onnx_path))
    g = model.graph
    consts = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    typed = {v.name: v for v in list(g.value_info) + list(g.input) + list(g.output)}
    is_float = lambda t: t in consts and consts[t].dtype.kind == "f" or (
        t in typed and typed[t].type.tensor_type.elem_type == TensorProto.FLOAT)
    points = [n for n in g.node if n.op_type in DECISIONS and is_float(n.input[0])]
    if not points:
        return None
    probe = copy.deepcopy(model)
    have = {o.name for o in probe.graph.output}
    for n in points:
        for t in [n.output[0], *n.input]:
            if t not in have and t not in consts and t in typed and t not in {
                    i.name for i in probe.graph.input}:
                probe.graph.output.append(typed[t])
                have.add(t)
    probe_path = os.path.splitext(onnx_path)[0] + ".decisions.onnx"
    onnx.save(probe, probe_path)
    q = qnn_ref.qnn_session(probe_path, soc_model, prepare=prepare, profile=False)
    c = qnn_ref.cpu_session(probe_path)
    imposed, elements = {}, 0
    refs = {}
    for key, feeds in (("ref16", in16), ("ref32", in32)):
        qv, cv = qnn_ref.run(q, feeds), qnn_ref.run(c, feeds)
        qv.update(feeds), cv.update(feeds)
        masks = {}
        for n in points:
            differ = qv[n.output[0]] != cv[n.output[0]]
            if not differ.any():
                continue
            a, b = (cv.get(t, consts.get(t)) for t in n.input)
            qa, qb = (qv.get(t, consts.get(t)) for t in n.input)
            if not near_ties(a, b, qa, qb, differ, magnitude):
                os.remove(probe_path)
                return None
            masks[n.output[0]] = qv[n.output[0]]
            elements += int(differ.sum())
        imposed[key] = masks
    os.remove(probe_path)
    if not any(imposed.values()):
        return None
    for key, feeds in (("ref16", in16), ("ref32", in32)):
        # each imposed comparison's output a graph input fed with QNN's decisions
        variant = copy.deepcopy(model)
        vg = variant.graph
        keep = [n for n in vg.node if n.output[0] not in imposed[key]]
        del vg.node[:]
        vg.node.extend(keep)
        kept_info = [v for v in vg.value_info if v.name not in imposed[key]]
        del vg.value_info[:]
        vg.value_info.extend(kept_info)
        for t, v in imposed[key].items():
            vg.input.append(helper.make_tensor_value_info(t, TensorProto.BOOL, list(v.shape)))
        path = os.path.splitext(onnx_path)[0] + ".imposed.onnx"
        onnx.save(variant, path)
        refs[key] = qnn_ref.run(qnn_ref.cpu_session(path), {**feeds, **imposed[key]})
        os.remove(path)
    n_points = len(set(imposed["ref16"]) | set(imposed["ref32"]))
    return {**refs, "what": f"{n_points} comparison(s) decided as QNN HTP did at near ties "
                            f"({elements} element(s) of the two runs)"}


def load_dump(folder, names):
    return {n: np.load(os.path.join(folder, n + ".npy")) for n in names}


def check_partition(onnx_path, part, d32, d16, soc_model, prepare):
    import onnx
    import qnn_ref
    row = {"partition": part, "failures": []}
    model = onnx.load(onnx_path, load_external_data=False)
    ins = [i.name for i in model.graph.input]
    outs = [o.name for o in model.graph.output]
    in32, want32 = load_dump(os.path.join(d32, part), ins), load_dump(os.path.join(d32, part), outs)
    in16, got16 = load_dump(os.path.join(d16, part), ins), load_dump(os.path.join(d16, part), outs)
    cpu = qnn_ref.cpu_session(onnx_path)
    cpu32, cpu16 = qnn_ref.run(cpu, in32), qnn_ref.run(cpu, in16)
    # An output far below the partition's own magnitude M (a sum that cancels: the gradient of
    # a bias a normalization follows is 0 up to rounding) is judged against M's rounding:
    # errors are relative to max(max|output|, M * 2^-12) in fp32, M * 2^-10 in fp16.
    mag = magnitude(*in32.values(), *want32.values())
    # and the fp32 function's own conditioning: its inputs moved by up to one fp32 rounding
    # (relative 2^-24) move a chaotic output (a batch norm over two values) by far more than
    # summation order does, and every op's output moved by up to one fp32 ulp (2^-23: edgegrad
    # and ONNX Runtime round each op in fp32, in their own orders) moves one that cancels to
    # rounding noise; two fp32 implementations then differ by about that much
    rng = np.random.default_rng(1)
    moved = qnn_ref.run(cpu, {k: (v * (1 + rng.uniform(-1, 1, v.shape) * 2.0 ** -24))
                              .astype(v.dtype) if v.dtype.kind == "f" else v
                              for k, v in in32.items()})
    moved32 = [moved, *rounded_runs(onnx_path, in32, 2.0 ** -23)]

    def export_failures():
        worst, failures = 0.0, []
        for o in outs:
            e = err(cpu32[o], want32[o], mag * 2.0 ** -12)[0]
            bound = EXPORT_TOL + 3 * max(err(m[o], cpu32[o], mag * 2.0 ** -12)[0]
                                         for m in moved32)
            worst = max(worst, e / bound * EXPORT_TOL)
            if e > bound:
                failures.append(f"export: output {o}: ONNX on the CPU differs from edgegrad "
                                f"fp32 by {e:.2e} (bound {bound:.2e}, {len(moved32)} draws)")
        return worst, failures
    row["export"], failures = export_failures()
    if failures:
        # the spread of a chaotic function (ResNet-50's batch norms over 8 values per channel
        # at 2x2) is heavy-tailed: a few draws can miss how far one fp32 rounding moves it.
        # Before an output counts as mistranslated, EXPORT_DRAWS more draws measure it.
        moved32 += rounded_runs(onnx_path, in32, 2.0 ** -23, range(ROUNDING_DRAWS,
                                                                   ROUNDING_DRAWS + EXPORT_DRAWS))
        row["export"], failures = export_failures()
    row["failures"] += failures
    start = time.monotonic()
    try:
        q = qnn_ref.qnn_session(onnx_path, soc_model, prepare=prepare)
    except qnn_ref.QnnRefusal as e:
        row.update(accepted=False, prepare_s=time.monotonic() - start)
        row["failures"].append(f"refused: {e.ort_message.splitlines()[0][:300]}")
        return row
    row.update(accepted=True, prepare_s=time.monotonic() - start)
    row["qnn_built"] = dict(collections.Counter(t for g in qnn_ref.qnn_graphs(q)
                                                for t in g.values()))
    q32 = qnn_ref.run(q, in32)
    q16 = qnn_ref.run(q, in16)
    cheapest = qnn_ref.cheapest_run_by_type(q)
    if cheapest:  # the run with the fewest cycles, and its cycles per QNN op type
        row.update(cycles=cheapest[0], cycles_by_type=cheapest[1])
    worst_agree, worst_fp16, e16_max = 0.0, 0.0, 0.0
    mag16 = magnitude(*in16.values(), *cpu16.values())
    # The partition's own conditioning at fp16: the fp32 function on the fp16 run's inputs
    # moved by up to one fp16 rounding (relative 2^-11, a fixed seed). Where it moves an output
    # far (a batch norm over two values, a ReLU decision near 0 feeding the rest) any two fp16
    # implementations differ by about that much, whoever rounds better.
    rng = np.random.default_rng(0)
    moved = {k: (v * (1 + rng.uniform(-1, 1, v.shape) * 2.0 ** -11)).astype(v.dtype)
             if v.dtype.kind == "f" else v for k, v in in16.items()}
    cpu_moved = qnn_ref.run(cpu, moved)
    # and with every op's output moved by up to one fp16 rounding as well (rounding_variant),
    # ROUNDING_DRAWS times: in an output that cancels to noise the noise is heavy-tailed (a few
    # per-channel values rounded once and broadcast over thousands of elements dominate it:
    # three draws of one mobilenet_v2 bias gradient gave 0.52, 0.70 and 1.31 x 10^-2)
    cpu_rounded = rounded_runs(onnx_path, moved, 2.0 ** -11)
    # the fp32 run's inputs as the HTP takes them in: rounded to fp16 (saturating at 65504), so
    # that a gradient below fp16's range (ConvNeXt's layer scale makes some 1e-9) enters as 0
    cpu_in16 = qnn_ref.run(cpu, {k: np.clip(v, -65504, 65504).astype(np.float16)
                                 .astype(v.dtype) if v.dtype.kind == "f" else v
                                 for k, v in in32.items()})
    def judge(ref16, ref32):
        """The checks of every output, QNN judged against ref16 (the fp32 function on the fp16
        run's inputs) and ref32 (edgegrad's fp32 outputs): (failures, of them QNN's, worst
        agreement, worst fp16, largest edgegrad fp16 error)."""
        failures, qnn_failed, worst_agree, worst_fp16, e16_max = [], 0, 0.0, 0.0, 0.0
        for o in outs:
            e_q32, kind = err(q32[o], ref32[o], mag * 2.0 ** -10)
            e16, _ = err(got16[o], cpu16[o], mag16 * 2.0 ** -10)
            eq16, _ = err(q16[o], ref16[o], mag16 * 2.0 ** -10)
            if kind == "exact":
                if e_q32 > 0 or e16 > 0:
                    failures.append(f"output {o}: integer/boolean elements differ (QNN "
                                    f"{e_q32:.2e}, edgegrad fp16 {e16:.2e} of them)")
                continue
            e16_max = max(e16_max, e16)
            cond16 = max(err(c[o], cpu16[o], mag16 * 2.0 ** -10)[0]
                         for c in [cpu_moved, *cpu_rounded])
            e16, eq16 = max(e16, cond16), max(eq16, cond16)
            # same inputs (the fp16 run's): QNN's fp16 error within 4x of edgegrad fp16's, and
            # edgegrad fp16's within 3x of QNN's, each at least the conditioning; on the fp32
            # run's inputs, QNN within 4x of the larger of the two or of what rounding those
            # inputs to fp16 moves the function by (the HTP's own rounding there)
            e_in16 = err(cpu_in16[o], cpu32[o], mag * 2.0 ** -10)[0]
            agree_bound = AGREE_FACTOR * e16 + AGREE_FLOOR
            run32_bound = AGREE_FACTOR * max(e16, eq16, e_in16) + AGREE_FLOOR
            fp16_bound = FP16_FACTOR * eq16 + FP16_FLOOR
            worst_agree = max(worst_agree, eq16 / agree_bound, e_q32 / run32_bound)
            worst_fp16 = max(worst_fp16, e16 / fp16_bound)
            if eq16 > agree_bound:
                qnn_failed += 1
                failures.append(f"output {o}: QNN HTP fp16 is {eq16:.2e} from the fp32 "
                                f"function, edgegrad fp16 {e16:.2e} (bound {agree_bound:.2e})")
            if e_q32 > run32_bound:
                qnn_failed += 1
                failures.append(f"output {o}: QNN HTP differs from edgegrad fp32 by "
                                f"{e_q32:.2e} (bound {run32_bound:.2e} from the fp16 errors "
                                f"{e16:.2e} / {eq16:.2e} / inputs {e_in16:.2e})")
            if e16 > fp16_bound:
                failures.append(f"output {o}: edgegrad fp16 is {e16:.2e} from the fp32 "
                                f"function, QNN HTP fp16 {eq16:.2e} (bound {fp16_bound:.2e})")
        return failures, qnn_failed, worst_agree, worst_fp16, e16_max

    failures, qnn_failed, worst_agree, worst_fp16, e16_max = judge(cpu16, want32)
    if qnn_failed:
        # a comparison QNN HTP decided the other way than the fp32 function, at a tie its own
        # error on the operands reaches (a ReLU's mask, a pooled value near 0: the issue's "flips
        # are not faults"): the fp32 function with those decisions imposed judges QNN instead
        flips = imposed_decisions(onnx_path, soc_model, prepare, in16, in32, mag)
        if flips is None:
            failures.append("flip rule: no comparison QNN HTP decided otherwise near a tie")
        else:
            again = judge(flips["ref16"], flips["ref32"])
            if again[1] < qnn_failed:
                row["flips"] = flips["what"]
                failures, qnn_failed, worst_agree, worst_fp16, e16_max = again
            if qnn_failed:
                failures.append(f"flip rule: {flips['what']} imposed, not enough")
    row["failures"] += failures
    row.update(agree=worst_agree, fp16=worst_fp16, err16=e16_max)
    return row


def partition_in_child(path, part, d32, d16, model, prepare, budget=None, fast_failures=()):
    """check_partition in a child process: a crash inside QNN's emulator (it segfaults running
    ResNet-50's full-training step) fails this partition, saying so, instead of the worker and
    the run. `budget`: seconds before the child is stopped (None: no limit), for the re-check
    at QNN's default effort, which takes QNN's graph compiler from minutes to hours on a
    few-thousand-op partition: a re-check that does not finish leaves the partition failed with
    the fast preparation's failures (`fast_failures`), saying so; it never passes one. The
    child's temporary files go under the partition's folder (a killed child cannot remove
    them)."""
    import signal
    out = os.path.splitext(path)[0] + f".{prepare}.row.json"
    tmp = os.path.splitext(path)[0] + f".{prepare}.tmp"
    os.makedirs(tmp, exist_ok=True)
    argv = [sys.executable, os.path.abspath(__file__), "--one-partition", path, part, d32, d16,
            str(model), prepare, out]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=budget,
                              env={**os.environ, "TMPDIR": tmp})
    except subprocess.TimeoutExpired:
        return {"partition": part, "accepted": None, "failures": [
            f"the re-check at QNN's {prepare} effort did not finish within {budget:.0f} s "
            f"(--default-budget); the fast preparation's failures stand:", *fast_failures]}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if proc.returncode or not os.path.exists(out):
        lines = (proc.stderr.strip() or proc.stdout.strip() or "(no message)").splitlines()
        tail = [ln for ln in lines if "LIBNATIVE" not in ln and "W:onnxruntime" not in ln]
        what = (f"signal {-proc.returncode} ({signal.Signals(-proc.returncode).name})"
                if proc.returncode < 0 else f"exit {proc.returncode}")
        return {"partition": part, "accepted": None, "failures": [
            f"the check at QNN's {prepare} effort ended with {what} (a crash inside QNN HTP's "
            f"emulator, or the harness): {(tail or ['(no message)'])[-1][:300]}"]}
    with open(out) as f:
        row = json.load(f)
    os.remove(out)
    return row


def run_case(task):
    kind, name, spec, socs = task
    folder = os.path.join(ARGS.workdir, kind, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    rows = []
    try:
        json_path, inputs = build_case(kind, spec, folder)
        in_dir = os.path.join(folder, "inputs")
        os.makedirs(in_dir)
        argv_in = []
        for n, a in inputs.items():
            np.save(os.path.join(in_dir, n + ".npy"), np.asarray(a, order="C"))
            argv_in += ["--input", f"{n}={os.path.join(in_dir, n + '.npy')}"]
    except Exception as e:
        return [{"case": name, "set": kind, "soc": s, "partition": None,
                 "failures": [f"build: {type(e).__name__}: {str(e)[:300]}"]} for s in socs]
    for soc in socs:
        base = {"case": name, "set": kind, "soc": soc}
        sf = os.path.join(folder, soc)
        os.makedirs(sf)
        egp = os.path.join(sf, "program.egp")
        try:
            sh([ARGS.edgegrad, "compile", json_path, "--soc", soc, "-o", egp, "-q"])
            info = json.loads(sh([ARGS.edgegrad, "inspect", egp, "--json"]))
            if not info["partitions"]:
                continue
            d32, d16, onnx_dir = (os.path.join(sf, d) for d in ("dump32", "dump16", "onnx"))
            sh([ARGS.edgegrad, "run", egp, *argv_in, "--dump-partitions", d32, "-q",
                "--precision", "fp32", "--output-dir", os.path.join(sf, "out32")])
            sh([ARGS.edgegrad, "run", egp, *argv_in, "--dump-partitions", d16, "-q",
                "--precision", "fp16", "--output-dir", os.path.join(sf, "out16")])
            sh([ARGS.edgegrad, "export-onnx", egp, onnx_dir])
        except Exception as e:
            rows.append({**base, "partition": None,
                         "failures": [f"edgegrad: {type(e).__name__}: {str(e)[:300]}"]})
            continue
        model = SOC_MODELS[soc]
        prepare = ARGS.family_prepare if kind == "families" else "default"
        program_rows = []
        for p in info["partitions"]:
            ops = collections.Counter(o["type"] for o in p["ops"])
            try:
                path = os.path.join(onnx_dir, p["name"] + ".onnx")
                # the families' large graphs in a child process (QNN's emulator has crashed
                # on one); the conformance cases' small ones here (a child each would add a
                # process start to each of some 900 partitions)
                row = (partition_in_child(path, p["name"], d32, d16, model, prepare)
                       if kind == "families" else
                       check_partition(path, p["name"], d32, d16, model, prepare))
                row["prepare"] = prepare
                qnn_failed = [f for f in row["failures"] if not f.startswith("export:")]
                if qnn_failed and prepare != "default" and row.get("accepted") is not None:
                    # QNN's fast preparation miscomputes some graphs its default effort (what a
                    # deployment uses) computes right: that verdict counts, the other is kept.
                    # (An export failure alone is ONNX Runtime's CPU against edgegrad: no QNN
                    # preparation changes it.)
                    fast = row
                    row = partition_in_child(path, p["name"], d32, d16, model, "default",
                                             ARGS.default_budget, fast["failures"])
                    row.update(prepare="default", failures_prepare_fast=fast["failures"],
                               prepare_fast_s=fast.get("prepare_s"))
            except Exception as e:
                row = {"partition": p["name"], "failures": [f"harness: {type(e).__name__}: "
                                                            f"{str(e)[:300]}"]}
            row.update(base, qnn_ops=sum(ops.values()), op_kinds=dict(ops))
            program_rows.append(row)
        rows += program_rows
        if not ARGS.keep:
            for d in ("dump32", "dump16", "out32", "out16"):
                shutil.rmtree(os.path.join(sf, d), ignore_errors=True)
    return rows


def init_worker(args, models):
    global ARGS, SOC_MODELS
    ARGS, SOC_MODELS = args, models
    os.environ.setdefault("OMP_NUM_THREADS", "1")


# ---- report --------------------------------------------------------------------------------

def report(rows, seconds):
    failed = [r for r in rows if r["failures"]]
    for r in failed:
        where = f"{r['set']} {r['case']} {r['soc']} {r['partition'] or ''}".rstrip()
        for f in r["failures"]:
            print(f"FAIL {where}: {f}")
    for r in rows:
        if r.get("flips"):
            print(f"flip rule: {r['set']} {r['case']} {r['soc']} {r['partition']}: {r['flips']}")
    parts = [r for r in rows if r.get("partition")]
    kinds = collections.defaultdict(lambda: [0, 0, 0.0, 0, 0])
    for r in parts:
        for k, n in r.get("op_kinds", {}).items():
            kinds[k][0] += 1
            kinds[k][1] += bool(r.get("accepted"))
            kinds[k][2] = max(kinds[k][2], r.get("agree", 0.0))
            kinds[k][3] += n
        for k, n in r.get("qnn_built", {}).items():
            kinds[k][4] += n
    print(f"{'QNN op':28s} {'partitions':>10s} {'accepted':>9s} {'worst agree/bound':>18s} "
          f"{'ops':>7s} {'QNN built':>9s}")
    for k in sorted(kinds):
        n, a, w, ops, built = kinds[k]
        print(f"{k:28s} {n:10d} {a:9d} {w:18.3f} {ops:7d} {built:9d}")
    for soc in sorted({r['soc'] for r in rows}):
        rs = [r for r in parts if r["soc"] == soc]
        acc = sum(bool(r.get("accepted")) for r in rs)
        print(f"{soc}: {len(rs)} partitions, {acc} accepted whole, "
              f"{sum(not r['failures'] for r in rs)} passed every check; worst agreement "
              f"{max((r.get('agree', 0) for r in rs), default=0):.3f} of its bound, worst fp16 "
              f"{max((r.get('fp16', 0) for r in rs), default=0):.3f} of its bound; "
              f"QNN prepare {sum(r.get('prepare_s', 0) for r in rs):.0f} s")
    real = any(r.get("err16", 0) > 0 for r in parts)
    if parts and not real:
        print("FAIL fp16: edgegrad's fp16 mode equals the fp32 function on every partition")
    print(f"{len({(r['set'], r['case']) for r in rows})} cases, {seconds:.0f} s")
    print(f"htp-check: {len(rows) - len(failed)} passed, {len(failed)} failed")
    return 0 if rows and not failed and real else 1


def main(argv):
    if argv[:1] == ["--one-partition"]:  # partition_in_child's child: one row as JSON
        path, part, d32, d16, model, prepare, out = argv[1:]
        row = check_partition(path, part, d32, d16, int(model), prepare)
        with open(out + ".tmp", "w") as f:
            json.dump(row, f)
        os.replace(out + ".tmp", out)
        return 0
    import qnn_ref
    import run_models
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--edgegrad", required=True)
    p.add_argument("--workdir", help="case files (default: a temporary folder, removed)")
    p.add_argument("--sets", default="conformance,families")
    p.add_argument("--socs", default="SM8650,SM8550,SM8750",
                   help="SoCs of the conformance cases")
    p.add_argument("--family-socs", default="SM8650", help="SoCs of the torchvision families")
    p.add_argument("--families", default=",".join(run_models.FAMILIES))
    p.add_argument("--regimes", default=",".join(run_models.REGIMES))
    p.add_argument("--family-prepare", choices=sorted(qnn_ref.PREPARE_MODES), default="fast",
                   help="QNN's graph compiler effort for the families (fast: about a minute "
                   "for the largest partition, instead of an hour at default)")
    p.add_argument("--default-budget", type=float, default=1800, metavar="S",
                   help="seconds a partition failing under fast preparation gets for its "
                   "re-check at QNN's default effort; one that does not finish stays failed "
                   "(0: no limit; default %(default)s)")
    p.add_argument("--resume", action="store_true", help="keep the rows of --json's .partial "
                   "file from a run cut short and check only the cases it lacks")
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--filter", default="")
    p.add_argument("--keep", action="store_true", help="keep the dumps")
    p.add_argument("-j", "--jobs", type=int, default=2)
    p.add_argument("--json", help="write every partition's row here")
    args = p.parse_args(argv)
    args.default_budget = args.default_budget or None
    args.edgegrad = os.path.abspath(args.edgegrad)
    temporary = args.workdir is None
    args.workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="edgegrad-htp-"))
    models = soc_models(args.edgegrad)
    sets = args.sets.split(",")
    tasks = []
    if "families" in sets:
        tasks += [(*t, args.family_socs.split(",")) for t in
                  family_cases(args.families.split(","), args.regimes.split(","), args.filter)]
    if "conformance" in sets:
        tasks += [(*t, args.socs.split(",")) for t in conformance_cases(args.filter)]
    for t in tasks:
        for s in t[3]:
            if models.get(s, 0) <= 0:
                print(f"htp-check: SoC {s}: no QNN soc_model in edgegrad's SoC table",
                      file=sys.stderr)
                return 2
    start = time.monotonic()
    rows = []
    if args.json and os.path.exists(args.json + ".partial"):
        if args.resume:
            with open(args.json + ".partial") as f:
                for line in f:  # a line cut short by the kill is not a case's rows
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass
            done = {(r["set"], r["case"]) for r in rows}
            tasks = [t for t in tasks if (t[0], t[1]) not in done]
            print(f"htp-check: resuming: {len(done)} cases kept from {args.json}.partial, "
                  f"{len(tasks)} to check", flush=True)
        else:
            os.remove(args.json + ".partial")
    # a worker that dies (killed, out of memory, a crash inside QNN) fails the cases it and
    # the pool had left, each saying so, instead of leaving the run waiting for them forever
    # (multiprocessing.Pool's imap); --resume checks them again
    with ProcessPoolExecutor(max(1, args.jobs), mp_context=multiprocessing.get_context("fork"),
                             initializer=init_worker, initargs=(args, models)) as pool:
        futures = {pool.submit(run_case, t): t for t in tasks}
        for fut in as_completed(futures):
            try:
                rs = fut.result()
            except BrokenProcessPool as e:
                kind, name, _, socs = futures[fut]
                rs = [{"case": name, "set": kind, "soc": s, "partition": None,
                       "failures": [f"harness: a worker process died ({e})"]} for s in socs]
            rows += rs
            if args.json and not any("a worker process died" in f for r in rs
                                     for f in r["failures"]):
                # each case's rows as it ends (JSON lines), for a run cut short
                with open(args.json + ".partial", "a") as f:
                    f.writelines(json.dumps(r) + "\n" for r in rs)
            if rs and rs[0]["set"] == "families":  # the long ones: a line each as they end
                bad = sum(bool(r["failures"]) for r in rs)
                print(f"{rs[0]['case']}: {len(rs)} partitions, {bad} failed, QNN prepare "
                      f"{sum(r.get('prepare_s', 0) for r in rs):.0f} s", flush=True)
    rows.sort(key=lambda r: (r["set"], r["case"], r["soc"], r.get("partition") or ""))
    died = sum(any("a worker process died" in f for f in r["failures"]) for r in rows)
    if died:
        print(f"htp-check: {died} case(s) lost with a worker process; the others' rows stay in "
              f"{args.json}.partial for --resume" if args.json else
              f"htp-check: {died} case(s) lost with a worker process", file=sys.stderr)
    if args.json:
        if os.path.exists(args.json + ".partial") and not died:
            os.remove(args.json + ".partial")
        tmp = args.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(rows, f, indent=1)
        os.replace(tmp, args.json)
    rc = report(rows, time.monotonic() - start)
    if temporary and rc == 0:
        shutil.rmtree(args.workdir, ignore_errors=True)
    else:
        print(f"case files: {args.workdir}")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
