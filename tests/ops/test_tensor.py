"""PyTorch comparison tests for the tensor family (src/ops/tensor.c): cat, split.Tensor,
split_with_sizes, slice.Tensor, slice_backward, select.int, select_backward, squeeze.dim,
squeeze, unsqueeze, repeat, empty.memory_format, empty_like, fill.Scalar, new_zeros, stack,
constant_pad_nd.

Backward forms are called directly (torch.ops.aten.*) and through autograd chains; chains use
`vjp`, the autograd engine call behind torch.autograd.grad without its grad_outputs check
(that check traces aten.is_same_size, whose bool result the graph format cannot hold).
empty/empty_like have no deterministic PyTorch result, so their cases either fill the result
or compare with zeros (edgegrad zero-fills). Graphs the checks must reject are made by editing
an exported graph, since PyTorch will not trace them.

    PYTHONPATH=python /usr/bin/python3 tests/ops/test_tensor.py \
        --edgegrad build/edgegrad --workdir /tmp/ops-tensor
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import optest  # noqa: E402

aten = torch.ops.aten
torch.manual_seed(0)
BIG = 9223372036854775807  # INT64_MAX: what make_fx records for an open slice end


# ---- edited graphs and fixed references -----------------------------------------------------

_Edited = optest.Edited  # fn (the reference), an edit of the exported graph, a trace


node = optest.graph_node


def zeros_ref(trace, ref):
    """Exports `trace` (which returns uninitialised memory in PyTorch) and compares edgegrad's
    zero-filled result with `ref`."""
    return _Edited(ref, trace=trace)


vjp, chain = optest.vjp, optest.chain


def leaf(*shape):
    return torch.randn(*shape).requires_grad_(True)


def ints(*shape):
    return torch.randint(-100, 100, shape)


suite = optest.Suite("tensor")
a, b, c = torch.randn(2, 3), torch.randn(2, 4), torch.randn(2, 1)
e = torch.randn(0)

# ---- cat ----
suite.case("cat_dim0", lambda x, y: torch.cat([x, y]), [a, torch.randn(5, 3)])
suite.case("cat_dim1_three", lambda x, y, z: torch.cat([x, y, z], 1), [a, b, c])
suite.case("cat_dim_neg", lambda x, y: torch.cat([x, y], -1), [a, b])
suite.case("cat_channels", lambda x, y: torch.cat((x, y), dim=1),
           [torch.randn(2, 3, 4, 4), torch.randn(2, 5, 4, 4)])
suite.case("cat_single", lambda x: torch.cat([x], 0), [a])
suite.case("cat_same_twice", lambda x: torch.cat([x, x, x], -2), [a])
suite.case("cat_skip_empty_1d", lambda x, e, y: torch.cat([x, e, y], 1), [a, e, b])
suite.case("cat_skip_empty_first", lambda e, x: torch.cat([e, x], -1), [e, a])
suite.case("cat_all_empty_1d", lambda e: aten.cat([e, e], 5), [e])
suite.case("cat_empty_block", lambda x, y: torch.cat([x, y], 1), [torch.randn(2, 0), a])
suite.case("cat_empty_result", lambda x, y: torch.cat([x, y], 0),
           [torch.randn(0, 3), torch.randn(0, 3)])
suite.case("cat_int64", lambda x, y: torch.cat([x, y], 1), [ints(3, 2), ints(3, 5)])
suite.case("cat_bool", lambda x, y: torch.cat([x, y]), [a > 0, torch.randn(1, 3) > 0])
suite.case("cat_1d", lambda x, y: torch.cat([x, y]), [torch.randn(3), torch.randn(4)])

# ---- split ----
x45 = torch.randn(4, 5)
suite.case("split_dim1", lambda x: tuple(torch.split(x, 2, 1)), [x45])
suite.case("split_dim0", lambda x: tuple(torch.split(x, 3)), [x45])
suite.case("split_dim_neg", lambda x: tuple(torch.split(x, 2, -1)), [torch.randn(2, 3, 5)])
suite.case("split_larger", lambda x: tuple(torch.split(x, 10, 1)), [x45])
suite.case("split_exact", lambda x: tuple(torch.split(x, 1, 0)), [x45])
suite.case("split_int64", lambda x: tuple(torch.split(x, 2, 0)), [ints(5, 3)])
suite.case("split_zero_extent", lambda x: tuple(aten.split.Tensor(x, 0, 1)),
           [torch.randn(2, 0)])
suite.case("split_of_empty", lambda x: tuple(torch.split(x, 2, 1)), [torch.randn(0, 5)])
suite.case("split_pick_one", lambda x: torch.split(x, 2, 1)[1], [x45])
suite.case("split_with_sizes", lambda x: tuple(torch.split(x, [2, 3], 1)), [x45])
suite.case("split_with_sizes_zeros", lambda x: tuple(torch.split(x, [0, 5, 0], -1)), [x45])
suite.case("split_with_sizes_dim_neg", lambda x: tuple(torch.split(x, [1, 1, 2], -2)),
           [torch.randn(3, 4, 2)])
suite.case("split_with_sizes_one", lambda x: tuple(torch.split(x, [4], 0)), [x45])

# ---- slice ----
suite.case("slice_cols", lambda x: x[:, 1:3], [x45])
suite.case("slice_rows_open", lambda x: x[1:], [x45])
suite.case("slice_step", lambda x: x[::2, 1::3], [torch.randn(5, 7)])
suite.case("slice_negative", lambda x: x[..., -3:-1], [torch.randn(2, 3, 6)])
suite.case("slice_clamped", lambda x: aten.slice.Tensor(x, 1, -100, 100), [x45])
suite.case("slice_empty", lambda x: aten.slice.Tensor(x, 1, 3, 1), [x45])
suite.case("slice_start_big", lambda x: aten.slice.Tensor(x, 1, BIG, 3), [x45])
suite.case("slice_start_min", lambda x: aten.slice.Tensor(x, -1, -10**12, BIG, 2), [x45])
suite.case("slice_defaults", lambda x: aten.slice.Tensor(x), [x45])
suite.case("slice_kwargs", lambda x: aten.slice.Tensor(x, dim=0, start=1, step=2),
           [torch.randn(6, 2)])
suite.case("slice_int64", lambda x: x[1:, ::2], [ints(4, 5)])
suite.case("slice_bool", lambda x: x[:, 2:], [x45 > 0])
suite.case("slice_of_empty", lambda x: x[:, 2:4], [torch.randn(0, 5)])

# ---- slice_backward ----
g42 = torch.randn(4, 2)
suite.case("slice_backward", lambda g: aten.slice_backward(g, [4, 5], 1, 1, 3, 1), [g42])
suite.case("slice_backward_step",
           lambda g: aten.slice_backward(g, [4, 5], -1, 1, BIG, 2), [g42])
suite.case("slice_backward_dim0", lambda g: aten.slice_backward(g, [6, 5], 0, -3, BIG, 1),
           [torch.randn(3, 5)])
suite.case("slice_backward_bcast",
           lambda g: aten.slice_backward(g, [4, 5], 1, 1, BIG, 2), [torch.randn(4, 1)])
suite.case("slice_backward_int64",
           lambda g: aten.slice_backward(g, [3, 5], 1, 0, 2, 1), [ints(3, 2)])
suite.case("slice_backward_empty",
           lambda g: aten.slice_backward(g, [3, 5], 1, 4, 2, 1), [torch.randn(3, 0)])

# ---- select, select_backward ----
suite.case("select_row", lambda x: x[1], [x45])
suite.case("select_col_neg", lambda x: x[:, -1], [x45])
suite.case("select_dims_neg", lambda x: aten.select.int(x, -2, -3), [torch.randn(2, 3, 4)])
suite.case("select_to_0d", lambda x: x[2], [torch.randn(5)])
suite.case("select_int64", lambda x: x[:, 0], [ints(3, 4)])
suite.case("select_of_empty", lambda x: x[:, 3], [torch.randn(0, 5)])
suite.case("select_backward", lambda g: aten.select_backward(g, [4, 5], 1, -1),
           [torch.randn(4)])
suite.case("select_backward_dim0", lambda g: aten.select_backward(g, [3, 2, 2], 0, 2),
           [torch.randn(2, 2)])
suite.case("select_backward_bcast", lambda g: aten.select_backward(g, [4, 5], 1, 3),
           [torch.randn(1)])
suite.case("select_backward_0d", lambda g: aten.select_backward(g, [5], 0, -2),
           [torch.randn(())])

# ---- squeeze, unsqueeze ----
x131 = torch.randn(1, 3, 1)
suite.case("squeeze_dim_last", lambda x: x.squeeze(-1), [x131])
suite.case("squeeze_dim_noop", lambda x: aten.squeeze.dim(x, 1), [x131])
suite.case("squeeze_dim_0d", lambda x: aten.squeeze.dim(x, -1), [torch.randn(())])
suite.case("squeeze_all", lambda x: x.squeeze(), [x131])
suite.case("squeeze_all_to_0d", lambda x: x.squeeze(), [torch.randn(1, 1)])
suite.case("squeeze_int64", lambda x: x.squeeze(0), [ints(1, 4)])
suite.case("unsqueeze_0", lambda x: x.unsqueeze(0), [a])
suite.case("unsqueeze_neg", lambda x: x.unsqueeze(-1), [a])
suite.case("unsqueeze_mid", lambda x: x[:, None], [a])
suite.case("unsqueeze_0d", lambda x: x.unsqueeze(-1), [torch.randn(())])

# ---- repeat ----
suite.case("repeat_more_dims", lambda x: x.repeat(2, 1, 3), [a])
suite.case("repeat_same", lambda x: x.repeat(1, 1), [a])
suite.case("repeat_zero", lambda x: x.repeat(2, 0), [a])
suite.case("repeat_0d", lambda x: x.repeat(4), [torch.randn(())])
suite.case("repeat_0d_none", lambda x: aten.repeat(x, []), [torch.randn(())])
suite.case("repeat_4d", lambda x: x.repeat(2, 1, 2, 3), [torch.randn(1, 3, 2, 2)])
suite.case("repeat_int64", lambda x: x.repeat(3, 2), [ints(2, 2)])

# ---- creation ----
suite.case("empty_fill", lambda x: torch.fill(torch.empty(2, 3), 1.5), [a])
suite.case("empty_fill_inplace", lambda x: torch.empty(2, 2, dtype=torch.int64).fill_(-3), [a])
suite.case("empty_int64_fill",
           lambda x: torch.fill(torch.empty(4, dtype=torch.int64), 7), [a])
suite.case("empty_zeroed",
           zeros_ref(lambda x: torch.empty(3, 2, 2), lambda x: torch.zeros(3, 2, 2)), [a])
suite.case("empty_0d", zeros_ref(lambda x: torch.empty(()), lambda x: torch.zeros(())), [a])
suite.case("empty_like_zeroed",
           zeros_ref(lambda x: torch.empty_like(x), lambda x: torch.zeros_like(x)), [a])
suite.case("empty_like_dtype",
           zeros_ref(lambda x: torch.empty_like(x, dtype=torch.int64),
                     lambda x: torch.zeros_like(x, dtype=torch.int64)), [a])
suite.case("empty_like_fill", lambda x: torch.fill(torch.empty_like(x), -2.0), [a])
suite.case("new_zeros", lambda x: x.new_zeros(2, 5), [a])
suite.case("new_zeros_int64", lambda x: x.new_zeros((3,), dtype=torch.int64), [a])
suite.case("new_zeros_from_int", lambda x: x.new_zeros(2, 2), [ints(3)])
suite.case("new_zeros_empty", lambda x: x.new_zeros(0, 4), [a])
suite.case("fill_float", lambda x: torch.fill(x, 2.5), [torch.randn(3, 4)])
suite.case("fill_int_value", lambda x: torch.fill(x, 3), [torch.randn(2, 2)])
suite.case("fill_int64", lambda x: torch.fill(x, -7), [ints(2, 3)])
suite.case("fill_int64_trunc", lambda x: torch.fill(x, -2.7), [ints(5)])
suite.case("fill_int64_big", lambda x: torch.fill(x, BIG), [ints(2)])
suite.case("fill_bool", lambda x: torch.fill(x, True), [torch.randn(3) > 0])
suite.case("fill_bool_from_float", lambda x: torch.fill(x, 0.5), [torch.randn(3) > 0])
suite.case("fill_uint8_wrap", lambda x: torch.fill(x, -1), [torch.zeros(3, dtype=torch.uint8)])
suite.case("fill_float64", lambda x: torch.fill(x, 0.1), [torch.randn(2, dtype=torch.float64)])
suite.case("fill_0d", lambda x: torch.fill(x, 4.0), [torch.randn(())])
suite.case("fill_empty", lambda x: torch.fill(x, 4.0), [torch.randn(0, 3)])

# ---- autograd chains ----
suite.case("grad_slice", chain(lambda x, g: vjp([x[:, 1:3]], [x], [g])), [leaf(4, 5), g42])
suite.case("grad_slice_step", chain(lambda x, g: vjp([x[1::2, ::2]], [x], [g])),
           [leaf(5, 5), torch.randn(2, 3)])
suite.case("grad_select", chain(lambda x, g: vjp([x[1:3, 2]], [x], [g])),
           [leaf(4, 5), torch.randn(2)])
suite.case("grad_cat", chain(lambda x, y, g: vjp([torch.cat([x, y], 1)], [x, y], [g])),
           [leaf(2, 3), leaf(2, 4), torch.randn(2, 7)])
suite.case("grad_split", chain(lambda x, p, q, r: vjp(torch.split(x, 2, 1), [x], [p, q, r])),
           [leaf(4, 5), torch.randn(4, 2), torch.randn(4, 2), torch.randn(4, 1)])
suite.case("grad_split_with_sizes",
           chain(lambda x, p, q: vjp(torch.split(x, [2, 3], 1), [x], [p, q])),
           [leaf(4, 5), torch.randn(4, 2), torch.randn(4, 3)])
suite.case("grad_squeeze_unsqueeze",
           chain(lambda x, g: vjp([x.unsqueeze(0).squeeze()], [x], [g])),
           [leaf(4, 5), torch.randn(4, 5)])


# ---- graphs the checks must reject ----

def edit_arg(target, pos, new):
    def edit(graph):
        node(graph, target)["args"][pos] = new
    return edit


def edit_out_shape(target, shape):
    def edit(graph):
        graph["values"][node(graph, target)["output"]]["shape"] = shape
    return edit


def rejected(name, fn, args, edit, message):
    suite.case(name, _Edited(fn, edit), args, expect_error=message)


rejected("cat_dim_out_of_range", lambda x, y: torch.cat([x, y], 1), [a, b],
         edit_arg("aten.cat.default", 1, 2), "out of range [-2, 1]")
rejected("cat_wrong_output", lambda x, y: torch.cat([x, y], 1), [a, b],
         edit_out_shape("aten.cat.default", [2, 6]), "contradicts")
rejected("cat_empty_list", lambda x, y: torch.cat([x, y], 1), [a, b],
         edit_arg("aten.cat.default", 0, []), "non-empty list")
suite.case("cat_mixed_dtypes", lambda x, y: torch.cat([x, y]),
           [a, ints(1, 3)], expect_error="dtype conversion is not supported")


def cat_mismatch(graph):
    n = node(graph, "aten.cat.default")
    graph["values"][n["args"][0][1]["value"]]["shape"] = [3, 4]


rejected("cat_size_mismatch", lambda x, y: torch.cat([x, y], 1), [a, b], cat_mismatch,
         "sizes must match except in dimension 1")
rejected("split_negative", lambda x: tuple(torch.split(x, 2, 1)), [x45],
         edit_arg("aten.split.Tensor", 1, -1), "must be non-negative")
rejected("split_zero", lambda x: tuple(torch.split(x, 2, 1)), [x45],
         edit_arg("aten.split.Tensor", 1, 0), "split_size can only be 0")
rejected("split_wrong_count", lambda x: tuple(torch.split(x, 2, 1)), [x45],
         edit_arg("aten.split.Tensor", 1, 1), "output tuple has 3 elements")
rejected("split_with_sizes_sum", lambda x: tuple(torch.split(x, [2, 3], 1)), [x45],
         edit_arg("aten.split_with_sizes.default", 1, [1, 1]), "must sum exactly")
# the last slice node is the column slice (torch 1.13 also traces a full slice of dim 0)
rejected("slice_step_zero", lambda x: x[:, 1:3], [x45],
         lambda g: [n for n in g["nodes"] if n["target"] == "aten.slice.Tensor"][-1]["args"]
         .append(0), "slice step 0: must be positive")
rejected("select_index_range", lambda x: x[1], [x45],
         edit_arg("aten.select.int", 2, 4), "index 4 out of range [-4, 4)")
def grad_shape(target, shape):
    def edit(graph):
        graph["values"][node(graph, target)["args"][0]["value"]]["shape"] = shape
    return edit


rejected("select_backward_grad_shape", lambda g: aten.select_backward(g, [4, 5], 1, -1),
         [torch.randn(4)], grad_shape("aten.select_backward.default", [3]),
         "grad_output shape [3] does not broadcast to the selected shape [4]")
rejected("slice_backward_grad_shape", lambda g: aten.slice_backward(g, [4, 5], 1, 1, 3, 1),
         [g42], edit_arg("aten.slice_backward.default", 3, 0), "does not broadcast")
rejected("stack_empty_list", lambda x, y: torch.stack([x, y]), [a, a],
         edit_arg("aten.stack.default", 0, []), "stack expects a non-empty list")


def stack_mismatch(graph):
    n = node(graph, "aten.stack.default")
    graph["values"][n["args"][0][1]["value"]]["shape"] = [2, 4]


rejected("stack_size_mismatch", lambda x, y: torch.stack([x, y]), [a, torch.randn(2, 3)],
         stack_mismatch, "stack expects each tensor to be equal size, but got [2, 3] at entry 0 "
         "and [2, 4] at entry 1")
rejected("stack_dim_range", lambda x, y: torch.stack([x, y], 1), [a, a],
         edit_arg("aten.stack.default", 1, 3), "out of range [-3, 2]")
suite.case("stack_mixed_dtypes", lambda x, y: torch.stack([x, y]), [a, ints(2, 3)],
           expect_error="stack with dtype conversion is not supported")
rejected("pad_odd", lambda x: F.pad(x, (1, 1)), [a],
         edit_arg("aten.constant_pad_nd.default", 1, [1, 1, 1]), "its length must be even")
rejected("pad_too_long", lambda x: F.pad(x, (1, 1)), [a],
         edit_arg("aten.constant_pad_nd.default", 1, [1, 1, 1, 1, 1, 1]),
         "6 entries for self of rank 2: at most two per dimension")
rejected("pad_crop_too_far", lambda x: F.pad(x, (1, 1)), [a],
         edit_arg("aten.constant_pad_nd.default", 1, [-4, 1]),
         "crops dimension 1 of size 3 by -4 and 1")
rejected("pad_crop_both_too_far", lambda x: F.pad(x, (1, 1)), [a],
         edit_arg("aten.constant_pad_nd.default", 1, [-2, -2]), "at most its size")
rejected("pad_value_overflow", lambda x: aten.constant_pad_nd(x, [1, 1], 3),
         [torch.zeros(2, dtype=torch.int8)],
         edit_arg("aten.constant_pad_nd.default", 2, 300), "300 cannot be converted to int8")
rejected("pad_out_shape", lambda x: F.pad(x, (1, 1)), [a],
         edit_out_shape("aten.constant_pad_nd.default", [2, 6]), "contradicts")
rejected("repeat_too_few", lambda x: x.repeat(2, 2), [a],
         edit_arg("aten.repeat.default", 1, [2]), "can not be smaller")
rejected("repeat_negative", lambda x: x.repeat(2, 2), [a],
         edit_arg("aten.repeat.default", 1, [2, -1]), "negative entry -1")
rejected("unsqueeze_dim_range", lambda x: x.unsqueeze(0), [a],
         edit_arg("aten.unsqueeze.default", 1, 3), "out of range [-3, 2] for unsqueeze of rank 2")
rejected("new_zeros_negative", lambda x: x.new_zeros(2, 3), [a],
         edit_arg("aten.new_zeros.default", 1, [2, -3]), "negative dimension -3")



def dtype_int(graph):
    node(graph, "aten.new_zeros.default")["kwargs"]["dtype"] = 6


rejected("new_zeros_bad_dtype", lambda x: x.new_zeros(2, 3), [a], dtype_int,
         "argument dtype (#2) is a int: expected a dtype")


def sparse_layout(graph):
    node(graph, "aten.empty.memory_format")["kwargs"]["layout"] = {"layout": "sparse_coo"}


rejected("empty_sparse", lambda x: torch.fill(torch.empty(2, 3), 1.0), [a], sparse_layout,
         "layout sparse_coo")
rejected("fill_int8_overflow", lambda x: torch.fill(x, 3), [torch.zeros(2, dtype=torch.int8)],
         edit_arg("aten.fill.Scalar", 1, 300), "300 cannot be converted to int8")
rejected("fill_int64_nan", lambda x: torch.fill(x, 3), [ints(2)],
         edit_arg("aten.fill.Scalar", 1, {"float": "nan"}), "cannot be converted to int64")
suite.case("fill_float16", lambda x: torch.fill(x, 1.0), [torch.zeros(2, dtype=torch.float16)],
           expect_error="fill supports float32")

# ---- stack ----
suite.case("stack_dim0", lambda x, y: torch.stack([x, y]), [a, torch.randn(2, 3)])
suite.case("stack_dim_last", lambda x, y, z: torch.stack([x, y, z], -1),
           [a, torch.randn(2, 3), torch.randn(2, 3)])
suite.case("stack_dim_mid", lambda x, y: torch.stack([x, y], 1), [a, torch.randn(2, 3)])
suite.case("stack_dim_neg_mid", lambda x, y: torch.stack([x, y], -2),
           [torch.randn(2, 3, 4), torch.randn(2, 3, 4)])
suite.case("stack_single", lambda x: torch.stack([x], 2), [a])
suite.case("stack_0d", lambda x, y: torch.stack([x, y]), [torch.randn(()), torch.randn(())])
suite.case("stack_same_twice", lambda x: torch.stack([x, x], 1), [a])
suite.case("stack_int64", lambda x, y: torch.stack([x, y], 1), [ints(3, 2), ints(3, 2)])
suite.case("stack_bool", lambda x, y: torch.stack([x, y]), [a > 0, torch.randn(2, 3) > 0])
suite.case("stack_empty", lambda x, y: torch.stack([x, y], 1),
           [torch.randn(0, 3), torch.randn(0, 3)])
suite.case("stack_zero_width", lambda x, y: torch.stack([x, y], -1),
           [torch.randn(2, 0), torch.randn(2, 0)])
suite.case("stack_big", lambda x, y: torch.stack([x, y], 2),
           [torch.randn(16, 32, 64), torch.randn(16, 32, 64)])

# ---- constant_pad_nd ----
x2344 = torch.randn(2, 3, 4, 4)
F = torch.nn.functional
suite.case("pad_last", lambda x: F.pad(x, (1, 2)), [x2344])
suite.case("pad_two_dims", lambda x: F.pad(x, (1, 0, 2, 3), value=1.5), [x2344])
suite.case("pad_all_dims", lambda x: F.pad(x, (1, 1, 0, 2, 1, 0, 2, 1)), [x2344])
suite.case("pad_crop", lambda x: F.pad(x, (-1, -2, 1, -1)), [x2344])
suite.case("pad_mixed", lambda x: F.pad(x, (2, -1)), [torch.randn(3, 5)])
suite.case("pad_crop_to_empty", lambda x: F.pad(x, (-3, 0)), [torch.randn(2, 3)])
suite.case("pad_empty_list", lambda x: aten.constant_pad_nd(x, []), [a])
suite.case("pad_of_empty", lambda x: F.pad(x, (1, 1, 2, 0), value=-1.0), [torch.randn(0, 3)])
suite.case("pad_empty_dim_grows", lambda x: F.pad(x, (1, 2)), [torch.randn(2, 0)])
suite.case("pad_int64", lambda x: aten.constant_pad_nd(x, [1, 1], 7), [ints(2, 3)])
suite.case("pad_int64_float_value", lambda x: aten.constant_pad_nd(x, [1, 1], 2.7), [ints(4)])
suite.case("pad_bool", lambda x: aten.constant_pad_nd(x, [0, 2], True), [a > 0])
suite.case("pad_f64", lambda x: F.pad(x, (1, 1), value=0.1),
           [torch.randn(2, 3, dtype=torch.float64)])
suite.case("pad_inf", lambda x: F.pad(x, (1, 1), value=float("-inf")), [a])
suite.case("pad_big", lambda x: F.pad(x, (1, 1, 1, 1)), [torch.randn(8, 32, 56, 56)])
suite.case("pad_conv_same",
           lambda x, w: F.conv2d(x, w, padding="same"), [torch.randn(1, 2, 5, 6),
                                                          torch.randn(3, 2, 2, 4)])

# ---- stack / pad autograd chains, and empty tensors through backward ----
suite.case("grad_stack", chain(lambda x, y, g: vjp([torch.stack([x, y], -1)], [x, y], [g])),
           [leaf(2, 3), leaf(2, 3), torch.randn(2, 3, 2)])
suite.case("grad_pad", chain(lambda x, g: vjp([F.pad(x, (1, 2, -1, 1))], [x], [g])),
           [leaf(2, 3, 4, 4), torch.randn(2, 3, 4, 7)])
suite.case("grad_pad_conv_same",
           chain(lambda x, w, g: vjp([F.conv2d(x, w, padding="same")], [x, w], [g])),
           [leaf(1, 2, 5, 6), leaf(3, 2, 2, 4), torch.randn(1, 3, 5, 6)])
suite.case("grad_repeat_empty", chain(lambda x, g: vjp([x.repeat(2, 3)], [x], [g])),
           [leaf(0), torch.randn(2, 0)])
suite.case("repeat_empty", lambda x: x.repeat(2, 3), [torch.randn(0)])
suite.case("grad_stack_empty", chain(lambda x, y, g: vjp([torch.stack([x, y])], [x, y], [g])),
           [leaf(0, 3), leaf(0, 3), torch.randn(2, 0, 3)])

# the gradient of using one piece of a split traces aten.zeros + cat
suite.case("zeros_from_split_grad",
           chain(lambda x, g: vjp([torch.split(x, 2, 1)[1]], [x], [g])),
           [leaf(2, 6), torch.randn(2, 2)])
suite.case("zeros_direct", lambda x: x + torch.zeros(2, 3), [torch.randn(2, 3)])

if __name__ == "__main__":
    suite.main()
