"""The numerics rule for real, deep, randomly initialised nets, shared by the model zoo
(tests/models/run_models.py) and the acceptance nets of tests/conformance/test_joint_export.py.

Rule. Two fp32 programs that both round correctly differ far more than 1e-4 on some gradients
of such nets, so each float output is compared with a float64 reference (the same step in
double) and passes when

    err(edgegrad) <= FACTOR * err(PyTorch fp32) + FLOOR * max|ref64|     err(a) = max|a - ref64|

err(PyTorch fp32) is one sample of a spread: which kernels and summation orders PyTorch runs
depends on the host (thread count, AVX2 or AVX-512, MKL's and oneDNN's code paths), and one
run's max error moved by up to 2x between them on MobileNetV2. A bound taken from one run on
one host failed on the next. So err(PyTorch fp32) is the largest over VARIANTS, the same step
run under each choice that varies between hosts, plus whatever runs a caller adds (the model
zoo adds the exported graph run op by op):

- ``1 thread`` / ``2 threads``: reductions split in other orders;
- ``channels_last``: PyTorch's NHWC kernels;
- ``no oneDNN`` (``torch.backends.mkldnn.flags(enabled=False)``): ATen's own convolutions,
  what a PyTorch built without oneDNN, or a shape oneDNN declines, runs;
- ``AVX2``: a fresh Python with ``ATEN_CPU_CAPABILITY=avx2``, ``ONEDNN_MAX_CPU_ISA=AVX2`` and
  ``MKL_ENABLE_INSTRUCTIONS=AVX2``: the kernels an AVX2 host (an AMD EPYC before Zen 4 among
  them) runs; on such a host it repeats ``1 thread``.

Decisions. A ReLU or ReLU6 whose input lies within rounding of a bound, or a max-pool window
whose two largest values are within rounding of a tie, can go either way in any fp32 program,
and the gradient then flows elsewhere: far more than rounding error downstream, yet no wrong
kernel. Every run records its decisions (``Decisions``). A PyTorch run whose decisions differ
from the float64 forward's is measured against a float64 reference with its own decisions
imposed (``own_references``), so its flips never count as rounding error. When edgegrad fails
the rule, its decisions (``decisions_graph``: the same graph with every ReLU/ReLU6 output and
its input, and every max pool's indices and input, as extra outputs) are compared with the
float64 forward's (``flips``). A differing decision is a rounding flip when it lies within
rounding of a bound or a tie (within the larger of BAND x the input tensor's max and twice the
largest error PyTorch's fp32 runs make on that tensor) and follows PyTorch's rule at an exact
tie in edgegrad's own fp32 input: a ReLU at exactly 0 is off, a ReLU6 at exactly 0 or 6 is at
that bound, a max pool takes the first of equal maxima in its window (the rule is deterministic
there, so a differing choice is a wrong kernel, not rounding). If all of them are rounding flips
and they are at most FLIP_SHARE of all decisions, the float64 reference is re-run with
edgegrad's decisions imposed and the same rule decides (``flip_rule``). Nothing is loosened:
the flip rule only changes which exact answer an fp32 program is compared with.

A step, for this module, is a callable ``step(dtype, impose=None, layout=torch.contiguous_format)``
returning ``(outputs, decisions)``: ``outputs`` {name: float64 ndarray} under the export's
naming, ``decisions`` the list ``Decisions.seen`` (or the imposed one). The AVX2 variant runs the
step in a child process; the caller names it by a recipe ``(module file, function name,
keyword arguments)``: importing that file and calling the function with the arguments returns
the same step (model state and inputs are passed, not re-drawn: random draws depend on the
CPU's kernels too).
"""
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import warnings

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

# torch.backends.mkldnn.flags() warns that TF32 on oneDNN needs an Intel GPU: nothing to do here
warnings.filterwarnings("ignore", message="TF32 acceleration on top of oneDNN")

# 2.5, not 2: on a Zen 5 host (AVX-512) PyTorch's fp32 kernels came out more accurate than on
# the hosts the rule was first set on, and three deep-net gradients of an unchanged edgegrad
# landed at 2.02-2.05x of PyTorch's error measured with four runs on that host.
FACTOR, FLOOR = 2.5, 1e-5
BAND = 1e-4
# Rounding flips are rare: unmutated, the largest share of edgegrad's decisions that differed
# from the float64 forward's on any case of the model zoo was 2 of 146,432 (1.4e-5,
# ShuffleNetV2 x0.5; run_models.py --flips, README "Testing"), 1 of 996,864 on the acceptance
# MobileNetV2. A tie-breaking rule other than PyTorch's differs far more: GoogLeNet's pools
# taking the last of equal maxima, 27,514 of 758,144 (3.6 %).
FLIP_SHARE = 1e-4
CHILD_TIMEOUT_S = 600
AVX2_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
            "MKL_ENABLE_INSTRUCTIONS": "AVX2"}


class Variant:
    def __init__(self, label, threads=1, layout=torch.contiguous_format, onednn=True,
                 env=None):
        self.label, self.threads, self.layout, self.onednn = label, threads, layout, onednn
        self.env = env

    @contextlib.contextmanager
    def applied(self):
        threads = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            with torch.backends.mkldnn.flags(enabled=self.onednn):
                yield
        finally:
            torch.set_num_threads(threads)


VARIANTS = (Variant("1 thread"), Variant("2 threads", threads=2),
            Variant("channels_last", layout=torch.channels_last),
            Variant("no oneDNN", onednn=False), Variant("AVX2", env=AVX2_ENV))


# --------------------------------------------------------------------------------------------
# decisions


_BERNOULLI = ("aten::bernoulli", "aten::bernoulli_")
_KINDS = {"aten::relu": "relu", "aten::relu_": "relu", "aten::hardtanh": "hardtanh",
          "aten::hardtanh_": "hardtanh", "aten::max_pool2d_with_indices": "pool"}
# the graph's targets of the same decisions, in the same order as the forward's calls
_GRAPH_KINDS = {"aten.relu.default": "relu", "aten.hardtanh.default": "hardtanh",
                "aten.max_pool2d_with_indices.default": "pool"}


def _bounds(args, kwargs):
    lo = args[1] if len(args) > 1 else kwargs.get("min_val", -1.0)
    hi = args[2] if len(args) > 2 else kwargs.get("max_val", 1.0)
    return float(lo), float(hi)


class Decisions(TorchDispatchMode):
    """Replays Bernoulli masks (``draws``, in order: the export's Dropout masks) and, per ReLU,
    ReLU6 (hardtanh) and max pool call in order, records its decision (``seen``: (kind, the
    ReLU's output or the pool's indices, its input, (lo, hi))) or imposes one (``impose``: a
    list of (kind, output or indices) from another run: the ReLU keeps its input where that
    output is > 0, the pool takes those indices)."""

    def __init__(self, draws=(), impose=None):
        super().__init__()
        self.draws, self.impose, self.seen = list(draws), impose, []
        self.k = self.d = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._schema.name
        if name in _BERNOULLI:
            mask = self.draws[self.d].to(args[0].dtype)
            self.d += 1
            return args[0].copy_(mask) if name.endswith("_") else mask.clone()
        kind = _KINDS.get(name)
        if kind is None:
            return func(*args, **kwargs)
        lo, hi = _bounds(args, kwargs) if kind == "hardtanh" else (None, None)
        if self.impose is None:
            x = args[0].detach().clone()
            out = func(*args, **kwargs)
            self.seen.append((kind, (out[1] if kind == "pool" else out).detach().clone(), x,
                              (lo, hi)))
            return out
        if self.k >= len(self.impose) or self.impose[self.k][0] != kind:
            raise ValueError(f"decision {self.k} ({kind}) has no counterpart in the imposed "
                             "run")
        want = self.impose[self.k][1]
        self.k += 1
        x = args[0]
        tiny = torch.finfo(x.dtype).tiny
        if kind == "relu":
            # kept: the input, or the smallest positive float where it is not (a ReLU taken
            # on an input within rounding of zero), so the backward's gate stays open too
            out = torch.where(want > 0, x.clamp_min(tiny), torch.zeros_like(x))
            return args[0].copy_(out) if name.endswith("_") else out
        if kind == "hardtanh":
            # The input is nudged to the imposed side of each bound (strictly inside, or
            # exactly at the bound, which the backward treats as outside) where it lies on
            # the other: hardtanh's backward gates on its input (the in-place form's on its
            # result), and a change below autograd is what that backward then reads. A nudged
            # element moves by no more than its distance to the bound.
            up = torch.full_like(x, lo) + tiny + abs(lo) * 1e-15
            down = torch.full_like(x, hi) - abs(hi) * 1e-15
            inside = (want > lo) & (want < hi)
            nudged = torch.where(inside & (x <= lo), up, torch.where(inside & (x >= hi), down, x))
            nudged = torch.where((want <= lo) & (x > lo), torch.full_like(x, lo), nudged)
            nudged = torch.where((want >= hi) & (x < hi), torch.full_like(x, hi), nudged)
            if name.endswith("_"):
                raise ValueError("an in-place hardtanh_ saves a copy of its input for its "
                                 "backward before a decision can be imposed: run the model "
                                 "through out_of_place()")
            args[0].copy_(nudged)
            return nudged.clamp(lo, hi)
        idx = want.to(torch.int64)
        values = x.flatten(2).gather(2, idx.flatten(2)).view(idx.shape)
        return values, idx

    def check_imposed(self):
        if self.impose is not None and self.k != len(self.impose):
            raise ValueError(f"{self.k} ReLU/max pool calls, {len(self.impose)} decisions "
                             "imposed")


def out_of_place(model):
    """``model`` with its ReLU6/Hardtanh modules out of place, in place: the in-place form's
    backward gates on a copy of the input taken before ``Decisions`` sees the call, so no
    decision could be imposed on it. Both forms compute the same values and gradients."""
    for m in model.modules():
        if isinstance(m, torch.nn.Hardtanh):
            m.inplace = False
    return model


def imposable(decisions):
    """A run's decisions in the form ``Decisions(impose=...)`` takes."""
    return [d[:2] for d in decisions]


def same_decisions(a, ref):
    """Run ``a`` took every ReLU, ReLU6 and max pool decision the float64 forward ``ref`` took."""
    if len(a) != len(ref):
        return False
    for (kind, e, *_), (kind64, r, _, (lo, hi)) in zip(a, ref):
        if kind != kind64:
            return False
        if kind == "relu":
            same = torch.equal(e > 0, r > 0)
        elif kind == "hardtanh":
            e = e.to(r.dtype)
            same = torch.equal(e <= lo, r <= lo) and torch.equal(e >= hi, r >= hi)
        else:
            same = torch.equal(e, r)
        if not same:
            return False
    return True


# --------------------------------------------------------------------------------------------
# PyTorch's fp32 runs


def load_function(path, name):
    spec = importlib.util.spec_from_file_location(
        "eg_step_" + os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def _child_run(recipe, variant, folder):
    """The step of ``recipe`` in fp32 in a fresh Python with ``variant.env`` set."""
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        payload = os.path.join(tmp, "step.pt")
        torch.save((recipe, variant.threads, variant.layout == torch.channels_last), payload)
        try:
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), payload],
                                  env={**os.environ, **variant.env}, capture_output=True,
                                  text=True, timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"PyTorch run '{variant.label}' timed out after "
                               f"{CHILD_TIMEOUT_S} s") from None
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise RuntimeError(f"PyTorch run '{variant.label}' exit {proc.returncode}: {last}")
        return torch.load(payload + ".out", weights_only=False)


def fp32_runs(step, recipe, folder):
    """PyTorch's fp32 step under every VARIANT: [(label, outputs, decisions)]. ``folder`` holds
    a child run's files while it runs."""
    runs = []
    for variant in VARIANTS:
        if variant.env:
            outputs, decisions = _child_run(recipe, variant, folder)
        else:
            with variant.applied():
                outputs, decisions = step(torch.float32, layout=variant.layout)
        runs.append((variant.label, outputs, decisions))
    return runs


def own_references(step, runs, ref64, seen64):
    """Each PyTorch fp32 run (label, outputs, decisions) paired with the float64 reference it
    is measured against: ``ref64`` where it took the float64 forward's decisions ``seen64``,
    else the step in float64 with its own imposed. Returns [(label, outputs, reference)]."""
    return [(label, out, ref64 if same_decisions(seen, seen64) else
             step(torch.float64, impose=imposable(seen))[0]) for label, out, seen in runs]


def max_error(a, ref):
    return float(np.max(np.abs(a.astype(np.float64) - ref)))


def judge(got, ref64, pytorch):
    """edgegrad's outputs ``got`` {name: array, or None where not written} against ``ref64``
    under the rule; PyTorch fp32's error on an output is the largest over ``pytorch``
    (``own_references``' triples). Returns (failures, worst ratio, what the worst was)."""
    failures, worst, where = [], 0.0, "no float output"
    for name, want in ref64.items():
        mine = got.get(name)
        if mine is None:
            failures.append(f"output {name}: not written")
            continue
        if mine.shape != want.shape:
            failures.append(f"output {name}: shape {list(mine.shape)}, want {list(want.shape)}")
            continue
        if not np.issubdtype(want.dtype, np.floating):
            if not np.array_equal(mine, want):
                failures.append(f"output {name}: {mine} != {want}")
            continue
        if want.size == 0:
            continue
        scale = float(np.max(np.abs(want)))
        e_eg = max_error(mine, want)
        e_runs = [max_error(out[name], ref[name]) for _, out, ref in pytorch]
        e_pt = max(e_runs)
        bound = FACTOR * e_pt + FLOOR * max(scale, 1e-30)
        if not np.isfinite(e_eg) or e_eg > bound:
            failures.append(f"output {name}: err {e_eg:.3g} > {FACTOR:g} x PyTorch fp32's "
                            f"{e_pt:.3g} (runs {', '.join(f'{e:.2g}' for e in e_runs)}) + "
                            f"floor {FLOOR * scale:.3g}")
        ratio = e_eg / bound if bound > 0 else (0.0 if e_eg == 0 else np.inf)
        if not ratio < worst:
            worst, where = ratio, f"{name} err {e_eg:.2g} (PyTorch fp32 {e_pt:.2g})"
    return failures, worst, where


# --------------------------------------------------------------------------------------------
# edgegrad's decisions and the flip rule


def decisions_graph(graph, folder):
    """The graph (a parsed graph JSON whose weights file lies in ``folder``) with, per ReLU,
    ReLU6 and max pool node in graph order (= the forward's call order), its output (a pool's
    indices) as extra output ``decision_<k>`` and its input as ``decision_input_<k>``: written
    to ``folder``/decisions.json. Returns (path, [(kind, pool arguments or None)])."""
    graph = dict(graph)
    picked, extra = [], []
    for n in graph["nodes"]:
        kind = _GRAPH_KINDS.get(n["target"])
        if not kind:
            continue
        k = len(picked)
        out = graph["values"][n["output"]]["elements"][1] if kind == "pool" else n["output"]
        extra += [{"name": f"decision_{k}", "value": out, "role": "output"},
                  {"name": f"decision_input_{k}", "value": n["args"][0]["value"],
                   "role": "output"}]
        picked.append((kind, (n["args"][1:], n["kwargs"]) if kind == "pool" else None))
    graph["outputs"] = graph["outputs"] + extra
    path = os.path.join(folder, "decisions.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(graph, f)
    return path, picked


def split_decisions(outputs, kinds):
    """Takes the extra outputs of a ``decisions_graph`` run out of ``outputs`` {name: array}
    (in place): [(kind, output or indices, its own input, pool arguments or None)], the form
    ``flips`` reads and (its first two fields) ``Decisions`` imposes."""
    def take(name):
        return torch.from_numpy(np.ascontiguousarray(outputs.pop(name)))
    return [(kind, take(f"decision_{k}"), take(f"decision_input_{k}"), params)
            for k, (kind, params) in enumerate(kinds)]


def _rule_breaks(kind, e, xe, params, lo, hi):
    """Where edgegrad's decision ``e`` breaks PyTorch's rule at an exact tie of its own input
    ``xe``: a ReLU at exactly 0 taken, a ReLU6 at exactly a bound not at it, a max pool that
    did not take the first of its window's equal maxima."""
    if kind == "relu":
        return (xe == 0) & (e > 0)
    if kind == "hardtanh":
        e = e.to(xe.dtype)
        return ((xe == lo) & (e > lo)) | ((xe == hi) & (e < hi))
    args, kwargs = params
    first = torch.ops.aten.max_pool2d_with_indices(xe, *args, **kwargs)[1]
    flat = xe.flatten(-2)
    mine = flat.gather(-1, e.flatten(-2)).view(e.shape)
    theirs = flat.gather(-1, first.flatten(-2)).view(e.shape)
    return (e != first) & (mine == theirs)


def flips(eg, ref, runs):
    """edgegrad's decisions ``eg`` (``split_decisions``) against the float64 forward's ``ref``
    (``Decisions.seen``): (differing ReLU/ReLU6 decisions, differing max pool decisions, all
    decisions, failures). A failure is a differing decision outside the band of a bound or a
    tie, one that breaks PyTorch's rule at an exact tie, more than FLIP_SHARE of all decisions
    differing, or decision lists that do not line up. The band of a decision's input tensor is
    the larger of BAND x its max and 2 x the largest error PyTorch fp32's runs (``runs``: their
    decisions, which carry their inputs) make on that tensor: what rounding alone reaches."""
    if [d[0] for d in eg] != [d[0] for d in ref] or any(len(seen) != len(ref) for seen in runs):
        return 0, 0, 0, [f"edgegrad's {len(eg)} ReLU/max pool decisions do not line up with "
                         f"PyTorch's {len(ref)}"]
    relu = pool = total = 0
    failures = []
    for k, ((kind, e, xe, params), (_, r, x, (lo, hi))) in enumerate(zip(eg, ref)):
        total += r.numel()
        rounding = max(float((seen[k][2].to(x.dtype) - x).abs().max()) for seen in runs)
        band = max(BAND * float(x.abs().max()), 2.0 * rounding)
        if kind == "relu":
            diff = (e > 0) != (r > 0)
            gap = x.abs()
        elif kind == "hardtanh":
            region = lambda t: (t >= hi).to(torch.int8) - (t <= lo).to(torch.int8)  # noqa: E731
            diff = region(e.to(x.dtype)) != region(r)
            gap = torch.minimum((x - lo).abs(), (x - hi).abs())
        else:
            diff = e != r
            xf = x.flatten(2)
            gap = (xf.gather(2, e.flatten(2)) - xf.gather(2, r.flatten(2))).abs().view(e.shape)
        count = int(diff.sum())
        if kind == "pool":
            pool += count
        else:
            relu += count
        if not count:
            continue
        far = diff & (gap > band)
        if far.any():
            failures.append(f"{kind} decision {k} differs {int(far.sum())} times by more than "
                            f"{BAND:g} of the max (largest gap {float(gap[far].max()):.3g}, "
                            f"band {band:.3g}): not a rounding flip")
        broken = diff & _rule_breaks(kind, e, xe, params, lo, hi)
        if broken.any():
            failures.append(f"{kind} decision {k} differs {int(broken.sum())} times at an exact "
                            "tie of edgegrad's own input, against PyTorch's rule there (a "
                            "max pool takes the first of equal maxima, a ReLU at 0 is off): "
                            "not a rounding flip")
    if relu + pool > FLIP_SHARE * total:
        failures.append(f"{relu + pool} of {total} ReLU/max pool decisions differ from the "
                        f"float64 forward's (more than {FLIP_SHARE:g} of them): not rounding")
    return relu, pool, total, failures


def flip_rule(step, eg, seen64, runs, got):
    """The flip rule (module doc) for edgegrad's outputs ``got`` and decisions ``eg``; ``runs``
    are ``fp32_runs``' triples. Returns (failures, worst, what the worst was, note)."""
    relu, pool, total, failures = flips(eg, seen64, [seen for _, _, seen in runs])
    if failures or relu + pool == 0:
        return failures, float("nan"), "", ""
    ref64_eg, _ = step(torch.float64, impose=imposable(eg))
    pytorch = [(label, out, step(torch.float64, impose=imposable(seen))[0])
               for label, out, seen in runs]
    failures, worst, where = judge(got, ref64_eg, pytorch)
    note = (f" (flip rule: {relu} ReLU/ReLU6 and {pool} max pool decisions of {total} "
            f"({100 * (relu + pool) / total:.2g} %) within rounding of a bound or a tie "
            "imposed on the float64 reference)")
    return failures, worst, where, note


def _child_main(payload):
    """A child of ``fp32_runs``: the recipe's step in fp32, saved beside the payload."""
    (path, name, kwargs), threads, nhwc = torch.load(payload, weights_only=False)
    torch.set_num_threads(threads)
    step = load_function(path, name)(**kwargs)
    layout = torch.channels_last if nhwc else torch.contiguous_format  # no pickle for these
    torch.save(step(torch.float32, layout=layout), payload + ".out")


if __name__ == "__main__":
    _child_main(sys.argv[1])
