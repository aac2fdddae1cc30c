"""PyTorch comparison for the reduction family: aten.sum.default, aten.sum.dim_IntList,
aten.mean.default, aten.mean.dim (src/ops/reduce.c).

Cases cover all-dims and dim-list forms (None, [], negative dims, keepdim true/false), the
bias-gradient shapes (leading dims of [N, C] and [N, C, H, W]), 0-d inputs, empty dims, the
dtype kwarg and integer/bool inputs, long sums for accuracy, and graphs edgegrad must refuse
(unsupported dtypes, and exported graphs edited to break a rule).
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from optest import EditSuite  # noqa: E402


def node(graph, target):
    """The first node of `graph` with this target."""
    return next(n for n in graph["nodes"] if n["target"] == target)


def set_arg(target, index, value):
    def edit(graph):
        node(graph, target)["args"][index] = value
    return edit


torch.manual_seed(0)
suite = EditSuite("reduce")
r = torch.randn

# ---- sum.default / mean.default
suite.case("sum_all", lambda x: torch.sum(x), [r(2, 3, 4)])
suite.case("sum_all_1d", lambda x: x.sum(), [r(7)])
suite.case("sum_0d", lambda x: x.sum(), [r(())])
suite.case("sum_all_f64", lambda x: x.sum(dtype=torch.float64), [r(3, 5)])
suite.case("sum_f64_input", lambda x: x.sum(), [r(3, 5, dtype=torch.float64)])
suite.case("sum_int64", lambda x: x.sum(), [torch.randint(-50, 50, (4, 6))])
suite.case("sum_int32", lambda x: x.sum(), [torch.randint(-50, 50, (4, 6), dtype=torch.int32)])
suite.case("sum_bool", lambda x: x.sum(), [r(5, 7) > 0])
suite.case("sum_bool_as_f32", lambda x: x.sum(dtype=torch.float32), [r(5, 7) > 0])
suite.case("sum_uint8", lambda x: x.sum(),
           [torch.randint(0, 255, (3, 9), dtype=torch.uint8)])
suite.case("sum_empty", lambda x: x.sum(), [r(0, 3)])
suite.case("mean_all", lambda x: x.mean(), [r(4, 3, 2)])
suite.case("mean_0d", lambda x: x.mean(), [r(())])
suite.case("mean_int_as_f32", lambda x: x.mean(dtype=torch.float32),
           [torch.randint(-9, 9, (3, 4))])
suite.case("mean_as_f64", lambda x: x.mean(dtype=torch.float64), [r(6, 2)])
suite.case("sum_long", lambda x: x.sum(), [torch.rand(1 << 21) + 100])
suite.case("mean_long", lambda x: x.mean(), [torch.rand(3, 1 << 19)])

# ---- sum.dim_IntList / mean.dim
nchw = r(8, 16, 7, 5)
suite.case("sum_bias_nchw", lambda x: x.sum([0, 2, 3]), [nchw])
suite.case("sum_bias_nchw_keep", lambda x: x.sum([0, 2, 3], keepdim=True), [nchw])
suite.case("sum_bias_nc", lambda x: x.sum([0]), [r(32, 10)])
suite.case("sum_bias_nc_int_dim", lambda x: x.sum(0), [r(32, 10)])
suite.case("sum_bias_big", lambda x: x.sum([0, 2, 3]), [r(32, 64, 14, 14)])
suite.case("sum_rows_big", lambda x: x.sum([0]), [r(300, 1000)])
suite.case("sum_last", lambda x: x.sum(-1), [r(3, 4, 5)])
suite.case("sum_last_keep", lambda x: x.sum(-1, keepdim=True), [r(3, 4, 5)])
suite.case("sum_middle", lambda x: x.sum(1), [r(3, 4, 5)])
suite.case("sum_neg_dims", lambda x: x.sum([-1, -3]), [r(3, 4, 5)])
suite.case("sum_neg_dims_keep", lambda x: x.sum([-1, -3], keepdim=True), [r(3, 4, 5)])
suite.case("sum_dims_unordered", lambda x: x.sum([3, 0, 1]), [r(2, 3, 4, 5)])
suite.case("sum_dims_all", lambda x: x.sum([0, 1, 2]), [r(2, 3, 4)])
suite.case("sum_dims_empty", lambda x: torch.sum(x, []), [r(2, 3, 4)])
suite.case("sum_dims_none_keep", lambda x: torch.sum(x, dim=None, keepdim=True), [r(2, 3)])
suite.case("sum_size1_dims", lambda x: x.sum([1, 3]), [r(4, 1, 6, 1)])
suite.case("sum_dim_dtype", lambda x: x.sum((0, -1), dtype=torch.float64), [r(2, 3, 4)])
suite.case("sum_dim_int64", lambda x: x.sum(1), [torch.randint(-9, 9, (4, 5, 2))])
suite.case("sum_dim_bool_keep", lambda x: x.sum(0, keepdim=True), [r(6, 3) > 0])
suite.case("sum_0d_dim", lambda x: x.sum(0), [r(())])
suite.case("sum_0d_dim_keep", lambda x: x.sum(-1, keepdim=True), [r(())])
suite.case("sum_empty_dim", lambda x: x.sum(0), [r(0, 3)])
suite.case("sum_empty_kept", lambda x: x.sum(1), [r(0, 3)])
suite.case("mean_empty", lambda x: x.mean(), [r(0, 3)])
suite.case("mean_empty_dim", lambda x: x.mean(0), [r(0, 3)])
# (NaN inputs are left out: the exporter's in-place check compares inputs with ==)
suite.case("sum_nonfinite", lambda x: x.sum(1),
           [torch.tensor([[1.0, float("inf")], [-float("inf"), float("inf")], [-1.0, 3.0]])])
suite.case("mean_nonfinite_rows", lambda x: x.mean(0),
           [torch.tensor([[1.0, float("inf")], [-float("inf"), 2.0], [-float("inf"), 3.0]])])
suite.case("mean_spatial", lambda x: x.mean([2, 3]), [nchw])
suite.case("mean_spatial_keep", lambda x: x.mean([-2, -1], keepdim=True), [nchw])
suite.case("mean_batch", lambda x: x.mean(0), [r(16, 5)])
suite.case("mean_dims_none", lambda x: torch.mean(x, dim=None), [r(3, 4)])
suite.case("mean_dims_empty_keep", lambda x: torch.mean(x, [], keepdim=True), [r(3, 4)])
suite.case("mean_dim_dtype", lambda x: x.mean(1, dtype=torch.float64), [r(3, 4)])
suite.case("mean_dim_int_as_f32", lambda x: x.mean([0], dtype=torch.float32),
           [torch.randint(0, 100, (5, 3))])
suite.case("mean_bias_big", lambda x: x.mean([0, 2, 3]), [r(16, 32, 28, 28)])

# ---- refused: valid for PyTorch, unsupported here
suite.case("err_sum_truncating_dtype", lambda x: x.sum(dtype=torch.int64), [r(3, 4)],
           expect_error="truncating floating elements")
suite.case("err_sum_float16", lambda x: x.sum(), [r(3, 4).half()],
           expect_error="input dtype float16")
suite.case("err_sum_int32_result", lambda x: x.sum(1, dtype=torch.int32),
           [torch.randint(0, 9, (3, 4))], expect_error="result dtype int32")

# ---- refused: graphs edited to break a rule
SUM_DIM = "aten.sum.dim_IntList"
suite.case("err_repeated_dim", lambda x: x.sum([0, 1]), [r(3, 4)],
           edit=set_arg(SUM_DIM, 1, [1, -1]), expect_error="names dim 1 twice")
suite.case("err_dim_range", lambda x: x.sum([0]), [r(3, 4)],
           edit=set_arg(SUM_DIM, 1, [2]), expect_error="is 2: out of range for rank 2")
suite.case("err_dim_range_neg", lambda x: x.mean([0]), [r(3, 4)],
           edit=set_arg("aten.mean.dim", 1, [-3]), expect_error="is -3: out of range")
suite.case("err_dim_not_int", lambda x: x.sum([0]), [r(3, 4)],
           edit=set_arg(SUM_DIM, 1, [{"float": 0.5}]), expect_error="expected an int")


def mean_of_int(graph):
    # change the input to int64 without a dtype kwarg: ATen cannot infer mean's dtype
    graph["values"][graph["inputs"][0]["value"]]["dtype"] = "int64"


suite.case("err_mean_int", lambda x: x.mean(), [r(3, 4)], edit=mean_of_int,
           expect_error="mean needs a floating result dtype")


def wrong_out_shape(graph):
    graph["values"][node(graph, SUM_DIM)["output"]]["shape"] = [1, 4]


suite.case("err_out_shape", lambda x: x.sum([0]), [r(3, 4)], edit=wrong_out_shape,
           expect_error="shape [1, 4] contradicts")


def drop_keepdim(graph):
    node(graph, SUM_DIM)["args"][2] = False


suite.case("err_keepdim_contradicts", lambda x: x.sum([1], keepdim=True), [r(3, 4)],
           edit=drop_keepdim, expect_error="contradicts aten.sum.dim_IntList")

if __name__ == "__main__":
    suite.main()
