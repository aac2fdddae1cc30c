#!/usr/bin/python3
"""Self-check of the exporter and the graph format, without the C binary.

    /usr/bin/python3 tests/conformance/check_format.py [--keep DIR]

1. Exports graphs (the training steps, the model zoo and its multi-step SGD runs, a sample of
   the convolution_backward sweep, graphs exercising every ARG tag, integer/bool/0-d outputs,
   traced constants, in-place ops, BatchNorm in eval mode, and the bundled demo example if
   present), re-reads
   each file pair with graph_exec (checking the format's rules), checks that the graph is
   functional (no in-place op, copy_, alias or lift_fresh_copy) and follows the roles contract
   (every input and output has a role; a gradient / buffer_update names the parameter / buffer
   input of its dtype and shape),
   re-executes it op by op with torch.ops (SGD runs step by step, as `edgegrad run --steps`)
   and compares every output with PyTorch's eager result (compare.py's rule).
2. Checks that the exporter refuses, with ValueError, what the format cannot represent.
3. Round-trips every safetensors dtype.
Prints one line per failure and last `check_format: N passed, M failed`; exit 1 on failure.
"""
import argparse
import os
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path[:0] = [HERE, os.path.join(ROOT, "python")]

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import cases  # noqa: E402
import compare  # noqa: E402
import graph_exec  # noqa: E402
import zoo  # noqa: E402
from edgegrad import export_function, export_training_step, safetensors  # noqa: E402

CONV_SAMPLE_EVERY = 11


# --------------------------------------------------------------------------------------------
# graphs re-executed op by op


def _function_case(fn, args, stem, **kw):
    """Export ``fn`` and return a cases.Built with its eager reference. The format's features
    are checked here, re-executed by torch.ops: ops the runtime lacks (argmax, arange) too."""
    result = export_function(fn, args, stem, check_runtime=False, **kw)
    names = [e["name"] for e in result.graph["outputs"]]
    outs = fn(*[a.clone() for a in args])
    outs = outs if isinstance(outs, tuple) else (outs,)
    static = set(kw.get("static_args", ()))
    arg_names = kw.get("arg_names") or [e["name"] for e in result.graph["inputs"]]
    inputs = {n: a.numpy() for n, a in zip(arg_names, args) if n not in static}
    reference = {n: o.detach().contiguous().numpy() for n, o in zip(names, outs)}
    return cases.Built(result.json_path, inputs, reference, "function")


def _all_tags(x, mask):
    """Every ARG tag: dtype/layout/device/memory_format kwargs, tagged floats incl. inf, a str
    (div's rounding_mode)."""
    ones = torch.ones_like(x, dtype=torch.float32, layout=torch.strided,
                           device=torch.device("cpu"), memory_format=torch.preserve_format)
    y = torch.clamp(x, min=float("-inf"), max=float("inf")) * 0.5 + ones
    picked = torch.where(mask, y, torch.zeros_like(y))
    return picked, picked.argmax(1), picked > 1.0, picked.sum(), x.to(torch.float64), \
        torch.div(picked, 0.3, rounding_mode="floor")


def _constant(x):
    return x * torch.tensor([1.0, -2.0, 0.5]) + torch.arange(3)


class _InplaceNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.act = nn.ReLU(inplace=True)
        self.fc = nn.Linear(3 * 5 * 5, 4)

    def forward(self, x):
        return self.fc(torch.flatten(self.act(self.conv(x)), 1))


def _inplace_step(stem):
    torch.manual_seed(1)
    model = _InplaceNet()
    x, t = torch.randn(2, 2, 5, 5), torch.randint(0, 4, (2,))
    return cases.build_training(model, F.cross_entropy, x, t, stem)


def _demo():
    """The bundled example, checked against its stored reference; None if absent."""
    stem = os.path.join(ROOT, "examples", "digits_step")
    if not os.path.exists(stem + ".json"):
        return None
    load = lambda folder: {f[:-4]: np.load(os.path.join(folder, f))
                           for f in sorted(os.listdir(folder)) if f.endswith(".npy")}
    return cases.Built(stem + ".json", load(stem + "_inputs"), load(stem + "_reference"),
                       "demo")


def _alias_after_write(x):
    """A view read after an in-place write into its base: functionalization regenerates the
    view from the written base, so the graph computes what eager PyTorch does."""
    y = x + 0
    v = y.view(-1)
    y.mul_(2)
    return v + 1


def _eval_step(folder):
    """The whole model in eval mode: every buffer is a static, nothing is state."""
    torch.manual_seed(3)
    model = zoo.SmallConvNet(bn=True)
    zoo._warm_up(model, torch.randn(2, 3, 16, 16))
    model.eval()
    x, t = torch.randn(2, 3, 16, 16), torch.randint(0, 5, (2,))
    built = zoo.build_zoo(model, F.cross_entropy, x, t, os.path.join(folder, "eval_bn"),
                          statics=["bn2.running_mean", "bn2.running_var",
                                   "bn2.num_batches_tracked"])
    graph, _ = graph_exec.load(built.json_path)
    if any(e["role"] in ("buffer_update", "buffer") for e in graph["outputs"] + graph["inputs"]):
        raise AssertionError("eval mode: a state buffer or its update")
    return built


def graph_checks(folder):
    """(name, thunk returning a Built) for every graph to re-execute."""
    g = torch.Generator().manual_seed(7)
    x = torch.randn(4, 3, generator=g)
    mask = torch.rand(4, 3, generator=g) > 0.3
    checks = [(c.name, lambda c=c: cases.build(c, os.path.join(folder, c.name)))
              for i, c in enumerate(cases.all_cases())
              if c.kind != "convolution_backward" or i % CONV_SAMPLE_EVERY == 0]
    checks += [
        ("all_arg_tags", lambda: _function_case(_all_tags, (x, mask),
                                                os.path.join(folder, "tags"))),
        ("tensor_constant", lambda: _function_case(_constant, (x,),
                                                   os.path.join(folder, "const"))),
        ("static_arg", lambda: _function_case(lambda a, b: a @ b, (x, x.t().contiguous()),
                                              os.path.join(folder, "static"),
                                              arg_names=("a", "b"), static_args=("b",),
                                              output_names=("prod",))),
        ("inplace_relu_step", lambda: _inplace_step(os.path.join(folder, "inplace"))),
        ("view_read_after_inplace", lambda: _function_case(
            _alias_after_write, (x,), os.path.join(folder, "alias_write"))),
    ]
    checks.append(("eval_bn_statics", lambda: _eval_step(folder)))
    if _demo() is not None:
        checks.append(("demo_digits_step", _demo))
    return checks


# Left by functionalization only as a means; none may reach a file.
_NOT_FUNCTIONAL = ("aten.copy_.default", "aten.alias.default", "aten.lift_fresh_copy.default")


def check_functional(graph):
    """No in-place op (ATen's trailing '_'), copy_, alias or lift_fresh_copy."""
    def in_place(target):
        op = target.split(".")[1] if target.count(".") == 2 else ""
        return op.endswith("_") and not op.endswith("__")

    return [f"node {n['name']}: {n['target']} in an exported graph: graphs are functional"
            for n in graph["nodes"] if n["target"] in _NOT_FUNCTIONAL or in_place(n["target"])]


_INPUT_ROLES = ("data", "label", "parameter", "buffer", "random")
_OUTPUT_ROLES = ("loss", "gradient", "buffer_update", "output")


def check_roles(graph):
    """The roles contract the runtime reads (docs/export.md): every input and output has a role
    of its list; a gradient / buffer_update names ("of") a parameter / buffer input with its
    dtype and shape (and a buffer_update is not the buffer unchanged), no other output names
    one; in a training step (a gradient output) every parameter and buffer has exactly one; at
    most one loss, a float32 scalar; the random inputs are those of "random_inputs"."""
    failures = []
    values = graph["values"]
    inputs = {e["name"]: e for e in graph["inputs"]}
    random = {r["input"] for r in graph.get("random_inputs", [])}
    for e in graph["inputs"]:
        if e.get("role") not in _INPUT_ROLES:
            failures.append(f"input {e['name']}: role {e.get('role')!r}")
        elif (e["role"] == "random") != (e["name"] in random):
            failures.append(f"input {e['name']}: role {e['role']} against random_inputs")
    paired = []
    for e in graph["outputs"]:
        role, of = e.get("role"), e.get("of")
        if role not in _OUTPUT_ROLES:
            failures.append(f"output {e['name']}: role {role!r}")
            continue
        want = {"gradient": "parameter", "buffer_update": "buffer"}.get(role)
        if (of is None) != (want is None) or (of is not None and of not in inputs):
            failures.append(f"output {e['name']}: role {role} of {of!r}")
            continue
        if want is None:
            continue
        paired.append(of)
        got, base = values[e["value"]], values[inputs[of]["value"]]
        if inputs[of]["role"] != want:
            failures.append(f"output {e['name']}: {role} of {of}, a {inputs[of]['role']}")
        if (got["dtype"], got["shape"]) != (base["dtype"], base["shape"]):
            failures.append(f"output {e['name']}: {got['dtype']}{got['shape']} != input "
                            f"{of} {base['dtype']}{base['shape']}")
        if role == "buffer_update" and e["value"] == inputs[of]["value"]:
            failures.append(f"output {e['name']} is input {of} unchanged")
    step = any(e.get("role") == "gradient" for e in graph["outputs"])
    for e in graph["inputs"]:
        count = paired.count(e["name"])
        if count > 1 or (step and e.get("role") in ("parameter", "buffer") and count != 1):
            failures.append(f"input {e['name']} ({e.get('role')}): {count} outputs name it")
    losses = [e for e in graph["outputs"] if e.get("role") == "loss"]
    for e in losses[1:]:
        failures.append(f"output {e['name']}: a second loss")
    for e in losses:
        v = values[e["value"]]
        if v["dtype"] != "float32" or any(d != 1 for d in v["shape"]):
            failures.append(f"output {e['name']}: a loss of {v['dtype']}{v['shape']}")
    return failures


def reexecute(built):
    """Failures of re-reading + re-executing ``built`` against its reference."""
    graph, statics = graph_exec.load(built.json_path)
    failures = check_functional(graph) + check_roles(graph)
    if built.steps > 1:
        losses, final, got = graph_exec.run_steps(graph, statics, built.inputs, built.steps,
                                                  built.lr)
        reason = compare.compare(losses, built.losses)
        failures += [f"losses: {reason}"] if reason else []
        for name, want in built.final.items():
            reason = compare.compare(final[name], want)
            failures += [f"final {name}: {reason}"] if reason else []
    else:
        got = graph_exec.execute(graph, statics, built.inputs)
    for name, want in built.reference.items():
        reason = compare.compare(got[name], want) if name in got else "not an output"
        if reason:
            failures.append(f"output {name}: {reason}")
    return failures


# --------------------------------------------------------------------------------------------
# refusals


class _BNMomentumNone(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2, momentum=None)

    def forward(self, x):
        return self.bn(self.conv(x)).flatten(1)


class _ViewOfRunningMean(nn.Module):
    """Reads a view of running_mean taken before BatchNorm's hidden write: eager PyTorch sees
    the new statistics through it; a graph without views cannot."""

    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(2)

    def forward(self, x):
        v = self.bn.running_mean.view(1, -1, 1, 1)
        return (self.bn(x) + v).flatten(1)


class _WritesWeight(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        with torch.no_grad():
            self.fc.weight.mul_(0.5)
        return self.fc(x)


def _bn_writes_argument(x, running_mean, running_var):
    return F.batch_norm(x, running_mean, running_var, training=True)


def _write_input(x):
    x.add_(1)
    return x * 2


def _undeclared_write(stem):
    """The safety net: with ATen's batch norm run as ATen runs it (writing its running
    statistics), the final run of the rewritten graph sees an argument change and refuses."""
    import edgegrad._functional as functional

    pure = functional.pure_call
    functional.pure_call = lambda target, args, kwargs: target(*args, **kwargs)
    try:
        model = zoo.BNConvNet()
        return export_training_step(model, F.cross_entropy, (torch.randn(2, 3, 8, 8),
                                                             torch.randint(0, 5, (2,))), stem)
    finally:
        functional.pure_call = pure


def refusal_checks(folder):
    """(name, thunk, words the ValueError message must contain)."""
    x = torch.randn(2, 3)
    stem = os.path.join(folder, "refused")
    fn = lambda f, args=(x,), **kw: (lambda: export_function(f, args, stem, **kw))
    return [
        ("none_output", fn(lambda a: (a * 2, None)), "None"),
        ("int_output", fn(lambda a: (a * 2, 3)), "outputs must be tensors"),
        ("complex_argument", fn(lambda a: a * 2j), "complex 2j"),
        ("bfloat16", fn(lambda a: a.to(torch.bfloat16) * 2), "bfloat16"),
        ("rank_9", fn(lambda a: a * 2, (torch.ones([1] * 9),)), "rank"),
        ("non_tensor_arg", fn(lambda a, k: a * k, (x, 3)), "must be tensors"),
        ("unknown_static", fn(lambda a: a * 2, static_args=("nope",)), "nope"),
        ("duplicate_output", fn(lambda a: (a, a * 2), output_names=("o", "o")), "twice"),
        ("write_into_input", fn(_write_input), "in place into argument"),
        ("batchnorm_writes_argument", fn(_bn_writes_argument, (x, torch.zeros(3),
                                                               torch.ones(3))),
         "in place into argument running_mean"),
        ("view_of_written_buffer", lambda: export_training_step(
            _ViewOfRunningMean(), F.mse_loss, (torch.randn(2, 2, 3, 3), torch.randn(2, 18)),
            stem), "view of"),
        ("write_into_parameter", lambda: export_training_step(
            _WritesWeight(), F.mse_loss, (x, torch.randn(2, 2)), stem, trainable=["fc.bias"]),
         "in place into argument fc.weight"),
        ("undeclared_write", lambda: _undeclared_write(stem),
         "argument bn1_running_mean changed"),
        ("batchnorm_momentum_none", lambda: export_training_step(
            _BNMomentumNone(), lambda o, t: F.mse_loss(o, t),
            (torch.randn(2, 1, 5, 5), torch.randn(2, 18)), stem), "momentum=None"),
        ("unknown_trainable", lambda: export_training_step(
            nn.Linear(3, 2), F.mse_loss, (x, torch.randn(2, 2)), stem,
            trainable=["weight", "wieght"]), "wieght"),
    ]


def check_refusal(thunk, words):
    try:
        thunk()
    except ValueError as e:
        return [] if words in str(e) else [f"message {str(e)!r} lacks {words!r}"]
    return ["exported without a ValueError"]


# --------------------------------------------------------------------------------------------


def check_safetensors(folder):
    arrays = {"f32": np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32),
              "f64": np.arange(3.0), "f16": np.ones((1,), np.float16),
              "i64": np.array([-1, 2**40]), "i32": np.array([[7]], np.int32),
              "i8": np.array([-3], np.int8), "u8": np.array([250], np.uint8),
              "b": np.array([True, False]), "scalar": np.float32(2.5).reshape(()),
              "empty": np.zeros((0, 4), np.float32)}
    path = os.path.join(folder, "roundtrip.safetensors")
    safetensors.save(path, arrays, {"k": "v"})
    back, meta = safetensors.load(path)
    with open(path, "rb") as f:
        header_len = int.from_bytes(f.read(8), "little")
    failures = [] if meta == {"k": "v"} else [f"metadata {meta}"]
    failures += [] if header_len % 8 == 0 else [f"header length {header_len} not a multiple of 8"]
    for name, a in arrays.items():
        if back[name].dtype != a.dtype or back[name].shape != a.shape or \
                not np.array_equal(back[name], a):
            failures.append(f"tensor {name} changed")
    return failures


def main(argv):
    p = argparse.ArgumentParser(description="exporter/format self-check (no C binary)")
    p.add_argument("--keep", help="write the exported graphs here and keep them")
    args = p.parse_args(argv)
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        return run_checks(args.keep)
    with tempfile.TemporaryDirectory(prefix="edgegrad-check-format-") as folder:
        return run_checks(folder)


def run_checks(folder):
    checks = [(f"graph {n}", lambda t=t: reexecute(t())) for n, t in graph_checks(folder)]
    checks += [(f"refuses {n}", lambda t=t, w=w: check_refusal(t, w))
               for n, t, w in refusal_checks(folder)]
    checks.append(("safetensors round trip", lambda: check_safetensors(folder)))
    failed = 0
    for name, check in checks:
        try:
            failures = check()
        except Exception:
            failures = ["raised " + traceback.format_exc().strip().splitlines()[-1]]
        failed += bool(failures)
        for line in failures:
            print(f"FAIL {name}: {line}")
    print(f"check_format: {len(checks) - failed} passed, {failed} failed")
    return 1 if failed or not checks else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
