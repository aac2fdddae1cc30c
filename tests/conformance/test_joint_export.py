#!/usr/bin/env python3
"""edgegrad.export_joint end to end: torch.export joint training steps exported, run with the
edgegrad CLI on the CPU path and compiled for and run on SM8650's NPU path (at fp32, the
precision of the reference), compared with PyTorch computed eagerly. Needs PyTorch 2.x
(torch.export):

    .venv/bin/python tests/conformance/test_joint_export.py \
        --edgegrad build/edgegrad --workdir DIR [--filter SUBSTR] [--models DIR]

Cases (each a module-with-loss returning ``(loss, logits.detach())``, exported with
``torch.export.export(..., strict=False)`` then ``edgegrad.export_joint``):
- ``keep_whole_in_ops_def``: every target of joint.KEEP_WHOLE is in src/ir/ops.def;
- ``refusals``: what export_joint must refuse with a one-line ValueError (an already joint
  program, a non-scalar loss, nothing to differentiate, a bad loss_index), and under Debian's
  torch 1.13 (/usr/bin/python3, if present) ``import edgegrad`` works and export_joint says it
  needs torch.export;
- ``ce_bn``: conv + BatchNorm (train) + ReLU + maxpool + linear, cross-entropy, all trained;
- ``frozen_backbone``: the same net with only the linear head trained (no conv backward);
- ``bn_eval``: the same net with its BatchNorm in eval mode (running statistics are statics),
  user inputs named ``input``/``target`` by ``input_names``;
- ``frozen_convs``: frozen convs between a trained stem bias and a trained head, so their
  ``convolution_backward`` ([T,F,F] / [F,F,T]) must be on SM8650's NPU (placement report);
- ``mse``: conv-tanh, strided conv-sigmoid, avgpool, SiLU, adaptive avgpool, linear, MSE;
- ``resnet18`` / ``mobilenet_v2`` (acceptance): torchvision's models (tvshim), num_classes=10,
  batch 2, 3x64x64, seeded random init, train mode (MobileNetV2's Dropout module in eval: no
  randomness). Judged by the rule for real nets of spread.py, as the model zoo is: each output
  passes when ``max|edgegrad - ref64| <= 2.5 * err(PyTorch fp32) + 1e-5 * max|ref64|``, with
  ref64 the step in float64 and err(PyTorch fp32) the largest error of PyTorch's fp32 runs
  under spread.VARIANTS (threads, channels_last, oneDNN off, AVX2 kernels), and spread's flip
  rule for ReLU/ReLU6/max-pool decisions within rounding of a bound or a tie; the file itself
  is judged the same way re-executed by torch.ops (graph_exec), which separates an export
  error from a runtime one.
The small nets are judged with compare.py against eager PyTorch fp32 (rtol 1e-4, atol
1e-5 * max(1, max|want|)). Every case also checks the training naming contract: the graph's
outputs are exactly loss, grad_ per trained parameter, new_ per changed buffer, out0.
A graph op the runtime lacks fails the case with the list of such ops.
Prints one line per case and last `N passed, M failed`; exit 1 on any failure.
"""
import argparse
import contextlib
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path[:0] = [HERE, os.path.join(ROOT, "python")]

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import compare  # noqa: E402
import placement  # noqa: E402
import spread  # noqa: E402

SOC = "SM8650"
TIMEOUT_S = 300
warnings.filterwarnings("ignore", category=FutureWarning)


# --------------------------------------------------------------------------------------------
# the nets


class WithLoss(nn.Module):
    """model + loss; returns (loss, logits.detach()) as ExecuTorch's training export does."""

    def __init__(self, m, loss=F.cross_entropy):
        super().__init__()
        self.m, self.loss = m, loss

    def forward(self, x, y):
        out = self.m(x)
        return self.loss(out, y), out.detach()


class ConvBn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        return self.fc(torch.flatten(F.max_pool2d(F.relu(self.bn(self.conv(x))), 2), 1))


class FrozenConvs(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, stride=2, padding=1, bias=False)
        self.c3 = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        h = F.relu(self.c2(F.relu(self.c1(x))))
        return self.fc(F.relu(self.c3(h)).flatten(1))


class MseNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 4, 3, stride=2, padding=1)
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        h = F.avg_pool2d(torch.sigmoid(self.conv2(torch.tanh(self.conv(x)))), 2)
        return self.fc(F.adaptive_avg_pool2d(F.silu(h), 1).flatten(1))


def _freeze(model, trained):
    for name, p in model.named_parameters():
        p.requires_grad_(any(name.startswith(t) for t in trained))
    return model


def _ce_inputs(size=8):
    return torch.randn(2, 3, size, size), torch.randint(0, 10, (2,))


def make_ce_bn():
    return WithLoss(ConvBn()), _ce_inputs()


def make_frozen_backbone():
    return WithLoss(_freeze(ConvBn(), ["fc."])), _ce_inputs()


def make_bn_eval():
    """BatchNorm in eval mode (frozen statistics, the usual fine-tuning setup): statics."""
    model = ConvBn()
    model.bn.eval()
    return WithLoss(model), _ce_inputs()


def make_frozen_convs():
    return WithLoss(_freeze(FrozenConvs(), ["c1.bias", "fc."])), _ce_inputs()


def make_mse():
    return WithLoss(MseNet(), F.mse_loss), (torch.randn(2, 3, 8, 8), torch.randn(2, 5))


def _tvshim(models_dir):
    for folder in [models_dir, os.path.join(ROOT, "tests", "models")]:
        if folder and os.path.exists(os.path.join(folder, "tvshim.py")):
            sys.path.insert(0, folder)
            import tvshim
            return tvshim
    raise RuntimeError("tvshim.py not found: give --models DIR")


def make_resnet18(models_dir):
    model = _tvshim(models_dir).load("resnet").resnet18(num_classes=10)
    return WithLoss(model), _ce_inputs(64)


def make_mobilenet_v2(models_dir):
    model = _tvshim(models_dir).load("mobilenetv2").mobilenet_v2(num_classes=10)
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.eval()  # no randomness; the rest stays in train mode
    return WithLoss(model), _ce_inputs(64)


# --------------------------------------------------------------------------------------------
# PyTorch's values, eagerly


def _flat(name):
    return name.replace(".", "_")


def eager(model, args, dtype=None, mode=None, layout=torch.contiguous_format):
    """Eager PyTorch on a deep copy: {output name: tensor} under the naming contract
    (loss, grad_<param>, new_<buffer> for each buffer that changed, out0...). ``mode``, a
    spread.Decisions, records or imposes the forward's ReLU/max pool decisions; ``layout``
    torch.channels_last runs PyTorch's NHWC kernels."""
    model = spread.out_of_place(copy.deepcopy(model)).to(memory_format=layout)
    if dtype is not None:
        model = model.to(dtype)
        args = [a.to(dtype) if a.is_floating_point() else a for a in args]
    args = [a.clone() for a in args]
    args = [a.to(memory_format=layout) if a.dim() == 4 else a for a in args]
    before = {n: b.clone() for n, b in model.named_buffers()}
    trained = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    with mode or contextlib.nullcontext():
        loss, *rest = model(*args)
    if mode is not None:
        mode.check_imposed()
    grads = torch.autograd.grad(loss, [p for _, p in trained])
    values = {"loss": loss.detach()}
    values.update({"grad_" + _flat(n): g for (n, _), g in zip(trained, grads)})
    for n, b in model.named_buffers():
        if not torch.equal(b, before[n]):
            values["new_" + _flat(n)] = b.detach().clone()
    values.update({f"out{i}": t.detach() for i, t in enumerate(rest)})
    return values


def graph_inputs(graph, model, args):
    """The graph's runtime inputs: user inputs by position, parameters and buffers by their
    flat names."""
    state = {_flat(n): t for n, t in list(model.named_parameters()) +
             list(model.named_buffers())}
    users = iter(args)
    inputs = {}
    for entry in graph["inputs"]:
        name = entry["name"]
        inputs[name] = state[name] if name in state else next(users)
    return {n: t.detach().numpy() for n, t in inputs.items()}


# --------------------------------------------------------------------------------------------
# the CLI


def _cli(argv, what):
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"{what} timed out after {TIMEOUT_S} s"
    if proc.returncode == 0:
        return None
    lines = (proc.stderr.strip() or proc.stdout.strip() or "(no message)").splitlines()
    return f"{what} exit {proc.returncode}: {lines[-1]}"


def known_ops():
    with open(os.path.join(ROOT, "src", "ir", "ops.def"), encoding="utf-8") as f:
        return set(re.findall(r'^EG_OP\(\w+,\s*"([^"]+)"\)', f.read(), re.M))


def run_cli(cli, json_path, inputs, folder, soc=None):
    """`edgegrad run` (after `compile --report` for a SoC, both at --precision fp32, PyTorch's
    precision): (outputs or None, failure or None, report or None)."""
    in_dir = os.path.join(folder, "inputs")
    os.makedirs(in_dir, exist_ok=True)
    argv = [cli, "run", json_path]
    for name, array in inputs.items():
        path = os.path.join(in_dir, name + ".npy")
        np.save(path, np.asarray(array, order="C"))  # ascontiguousarray makes 0-d 1-d
        argv += ["--input", f"{name}={path}"]
    out_dir = os.path.join(folder, f"out-{soc or 'cpu'}")
    shutil.rmtree(out_dir, ignore_errors=True)
    argv += ["--output-dir", out_dir]
    report = None
    if soc:
        report_path = os.path.join(folder, f"report-{soc}.json")
        failure = _cli([cli, "compile", json_path, "--soc", soc, "--precision", "fp32", "--report",
                        report_path, "-q"], f"edgegrad compile --soc {soc}")
        if failure:
            return None, failure, None
        with open(report_path, encoding="utf-8") as f:
            report = json.load(f)
        argv += ["--soc", soc, "--precision", "fp32"]
    failure = _cli(argv, "edgegrad run" + (f" --soc {soc}" if soc else ""))
    if failure:
        return None, failure, report
    with open(json_path, encoding="utf-8") as f:
        names = [o["name"] for o in json.load(f)["outputs"]]
    return {n: np.load(os.path.join(out_dir, n + ".npy")) for n in names}, None, report


def frozen_conv_placement(graph, report):
    """Every convolution_backward whose weight is a static (frozen) and whose grad_weight is
    not asked for must be on the NPU. Returns (failures, on_npu, count)."""
    statics = {s["value"] for s in graph["statics"]}
    placed = {e["name"]: e for e in report["nodes"]}
    failures, on_npu, count = [], 0, 0
    for n in graph["nodes"]:
        if n["target"] != placement.CONV_BWD:
            continue
        weight, mask = n["args"][2], n["args"][-1]
        if not (isinstance(weight, dict) and weight.get("value") in statics) or mask[1]:
            continue
        count += 1
        entry = placed.get(n["name"], {})
        if entry.get("placement") == "npu":
            on_npu += 1
        else:
            failures.append(f"frozen conv backward {n['name']} (mask {mask}) on "
                            f"{entry.get('placement')}: {entry.get('reason')}")
    return failures, on_npu, count


# --------------------------------------------------------------------------------------------
# the cases


class Result:
    def __init__(self, name):
        self.name, self.failures, self.notes = name, [], []

    def fail(self, line):
        self.failures.append(line)


def naming_contract(graph, want, res, data):
    got = [o["name"] for o in graph["outputs"]]
    if got != list(want):
        res.fail(f"outputs {got} != PyTorch's {list(want)}")
    for entry in graph["inputs"]:
        name = entry["name"]
        if name not in data and f"grad_{name}" not in got and f"new_{name}" not in got:
            res.fail(f"runtime input {name} is neither data, trained nor state")


def export_case(make, folder, res, names=None):
    import edgegrad
    torch.manual_seed(0)
    model, args = make()
    ep = torch.export.export(copy.deepcopy(model), tuple(args), strict=False)
    result = edgegrad.export_joint(ep, os.path.join(folder, "model"), input_names=names)
    graph = result.graph
    missing = sorted({n["target"] for n in graph["nodes"]} - known_ops() - {"getitem"})
    if missing:
        res.fail(f"ops not in edgegrad (src/ir/ops.def): {', '.join(missing)}")
    return model, args, result, graph


def reexecute(result, inputs, want, res):
    """The file re-executed op by op with torch.ops (graph_exec), against ``want``: shows the
    export is right where the runtime cannot run it yet."""
    import graph_exec
    graph, statics = graph_exec.load(result.json_path)
    got = graph_exec.execute(graph, statics, inputs)
    bad = [f"{name}: {reason}" for name, t in want.items()
           if (reason := compare.compare(got[name], t.numpy()))]
    res.notes.append("file re-executed with torch.ops (graph_exec): " +
                     ("matches PyTorch" if not bad else "MISMATCH " + "; ".join(bad[:3])))
    return not bad


def prepare(make, folder, res, names=None):
    """Export the case and compute PyTorch's fp32 values: (model, args, result, inputs, want),
    or None when the names or the runtime's vocabulary already fail it (the file is then
    re-executed with torch.ops instead)."""
    model, args, result, graph = export_case(make, folder, res, names)
    want = eager(model, args)
    naming_contract(graph, want, res, names or ("x", "y"))
    inputs = graph_inputs(graph, model, args)
    if res.failures:
        reexecute(result, inputs, want, res)
        return None
    return model, args, result, inputs, want


def run_path(cli, result, inputs, folder, soc, res):
    """Run one path (None: CPU); for a SoC also check its placement report. Returns
    (outputs or None, report or None)."""
    path = soc or "cpu"
    got, failure, report = run_cli(cli, result.json_path, inputs, folder, soc)
    if report is not None:
        placed, stats = placement.check_report(result.graph, report, soc)
        res.failures += [f"[{path}] {f}" for f in placed]
        res.notes.append(f"{soc}: NPU nodes {stats['npu']}/{stats['nodes']}, "
                         f"convolution_backward on NPU {stats['conv_bwd_npu']}/"
                         f"{stats['conv_bwd']}")
    if failure:
        res.fail(f"[{path}] {failure}")
    return got, report


def small_case(make, folder, cli, res, expect_frozen_npu=False, names=None):
    prepared = prepare(make, folder, res, names)
    if prepared is None:
        return
    _, _, result, inputs, want = prepared
    worst = 0.0
    for soc in (None, SOC):
        got, report = run_path(cli, result, inputs, folder, soc, res)
        if report is not None:
            frozen, on_npu, count = frozen_conv_placement(result.graph, report)
            res.failures += [f"[{soc}] {f}" for f in frozen]
            if expect_frozen_npu and count == 0:
                res.fail(f"[{soc}] no frozen convolution_backward in the graph")
            res.notes.append(f"frozen conv backward on NPU {on_npu}/{count}")
        for name, t in (want.items() if got is not None else ()):
            reason = compare.compare(got[name], t.numpy())
            if reason:
                res.fail(f"[{soc or 'cpu'}] {name}: {reason}")
            elif t.is_floating_point() and t.numel():
                w = t.double().numpy()
                tol = compare.bound(w)
                worst = max(worst, float(np.max(np.abs(got[name] - w) / tol)))
    res.notes.insert(0, f"{len(want)} outputs, worst err/tol {worst:.2g}")


ACCEPTANCE = {"resnet18": make_resnet18, "mobilenet_v2": make_mobilenet_v2}


def acceptance_step(model, args):
    """An acceptance net's step under spread's step protocol."""
    def step(dtype, impose=None, layout=torch.contiguous_format):
        mode = spread.Decisions(impose=impose)
        values = eager(model, args, dtype, mode, layout)
        return {k: (v.double() if v.is_floating_point() else v).numpy()
                for k, v in values.items()}, mode.seen
    return step


def acceptance_step_of(case, models, state, args):
    """``acceptance_step`` rebuilt from the model's state: what spread's AVX2 variant runs in
    a fresh Python."""
    model, _ = ACCEPTANCE[case](models)
    model.load_state_dict(state)
    return acceptance_step(model, args)


class Judged:
    """What judge64 measures edgegrad against: PyTorch's fp32 values (``fp32``, tensors),
    the float64 step (``ref64``, ``seen64``: its decisions), spread's fp32 runs and the
    references they are measured against, and the step itself (for the flip rule)."""

    def __init__(self, step, fp32, runs):
        self.step, self.fp32, self.runs = step, fp32, runs
        self.ref64, self.seen64 = step(torch.float64)
        self.pytorch = spread.own_references(step, runs, self.ref64, self.seen64)


def acceptance_case(name, models, folder, cli, res):
    prepared = prepare(lambda: ACCEPTANCE[name](models), folder, res)
    if prepared is None:
        return
    model, args, result, inputs, fp32 = prepared
    step = acceptance_step(model, args)
    recipe = (os.path.abspath(__file__), "acceptance_step_of",
              {"case": name, "models": models, "state": model.state_dict(), "args": args})
    judged = Judged(step, fp32, spread.fp32_runs(step, recipe, folder))
    with open(result.json_path, encoding="utf-8") as f:
        path, kinds = spread.decisions_graph(json.load(f), folder)
    import graph_exec  # the file run by torch.ops: tells the export's error from the runtime's
    got = graph_exec.execute(*graph_exec.load(path), inputs)
    decided = spread.split_decisions(got, kinds)
    judge64(got, lambda: (decided, None), judged, "torch.ops on the file", res)
    for soc in (SOC, None):
        got, _ = run_path(cli, result, inputs, folder, soc, res)
        if got is not None:
            judge64(got, lambda soc=soc: edgegrad_decisions(cli, path, kinds, inputs, folder, soc),
                    judged, soc or "cpu", res)
    res.notes.insert(0, f"{len(judged.ref64)} outputs, PyTorch fp32 runs: "
                        f"{', '.join(label for label, *_ in judged.runs)}")


def edgegrad_decisions(cli, path, kinds, inputs, folder, soc):
    """edgegrad's decisions (spread.decisions_graph's file ``path``) on one path: (decisions
    or None, failure or None)."""
    got, failure, _ = run_cli(cli, path, inputs, os.path.join(folder, "decisions"), soc)
    return (None, failure) if failure else (spread.split_decisions(got, kinds), None)


def judge64(got, decide, judged, path, res):
    """Each output under spread's rule for real nets (float64 reference, PyTorch fp32's
    spread, the flip rule with the decisions ``decide()`` returns), and in PyTorch's dtype."""
    for name, want in judged.fp32.items():
        mine = got.get(name)
        if mine is not None and mine.dtype != want.numpy().dtype:
            res.fail(f"[{path}] {name}: {mine.dtype}, want {want.numpy().dtype}")
    failures, worst, where = spread.judge(got, judged.ref64, judged.pytorch)
    note = ""
    if failures:
        eg, failure = decide()
        if eg is None:
            failures.insert(0, f"decisions: {failure}")
        else:
            flipped, worst2, where2, note = spread.flip_rule(judged.step, eg, judged.seen64,
                                                             judged.runs, got)
            if note:
                failures, worst, where = flipped, worst2, where2
            else:  # no flip to impose, or one that is no rounding flip: say so
                failures = flipped + failures
    res.failures += [f"[{path}] {f}" for f in failures]
    res.notes.append(f"{path}: worst err/bound {worst:.2f} at {where}{note}")


def keep_whole_case(res):
    from edgegrad import joint
    unknown = [t for t in joint.KEEP_WHOLE if t not in known_ops()]
    if unknown:
        res.fail(f"KEEP_WHOLE targets not in src/ir/ops.def: {unknown}")
    res.notes.append(f"{len(joint.KEEP_WHOLE)} targets, all in ops.def" if not unknown else "")


def _refused(fn, res, what, expect):
    try:
        fn()
    except ValueError as e:
        text = str(e)
        if "\n" in text or not re.search(expect, text):
            res.fail(f"{what}: message {text!r} (want one line matching {expect!r})")
        return
    except Exception as e:  # anything else is not the promised refusal
        res.fail(f"{what}: {type(e).__name__} instead of ValueError: {str(e)[:200]}")
        return
    res.fail(f"{what}: not refused")


class _PerSample(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x, y):
        out = self.fc(x)
        return F.cross_entropy(out, y, reduction="none"), out.detach()


def refusals_case(folder, res):
    import edgegrad
    import torch.export.experimental
    stem = os.path.join(folder, "refused")
    torch.manual_seed(0)
    model, args = make_mse()
    ep = torch.export.export(model, args, strict=False)
    joint = torch.export.experimental._export_forward_backward(
        torch.export.export(copy.deepcopy(model), args, strict=False))
    _refused(lambda: edgegrad.export_joint(joint, stem), res, "already joint", "already joint")
    _refused(lambda: edgegrad.export_joint(ep, stem, loss_index=2), res, "loss_index 2",
             "loss_index")
    _refused(lambda: edgegrad.export_joint(ep, stem, input_names=["x"]), res,
             "one input name for two", "input_names")
    frozen = _freeze(copy.deepcopy(model), [])
    _refused(lambda: edgegrad.export_joint(
        torch.export.export(frozen, args, strict=False), stem), res, "nothing trained",
        "gradient|requires grad|scalar")
    per_sample = torch.export.export(_PerSample(), (torch.randn(2, 4), torch.tensor([0, 2])),
                                     strict=False)
    _refused(lambda: edgegrad.export_joint(per_sample, stem), res, "per-sample loss",
             "scalar")
    _refused(lambda: edgegrad.export_joint("not a program", stem), res, "not a program",
             "ExportedProgram")
    if os.path.exists(stem + ".json"):
        res.fail(f"a refused export wrote {stem}.json")
    debian = "/usr/bin/python3"
    if os.path.exists(debian):
        code = ("import sys, edgegrad\n"
                "try:\n    edgegrad.export_joint(None, 'x')\n"
                "except ValueError as e:\n    print('REFUSED', e)\n")
        proc = subprocess.run([debian, "-c", code], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")})
        out = proc.stdout.strip()
        if proc.returncode != 0 or not out.startswith("REFUSED") or "torch.export" not in out \
                or "\n" in out:
            res.fail(f"torch 1.13: exit {proc.returncode}, {out or proc.stderr.strip()[-200:]!r}")
        else:
            res.notes.append(f"torch 1.13: {out[len('REFUSED '):]}")


CASES = ["keep_whole_in_ops_def", "refusals", "ce_bn", "frozen_backbone", "bn_eval", "frozen_convs",
         "mse",
         "resnet18", "mobilenet_v2"]


def run_case(name, args, folder, res):
    cli = args.edgegrad
    if name == "keep_whole_in_ops_def":
        keep_whole_case(res)
    elif name == "refusals":
        refusals_case(folder, res)
    elif name == "ce_bn":
        small_case(make_ce_bn, folder, cli, res)
    elif name == "frozen_backbone":
        small_case(make_frozen_backbone, folder, cli, res)
    elif name == "bn_eval":
        small_case(make_bn_eval, folder, cli, res, names=("input", "target"))
    elif name == "frozen_convs":
        small_case(make_frozen_convs, folder, cli, res, expect_frozen_npu=True)
    elif name == "mse":
        small_case(make_mse, folder, cli, res)
    elif name in ACCEPTANCE:
        acceptance_case(name, args.models, folder, cli, res)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--edgegrad", required=True, help="the edgegrad CLI binary")
    p.add_argument("--workdir", required=True, help="folder for the cases' files")
    p.add_argument("--filter", default="", help="run only cases whose name contains SUBSTR")
    p.add_argument("--models", help="folder holding tvshim.py (default: tests/models)")
    args = p.parse_args(argv)
    if not hasattr(torch, "export"):
        print(f"test_joint_export: torch {torch.__version__} has no torch.export: run with "
              "PyTorch 2.x", file=sys.stderr)
        return 2
    args.edgegrad = os.path.abspath(args.edgegrad)
    torch.set_num_threads(1)
    passed = failed = 0
    for name in CASES:
        if args.filter not in name:
            continue
        folder = os.path.join(args.workdir, name)
        os.makedirs(folder, exist_ok=True)
        res, start = Result(name), time.monotonic()
        try:
            run_case(name, args, folder, res)
        except Exception as e:  # an export or harness error fails this case only
            first = (str(e).strip().splitlines() or [""])[0]
            res.fail(f"{type(e).__name__}: {first}")
        seconds = time.monotonic() - start
        notes = "; ".join(n for n in res.notes if n)
        if res.failures:
            failed += 1
            print(f"FAIL {name} ({seconds:.1f} s): " + " | ".join(res.failures[:6]) +
                  (f" | ... {len(res.failures) - 6} more" if len(res.failures) > 6 else "") +
                  (f" [{notes}]" if notes else ""))
        else:
            passed += 1
            print(f"PASS {name} ({seconds:.1f} s): {notes}")
        sys.stdout.flush()
    print(f"{passed} passed, {failed} failed")
    return 0 if passed and not failed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
