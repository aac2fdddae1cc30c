"""Export a torch.export joint forward+backward program to edgegrad's graph format, version 1.

The format is specified in docs/graph-format.md; usage in docs/export.md ("A torch.export
training step").

Contract:
- ``export_joint(ep, path, *, loss_index=0, input_names=None)`` takes the ``ExportedProgram``
  that ``torch.export.export`` returns for a module-with-loss (the program itself, *not* yet
  joint), derives the joint forward+backward graph as
  ``torch.export.experimental._export_forward_backward`` does, but with PyTorch's core ATen
  decomposition table minus every op in ``KEEP_WHOLE`` (ops edgegrad implements, kept whole so
  that e.g. BatchNorm's, ReLU's and the loss's backwards stay one node each), and writes
  ``path + ".json"`` and ``path + ".safetensors"`` as ``export.export_training_step`` does,
  with the same names and roles (docs/export.md):
    inputs   user inputs (``input_names``, default the forward's parameter names as the
             program's placeholders spell them), then each trainable parameter (one with a
             GRADIENT_TO_PARAMETER output) and then each mutated buffer (a BUFFER_MUTATION
             output), named by their FQN with dots replaced by '_' (``m.conv1.weight`` ->
             ``m_conv1_weight``), in the program's input order (= named_parameters() /
             named_buffers() order);
    statics  frozen parameters, buffers the step only reads and lifted constants, under their
             dotted FQN / constant name;
    outputs  ``loss``, ``grad_<param>`` per trainable parameter, ``grad_<input>`` per user
             input with a GRADIENT_TO_USER_INPUT output, ``new_<buffer>`` per mutated buffer,
             then the other user outputs ``out0``, ``out1``, ... in the forward's order.
  Every role comes from ``graph_signature`` (input_specs / output_specs), never from position,
  and is recorded in the file (docs/export.md, "The roles contract"): trainable parameters are
  "parameter" inputs with their "gradient" outputs, mutated buffers "buffer" inputs with their
  "buffer_update" outputs, the loss "loss"; user inputs "data" (or "label": an nll_loss's
  target), Dropout masks "random"; an input's gradient and the other user outputs "output".
  Each trainable parameter and state buffer names its ``state_dict`` entry (init file,
  ``edgegrad train --out``) as the plain model does: the FQN without ``state_dict_prefix``
  (default: the wrapper's attribute, where one submodule holds every parameter and buffer).
- Random draws become inputs ``bernoulli_<k>`` after all others, as in export.py's make_fx
  path (``_RandomMasks``): ``native_dropout`` (Dropout) is rewritten to eager PyTorch's CPU
  dropout on the mask input, ``bernoulli.p`` (Dropout2d) reads it; any other random op is
  refused.
- The graph holds the joint program's nodes, except the identities ``alias``, ``detach`` and
  ``lift_fresh_copy``, whose uses read their argument, and ``_assert_tensor_metadata`` checks
  (they ran at trace time). Values' dtypes and shapes are recorded by
  running that graph on ``ep.example_inputs`` with pure semantics (``_functional.record``).
- The ``reference`` block is computed independently of the joint graph: ``ep.module()`` run
  eagerly on a copy of the example inputs, ``torch.autograd.grad`` of its output ``loss_index``
  for the trainable parameters (and user inputs with a gradient), buffers after the run.
- Refused with a one-line ValueError: torch without ``torch.export`` (Debian's 1.13), a program
  that is already joint, a signature kind this mapping does not know (or cannot hold: input or
  parameter mutations, tokens, custom objects), a loss that is not a floating-point scalar, a
  parameter whose gradient is None, and everything ``export.py`` refuses (the runtime's ops
  and dtypes included; the module named from the node's ``nn_module_stack`` where torch kept
  one).
"""
import copy
import importlib
import operator
import warnings

import torch

from . import export as _export_mod
from ._functional import _BERNOULLI, _BLANKS, _RANDOM, Trace, record, replay_draws

# Ops edgegrad implements (src/ir/ops.def) that PyTorch's core ATen table would decompose
# into primitives edgegrad lacks (unsqueeze/where/scatter/gather/...). Removed from the table, so
# the joint graph keeps them whole. tests/conformance/test_joint_export.py checks that each is in
# ops.def. Ops the table never touches (convolution, relu, ...) are listed where edgegrad has
# them so the list reads as "keep whatever edgegrad knows".
KEEP_WHOLE = (
    "aten.convolution.default", "aten.convolution_backward.default",
    "aten.mm.default", "aten.addmm.default", "aten.t.default",
    "aten._scaled_dot_product_flash_attention_for_cpu.default", "aten._safe_softmax.default",
    "aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
    "aten.permute.default", "aten.expand.default", "aten.clone.default",
    "aten._to_copy.default", "aten.ones_like.default", "aten.zeros_like.default",
    "aten.full.default", "aten.zeros.default", "aten.new_zeros.default",
    "aten.empty_like.default", "aten.fill.Scalar",
    "aten.relu.default", "aten.threshold_backward.default",
    "aten.add.Tensor", "aten.add.Scalar", "aten.sub.Tensor", "aten.sub.Scalar",
    "aten.rsub.Scalar", "aten.mul.Tensor", "aten.mul.Scalar", "aten.div.Tensor",
    "aten.div.Scalar", "aten.neg.default",
    "aten.sum.default", "aten.sum.dim_IntList", "aten.mean.default", "aten.mean.dim",
    "aten._log_softmax.default", "aten._log_softmax_backward_data.default",
    "aten.nll_loss_forward.default", "aten.nll_loss_backward.default",
    "aten.mse_loss.default", "aten.mse_loss_backward.default",
    "aten.native_batch_norm.default", "aten.native_batch_norm_backward.default",
    "aten.native_group_norm.default", "aten.native_group_norm_backward.default",
    "aten.max_pool2d_with_indices.default", "aten.max_pool2d_with_indices_backward.default",
    "aten.avg_pool2d.default", "aten.avg_pool2d_backward.default",
    "aten._adaptive_avg_pool2d.default", "aten._adaptive_avg_pool2d_backward.default",
    "aten.adaptive_max_pool2d.default", "aten.adaptive_max_pool2d_backward.default",
    "aten.hardtanh.default", "aten.hardtanh_backward.default",
    "aten.sigmoid.default", "aten.sigmoid_backward.default",
    "aten.tanh.default", "aten.tanh_backward.default",
    "aten.silu.default", "aten.silu_backward.default",
    "aten.cat.default", "aten.split.Tensor", "aten.split_with_sizes.default",
    "aten.slice.Tensor", "aten.slice_backward.default", "aten.select.int",
    "aten.select_backward.default", "aten.squeeze.dim", "aten.squeeze.default",
    "aten.unsqueeze.default", "aten.repeat.default",
)

# Identities in a graph of immutable values (export.py's make_fx path drops alias and
# lift_fresh_copy; torch.export's joint graph also leaves detach chains).
_IDENTITY_TARGETS = ("aten.alias.default", "aten.detach.default", "aten.lift_fresh_copy.default")
# Checks of a traced value's metadata that ran when torch traced the program; no result.
_ASSERTIONS = ("aten._assert_tensor_metadata.default",)
_NATIVE_DROPOUT = "aten::native_dropout"

# The signature kinds this mapping knows; any other kind is refused by name.
_INPUT_KINDS = ("USER_INPUT", "PARAMETER", "BUFFER", "CONSTANT_TENSOR")
_OUTPUT_KINDS = ("LOSS_OUTPUT", "GRADIENT_TO_PARAMETER", "GRADIENT_TO_USER_INPUT",
                 "BUFFER_MUTATION", "USER_OUTPUT")


def export_joint(ep, path, *, loss_index=0, input_names=None, state_dict_prefix=None):
    """Export the joint forward+backward of ``ep`` to ``path.json`` + ``path.safetensors``.

    ``ep``: ``torch.export.export(module_with_loss, example_args, strict=False)``, whose
    output ``loss_index`` (among the forward's flattened outputs) is the scalar loss; e.g. a
    module returning ``(F.cross_entropy(out, y), out.detach())``. The parameters that require
    grad are trained; the module's train/eval mode is the one it was exported in.
    ``input_names``: one unique name per user input (default: the forward's parameter names).
    ``state_dict_prefix``: what the ``state_dict`` names of the trained parameters and state
    buffers (``STEM.init.safetensors``, ``edgegrad train --out``) leave out of torch's FQNs,
    so that they load into the model itself. None (the default): the wrapper's attribute
    (``"m."``) when every parameter and buffer of the program lies in that one submodule,
    else nothing; ``""``: the FQNs as they are; another string: that prefix, which every
    trained parameter and state buffer must carry.
    Returns an ExportResult; see the module docstring for names, order and refusals.
    """
    _require_torch_export()
    if not isinstance(ep, torch.export.ExportedProgram):
        raise ValueError(f"export_joint takes a torch.export.ExportedProgram, not "
                         f"{type(ep).__name__}")
    _check_not_joint(ep)
    joint = _joint_program(ep, loss_index)
    layout = _Layout(joint, input_names)
    gm = joint.graph_module
    _arrange(gm, layout)
    args = [layout.example[name] for name in layout.arg_names]
    draws = _RandomMasks(gm, args).run()
    masks = [mask for _, _, mask in draws]
    reference = _eager_reference(ep, layout, loss_index, masks)
    results = record(gm, _clones(args + masks),
                     layout.arg_names + [name for name, _, _ in draws])
    _check_loss(results, gm)
    trace = Trace(gm, results, layout.state_names, draws)
    flat = _export_mod._flat
    strip = _state_dict_prefix(joint, layout, state_dict_prefix)
    state_dict = {flat(name): name[len(strip):] for name in layout.trainable + layout.state}
    roles = _export_mod._Roles.of_step([flat(t) for t in layout.trainable],
                                       [flat(t) for t in layout.state])
    return _export_mod._export(trace, None, args, layout.arg_names, layout.static,
                               layout.output_names, path, reference=reference,
                               state_dict=state_dict, module_of=_module_of, roles=roles)


# --------------------------------------------------------------------------------------------
# the joint program


def _require_torch_export():
    try:
        ok = hasattr(importlib.import_module("torch.export"), "ExportedProgram")
    except ImportError:  # torch 1.13
        ok = False
    if not ok:
        raise ValueError(f"export_joint needs torch.export (PyTorch 2.x); torch "
                         f"{torch.__version__} has none: use export_training_step")


def _kind(spec):
    return spec.kind.name


def _check_not_joint(ep):
    sig = ep.graph_signature
    if sig.backward_signature is not None:
        raise ValueError("export_joint takes the program torch.export.export returns; this one "
                         "is already joint (_export_forward_backward): pass the original")
    for spec in sig.output_specs:
        if _kind(spec) != "USER_OUTPUT":
            raise ValueError(f"output {spec.arg.name} of the program is {_kind(spec)}: "
                             "export_joint takes the program torch.export.export returns "
                             "(training IR, before run_decompositions)")


def _decomposition_table():
    """PyTorch's core ATen decompositions without the ops edgegrad implements."""
    from torch._decomp import core_aten_decompositions

    table = core_aten_decompositions()
    for target in KEEP_WHOLE:
        op = _overload(target)
        if op in table:
            table.pop(op)
    return table


def _overload(target):
    _, name, overload = target.split(".")
    return getattr(getattr(torch.ops.aten, name), overload)


def _joint_program(ep, loss_index):
    """The joint program, as torch.export.experimental._export_forward_backward makes it but
    with our table. PRIVATE API: torch.export.exported_program._decompose_exported_program,
    written against torch 2.13.0 (its keyword arguments are those _export_forward_backward
    passes there)."""
    n_outputs = len(ep.graph_signature.output_specs)
    if type(loss_index) is not int or not 0 <= loss_index < n_outputs:
        raise ValueError(f"loss_index {loss_index!r}: the program has {n_outputs} outputs")
    try:
        from torch.export.exported_program import _decompose_exported_program
    except ImportError as e:
        raise ValueError(f"torch {torch.__version__} has no torch.export.exported_program."
                         "_decompose_exported_program (private API export_joint was written "
                         "against in torch 2.13.0)") from e
    _check_loss_spec(ep, loss_index)
    try:
        return _decompose_exported_program(
            ep, cia_to_decomp={}, python_decomp_table=_decomposition_table(),
            joint_loss_index=loss_index, decompose_custom_triton_ops=False)
    except RuntimeError as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise ValueError(f"torch could not derive the joint program: {first}") from e


def _check_loss_spec(ep, loss_index):
    """Before tracing: the loss output is a floating-point scalar (its traced 'val') and some
    parameter requires grad (torch.export's joint graph differentiates parameters only)."""
    spec = ep.graph_signature.output_specs[loss_index]
    nodes = {n.name: n for n in ep.graph.nodes}
    val = nodes[spec.arg.name].meta.get("val") if spec.arg.name in nodes else None
    if isinstance(val, torch.Tensor) and (val.dim() != 0 or not val.is_floating_point()):
        raise ValueError(f"output {loss_index} ({spec.arg.name}) is {val.dtype}"
                         f"{list(val.shape)}: the loss must be a floating-point scalar")
    params = [s.target for s in ep.graph_signature.input_specs if _kind(s) == "PARAMETER"]
    if not any(ep.state_dict[t].requires_grad for t in params if t in ep.state_dict):
        raise ValueError("no parameter of the program requires grad: nothing to train")


# --------------------------------------------------------------------------------------------
# mapping the signature to the format's names


class _Layout:
    """Every placeholder and output of the joint program, by its signature spec, with its
    name in the file: ``arg_names`` (placeholder order of the file: user inputs, trainable
    parameters, state buffers, then statics), ``static``, ``state_names``, ``output_nodes``
    (fx node names in the file's output order) and ``output_names``; ``example`` maps each
    argument name to its example tensor; ``trainable`` / ``state`` / ``input_grads`` hold the
    FQNs / user input names that get ``grad_`` / ``new_`` outputs."""

    def __init__(self, joint, input_names):
        sig = joint.graph_signature
        for spec in sig.input_specs:
            if _kind(spec) not in _INPUT_KINDS:
                raise ValueError(f"input {spec.arg.name}: signature kind {_kind(spec)} is not "
                                 f"one export_joint maps ({', '.join(_INPUT_KINDS)})")
        for spec in sig.output_specs:
            if _kind(spec) not in _OUTPUT_KINDS:
                raise ValueError(f"output {spec.arg.name}: signature kind {_kind(spec)} is not "
                                 f"one export_joint maps ({', '.join(_OUTPUT_KINDS)})")
        outputs = {kind: [s for s in sig.output_specs if _kind(s) == kind]
                   for kind in _OUTPUT_KINDS}
        if len(outputs["LOSS_OUTPUT"]) != 1:
            raise ValueError(f"the joint program has {len(outputs['LOSS_OUTPUT'])} loss "
                             "outputs: export_joint needs exactly one")
        grad_of = {s.target: s for s in outputs["GRADIENT_TO_PARAMETER"]}
        new_of = {s.target: s for s in outputs["BUFFER_MUTATION"]}
        input_grad_of = {s.target: s for s in outputs["GRADIENT_TO_USER_INPUT"]}
        by_kind = {kind: [s for s in sig.input_specs if _kind(s) == kind]
                   for kind in _INPUT_KINDS}
        users = self._user_inputs(joint, by_kind["USER_INPUT"], input_names)
        self.trainable = [s.target for s in by_kind["PARAMETER"] if s.target in grad_of]
        self.state = [s.target for s in by_kind["BUFFER"] if s.target in new_of]
        if not self.trainable and not input_grad_of:
            raise ValueError("the joint program has no gradient output: no parameter of the "
                             "module requires grad")
        flat = _export_mod._flat
        names = {}  # placeholder name -> file name
        self.example = {}
        for spec, (name, tensor) in zip(by_kind["USER_INPUT"], users):
            names[spec.arg.name] = name
            self.example[name] = tensor
        for spec in by_kind["PARAMETER"] + by_kind["BUFFER"] + by_kind["CONSTANT_TENSOR"]:
            runtime = spec.target in self.trainable or spec.target in self.state
            name = flat(spec.target) if runtime else spec.target
            names[spec.arg.name] = name
            self.example[name] = _state_tensor(joint, spec)
        order = [s.arg.name for s in by_kind["USER_INPUT"]]
        order += [s.arg.name for s in by_kind["PARAMETER"] if s.target in self.trainable]
        order += [s.arg.name for s in by_kind["BUFFER"] if s.target in self.state]
        order += [s.arg.name for s in sig.input_specs if s.arg.name not in order]
        self.placeholders = order
        self.arg_names = [names[p] for p in order]
        _export_mod._check_unique(self.arg_names, "argument")
        self.static = {names[p] for p in order[len(users) + len(self.trainable)
                                                + len(self.state):]}
        self.state_names = [flat(t) for t in self.state]
        self.input_grads = [spec.arg.name for spec in by_kind["USER_INPUT"]
                            if spec.arg.name in input_grad_of]
        user_names = dict(zip([s.arg.name for s in by_kind["USER_INPUT"]],
                              [name for name, _ in users]))
        entries = [("loss", outputs["LOSS_OUTPUT"][0])]
        entries += [("grad_" + flat(t), grad_of[t]) for t in self.trainable]
        entries += [("grad_" + user_names[p], input_grad_of[p]) for p in self.input_grads]
        entries += [("new_" + flat(t), new_of[t]) for t in self.state]
        entries += [(f"out{i}", s) for i, s in enumerate(outputs["USER_OUTPUT"])]
        for name, spec in entries:
            if getattr(spec.arg, "name", None) is None or \
                    type(spec.arg).__name__ != "TensorArgument":
                raise ValueError(f"output {name} ({_kind(spec)} {spec.target}) is "
                                 f"{spec.arg!r}, not a tensor: a parameter without gradient "
                                 "must not require grad")
        self.output_names = [name for name, _ in entries]
        self.output_nodes = [spec.arg.name for _, spec in entries]
        # output_specs align with the output node's arguments (the signature's own contract)
        self.spec_outputs = [s.arg.name for s in sig.output_specs]

    @staticmethod
    def _user_inputs(joint, specs, input_names):
        """[(name, example tensor)] per USER_INPUT spec, in order."""
        if joint.example_inputs is None:
            raise ValueError("the program has no example_inputs: export it with "
                             "torch.export.export(module, example_args)")
        leaves = torch.utils._pytree.tree_leaves(joint.example_inputs)
        if len(leaves) != len(specs):
            raise ValueError(f"{len(leaves)} example inputs for {len(specs)} USER_INPUT specs")
        names = [s.arg.name for s in specs] if input_names is None else \
            [str(n) for n in input_names]
        if len(names) != len(specs):
            raise ValueError(f"{len(names)} input_names for {len(specs)} user inputs")
        for spec, name, leaf in zip(specs, names, leaves):
            if type(spec.arg).__name__ != "TensorArgument" or \
                    not isinstance(leaf, torch.Tensor):
                raise ValueError(f"user input {name} is {type(leaf).__name__}: graph inputs "
                                 "must be tensors (close over other values in the module)")
        return list(zip(names, leaves))


def _state_tensor(joint, spec):
    """The value of a parameter, buffer or lifted constant placeholder."""
    if spec.target in joint.state_dict:
        tensor = joint.state_dict[spec.target]
    elif spec.target in joint.constants:
        tensor = joint.constants[spec.target]
    else:
        raise ValueError(f"input {spec.arg.name} ({_kind(spec)} {spec.target}): no tensor in "
                         "the program's state_dict or constants")
    if not isinstance(tensor, torch.Tensor):
        raise ValueError(f"input {spec.arg.name} ({_kind(spec)} {spec.target}) is a "
                         f"{type(tensor).__name__}, not a tensor")
    return tensor.detach()


def _clones(args):
    return [a.detach().clone(memory_format=torch.contiguous_format) for a in args]


# --------------------------------------------------------------------------------------------
# the graph in the file's order, identities dropped


def _arrange(gm, layout):
    """Reorder placeholders and outputs as ``layout`` says; drop the identities."""
    graph = gm.graph
    nodes = {n.name: n for n in graph.nodes}
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    if sorted(n.name for n in placeholders) != sorted(layout.placeholders):
        raise ValueError("the joint program's placeholders do not match its input_specs")
    output = graph.output_node()
    returned = list(output.args[0]) if isinstance(output.args[0], (tuple, list)) \
        else [output.args[0]]
    if [getattr(r, "name", None) for r in returned] != layout.spec_outputs:
        raise ValueError("the joint program's outputs do not match its output_specs")
    for name in reversed(layout.placeholders):  # each moved to the front
        first = next(iter(graph.nodes))
        if first is not nodes[name]:
            first.prepend(nodes[name])
    output.args = (tuple(nodes[name] for name in layout.output_nodes),)
    identities = {_overload(t) for t in _IDENTITY_TARGETS}
    assertions = {_overload(t) for t in _ASSERTIONS}
    for n in list(graph.nodes):
        if n.op == "call_function" and n.target in identities:
            n.replace_all_uses_with(n.args[0])
            graph.erase_node(n)
        elif n.op == "call_function" and n.target in assertions and not n.users:
            graph.erase_node(n)
    graph.lint()
    gm.recompile()


def _check_loss(results, gm):
    loss_node = gm.graph.output_node().args[0][0]
    loss = results[loss_node]
    if not isinstance(loss, torch.Tensor) or loss.dim() != 0 or not loss.is_floating_point():
        shown = f"{loss.dtype}{list(loss.shape)}" if isinstance(loss, torch.Tensor) \
            else type(loss).__name__
        raise ValueError(f"loss output ({loss_node.name}) is {shown}: the loss must be a "
                         "floating-point scalar")


# --------------------------------------------------------------------------------------------
# random draws: Dropout masks become inputs


class _RandomMasks:
    """Makes each Bernoulli draw of the arranged joint graph ``gm`` a graph input, as
    ``_functional.functional_trace`` does for a make_fx trace: ``bernoulli_<k>`` in graph
    order, appended after the other placeholders, holding a 0/1 mask of the dtype and shape
    of the draw, its example value drawn once with torch's generator seeded 0 (the caller's
    state kept). ``run()`` returns [(name, p, mask)], ``p`` the probability of a one (None
    where a tensor gives it). Two kinds of draw:

    - ``bernoulli.p(blank, p)`` (``Dropout2d``'s, StochasticDepth's): its readers read the
      mask input;
    - ``native_dropout(x, p, train=True)`` (``Dropout``'s): becomes what eager PyTorch's CPU
      dropout computes, ``x * (mask / (1 - p))`` with ``mask`` drawn with probability
      ``1 - p``; a reader of its boolean mask (the backward) reads ``mask`` as bool.

    Any other random op is refused by name (its numbers could not be reproduced)."""

    def __init__(self, gm, args):
        self.gm, self.graph, self.args = gm, gm.graph, args

    def run(self):
        draws = [n for n in self.graph.nodes if self._kind(n) is not None]
        if not draws:
            return []
        values = self._draw(draws)
        last = [n for n in self.graph.nodes if n.op == "placeholder"][-1]
        found = []
        for k, n in enumerate(draws):
            name = f"bernoulli_{k}"
            with self.graph.inserting_after(last):
                last = self.graph.placeholder(name)
            if self._kind(n) == "bernoulli":
                found.append(self._bernoulli(n, last, name, values[n]))
            else:
                found.append(self._dropout(n, last, name, values[n]))
        self.graph.lint()
        self.gm.recompile()
        return found

    @staticmethod
    def _kind(n):
        schema = getattr(n.target, "_schema", None) if n.op == "call_function" else None
        name = schema.name if schema is not None else None
        if name in _BERNOULLI:
            return "bernoulli"
        if name == _NATIVE_DROPOUT:
            if len(n.args) > 2 and n.args[2] is True:
                return "dropout"
            raise ValueError(f"node {n.name} ({n.target}): train={n.args[2:3]}: only a "
                             "training-mode dropout can become a mask input")
        if name in _RANDOM:
            raise ValueError(f"node {n.name} ({n.target}) draws random numbers: only "
                             "Bernoulli draws (Dropout, StochasticDepth) can become graph "
                             "inputs; other random ops cannot be reproduced")
        return None

    def _draw(self, draws):
        """One run of the graph with the generator seeded 0: each draw's 0/1 mask."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            results = record(self.gm, _clones(self.args))
        values = {}
        for n in draws:
            if self._kind(n) == "bernoulli":
                values[n] = results[n].detach().clone()
            else:  # (output, bool mask): the mask in the input's dtype
                values[n] = results[n][1].to(results[n.args[0]].dtype)
        return values

    def _bernoulli(self, n, mask, name, value):
        blank = n.args[0]
        p = n.args[1] if len(n.args) > 1 else n.kwargs.get("p")
        n.replace_all_uses_with(mask)
        self.graph.erase_node(n)
        if isinstance(blank, torch.fx.Node) and not blank.users and \
                getattr(blank.target, "_schema", None) is not None and \
                blank.target._schema.name in _BLANKS:
            self.graph.erase_node(blank)
        p = float(p) if isinstance(p, (int, float)) and not isinstance(p, bool) else None
        return name, p, value

    def _dropout(self, n, mask, name, value):
        x, p = n.args[0], float(n.args[1])
        aten = torch.ops.aten
        with self.graph.inserting_before(n):
            noise = self.graph.call_function(aten.div.Scalar, (mask, 1.0 - p))
            out = self.graph.call_function(aten.mul.Tensor, (x, noise))
            flags = self.graph.call_function(aten._to_copy.default, (mask,),
                                             {"dtype": torch.bool})
        for user in list(n.users):
            if user.target is not operator.getitem or user.args[1] not in (0, 1):
                raise ValueError(f"node {user.name} reads {n.name} ({n.target}) other than "
                                 "by its output or mask")
            user.replace_all_uses_with(out if user.args[1] == 0 else flags)
            self.graph.erase_node(user)
        self.graph.erase_node(n)
        if not flags.users:
            self.graph.erase_node(flags)
        return name, 1.0 - p, value


# --------------------------------------------------------------------------------------------
# state_dict names and module names


def _state_dict_prefix(joint, layout, prefix):
    """The prefix the state_dict names leave out (see export_joint's ``state_dict_prefix``)."""
    named = layout.trainable + layout.state
    if prefix is not None:
        prefix = str(prefix)
        outside = [name for name in named if not name.startswith(prefix)]
        if outside:
            raise ValueError(f"state_dict_prefix {prefix!r}: {outside[0]} does not start "
                             "with it: give a prefix every trained parameter and state "
                             "buffer carries, or '' for none")
        return prefix
    targets = [s.target for s in joint.graph_signature.input_specs
               if _kind(s) in ("PARAMETER", "BUFFER")]
    heads = {t.split(".", 1)[0] for t in targets}
    if len(heads) != 1 or not all("." in t for t in targets):
        return ""
    return heads.pop() + "."


def _module_of(n):
    """The module a joint graph node comes from, as torch.export recorded it, or None."""
    stack = n.meta.get("nn_module_stack") or {}
    if not stack:
        return None
    fqn, kind = list(stack.values())[-1]
    kind = getattr(kind, "__name__", str(kind)).rsplit(".", 1)[-1]
    return f"{fqn or 'the module'} ({kind})"


# --------------------------------------------------------------------------------------------
# the reference, from eager PyTorch


def _eager_reference(ep, layout, loss_index, masks=()):
    """PyTorch's values of the file's outputs: ``ep.module()`` run eagerly (on copies), its
    Bernoulli draws (Dropout's) answered by ``masks`` in order, the loss's gradients by
    torch.autograd.grad, buffers after the run."""
    with warnings.catch_warnings():  # torch 2.13's pytree deprecation notes on deepcopy
        warnings.simplefilter("ignore", FutureWarning)
        mod = copy.deepcopy(ep.module())
    params = dict(mod.named_parameters(remove_duplicate=False))
    buffers = dict(mod.named_buffers(remove_duplicate=False))
    for name, p in params.items():
        p.requires_grad_(name in layout.trainable)
    leaves, spec = torch.utils._pytree.tree_flatten(ep.example_inputs)
    leaves = [x.detach().clone() for x in leaves]
    user_names = [s.arg.name for s in ep.graph_signature.input_specs
                  if _kind(s) == "USER_INPUT"]
    for name, x in zip(user_names, leaves):
        x.requires_grad_(name in layout.input_grads)
    args, kwargs = torch.utils._pytree.tree_unflatten(leaves, spec)
    with torch.enable_grad():
        out = torch.utils._pytree.tree_leaves(replay_draws(mod, list(masks))(*args, **kwargs))
        loss = out[loss_index]
        wrt = [params[name] for name in layout.trainable]
        wrt += [x for name, x in zip(user_names, leaves) if name in layout.input_grads]
        grads = torch.autograd.grad(loss, wrt)
    result = [loss.detach()] + [g.detach() for g in grads]
    result += [buffers[name].detach() for name in layout.state]
    result += [t.detach() for i, t in enumerate(out) if i != loss_index]
    return result
