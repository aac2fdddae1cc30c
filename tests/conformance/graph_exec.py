"""Read an edgegrad graph (JSON + safetensors), check it against docs/graph-format.md, and
execute it op by op with torch.ops — a reference reader that shows a file preserves the
computation, independent of the exporter's in-memory trace and of the C runtime.

Contract:
- ``load(json_path)`` -> ``(graph dict, statics dict name -> numpy array)``; raises
  FormatError (one line, ``<where>: <what>``) for anything that breaks a rule of the format.
- ``execute(graph, statics, inputs)`` runs the nodes in file order, resolving each target by
  name (``aten.<op>.<overload>`` -> ``torch.ops.aten.<op>.<overload>``, ``getitem``), checks
  every result's dtype and shape against the declared values, and returns the outputs as
  name -> C-ordered numpy array. Ops are pure, as the format defines them: no op changes its
  arguments (``native_batch_norm`` in training gets copies of its running statistics, which
  ATen would update in place).
- ``training_io(graph)`` -> ``(params, buffers, loss)``: by the recorded roles, each trainable
  parameter input with its gradient output and each state buffer input with its buffer_update
  output (``{input name: output name}``), and the loss output's name.
- ``run_steps(graph, statics, inputs, steps, lr)`` runs ``steps`` steps of plain SGD the way
  ``edgegrad run --steps`` does (after each run ``P -= lr * (P's gradient)`` and ``B = (B's
  update)``) and returns ``(losses, final inputs, last outputs)``.
"""
import json
import operator
import os

import numpy as np
import torch

from edgegrad import safetensors

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
          "int64": torch.int64, "int32": torch.int32, "int8": torch.int8, "uint8": torch.uint8,
          "bool": torch.bool}
_NP_DTYPES = {name: np.dtype(str(dt).replace("torch.", "")) for name, dt in DTYPES.items()}
MAX_RANK = 8


class FormatError(ValueError):
    """A file breaks a rule of the graph format."""


def _need(condition, message):
    if not condition:
        raise FormatError(message)


# --------------------------------------------------------------------------------------------
# loading and checking


def load(json_path):
    """Read and check a graph and its statics."""
    with open(json_path, encoding="utf-8") as f:
        graph = json.load(f)
    _need(graph.get("format") == "edgegrad.graph", "format: not 'edgegrad.graph'")
    _need(graph.get("version") == 1, f"version {graph.get('version')!r}: only 1 is known")
    weights_path = os.path.join(os.path.dirname(json_path), graph["weights"])
    statics, _ = safetensors.load(weights_path)
    check(graph, statics)
    return graph, statics


def check(graph, statics):
    """Check every rule of docs/graph-format.md that does not need op semantics."""
    values = graph["values"]
    for i, v in enumerate(values):
        _check_value(i, v, len(values))
    defined = _check_definitions(graph)
    for where, entries in (("inputs", graph["inputs"]), ("outputs", graph["outputs"]),
                           ("statics", graph["statics"])):
        names = [e["name"] for e in entries]
        _need(len(set(names)) == len(names), f"{where}: names not unique")
        for e in entries:
            _need(values[e["value"]]["kind"] == "tensor", f"{where} {e['name']}: not a tensor")
    for s in graph["statics"]:
        _check_static(s, values[s["value"]], statics)
    _check_uses(graph, defined)


def _check_value(i, v, count):
    _need(v.get("id") == i, f"values[{i}]: id {v.get('id')} != index")
    if v["kind"] == "tensor":
        _need(v["dtype"] in DTYPES, f"values[{i}]: dtype {v['dtype']!r} unknown")
        shape = v["shape"]
        _need(len(shape) <= MAX_RANK and all(type(d) is int and d >= 0 for d in shape),
              f"values[{i}]: shape {shape} is not a list of <= 8 non-negative ints")
    else:
        _need(v["kind"] == "tuple", f"values[{i}]: kind {v['kind']!r} unknown")
        _need(all(e is None or (type(e) is int and 0 <= e < count) for e in v["elements"]),
              f"values[{i}]: elements {v['elements']} are not value ids or null")


def _check_definitions(graph):
    """Each value defined exactly once; returns id -> node index (-1 input/static)."""
    defined = {}

    def define(vid, by, where):
        _need(vid not in defined, f"{where}: value {vid} defined twice")
        defined[vid] = by

    for e in graph["inputs"]:
        define(e["value"], -1, f"input {e['name']}")
    for e in graph["statics"]:
        define(e["value"], -1, f"static {e['name']}")
    for k, n in enumerate(graph["nodes"]):
        if n["output"] is None:
            _need(n["target"] == "getitem", f"node {n['name']}: output null on a non-getitem")
            continue
        define(n["output"], k, f"node {n['name']}")
        value = graph["values"][n["output"]]
        for e in value.get("elements", []):
            if e is not None:
                define(e, k, f"node {n['name']} element")
    missing = [i for i in range(len(graph["values"])) if i not in defined]
    _need(not missing, f"values {missing[:5]}: never defined")
    names = [n["name"] for n in graph["nodes"]]
    _need(len(set(names)) == len(names), "nodes: names not unique")
    return defined


def _check_static(entry, value, statics):
    name = entry["name"]
    _need(name in statics, f"static {name}: not in the safetensors file")
    array = statics[name]
    _need(array.dtype == _NP_DTYPES[value["dtype"]] and list(array.shape) == value["shape"],
          f"static {name}: stored {array.dtype}{list(array.shape)} != value "
          f"{value['dtype']}{value['shape']}")


def _check_uses(graph, defined):
    for k, n in enumerate(graph["nodes"]):
        for vid in _value_ids((n["args"], list(n["kwargs"].values()))):
            _need(vid in defined and defined[vid] < k,
                  f"node {n['name']}: uses value {vid} before its definition")
            is_tuple = graph["values"][vid]["kind"] == "tuple"
            _need(not is_tuple or n["target"] == "getitem",
                  f"node {n['name']}: only getitem takes a tuple")


def _value_ids(arg):
    if isinstance(arg, list):
        for a in arg:
            yield from _value_ids(a)
    elif isinstance(arg, dict) and "value" in arg:
        yield arg["value"]


# --------------------------------------------------------------------------------------------
# execution


def resolve(target):
    """The callable for a traced target name."""
    if target == "getitem":
        return operator.getitem
    parts = target.split(".")
    _need(len(parts) == 3 and parts[0] == "aten", f"target {target!r}: not aten.<op>.<overload>")
    return getattr(getattr(torch.ops.aten, parts[1]), parts[2])


def decode(arg, env):
    """A Python/torch argument from its ARG encoding."""
    if arg is None or isinstance(arg, (bool, int)):
        return arg
    if isinstance(arg, list):
        return [decode(a, env) for a in arg]
    _need(isinstance(arg, dict) and len(arg) == 1, f"argument {arg!r}: not an ARG")
    (tag, x), = arg.items()
    if tag == "value":
        return env[x]
    if tag == "float":
        return float(x) if isinstance(x, str) else x
    if tag == "dtype":
        return DTYPES[x]
    if tag == "layout" or tag == "memory_format":
        return getattr(torch, x)
    if tag == "device":
        return torch.device(x)
    if tag == "str":
        return x
    raise FormatError(f"argument {arg!r}: unknown tag {tag!r}")


def _expect(value, result, where):
    _need(isinstance(result, torch.Tensor), f"{where}: result is {type(result).__name__}")
    got = (str(result.dtype).replace("torch.", ""), list(result.shape))
    _need(got == (value["dtype"], value["shape"]),
          f"{where}: result {got} != declared ({value['dtype']}, {value['shape']})")


def _bind(graph, env, node, result):
    out = node["output"]
    where = f"node {node['name']}"
    if out is None:
        _need(result is None, f"{where}: output null but the result is a tensor")
        return
    value = graph["values"][out]
    env[out] = result
    if value["kind"] == "tensor":
        _expect(value, result, where)
        return
    elements = value["elements"]
    _need(isinstance(result, (tuple, list)) and len(result) == len(elements),
          f"{where}: result is not a {len(elements)}-tuple")
    for i, (e, r) in enumerate(zip(elements, result)):
        _need((e is None) == (r is None), f"{where}: element {i} None-ness differs")
        if e is not None:
            _expect(graph["values"][e], r, f"{where} element {i}")
            env[e] = r


_BATCH_NORM = "aten.native_batch_norm.default"


_RESHAPE_ALIAS = "aten._reshape_alias.default"


def _pure(target, args):
    """The format's ops never write their arguments; ATen's training batch norm does. And its
    values are dense: ``_reshape_alias`` records the strides of its size over a dense input
    (the exporter rewrites a view of a transposed tensor so), which ATen applies to the
    memory of whatever strided view the previous op returned, so it gets a dense copy."""
    if target == _RESHAPE_ALIAS and isinstance(args[0], torch.Tensor):
        return [args[0].contiguous(), *args[1:]]
    training = len(args) > 5 and args[5]
    if target == _BATCH_NORM and training:
        args = [a.clone() if i in (3, 4) and isinstance(a, torch.Tensor) else a
                for i, a in enumerate(args)]
    return args


def execute(graph, statics, inputs):
    """Run the graph on ``inputs`` (name -> numpy array); return name -> numpy output."""
    env = {}
    for e in graph["inputs"]:
        env[e["value"]] = torch.from_numpy(np.array(inputs[e["name"]], order="C"))
        _expect(graph["values"][e["value"]], env[e["value"]], f"input {e['name']}")
    for e in graph["statics"]:
        env[e["value"]] = torch.from_numpy(statics[e["name"]].copy())
    with torch.no_grad():
        for node in graph["nodes"]:
            fn = resolve(node["target"])
            args = _pure(node["target"], [decode(a, env) for a in node["args"]])
            kwargs = {k: decode(a, env) for k, a in node["kwargs"].items()}
            _bind(graph, env, node, fn(*args, **kwargs))
    return {e["name"]: env[e["value"]].contiguous().numpy() for e in graph["outputs"]}


def training_io(graph):
    """By the recorded roles: ({parameter input name: its gradient output's name}, {buffer input
    name: its buffer_update output's name}, the loss output's name or None)."""
    pairs = {"gradient": {}, "buffer_update": {}}
    for e in graph["outputs"]:
        if e.get("role") in pairs:
            pairs[e["role"]][e["of"]] = e["name"]
    loss = next((e["name"] for e in graph["outputs"] if e.get("role") == "loss"), None)
    return pairs["gradient"], pairs["buffer_update"], loss


def run_steps(graph, statics, inputs, steps, lr):
    """``steps`` runs with plain SGD in between, like ``edgegrad run --steps N --lr LR``:
    returns (float32 losses [steps], final value of every input, outputs of the last run)."""
    params, buffers, loss = training_io(graph)
    current = {k: np.array(v, order="C") for k, v in inputs.items()}
    losses, outputs = [], {}
    for _ in range(steps):
        outputs = execute(graph, statics, current)
        losses.append(outputs[loss].item())
        for name, grad in params.items():
            p = torch.from_numpy(current[name])
            g = torch.from_numpy(outputs[grad])
            current[name] = p.sub(g, alpha=lr).numpy()
        for name, new in buffers.items():
            current[name] = outputs[new].copy()
    return np.array(losses, dtype=np.float32), current, outputs
