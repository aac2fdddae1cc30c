"""NPU builders for max pooling with indices and its backward (src/backends/htp/compile/builders/
pool.c: the indices from the pooled maxima, one Select per kernel tap; the backward's per-tap
ElementWiseEqual + ElementWiseSelect, placed by phases or by 0/1 MatMuls) against PyTorch, through
the CLI.

Placement and numbers are checked as in test_npu_elementwise.py (whose NpuSuite harness this
file uses): `edgegrad compile --report` and `edgegrad run` at --precision fp32, for SM8650
(each op of `npu` on the NPU) and SM8350 (V68: every float node on the CPU with the
partitioner's reason). The indices are compared exactly (int64 outputs). Inputs with ties
(small integers, constant regions) check that the index is ATen's FIRST maximum in row-major
tap order and that the backward gives each window's gradient to that element only.

Dilation: PoolMax2d has no dilation, so the forward stays on the CPU (with its reason) while
the backward, reading the CPU's indices narrowed to int32, runs on the NPU.

    PYTHONPATH=python /usr/bin/python3 tests/ops/test_npu_maxpool.py \
        --edgegrad build/edgegrad --workdir /tmp/npu-maxpool
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from test_npu_elementwise import NpuSuite, vjp  # noqa: E402

F = torch.nn.functional
SOCS = ("SM8650", "SM8350")
FWD = "max_pool2d_with_indices"
BWD = "max_pool2d_with_indices_backward"


def r(*shape, scale=1.0):
    return torch.randn(*shape) * scale


def ties(*shape, lo=-2, hi=3):
    """Small integers: most windows hold their maximum more than once."""
    return torch.randint(lo, hi, shape).float()


def plateau(*shape):
    """A constant region (every tap of a window ties) beside random values."""
    x = torch.randn(*shape)
    x[..., : shape[-2] // 2, :] = 1.5
    return x


def pool(k, s, p, ceil=False, d=1):
    """max_pool2d's values and indices (ints first: both outputs are compared)."""
    return lambda x: F.max_pool2d(x, k, s, p, dilation=d, ceil_mode=ceil, return_indices=True)


def pool_grad(k, s, p, ceil=False, d=1):
    """Values, indices and the input gradient for grad g (through autograd: the traced graph
    has max_pool2d_with_indices and its backward reading the indices)."""
    def fn(x, g):
        y, i = F.max_pool2d(x, k, s, p, dilation=d, ceil_mode=ceil, return_indices=True)
        return y, i, vjp([y], [x], [g])[0]
    return fn


def grad_case(s, name, x, k, st, p, ceil=False, d=1, npu=(FWD, BWD), cpu=None):
    y = F.max_pool2d(x, k, st, p, dilation=d, ceil_mode=ceil)
    s.case(name, pool_grad(k, st, p, ceil, d), [x.clone().requires_grad_(True), r(*y.shape)],
           npu=npu, cpu=cpu, socs=SOCS)


def build_suite():
    torch.manual_seed(0)
    s = NpuSuite("npu_maxpool")

    # forward with the indices read
    s.case("resnet_stem", pool(3, 2, 1), [r(2, 8, 16, 16)], npu=[FWD], socs=SOCS)
    s.case("resnet_stem_ties", pool(3, 2, 1), [ties(2, 4, 15, 15)], npu=[FWD], socs=SOCS)
    s.case("k2s2", pool(2, 2, 0), [ties(1, 3, 8, 8)], npu=[FWD], socs=SOCS)
    s.case("k3s1p1_plateau", pool(3, 1, 1), [plateau(1, 2, 9, 9)], npu=[FWD], socs=SOCS)
    s.case("ceil_mode", pool(2, 2, 0, ceil=True), [ties(1, 4, 7, 7)], npu=[FWD], socs=SOCS)
    s.case("ceil_mode_pad", pool(3, 2, 1, ceil=True), [ties(1, 4, 8, 8)], npu=[FWD],
           socs=SOCS)
    s.case("k1", pool(1, 2, 0), [r(1, 3, 5, 5)], npu=[FWD], socs=SOCS)
    s.case("rect", pool((3, 2), (2, 1), (1, 0)), [ties(1, 2, 9, 6)], npu=[FWD], socs=SOCS)
    s.case("dilation2", pool(3, 2, 1, d=2), [r(1, 2, 11, 11)],
           cpu={FWD: "PoolMax2d has no dilation"}, socs=("SM8650",))

    # backward through autograd
    grad_case(s, "resnet_stem_grad", r(2, 8, 16, 16), 3, 2, 1)
    grad_case(s, "resnet_stem_grad_ties", ties(2, 4, 15, 15), 3, 2, 1)
    grad_case(s, "k2s2_grad", ties(1, 3, 8, 8), 2, 2, 0)
    grad_case(s, "k3s1p1_grad_plateau", plateau(1, 2, 9, 9), 3, 1, 1)
    grad_case(s, "ceil_mode_grad", ties(1, 4, 7, 7), 2, 2, 0, ceil=True)
    grad_case(s, "ceil_mode_pad_grad", ties(1, 4, 8, 8), 3, 2, 1, ceil=True)
    grad_case(s, "rect_grad", ties(1, 2, 9, 6), (3, 2), (2, 1), (1, 0))
    grad_case(s, "k2s2_odd_grad", ties(1, 3, 7, 9), 2, 2, 0)  # phases padded, then cropped
    grad_case(s, "k1s2_grad", r(1, 3, 5, 5), 1, 2, 0)  # a phase with no tap: the MatMul form
    grad_case(s, "dilation2_grad", ties(1, 2, 11, 11), 3, 2, 1, d=2, npu=(BWD,),
              cpu={FWD: "PoolMax2d has no dilation"})

    # declined: indices no forward computed (the CPU kernel checks each index; the NPU could
    # not), an unbatched input
    x = r(1, 2, 7, 7)
    idx = F.max_pool2d(x, 3, 2, 1, return_indices=True)[1]
    s.case("backward_given_indices",
           lambda x, g, i: torch.ops.aten.max_pool2d_with_indices_backward(
               g, x, [3, 3], [2, 2], [1, 1], [1, 1], False, i),
           [x, r(1, 2, 4, 4), idx],
           cpu={BWD: "indices not read from a max_pool2d_with_indices"}, socs=("SM8650",))
    s.case("unbatched", pool(3, 2, 1), [r(2, 7, 7)], cpu={FWD: "unbatched input"},
           socs=("SM8650",))
    return s


if __name__ == "__main__":
    build_suite().main()
