"""NPU builders for bilinear and nearest upsampling and their backward ops
(src/backends/htp/compile/builders/resize.c: two MatMuls with STATIC interpolation matrices,
transposed for the backward) against PyTorch, through the CLI, on every HTP generation.

Placement and numbers are checked as in test_npu_elementwise.py (whose NpuSuite harness this
file uses): `edgegrad compile --report` and `edgegrad run`, both at --precision fp32, for SM8450,
SM8650 and SM8850 (each upsampling node on the NPU) and SM8350 (V68: every float node on the
CPU with the partitioner's reason).

Covered, forward and backward: integer and fractional ratios up and down, align_corners both
ways, an output of 1, a dim left as it is (only the other dim's MatMul), both dims unchanged,
batches > 1, a scale that does not reproduce the output size (F.interpolate with
recompute_scale_factor=False: ATen's coordinates then use 1/scale), gradients through whole
autograd chains (PyTorch 1.13 traces F.interpolate as the .vec overloads, PyTorch 2 as
.default: `up()` names the one this PyTorch traces) and the upsampling between NPU
convolutions. Declined, on the CPU with the builder's reason: an empty batch and an
interpolation matrix above the lowering's STATIC limit.

nearest with a scale beside an output of exactly 2 * in differs between PyTorch versions (1.13's
forward takes ATen's exact case for a single channel only); edgegrad follows 2.x, so that case
runs under PyTorch 2.x and says it is skipped under 1.x.

    PYTHONPATH=python /usr/bin/python3 tests/ops/test_npu_resize.py \
        --edgegrad build/edgegrad --workdir /tmp/npu-resize
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from optest import chain, vjp  # noqa: E402
from test_npu_elementwise import NpuSuite  # noqa: E402

aten = torch.ops.aten
F = torch.nn.functional
TORCH_2 = int(torch.__version__.split(".")[0]) >= 2


def r(*shape):
    return torch.randn(*shape)


def up(mode, backward=False):
    """The target F.interpolate traces to under this PyTorch (1.13: .vec, 2.x: .default)."""
    op = f"upsample_{mode}2d" + ("_backward" if backward else "")
    return op + (".default" if TORCH_2 else ".vec")


def interp(mode, size=None, scale=None, ac=None, recompute=None):
    kw = {"align_corners": ac} if mode == "bilinear" else {}
    if recompute is not None:
        kw["recompute_scale_factor"] = recompute
    return lambda x: F.interpolate(x, size=size, scale_factor=scale, mode=mode, **kw)


def grads(f):
    """(x, g) -> (f(x), d(sum(f(x) * g))/dx): the forward stays a node of the traced graph."""
    def fn(x, g):
        x = x.detach().requires_grad_()
        y = f(x)
        return y, vjp([y], [x], [g])[0]
    return chain(fn)


def out_shape(f, x):
    with torch.no_grad():
        return tuple(f(x).shape)


def conv_up_conv_grads(x, w1, w2, gy):
    with torch.enable_grad():
        ps = [t.detach().requires_grad_() for t in (x, w1, w2)]
        y = F.interpolate(F.relu(F.conv2d(ps[0], ps[1], padding=1)), scale_factor=2,
                          mode="bilinear", align_corners=False)
        return tuple(torch.autograd.grad((F.conv2d(y, ps[2], padding=1) * gy).sum(), ps))


def build_suite():
    torch.manual_seed(0)
    s = NpuSuite("npu_resize")
    x = r(2, 3, 5, 6)
    bl, nn = up("bilinear"), up("nearest")
    blb, nnb = up("bilinear", True), up("nearest", True)

    # forward and backward through F.interpolate: each size rule, both modes
    forms = [
        ("x2", dict(scale=2)),
        ("frac", dict(size=(9, 13))),
        ("down", dict(size=(3, 4))),
        ("out1", dict(size=(1, 1))),
        ("rows_only", dict(size=(11, 6))),
        ("cols_only", dict(size=(5, 14))),
        ("same", dict(size=(5, 6))),
        ("scale_not_size", dict(scale=1.7, recompute=False)),
    ]
    for name, kw in forms:
        for ac in (False, True):
            f = interp("bilinear", ac=ac, **kw)
            tag = f"bilinear{'_ac' if ac else ''}_{name}"
            s.case(tag, f, [x], npu=[bl])
            s.case(tag + "_grad", grads(f), [x, r(*out_shape(f, x))], npu=[bl, blb])
        f = interp("nearest", **kw)
        s.case(f"nearest_{name}", f, [x], npu=[nn])
        s.case(f"nearest_{name}_grad", grads(f), [x, r(*out_shape(f, x))], npu=[nn, nnb])

    # the .default overloads called directly (both PyTorch versions trace them as called)
    s.case("bilinear_default_scales", lambda t: aten.upsample_bilinear2d(t, [8, 10], False,
                                                                         1.5, 1.75),
           [x], npu=["upsample_bilinear2d"])
    s.case("bilinear_backward_default",
           lambda g: aten.upsample_bilinear2d_backward(g, [7, 9], [2, 3, 5, 6], True),
           [r(2, 3, 7, 9)], npu=["upsample_bilinear2d_backward"])
    s.case("nearest_backward_default",
           lambda g: aten.upsample_nearest2d_backward(g, [4, 13], [2, 3, 5, 6]),
           [r(2, 3, 4, 13)], npu=["upsample_nearest2d_backward"])
    if TORCH_2:
        s.case("nearest_exact_double_scale",
               lambda t: aten.upsample_nearest2d(t, [10, 12], 1.9, 2.2), [x],
               npu=["upsample_nearest2d"])
    else:
        print("skip npu_resize/nearest_exact_double_scale: PyTorch 1.x takes ATen's exact case "
              "(out == 2 * in, whatever the scale) for a single channel only; edgegrad follows "
              "2.x")

    # between NPU convolutions: NHWC on both sides, no conversion
    s.case("conv_up_conv_grads", conv_up_conv_grads,
           [r(2, 3, 6, 5), r(4, 3, 3, 3) * 0.3, r(2, 4, 3, 3) * 0.3, r(2, 2, 12, 10)],
           npu=["convolution", bl, blb])

    # declines
    s.case("bilinear_empty_batch", interp("bilinear", scale=2, ac=False), [r(0, 3, 4, 4)],
           cpu={bl: "empty tensor"}, socs=("SM8650",))
    s.case("nearest_matrix_limit", interp("nearest", size=(1, 2049)), [r(1, 1, 1, 2048)],
           cpu={nn: "W 2048 -> 2049: its interpolation matrix (4.19635e+06 elements) exceeds "
                    "the NPU lowering's STATIC matrix limit of 4194304 elements"},
           socs=("SM8650",))
    return s


if __name__ == "__main__":
    build_suite().main()
