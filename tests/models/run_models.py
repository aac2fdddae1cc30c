"""The torchvision model zoo (`make models`): torchvision's own definitions of twelve conv-net
families, a segmentation model and a small vision transformer, each trained in three regimes,
exported with export_training_step, run by edgegrad on the CPU and compiled for two SoCs, and
compared with PyTorch under the numerics policy below.

    PYTHONPATH=python .venv/bin/python tests/models/run_models.py --edgegrad build/edgegrad \\
        [--workdir DIR] [--families resnet18,...] [--regimes full,head,bias]
        [--targets cpu,SM8650,SM8350] [--size 64] [-j 2] [--flips]

Cases: every family x regime x target. A model is built with random initialisation
(torch.manual_seed(0)), 10 classes, in train mode (BatchNorm statistics are state; Dropout and
StochasticDepth draw masks, which the export makes graph inputs and every PyTorch reference
replays), batch 2 of 3 x SIZE x SIZE (64 by default), loss cross-entropy. Regimes: ``full``
(every parameter), ``head`` (the classifier's last Linear or Conv2d only), ``bias`` (BitFit:
every bias). The segmentation model (LRASPP-MobileNetV3-Large) is trained with pixel-wise
cross-entropy against a class per pixel, its head regime being its two classifier convolutions;
the vision transformer (torchvision's VisionTransformer, 4 layers, patches of 8 x 8) always
takes 32 x 32 images (OPTIONS).
Targets: ``cpu`` (the portable kernels), ``SM8650`` (HTP V75, fp16: the NPU
partitions run on the QNN-semantics executor, compiled and run with --precision fp32 as the
fp32 bounds below assume; the placement report is checked by tests/conformance/placement.py)
and ``SM8350`` (V68: no float path, everything falls back).

Numerics policy: the rule for real, deep nets in tests/conformance/spread.py (its module doc
says why), shared with the acceptance nets of tests/conformance/test_joint_export.py. Each
output (loss, gradients, new buffers) is compared with a float64 PyTorch reference (the same
model, inputs and masks in double), and passes when

    err(edgegrad) <= 2.5 * err(PyTorch fp32) + 1e-5 * max|ref64|      err(a) = max |a - ref64|

err(PyTorch fp32) is the largest over PyTorch fp32 runs of the step under what varies between
hosts (spread.VARIANTS: 1 and 2 threads, channels_last, oneDNN off, AVX2 kernels in a fresh
Python) and the exported graph run op by op with torch.ops (tests/conformance/graph_exec.py),
each measured against a float64 reference with its own ReLU/max pool decisions. When edgegrad
fails the rule, the flip rule (spread.flip_rule) compares its decisions (its ReLU outputs and
inputs and max pool indices and inputs, as extra outputs of the same graph run on the same
target) with the float64 forward's: differing decisions that all lie within rounding of a bound
or a tie, follow PyTorch's rule at exact ties of edgegrad's own input and are at most
spread.FLIP_SHARE of all decisions are imposed on the float64 reference, and the same rule
decides; the line then says ``(flip rule: ...)`` with the decisions imposed and their share.
Anything else fails the case. A failure line names the worst output with every run's error.
The strict rtol 1e-4 rule stays in the op tests and tests/conformance (well-conditioned graphs).
``--flips`` counts the differing decisions on every case (``[decisions differing ...]``).

Each line: ``PASS|FAIL family regime target: worst output ratio at that output (its error and
PyTorch fp32's), NPU nodes n/N, conv backward on the NPU k/K, NPU FLOPs s %`` (the report's
NPU share of the step's estimated FLOPs) [``(flip rule: ...)``]; the last line ``models: N
passed, M failed``. Exit 0 only if every case passed.
"""
import argparse
import copy
import json
import os
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=UserWarning)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import spread  # noqa: E402
import tvshim  # noqa: E402
from edgegrad import export_training_step  # noqa: E402

# family -> (torchvision.models module, constructor, extra keyword arguments)
FAMILIES = {
    "resnet18": ("resnet", "resnet18", {}),
    "resnet50": ("resnet", "resnet50", {}),
    "mobilenet_v2": ("mobilenetv2", "mobilenet_v2", {}),
    "mobilenet_v3_small": ("mobilenetv3", "mobilenet_v3_small", {}),
    "squeezenet1_1": ("squeezenet", "squeezenet1_1", {}),
    "shufflenet_v2_x0_5": ("shufflenetv2", "shufflenet_v2_x0_5", {}),
    "mnasnet0_5": ("mnasnet", "mnasnet0_5", {}),
    "efficientnet_b0": ("efficientnet", "efficientnet_b0", {}),
    "regnet_x_400mf": ("regnet", "regnet_x_400mf", {}),
    "googlenet": ("googlenet", "googlenet", {"aux_logits": False, "init_weights": True}),
    "densenet121": ("densenet", "densenet121", {}),
    "convnext_tiny": ("convnext", "convnext_tiny", {}),
    # segmentation: MobileNetV3-Large with the Lite R-ASPP head (no pretrained backbone)
    "lraspp_mobilenet_v3_large": ("segmentation.lraspp", "lraspp_mobilenet_v3_large",
                                  {"weights": None, "weights_backbone": None}),
    # a small vision transformer: 4 encoder layers over 16 patches of 8 x 8
    "vit_tiny": ("vision_transformer", "VisionTransformer",
                 {"image_size": 32, "patch_size": 8, "num_layers": 4, "num_heads": 4,
                  "hidden_dim": 64, "mlp_dim": 128}),
}
# What sets a family apart from an image classifier at --size:
#   size          the input size it is built for (ViT lays its patches out for one size)
#   segmentation  the model returns {"out": logits per pixel}; the loss is pixel-wise
#                 cross-entropy (aten.nll_loss2d) against a class per pixel
#   head          the modules the head regime trains (default: the last Linear or Conv2d)
OPTIONS = {
    "lraspp_mobilenet_v3_large": {"segmentation": True,
                                  "head": ("classifier.low_classifier",
                                           "classifier.high_classifier")},
    "vit_tiny": {"size": 32},
}
REGIMES = ("full", "head", "bias")
TARGETS = ("cpu", "SM8650", "SM8350")
CLASSES, BATCH = 10, 2


_PIXEL_LOGITS = {}


def _pixel_logits(cls):
    """``cls`` whose forward returns the segmentation logits alone (its {"out": ...}), so the
    step's loss is F.cross_entropy(model(x), y) as for the classifiers. One class per ``cls``,
    defined here so that copies and state dicts keep torchvision's parameter names."""
    if cls not in _PIXEL_LOGITS:
        _PIXEL_LOGITS[cls] = type(cls.__name__, (cls,),
                                  {"forward": lambda self, x: cls.forward(self, x)["out"]})
    return _PIXEL_LOGITS[cls]


def build(family, size, batch=BATCH):
    """(model, input, target) of ``family``: input [batch, 3, size, size] (or the family's own
    size), target a class per image, or per pixel for segmentation."""
    module, ctor, extra = FAMILIES[family]
    options = OPTIONS.get(family, {})
    size = options.get("size", size)
    torch.manual_seed(0)
    model = getattr(tvshim.load(module), ctor)(num_classes=CLASSES, **extra).train()
    if options.get("segmentation"):
        model.__class__ = _pixel_logits(type(model))
    x = torch.randn(batch, 3, size, size)
    y = torch.randint(0, CLASSES, (batch, size, size) if options.get("segmentation")
                      else (batch,))
    return model, x, y


def trainable(model, regime, family=None):
    """The parameter names ``regime`` trains: every one (full), every bias (BitFit), or the
    head: the family's head modules, else the last Linear or Conv2d."""
    names = [n for n, _ in model.named_parameters()]
    if regime == "full":
        return names
    if regime == "bias":
        return [n for n in names if n.endswith("bias")]
    heads = OPTIONS.get(family, {}).get("head") or \
        [[name for name, m in model.named_modules()
          if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d))][-1]]
    return [n for n in names if any(n.startswith(h + ".") for h in heads)]


def _flat(name):
    return name.replace(".", "_")


def eager(model, x, y, train, draws, dtype, impose=None, layout=torch.contiguous_format):
    """PyTorch's step in ``dtype`` on a copy of the model: loss.backward(), the export's
    naming (loss, grad_<p>, new_<b> for each buffer the step changed). Returns (outputs,
    decisions): the ReLU/max pool decisions it took (``spread.Decisions``), or ``impose``d
    ones. ``layout`` torch.channels_last runs PyTorch's NHWC kernels (other summation orders)."""
    model = spread.out_of_place(copy.deepcopy(model).to(dtype).to(memory_format=layout))
    x = x.to(memory_format=layout)
    for name, p in model.named_parameters():
        p.requires_grad_(name in train)
    before = {n: b.clone() for n, b in model.named_buffers()}
    mode = spread.Decisions(draws.values(), impose)
    with mode:
        loss = F.cross_entropy(model(x.to(dtype)), y)
    loss.backward()
    mode.check_imposed()
    out = {"loss": loss.detach()}
    out.update({"grad_" + _flat(n): p.grad for n, p in model.named_parameters() if n in train})
    out.update({"new_" + _flat(n): b for n, b in model.named_buffers()
                if not torch.equal(b, before[n])})
    return {k: v.detach().double().numpy() for k, v in out.items()}, mode.seen


def case_step(model, x, y, train, draws):
    """One case's step under ``spread``'s step protocol."""
    def step(dtype, impose=None, layout=torch.contiguous_format):
        return eager(model, x, y, train, draws, dtype, impose, layout)
    return step


def step_of(family, size, state, x, y, train, draws):
    """``case_step`` rebuilt from the model's state: what the AVX2 variant's fresh Python
    runs (``spread.fp32_runs``' recipe)."""
    model, _, _ = build(family, size)
    model.load_state_dict(state)
    return case_step(model, x, y, train, draws)


def outputs_of(out_dir, names):
    """edgegrad's outputs in ``out_dir``: {name: array, None where not written}."""
    paths = {n: os.path.join(out_dir, n + ".npy") for n in names}
    return {n: np.load(p) if os.path.exists(p) else None for n, p in paths.items()}


def graph_run(path, kinds, inputs):
    """PyTorch fp32's exported graph op by op with torch.ops (tests/conformance/graph_exec.py),
    the decisions graph: (outputs, decisions)."""
    import graph_exec

    graph, statics = graph_exec.load(path)
    out = graph_exec.execute(graph, statics, {name: np.load(file) for name, file in inputs})
    decisions = spread.split_decisions(out, kinds)
    return {k: v.astype(np.float64) for k, v in out.items()}, decisions


def edgegrad_decisions(command, path, kinds, inputs, target, folder):
    """edgegrad's decisions (``spread.decisions_graph``), run on the same target. Returns
    (decisions or None, failures)."""
    import run_conformance as rc

    out_dir = os.path.join(folder, f"decisions-{target}")
    argv = command + ["run", path, "--output-dir", out_dir, "-q"]
    for name, file in inputs:
        argv += ["--input", f"{name}={file}"]
    if target != "cpu":
        argv += ["--soc", target, "--precision", "fp32"]
    failures = rc._invoke(argv, "edgegrad run (decisions)")
    if failures:
        return None, failures
    names = [f"decision{part}_{k}" for k in range(len(kinds)) for part in ("", "_input")]
    return spread.split_decisions(outputs_of(out_dir, names), kinds), []


def run_family(family, regimes, targets, size, workdir, command, count_flips=False, zoo=None,
               egp=False):
    """The cases of ``family``: [(passed, line)]. ``zoo``: the module whose ``build(family,
    size)``, ``trainable(model, regime, family)`` and ``step_of`` (the AVX2 run's recipe, as
    here) make them (default: this one, the torchvision families). ``egp``: an NPU target runs
    the program compiled for it (``edgegrad compile -o``, then ``edgegrad run PROGRAM.egp``),
    not the graph compiled in memory by ``run --soc``."""
    import run_conformance as rc

    zoo = zoo or sys.modules[__name__]
    lines = []
    model, x, y = zoo.build(family, size)
    for regime in regimes:
        stem_dir = os.path.join(workdir, family, regime)
        os.makedirs(stem_dir, exist_ok=True)
        train = zoo.trainable(model, regime, family)
        try:
            result = export_training_step(model, F.cross_entropy, (x, y),
                                          os.path.join(stem_dir, "model"), trainable=train)
        except Exception as e:
            lines += [(False, f"{family} {regime} {t}: export failed: {type(e).__name__}: "
                       f"{str(e).splitlines()[0] if str(e) else ''}") for t in targets]
            continue
        graph = result.graph
        known = {"input": x, "target": y, **result.draws}
        known.update({_flat(n): p for n, p in model.named_parameters()})
        known.update({_flat(n): b for n, b in model.named_buffers()})
        inputs = rc._save_inputs({e["name"]: known[e["name"]].detach().numpy()
                                  for e in graph["inputs"]}, os.path.join(stem_dir, "inputs"))
        ref64, seen64 = eager(model, x, y, train, result.draws, torch.float64)
        step = case_step(model, x, y, train, result.draws)
        recipe = (os.path.abspath(zoo.__file__), "step_of",
                  {"family": family, "size": size, "state": model.state_dict(), "x": x, "y": y,
                   "train": train, "draws": result.draws})
        runs = spread.fp32_runs(step, recipe, stem_dir)
        with open(result.json_path, encoding="utf-8") as f:
            decisions = spread.decisions_graph(json.load(f), stem_dir)
        runs.append(("graph op by op", *graph_run(*decisions, inputs)))
        pytorch = spread.own_references(step, runs, ref64, seen64)
        names = [e["name"] for e in graph["outputs"]]
        for target in targets:
            where = f"{family} {regime} {target}"
            if names != list(ref64):
                lines.append((False, f"{where}: graph outputs {names[:4]}... != PyTorch's "
                              f"{list(ref64)[:4]}..."))
                continue
            failures, stats = [], None
            built = type("Built", (), {"json_path": result.json_path, "conv_scopes": None})
            program = (os.path.join(stem_dir, f"model-{target}.egp")
                       if egp and target != "cpu" else None)
            if target != "cpu":
                failures, stats = rc._compile_and_check(command, built, stem_dir, target,
                                                        program)
            out_dir = os.path.join(stem_dir, f"out-{target}")
            argv = command + ["run", program or result.json_path, "--output-dir", out_dir]
            for name, file in inputs:
                argv += ["--input", f"{name}={file}"]
            if target != "cpu" and not program:
                argv += ["--soc", target, "--precision", "fp32"]
            ran = rc._invoke(argv, "edgegrad run")
            failures += ran
            worst, what, note = float("nan"), "", ""
            if not ran:
                got = outputs_of(out_dir, ref64)
                judged, worst, what = spread.judge(got, ref64, pytorch)
                eg, ran_decisions = None, []
                if (judged and not failures) or count_flips:
                    eg, ran_decisions = edgegrad_decisions(command, *decisions, inputs, target,
                                                           stem_dir)
                if eg is not None and count_flips:
                    relu, pool, total, _ = spread.flips(eg, seen64, [seen for *_, seen in runs])
                    note = f" [decisions differing from float64's: {relu + pool} of {total}]"
                if judged and not failures and eg is None:
                    judged = ran_decisions + judged
                elif judged and not failures:
                    flipped, worst2, what2, flip_note = spread.flip_rule(step, eg, seen64, runs,
                                                                         got)
                    if flip_note:
                        judged, worst, what, note = flipped, worst2, what2, flip_note + note
                    else:  # no flip to impose, or one that is no rounding flip: say so
                        judged = flipped + judged
                failures += judged
            npu = (f"NPU nodes {stats['npu']}/{stats['nodes']}, conv backward on the NPU "
                   f"{stats['conv_bwd_npu']}/{stats['conv_bwd']}, NPU FLOPs "
                   f"{100 * stats['npu_flops_share']:.1f} %") if stats else \
                f"{len(graph['nodes'])} nodes"
            what = f" at {what}" if what else ""
            text = f"{where}: worst {worst:.2f} of the bound{what}, {npu}{note}"
            if failures:
                text += "; " + failures[0] + (f" (+{len(failures) - 1} more)"
                                             if len(failures) > 1 else "")
            lines.append((not failures, text))
    return lines


def _worker(task, zoo=None, egp=False):
    family, regimes, targets, size, workdir, command, count_flips = task
    torch.set_num_threads(1)
    try:
        return run_family(family, regimes, targets, size, workdir, command, count_flips, zoo,
                          egp)
    except Exception as e:  # a harness error fails this family's cases, not the others
        return [(False, f"{family} {r} {t}: harness error: {type(e).__name__}: {e}")
                for r in regimes for t in targets]


def run_tasks(worker, tasks, jobs):
    """worker(task) for each task, in ``jobs`` spawned processes when more than one (worker
    a module-level function), each case's line printed as its family ends. Returns (passed,
    failed)."""
    passed = failed = 0

    def report(lines):
        nonlocal passed, failed
        for ok, text in lines:
            print(("PASS " if ok else "FAIL ") + text, flush=True)
            passed, failed = passed + ok, failed + (not ok)
    if jobs > 1:
        import multiprocessing
        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            for lines in pool.imap(worker, tasks):
                report(lines)
    else:
        for task in tasks:
            report(worker(task))
    return passed, failed


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--edgegrad", required=True, help="the edgegrad CLI binary")
    p.add_argument("--workdir", help="keep case files here (default: a temporary folder)")
    p.add_argument("--families", default=",".join(FAMILIES))
    p.add_argument("--regimes", default=",".join(REGIMES))
    p.add_argument("--targets", default=",".join(TARGETS))
    p.add_argument("--size", type=int, default=64, help="input height and width (default 64)")
    p.add_argument("-j", "--jobs", type=int, default=2, help="parallel worker processes")
    p.add_argument("--flips", action="store_true",
                   help="on every case, count edgegrad's ReLU/max pool decisions that differ "
                        "from the float64 forward's (how spread.FLIP_SHARE was set)")
    args = p.parse_args(argv)
    families = [f for f in args.families.split(",") if f]
    unknown = [f for f in families if f not in FAMILIES]
    regimes = [r for r in args.regimes.split(",") if r]
    bad_regimes = [r for r in regimes if r not in REGIMES]
    if unknown or bad_regimes or not families or not regimes:
        print(f"run_models: --families {unknown} / --regimes {bad_regimes} unknown (families: "
              f"{', '.join(FAMILIES)}; regimes: {', '.join(REGIMES)})", file=sys.stderr)
        return 2
    targets = [t if t == "cpu" else t.upper() for t in args.targets.split(",") if t]
    workdir = args.workdir or tempfile.mkdtemp(prefix="edgegrad-models-")
    command = [os.path.abspath(args.edgegrad)]
    print(f"models: torch {torch.__version__}, {len(families)} families x {len(regimes)} "
          f"regimes x {len(targets)} targets, batch {BATCH} x 3 x {args.size} x {args.size}; "
          f"pass: err <= {spread.FACTOR:g} x PyTorch fp32's err + {spread.FLOOR:g} x max|ref| "
          "(float64 "
          "reference)", flush=True)
    start = time.monotonic()
    tasks = [(f, regimes, targets, args.size, workdir, command, args.flips) for f in families]
    passed, failed = run_tasks(_worker, tasks, args.jobs)
    print(f"{time.monotonic() - start:.0f} s; case files: {workdir}")
    print(f"models: {passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
