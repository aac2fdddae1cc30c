"""Export a PyTorch function or training step to edgegrad's graph format, version 1.

The format is specified in docs/graph-format.md; usage in docs/export.md.

Contract:
- ``export_function(fn, example_args, path, ...)`` traces ``fn(*example_args)`` into a
  functional graph of ATen ops (``_functional.functional_trace``: ``make_fx`` with real
  tensors, then ``functionalize``) and writes ``path + ".json"`` (the graph) and
  ``path + ".safetensors"`` (statics: frozen arguments and traced tensor constants). ``path`` is
  a stem: the two suffixes are always appended, never substituted.
- ``export_training_step(model, loss_fn, example_inputs, path, ...)`` builds the step
  ``loss = loss_fn(model(input), target); grads = autograd.grad(loss, trainable)`` with the
  model's parameters and buffers as arguments, and exports it. Buffers the step writes (e.g.
  BatchNorm running statistics in train mode) are state: runtime inputs ``B`` with outputs
  ``new_B``; buffers it only reads are statics, like frozen parameters.
- Every input and output records its ``"role"`` in a training step (docs/export.md, "The
  roles contract"): inputs "data", "label" (the target an nll_loss / cross_entropy reads: found
  in the traced graph), "parameter", "buffer" or "random" (a random draw); outputs "loss",
  "gradient" and "buffer_update" (each with ``"of"``: the parameter / buffer input it belongs
  to) or "output". ``export_training_step`` and ``export_joint`` know them; ``export_function``
  takes them as ``input_roles`` / ``output_roles`` (default: data, label and random found as
  above; "output"). Names (``grad_P``, ``new_B``) are for readers only: the runtime reads the
  roles.
- The graph holds what the functionalized trace holds, node for node: targets, positional and
  keyword arguments, tuple results with ``null`` for ``None`` elements, ``getitem`` nodes (a
  ``getitem`` of a ``None`` element has ``"output": null``), except that writes are made
  explicit: ``copy_`` nodes become state outputs, ``alias``/``lift_fresh_copy`` are dropped (an
  identity in a graph of immutable values) and training-mode ``native_batch_norm``'s hidden
  running-statistics update becomes nodes. Every op in a file is pure. Each getitem of a present
  element defines a new tensor value; the tuple's element values are defined by the node that
  made the tuple.
- Whatever the format cannot represent is refused with a ValueError naming the node or output
  at fault: non-tensor or ``None`` outputs, argument types outside the format's ARG table (e.g.
  strings), dtypes outside its list, ranks above 8, writes into arguments that are not state,
  writes no trace declares, views whose strides are not those of a plain reshape, BatchNorm
  with ``momentum=None`` in train mode, quantized statics. So is a graph edgegrad's runtime
  could not run (``_ops.check_graph``: an op it lacks, a dtype an op does not take), naming the
  module whose forward runs the node where it is known (``_module_locator``), unless
  ``export_function(..., check_runtime=False)``. Nothing is written when a check fails.
- Quantized models are exported in QDQ form (``torch.quantize_per_tensor`` /
  ``quantize_per_channel`` followed by ``dequantize``; ``edgegrad.quantize.qdq`` wraps a
  model's convolutions and linears so): a quantized value is written with its storage dtype
  (quint8 -> uint8, qint8 -> int8, qint32 -> int32), and so is a quantized dtype argument.
- Both files are written atomically (temporary file + ``os.replace``), weights first.
"""
import copy
import inspect
import json
import math
import operator
import os
import warnings

import torch
import torch.fx

from . import safetensors
from ._files import write_atomic
from ._functional import functional_trace, replay_draws
from ._ops import check_graph
from ._version import FORMAT_VERSION

MAX_RANK = 8

_DTYPE_NAMES = {
    torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
    torch.int64: "int64", torch.int32: "int32", torch.int8: "int8", torch.uint8: "uint8",
    torch.bool: "bool",
    # quantized tensors are their integer storage; scale and zero point are the arguments of
    # the quantize node that made them (docs/graph-format.md, "Quantized models")
    torch.quint8: "uint8", torch.qint8: "int8", torch.qint32: "int32",
}
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
# Views that carry explicit strides: dense values can express them only as plain reshapes.
_STRIDED_VIEWS = ("aten._reshape_alias.default", "aten.as_strided.default")


class ExportResult:
    """What an export wrote: ``json_path``, ``weights_path`` and the ``graph`` dict itself;
    ``init_path``: for a training step, ``STEM.init.safetensors``, the trainable parameters'
    and state buffers' values at export under their state_dict names (``edgegrad train
    --init``), else None; ``eval_path``: ``STEM.eval.json`` where an evaluation graph was
    written (``export_training_step(..., eval_graph=True)``), else None;
    ``draws``: the example value of each random input (``bernoulli_<k>``: a Dropout or
    StochasticDepth mask), by input name."""

    def __init__(self, json_path, weights_path, graph, draws=None, init_path=None,
                 eval_path=None):
        self.json_path, self.weights_path, self.graph = json_path, weights_path, graph
        self.draws = dict(draws or {})
        self.init_path, self.eval_path = init_path, eval_path

    def __repr__(self):
        return f"ExportResult({self.json_path!r}, {self.weights_path!r})"


# --------------------------------------------------------------------------------------------
# public API


def export_function(fn, example_args, path, *, arg_names=None, output_names=None,
                    static_args=(), check_runtime=True, input_roles=None, output_roles=None):
    """Trace ``fn(*example_args)`` and write ``path.json`` + ``path.safetensors``.

    ``example_args``: tensors only (the format's inputs are tensors); they are traced as dense
    contiguous copies, so ``fn`` never sees (or mutates) the caller's tensors.
    ``arg_names``: one unique name per argument; default: ``fn``'s parameter names, ``argI``
    for ``*args``. ``static_args``: names of arguments frozen into the safetensors file (listed
    in "statics"); all other arguments are runtime "inputs", in call order.
    ``output_names``: one unique name per returned tensor; default ``out0``, ``out1``, ...
    ``fn`` must return a tensor or a tuple/list of tensors. The graph is functionalized
    (in-place ops become functional ones); ``fn`` may not write into its arguments.
    ``check_runtime``: refuse a graph edgegrad's runtime could not run (an op it lacks, a
    dtype an op does not take: ``_ops.check_graph``); False writes any graph the format can
    hold (e.g. to test the runtime's own refusals).
    ``input_roles``: ``{input name: role}`` ("data", "label", "parameter", "buffer", "random")
    for the inputs whose role is not found (default: "label" for the target an nll_loss reads,
    "random" for a random draw, else "data"); ``output_roles``: ``{output name: role}`` with
    role "loss" or "output", or ``(role, input name)`` for a "gradient" of a parameter input or
    a "buffer_update" of a buffer input (default "output"). A hand-written training step names
    its parameters and gradients so; the roles' rules (docs/export.md) are checked at export.
    Returns an ExportResult. Raises ValueError for anything the format cannot represent.
    """
    args = _copy_args(example_args)
    names = _arg_names(fn, args, arg_names)
    static = _static_set(names, static_args)
    trace = functional_trace(fn, args, names)
    module_of = _module_locator(fn, args) if isinstance(fn, torch.nn.Module) else None
    return _export(trace, fn, args, names, static, output_names, path,
                   module_of=module_of if check_runtime else False,
                   roles=_Roles(input_roles, output_roles))


def export_training_step(model, loss_fn, example_inputs, path, *, trainable=None,
                         input_names=("input", "target"), input_grad=False, eval_graph=None):
    """Export one training step of ``model`` with loss ``loss_fn``, state included.

    The step computes ``out = functional_call(model, params and buffers, (input,))``,
    ``loss = loss_fn(out, *rest)`` and ``torch.autograd.grad(loss, trainable [+ input])``, where
    ``(input, *rest) = example_inputs`` (named by ``input_names``, same length), with the model
    in the mode it is in (train/eval).
    Runtime inputs: the example inputs, then each trainable parameter, then each buffer the step
    updates (state), named with dots replaced by '_' (``conv1.weight`` -> ``conv1_weight``,
    ``bn.running_mean`` -> ``bn_running_mean``). Frozen parameters and the buffers the step
    only reads (e.g. BatchNorm in eval mode) are statics stored under their dotted names.
    Outputs: ``loss``, ``grad_<param_name>`` per trainable parameter in
    ``model.named_parameters()`` order, ``grad_input`` if ``input_grad``, then
    ``new_<buffer_name>`` per updated buffer in ``model.named_buffers()`` order. Roles: the
    trainable parameters are "parameter" inputs, each ``grad_<param_name>`` their "gradient",
    the updated buffers "buffer" inputs with their "buffer_update" ``new_<buffer_name>``,
    ``loss`` the "loss", ``grad_input`` an "output"; the example inputs are "data", or "label"
    where the loss's nll_loss reads one as its target (cross_entropy's classes).
    ``trainable``: None for every parameter that requires grad (``p.requires_grad_(False)``
    freezes one), else an iterable of parameter names (trained whatever their requires_grad).
    ``eval_graph``: also write ``path.eval.json``, the evaluation of the same model in eval
    mode (BatchNorm on its running statistics, no dropout): inputs the example inputs, then the
    step's trainable parameters and state buffers under the same names (a trainer copies them
    over; roles "parameter" and "buffer" as in the step, without gradients), outputs ``loss``
    and ``output`` (the model's; roles "loss" and "output"), then ``new_<buffer>`` (a
    "buffer_update") for a state buffer the eval-mode forward itself writes (an in-place moving
    average; a trainer drops them: evaluating does not change the model); its frozen weights are
    the step's, in the
    same safetensors file. None (the default): written where the eval-mode forward can be
    exported, else a warning says why and ``eval_path`` is None; True: that failure raises;
    False: not written.
    """
    example_inputs, input_names = tuple(example_inputs), tuple(input_names)
    if len(example_inputs) != len(input_names) or not example_inputs:
        raise ValueError(f"{len(example_inputs)} example inputs for {len(input_names)} "
                         "input_names: give one name per input (at least the model input)")
    _check_modules(model)
    params, buffers = dict(model.named_parameters()), dict(model.named_buffers())
    train = _trainable_names(params, trainable)
    if not train and not input_grad:
        raise ValueError("nothing to differentiate: no trainable parameter (trainable=None "
                         "trains the parameters with requires_grad) and input_grad=False")
    frozen = [name for name in params if name not in train]
    step = _make_step(model, loss_fn, len(example_inputs), train + frozen, len(train),
                      list(buffers), input_grad)
    args = [x.detach().clone().requires_grad_(input_grad and i == 0)
            for i, x in enumerate(example_inputs)]
    args += [params[name].detach().clone().requires_grad_(True) for name in train]
    args += [params[name].detach().clone() for name in frozen]
    args += [buffers[name].detach().clone() for name in buffers]
    arg_names = list(input_names) + [_flat(name) for name in train] + frozen
    arg_names += [_flat(name) for name in buffers]
    args = _copy_args(args)
    _check_unique(arg_names, "argument")
    trace = functional_trace(step, args, arg_names, state=[_flat(name) for name in buffers])
    updated = set(trace.mutated)
    # A buffer the step only reads is frozen like a frozen parameter: a static, dotted name.
    for i, name in enumerate(buffers):
        if _flat(name) not in updated:
            arg_names[len(arg_names) - len(buffers) + i] = name
    static = set(frozen) | {name for name in buffers if _flat(name) not in updated}
    outputs = ["loss"] + ["grad_" + _flat(name) for name in train]
    outputs += ["grad_input"] if input_grad else []
    outputs += ["new_" + name for name in trace.mutated]
    roles = _Roles.of_step([_flat(name) for name in train], list(trace.mutated))
    state_dict = {_flat(name): name for name in train}
    state_dict.update({_flat(name): name for name in buffers if _flat(name) in updated})
    evaluation = no_eval = None
    if eval_graph or eval_graph is None:
        state_buffers = [name for name in buffers if _flat(name) in updated]
        try:
            evaluation = _encode_eval(model, loss_fn, example_inputs, input_names, train,
                                      frozen, list(buffers), state_buffers, state_dict)
        except ValueError as e:
            if eval_graph:
                raise
            no_eval = e
    result = _export(trace, step, args, arg_names, static, outputs, path, state_dict=state_dict,
                     eval_graph=evaluation, module_of=_module_locator(model, example_inputs[:1]),
                     roles=roles)
    if no_eval is not None:  # said once the step itself is written (its refusal comes first)
        warnings.warn(f"export_training_step: no evaluation graph ({no_eval})")
    return result


def _encode_eval(model, loss_fn, example_inputs, input_names, train, frozen, buffer_names,
                 state_buffers, state_dict):
    """The eval-mode forward of ``model`` (a copy put in eval mode) and its loss, encoded:
    inputs as the training step's (example inputs, trainable parameters, state buffers, same
    names), the rest statics under their dotted names."""
    try:
        from torch.func import functional_call
    except ImportError:  # PyTorch 1.13
        from torch.nn.utils.stateless import functional_call
    evaluated = copy.deepcopy(model).eval()
    params, buffers = dict(evaluated.named_parameters()), dict(evaluated.named_buffers())
    n_in, names_p = len(example_inputs), train + frozen

    def forward(*args):
        inputs = args[:n_in]
        values = dict(zip(names_p + buffer_names, args[n_in:]))
        out = functional_call(evaluated, values, (inputs[0],))
        return loss_fn(out, *inputs[1:]), out

    args = [x.detach().clone() for x in example_inputs]
    args += [params[n].detach().clone() for n in names_p]
    args += [buffers[n].detach().clone() for n in buffer_names]
    names = list(input_names) + [_flat(n) for n in train] + frozen
    names += [_flat(n) if n in state_buffers else n for n in buffer_names]
    static = set(frozen) | {n for n in buffer_names if n not in state_buffers}
    args = _copy_args(args)
    trace = functional_trace(forward, args, names, state=[_flat(n) for n in state_buffers])
    if trace.draws:
        raise ValueError("the eval-mode forward draws random numbers")
    roles = _Roles.of_step([_flat(n) for n in train], list(trace.mutated),
                           buffers=[_flat(n) for n in state_buffers], gradients=False)
    return _encode(trace, forward, args, names, static,
                   ["loss", "output"] + ["new_" + name for name in trace.mutated],
                   state_dict=state_dict, module_of=_module_locator(evaluated, args[:1]),
                   roles=roles)


def _export(trace, fn, args, names, static, output_names, path, reference=None,
            state_dict=None, eval_graph=None, module_of=None, roles=None):
    """Check and encode a functional trace, compute the reference, write the files. The
    trace's random draws become inputs after ``names``; the reference replays them.
    ``reference``: PyTorch's eager outputs, one tensor per graph output in order, computed by
    the caller (joint.py); None: run ``fn(*args)`` for them. ``state_dict``: input name ->
    the module's state_dict name, written as the input's ``"state_dict"`` (trainable parameters
    and state buffers: what a trainer hands back to ``load_state_dict``). ``eval_graph``: an
    _Encoded eval-mode forward written beside it as ``path.eval.json``, its statics in the
    same weights file (shared where they are the same tensor). ``module_of``: names a node's
    module in a refusal (``_ops.check_graph``); None: not known; False: the runtime's
    capabilities are not checked (only the format's). ``roles``: the _Roles the caller knows
    (None: only those found in the graph)."""
    enc = _encode(trace, fn, args, names, static, output_names, reference, state_dict,
                  module_of, roles)
    weights = dict(enc.weights)
    if eval_graph is not None:
        _merge_statics(eval_graph, weights)
    init = None
    if state_dict:  # the first values `edgegrad train --init` starts from, by state_dict name
        init = {state_dict[name]: arg.detach() for name, arg in zip(enc.names, enc.args)
                if name in state_dict}
    result = _write(path, enc.graph, weights, init, eval_graph and eval_graph.graph)
    result.draws = {name: mask for name, _, mask in trace.draws}
    return result


class _Encoded:
    """A checked, encoded trace: ``graph`` (dict), ``weights`` (static name -> tensor), and the
    argument ``names`` / ``args`` it was traced with (random draws appended)."""

    def __init__(self, graph, weights, names, args):
        self.graph, self.weights, self.names, self.args = graph, weights, names, args


def _encode(trace, fn, args, names, static, output_names, reference=None, state_dict=None,
            module_of=None, roles=None):
    if trace.draws:
        fn = _drop_draw_args(replay_draws(fn, [mask for _, _, mask in trace.draws]), len(args))
        args = list(args) + [mask for _, _, mask in trace.draws]
        names = list(names) + [name for name, _, _ in trace.draws]
    _check_unique(names, "argument")
    _check_functional(trace.gm)
    _check_strided_views(trace.gm, trace.results)
    if module_of is not False:
        check_graph(trace.gm, trace.results, module_of or (lambda n: None))
    graph, weights = _Encoder(trace.gm, trace.results, names, static).encode()
    _name_outputs(graph, output_names)
    (roles or _Roles()).record(graph, [name for name, _, _ in trace.draws])
    for entry in graph["inputs"]:
        if state_dict and entry["name"] in state_dict:
            entry["state_dict"] = state_dict[entry["name"]]
    if reference is None:
        graph["reference"] = _reference(fn, args, graph, names, trace.mutated)
    else:
        graph["reference"] = _summary(graph, reference)
    if trace.draws:
        graph["random_inputs"] = [{"input": name, "distribution": "bernoulli", "p": p}
                                  for name, p, _ in trace.draws]
    return _Encoded(graph, weights, names, args)


_INPUT_ROLES = ("data", "label", "parameter", "buffer", "random")
_OUTPUT_ROLES = ("loss", "gradient", "buffer_update", "output")
_PAIRED = {"gradient": "parameter", "buffer_update": "buffer"}
# the losses whose target (argument 1) is a class label: cross_entropy's, nll_loss's
_LABEL_READERS = ("aten.nll_loss_forward.default", "aten.nll_loss2d_forward.default")


class _Roles:
    """The roles of a graph's inputs and outputs (docs/export.md, "The roles contract"):
    ``inputs`` {input name: role}, ``outputs`` {output name: role or (role, input name)}, as
    the caller knows them; ``record`` writes every entry's ``"role"`` (and ``"of"``), finding
    the others: a random draw is "random", an input an nll_loss reads as its target "label",
    another input "data", another output "output"."""

    def __init__(self, inputs=None, outputs=None):
        self.inputs, self.outputs = dict(inputs or {}), dict(outputs or {})

    @classmethod
    def of_step(cls, params, state, buffers=None, gradients=True):
        """A training step's: parameters ``params`` with their gradients ``grad_<p>``, buffers
        (default: ``state``) with the updates ``new_<b>`` of those in ``state`` (the buffers
        the traced function wrote), and the loss ``loss``; an eval graph's: the same without
        gradients (``gradients=False``)."""
        inputs = {p: "parameter" for p in params}
        inputs.update({b: "buffer" for b in (state if buffers is None else buffers)})
        outputs = {"loss": "loss"}
        outputs.update({"grad_" + p: ("gradient", p) for p in params if gradients})
        outputs.update({"new_" + b: ("buffer_update", b) for b in state})
        return cls(inputs, outputs)

    def record(self, graph, draws):
        inputs = {e["name"]: e for e in graph["inputs"]}
        outputs = {e["name"]: e for e in graph["outputs"]}
        for kind, given, known in (("input", self.inputs, inputs),
                                   ("output", self.outputs, outputs)):
            unknown = sorted(set(given) - set(known))
            if unknown:
                raise ValueError(f"{kind}_roles names {unknown}, which are not {kind}s "
                                 f"({list(known)})")
        labels = _label_values(graph)
        for entry in graph["inputs"]:
            name = entry["name"]
            role = "random" if name in draws else \
                "label" if entry["value"] in labels else "data"
            role = self.inputs.get(name, role)
            if role not in _INPUT_ROLES:
                raise ValueError(f"input {name}: role {role!r} is not an input's "
                                 f"({', '.join(_INPUT_ROLES)})")
            if (role == "random") != (name in draws):
                raise ValueError(f"input {name}: role {role!r}: the role of a random draw "
                                 "(and of it alone) is 'random'")
            entry["role"] = role
        for entry in graph["outputs"]:
            role = self.outputs.get(entry["name"], "output")
            role, of = role if isinstance(role, tuple) else (role, None)
            self._pair(graph, entry, role, of, inputs)
            entry["role"] = role
            if of is not None:
                entry["of"] = of
        _check_pairs(graph)

    @staticmethod
    def _pair(graph, entry, role, of, inputs):
        where = f"output {entry['name']}: role {role!r}"
        if role not in _OUTPUT_ROLES:
            raise ValueError(f"{where} is not an output's ({', '.join(_OUTPUT_ROLES)})")
        if (of is None) != (role not in _PAIRED):
            raise ValueError(f"{where}: a gradient or a buffer_update names its input, "
                             "(role, input name); no other role does")
        if of is None:
            return
        want = _PAIRED[role]
        if of not in inputs or inputs[of]["role"] != want:
            raise ValueError(f"{where} of {of!r}: {of!r} is not a {want} input")
        mine = graph["values"][entry["value"]]
        theirs = graph["values"][inputs[of]["value"]]
        if (mine["dtype"], mine["shape"]) != (theirs["dtype"], theirs["shape"]):
            raise ValueError(f"{where} of {of!r}: {mine['dtype']}{mine['shape']} against "
                             f"{theirs['dtype']}{theirs['shape']}: it has its input's dtype "
                             "and shape")


def _label_values(graph):
    """The value ids an nll_loss node reads as its target (argument 1 or ``target``)."""
    labels = set()
    for node in graph["nodes"]:
        if node["target"] not in _LABEL_READERS:
            continue
        target = node["args"][1] if len(node["args"]) > 1 else node["kwargs"].get("target")
        if isinstance(target, dict) and "value" in target:
            labels.add(target["value"])
    return labels


def _check_pairs(graph):
    """Each parameter's gradient and each buffer's update at most once, exactly once in a
    training step (a graph with a gradient); parameters float32; one loss, a float32 scalar."""
    paired = [e["of"] for e in graph["outputs"] if "of" in e]
    for name in set(paired):
        if paired.count(name) > 1:
            raise ValueError(f"input {name}: {paired.count(name)} outputs name it: a parameter "
                             "has one gradient, a buffer one update")
    training = any(e["role"] == "gradient" for e in graph["outputs"])
    for e in graph["inputs"]:
        dtype = graph["values"][e["value"]]["dtype"]
        if e["role"] == "parameter" and dtype != "float32":
            raise ValueError(f"input {e['name']}: a parameter of dtype {dtype}: parameters are "
                             "float32")
        if training and e["role"] in ("parameter", "buffer") and e["name"] not in paired:
            raise ValueError(f"input {e['name']}: a {e['role']} of a training step without its "
                             f"{'gradient' if e['role'] == 'parameter' else 'update'}")
    losses = [e for e in graph["outputs"] if e["role"] == "loss"]
    if len(losses) > 1:
        raise ValueError(f"outputs {[e['name'] for e in losses]}: a graph has one loss")
    for e in losses:
        v = graph["values"][e["value"]]
        if v["dtype"] != "float32" or math.prod(v["shape"]) != 1:
            raise ValueError(f"output {e['name']}: a loss of {v['dtype']}{v['shape']}: the loss "
                             "is a float32 scalar")


def _merge_statics(extra, weights):
    """Adds ``extra``'s statics to ``weights``: one that is already there with equal dtype,
    shape and values is shared; another under the same name is renamed ``eval.<name>`` in
    ``extra``'s graph."""
    renamed = {}
    for name, t in extra.weights.items():
        have = weights.get(name)
        if have is not None and have.dtype == t.dtype and have.shape == t.shape and \
                torch.equal(have, t):
            continue
        new = name if have is None else "eval." + name
        while new in weights:
            new = "eval." + new
        weights[new] = t
        renamed[name] = new
    for entry in extra.graph["statics"]:
        entry["name"] = renamed.get(entry["name"], entry["name"])


def _drop_draw_args(fn, n):
    """``fn`` called with its first ``n`` arguments only (the rest are the replayed masks)."""
    return lambda *args: fn(*args[:n])


# --------------------------------------------------------------------------------------------
# tracing helpers


def _flat(name):
    return name.replace(".", "_")


def _trainable_names(params, trainable):
    """Trainable parameter names in model order: those named by ``trainable``, or for None
    those with ``requires_grad`` (as torch.optim over model.parameters() would update);
    unknown names are refused."""
    if trainable is None:
        return [name for name, p in params.items() if p.requires_grad]
    wanted = set(trainable)
    unknown = sorted(wanted - set(params))
    if unknown:
        raise ValueError(f"trainable names {unknown} are not parameters of the model "
                         f"(parameters: {list(params)})")
    return [name for name in params if name in wanted]


def _make_step(model, loss_fn, n_inputs, param_names, n_train, buffer_names, input_grad):
    """The traced step: inputs, parameters (trainable first), buffers -> (loss, *grads).
    The buffers are passed to the model by functional_call, so what the model writes into them
    (BatchNorm's running statistics) is written into the step's arguments: state."""
    try:  # PyTorch 2.x; torch.nn.utils.stateless's is deprecated there
        from torch.func import functional_call
    except ImportError:  # PyTorch 1.13
        from torch.nn.utils.stateless import functional_call

    n_params = len(param_names)

    def step(*args):
        inputs = args[:n_inputs]
        params = dict(zip(param_names, args[n_inputs:n_inputs + n_params]))
        buffers = dict(zip(buffer_names, args[n_inputs + n_params:]))
        out = functional_call(model, {**params, **buffers}, (inputs[0],))
        loss = loss_fn(out, *inputs[1:])
        wrt = [params[name] for name in param_names[:n_train]]
        wrt += [inputs[0]] if input_grad else []
        return (loss, *torch.autograd.grad(loss, wrt))

    return step


def _module_locator(model, example_args):
    """``module_of`` for ``_ops.check_graph``: ``node -> "name (Type)"``, the innermost module
    of ``model`` whose forward first runs the node's op, or None (an op no module runs: a
    backward, the loss). Found, only when a node is refused, by one eager forward of a copy of
    ``model`` on copies of ``example_args`` with forward hooks, under a dispatch mode that
    sees each ATen op; the caller's model and random generator are left as they were. An
    in-place op run eagerly (``relu_``) counts as its functional form (``relu``)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = {}

    def op_key(op):
        schema = getattr(op, "_schema", None)
        return None if schema is None else (schema.name.rstrip("_"), schema.overload_name)

    def locate():
        copied = copy.deepcopy(model)
        names = {m: name for name, m in copied.named_modules()}
        stack, hooks = [], []

        class Watch(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                if stack:
                    seen.setdefault(op_key(func), stack[-1])
                return func(*args, **(kwargs or {}))

        def enter(module, args):  # hooks return None: the module's input and output stay
            stack.append(f"{names[module] or 'model'} ({type(module).__name__})")

        def leave(module, args, output):
            stack.pop()

        for m in names:
            hooks += [m.register_forward_pre_hook(enter), m.register_forward_hook(leave)]
        try:
            with torch.random.fork_rng(devices=[]), Watch():
                copied(*_copy_args(example_args))
        finally:
            for h in hooks:
                h.remove()

    def module_of(n):
        if not seen:
            try:
                locate()
            except Exception:  # best effort: the refusal stands without a module name
                seen[None] = None
        return seen.get(op_key(n.target))

    return module_of


def _check_modules(model):
    """Refuse modules whose traced step would bake state into constants."""
    from torch.nn.modules.batchnorm import _NormBase

    for name, module in model.named_modules():
        if isinstance(module, _NormBase) and module.training and \
                module.track_running_stats and module.momentum is None:
            raise ValueError(f"module {name or 'model'} ({type(module).__name__}): momentum=None "
                             "(a cumulative average) reads num_batches_tracked's value at trace "
                             "time, so the graph would hold a constant factor: give a float "
                             "momentum, or export in eval mode")


def _copy_args(args):
    """Dense contiguous copies of the example tensors, keeping ``requires_grad``."""
    copies = []
    for i, a in enumerate(args):
        if not isinstance(a, torch.Tensor):
            raise ValueError(f"example argument {i} is of type {type(a).__name__}: graph inputs "
                             "must be tensors (close over other values in fn instead)")
        copy = a.detach().clone(memory_format=torch.contiguous_format)
        copies.append(copy.requires_grad_(a.requires_grad))
    return copies


def _arg_names(fn, args, arg_names):
    """One unique name per argument: given, or ``fn``'s parameter names, or ``argI``."""
    if arg_names is None:
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            params = []
        positional = (inspect.Parameter.POSITIONAL_ONLY,
                      inspect.Parameter.POSITIONAL_OR_KEYWORD)
        arg_names = [params[i].name if i < len(params) and params[i].kind in positional
                     else f"arg{i}" for i in range(len(args))]
    arg_names = [str(name) for name in arg_names]
    if len(arg_names) != len(args):
        raise ValueError(f"{len(arg_names)} arg_names for {len(args)} example arguments")
    _check_unique(arg_names, "argument")
    return arg_names


def _static_set(names, static_args):
    static = set(static_args)
    unknown = sorted(static - set(names))
    if unknown:
        raise ValueError(f"static_args {unknown} are not argument names (names: {names})")
    return static


def _check_unique(names, what):
    seen = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{what} name {name!r} is used twice: names must be unique")
        seen.add(name)


def _check_functional(gm):
    """Refuse any op left in place after functionalization: its schema declares a write into
    an argument (``Tensor(a!)``), which a graph of immutable values cannot hold."""
    for n in gm.graph.nodes:
        schema = getattr(n.target, "_schema", None)
        if n.op != "call_function" or schema is None:
            continue
        for arg in schema.arguments:
            if arg.alias_info is not None and arg.alias_info.is_write:
                raise ValueError(f"node {n.name} ({n.target}) writes its argument {arg.name} "
                                 "in place and functionalization left it so: the graph "
                                 "format holds only functional ops")


def _check_strided_views(gm, results):
    """``_reshape_alias``/``as_strided`` carry strides; dense values can only express them
    when they equal the strides of ``input.view(size)`` (then the op is a plain reshape).
    Such a view of a non-contiguous input (PyTorch 1.13 traces reshape after a transpose as
    ``_reshape_alias`` with the transposed strides, e.g. in nn.MultiheadAttention) is recorded
    with the contiguous strides of its size: the reshape of the format's dense values."""
    for n in gm.graph.nodes:
        if n.op != "call_function" or str(n.target) not in _STRIDED_VIEWS:
            continue
        source, size, stride = results[n.args[0]], list(n.args[1]), list(n.args[2])
        offset = n.args[3] if len(n.args) > 3 else n.kwargs.get("storage_offset")
        try:
            expected = source.view(size).stride()
        except RuntimeError:
            expected = None
        plain = expected is not None and all(
            s == e for s, e, d in zip(stride, expected, size) if d > 1)
        plain = plain and offset in (None, source.storage_offset())
        if not plain:
            raise ValueError(f"node {n.name} ({n.target}): size {size} stride {stride} is not "
                             f"a plain reshape of {n.args[0].name} {list(source.shape)}: the "
                             "graph format holds dense tensors without strides")
        dense = list(torch.empty(size, device="meta").stride())
        if stride != dense:
            n.args = (n.args[0], n.args[1], dense, *n.args[3:])


# --------------------------------------------------------------------------------------------
# encoding the traced graph


class _Encoder:
    """Turns a traced GraphModule plus its recorded results into the format's dict."""

    def __init__(self, gm, results, arg_names, static):
        self.gm, self.results = gm, results
        self.arg_names, self.static = arg_names, static
        self.values, self.ids = [], {}  # ids: fx.Node -> value id (None: a None element)
        self.attrs = {}  # get_attr target -> value id: a constant read twice is one static
        self.graph = {"format": "edgegrad.graph", "version": FORMAT_VERSION,
                      "producer": {"name": "edgegrad.export", "torch": torch.__version__},
                      "weights": None, "values": self.values, "inputs": [], "statics": [],
                      "nodes": [], "outputs": []}
        self.weights = {}

    def encode(self):
        """Return ``(graph dict without output names, {static name: tensor})``."""
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(self.arg_names):
            raise ValueError(f"trace has {len(placeholders)} placeholders for "
                             f"{len(self.arg_names)} arguments")
        for n, name in zip(placeholders, self.arg_names):
            self._placeholder(n, name)
        for n in self.gm.graph.nodes:
            if n.op == "get_attr" and n.target in self.attrs:  # the same constant again
                self.ids[n] = self.attrs[n.target]
            elif n.op == "get_attr":
                self._static(n, n.target, self.results[n])
                self.attrs[n.target] = self.ids[n]
            elif n.op == "call_function":
                self._call(n)
            elif n.op == "output":
                self._outputs(n)
            elif n.op != "placeholder":
                raise ValueError(f"node {n.name}: FX op {n.op!r} is not in the graph format")
        _check_unique([s["name"] for s in self.graph["statics"]], "static")
        return self.graph, self.weights

    def _tensor_value(self, t, where):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{where}: result is a {type(t).__name__}, not a tensor: the graph "
                             "format's values are tensors and tuples of tensors")
        dtype = _DTYPE_NAMES.get(t.dtype)
        if dtype is None:
            raise ValueError(f"{where}: dtype {t.dtype} is not one of the format's dtypes "
                             f"({', '.join(_DTYPE_NAMES.values())})")
        if t.dim() > MAX_RANK or not all(type(d) is int for d in t.shape):
            raise ValueError(f"{where}: shape {tuple(t.shape)}: the format needs a static "
                             f"shape of rank <= {MAX_RANK}")
        vid = len(self.values)
        self.values.append({"id": vid, "kind": "tensor", "dtype": dtype,
                            "shape": list(t.shape)})
        return vid

    def _placeholder(self, n, name):
        if name in self.static:
            self._static(n, name, self.results[n])
        else:
            vid = self._tensor_value(self.results[n], f"input {name}")
            self.ids[n] = vid
            self.graph["inputs"].append({"name": name, "value": vid})

    def _static(self, n, name, tensor):
        if tensor.is_quantized:
            raise ValueError(f"static {name}: a quantized tensor has no place in the weights "
                             "file (its scale and zero point would be lost): freeze the float "
                             "tensor and quantize it in the traced function")
        vid = self._tensor_value(tensor, f"static {name}")
        self.ids[n] = vid
        self.graph["statics"].append({"name": name, "value": vid})
        self.weights[name] = tensor.detach().contiguous()

    def _call(self, n):
        where = f"node {n.name}"
        if n.target is operator.getitem:
            target = "getitem"
        elif isinstance(n.target, torch._ops.OpOverload):
            target = str(n.target)
        else:
            raise ValueError(f"{where}: target {n.target!r} is neither an ATen overload nor "
                             "operator.getitem")
        node = {"name": n.name, "target": target,
                "args": [self._arg(a, f"{where} arg {i}") for i, a in enumerate(n.args)],
                "kwargs": {k: self._arg(a, f"{where} kwarg {k}") for k, a in n.kwargs.items()}}
        node["output"] = self._result(n, self.results[n], where)
        self.graph["nodes"].append(node)

    def _result(self, n, result, where):
        """Define the value(s) of a node's result; return the output id (None: no value)."""
        if result is None and n.target is operator.getitem:
            self.ids[n] = None
            return None
        if isinstance(result, (tuple, list)):
            vid = len(self.values)
            self.values.append({"id": vid, "kind": "tuple", "elements": []})
            self.values[vid]["elements"] = [
                None if e is None else self._tensor_value(e, f"{where} element {i}")
                for i, e in enumerate(result)]
        else:
            vid = self._tensor_value(result, where)
        self.ids[n] = vid
        return vid

    def _arg(self, a, where):
        """Encode one argument per the ARG table of docs/graph-format.md."""
        if isinstance(a, torch.fx.Node):
            if self.ids.get(a) is None:
                raise ValueError(f"{where}: uses {a.name}, which has no value (a None element)")
            return {"value": self.ids[a]}
        if a is None or isinstance(a, bool):
            return a
        if isinstance(a, int):
            if not _INT64_MIN <= a <= _INT64_MAX:
                raise ValueError(f"{where}: int {a} does not fit in int64")
            return int(a)
        if isinstance(a, float):
            return {"float": _float(a)}
        if isinstance(a, (list, tuple)):
            return [self._arg(x, f"{where}[{i}]") for i, x in enumerate(a)]
        return _tag(a, where)

    def _outputs(self, n):
        result = n.args[0]
        items = result if isinstance(result, (tuple, list)) else [result]
        if not items:
            raise ValueError("fn returned no tensors: a graph needs at least one output")
        for i, item in enumerate(items):
            if not isinstance(item, torch.fx.Node) or self.ids.get(item) is None:
                shown = "None" if item is None or isinstance(item, torch.fx.Node) \
                    else type(item).__name__
                raise ValueError(f"output {i} is {shown}: outputs must be tensors")
            if self.values[self.ids[item]]["kind"] != "tensor":
                raise ValueError(f"output {i} is a tuple: outputs must be tensors")
            self.graph["outputs"].append({"name": None, "value": self.ids[item]})


def _float(x):
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _tag(a, where):
    """A tagged ARG for str, dtype, layout, device and memory_format; refuse any other type."""
    if isinstance(a, str):
        return {"str": a}
    if isinstance(a, torch.dtype):
        if a not in _DTYPE_NAMES:
            raise ValueError(f"{where}: dtype {a} is not one of the format's dtypes")
        return {"dtype": _DTYPE_NAMES[a]}
    if isinstance(a, torch.layout):
        return {"layout": str(a).replace("torch.", "")}
    if isinstance(a, torch.device):
        return {"device": str(a)}
    if isinstance(a, torch.memory_format):
        return {"memory_format": str(a).replace("torch.", "")}
    raise ValueError(f"{where}: {type(a).__name__} {a!r}: the graph format has no argument of "
                     "this type")


def _name_outputs(graph, output_names):
    outputs = graph["outputs"]
    if output_names is None:
        output_names = [f"out{i}" for i in range(len(outputs))]
    output_names = [str(name) for name in output_names]
    if len(output_names) != len(outputs):
        raise ValueError(f"{len(output_names)} output_names for {len(outputs)} outputs")
    _check_unique(output_names, "output")
    for entry, name in zip(outputs, output_names):
        entry["name"] = name


def _reference(fn, args, graph, names, mutated):
    """PyTorch's outputs of ``fn`` run eagerly: dtype, shape, L2 norm, max |x| per output; the
    new value of a state argument is that argument after the eager run."""
    copies = _copy_args(args)
    result = fn(*copies)
    result = list(result) if isinstance(result, (tuple, list)) else [result]
    result += [copies[names.index(name)] for name in mutated]
    return _summary(graph, result)


def _summary(graph, result):
    """The reference block for PyTorch's output tensors ``result`` (graph output order)."""
    summary = {}
    for entry, t in zip(graph["outputs"], result):
        t = (t.int_repr() if t.is_quantized else t).detach().double()
        summary[entry["name"]] = {
            "dtype": graph["values"][entry["value"]]["dtype"],
            "shape": list(t.shape),
            "norm": _float(float(t.norm())) if t.numel() else 0.0,
            "max_abs": _float(float(t.abs().max())) if t.numel() else 0.0}
    return {"outputs": summary}


# --------------------------------------------------------------------------------------------
# writing


def _dumps(graph):
    """JSON text with one value, input, static, node or output per line (readable diffs)."""
    lines = ["{"]
    keys = list(graph)
    for k, key in enumerate(keys):
        comma = "," if k + 1 < len(keys) else ""
        value = graph[key]
        if isinstance(value, list) and value:
            items = [json.dumps(v, allow_nan=False) for v in value]
            lines.append(f'  "{key}": [')
            lines += [f"    {item}," for item in items[:-1]] + [f"    {items[-1]}"]
            lines.append(f"  ]{comma}")
        else:
            lines.append(f'  "{key}": {json.dumps(value, allow_nan=False)}{comma}')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _write(path, graph, weights, init=None, eval_graph=None):
    path = os.fspath(path)
    json_path, weights_path = path + ".json", path + ".safetensors"
    graph["weights"] = os.path.basename(weights_path)
    text = _dumps(graph)  # serialise first: nothing is written if the graph cannot be
    eval_text = eval_path = None
    if eval_graph is not None:
        eval_path = path + ".eval.json"
        eval_graph["weights"] = graph["weights"]
        eval_text = _dumps(eval_graph)
    meta = {"producer": "edgegrad.export", "graph": os.path.basename(json_path)}
    safetensors.save(weights_path, weights, meta)
    init_path = None
    if init:
        init_path = path + ".init.safetensors"
        safetensors.save(init_path, {k: v.contiguous() for k, v in init.items()}, meta)
    if eval_text is not None:
        write_atomic(eval_path, eval_text.encode("utf-8"))
    write_atomic(json_path, text.encode("utf-8"))
    return ExportResult(json_path, weights_path, graph, init_path=init_path,
                        eval_path=eval_path)
