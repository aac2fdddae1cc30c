#!/usr/bin/python3
"""Self-check of the exporter and the graph format, without the C binary.

    /usr/bin/python3 tests/conformance/check_format.py [--keep DIR]

1. Exports graphs (the training steps, a sample of the convolution_backward sweep, graphs
   exercising every ARG tag, integer/bool/0-d outputs, traced constants, an in-place ReLU, and
   the bundled demo example if present), re-reads each file pair with graph_exec (checking the
   format's rules), re-executes it op by op with torch.ops and compares every output with
   PyTorch's eager result (compare.py's rule).
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
from edgegrad import export_function, export_training_step, safetensors  # noqa: E402

CONV_SAMPLE_EVERY = 11


# --------------------------------------------------------------------------------------------
# graphs re-executed op by op


def _function_case(fn, args, stem, **kw):
    """Export ``fn`` and return a cases.Built with its eager reference."""
    result = export_function(fn, args, stem, **kw)
    names = [e["name"] for e in result.graph["outputs"]]
    outs = fn(*[a.clone() for a in args])
    outs = outs if isinstance(outs, tuple) else (outs,)
    static = set(kw.get("static_args", ()))
    arg_names = kw.get("arg_names") or [e["name"] for e in result.graph["inputs"]]
    inputs = {n: a.numpy() for n, a in zip(arg_names, args) if n not in static}
    reference = {n: o.detach().contiguous().numpy() for n, o in zip(names, outs)}
    return cases.Built(result.json_path, inputs, reference, "function")


def _all_tags(x, mask):
    """Every ARG tag: dtype/layout/device/memory_format kwargs, tagged floats incl. inf."""
    ones = torch.ones_like(x, dtype=torch.float32, layout=torch.strided,
                           device=torch.device("cpu"), memory_format=torch.preserve_format)
    y = torch.clamp(x, min=float("-inf"), max=float("inf")) * 0.5 + ones
    picked = torch.where(mask, y, torch.zeros_like(y))
    return picked, picked.argmax(1), picked > 1.0, picked.sum(), x.to(torch.float64)


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


def graph_checks(folder):
    """(name, thunk returning a Built) for every graph to re-execute."""
    g = torch.Generator().manual_seed(7)
    x = torch.randn(4, 3, generator=g)
    mask = torch.rand(4, 3, generator=g) > 0.3
    checks = [(c.name, lambda c=c: cases.build(c, os.path.join(folder, c.name)))
              for i, c in enumerate(cases.all_cases())
              if c.kind == "training_step" or i % CONV_SAMPLE_EVERY == 0]
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
    ]
    if _demo() is not None:
        checks.append(("demo_digits_step", _demo))
    return checks


def reexecute(built):
    """Failures of re-reading + re-executing ``built`` against its reference."""
    graph, statics = graph_exec.load(built.json_path)
    got = graph_exec.execute(graph, statics, built.inputs)
    failures = []
    for name, want in built.reference.items():
        reason = compare.compare(got[name], want) if name in got else "not an output"
        if reason:
            failures.append(f"output {name}: {reason}")
    return failures


# --------------------------------------------------------------------------------------------
# refusals


class _BNNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)

    def forward(self, x):
        return self.bn(self.conv(x)).flatten(1)


def _alias_after_write(x):
    y = x + 0
    v = y.view(-1)
    y.mul_(2)
    return v + 1


def _write_input(x):
    x.add_(1)
    return x * 2


def refusal_checks(folder):
    """(name, thunk, words the ValueError message must contain)."""
    x = torch.randn(2, 3)
    stem = os.path.join(folder, "refused")
    fn = lambda f, args=(x,), **kw: (lambda: export_function(f, args, stem, **kw))
    return [
        ("none_output", fn(lambda a: (a * 2, None)), "None"),
        ("int_output", fn(lambda a: (a * 2, 3)), "outputs must be tensors"),
        ("string_argument", fn(lambda a: F.gelu(a, approximate="tanh")), "str"),
        ("bfloat16", fn(lambda a: a.to(torch.bfloat16) * 2), "bfloat16"),
        ("rank_9", fn(lambda a: a * 2, (torch.ones([1] * 9),)), "rank"),
        ("non_tensor_arg", fn(lambda a, k: a * k, (x, 3)), "must be tensors"),
        ("unknown_static", fn(lambda a: a * 2, static_args=("nope",)), "nope"),
        ("duplicate_output", fn(lambda a: (a, a * 2), output_names=("o", "o")), "twice"),
        ("read_after_inplace", fn(_alias_after_write), "in place"),
        ("write_into_input", fn(_write_input), "in place"),
        ("batchnorm_buffers", lambda: export_training_step(
            _BNNet(), lambda o, t: F.mse_loss(o, t),
            (torch.randn(2, 1, 5, 5), torch.randn(2, 18)), stem), "buffers"),
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
    folder = args.keep or tempfile.mkdtemp(prefix="edgegrad-check-format-")
    os.makedirs(folder, exist_ok=True)
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
