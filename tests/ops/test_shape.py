"""PyTorch comparison tests for the shape family (src/ops/shape.c): t, view, _unsafe_view,
_reshape_alias, reshape, permute, transpose.int, expand, detach, alias, clone, _to_copy,
ones_like, zeros_like, full.

aten.reshape.default never appears in a make_fx trace (it decomposes into _reshape_alias or
clone + _unsafe_view), so its cases rename a traced view; torch 2.x traces x.reshape as a view
where torch 1.13 writes _reshape_alias, so the _reshape_alias cases that need the node build
it from whichever of the two was traced (as_reshape_alias); aten.alias is never traced either
(make_fx drops it), so its cases rename a traced detach. Graphs the checks must reject are made
by editing an exported graph, since PyTorch will not trace them. Backward cases use
optest.vjp / optest.chain.

    PYTHONPATH=python /usr/bin/python3 tests/ops/test_shape.py \
        --edgegrad build/edgegrad --workdir /tmp/ops-shape
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import optest  # noqa: E402

aten = torch.ops.aten
torch.manual_seed(0)


# ---- edited graphs: export a valid one, then edit its JSON (optest.EditSuite) ----------------

def node(graph, target):
    return next(n for n in graph["nodes"] if n["target"] == target)


def value(graph, vid):
    return graph["values"][vid]


suite = optest.EditSuite("shape")


def rand(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype)


def edit_args(target, i, new):
    def edit(g):
        node(g, target)["args"][i] = new
    return edit


def E(name, fn, args, edit, expect=None):
    """An edited graph: rejected with `expect` in the message, or (expect None) run and
    compared with fn's eager result."""
    suite.case(name, fn, args, expect_error=expect, edit=edit)


# ---- t / permute ---------------------------------------------------------------------------

suite.case("t_2d", lambda x: x.t(), [rand(3, 5)])
suite.case("t_1d", lambda x: x.t(), [rand(4)])
suite.case("t_0d", lambda x: x.t(), [torch.tensor(3.0)])
suite.case("t_big", lambda x: x.t().contiguous(), [rand(300, 257)])
suite.case("t_int64", lambda x: x.t(), [torch.arange(12).view(3, 4)])
suite.case("permute_3d", lambda x: x.permute(2, 0, 1), [rand(2, 3, 4)])
suite.case("permute_negative", lambda x: x.permute(0, -1, 1, -2), [rand(2, 3, 4, 5)])
suite.case("permute_nchw_nhwc", lambda x: x.permute(0, 2, 3, 1), [rand(4, 16, 9, 7)])
suite.case("permute_big", lambda x: x.permute(1, 0, 2), [rand(64, 100, 24)])
suite.case("permute_identity", lambda x: x.permute(0, 1), [rand(3, 4)])
suite.case("permute_ones", lambda x: x.permute(2, 1, 0), [rand(1, 5, 1)])
suite.case("permute_bool", lambda x: x.permute(1, 0), [torch.rand(3, 4) > 0.5])
suite.case("permute_f64", lambda x: x.permute(1, 0), [rand(3, 4, dtype=torch.float64)])
suite.case("permute_0d", lambda x: x.permute([]), [torch.tensor(2.0)])
suite.case("permute_empty", lambda x: x.permute(1, 0), [rand(0, 4)])

# ---- transpose.int, and ShuffleNetV2's channel shuffle built on it ------------------------

vjp, chain = optest.vjp, optest.chain


def leaf(*shape):
    return torch.randn(*shape).requires_grad_(True)


def shuffle(x, groups=2):
    """ShuffleNetV2's channel_shuffle: view -> transpose(1, 2) -> contiguous -> view."""
    n, c, h, w = x.shape
    return x.view(n, groups, c // groups, h, w).transpose(1, 2).contiguous().view(n, c, h, w)


suite.case("transpose_2d", lambda x: x.transpose(0, 1), [rand(3, 5)])
suite.case("transpose_negative", lambda x: x.transpose(-1, 1), [rand(2, 3, 4, 5)])
suite.case("transpose_same_dim", lambda x: x.transpose(2, -2), [rand(2, 3, 4)])
suite.case("transpose_0d", lambda x: aten.transpose.int(x, 0, -1), [torch.tensor(2.0)])
suite.case("transpose_1d", lambda x: x.transpose(0, -1), [rand(6)])
suite.case("transpose_empty", lambda x: x.transpose(0, 2), [rand(0, 3, 2)])
suite.case("transpose_int64", lambda x: x.transpose(0, 1), [torch.arange(12).view(3, 4)])
suite.case("transpose_bool", lambda x: x.transpose(1, 0), [torch.rand(3, 4) > 0.5])
suite.case("transpose_big", lambda x: x.transpose(1, 2).contiguous(), [rand(8, 64, 56, 56)])
suite.case("channel_shuffle", lambda x: shuffle(x), [rand(2, 6, 4, 4)])
suite.case("channel_shuffle_g4", lambda x: shuffle(x, 4), [rand(1, 16, 3, 5)])
suite.case("channel_shuffle_contiguous_kw",
           lambda x: aten.clone(x.view(2, 2, 3, 4).transpose(1, 2),
                                memory_format=torch.contiguous_format).view(2, 6, 4),
           [rand(2, 6, 4)])
suite.case("grad_transpose", chain(lambda x, g: vjp([x.transpose(0, 2)], [x], [g])),
           [leaf(2, 3, 4), torch.randn(4, 3, 2)])
suite.case("grad_channel_shuffle", chain(lambda x, g: vjp([shuffle(x)], [x], [g])),
           [leaf(2, 6, 4, 4), torch.randn(2, 6, 4, 4)])
suite.case("grad_channel_shuffle_relu",
           chain(lambda x, g: vjp([torch.relu(shuffle(x * 2.0))], [x], [g])),
           [leaf(2, 8, 3, 3), torch.randn(2, 8, 3, 3)])

# ---- view family ----------------------------------------------------------------------------

suite.case("view_flat", lambda x: x.view(-1), [rand(2, 3, 4)])
suite.case("view_infer", lambda x: x.view(4, -1, 2), [rand(2, 3, 4)])
suite.case("view_0d", lambda x: x.view([]), [rand(1, 1)])
suite.case("view_to_1", lambda x: x.view(1, 1, 1), [torch.tensor(5.0)])
suite.case("view_empty", lambda x: x.view(0, 5), [rand(5, 0)])
suite.case("view_int64", lambda x: x.view(2, 6), [torch.arange(12)])
suite.case("unsafe_view", lambda x: aten._unsafe_view(x, [6, -1]), [rand(3, 4)])
suite.case("reshape_alias", lambda x: x.reshape(3, 2), [rand(2, 3)])
suite.case("reshape_alias_ones", lambda x: x.reshape(1, 6, 1), [rand(2, 3)])
suite.case("reshape_of_permute", lambda x: x.permute(1, 0).reshape(-1), [rand(2, 3)])
# a reshape that is a view of a transposed tensor: torch 1.13 traces _reshape_alias with the
# transposed strides ([2, 1, 4] here; nn.MultiheadAttention's head split), which the exporter
# records as the contiguous strides of the dense result
suite.case("reshape_view_of_transpose", lambda x: x.t().reshape(2, 2, 3) * 2, [rand(3, 4)])
suite.case("reshape_view_of_permute", lambda x: x.permute(2, 0, 1).reshape(17, 2, 8, 8),
           [rand(2, 64, 17)])
suite.case("flatten", lambda x: x.flatten(1), [rand(2, 3, 4, 5)])


def as_reshape_alias(size, stride):
    """An edit making x.reshape's node (_reshape_alias under torch 1.13, view under 2.x) the
    aten._reshape_alias(self, size, stride) node the case needs."""
    def edit(g):
        n = next(n for n in g["nodes"]
                 if n["target"] in ("aten._reshape_alias.default", "aten.view.default"))
        n["target"] = "aten._reshape_alias.default"
        n["args"] = [n["args"][0], size, stride]
    return edit


# empty tensors: their strides are arbitrary (ATen writes [1, 1] for [3, 0])
E("reshape_alias_empty_stride", lambda x: x.reshape(3, 0), [rand(0, 3)],
  as_reshape_alias([3, 0], [1, 1]))
E("reshape_alias_empty_3d", lambda x: x.reshape(2, 0, 3), [rand(0, 6)],
  as_reshape_alias([2, 0, 3], [3, 3, 1]))
E("reshape_alias_built", lambda x: x.reshape(3, 2), [rand(2, 3)], as_reshape_alias([3, 2], [2, 1]))
suite.case("grad_matmul_empty", chain(lambda x, y, g: vjp([x @ y], [x, y], [g])),
           [leaf(2, 0, 3), leaf(3, 4), torch.randn(2, 0, 4)])
suite.case("view_empty_to_empty", lambda x: x.view(0, 2, 3), [rand(3, 0, 2)])


def to_reshape(g):
    n = node(g, "aten.view.default")
    n["target"] = "aten.reshape.default"


E("reshape", lambda x: x.view(4, -1), [rand(2, 3, 4)], to_reshape)
E("reshape_kw", lambda x: x.view(6, 4), [rand(2, 3, 4)],
  lambda g: (to_reshape(g), node(g, "aten.reshape.default").update(
      args=node(g, "aten.reshape.default")["args"][:1],
      kwargs={"shape": node(g, "aten.reshape.default")["args"][1]})))

# ---- expand --------------------------------------------------------------------------------

suite.case("expand_lead", lambda x: x.expand(4, 2, 3), [rand(2, 3)])
suite.case("expand_minus1", lambda x: x.expand(2, 4, -1), [rand(1, 3)])
suite.case("expand_middle", lambda x: x.expand(-1, 5, -1), [rand(2, 1, 3)])
suite.case("expand_0d", lambda x: x.expand(3, 2), [torch.tensor(1.5)])
suite.case("expand_to_zero", lambda x: x.expand(0, 3), [rand(1, 3)])
suite.case("expand_big", lambda x: x.expand(32, 64, 40, 40), [rand(64, 1, 1)])
suite.case("expand_same", lambda x: x.expand(2, 3), [rand(2, 3)])
suite.case("expand_int64", lambda x: x.expand(3, 4), [torch.arange(4)])
E("expand_implicit_kw", lambda x: x.expand(2, 3), [rand(1, 3)],
  lambda g: node(g, "aten.expand.default")["kwargs"].update(implicit=True))

# ---- detach / clone / _to_copy ----------------------------------------------------------------

suite.case("detach", lambda x: x.detach(), [rand(3, 4)])
suite.case("detach_int64", lambda x: x.detach(), [torch.arange(7)])
suite.case("detach_empty", lambda x: x.detach(), [rand(0, 3)])


def to_alias(g):
    node(g, "aten.detach.default")["target"] = "aten.alias.default"


E("alias", lambda x: x.detach(), [rand(3, 4)], to_alias)
E("alias_0d", lambda x: x.detach(), [torch.tensor(1.5)], to_alias)
E("alias_int64", lambda x: x.detach(), [torch.arange(5)], to_alias)
E("alias_empty", lambda x: x.detach(), [rand(2, 0)], to_alias)
E("err_alias_extra_arg", lambda x: x.detach(), [rand(3)],
  lambda g: (to_alias(g), node(g, "aten.alias.default")["args"].append(1)),
  "2 positional arguments: aten.alias.default takes at most 1")
suite.case("view_bool", lambda x: x.view(2, 2), [torch.rand(4) > 0.5])
suite.case("clone", lambda x: x.clone(), [rand(3, 4)])
suite.case("clone_contiguous", lambda x: x.t().contiguous(), [rand(3, 4)])
suite.case("clone_channels_last", lambda x: x.clone(memory_format=torch.channels_last),
           [rand(2, 3, 4, 5)])
suite.case("clone_preserve", lambda x: x.clone(memory_format=torch.preserve_format), [rand(3)])
suite.case("to_f64", lambda x: x.to(torch.float64), [rand(3, 4)])
suite.case("to_f32_from_f64", lambda x: x.float(), [rand(3, 4, dtype=torch.float64)])
suite.case("to_int64", lambda x: x.long(), [rand(3, 4) * 10])
suite.case("to_int32", lambda x: x.int(), [rand(3, 4) * 1000])
suite.case("to_int8", lambda x: x.to(torch.int8), [rand(3, 4) * 100])
suite.case("to_uint8", lambda x: x.to(torch.uint8), [rand(3, 4).abs() * 100])
suite.case("to_bool", lambda x: x.bool(), [torch.tensor([0.0, -0.0, 1.5, -2.0, float("nan")])])
suite.case("bool_to_float", lambda x: x.float(), [torch.rand(3, 4) > 0.5])
suite.case("int64_to_float", lambda x: x.float(), [torch.arange(-6, 6).view(3, 4)])
suite.case("int64_to_int32", lambda x: x.int(), [torch.tensor([1, -1, 2 ** 40 + 3, -(2 ** 33)])])
suite.case("int32_to_bool", lambda x: x.bool(), [torch.tensor([0, 1, -7], dtype=torch.int32)])
suite.case("uint8_to_int64", lambda x: x.long(), [torch.tensor([0, 200, 255], dtype=torch.uint8)])
suite.case("to_same_dtype_copy", lambda x: x.to(torch.float32, copy=True), [rand(5)])
suite.case("to_copy_kwargs",
           lambda x: aten._to_copy(x, dtype=torch.float64, layout=torch.strided,
                                   device=torch.device("cpu"), pin_memory=False,
                                   non_blocking=False, memory_format=torch.preserve_format),
           [rand(2, 3)])
suite.case("to_copy_big", lambda x: x.to(torch.float64), [rand(64, 64, 32)])

# ---- ones_like / zeros_like / full ---------------------------------------------------------------

suite.case("ones_like", lambda x: torch.ones_like(x), [rand(3, 4)])
suite.case("zeros_like", lambda x: torch.zeros_like(x), [rand(2, 3, 4)])
suite.case("ones_like_dtype", lambda x: torch.ones_like(x, dtype=torch.int64), [rand(3)])
suite.case("zeros_like_int", lambda x: torch.zeros_like(x), [torch.arange(5)])
suite.case("ones_like_bool", lambda x: torch.ones_like(x, dtype=torch.bool), [rand(2, 2)])
suite.case("ones_like_0d", lambda x: torch.ones_like(x), [torch.tensor(3.0)])
suite.case("ones_like_channels_last",
           lambda x: torch.ones_like(x, memory_format=torch.channels_last), [rand(1, 2, 3, 4)])
suite.case("zeros_like_big", lambda x: torch.zeros_like(x) + x, [rand(64, 64, 32)])
suite.case("full_float", lambda x: torch.full((2, 3), 1.5) + x, [rand(2, 3)])
suite.case("full_int", lambda x: (torch.full((4,), 7), x), [rand(1)])
suite.case("full_bool", lambda x: (torch.full((2, 2), True, dtype=torch.bool), x), [rand(1)])
# torch.full infers bool from a bool fill in Python; the traced aten op itself gives int64
# (the graph records `true` without a dtype), so eager torch.full disagrees with its own trace.
E("full_bool_fill_no_dtype", lambda x: (aten.full.default([3], 1), x), [rand(1)],
  edit_args("aten.full.default", 1, True))
suite.case("full_f64", lambda x: (torch.full((3,), 0.1, dtype=torch.float64), x), [rand(1)])
suite.case("full_int32_from_float", lambda x: (torch.full((3,), -2.7, dtype=torch.int32), x),
           [rand(1)])
suite.case("full_uint8_wrap", lambda x: (torch.full((3,), -1, dtype=torch.uint8), x), [rand(1)])
suite.case("full_0d", lambda x: (torch.full([], 4.0), x), [rand(1)])
suite.case("full_huge", lambda x: (torch.full((2,), -3e38), x), [rand(1)])
suite.case("full_big_int64", lambda x: (torch.full((2,), 2 ** 62 + 1), x), [rand(1)])
suite.case("full_empty", lambda x: (torch.full((0, 3), 2.0), x), [rand(1)])

# ---- graphs that must be rejected ------------------------------------------------------------


def edit_out(target, **fields):
    def edit(g):
        value(g, node(g, target)["output"]).update(fields)
    return edit


def set_input(g, index, **fields):
    value(g, g["inputs"][index]["value"]).update(fields)


E("err_view_count", lambda x: x.view(6), [rand(2, 3)],
  edit_args("aten.view.default", 1, [7]), "does not match self [2, 3]")
E("err_view_two_infer", lambda x: x.view(-1, 2), [rand(2, 3)],
  edit_args("aten.view.default", 1, [-1, -1]), "only one dim can be inferred")
E("err_view_negative", lambda x: x.view(6), [rand(2, 3)],
  edit_args("aten.view.default", 1, [-2, 3]), "entry 0 is -2")
E("err_view_ambiguous", lambda x: x.view(0, 3), [rand(0, 3)],
  edit_args("aten.view.default", 1, [0, -1]), "ambiguous")
E("err_view_out_shape", lambda x: x.view(6), [rand(2, 3)],
  edit_out("aten.view.default", shape=[3, 2]), "contradicts")
E("err_view_huge", lambda x: x.view(6), [rand(2, 3)],
  edit_args("aten.view.default", 1, [2 ** 40, 2 ** 40]), "over 2^40")
E("err_reshape_alias_stride", lambda x: x.reshape(3, 2), [rand(2, 3)],
  as_reshape_alias([3, 2], [1, 3]), "plain reshape")
E("err_reshape_alias_count", lambda x: x.reshape(3, 2), [rand(2, 3)],
  as_reshape_alias([3, 3], [3, 1]), "does not match")
E("err_reshape_alias_stride_len", lambda x: x.reshape(3, 2), [rand(2, 3)],
  as_reshape_alias([3, 2], [1]), "one per dim")
E("err_reshape_alias_empty_count", lambda x: x.reshape(3, 0), [rand(0, 3)],
  as_reshape_alias([3, 1], [1, 1]), "does not match")
E("err_transpose_range", lambda x: x.transpose(0, 1), [rand(2, 3)],
  edit_args("aten.transpose.int", 2, 2), "dim1 is 2: out of range [-2, 1] for rank 2")
E("err_transpose_range_0d", lambda x: aten.transpose.int(x, 0, 0), [torch.tensor(1.0)],
  edit_args("aten.transpose.int", 1, 1), "dim0 is 1: out of range [-1, 0] for rank 0")
E("err_transpose_out_shape", lambda x: x.transpose(0, 1), [rand(2, 3)],
  edit_out("aten.transpose.int", shape=[2, 3]), "contradicts")
E("err_permute_repeat", lambda x: x.permute(1, 0), [rand(2, 3)],
  edit_args("aten.permute.default", 1, [1, -1]), "dim 1 repeats")
E("err_permute_range", lambda x: x.permute(1, 0), [rand(2, 3)],
  edit_args("aten.permute.default", 1, [2, 0]), "out of range for rank 2")
E("err_permute_len", lambda x: x.permute(1, 0), [rand(2, 3)],
  edit_args("aten.permute.default", 1, [1, 0, 2]), "one per dim")
E("err_expand_mismatch", lambda x: x.expand(2, 3), [rand(2, 3)],
  edit_args("aten.expand.default", 1, [2, 4]), "can only be expanded from 1")
E("err_expand_lead_minus1", lambda x: x.expand(2, 3), [rand(3)],
  edit_args("aten.expand.default", 1, [-1, 3]), "new leading dim")
E("err_expand_fewer", lambda x: x.expand(2, 3), [rand(2, 3)],
  edit_args("aten.expand.default", 1, [3]), "cannot drop dims")


def t_rank3(g):
    set_input(g, 0, shape=[2, 3, 4])


E("err_t_rank3", lambda x: x.t(), [rand(2, 3)], t_rank3, "rank <= 2")


def to_f16(g):
    n = node(g, "aten._to_copy.default")
    n["kwargs"]["dtype"] = {"dtype": "float16"}
    value(g, n["output"])["dtype"] = "float16"


E("err_to_f16", lambda x: x.double(), [rand(3)], to_f16, "no conversion")
E("err_to_device", lambda x: x.double(), [rand(3)],
  lambda g: node(g, "aten._to_copy.default")["kwargs"].update(device={"device": "cuda:0"}),
  "device 'cuda:0'")
E("err_to_layout", lambda x: x.double(), [rand(3)],
  lambda g: node(g, "aten._to_copy.default")["kwargs"].update(layout={"layout": "sparse_coo"}),
  "layout 'sparse_coo'")
E("err_clone_channels_last_rank", lambda x: x.clone(), [rand(2, 3)],
  lambda g: node(g, "aten.clone.default")["kwargs"].update(
      memory_format={"memory_format": "channels_last"}), "needs rank 4")
E("err_full_negative", lambda x: (torch.full((2, 3), 1.0), x), [rand(1)],
  edit_args("aten.full.default", 0, [2, -3]), "entry 1 is -3")
E("err_full_overflow", lambda x: (torch.full((2,), 1, dtype=torch.int8), x), [rand(1)],
  edit_args("aten.full.default", 1, 300), "fill value 300: cannot be converted to int8")
E("err_full_nan_int", lambda x: (torch.full((2,), 1, dtype=torch.int32), x), [rand(1)],
  edit_args("aten.full.default", 1, {"float": "nan"}), "cannot be converted")
E("err_full_out_dtype", lambda x: (torch.full((2,), 1), x), [rand(1)],
  edit_out("aten.full.default", dtype="float32"), "contradicts")
E("err_full_fill_kind", lambda x: (torch.full((2,), 1), x), [rand(1)],
  edit_args("aten.full.default", 1, [1]), "fill_value")

# a torch.tensor(...) constant is traced as aten.lift_fresh_copy of a stored constant
suite.case("lift_fresh_copy_constant", lambda x: x * torch.tensor([1.0, 2.0, 3.0, 4.0]),
           [torch.randn(3, 4)])


if __name__ == "__main__":
    suite.main()
