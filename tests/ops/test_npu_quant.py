"""Quantized (QDQ) models against PyTorch: the quantize / dequantize ops
(src/ops/quant.c, src/kernels/quant_f32.c), the exporter's QDQ form and its helper
(python/edgegrad/quantize.py), passes prune, annotate_quant and fold_qdq, the conv builders'
quantization guard (src/backends/htp/compile/builders/conv.c quantized()) and the quantized tensors
of the executor and of partition boundaries. Every --soc compile and run is at --precision fp32
(optest.NPU_FP32), the precision PyTorch computes in.

  ops:   quantize_per_tensor (quint8 / qint8 / qint32, ties to even, clamping, a scale with no
         exact float reciprocal), quantize_per_channel (axis 1, non-zero zero points, traced
         constant scales), dequantize of each: the integers must equal PyTorch's int_repr()
         and the floats PyTorch's dequantize() bit for bit, on the CPU path and compiled for
         SM8650 and SM8350.
  models (compiled with --report for SM8650 and SM8350, run, compared at the project tolerance):
    qdq_net         qdq(conv -> relu -> conv -> relu -> linear) inference: pass fold_qdq folds
                    the per-channel weight pairs (no quantize_per_channel left in the compiled
                    graph), every convolution is on the NPU of SM8650 reading its int8
                    per-channel weight (AXIS_SCALE_OFFSET, axis 3 of the HWIO filter) and
                    quantized activations; `inspect --json` shows those tensors and encodings;
                    also run from the .egp. Compared with the float output of PyTorch's QDQ
                    model at the project tolerance: values re-quantized after a float
                    accumulation in another order (NHWC kernels) may land one step apart on the
                    grid, so exact integer agreement is not expected
    qdq_step        the frozen-backbone training step of a qdq model (per-channel quantized
                    frozen weights, trainable conv bias and head): the first convolution's
                    weight pair is folded and that conv is on the NPU; the convolution_backward
                    still declined with "quantized grad_output/weight" (grad_output / weight
                    carry quantization attributes; the weight it reads is not folded, so the
                    second forward conv reads a dequantized, non-frozen weight) and the step
                    equal to PyTorch's eager one
    raw_weight_step forward conv on dequantize(quantize_per_channel(W)), backward
                    aten.convolution_backward reading the raw parameter W: declined with
                    "quantized grad_output/weight" (W carries the per-channel attributes), never
                    handed to a float TransposeConv2d
    act_fold_net    qdq(conv -> relu -> conv): make_fx's detach nodes on relu's output are
                    removed by pass prune, so the activation pair (relu -> quantize ->
                    dequantize -> conv) folds on SM8650: no quantize / dequantize left but the
                    graph input's, both convs and relu in one NPU partition, relu writing its
                    output quantized (the executor quantizes on write); `inspect --json` shows
                    relu's NATIVE tensor as ufixed_point_8 with the pair's scale / zero point;
                    also run from the .egp
    act_cross_partition
                    a folded activation leaving its NPU partition: dq(q(relu(conv x))) +
                    (conv x) * 0.5 with the mul kept on the CPU (--skip-node), so the add
                    reading relu's output is a second NPU partition; relu's output crosses as
                    APP_READ / APP_WRITE ufixed_point_8 tensors (read out dequantized by
                    runtime/npu_step.c, staged in quantized). fold_qdq leaves a folded value no
                    CPU reader (rules 3 and 5), so crossing towards another NPU partition is
                    the only way one leaves a partition
  On SM8350 every float node is on the CPU with the arch reason.

    PYTHONPATH=python /usr/bin/python3 tests/ops/test_npu_quant.py \\
        --edgegrad build/edgegrad --workdir /tmp/ops-npu-quant
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import optest  # noqa: E402
from optest import allclose_report  # noqa: E402
from test_npu_conv import (ARCH_REASON, CONV_TARGETS, V68, compare_outputs,  # noqa: E402
                           compile_report, run_edgegrad, save_step_inputs)
from edgegrad.export import export_function, export_training_step  # noqa: E402
from edgegrad.quantize import qdq  # noqa: E402
import zoo  # noqa: E402

aten = torch.ops.aten
SOCS = ("SM8650", V68)
Q_REASON = "quantized grad_output/weight"


def _np(t):
    return (t.int_repr() if t.is_quantized else t).detach().contiguous().numpy()


def save_inputs(d, names, args):
    inputs = []
    for nm, a in zip(names, args):
        path = os.path.join(d, nm + ".npy")
        np.save(path, a.detach().numpy())
        inputs.append((nm, path))
    return inputs


def check_report(rep, soc, expect):
    """expect: target (or node name, which wins) -> reason every such node has on SM8650
    (None: NPU)."""
    bad, seen = [], set()
    for n in rep["nodes"]:
        if soc == V68:
            if n["placement"] != "cpu":
                bad.append(f"{soc} {n['name']}: on the NPU")
            elif n["target"] in CONV_TARGETS and n["reason"] != ARCH_REASON:
                bad.append(f"{soc} {n['name']}: {n['reason']!r}, want {ARCH_REASON!r}")
            continue
        key = n["name"] if n["name"] in expect else n["target"]
        if key not in expect:
            continue
        seen.add(key)
        got = None if n["placement"] == "npu" else n["reason"]
        if got != expect[key]:
            bad.append(f"{soc} {n['name']}: {got or 'npu'!r}, want {expect[key]!r}")
    if soc != V68 and set(expect) - seen:
        bad.append(f"{soc}: no node of {sorted(set(expect) - seen)}")
    return bad


def exact(out_dir, refs, soc):
    """Outputs equal to PyTorch's bit for bit (the quantize ops have one right answer)."""
    bad = []
    for name, ref in refs.items():
        got = np.load(os.path.join(out_dir, name + ".npy"))
        if got.dtype != ref.dtype or got.shape != ref.shape or \
                not np.array_equal(got.view(np.uint8), ref.view(np.uint8)):
            why = allclose_report(got, ref) or "not bit-identical"
            bad.append(f"{soc} {name}: {got.dtype}{got.shape} vs {ref.dtype}{ref.shape}: {why}")
    return bad


def compile_and_run(exe, d, stem, inputs, refs, expect, extra=()):
    """For each SoC: the report (check_report with `expect`), then a run compared with refs.
    extra: more compile / run options (a skip list). Returns (failures, SM8650's report)."""
    bad, reps = [], {}
    for soc in SOCS:
        rep = compile_report(exe, stem + ".json", soc, os.path.join(d, f"report_{soc}.json"),
                             extra)
        reps[soc] = rep
        bad += check_report(rep, soc, expect)
        out = os.path.join(d, "out_" + soc)
        run_edgegrad(exe, stem + ".json", inputs, soc, out, extra)
        bad += compare_outputs(out, refs, soc)
    return bad, reps["SM8650"]


# ---- the ops ------------------------------------------------------------------------------

def per_tensor(dtype, scale, zp):
    def fn(x):
        q = torch.quantize_per_tensor(x, scale, zp, dtype)
        return q, q.dequantize()
    return fn


def per_channel(dtype, scales, zps, axis):
    s = torch.tensor(scales, dtype=torch.double)
    z = torch.tensor(zps, dtype=torch.long)

    def fn(x):
        q = torch.quantize_per_channel(x, s, z, axis, dtype)
        return q, q.dequantize()
    return fn


def op_cases():
    torch.manual_seed(11)
    ties = torch.arange(-41, 42, dtype=torch.float32) * 0.25  # x / 0.5: every k + 1/2 a tie
    wide = torch.randn(3, 50) * 40                             # clamps at both ends
    return [
        ("q_ties_quint8", per_tensor(torch.quint8, 0.5, 10), ties),
        ("q_ties_qint8", per_tensor(torch.qint8, 0.5, -3), ties),
        ("q_clamp_quint8", per_tensor(torch.quint8, 0.1, 128), wide),
        ("q_recip_qint32", per_tensor(torch.qint32, 0.0123, 7), torch.randn(4, 257) * 50),
        ("q_recip_qint8", per_tensor(torch.qint8, 0.0371, 0), torch.randn(2, 3, 5, 5)),
        ("qc_axis1_quint8", per_channel(torch.quint8, [0.02, 0.05, 0.013], [3, 128, 250], 1),
         torch.randn(2, 3, 4, 5)),
        ("qc_axis0_qint8", per_channel(torch.qint8, [0.011, 0.3], [0, -5], 0),
         torch.randn(2, 7) * 3),
    ]


def run_op_case(exe, workdir, name, fn, x):
    d = os.path.join(workdir, name)
    os.makedirs(d, exist_ok=True)
    stem = os.path.join(d, "model")
    export_function(fn, [x], stem, arg_names=["x"], output_names=["q", "dq"])
    q, dq = fn(x)
    refs = {"q": _np(q), "dq": _np(dq)}
    inputs = save_inputs(d, ["x"], [x])
    bad = []
    for soc in (None,) + SOCS:
        out = os.path.join(d, f"out_{soc or 'cpu'}")
        cmd = [exe, "run", stem + ".json", "--output-dir", out, "-q"]
        cmd += ["--soc", soc, *optest.NPU_FP32] if soc else []
        for nm, path in inputs:
            cmd += ["--input", f"{nm}={path}"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            return [f"{soc or 'cpu'}: exit {p.returncode}: {p.stderr.strip()}"]
        bad += exact(out, refs, soc or "cpu")
    return bad


# ---- models -------------------------------------------------------------------------------

def backbone():
    return nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.ReLU(),
                         nn.Conv2d(6, 5, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten(),
                         nn.Linear(5 * 5 * 5, 4))


def run_qdq_net(exe, workdir):
    d = os.path.join(workdir, "qdq_net")
    os.makedirs(d, exist_ok=True)
    stem = os.path.join(d, "model")
    torch.manual_seed(12)
    x = torch.randn(2, 3, 9, 9)
    net = qdq(backbone().eval(), torch.randn(4, 3, 9, 9))
    res = export_function(lambda x: net(x), [x], stem, arg_names=["x"], output_names=["y"])
    if not any(n["target"] == "aten.quantize_per_channel.default" for n in res.graph["nodes"]):
        return ["no quantize_per_channel traced"]
    with torch.no_grad():
        refs = {"y": net(x).numpy()}
    inputs = save_inputs(d, ["x"], [x])
    bad, rep = compile_and_run(exe, d, stem, inputs, refs, {"aten.convolution.default": None})
    left = [n["name"] for n in rep["nodes"] if n["target"] == "aten.quantize_per_channel.default"]
    if left:
        bad.append(f"SM8650: weight pairs not folded: {left}")
    # the compiled program file: written, loaded, run
    egp_bad, inspected = run_egp(exe, d, stem, inputs, refs)
    if inspected is not None:
        egp_bad += check_inspect(inspected)
    return bad + egp_bad


def run_egp(exe, d, stem, inputs, refs, extra=()):
    """Compiles stem.json for SM8650 into model.egp (extra: compile options), runs the file and
    compares its outputs with refs. Returns (failures, `inspect --json` of it or None)."""
    egp = os.path.join(d, "model.egp")
    p = subprocess.run([exe, "compile", stem + ".json", "--soc", "SM8650", *optest.NPU_FP32, "-o",
                        egp, "-q", *extra], capture_output=True, text=True)
    if p.returncode != 0:
        return [f"compile -o: exit {p.returncode}: {p.stderr.strip()}"], None
    out = os.path.join(d, "out_egp")
    cmd = [exe, "run", egp, "--output-dir", out, "-q"]
    for nm, path in inputs:
        cmd += ["--input", f"{nm}={path}"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return [f"run .egp: exit {p.returncode}: {p.stderr.strip()}"], None
    bad = compare_outputs(out, refs, "egp")
    p = subprocess.run([exe, "inspect", egp, "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        return bad + [f"inspect --json: exit {p.returncode}: {p.stderr.strip()}"], None
    try:
        return bad, json.loads(p.stdout)
    except ValueError as e:
        return bad + [f"inspect --json: not JSON: {e}"], None


def check_inspect(inspected):
    """`inspect --json` of the .egp lists the quantized NPU tensors with their encodings."""
    text = json.dumps(inspected)
    return [f"inspect --json: no {want!r} in its output"
            for want in ("sfixed_point_8", "AXIS_SCALE_OFFSET", "ufixed_point_8", "SCALE_OFFSET")
            if want not in text]


def npu_tensor(inspected, partition, name):
    """The tensor `name` of NPU partition `partition` in `inspect --json`'s output, or None."""
    parts = inspected.get("partitions", [])
    if partition >= len(parts):
        return None
    return next((t for t in parts[partition]["tensors"] if t["name"] == name), None)


def check_act_tensor(t, where, type_, scale, zero_point):
    """Tensor t is a uint8 per-tensor fixed-point tensor of this type with this encoding (QNN
    offsets are minus the zero point; the scale is stored as float32)."""
    if t is None:
        return [f"{where}: no such tensor in inspect --json"]
    q = t.get("quant") or {}
    ok = (t["type"], t["dtype"], q.get("encoding"), q.get("offsets")) == \
        (type_, "ufixed_point_8", "SCALE_OFFSET", [-zero_point]) and \
        len(q.get("scales", [])) == 1 and abs(q["scales"][0] - scale) <= 1e-7 * scale
    return [] if ok else [f"{where}: {t}, want {type_} ufixed_point_8 SCALE_OFFSET scale "
                          f"{scale} offset {-zero_point}"]


def targets(rep, target):
    return [n for n in rep["nodes"] if n["target"] == target]


def run_act_fold_net(exe, workdir):
    """An activation pair folds: qdq(conv -> relu -> conv), the second conv's input pair on
    relu's output. make_fx traces detach nodes reading relu's output (autograd's saved
    tensors); pass prune removes them, so relu's output has the quantize as its only user and
    fold_qdq folds the pair on SM8650: relu (on the NPU) writes its output as a quantized
    tensor (the executor quantizes on write) and the second conv reads it."""
    d = os.path.join(workdir, "act_fold_net")
    os.makedirs(d, exist_ok=True)
    stem = os.path.join(d, "model")
    torch.manual_seed(15)
    x = torch.randn(2, 3, 8, 8)
    net = qdq(nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.ReLU(),
                            nn.Conv2d(6, 4, 3, padding=1)).eval(), torch.randn(4, 3, 8, 8),
              types=(nn.Conv2d,))
    res = export_function(lambda x: net(x), [x], stem, arg_names=["x"], output_names=["y"])
    traced = res.graph["nodes"]
    relu = next(n for n in traced if n["target"] == "aten.relu.default")
    if not any(n["target"] == "aten.detach.default" and n["args"][0] == {"value": relu["output"]}
               for n in traced):
        return ["no detach of relu's output traced: the case no longer tests pass prune"]
    with torch.no_grad():
        refs = {"y": net(x).numpy()}
    inputs = save_inputs(d, ["x"], [x])
    bad, rep = compile_and_run(exe, d, stem, inputs, refs,
                               {"aten.convolution.default": None, "aten.relu.default": None})
    # left: the graph input's pair (an input is never folded) and the weights' are folded
    for target, want in (("aten.detach.default", 0), ("aten.quantize_per_tensor.default", 1),
                         ("aten.dequantize.self", 1), ("aten.quantize_per_channel.default", 0)):
        got = [n["name"] for n in targets(rep, target)]
        if len(got) != want:
            bad.append(f"SM8650: {target}: {got}, want {want} node(s)")
    npu = [n for n in rep["nodes"] if n["target"] in ("aten.convolution.default",
                                                      "aten.relu.default")]
    if len(npu) != 3 or {n["partition"] for n in npu} != {0}:
        bad.append(f"SM8650: convs and relu not in one NPU partition: {npu}")
    egp_bad, inspected = run_egp(exe, d, stem, inputs, refs)
    bad += egp_bad
    if inspected is not None:
        bad += check_act_tensor(npu_tensor(inspected, 0, relu["name"]), "relu's output",
                                "NATIVE", net[2].act_scale, net[2].act_zero_point)
    return bad


class CrossNet(nn.Module):
    """y = dq(q(relu(conv(x)))) + conv(x) * 0.5: relu's output pair folds, and its only reader,
    the add, sits in another NPU partition than relu when the mul is kept on the CPU."""

    def __init__(self, scale):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.scale = scale

    def forward(self, x):
        c = self.conv(x)
        r = torch.quantize_per_tensor(F.relu(c), self.scale, 0, torch.quint8).dequantize()
        return r + c * 0.5


def run_act_cross_partition(exe, workdir):
    """A folded (quantized) value leaving an NPU partition. fold_qdq's rules 3 and 5 leave a
    folded x no CPU reader and make it no graph output, so the CPU never consumes it; x leaves
    its partition only towards an NPU reader in another partition, through the CPU's memory:
    the producing partition reads it out dequantized (runtime/npu_step.c) and the reading one
    stages it in quantized. Here the add reading relu's output also reads conv * 0.5, which
    --skip-node keeps on the CPU: partition {conv, relu} -> mul (CPU) -> {add}, so the add
    cannot join relu's partition (a cycle), and relu's output crosses."""
    d = os.path.join(workdir, "act_cross_partition")
    os.makedirs(d, exist_ok=True)
    stem = os.path.join(d, "model")
    torch.manual_seed(16)
    x = torch.randn(2, 3, 7, 7)
    probe = CrossNet(1.0).eval()
    with torch.no_grad():
        scale = float(F.relu(probe.conv(x)).max()) / 255
    net = CrossNet(scale)
    net.load_state_dict(probe.state_dict())
    net.eval()
    res = export_function(lambda x: net(x), [x], stem, arg_names=["x"], output_names=["y"])
    traced = res.graph["nodes"]
    relu = next(n["name"] for n in traced if n["target"] == "aten.relu.default")
    mul = next(n["name"] for n in traced if n["target"].startswith("aten.mul."))
    add = next(n["name"] for n in traced if n["target"] == "aten.add.Tensor")
    with torch.no_grad():
        refs = {"y": net(x).numpy()}
    inputs = save_inputs(d, ["x"], [x])
    skip = ("--skip-node", mul)
    bad, rep = compile_and_run(exe, d, stem, inputs, refs,
                               {"aten.convolution.default": None, relu: None, add: None,
                                mul: f"skipped by --skip-node {mul}"}, skip)
    left = targets(rep, "aten.quantize_per_tensor.default") + targets(rep, "aten.dequantize.self")
    if left:
        bad.append(f"SM8650: relu's pair not folded: {[n['name'] for n in left]}")
    part = {n["name"]: n["partition"] for n in rep["nodes"]}
    if part.get(relu) is None or part.get(add) is None or part[relu] == part[add]:
        bad.append(f"SM8650: relu in partition {part.get(relu)}, add in {part.get(add)}: want "
                   "two NPU partitions")
        return bad
    egp_bad, inspected = run_egp(exe, d, stem, inputs, refs, skip)
    bad += egp_bad
    if inspected is not None:
        bad += check_act_tensor(npu_tensor(inspected, part[relu], relu), "relu's partition",
                                "APP_READ", scale, 0)
        bad += check_act_tensor(npu_tensor(inspected, part[add], relu), "add's partition",
                                "APP_WRITE", scale, 0)
    return bad


# a conv weight computed at run time (a trainable or dequantized one) that carries QDQ encodings
RUNTIME_Q_WEIGHT = ("weight is a runtime value with quantization encodings: the filter permute "
                    "inside the partition is float only")


def run_qdq_step(exe, workdir):
    d = os.path.join(workdir, "qdq_step")
    os.makedirs(d, exist_ok=True)
    stem = os.path.join(d, "model")
    torch.manual_seed(13)
    x, target = torch.randn(2, 3, 9, 9), torch.tensor([1, 3])
    # activations of the convolutions only (a gradient never flows through a quantize): the
    # second conv's bias gradient passes no quantized activation; the head stays float
    model = qdq(backbone().train(), x, types=(nn.Conv2d,))
    trainable = ["2.bias", "5.weight", "5.bias"]
    res = export_training_step(model, F.cross_entropy, (x, target), stem, trainable=trainable)
    graph = res.graph
    if not any(n["target"] == "aten.convolution_backward.default" for n in graph["nodes"]):
        return ["no convolution_backward traced"]
    refs, _, _ = zoo.eager(model, F.cross_entropy, x, target, trainable)
    inputs = save_step_inputs(d, graph, model, x, target)
    return compile_and_run(exe, d, stem, inputs, refs,
                           {"aten.convolution_backward.default": Q_REASON,
                            "convolution": None,
                            "convolution_1": RUNTIME_Q_WEIGHT})[0]


def run_raw_weight_step(exe, workdir):
    """The backward reads the raw parameter while the forward reads its QDQ form."""
    d = os.path.join(workdir, "raw_weight_step")
    os.makedirs(d, exist_ok=True)
    stem = os.path.join(d, "model")
    torch.manual_seed(14)
    x, w = torch.randn(2, 3, 7, 7), torch.randn(4, 3, 3, 3)
    scales = (w.reshape(4, -1).abs().amax(1) / 127).double()
    zps = torch.zeros(4, dtype=torch.long)
    gy = torch.randn(2, 4, 4, 4)

    def step(x, gy, w, scales, zps):
        wq = torch.quantize_per_channel(w, scales, zps, 0, torch.qint8).dequantize()
        y = F.conv2d(x, wq, None, stride=2, padding=1)
        gx = aten.convolution_backward(gy, x, w, [0], [2, 2], [1, 1], [1, 1], False, [0, 0], 1,
                                       [True, False, False])[0]
        return y, gx

    args, names = [x, gy, w, scales, zps], ["x", "gy", "w", "scales", "zps"]
    export_function(step, args, stem, arg_names=names, output_names=["y", "gx"],
                    static_args=["w", "scales", "zps"])
    with torch.no_grad():
        y, gx = step(*args)
    refs = {"y": y.numpy(), "gx": gx.numpy()}
    inputs = save_inputs(d, names[:2], args[:2])
    return compile_and_run(exe, d, stem, inputs, refs,
                           {"aten.convolution_backward.default": Q_REASON,
                            "aten.convolution.default": RUNTIME_Q_WEIGHT})[0]


def main():
    run = optest.Runner("npu_quant")
    exe, workdir = run.exe, run.workdir
    for name, fn, x in op_cases():
        run.record(name, lambda a=(name, fn, x): run_op_case(exe, workdir, *a))
    run.record("qdq_net", lambda: run_qdq_net(exe, workdir))
    run.record("qdq_step", lambda: run_qdq_step(exe, workdir))
    run.record("raw_weight_step", lambda: run_raw_weight_step(exe, workdir))
    run.record("act_fold_net", lambda: run_act_fold_net(exe, workdir))
    run.record("act_cross_partition", lambda: run_act_cross_partition(exe, workdir))
    run.finish()


if __name__ == "__main__":
    main()
