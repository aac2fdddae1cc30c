"""Grouped and depthwise aten.convolution_backward against PyTorch, for every group count
(src/ops/conv.c, src/kernels/convolution_backward_nchw_f32.c).

The sweep: channel/group configurations (groups 1, 2, 3, C/2, C; channel multipliers 1 to 5,
across the kernel's direct depthwise weight-gradient limit of 4; fewer output than input
channels per group) times geometries (kernel sizes, strides, paddings and dilations, square and
not), forward and transposed. One case is one configuration: its graph holds the forward
convolution and a convolution_backward for each of the 8 output_masks, each with its own
grad_output, so every mask combination is checked against ATen's eager result. Then training
steps through torch.autograd.grad (the chains make_fx traces for grouped convs), and the NPU
path: the same backward graphs compiled for SM8650, where every convolution_backward of these
(groups 1 to C, with and without grad_weight) runs on the NPU (src/backends/htp/compile/builders/
conv.c: a grouped TransposeConv2d for grad_input, a grouped Conv2d for grad_weight), and every
output must still match PyTorch.

    PYTHONPATH=python /usr/bin/python3 tests/ops/test_conv_groups.py \\
        --edgegrad build/edgegrad --workdir /tmp/conv-groups
"""
import itertools
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import optest  # noqa: E402
from test_npu_elementwise import check_model  # noqa: E402

aten = torch.ops.aten
torch.manual_seed(0)
MASKS = [list(m) for m in itertools.product([False, True], repeat=3)]

# (c_in, c_out, groups): 1, 2, 3, C/2 and C groups; multipliers c_out/c_in per group > 1 and
# < 1; depthwise with multipliers 1, 2, 4 (direct weight gradient) and 5 (GEMM)
CONFIGS = [(4, 6, 1), (4, 6, 2), (6, 9, 3), (6, 3, 3), (8, 8, 4), (8, 4, 4), (8, 8, 8),
           (4, 8, 4), (4, 16, 4), (3, 15, 3), (6, 12, 2), (2, 2, 2)]
# (kernel, stride, padding, dilation, input hw)
GEOMS = [((3, 3), (1, 1), (1, 1), (1, 1), (7, 6)),
         ((3, 3), (2, 2), (1, 1), (1, 1), (8, 9)),
         ((3, 2), (2, 1), (0, 1), (2, 1), (9, 7)),
         ((1, 1), (1, 1), (0, 0), (1, 1), (5, 5)),
         ((5, 5), (3, 2), (2, 1), (1, 2), (11, 10)),
         ((1, 1), (2, 2), (0, 0), (1, 1), (7, 8)),
         ((3, 3), (1, 1), (1, 1), (1, 1), (24, 20))]  # enough pixels for one image per GEMM


def geom_tag(k, s, p, d, hw):
    return "k{}s{}p{}d{}".format(*("x".join(map(str, v)) for v in (k, s, p, d)))


def all_masks(stride, padding, dilation, groups, transposed, output_padding=(0, 0)):
    """fn(x, w, b, gy_0, .., gy_7): the forward conv, then one backward per mask."""
    def fn(x, w, b, *gys):
        y = aten.convolution(x, w, b, stride, padding, dilation, transposed, output_padding,
                             groups)
        outs = [y]
        for mask, gy in zip(MASKS, gys):
            grads = aten.convolution_backward(gy, x, w, [w.shape[1 if transposed else 0] *
                                                         (groups if transposed else 1)],
                                              stride, padding, dilation, transposed,
                                              output_padding, groups, mask)
            outs += [g for g, m in zip(grads, mask) if m and g is not None]
        return tuple(outs)
    return fn


def conv_args(cin, cout, groups, k, stride, padding, dilation, hw, transposed=False,
              output_padding=(0, 0)):
    x = torch.randn(2, cin, *hw)
    if transposed:
        w = torch.randn(cin, cout // groups, *k) * 0.3
    else:
        w = torch.randn(cout, cin // groups, *k) * 0.3
    b = torch.randn(cout)
    y = aten.convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups)
    return [x, w, b] + [torch.randn_like(y) for _ in MASKS]


suite = optest.Suite("conv_groups")
for (cin, cout, groups), (k, s, p, d, hw) in itertools.product(CONFIGS, GEOMS):
    name = f"g{groups}_{cin}to{cout}_{geom_tag(k, s, p, d, hw)}"
    suite.case(name, all_masks(s, p, d, groups, False),
               conv_args(cin, cout, groups, k, s, p, d, hw))

# transposed convolutions, grouped: weight [Cin, Cout/g, kh, kw]; output_padding < stride
for (cin, cout, groups), (k, s, p, d, op) in itertools.product(
        [(4, 6, 2), (6, 6, 6), (4, 8, 4), (6, 3, 3), (4, 4, 1)],
        [((3, 3), (2, 2), (1, 1), (1, 1), (1, 1)), ((3, 2), (2, 1), (0, 1), (1, 2), (1, 0)),
         ((2, 2), (1, 1), (0, 0), (1, 1), (0, 0))]):
    name = f"transposed_g{groups}_{cin}to{cout}_{geom_tag(k, s, p, d, None)}_op{op[0]}{op[1]}"
    suite.case(name, all_masks(s, p, d, groups, True, op),
               conv_args(cin, cout, groups, k, s, p, d, (5, 6), True, op))


# ---- training steps: what make_fx traces for grouped convs in a model ----

def with_grad(step):
    def fn(*args):
        with torch.enable_grad():
            return step(*args)
    return fn


def grouped_step(groups, stride, padding, dilation):
    def step(x, target, w1, b1, w2):
        y = F.conv2d(x, w1, b1, stride, padding, dilation, groups)
        y = F.conv2d(F.relu(y), w2, None, 1, 1, 1, groups)
        loss = F.mse_loss(y, target)
        return (loss, *torch.autograd.grad(loss, [x, w1, b1, w2]))
    return with_grad(step)


def step_args(c, groups, stride, padding, dilation, mult=1):
    x = torch.randn(2, c, 9, 8).requires_grad_()
    w1 = (torch.randn(c * mult, c // groups, 3, 3) * 0.3).requires_grad_()
    b1 = torch.randn(c * mult).requires_grad_()
    w2 = (torch.randn(c * mult, c * mult // groups, 3, 3) * 0.3).requires_grad_()
    with torch.no_grad():
        y = F.conv2d(F.conv2d(x, w1, b1, stride, padding, dilation, groups), w2, None, 1, 1, 1,
                     groups)
    return [x, torch.randn_like(y), w1, b1, w2]


for c, groups, mult, s, p, d in [(8, 1, 1, 1, 1, 1), (8, 2, 1, 2, 1, 1), (9, 3, 2, 1, 2, 2),
                                 (8, 4, 1, 2, 0, 1), (8, 8, 1, 1, 1, 1), (6, 6, 2, 2, 1, 1),
                                 (4, 4, 3, 1, 2, 2)]:
    suite.case(f"step_g{groups}_c{c}_m{mult}_s{s}p{p}d{d}", grouped_step(groups, s, p, d),
               step_args(c, groups, s, p, d, mult))


# ---- NPU: SM8650 ----

CONV_BWD = "aten.convolution_backward.default"


def npu_case(name, cin, cout, groups, mask, k=(3, 3), s=(1, 1), p=(1, 1)):
    """x -> gradients of one convolution_backward with a frozen (static) weight, compiled for
    SM8650: on the NPU for every groups value and mask; every result as PyTorch's."""
    def fn(gy, x, w):
        grads = aten.convolution_backward(gy, x, w, [cout], s, p, [1, 1], False, [0, 0],
                                          groups, mask)
        return tuple(g for g, m in zip(grads, mask) if m)

    x = torch.randn(2, cin, 7, 6)
    w = torch.randn(cout, cin // groups, *k) * 0.3
    gy = torch.randn_like(aten.convolution(x, w, None, s, p, [1, 1], False, [0, 0], groups))
    npu, cpu = {CONV_BWD}, {}

    def run(exe, workdir):
        os.makedirs(workdir, exist_ok=True)
        stem = os.path.join(workdir, "model")
        optest.export_function(fn, [gy, x, w], stem, arg_names=["gy", "x", "w"],
                               static_args=("w",))
        refs = {f"out{i}": r.numpy() for i, r in enumerate(fn(gy, x, w))}
        return check_model(exe, stem + ".json", {"gy": gy.numpy(), "x": x.numpy()}, refs,
                           workdir, ("SM8650",), npu, cpu)
    return name, run


NPU_CASES = [npu_case(f"npu_g{g}_{ci}to{co}_{''.join('T' if m else 'F' for m in mask)}",
                      ci, co, g, mask)
             for (ci, co, g) in [(4, 6, 1), (4, 6, 2), (6, 9, 3), (8, 8, 4), (8, 8, 8),
                                 (4, 8, 4)]
             for mask in ([True, False, False], [True, False, True], [True, True, True])]
# stride 2 on 7x6: grad_input needs output_padding 1 in W, which a grouped TransposeConv2d
# gets as pad_amount [1, 0] (builders/conv.c)
NPU_CASES += [npu_case(f"npu_g{g}_{ci}to{co}_s2_{''.join('T' if m else 'F' for m in mask)}",
                       ci, co, g, mask, s=(2, 2))
              for (ci, co, g) in [(4, 6, 2), (8, 8, 8), (4, 8, 4)]
              for mask in ([True, False, False], [True, True, True])]


def main():
    run = optest.Runner("conv_groups")
    for name, fn, args, static, expect_error in suite.cases:
        run.record(name, lambda c=(name, fn, args, static, expect_error):
                   suite._run_case(run.exe, run.workdir, *c))
    for name, case in NPU_CASES:
        run.record(name, lambda case=case, name=name:
                   case(run.exe, os.path.join(run.workdir, name)))
    run.finish()


if __name__ == "__main__":
    main()
