"""NPU builders for a segmentation net's loss and its pooling backward, against PyTorch,
through the CLI: nll_loss2d_forward / nll_loss2d_backward (src/backends/htp/compile/builders/loss.c:
the 2-D lowering over N*H*W rows of the NHWC scores), avg_pool2d_backward and
_adaptive_avg_pool2d_backward (builders/pool.c: two MatMuls with STATIC spreading matrices,
every window and divisor rule of ATen's). Placement is asserted from the
compile report on SM8450/SM8650/SM8850 (NPU) and SM8350 (every node on the CPU with the
float-arch reason). Harness: NpuSuite of test_npu_matmul_shape.py (--precision fp32).

Declined forms stay on the CPU with their reason: nll_loss2d with reduction none or over more
than 65504 pixels (total_weight counts them, in fp16 on the HTP), and an unbatched
avg_pool2d_backward (no NHWC form).
Every case traces the same ops under PyTorch 1.13 and 2.x.

    /usr/bin/python3 tests/ops/test_npu_seg_loss_pool.py --edgegrad build/edgegrad --workdir work
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optest import chain, vjp  # noqa: E402
from test_npu_matmul_shape import NpuSuite  # noqa: E402

aten = torch.ops.aten
MEAN, SUM, NONE = 1, 2, 0


def nll2d_forward(reduction, ignore_index=-100, weighted=False):
    """(x, t[, w]) -> nll_loss2d_forward(log_softmax(x, 1), t, w, reduction, ignore_index)."""
    def fn(x, t, *w):
        return aten.nll_loss2d_forward(F.log_softmax(x, 1), t, w[0] if weighted else None,
                                       reduction, ignore_index)
    return fn


def nll2d_forward_backward(reduction, ignore_index=-100, weighted=False):
    """(x, t, gy[, w]) -> the forward's loss and nll_loss2d_backward(gy, log_softmax(x, 1), t,
    w, reduction, ignore_index, total_weight)."""
    def fn(x, t, gy, *w):
        weight = w[0] if weighted else None
        y = F.log_softmax(x, 1)
        out, tw = aten.nll_loss2d_forward(y, t, weight, reduction, ignore_index)
        return out, aten.nll_loss2d_backward(gy, y, t, weight, reduction, ignore_index, tw)
    return fn


def pixel_cross_entropy_grad(x, t, gy):
    """A segmentation net's loss end: cross_entropy over [N, C, H, W] and its gradient by
    autograd (log_softmax, nll_loss2d_forward, nll_loss2d_backward,
    _log_softmax_backward_data)."""
    loss = F.cross_entropy(x, t, ignore_index=255)
    return (loss,) + tuple(vjp([loss], [x], [gy]))


def global_pool_grad(x, g):
    """adaptive_avg_pool2d(x, 1) and its backward by autograd."""
    return tuple(vjp([F.adaptive_avg_pool2d(x, 1)], [x], [g]))


def adaptive_pool_grad(size):
    """adaptive_avg_pool2d(x, size) and its backward by autograd."""
    def fn(x, g):
        return tuple(vjp([F.adaptive_avg_pool2d(x, size)], [x], [g]))
    return fn


def avg_pool_grad(*args, **kwargs):
    """avg_pool2d(x, *args, **kwargs) and its backward by autograd."""
    def fn(x, g):
        return tuple(vjp([F.avg_pool2d(x, *args, **kwargs)], [x], [g]))
    return fn


def build():
    torch.manual_seed(5)
    r = torch.randn
    s = NpuSuite("npu_seg_loss_pool")
    n, c, h, w = 2, 5, 3, 4  # distinct sizes: a wrong axis cannot pass
    t = torch.randint(0, c, (n, h, w))
    t_ignored = t.clone()
    t_ignored[0, 1, :] = -100
    t_ignored[1, 2, 3] = -100
    t_class_ignored = t.clone()
    t_class_ignored[0, 0, :2] = 2
    t_255 = t.clone()
    t_255[1, 0, :] = 255  # torchvision's segmentation void label
    wt = torch.rand(c) + 0.5

    s.case("nll2d_forward_mean", nll2d_forward(MEAN), [r(n, c, h, w), t])
    s.case("nll2d_forward_sum", nll2d_forward(SUM), [r(n, c, h, w), t])
    s.case("nll2d_forward_mean_ignored", nll2d_forward(MEAN), [r(n, c, h, w), t_ignored])
    s.case("nll2d_forward_mean_class_ignored", nll2d_forward(MEAN, ignore_index=2),
           [r(n, c, h, w), t_class_ignored])
    s.case("nll2d_forward_weight_static", nll2d_forward(MEAN, weighted=True),
           [r(n, c, h, w), t_ignored, wt], static=("arg2",))
    s.case("nll2d_forward_weight_input", nll2d_forward(SUM, weighted=True),
           [r(n, c, h, w), t, wt])
    s.case("nll2d_backward_mean", nll2d_forward_backward(MEAN), [r(n, c, h, w), t, r(())])
    s.case("nll2d_backward_sum", nll2d_forward_backward(SUM), [r(n, c, h, w), t_ignored, r(())])
    s.case("nll2d_backward_weight_class_ignored",
           nll2d_forward_backward(MEAN, ignore_index=2, weighted=True),
           [r(n, c, h, w), t_class_ignored, r(()), wt], static=("arg3",))
    s.case("nll2d_backward_constant_seed", nll2d_forward_backward(MEAN),
           [r(n, c, h, w), t_ignored, torch.ones(())], static=("arg2",))
    s.case("pixel_cross_entropy_grad", chain(pixel_cross_entropy_grad),
           [r(n, c, h, w).requires_grad_(), t_255, torch.ones(())])

    # the nets' global average: traced as mean (ATen's adaptive_avg_pool2d takes that path for
    # a 1x1 output), its backward an expand and a divide
    s.case("global_pool_grad", chain(global_pool_grad),
           [r(n, 6, h, w).requires_grad_(), r(n, 6, 1, 1)])
    # _adaptive_avg_pool2d_backward: even, uneven (overlapping) and 1x1 windows
    s.case("adaptive_pool_backward_even", chain(adaptive_pool_grad((2, 3))),
           [r(n, 6, 4, 6).requires_grad_(), r(n, 6, 2, 3)])
    s.case("adaptive_pool_backward_uneven", chain(adaptive_pool_grad((3, 4))),
           [r(n, 6, 5, 7).requires_grad_(), r(n, 6, 3, 4)])
    s.case("adaptive_pool_backward_1x1",
           lambda g, x: torch.relu(aten._adaptive_avg_pool2d_backward(g, x)),
           [r(n, 6, 1, 1), r(n, 6, 5, 7)])
    # avg_pool2d_backward: every divisor rule of ATen's
    s.case("avg_pool_backward", chain(avg_pool_grad(2)),
           [r(n, 6, 4, 6).requires_grad_(), r(n, 6, 2, 3)])
    s.case("avg_pool_backward_overlap_pad", chain(avg_pool_grad(3, 2, 1)),
           [r(n, 6, 7, 6).requires_grad_(), r(n, 6, 4, 3)])
    s.case("avg_pool_backward_pad_not_counted",
           chain(avg_pool_grad((3, 2), (2, 1), (1, 1), count_include_pad=False)),
           [r(n, 6, 7, 6).requires_grad_(), r(n, 6, 4, 7)])
    s.case("avg_pool_backward_ceil", chain(avg_pool_grad(2, ceil_mode=True)),
           [r(n, 6, 5, 7).requires_grad_(), r(n, 6, 3, 4)])
    s.case("avg_pool_backward_ceil_pad_counted",
           chain(avg_pool_grad(3, 2, 1, ceil_mode=True)),
           [r(n, 6, 6, 6).requires_grad_(), r(n, 6, 4, 4)])
    s.case("avg_pool_backward_divisor_override",
           chain(avg_pool_grad(3, 2, 1, divisor_override=5)),
           [r(n, 6, 7, 6).requires_grad_(), r(n, 6, 4, 3)])

    # declined forms stay on the CPU with their reason
    s.case("nll2d_forward_none", nll2d_forward(NONE), [r(n, c, h, w), t],
           cpu={"aten.nll_loss2d_forward.default": "reduction 0 (none)"})
    # total_weight counts the pixels, in fp16 on the HTP: above 65504 of them, on the CPU
    s.case("nll2d_forward_many_pixels", nll2d_forward(MEAN),
           [r(1, 2, 256, 257), torch.randint(0, 2, (1, 256, 257))],
           cpu={"aten.nll_loss2d_forward.default": "65792 pixels: total_weight"})
    s.case("avg_pool_backward_unbatched",
           lambda g, x: aten.avg_pool2d_backward(g, x, [2, 2], [2, 2], [0, 0], False, True,
                                                 None), [r(6, 2, 3), r(6, 4, 6)],
           cpu={"aten.avg_pool2d_backward.default": "unbatched input [6, 2, 3]"})
    return s


if __name__ == "__main__":
    build().main()
