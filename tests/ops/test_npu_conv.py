"""NPU convolution builders (src/backends/htp/compile/builders/conv.c) against PyTorch, per SoC.

Every case is exported, compiled with `edgegrad compile --soc SOC --report` and run with
`edgegrad run --soc SOC`, both at --precision fp32 (optest.NPU_FP32), for SM8450 (V69), SM8650
(V75) and SM8850 (V81) — the report must show each convolution / convolution_backward node on
the NPU exactly where the lowering's scope says, and otherwise on the CPU with its one exact
reason — and for SM8350 (V68), where every float node stays on the CPU with "float ops need
HTP V69+ with fp16; SM8350 is V68". Every run must match PyTorch at the project tolerance, so a
declined node is also checked numerically through the portable kernel.

  forward:  plain, strided, padded (also beyond the kernel), dilated, grouped, depthwise (with
            a channel multiplier), Cin 1, transposed (with groups and output_padding), runtime
            bias, runtime (trainable) weight of every kind; declined: transposed + dilation.
  backward: aten.convolution_backward called directly, every mask (those without grad_weight
            with the element PyTorch 1.13 traces dropped: tests/data/make_npu_fixtures.py
            drop_grad_weight), odd sizes, strides 1, 2, 3 and mixed, so that every derived
            output_padding value 0..s-1 occurs and the grad_weight Conv2d needs its crop (a 1x1
            stride-2 conv of an even input never reads its last row), frozen and runtime
            weights, groups 2 and depthwise (with a multiplier) for every gradient, dilation
            (grad_input of dilated convs: test_npu_conv_dilated.py); declined: transposed=True.
  training: frozen-backbone steps (trainable biases / BN / head) and full training (every
            parameter trainable) with export_training_step on SM8650: every convolution and
            convolution_backward on the NPU, outputs equal to PyTorch's eager step.

    PYTHONPATH=python /usr/bin/python3 tests/ops/test_npu_conv.py \\
        --edgegrad build/edgegrad --workdir /tmp/ops-npu-conv
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
sys.path.insert(0, os.path.join(HERE, "..", "data"))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import optest  # noqa: E402
from optest import allclose_report  # noqa: E402
from make_npu_fixtures import drop_grad_weight  # noqa: E402
from edgegrad.export import export_function, export_training_step  # noqa: E402
import zoo  # noqa: E402

aten = torch.ops.aten
NPU_SOCS = ("SM8450", "SM8650", "SM8850")
V68 = "SM8350"
ARCH_REASON = "float ops need HTP V69+ with fp16; SM8350 is V68"
CONV_TARGETS = ("aten.convolution.default", "aten.convolution_backward.default")
T, F_ = True, False

torch.manual_seed(0)


# ---- cases -------------------------------------------------------------------------------

class Case:
    """fn(*args) exported with `static` argument names frozen; `edit` changes the graph JSON
    after export; `expect` maps conv node names to None (NPU) or their reason on the NPU
    SoCs."""

    def __init__(self, name, fn, args, names, static, expect, edit=None):
        self.name, self.fn, self.args, self.names = name, fn, args, names
        self.static, self.expect, self.edit = static, expect, edit


CASES = []


def r(*shape):
    return torch.randn(*shape)


def fwd(name, x, w, b=None, static=("w", "b"), reason=None, **kw):
    """A forward conv case; kw go to F.conv2d / F.conv_transpose2d (transposed=True)."""
    transposed = kw.pop("transposed", False)
    conv = F.conv_transpose2d if transposed else F.conv2d
    if b is None:
        args, names, fn = [x, w], ["x", "w"], lambda x, w: conv(x, w, None, **kw)
    else:
        args, names, fn = [x, w, b], ["x", "w", "b"], lambda x, w, b: conv(x, w, b, **kw)
    static = [s for s in static if s in names]
    CASES.append(Case("fwd_" + name, fn, args, names, static, {"convolution": reason}))


fwd("plain", r(2, 3, 7, 9), r(4, 3, 3, 3), r(4))
fwd("strided", r(2, 3, 11, 10), r(5, 3, 3, 2), r(5), stride=(2, 3), padding=(1, 0))
fwd("padded", r(2, 3, 6, 7), r(4, 3, 3, 3), padding=2)
fwd("pad_beyond_kernel", r(2, 3, 5, 6), r(4, 3, 1, 1), r(4), padding=1, stride=2)
# a 1x1 conv with stride > 1 and no padding: a StridedSlice of the pixels it reads, then a
# stride-1 Conv2d (QNN HTP's emulator crashes on ResNet-50's strided one); odd sizes, so the
# slice keeps the last row and column, and unequal strides
fwd("pointwise_s2", r(2, 4, 9, 7), r(6, 4, 1, 1), r(6), stride=2)
fwd("pointwise_s3x2", r(2, 5, 10, 9), r(3, 5, 1, 1), stride=(3, 2), static=())
fwd("dilated", r(2, 3, 9, 8), r(4, 3, 3, 3), r(4), dilation=(2, 1), padding=(2, 1))
# stride 1 with a padding that reaches the kernel (QNN HTP computes that pad_amount wrong): the
# input padded by an explicit Pad, the conv with pad_amount 0
fwd("pad_reaches_kernel", r(2, 3, 5, 6), r(4, 3, 3, 2), r(4), padding=(3, 1))
fwd("pad_reaches_kernel_depthwise", r(2, 4, 4, 5), r(4, 1, 2, 2), r(4), padding=2, groups=4,
    static=("b",))
fwd("groups", r(2, 4, 8, 7), r(6, 2, 3, 3), r(6), stride=2, padding=1, groups=2)
fwd("depthwise", r(2, 4, 9, 8), r(8, 1, 3, 3), r(8), stride=2, padding=1, groups=4)
fwd("depthwise_dilated", r(2, 3, 9, 9), r(3, 1, 3, 3), dilation=2, padding=2, groups=3)
fwd("cin1", r(2, 1, 10, 9), r(4, 1, 5, 5), r(4))
fwd("transposed", r(2, 4, 5, 6), r(4, 3, 3, 3), r(3), transposed=True, stride=2, padding=1,
    output_padding=1)
# a grouped TransposeConv2d with output_padding runs as asymmetric pad_amount [p, p - op] with
# output_padding 0 (QNN HTP computes grouped output_padding shifted); op > p declines
def tconv_op_above_pad(op, pad, groups, stride):
    return (f"output_padding {op} > padding {pad} with group {groups}, stride {stride}: QNN HTP "
            "computes such a TransposeConv2d wrong (measured: shifted); no exact form lowered")


TCONV_OP_ABOVE_PAD = tconv_op_above_pad(1, 0, 2, 2)
fwd("transposed_groups", r(2, 4, 5, 5), r(4, 3, 3, 3), r(6), transposed=True, stride=(2, 3),
    padding=(0, 1), output_padding=(1, 2), groups=2, reason=TCONV_OP_ABOVE_PAD)
fwd("transposed_groups_pad", r(2, 4, 5, 6), r(4, 3, 3, 3), r(6), transposed=True,
    stride=(2, 3), padding=(1, 2), output_padding=(1, 2), groups=2)
fwd("transposed_depthwise_pad", r(2, 4, 5, 6), r(4, 1, 3, 3), r(4), transposed=True, stride=2,
    padding=1, output_padding=1, groups=4)
# a depthwise TransposeConv2d wider than 3 at stride > 1 (QNN HTP computes it wrong): zeros
# inserted explicitly, then stride 1
fwd("transposed_depthwise5_s2", r(2, 4, 5, 6), r(4, 1, 5, 5), r(4), transposed=True, stride=2,
    padding=2, output_padding=1, groups=4)
fwd("runtime_bias", r(2, 3, 7, 7), r(4, 3, 3, 3), r(4), static=("w",), padding=1)
fwd("transposed_dilated", r(2, 4, 5, 5), r(4, 3, 3, 3), r(3), transposed=True, dilation=2,
    reason="dilation [2, 2] unsupported: TransposeConv2d has no dilation")
fwd("runtime_weight", r(2, 3, 7, 7), r(4, 3, 3, 3), r(4), static=("b",))
fwd("runtime_weight_groups", r(2, 4, 8, 7), r(6, 2, 3, 3), r(6), static=(), stride=2,
    padding=1, groups=2)
fwd("runtime_weight_depthwise", r(2, 4, 9, 8), r(8, 1, 3, 3), static=(), stride=2, padding=1,
    groups=4)
fwd("runtime_weight_transposed", r(2, 4, 5, 5), r(4, 3, 3, 3), r(6), static=(),
    transposed=True, stride=(2, 3), padding=(0, 1), output_padding=(1, 2), groups=2,
    reason=TCONV_OP_ABOVE_PAD)
fwd("runtime_weight_transposed_pad", r(2, 4, 5, 5), r(4, 3, 3, 3), r(6), static=(),
    transposed=True, stride=(2, 3), padding=(1, 2), output_padding=(1, 2), groups=2)


def bwd(name, x, w, mask, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
        transposed=False, output_padding=(0, 0), static=("w",), reason=None, edit=True):
    """A direct aten.convolution_backward case: grad_output from the forward's shape; outputs
    the elements the mask asks for. `edit` drops a traced grad_weight element that the mask
    does not ask for (conv.c decides by the elements present)."""
    conv = F.conv_transpose2d if transposed else F.conv2d
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    if transposed:
        kw["output_padding"] = output_padding
    gy = r(*conv(x, w, **kw).shape)
    want = [i for i in range(3) if mask[i]]
    bias_sizes = [gy.shape[1]] if mask[2] else [0]  # autograd passes [0] without a bias

    def fn(gy, x, w):
        res = aten.convolution_backward(gy, x, w, bias_sizes, list(stride), list(padding),
                                        list(dilation), transposed, list(output_padding),
                                        groups, list(mask))
        return tuple(res[i] for i in want)

    edit_fn = drop_grad_weight if edit and not mask[1] else None
    m = "".join("T" if b else "F" for b in mask)
    CASES.append(Case(f"bwd_{name}_{m}", fn, [gy, x, w], ["gy", "x", "w"], static,
                      {"convolution_backward": reason}, edit_fn))


# Shapes chosen so that every derived output_padding (H_in + 2p - k) mod s occurs:
#   s1: (0,0)   s2: (0,1)   s3a: (0,1)   s3b: (2,1)   mixed (2,3): (0,2)   1x1 s2: (0,1)
BWD_SHAPES = [
    ("s1", r(2, 3, 7, 6), r(4, 3, 3, 3), dict(stride=(1, 1), padding=(1, 1))),
    ("s2", r(2, 3, 9, 8), r(4, 3, 3, 3), dict(stride=(2, 2), padding=(1, 1))),
    ("s3a", r(2, 3, 7, 8), r(5, 3, 3, 3), dict(stride=(3, 3), padding=(1, 1))),
    ("s3b", r(1, 2, 9, 10), r(3, 2, 3, 3), dict(stride=(3, 3), padding=(1, 0))),
    ("mixed", r(2, 3, 11, 14), r(4, 3, 5, 3), dict(stride=(2, 3), padding=(2, 0))),
    ("1x1_s2", r(2, 4, 9, 8), r(6, 4, 1, 1), dict(stride=(2, 2), padding=(0, 0))),
    ("pad_beyond_kernel", r(2, 3, 5, 6), r(4, 3, 1, 1), dict(stride=(1, 1), padding=(1, 1))),
]
# grad_input at stride 3 with output_padding > padding: QNN HTP computes that TransposeConv2d
# wrong (measured), so it is declined
GRAD_INPUT_REASON = {"s3b": tconv_op_above_pad(2, 1, 1, 3), "mixed": tconv_op_above_pad(2, 0, 1, 3)}
for nm, x, w, kw in BWD_SHAPES:
    for mask in ((T, F_, F_), (T, F_, T), (F_, F_, T)):
        bwd(nm, x, w, mask, reason=GRAD_INPUT_REASON.get(nm) if mask[0] else None, **kw)

MASKS_GW = ((T, T, F_), (T, T, T), (F_, T, F_), (F_, T, T))
for nm, x, w, kw in BWD_SHAPES:  # grad_weight on every shape, frozen and runtime weight
    for mask in MASKS_GW:
        bwd(nm, x, w, mask, static=() if mask[0] else ("w",),
            reason=GRAD_INPUT_REASON.get(nm) if mask[0] else None, **kw)
# as PyTorch 1.13 traces them, a grad_weight element is present but nothing reads it: the NPU
# lowering does not compute it
_x, _w = r(2, 3, 7, 6), r(4, 3, 3, 3)
for mask in ((T, F_, T), (F_, F_, T)):
    bwd("traced_gw", _x, _w, mask, stride=(2, 2), padding=(1, 1), reason=None, edit=False)
for mask in ((T, F_, F_), (T, T, T), (F_, T, F_)):
    bwd("groups2", r(2, 4, 7, 7), r(6, 2, 3, 3), mask, padding=(1, 1), groups=2)
    # grad_input needs output_padding 1 in W, where padding is 0: declined (TCONV_OP_ABOVE_PAD)
    bwd("groups2_s2", r(3, 6, 9, 8), r(4, 3, 3, 3), mask, stride=(2, 2), padding=(1, 0),
        groups=2, static=(), reason=TCONV_OP_ABOVE_PAD if mask[0] else None)
    # MobileNet's downsampling depthwise conv (stride 2, even input): output_padding 1 <= 1
    bwd("depthwise_s2_even", r(2, 4, 8, 8), r(4, 1, 3, 3), mask, stride=(2, 2),
        padding=(1, 1), groups=4)
    bwd("depthwise", r(2, 4, 7, 7), r(4, 1, 3, 3), mask, padding=(1, 1), groups=4)
    bwd("depthwise_mult_s2", r(2, 3, 8, 9), r(6, 1, 3, 3), mask, stride=(2, 2),
        padding=(1, 1), groups=3, static=())
# grad_weight's Conv2d (grad_output 2x2 as its kernel) with a padding that reaches it, as
# MobileNetV3's 5x5 depthwise convs at 2x2 have: explicit Pad
for mask in ((T, T, T), (F_, T, F_)):
    bwd("gw_pad_reaches_kernel", r(2, 4, 2, 2), r(4, 1, 5, 5), mask, padding=(2, 2), groups=4)
# grad_input of MobileNetV3's / MnasNet's 5x5 stride-2 depthwise convs (and 7x7, stride 3):
# the zero-insertion form, every derived output_padding
for mask in ((T, F_, F_), (T, T, T)):
    bwd("depthwise5_s2", r(2, 4, 8, 10), r(4, 1, 5, 5), mask, stride=(2, 2), padding=(2, 2),
        groups=4)
    bwd("depthwise7_s2_runtime", r(2, 3, 7, 8), r(3, 1, 7, 7), mask, stride=(2, 2),
        padding=(3, 3), groups=3, static=())
bwd("depthwise5_s3", r(2, 4, 9, 10), r(4, 1, 5, 5), (T, F_, T), stride=(3, 2), padding=(2, 1),
    groups=4)
# grad_weight of a strided conv with Cin x Cout >= 32768: one MatMul per kernel tap (conv.c,
# lower_grad_weight_taps; QNN HTP's fast preparation computes the Conv2d form wrong there):
# ResNet's 1x1 stride-2 downsample (even input: its last row and column unread), a 3x3
# stride 2 on odd and even inputs, stride (2, 1) with padding (1, 0), a 7x7 stride 2 (49 taps),
# 3x1 and 1x3 kernels, and one just below the bound (the Conv2d form)
for mask in ((F_, T, F_), (T, T, T)):
    bwd("taps_1x1_s2", r(2, 128, 6, 6), r(256, 128, 1, 1), mask, stride=(2, 2), static=())
    bwd("taps_3x3_s2_odd", r(2, 128, 7, 7), r(256, 128, 3, 3), mask, stride=(2, 2),
        padding=(1, 1), static=())
bwd("taps_3x3_s2_even", r(1, 256, 4, 4), r(128, 256, 3, 3), (F_, T, T), stride=(2, 2),
    padding=(1, 1))
bwd("taps_3x3_s21", r(2, 128, 6, 5), r(256, 128, 3, 3), (F_, T, F_), stride=(2, 1),
    padding=(1, 0))
bwd("taps_7x7_s2", r(1, 64, 9, 9), r(512, 64, 7, 7), (F_, T, F_), stride=(2, 2), padding=(3, 3))
for mask in ((F_, T, F_), (T, T, T)):  # non-square kernels and outputs (Ho != Wo)
    bwd("taps_3x1_s2", r(2, 128, 7, 5), r(256, 128, 3, 1), mask, stride=(2, 2), padding=(1, 0),
        static=())
    bwd("taps_1x3_s2", r(2, 128, 5, 8), r(256, 128, 1, 3), mask, stride=(2, 2), padding=(0, 1),
        static=())
bwd("taps_below_3x3_s2", r(2, 127, 7, 7), r(256, 127, 3, 3), (F_, T, F_), stride=(2, 2),
    padding=(1, 1))
# where N*Ho*Wo <= Cout, as in all of the above, grad_weight is the im2col form (one 1x1 Conv2d
# over the pixels, lower_grad_weight_pixels); with more pixels than output channels the tap form
# and the Conv2d form below the bound
bwd("taps_wide_3x3_s2", r(2, 128, 25, 25), r(256, 128, 3, 3), (F_, T, F_), stride=(2, 2),
    padding=(1, 1), static=())
bwd("taps_wide_1x1_s2", r(2, 128, 24, 24), r(256, 128, 1, 1), (T, T, T), stride=(2, 2))
bwd("taps_wide_below_3x3_s2", r(2, 127, 25, 25), r(256, 127, 3, 3), (F_, T, F_), stride=(2, 2),
    padding=(1, 1))
bwd("gw_pad_reaches_kernel_g1", r(2, 3, 2, 3), r(4, 3, 5, 4), (F_, T, T), padding=(2, 1),
    static=())
bwd("dilated", r(2, 3, 9, 8), r(4, 3, 3, 3), (T, F_, F_), dilation=(2, 1), padding=(2, 1))
bwd("dilated", r(2, 3, 9, 8), r(4, 3, 3, 3), (F_, T, T), dilation=(2, 1), padding=(2, 1),
    static=())
# grad_weight's Conv2d would have stride > 1 and dilation > 1, which QNN HTP refuses for some
# shapes (measured): declined
bwd("dilated_s2", r(2, 3, 10, 9), r(4, 3, 3, 2), (F_, T, F_), stride=(2, 3), dilation=(2, 2),
    padding=(1, 2), static=(), reason="grad_weight with stride [2, 3] and dilation [2, 2]: its "
    "Conv2d would have both > 1, which QNN HTP refuses for some shapes (measured)")
bwd("transposed", r(2, 4, 5, 6), r(4, 3, 3, 3), (T, F_, F_), transposed=True, stride=(2, 2),
    padding=(1, 1), output_padding=(1, 0), reason="transposed=True unsupported")
bwd("runtime_weight", r(2, 3, 7, 6), r(4, 3, 3, 3), (T, F_, F_), stride=(2, 2), padding=(1, 1),
    static=())
bwd("runtime_weight", r(2, 3, 7, 6), r(4, 3, 3, 3), (T, F_, T), stride=(2, 2), padding=(1, 1),
    static=())


# ---- running a case ----------------------------------------------------------------------

def run_edgegrad(exe, model, inputs, soc, out_dir, extra=()):
    cmd = [exe, "run", model, "--soc", soc, *optest.NPU_FP32, "--output-dir", out_dir, "-q",
           *extra]
    for name, path in inputs:
        cmd += ["--input", f"{name}={path}"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"run --soc {soc}: exit {p.returncode}: {p.stderr.strip()}")


def compile_report(exe, model, soc, path, extra=()):
    """The placement report of `model` compiled for `soc` (extra: more compile options, e.g. a
    skip list)."""
    p = subprocess.run([exe, "compile", model, "--soc", soc, *optest.NPU_FP32, "--report", path,
                        "-q", *extra], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"compile --soc {soc}: exit {p.returncode}: {p.stderr.strip()}")
    with open(path) as f:
        return json.load(f)


def check_placement(report, soc, expect):
    """expect: conv node name -> None (NPU) or reason. Returns a list of problems."""
    bad = []
    seen = set()
    for n in report["nodes"]:
        if soc == V68:  # every node on the CPU; the conv nodes by the float gate
            want = ARCH_REASON if n["target"] in CONV_TARGETS else n["reason"]
            if n["placement"] != "cpu" or n["reason"] != want:
                bad.append(f"{soc} {n['name']}: {n['placement']} {n['reason']!r}, want cpu "
                           f"{want!r}")
            continue
        if n["target"] not in CONV_TARGETS:
            continue
        seen.add(n["name"])
        if n["name"] not in expect:
            bad.append(f"{soc} {n['name']}: no expectation")
            continue
        want = expect[n["name"]]
        got = None if n["placement"] == "npu" else n["reason"]
        if got != want:
            bad.append(f"{soc} {n['name']}: {'npu' if got is None else repr(got)}, want "
                       f"{'npu' if want is None else repr(want)}")
    missing = set(expect) - seen
    if soc != V68 and missing:
        bad.append(f"{soc}: nodes {sorted(missing)} not in the graph")
    return bad


def compare_outputs(out_dir, refs, soc):
    bad = []
    for name, ref in refs.items():
        path = os.path.join(out_dir, name + ".npy")
        if not os.path.exists(path):
            bad.append(f"{soc} {name}: not written")
            continue
        why = allclose_report(np.load(path), ref)
        if why:
            bad.append(f"{soc} {name}: {why}")
    return bad


def run_function_case(exe, workdir, case):
    d = os.path.join(workdir, case.name)
    os.makedirs(d, exist_ok=True)
    stem = os.path.join(d, "model")
    res = export_function(case.fn, case.args, stem, arg_names=case.names,
                          static_args=case.static)
    if case.edit:
        with open(stem + ".json") as f:
            graph = json.load(f)
        case.edit(graph)  # may find nothing to drop: some kernels return None as asked
        with open(stem + ".json", "w") as f:
            json.dump(graph, f)
    with torch.no_grad():
        ref = case.fn(*case.args)
    ref = ref if isinstance(ref, tuple) else (ref,)
    out_names = [o["name"] for o in res.graph["outputs"]]
    refs = {n: t.detach().numpy() for n, t in zip(out_names, ref)}
    inputs = []
    for nm, a in zip(case.names, case.args):
        if nm in case.static:
            continue
        path = os.path.join(d, nm + ".npy")
        np.save(path, a.detach().numpy())
        inputs.append((nm, path))
    bad = []
    for soc in NPU_SOCS + (V68,):
        rep = compile_report(exe, stem + ".json", soc, os.path.join(d, f"report_{soc}.json"))
        bad += check_placement(rep, soc, case.expect)
        out = os.path.join(d, "out_" + soc)
        run_edgegrad(exe, stem + ".json", inputs, soc, out)
        bad += compare_outputs(out, refs, soc)
    return bad


# ---- frozen-backbone training steps --------------------------------------------------------

class Backbone(nn.Module):
    """conv(3->6, 3, pad 1) + relu, conv(6->6, 3, stride 2, pad 1, no bias) + relu,
    conv(6->6, 3, pad 1) + relu, conv(6->8, 1, stride 2) + relu, linear head (on 3x9x9)."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 6, 3, padding=1)
        self.c2 = nn.Conv2d(6, 6, 3, stride=2, padding=1, bias=False)
        self.c3 = nn.Conv2d(6, 6, 3, padding=1)
        self.c4 = nn.Conv2d(6, 8, 1, stride=2)
        self.fc = nn.Linear(8 * 3 * 3, 4)

    def forward(self, x):
        for c in (self.c1, self.c2, self.c3, self.c4):
            x = F.relu(c(x))
        return self.fc(torch.flatten(x, 1))


def step_cases():
    torch.manual_seed(3)
    bb = Backbone()
    x9, t4 = torch.randn(2, 3, 9, 9), torch.tensor([0, 3])
    torch.manual_seed(4)
    small = zoo.SmallConvNet(bn=True)
    x16, t5 = torch.randn(2, 3, 16, 16), torch.tensor([1, 4])
    return [
        # biases of c1 and c3 and the head: [F,F,T] (c1), [T,F,F] (c2), [T,F,T] (c3),
        # [T,F,F] (c4); the two with grad_bias carry an unread grad_weight as traced, which
        # the NPU lowering skips, so all four run on the NPU
        ("step_biases_head", bb, x9, t4, ["c1.bias", "c3.bias", "fc.weight", "fc.bias"], None),
        ("step_biases_head_nogw", bb, x9, t4, ["c1.bias", "c3.bias", "fc.weight", "fc.bias"],
         drop_grad_weight),
        # BN parameters and head of a train-mode BN net: conv3 backward [T,F,F]
        ("step_bn_head", small, x16, t5, ["bn2.weight", "bn2.bias", "fc.weight", "fc.bias"],
         None),
        # full training: every conv weight trainable, [F,T,T] (c1), [T,T,F] (c2), [T,T,T]
        # (c3, c4: its 1x1 stride-2 grad_weight is cropped)
        ("step_full", bb, x9, t4, None, None),
        ("step_full_bn", small, x16, t5, None, None),
    ]


def save_step_inputs(d, graph, model, x, target):
    """Saves the runtime inputs of training-step graph `graph` (zoo.runtime_inputs) as
    D/NAME.npy; returns [(name, path)]."""
    inputs = []
    for nm, a in zoo.runtime_inputs(graph, model, x, target).items():
        path = os.path.join(d, nm + ".npy")
        np.save(path, a)
        inputs.append((nm, path))
    return inputs


def run_step_case(exe, workdir, name, model, x, target, trainable, edit):
    d = os.path.join(workdir, name)
    os.makedirs(d, exist_ok=True)
    stem = os.path.join(d, "model")
    res = export_training_step(model, F.cross_entropy, (x, target), stem, trainable=trainable)
    graph = res.graph
    if edit:
        edit(graph)
        with open(stem + ".json", "w") as f:
            json.dump(graph, f)
    if trainable is None:
        trainable = [n for n, _ in model.named_parameters()]
    refs, _, _ = zoo.eager(model, F.cross_entropy, x, target, trainable)
    inputs = save_step_inputs(d, graph, model, x, target)
    values = {v["id"]: v for v in graph["values"]}
    expect, n_bwd_npu = {}, 0
    for n in graph["nodes"]:
        if n["target"] == "aten.convolution.default":
            expect[n["name"]] = None
        elif n["target"] == "aten.convolution_backward.default":
            expect[n["name"]] = None
            n_bwd_npu += 1
    bad = [] if any(n["target"] == "aten.convolution_backward.default"
                    for n in graph["nodes"]) else ["no convolution_backward traced"]
    for soc in ("SM8650", V68):
        rep = compile_report(exe, stem + ".json", soc, os.path.join(d, f"report_{soc}.json"))
        bad += check_placement(rep, soc, expect)
        out = os.path.join(d, "out_" + soc)
        run_edgegrad(exe, stem + ".json", inputs, soc, out)
        bad += compare_outputs(out, refs, soc)
    print(f"  {name}: {n_bwd_npu} of "
          f"{sum(1 for v in expect if 'backward' in v)} convolution_backward on the NPU")
    return bad


# ---- main ----------------------------------------------------------------------------------

def main():
    run = optest.Runner("npu_conv")
    for case in CASES:
        run.record(case.name, lambda c=case: run_function_case(run.exe, run.workdir, c))
    for name, model, x, target, trainable, edit in step_cases():
        run.record(name, lambda a=(name, model, x, target, trainable, edit):
                   run_step_case(run.exe, run.workdir, *a))
    run.finish()


if __name__ == "__main__":
    main()
