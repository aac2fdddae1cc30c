"""NPU builders for reductions and log-softmax (src/backends/htp/compile/builders/reduce.c) against
PyTorch, through the CLI, on SM8450/SM8650/SM8850 (NPU placement asserted from the report) and
SM8350 (every node on the CPU with the float-arch reason). Harness: NpuSuite of
test_npu_matmul_shape.py.

    /usr/bin/python3 tests/ops/test_npu_reduce.py --edgegrad build/edgegrad --workdir /tmp/w
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_npu_matmul_shape import NpuSuite  # noqa: E402


def reduce_fn(op, dims, keep, relu=False):
    """x -> op(x [relu'd], dims, keep) as a closure (the tracer takes no default arguments)."""
    def fn(x):
        return op(torch.relu(x) if relu else x, dims, keep)
    return fn


def build():
    torch.manual_seed(1)
    r = torch.randn
    s = NpuSuite("npu_reduce")
    x4 = lambda: r(2, 3, 4, 5)  # noqa: E731  distinct sizes: a wrong axis cannot pass

    # sum / mean over dims of a rank-4 (NHWC inside) tensor, keepdim both ways
    for dims in ([0], [0, 2, 3], [2, 3], [1], [2], [3], [-1], [1, 3], [0, 1], [0, 1, 2, 3]):
        tag = "_".join(str(d).replace("-", "m") for d in dims)
        for keep in (True, False):
            k = "keep" if keep else "drop"
            s.case(f"sum4_{tag}_{k}", reduce_fn(torch.sum, dims, keep, relu=True), [x4()],
                   partitions=1)
            s.case(f"mean4_{tag}_{k}", reduce_fn(torch.mean, dims, keep), [x4()])
    # H = W = 1: the reorder after a drop moves no byte (a Reshape)
    s.case("sum4_0_drop_unit_hw", lambda x: torch.sum(x, [0]), [r(2, 3, 1, 1)])
    s.case("sum4_2_drop_unit_c", lambda x: torch.sum(x, [2]), [r(2, 1, 4, 5)])

    # other ranks
    s.case("sum2_0_keep", lambda x: torch.sum(x, [0], True), [r(6, 3)])
    s.case("sum2_0_drop", lambda x: torch.sum(x, [0]), [r(6, 3)])
    s.case("sum2_1_drop", lambda x: torch.sum(x, [1]), [r(6, 3)])
    s.case("mean3_1_keep", lambda x: torch.mean(x, [1], True), [r(2, 3, 4)])
    s.case("sum1", lambda x: torch.sum(x, [0]), [r(7)])
    s.case("sum5_to_rank4", lambda x: torch.relu(torch.sum(x, [0])), [r(2, 3, 4, 5, 6)])
    s.case("sum5_keep", lambda x: torch.sum(x, [1, 4], True), [r(2, 3, 4, 5, 6)])
    s.case("sum_empty_dims", lambda x: torch.sum(x, []), [x4()])

    # whole-tensor reductions (sum.default / mean.default)
    s.case("sum_all4", lambda x: torch.sum(torch.relu(x)), [x4()])
    s.case("mean_all4", lambda x: torch.mean(x), [x4()])
    s.case("sum_all2", lambda x: x.sum(), [r(6, 3)])
    s.case("mean_all1", lambda x: x.mean(), [r(9)])
    s.case("sum_scalar", lambda x: torch.relu(x.sum()), [r(())])
    s.case("mean_scalar_out", lambda x: x.mean(), [r(())])

    # declined
    s.case("sum_float64_result", lambda x: torch.sum(x, [0], dtype=torch.float64), [r(4, 3)],
           cpu={"aten.sum.dim_IntList": "float64 tensor"})

    # log_softmax: [N, C] on the class dim, NCHW on C (the last NHWC axis); others declined
    s.case("log_softmax_nc", lambda x: F.log_softmax(x, 1), [r(4, 10) * 3])
    s.case("log_softmax_nc_neg", lambda x: F.log_softmax(x, -1), [r(4, 10) * 3])
    s.case("log_softmax_nchw_c", lambda x: F.log_softmax(torch.relu(x), 1), [x4()])
    s.case("log_softmax_1d", lambda x: F.log_softmax(x, 0), [r(7)])
    s.case("log_softmax_nc_dim0", lambda x: F.log_softmax(x, 0), [r(4, 10)],
           cpu={"aten._log_softmax.default": "last axis (1) only"})
    s.case("log_softmax_nchw_w", lambda x: F.log_softmax(x, 3), [x4()],
           cpu={"aten._log_softmax.default": "is QNN axis 2"})
    s.case("cross_entropy_forward", lambda x, t: F.cross_entropy(x, t), [r(4, 10),
           torch.tensor([1, 0, 9, 3])])
    return s


if __name__ == "__main__":
    build().main()
