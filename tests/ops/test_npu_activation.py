"""NPU builders for hardswish, hardsigmoid, their backward ops and silu_backward
(src/backends/htp/compile/builders/activation.c: ElementWiseNeuron; elementwise.c: comparisons
and ElementWiseSelect) against PyTorch, through the CLI, on every HTP generation.

Placement and numbers are checked as in test_npu_elementwise.py (whose NpuSuite harness this
file uses): `edgegrad compile --report` and `edgegrad run`, both at --precision fp32, for SM8450,
SM8650 and SM8850 (each op of `npu` on the NPU) and SM8350 (V68: every float node on the CPU
with the partitioner's reason).

hardswish_backward at exactly x = +-3 differs between PyTorch versions (1.x gives -0.5 * grad
at -3 and 1.5 * grad or grad at 3, by vector position); edgegrad follows 2.x (0 and grad), so
the case holding exactly +-3 runs under PyTorch 2.x and says it is skipped under 1.x; the case
one float32 step either side of the kinks runs under both. NaN cannot be a traced input (the
exporter compares inputs NaN != NaN), so NaN cases make it inside as 0 / 0.

    PYTHONPATH=python /usr/bin/python3 tests/ops/test_npu_activation.py \
        --edgegrad build/edgegrad --workdir /tmp/npu-activation
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from test_npu_elementwise import NpuSuite, vjp  # noqa: E402
import optest  # noqa: E402

aten = torch.ops.aten
F = torch.nn.functional
TORCH_2 = int(torch.__version__.split(".")[0]) >= 2


def r(*shape, scale=1.0):
    return torch.randn(*shape) * scale


def kinks():
    """The kinks at +-3 exactly, infinities, signed zeros and far values."""
    inf = float("inf")
    return torch.tensor([[-inf, -100.0, -3.5, -3.0, -2.5, -1.5, -0.0, 0.0],
                         [1e-4, 1.5, 2.5, 3.0, 3.5, 6.0, 100.0, inf]])


def near_kinks():
    """One float32 step either side of +-3 (the same answer under PyTorch 1.x and 2.x)."""
    below, above = torch.nextafter, torch.nextafter
    t = torch.tensor
    m3, p3 = t(-3.0), t(3.0)
    return torch.stack([below(m3, t(-4.0)), above(m3, t(0.0)), below(p3, t(0.0)),
                        above(p3, t(4.0)), t(-2.9990234375), t(2.9990234375), t(0.5),
                        t(-0.5)]).reshape(2, 4)


def silu_backward():
    """aten.silu_backward never reaches a make_fx trace (its CompositeImplicitAutograd kernel
    decomposes it; a model's joint graph keeps it): sigmoid_backward, of the same signature, is
    traced and renamed, and PyTorch's real silu_backward is the reference."""
    return optest.renamed(lambda g, x: aten.silu_backward(g, x),
                          lambda g, x: aten.sigmoid_backward(g, x),
                          "aten.sigmoid_backward.default", "aten.silu_backward.default")


def with_grad(act, x, g):
    """act(x) and its input gradient for grad g: both outputs, so that the forward node stays
    in the traced graph (the backward reads x, not act's output)."""
    y = act(x)
    return y, vjp([y], [x], [g])[0]


def build_suite():
    torch.manual_seed(0)
    s = NpuSuite("npu_activation")
    x4, g4 = r(2, 3, 4, 5, scale=4), r(2, 3, 4, 5)

    # forward: ElementWiseNeuron
    s.case("hardswish", lambda x: F.hardswish(x), [x4], npu=["hardswish"])
    s.case("hardswish_rank2", lambda x: F.hardswish(x), [r(3, 9, scale=5)], npu=["hardswish"])
    s.case("hardswish_kinks", lambda x: F.hardswish(x), [kinks()], npu=["hardswish"])
    s.case("hardswish_nan", lambda a, b: F.hardswish(a / b),
           [torch.tensor([0.0, 1.0, -4.0]), torch.tensor([0.0, 1.0, 1.0])],
           npu=["hardswish", "div.Tensor"])
    s.case("hardsigmoid", lambda x: F.hardsigmoid(x), [x4], npu=["hardsigmoid"])
    s.case("hardsigmoid_rank3", lambda x: F.hardsigmoid(x), [r(2, 7, 3, scale=5)],
           npu=["hardsigmoid"])
    s.case("hardsigmoid_kinks", lambda x: F.hardsigmoid(x), [kinks()], npu=["hardsigmoid"])
    s.case("hardsigmoid_nan", lambda a, b: F.hardsigmoid(a / b),
           [torch.tensor([0.0, 1.0, -4.0]), torch.tensor([0.0, 1.0, 1.0])],
           npu=["hardsigmoid", "div.Tensor"])

    # backward: comparisons with the kinks and ElementWiseSelect
    s.case("hardswish_backward", lambda g, x: aten.hardswish_backward(g, x), [g4, x4],
           npu=["hardswish_backward"])
    if TORCH_2:
        s.case("hardswish_backward_kinks", lambda g, x: aten.hardswish_backward(g, x),
               [r(2, 8), kinks()], npu=["hardswish_backward"])
    else:
        print("skip npu_activation/hardswish_backward_kinks: PyTorch 1.x gives -0.5 * grad at "
              "x = -3 and 1.5 * grad or grad at x = 3 (by vector position); edgegrad follows 2.x")
    s.case("hardswish_backward_near_kinks", lambda g, x: aten.hardswish_backward(g, x),
           [r(2, 4), near_kinks()], npu=["hardswish_backward"])
    s.case("hardswish_backward_bcast_x", lambda g, x: aten.hardswish_backward(g, x),
           [g4, r(3, 1, 1, scale=4)], npu=["hardswish_backward"])
    s.case("hardswish_backward_bcast_grad", lambda g, x: aten.hardswish_backward(g, x),
           [r(5), x4], npu=["hardswish_backward"])
    s.case("hardsigmoid_backward", lambda g, x: aten.hardsigmoid_backward(g, x), [g4, x4],
           npu=["hardsigmoid_backward"])
    s.case("hardsigmoid_backward_kinks", lambda g, x: aten.hardsigmoid_backward(g, x),
           [r(2, 8), kinks()], npu=["hardsigmoid_backward"])
    s.case("hardsigmoid_backward_near_kinks", lambda g, x: aten.hardsigmoid_backward(g, x),
           [r(2, 4), near_kinks()], npu=["hardsigmoid_backward"])
    s.case("hardsigmoid_backward_bcast", lambda g, x: aten.hardsigmoid_backward(g, x),
           [r(3, 1, 1), x4], npu=["hardsigmoid_backward"])
    s.case("hardsigmoid_backward_nan",
           lambda g, a, b: aten.hardsigmoid_backward(g, a / b),
           [r(4), torch.tensor([0.0, 1.0, -1.0, 0.5]), torch.tensor([0.0, 0.0, 1.0, 1.0])],
           npu=["hardsigmoid_backward", "div.Tensor"])

    s.case("silu_backward", silu_backward(), [g4, x4 * 3], npu=["silu_backward"])
    s.case("silu_backward_extremes", silu_backward(), [r(2, 8), kinks()],
           npu=["silu_backward"])
    s.case("silu_backward_bcast_x", silu_backward(), [g4, r(3, 1, 1, scale=4)],
           npu=["silu_backward"])

    # autograd chains and a squeeze-excitation gate: x * hardsigmoid(mean(hardswish(x)))
    s.case("hardswish_chain", lambda x, g: with_grad(F.hardswish, x, g),
           [x4.clone().requires_grad_(True), g4], npu=["hardswish", "hardswish_backward"])
    s.case("hardsigmoid_chain", lambda x, g: with_grad(F.hardsigmoid, x, g),
           [x4.clone().requires_grad_(True), g4], npu=["hardsigmoid", "hardsigmoid_backward"])
    s.case("se_gate", lambda x: F.hardswish(x) * F.hardsigmoid(F.hardswish(x).mean((2, 3),
                                                                           keepdim=True)),
           [x4], npu=["hardswish", "hardsigmoid", "mul.Tensor"])

    # declines
    s.case("hardswish_empty", lambda x: F.hardswish(x), [r(0, 3)],
           cpu={"hardswish": "empty tensor: QNN tensors need every dimension >= 1"},
           socs=("SM8650",))
    s.case("hardsigmoid_backward_empty", lambda g, x: aten.hardsigmoid_backward(g, x),
           [r(0, 3), r(0, 3)], cpu={"hardsigmoid_backward": "empty result"},
           socs=("SM8650",))
    return s


if __name__ == "__main__":
    build_suite().main()
