"""NPU builders for pointwise ops (src/backends/htp/compile/builders/elementwise.c) and the
ReluMinMax activations (builders/activation.c: hardtanh, clamp) against PyTorch, through the
CLI, on every HTP generation.

Each case is a small function of tensors, exported once. For every SoC of SOCS it runs
`edgegrad compile --soc SOC --report R.json` and asserts the placement from the report, then
`edgegrad run --soc SOC`, both at --precision fp32 (optest.NPU_FP32), and compares every output
with PyTorch's at the project tolerance (optest.allclose_report):
  - SM8450 (V69), SM8650 (V75), SM8850 (V81): every node whose target is in `npu` is placed on
    the NPU; every node whose target is a key of `cpu` is on the CPU with a reason containing
    the value (a builder's decline);
  - SM8350 (V68, no float path): nothing is on the NPU, and every node of `npu` carries the
    partitioner's reason "float ops need HTP V69+ with fp16; SM8350 is V68".
The harness (NpuSuite) is shared with test_npu_pool_norm.py.

    PYTHONPATH=python /usr/bin/python3 tests/ops/test_npu_elementwise.py \
        --edgegrad build/edgegrad --workdir /tmp/npu-elementwise
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
import optest  # noqa: E402

aten = torch.ops.aten
F = torch.nn.functional

SOCS = ("SM8450", "SM8650", "SM8850", "SM8350")
V68_REASON = "float ops need HTP V69+ with fp16; SM8350 is V68"


def _t(target):
    """'add.Tensor' -> 'aten.add.Tensor', 'neg' -> 'aten.neg.default'; full targets as is."""
    if target.startswith("aten."):
        return target
    return "aten." + target + ("" if "." in target else ".default")


def check_placement(report, soc, npu, cpu):
    """None when the report matches the expectations for `soc`, else a one-line reason."""
    nodes = report["nodes"]
    targets = {n["target"] for n in nodes}
    for t in list(npu) + list(cpu):
        if t not in targets:
            return f"{soc}: no {t} node in the graph (targets: {sorted(targets)})"
    for n in nodes:
        where, why = n["placement"], n["reason"] or ""
        if soc == "SM8350":
            if where == "npu":
                return f"{soc}: {n['name']} ({n['target']}) on the NPU of a V68"
            if n["target"] in npu and why != V68_REASON:
                return f"{soc}: {n['name']} ({n['target']}) reason {why!r}, want {V68_REASON!r}"
            continue
        if n["target"] in npu and where != "npu":
            return f"{soc}: {n['name']} ({n['target']}) on the CPU: {why}"
        if n["target"] in cpu and (where != "cpu" or cpu[n["target"]] not in why):
            return f"{soc}: {n['name']} ({n['target']}) placed {where} ({why!r}); want the " \
                   f"CPU with {cpu[n['target']]!r}"
    return None


def run_cli(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(os.path.basename(c) for c in cmd[:2])} exit "
                           f"{r.returncode}: {r.stderr.strip()}")
    return r


def compare_dir(out_dir, refs):
    """refs: {output name: numpy array}. None when every output matches."""
    for name, ref in refs.items():
        got = np.load(os.path.join(out_dir, name + ".npy"))
        why = optest.allclose_report(got, ref)
        if why:
            return f"{name}: {why}"
    return None


def check_model(exe, json_path, inputs, refs, workdir, socs, npu, cpu):
    """Compiles (placement) and runs graph `json_path` for every SoC; None when all match.
    inputs: {input name: numpy array}; refs: {output name: numpy array}."""
    os.makedirs(workdir, exist_ok=True)
    args = []
    for name, a in inputs.items():
        f = os.path.join(workdir, name + ".npy")
        np.save(f, a)
        args += ["--input", f"{name}={f}"]
    for soc in socs:
        rep = os.path.join(workdir, f"report_{soc}.json")
        run_cli([exe, "compile", json_path, "--soc", soc, *optest.NPU_FP32, "--report", rep])
        with open(rep) as f:
            why = check_placement(json.load(f), soc, npu, cpu)
        if why:
            return why
        out = os.path.join(workdir, "out_" + soc)
        run_cli([exe, "run", json_path, "--soc", soc, *optest.NPU_FP32, "--output-dir", out, "-q"]
                + args)
        why = compare_dir(out, refs)
        if why:
            return f"{soc}: {why}"
    return None


class NpuSuite:
    """Cases: (name, fn, args, static, npu targets, cpu {target: reason}); or custom runners
    `extra(name, run)` with run(exe, workdir) -> None or a reason."""

    def __init__(self, family):
        self.family = family
        self.cases = []

    def case(self, name, fn, args, npu=(), cpu=None, static=(), socs=SOCS):
        self.cases.append((name, (fn, args, tuple(static), {_t(t) for t in npu},
                                  {_t(k): v for k, v in (cpu or {}).items()}, socs)))

    def extra(self, name, run):
        self.cases.append((name, run))

    def _run_case(self, exe, workdir, fn, args, static, npu, cpu, socs):
        os.makedirs(workdir, exist_ok=True)
        names = [f"arg{i}" for i in range(len(args))]
        stem = os.path.join(workdir, "model")
        optest.export_function(fn, args, stem, arg_names=names, static_args=static)
        ref = fn(*args)
        refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
        refs = {f"out{k}": r.detach().numpy() for k, r in enumerate(refs)}
        inputs = {nm: a.detach().numpy() for nm, a in zip(names, args) if nm not in static}
        return check_model(exe, stem + ".json", inputs, refs, workdir, socs, npu, cpu)

    def main(self):
        run = optest.Runner(self.family)
        for name, spec in self.cases:
            d = os.path.join(run.workdir, name)
            run.record(name, lambda spec=spec, d=d: spec(run.exe, d) if callable(spec) else
                       self._run_case(run.exe, d, *spec))
        run.finish()


# --------------------------------------------------------------------------------------------
# cases

def r(*shape, scale=1.0):
    return torch.randn(*shape) * scale


def pos(*shape):
    """Values away from zero (divisors)."""
    return (torch.rand(*shape) + 0.5) * torch.where(torch.rand(*shape) < 0.5, -1.0, 1.0)


def boundary_x():
    """Exact boundaries of threshold 0 / hardtanh (-1, 1) and (0, 6), and infinities."""
    inf = float("inf")
    return torch.tensor([[-inf, -6.0, -1.0, -0.999, -0.0, 0.0, 1e-30, 0.5],
                         [0.999, 1.0, 1.001, 5.999, 6.0, 6.001, 100.0, inf]])


def vjp(outputs, inputs, grads):
    """torch.autograd.grad without its is_same_size check (see test_activation.py)."""
    return torch.autograd.Variable._execution_engine.run_backward(
        tuple(outputs), tuple(grads), False, False, tuple(inputs), True)


def build_suite():
    torch.manual_seed(0)
    s = NpuSuite("npu_elementwise")
    x4, y4 = r(2, 3, 4, 5), r(2, 3, 4, 5)

    # add / sub with alpha, Tensor and Scalar overloads
    s.case("add", lambda a, b: a + b, [x4, y4], npu=["add.Tensor"])
    s.case("add_alpha", lambda a, b: torch.add(a, b, alpha=0.5), [x4, y4], npu=["add.Tensor"])
    s.case("sub", lambda a, b: a - b, [x4, y4], npu=["sub.Tensor"])
    s.case("sub_alpha", lambda a, b: torch.sub(a, b, alpha=3), [x4, y4], npu=["sub.Tensor"])
    s.case("add_number", lambda a: a + 2.5, [x4], npu=["add.Tensor"])
    s.case("add_number_alpha", lambda a: aten.add.Tensor(a, 3, alpha=-0.25), [x4],
           npu=["add.Tensor"])
    s.case("add_scalar", lambda a: aten.add.Scalar(a, 1.5, 2), [x4], npu=["add.Scalar"])
    s.case("sub_scalar", lambda a: aten.sub.Scalar(a, 0.75), [x4], npu=["sub.Scalar"])
    s.case("sub_scalar_alpha", lambda a: aten.sub.Scalar(a, 0.75, 4), [r(3, 7)],
           npu=["sub.Scalar"])
    s.case("rsub", lambda a: 1 - a, [x4], npu=["rsub.Scalar"])
    s.case("rsub_alpha", lambda a: aten.rsub.Scalar(a, 2.0, 0.5), [r(6)], npu=["rsub.Scalar"])
    # mul / div
    s.case("mul", lambda a, b: a * b, [x4, y4], npu=["mul.Tensor"])
    s.case("mul_number", lambda a: a * -1.5, [x4], npu=["mul.Tensor"])
    s.case("mul_scalar", lambda a: aten.mul.Scalar(a, 3), [r(4, 4)], npu=["mul.Scalar"])
    s.case("div", lambda a, b: a / b, [x4, pos(2, 3, 4, 5)], npu=["div.Tensor"])
    s.case("div_number", lambda a: a / 3.0, [x4], npu=["div.Tensor"])
    s.case("div_scalar", lambda a: aten.div.Scalar(a, 7), [r(5, 3)], npu=["div.Scalar"])
    s.case("div_by_zero", lambda a, b: a / b,
           [torch.tensor([1.0, -1.0, 0.0, 2.0]), torch.tensor([0.0, 0.0, 0.0, -0.0])],
           npu=["div.Tensor"])
    s.case("neg", lambda a: -a, [x4], npu=["neg"])
    s.case("silu", lambda a: F.silu(a), [r(2, 3, 4, 5, scale=4)], npu=["silu"])
    s.case("silu_rank2", lambda a: F.silu(a), [r(3, 9, scale=30)], npu=["silu"])

    # broadcasting under the NHWC layout rule: ATen right-aligns against [N, C, H, W]
    s.case("bcast_chan_runtime", lambda a, b: a + b, [x4, r(3, 1, 1)], npu=["add.Tensor"])
    s.case("bcast_w_runtime", lambda a, b: a * b, [x4, r(5)], npu=["mul.Tensor"])
    s.case("bcast_hw_runtime", lambda a, b: a - b, [x4, r(4, 5)], npu=["sub.Tensor"])
    s.case("bcast_h1_runtime", lambda a, b: a - b, [x4, r(4, 1)], npu=["sub.Tensor"])
    s.case("bcast_chw_runtime", lambda a, b: a / b, [x4, pos(3, 4, 5)], npu=["div.Tensor"])
    s.case("bcast_c1w_runtime", lambda a, b: a + b, [x4, r(3, 1, 5)], npu=["add.Tensor"])
    s.case("bcast_lower_rank_first", lambda a, b: b - a, [x4, r(3, 4, 1)], npu=["sub.Tensor"])
    s.case("bcast_chan_static", lambda a, b: a * b, [x4, r(3, 1, 1)], static=["arg1"],
           npu=["mul.Tensor"])
    s.case("bcast_chw_static", lambda a, b: a + b, [x4, r(3, 4, 5)], static=["arg1"],
           npu=["add.Tensor"])
    s.case("bcast_w_static_alpha", lambda a, b: torch.sub(a, b, alpha=2), [x4, r(5)],
           static=["arg1"], npu=["sub.Tensor"])
    s.case("bcast_rank4_both", lambda a, b: a + b, [r(2, 1, 4, 1), r(1, 3, 1, 5)],
           npu=["add.Tensor"])
    s.case("bcast_rank4_static", lambda a, b: a * b, [x4, r(1, 3, 1, 1)], static=["arg1"],
           npu=["mul.Tensor"])
    s.case("bcast_0d", lambda a, b: a * b, [x4, torch.tensor(1.7)], npu=["mul.Tensor"])
    s.case("bcast_0d_result", lambda a, b: a + b, [torch.tensor(0.5), torch.tensor(2.0)],
           npu=["add.Tensor"])
    s.case("bcast_0d_number", lambda a: a * 3.0, [torch.tensor(-2.0)], npu=["mul.Tensor"])
    s.case("bcast_rank3", lambda a, b: a + b, [r(3, 4, 5), r(5)], npu=["add.Tensor"])
    s.case("bcast_rank2", lambda a, b: a * b, [r(6, 1), r(1, 7)], npu=["mul.Tensor"])

    # backward ops
    g4 = r(2, 3, 4, 5)
    s.case("threshold_backward", lambda g, x: aten.threshold_backward(g, x, 0.0), [g4, x4],
           npu=["threshold_backward"])
    s.case("threshold_backward_thr", lambda g, x: aten.threshold_backward(g, x, 0.5),
           [r(2, 8), r(2, 8)], npu=["threshold_backward"])
    s.case("threshold_backward_boundaries", lambda g, x: aten.threshold_backward(g, x, 0),
           [r(2, 8), boundary_x()], npu=["threshold_backward"])
    s.case("threshold_backward_int_thr", lambda g, x: aten.threshold_backward(g, x, 6),
           [r(2, 8), boundary_x()], npu=["threshold_backward"])
    # NaN cannot be a traced input (the exporter compares inputs NaN != NaN); make it inside
    s.case("threshold_backward_nan",
           lambda g, a, b: aten.threshold_backward(g, a / b, 0.0),
           [r(6), torch.tensor([0.0, 1.0, -1.0, 0.0, 0.0, 3.0]),
            torch.tensor([0.0, 0.0, 0.0, 1.0, -1.0, 0.0])],
           npu=["threshold_backward", "div.Tensor"])
    s.case("threshold_backward_bcast", lambda g, x: aten.threshold_backward(g, x, 0.1),
           [g4, r(3, 1, 1)], npu=["threshold_backward"])
    s.case("threshold_backward_inf", lambda g, x: aten.threshold_backward(g, x, float("inf")),
           [r(2, 8), boundary_x()], npu=["threshold_backward"])
    s.case("relu_chain", lambda x, g: vjp([torch.relu(x)], [x], [g])[0],
           [r(2, 3, 4, 5).requires_grad_(True), g4], npu=["relu", "threshold_backward"])
    s.case("hardtanh_backward", lambda g, x: aten.hardtanh_backward(g, x, -1.0, 1.0),
           [r(2, 8), boundary_x()], npu=["hardtanh_backward"])
    s.case("hardtanh_backward_relu6", lambda g, x: aten.hardtanh_backward(g, x, 0.0, 6.0),
           [r(2, 8), boundary_x()], npu=["hardtanh_backward"])
    s.case("hardtanh_backward_rank4", lambda g, x: aten.hardtanh_backward(g, x, -0.5, 2),
           [g4, r(2, 3, 4, 5)], npu=["hardtanh_backward"])
    s.case("hardtanh_backward_nan",
           lambda g, a, b: aten.hardtanh_backward(g, a / b, -1.0, 1.0),
           [r(4), torch.tensor([0.0, 1.0, -1.0, 0.5]), torch.tensor([0.0, 0.0, 0.0, 1.0])],
           npu=["hardtanh_backward"])
    s.case("hardtanh_backward_inf_bound",
           lambda g, x: aten.hardtanh_backward(g, x, -1.0, float("-inf")),
           [r(2, 8), boundary_x()], npu=["hardtanh_backward"])
    # min > max: ATen gives max (forward) / 0 (backward) everywhere; ReluMinMax cannot express
    # the forward, so it declines; the backward's LessEqual/GreaterEqual/Select composite is
    # exact as it is
    s.case("hardtanh_backward_min_above_max",
           lambda g, x: aten.hardtanh_backward(g, x, 1.0, -1.0), [r(2, 8), boundary_x()],
           npu=["hardtanh_backward"])
    y4 = torch.sigmoid(r(2, 3, 4, 5, scale=3))
    s.case("sigmoid_backward", lambda g, y: aten.sigmoid_backward(g, y), [g4, y4],
           npu=["sigmoid_backward"])
    s.case("sigmoid_backward_bcast", lambda g, y: aten.sigmoid_backward(g, y),
           [g4, torch.rand(5)], npu=["sigmoid_backward"])
    s.case("tanh_backward", lambda g, y: aten.tanh_backward(g, y),
           [g4, torch.tanh(r(2, 3, 4, 5, scale=2))], npu=["tanh_backward"])
    s.case("tanh_backward_rank2", lambda g, y: aten.tanh_backward(g, y),
           [r(3, 4), torch.rand(3, 4) * 2 - 1], npu=["tanh_backward"])
    s.case("sigmoid_chain", lambda x, g: vjp([torch.sigmoid(x)], [x], [g])[0],
           [r(2, 3, 4, 5).requires_grad_(True), g4], npu=["sigmoid", "sigmoid_backward"])

    # hardtanh / clamp -> ReluMinMax
    s.case("hardtanh", lambda x: F.hardtanh(x, -0.5, 2.0), [x4 * 2], npu=["hardtanh"])
    s.case("relu6_boundaries", lambda x: F.relu6(x), [boundary_x()], npu=["hardtanh"])
    s.case("hardtanh_min_above_max", lambda x: aten.hardtanh(x, 1.0, -1.0), [x4],
           cpu={"hardtanh": "min_val 1 > max_val -1: ReluMinMax needs min_value <= max_value"})
    s.case("hardtanh_equal_bounds", lambda x: aten.hardtanh(x, 0.5, 0.5), [x4], npu=["hardtanh"])
    s.case("clamp", lambda x: torch.clamp(x, -1.0, 0.5), [x4], npu=["clamp"])
    s.case("clamp_boundaries", lambda x: torch.clamp(x, 0, 6), [boundary_x()], npu=["clamp"])
    s.case("clamp_rank2", lambda x: torch.clamp(x, -3.0, 3.0), [r(3, 9, scale=4)],
           npu=["clamp"])
    s.case("clamp_min_above_max", lambda x: torch.clamp(x, 2.0, -2.0), [x4],
           cpu={"clamp": "min 2 > max -2: ReluMinMax needs min_value <= max_value"})
    s.case("clamp_min_only", lambda x: torch.clamp(x, min=0.25), [x4],
           cpu={"clamp": "a bound is None"})
    s.case("clamp_max_only", lambda x: torch.clamp(x, max=0.25), [x4],
           cpu={"clamp": "a bound is None"})
    s.case("clamp_chain", lambda x: torch.clamp(x * 2.0, -1.0, 1.0) + 1.0, [x4],
           npu=["mul.Tensor", "clamp", "add.Tensor"])

    # several multi-op nodes of one kind in one partition (op and tensor names stay unique)
    s.case("two_thresholds", lambda g, x: aten.threshold_backward(
        aten.threshold_backward(g, x, 0.0), x, 0.5), [g4, x4], npu=["threshold_backward"])
    s.case("chain_mixed", lambda a, b: F.silu(torch.add(a * 2.0, b, alpha=0.5) - 1.0) / 3.0,
           [x4, r(3, 1, 1)], npu=["mul.Tensor", "add.Tensor", "sub.Tensor", "silu",
                                   "div.Tensor"])

    # declines
    s.case("int_operands", lambda a: (a + 1) * 2.0,
           [torch.randint(-5, 5, (3, 4), dtype=torch.int64)],
           cpu={"add.Tensor": "int64", "mul.Tensor": "int64"}, socs=SOCS[:3])
    s.case("rank5_result", lambda a, b: a + b, [r(2, 1, 3, 4, 5), r(2, 3, 4, 5)],
           cpu={"add.Tensor": "rank-4 operand of a rank-5 result"})
    s.case("float64_operand", lambda a, b: a * b, [x4, torch.tensor(2.0, dtype=torch.float64)],
           cpu={"mul.Tensor": "float64"}, socs=SOCS[:3])
    # div's trunc / floor rounding stays on the CPU, between NPU nodes; gelu's tanh form (a
    # string argument too) is lowered
    s.case("div_floor", lambda a, b: torch.div(a * 2.0, b, rounding_mode="floor"),
           [x4 * 4, y4], npu=["mul.Tensor"],
           cpu={"div.Tensor_mode": "rounding_mode 'floor': ElementWiseDivide is true division"})
    s.case("div_scalar_mode_trunc",
           lambda a: aten.div.Scalar_mode(a * 2.0, -0.75, rounding_mode="trunc"), [x4 * 4],
           npu=["mul.Tensor"], cpu={"div.Scalar_mode": "no NPU lowering for aten.div.Scalar_mode"})
    s.case("gelu_tanh", lambda a: F.gelu(a * 2.0, approximate="tanh") + 1.0, [x4],
           npu=["mul.Tensor", "gelu", "add.Tensor"])
    return s


if __name__ == "__main__":
    build_suite().main()
