"""optest — shared harness for the per-op-family PyTorch comparison tests (tests/ops/test_*.py).

Each case is a small function of tensors. The harness exports it with
edgegrad.export.export_function, runs `edgegrad run` on the same inputs, and compares every
output with PyTorch's eager result at the project tolerance (edgegrad.tolerance):
    |a - b| <= 1e-4 * |b| + 1e-5 * max(1, max|b| over finite b)      (dtype and shape equal;
NaN only against NaN, an infinity only against the same infinity, integers exact)

Usage in a test file:

    from optest import Suite
    suite = Suite("elementwise")
    suite.case("relu", lambda x: torch.relu(x), [torch.randn(2, 3)])
    suite.main()          # parses --edgegrad/--workdir, runs all cases, exits non-zero on failure

static=(names...) freezes arguments (by position name arg0, arg1, ...) as weights; expect_error
makes a case that must be rejected by `edgegrad run` with exit status 2 and a one-line message
containing the given text.

Backward cases: `chain(lambda x, g: vjp([f(x)], [x], [g]))` with x a leaf that requires grad;
vjp is the autograd engine call behind torch.autograd.grad without its grad_outputs check
(that check traces aten.is_same_size, whose bool result the graph format cannot hold), and
chain lets the case also run eagerly under the harness's no_grad.

Runner is the command line and case runner (FAIL lines, the "<family>: N passed, M failed"
summary, the exit status) of Suite and of the tests/ops/test_npu_*.py files with harnesses of
their own.
"""
import argparse
import json
import os
import subprocess
import sys
import traceback

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from edgegrad import export as _export  # noqa: E402
from edgegrad.tolerance import compare  # noqa: E402

# The `edgegrad compile` / `run` / `train` options of every NPU (--soc) run the tests/ops files
# compare with PyTorch at the project tolerance: the NPU partitions compute in fp32, as PyTorch
# does (compiling defaults to the SoC's own precision, fp16 on every SoC with a float path;
# test_fp16.py checks fp16 against PyTorch in half storage).
NPU_FP32 = ("--precision", "fp32")


class Edited:
    """A case function: fn (the PyTorch reference), plus an edit applied to the exported graph
    dict before edgegrad runs it; `trace`, when given, is the function exported instead of fn
    (an op make_fx never traces, e.g. aten.silu_backward, is reached by tracing an op of the
    same signature and renaming the node)."""

    def __init__(self, fn, edit=None, trace=None):
        self.fn, self.edit, self.trace = fn, edit, trace or fn

    def __call__(self, *args):
        return self.fn(*args)


def export_function(fn, args, path, **kwargs):
    """edgegrad's export_function, writing whatever the graph format holds: the op tests check
    the runtime's own refusals (a float64 mm, an edited graph), so the exporter's check of the
    runtime's ops and dtypes is off unless a case asks for it. An Edited fn exports its trace
    and then edits the written graph."""
    kwargs.setdefault("check_runtime", False)
    if not isinstance(fn, Edited):
        return _export.export_function(fn, args, path, **kwargs)
    result = _export.export_function(fn.trace, args, path, **kwargs)
    if fn.edit:
        with open(path + ".json") as f:
            graph = json.load(f)
        fn.edit(graph)
        with open(path + ".json", "w") as f:
            json.dump(graph, f)
    return result


def graph_node(graph, target):
    """The first node of an exported graph dict calling `target`."""
    return next(n for n in graph["nodes"] if n["target"] == target)


def renamed(fn, trace, traced_target, target):
    """An Edited case: `trace` exported with its `traced_target` node renamed to `target`;
    fn (calling the real op) is PyTorch's reference."""
    def rename(graph):
        graph_node(graph, traced_target)["target"] = target
    return Edited(fn, rename, trace=trace)


def allclose_report(got, ref):
    """Returns None when `got` matches `ref` at the project tolerance, else a one-line reason."""
    return compare(got, ref)


def vjp(outputs, inputs, grads):
    """torch.autograd.grad(outputs, inputs, grads) without the is_same_size check."""
    return torch.autograd.Variable._execution_engine.run_backward(
        tuple(outputs), tuple(grads), False, False, tuple(inputs), True)


def chain(f):
    """A case function that calls vjp and also runs eagerly under optest's no_grad."""
    def run(*args):
        with torch.enable_grad():
            return f(*args)
    return run


def parse_args():
    """The command line of every tests/ops file: --edgegrad EXE --workdir DIR [--filter TEXT]."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--edgegrad", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--filter", default="")
    return ap.parse_args()


class Runner:
    """The case runner of every tests/ops file: parses the command line (parse_args), counts
    cases, prints "FAIL <family>/<case>: <reason>" for each reason of a failed case and, from
    finish(), the summary line "<family>: N passed, M failed" that scripts/test-summary.sh
    picks up; the exit status is non-zero on any failure or when no case ran."""

    def __init__(self, family):
        self.family = family
        self.opts = parse_args()
        self.exe, self.workdir, self.filter = self.opts.edgegrad, self.opts.workdir, \
            self.opts.filter
        self.passed = self.failed = 0

    def record(self, name, thunk):
        """Runs case `name` (unless --filter leaves it out): thunk() returns None, "" or []
        when it passed, else a reason or a list of reasons. An exception (a harness, export or
        CLI failure) is a failed case, never a skip."""
        if self.filter not in name:
            return
        try:
            why = thunk()
        except Exception:
            why = traceback.format_exc().strip().splitlines()[-1]
        self.report(name, why)

    def report(self, name, why):
        """Counts the result `why` (as record's thunk returns) of case `name`, run elsewhere."""
        bad = ([why] if why else []) if isinstance(why, str) else list(why or [])
        if bad:
            self.failed += 1
            for b in bad:
                print(f"FAIL {self.family}/{name}: {b}")
        else:
            self.passed += 1

    def finish(self):
        print(f"{self.family}: {self.passed} passed, {self.failed} failed")
        sys.exit(1 if self.failed or self.passed == 0 else 0)


class Suite:
    def __init__(self, family):
        self.family = family
        self.cases = []

    def case(self, name, fn, args, static=(), expect_error=None):
        self.cases.append((name, fn, args, tuple(static), expect_error))

    def _run_case(self, exe, workdir, name, fn, args, static, expect_error):
        d = os.path.join(workdir, name)
        os.makedirs(d, exist_ok=True)
        arg_names = [f"arg{i}" for i in range(len(args))]
        path = os.path.join(d, "model")
        self._export(name, fn, args, path, arg_names=arg_names, static_args=static)
        cmd = [exe, "run", path + ".json", "--output-dir", os.path.join(d, "out"), "-q"]
        for nm, a in zip(arg_names, args):
            if nm in static:
                continue
            f = os.path.join(d, nm + ".npy")
            np.save(f, a.detach().numpy())
            cmd += ["--input", f"{nm}={f}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if expect_error is not None:
            lines = r.stderr.strip().splitlines()
            if r.returncode != 2 or len(lines) != 1 or expect_error not in lines[0]:
                return f"expected exit 2 with one line containing {expect_error!r}; got " \
                       f"{r.returncode}: {r.stderr.strip()!r}"
            return None
        if r.returncode != 0:
            return f"edgegrad exit {r.returncode}: {r.stderr.strip()}"
        with torch.no_grad():
            ref = fn(*args)
        refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
        for k, rv in enumerate(refs):
            got = np.load(os.path.join(d, "out", f"out{k}.npy"))
            why = allclose_report(got, rv.detach().numpy())
            if why:
                return f"out{k}: {why}"
        return None

    def _export(self, name, fn, args, path, **kwargs):
        """Exports case `name`; EditSuite overrides it to edit the graph afterwards."""
        return export_function(fn, args, path, **kwargs)

    def main(self):
        run = Runner(self.family)
        for name, fn, args, static, expect_error in self.cases:
            run.record(name, lambda c=(name, fn, args, static, expect_error):
                       self._run_case(run.exe, run.workdir, *c))
        run.finish()


class EditSuite(Suite):
    """A Suite whose cases may edit the exported graph JSON (`edit(graph)`) before it runs, to
    make graphs PyTorch itself would never trace."""

    def __init__(self, family):
        super().__init__(family)
        self.edits = {}

    def case(self, name, fn, args, static=(), expect_error=None, edit=None):
        assert all(c[0] != name for c in self.cases), name
        super().case(name, fn, args, static, expect_error)
        if edit:
            self.edits[name] = edit

    def _export(self, name, fn, args, path, **kwargs):
        result = super()._export(name, fn, args, path, **kwargs)
        edit = self.edits.get(name)
        if edit:
            with open(result.json_path) as f:
                graph = json.load(f)
            edit(graph)
            with open(result.json_path, "w") as f:
                json.dump(graph, f)
        return result

