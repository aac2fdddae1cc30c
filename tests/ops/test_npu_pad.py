"""NPU builder for constant padding (src/backends/htp/compile/builders/pad.c: Pad, with a
StridedSlice for negative pads) against PyTorch, through the CLI, on every HTP generation.

Placement and numbers are checked as in test_npu_elementwise.py (whose NpuSuite harness this
file uses): `edgegrad compile --report` and `edgegrad run`, both at --precision fp32, for SM8450,
SM8650 and SM8850 (each op of `npu` on the NPU) and SM8350 (V68: every float node on the CPU
with the partitioner's reason). Every case traces under PyTorch 1.13 and 2.x alike (F.pad and
its backward are aten.constant_pad_nd in both).

    PYTHONPATH=python /usr/bin/python3 tests/ops/test_npu_pad.py \\
        --edgegrad build/edgegrad --workdir /tmp/npu-pad
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from test_npu_elementwise import NpuSuite, vjp  # noqa: E402

aten = torch.ops.aten
F = torch.nn.functional
PAD = "constant_pad_nd"


def r(*shape, scale=1.0):
    return torch.randn(*shape) * scale


def build_suite():
    torch.manual_seed(0)
    s = NpuSuite("npu_pad")
    x4 = r(2, 3, 5, 6)

    # forward: the last dims, the channels, every dim of a 4-D tensor, rank 2, fills
    s.case("pad_hw_fill", lambda x: aten.constant_pad_nd(x, [1, 2, 0, 3], -1.5), [x4], npu=[PAD])
    s.case("pad_w", lambda x: F.pad(x, (2, 1)), [x4], npu=[PAD])
    s.case("pad_channels", lambda x: F.pad(x, (0, 0, 0, 0, 2, 1), value=0.25), [x4], npu=[PAD])
    s.case("pad_all_dims", lambda x: F.pad(x, (1, 1, 2, 0, 0, 1, 1, 2), value=3.0), [x4],
           npu=[PAD])
    s.case("pad_int_fill", lambda x: aten.constant_pad_nd(x, [1, 1, 1, 1], 2), [x4], npu=[PAD])
    s.case("pad_rank2", lambda x: F.pad(x, (2, 1, 0, 1)), [r(3, 5)], npu=[PAD])
    s.case("pad_zero", lambda x: F.pad(x, (0, 0)) * 2.0, [x4], npu=[PAD, "mul.Tensor"])
    # negative entries crop (a padding's backward): alone, and mixed with padding
    s.case("crop", lambda x: F.pad(x, (-1, -2, 0, -1)), [x4], npu=[PAD])
    s.case("crop_and_pad", lambda x: F.pad(x, (-1, 2, 1, -2, 1, 0), value=-4.0), [x4],
           npu=[PAD])
    # in an NHWC region: between convolutions (its pads map to the held axes; W: 1 + 0 and H:
    # 0 + 0 stay below w2's 3x3 kernel, so QNN HTP folding the Pad into w2's conv is right)
    w1, w2 = r(4, 3, 3, 3, scale=0.3), r(5, 4, 3, 3, scale=0.3)
    s.case("between_convs",
           lambda x, w1, w2: F.conv2d(F.pad(F.relu(F.conv2d(x, w1, padding=1)), (1, 2, 0, 1)),
                                      w2),
           [x4, w1, w2], static=("arg1", "arg2"), npu=[PAD, "convolution", "relu"])
    # with its backward (constant_pad_nd by the negated pad)
    g = r(2, 3, 8, 9)
    s.case("pad_and_backward",
           lambda x, g: (lambda y: (y, vjp([y], [x], [g])[0]))(F.pad(x, (1, 2, 3, 0))),
           [x4.clone().requires_grad_(True), g], npu=[PAD])

    # declines: a zero padding QNN HTP would fold into the stride-1 conv reading it, giving that
    # conv a padding reaching its kernel (W: 3 + 0 >= 3), which it computes wrong; the conv
    # itself stays on the NPU
    s.case("before_conv_reaching_kernel",
           lambda x, w: F.conv2d(F.pad(F.relu(x), (3, 3, 1, 1)), w), [x4, r(4, 3, 3, 3)],
           static=("arg1",), npu=["convolution", "relu"],
           cpu={PAD: "read by convolution (stride 1, a kernel 3 wide, padding 0): QNN HTP folds "
                "this zero padding into that conv's, giving a padding of 3 that reaches the "
                "kernel, which it computes wrong (measured: relative error 1)"})
    s.case("pad_empty", lambda x: F.pad(x, (1, 1)), [r(0, 3, 2, 2)],
           cpu={PAD: "empty tensor arg0 [0, 3, 2, 2]: QNN tensors need every dimension >= 1"},
           socs=("SM8650",))
    return s


if __name__ == "__main__":
    build_suite().main()
