"""edgegrad's fp16 precision (`--precision fp16`, docs/fp16.md) against PyTorch in half storage.

fp16 precision stores every float tensor of an NPU partition as fp16 does (inputs and weights
rounded to half as they enter, each op's output rounded after it) and computes each op in fp32
between. PyTorch's fair reference is the same storage: the inputs and weights rounded to half
(`.half()`), the op computed on them in float64, the result rounded to half. edgegrad's fp32
accumulation may round the other way where the exact result lies within float32 rounding of a
half-way point, so each output element must be within 1 fp16 ulp of the reference (the
spacing of half at the reference value), and exactly a half value. Cases are convolutions on
the NPU of SM8650 (the report must place them there): a long reduction (Cin*kh*kw = 1152),
strided with bias, depthwise, a transposed convolution, and conv + ReLU; the same programs run
with --precision fp32 must be off the half values (so the check can fail).

    PYTHONPATH=python /usr/bin/python3 tests/ops/test_fp16.py \\
        --edgegrad build/edgegrad --workdir /tmp/ops-fp16
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import optest  # noqa: E402

SOC = "SM8650"
torch.manual_seed(0)


def half(t):
    return t.half().double()


CASES = [
    # name, fn(x, w, b), x shape, w shape, bias
    ("conv_long_reduction", lambda x, w, b: F.conv2d(x, w, padding=1), (1, 128, 6, 6),
     (16, 128, 3, 3), False),
    ("conv_stride2_bias", lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), (2, 8, 9, 9),
     (12, 8, 3, 3), True),
    ("conv_depthwise", lambda x, w, b: F.conv2d(x, w, padding=1, groups=8), (2, 8, 7, 7),
     (8, 1, 3, 3), False),
    ("conv_transpose", lambda x, w, b: F.conv_transpose2d(x, w, stride=2, padding=1),
     (1, 8, 5, 5), (8, 6, 3, 3), False),
    ("conv_relu", lambda x, w, b: F.relu(F.conv2d(x, w, b, padding=1)), (1, 16, 8, 8),
     (16, 16, 3, 3), True),
]


def run_case(exe, workdir, name, fn, xs, ws, with_bias):
    d = os.path.join(workdir, name)
    os.makedirs(d, exist_ok=True)
    x = torch.randn(*xs)
    w = torch.randn(*ws) * (1 / (ws[1] * ws[2] * ws[3]) ** 0.5)
    b = torch.randn(ws[0]) if with_bias else None
    args = (x, w, b) if with_bias else (x, w)
    f = (lambda x, w, b: fn(x, w, b)) if with_bias else (lambda x, w: fn(x, w, None))
    names = ["x", "w", "b"][:len(args)]
    path = os.path.join(d, "model")
    optest.export_function(f, args, path, arg_names=names, static_args=names[1:])
    np.save(os.path.join(d, "x.npy"), x.numpy())
    rep = os.path.join(d, "report.json")
    r = subprocess.run([exe, "compile", path + ".json", "--soc", SOC, "--precision", "fp16",
                        "-o", path + ".egp", "--report", rep, "-q"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        return f"compile: exit {r.returncode}: {r.stderr.strip()}"
    report = json.load(open(rep))
    conv = [n for n in report["nodes"] if "convolution" in n["target"]]
    if not conv or any(n["placement"] != "npu" for n in conv) or report["precision"] != "fp16":
        return f"not on the NPU at fp16: {conv}, precision {report['precision']}"
    with torch.no_grad():
        ref = fn(half(x), half(w), half(b) if with_bias else None).half()
    ulp = np.spacing(np.abs(ref.numpy())).astype(np.float64)
    ref = ref.double().numpy()
    why = []
    for prec in ("fp16", "fp32"):
        out = os.path.join(d, "out_" + prec)
        r = subprocess.run([exe, "run", path + ".egp", "--input", f"x={d}/x.npy", "--precision",
                            prec, "-o", out, "-q"], capture_output=True, text=True)
        if r.returncode != 0:
            return f"run --precision {prec}: exit {r.returncode}: {r.stderr.strip()}"
        got = np.load(os.path.join(out, "out0.npy")).astype(np.float64)
        off = np.abs(got - ref) / ulp
        is_half = np.array_equal(got, got.astype(np.float16).astype(np.float64))
        if prec == "fp16" and (off.max() > 1 or not is_half):
            why.append(f"fp16: {off.max():.2f} ulps from PyTorch's half result at "
                       f"{np.unravel_index(off.argmax(), off.shape)}, half values: {is_half}")
        if prec == "fp32" and is_half:
            why.append("fp32: the outputs are all half values")
    return why


def main():
    run = optest.Runner("fp16")
    for name, fn, xs, ws, bias in CASES:
        run.record(name, lambda c=(name, fn, xs, ws, bias): run_case(run.exe, run.workdir, *c))
    run.finish()


if __name__ == "__main__":
    main()
