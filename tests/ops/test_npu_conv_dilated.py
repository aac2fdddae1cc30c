"""grad_input of a dilated convolution on the NPU (src/backends/htp/compile/builders/conv.c,
dilate_filter) against PyTorch, per SoC.

aten.convolution_backward is called directly with dilation 2 and 3 (and mixed per dim), as
torchvision's LRASPP / DeepLabV3 backbones have it: the grad_input TransposeConv2d runs with the
dilated kernel W_d built inside the partition from the one weight tensor (frozen: the forward's
STATIC filter; trainable: the partition input). Cases: plain, grouped and depthwise convs,
kernels 1x1 (dilation is then a no-op), 3x3 and 5x5 (LRASPP's 5x5 dilation-2 depthwise: a 9x9
dilated kernel), paddings below, equal to and above the dilated kernel's half, stride 1, and
stride 2 where the grad_weight rule allows (frozen weight: no grad_weight), including the
depthwise stride-2 form whose dilated kernel is wider than 3 (zero-insertion form), every mask
with grad_input. Each case is exported, compiled with `--report` and run at --precision fp32
(optest.NPU_FP32) for SM8450, SM8650 and SM8850: the convolution_backward node must be on the
NPU (or on the CPU with its exact reason: grad_weight with stride and dilation both > 1, an
output_padding QNN HTP computes wrong), and for SM8350 (V68) on the CPU with "float ops need
HTP V69+ with fp16; SM8350 is V68". The forward of a depthwise conv with stride and dilation
both > 1 stays on the CPU (QNN HTP refuses it). Every run must match PyTorch at the project tolerance. The
cases trace the same under PyTorch 1.13 and 2.x (a 1.13 trace's unread grad_weight element is
dropped as in test_npu_conv.py).

    PYTHONPATH=python /usr/bin/python3 tests/ops/test_npu_conv_dilated.py \\
        --edgegrad build/edgegrad --workdir /tmp/ops-npu-conv-dilated
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import optest  # noqa: E402
import test_npu_conv as base  # noqa: E402

T, F_ = True, False
GW_BOTH = ("grad_weight with stride [{0}, {1}] and dilation [{2}, {3}]: its Conv2d would have "
           "both > 1, which QNN HTP refuses for some shapes (measured)")

torch.manual_seed(1)
r = base.r
base.CASES.clear()  # only the cases below
bwd = base.bwd

for mask in ((T, F_, F_), (T, T, T)):
    static = ("w",) if not mask[1] else ()
    # plain 3x3, dilation 2, "same" padding; dilation 3 with a padding below the dilated half
    bwd("dil_plain_d2", r(2, 3, 9, 8), r(4, 3, 3, 3), mask, padding=(2, 2), dilation=(2, 2),
        static=static)
    bwd("dil_plain_d3", r(2, 3, 11, 10), r(5, 3, 3, 3), mask, padding=(1, 2), dilation=(3, 3),
        static=static)
    # mixed dilation per dim, padding above the dilated kernel's half in H
    bwd("dil_plain_mixed", r(1, 2, 8, 9), r(3, 2, 3, 2), mask, padding=(3, 1), dilation=(2, 3),
        static=static)
    # LRASPP's depthwise 5x5 dilation 2 (9x9 dilated kernel), padding 4
    bwd("dil_depthwise5_d2", r(2, 4, 10, 9), r(4, 1, 5, 5), mask, padding=(4, 4),
        dilation=(2, 2), groups=4, static=static)
    bwd("dil_depthwise3_d2", r(2, 4, 7, 8), r(4, 1, 3, 3), mask, padding=(2, 2),
        dilation=(2, 2), groups=4, static=static)
    bwd("dil_depthwise3_d3_mult", r(1, 3, 9, 9), r(6, 1, 3, 3), mask, padding=(3, 3),
        dilation=(3, 3), groups=3, static=static)
    bwd("dil_grouped_d2", r(2, 4, 8, 8), r(6, 2, 3, 3), mask, padding=(2, 1), dilation=(2, 2),
        groups=2, static=static)
    bwd("dil_1x1_d2", r(2, 4, 6, 5), r(5, 4, 1, 1), mask, dilation=(2, 2), static=static)
bwd("dil_depthwise5_d2_gi_gb", r(2, 4, 10, 9), r(4, 1, 5, 5), (T, F_, T), padding=(4, 4),
    dilation=(2, 2), groups=4)

# stride 2 with dilation: grad_input alone (a frozen weight); grad_weight would need a Conv2d
# with stride and dilation both > 1, declined
bwd("dil_plain_s2_d2", r(2, 3, 9, 10), r(4, 3, 3, 3), (T, F_, F_), stride=(2, 2),
    padding=(2, 2), dilation=(2, 2))
bwd("dil_plain_s2_d3", r(2, 3, 12, 11), r(4, 3, 3, 3), (T, F_, T), stride=(2, 2),
    padding=(3, 3), dilation=(3, 3))
# depthwise 3x3 dilation 2 at stride 2: a 5x5 dilated kernel, so the zero-insertion form
bwd("dil_depthwise3_s2_d2", r(2, 4, 9, 8), r(4, 1, 3, 3), (T, F_, F_), stride=(2, 2),
    padding=(2, 2), dilation=(2, 2), groups=4)
bwd("dil_depthwise5_s2_d2_runtime", r(2, 3, 12, 11), r(3, 1, 5, 5), (T, F_, F_),
    stride=(2, 2), padding=(4, 4), dilation=(2, 2), groups=3, static=())
bwd("dil_plain_s2_d2_gw", r(2, 3, 9, 10), r(4, 3, 3, 3), (T, T, F_), stride=(2, 2),
    padding=(2, 2), dilation=(2, 2), static=(), reason=GW_BOTH.format(2, 2, 2, 2))
# grouped stride 2: output_padding 1 > padding 0 in W, which QNN HTP computes wrong
bwd("dil_grouped_s2_op_above_pad", r(2, 4, 9, 10), r(4, 2, 3, 3), (T, F_, F_),
    stride=(2, 2), padding=(2, 0), dilation=(2, 2), groups=2,
    reason=base.tconv_op_above_pad(1, 0, 2, 2))

# the forward of a depthwise conv with stride 2 and dilation 2: QNN HTP refuses that
# DepthWiseConv2d (measured), so it stays on the CPU
for k in (3, 5):
    base.fwd(f"dil_depthwise{k}_s2_d2_forward", r(2, 4, 11, 10), r(4, 1, k, k), stride=2,
             padding=k - 1, dilation=2, groups=4,
             reason="depthwise with stride [2, 2] and dilation [2, 2]: QNN HTP refuses such a "
             "DepthWiseConv2d (measured)")


def main():
    run = optest.Runner("npu_conv_dilated")
    for case in base.CASES:
        run.record(case.name, lambda c=case: base.run_function_case(run.exe, run.workdir, c))
    run.finish()


if __name__ == "__main__":
    main()
