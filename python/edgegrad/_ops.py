"""What edgegrad's runtime runs, so that an export it could not run is refused at export.

The exporter checks what the graph *format* can hold (export.py); this module adds what the
*runtime* implements, so that a user learns at export, with the op and the module named, that
a model will not run, instead of from the loader later:

- ``RUNTIME_OPS``: every graph target edgegrad knows, by the source file of src/ops that
  implements it (its family): the list of src/ir/ops.def, in its order.
  tests/conformance/test_export_api.py checks that the two agree, both ways (a package
  installed with pip carries this copy, not the C sources).
- ``FLOAT_DTYPES``: the floating-point dtypes a family's ops take for their tensor arguments
  (what their eg_check_<op> accepts; integer arguments such as class targets and pooling
  indices are the ops' own business). A family not listed takes any.

``check_graph(gm, results, module_of)`` raises a one-line ValueError at the first node of the
traced GraphModule ``gm`` whose target is not in ``RUNTIME_OPS`` or whose floating-point
tensor argument has a dtype its family does not take. ``module_of(node)`` names the module the
node comes from (``"conv1 (Conv2d)"``) or returns None where that is not known.
"""
import operator

import torch

RUNTIME_OPS = {target: family for family, targets in {
    "tuple": ("getitem",),
    "conv": ("aten.convolution.default", "aten.convolution_backward.default"),
    "matmul": ("aten.mm.default", "aten.addmm.default", "aten.bmm.default", "aten.mv.default",
               "aten.dot.default"),
    "attention": ("aten._scaled_dot_product_flash_attention_for_cpu.default",
                  "aten._scaled_dot_product_flash_attention_for_cpu_backward.default",
                  "aten._safe_softmax.default"),
    "shape": ("aten.t.default", "aten.view.default", "aten._unsafe_view.default",
              "aten._reshape_alias.default", "aten.reshape.default", "aten.permute.default",
              "aten.transpose.int", "aten.expand.default", "aten.detach.default",
              "aten.alias.default", "aten.lift_fresh_copy.default", "aten.clone.default",
              "aten._to_copy.default", "aten.ones_like.default", "aten.zeros_like.default",
              "aten.full.default", "aten.scalar_tensor.default"),
    "elementwise": ("aten.relu.default", "aten.threshold_backward.default", "aten.add.Tensor",
                    "aten.add.Scalar", "aten.sub.Tensor", "aten.sub.Scalar", "aten.rsub.Scalar",
                    "aten.rsub.Tensor", "aten.mul.Tensor", "aten.mul.Scalar", "aten.div.Tensor",
                    "aten.div.Tensor_mode", "aten.div.Scalar", "aten.div.Scalar_mode",
                    "aten.neg.default", "aten.where.self"),
    "reduce": ("aten.sum.default", "aten.sum.dim_IntList", "aten.mean.default",
               "aten.mean.dim"),
    "loss": ("aten._log_softmax.default", "aten._log_softmax_backward_data.default",
             "aten._softmax.default", "aten._softmax_backward_data.default",
             "aten.nll_loss_forward.default", "aten.nll_loss_backward.default",
             "aten.nll_loss2d_forward.default", "aten.nll_loss2d_backward.default",
             "aten.mse_loss.default", "aten.mse_loss_backward.default"),
    "norm": ("aten.native_batch_norm.default", "aten.native_batch_norm_backward.default",
             "aten._native_batch_norm_legit_functional.default",
             "aten._native_batch_norm_legit_no_training.default",
             "aten._native_batch_norm_legit.default", "aten._native_batch_norm_legit.no_stats",
             "aten.native_group_norm.default", "aten.native_group_norm_backward.default",
             "aten.native_layer_norm.default", "aten.native_layer_norm_backward.default"),
    "pool": ("aten.max_pool2d_with_indices.default",
             "aten.max_pool2d_with_indices_backward.default", "aten.avg_pool2d.default",
             "aten.avg_pool2d_backward.default", "aten._adaptive_avg_pool2d.default",
             "aten._adaptive_avg_pool2d_backward.default", "aten.adaptive_max_pool2d.default",
             "aten.adaptive_max_pool2d_backward.default"),
    "resize": ("aten.upsample_bilinear2d.default", "aten.upsample_bilinear2d.vec",
               "aten.upsample_bilinear2d_backward.default", "aten.upsample_bilinear2d_backward.vec",
               "aten.upsample_nearest2d.default", "aten.upsample_nearest2d.vec",
               "aten.upsample_nearest2d_backward.default", "aten.upsample_nearest2d_backward.vec"),
    "activation": ("aten.hardtanh.default", "aten.hardtanh_backward.default",
                   "aten.sigmoid.default", "aten.sigmoid_backward.default", "aten.tanh.default",
                   "aten.tanh_backward.default", "aten.silu.default", "aten.silu_backward.default",
                   "aten.hardswish.default", "aten.hardswish_backward.default",
                   "aten.hardsigmoid.default", "aten.hardsigmoid_backward.default",
                   "aten.gelu.default", "aten.gelu_backward.default", "aten.clamp.default",
                   "aten.clamp_min.default", "aten.clamp_max.default"),
    "quant": ("aten.quantize_per_tensor.default", "aten.quantize_per_channel.default",
              "aten.dequantize.self"),
    "tensor": ("aten.cat.default", "aten.stack.default", "aten.split.Tensor",
               "aten.split_with_sizes.default", "aten.slice.Tensor", "aten.slice_backward.default",
               "aten.constant_pad_nd.default", "aten.select.int", "aten.select_backward.default",
               "aten.squeeze.dim", "aten.squeeze.default", "aten.unsqueeze.default",
               "aten.repeat.default", "aten.empty.memory_format", "aten.empty_like.default",
               "aten.fill.Scalar", "aten.new_zeros.default", "aten.zeros.default"),
}.items() for target in targets}

FLOAT_DTYPES = {
    "conv": ("float32",), "matmul": ("float32",), "norm": ("float32",), "pool": ("float32",),
    "loss": ("float32",), "activation": ("float32",), "resize": ("float32",),
    "attention": ("float32",),
    "elementwise": ("float32", "float64"),  # no float16 arithmetic
}
# ops whose rule is narrower than their family's
_OP_FLOAT_DTYPES = {"aten.where.self": ("float32",)}


def target_name(n):
    """The graph format's name of an FX call_function node's target."""
    return "getitem" if n.target is operator.getitem else str(n.target)


def check_graph(gm, results, module_of=lambda n: None):
    """Refuse the first node of ``gm`` the runtime cannot run; see the module docstring."""
    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        target = target_name(n)
        family = RUNTIME_OPS.get(target)
        if family is None:
            raise ValueError(f"{_where(n, module_of)}: op {target} is not one edgegrad's "
                             "runtime implements (src/ir/ops.def lists them): the graph "
                             "could not run")
        allowed = _OP_FLOAT_DTYPES.get(target, FLOAT_DTYPES.get(family))
        if allowed is None:
            continue
        for name, arg in _tensor_args(n):
            value = results.get(arg)
            if not isinstance(value, torch.Tensor) or not value.is_floating_point():
                continue
            dtype = str(value.dtype).replace("torch.", "")
            if dtype not in allowed:
                raise ValueError(f"{_where(n, module_of)}: {target} argument {name} is "
                                 f"{dtype}: edgegrad runs this op in {' or '.join(allowed)} "
                                 "only (convert the model and its inputs with .float() "
                                 "before exporting)")


def _where(n, module_of):
    module = module_of(n)
    return f"node {n.name}" + (f" in module {module}" if module else "")


def _tensor_args(n):
    """[(argument name, fx.Node)] of the node's tensor arguments; the name is the op schema's
    (``input``, ``weight``) where there is one, else the position."""
    schema = getattr(n.target, "_schema", None)
    names = [a.name for a in schema.arguments] if schema is not None else []
    found = []
    for i, a in enumerate(n.args):
        name = names[i] if i < len(names) else str(i)
        torch.fx.node.map_arg(a, lambda node, name=name: found.append((name, node)))
    for key, a in n.kwargs.items():
        torch.fx.node.map_arg(a, lambda node, key=key: found.append((key, node)))
    return found
