"""Trace a function into a *functional* ATen graph and make its state explicit.

Contract:
- ``functional_trace(fn, args, arg_names, state=())`` traces ``fn(*args)`` twice with
  ``make_fx`` (real tensors): once as written (autograd needs the caller's ``requires_grad``),
  then the first trace again under ``functorch.experimental.functionalize``, which turns
  in-place ops into functional ones (``relu_`` -> ``relu``, ``add_`` -> ``add``, ``fill_`` ->
  ``fill``) and records each write into an argument as a trailing ``aten.copy_(arg, value)``.
  It then rewrites the graph so that every value is immutable (see ``_StateThreading``) and
  returns a ``Trace``: the GraphModule, its recorded results and the names of the ``state``
  arguments whose value the step changes. Their new values are appended to the graph's
  outputs, in ``state`` order, after ``fn``'s own outputs.
- A write into an argument that is not in ``state`` (or into a traced constant) is refused with
  a ValueError naming it (export.py also refuses any in-place op left after the rewrite).
- Graph semantics after the rewrite: every op is pure. In particular
  ``aten.native_batch_norm.default`` with ``training=True`` does *not* update its
  ``running_mean``/``running_var`` arguments (ATen 1.13 does, in place and invisibly to
  ``make_fx``: its schema declares no write); the update is made explicit as nodes,
  ``new_running_mean = (1 - momentum) * running_mean + momentum * save_mean`` and
  ``new_running_var = (1 - momentum) * running_var + momentum * unbiased_var`` with the unbiased
  batch variance computed from batch norm's input, and every later reader (and the state
  output) sees the new value.
- Random draws become inputs. Each Bernoulli draw of the trace (``bernoulli_``/``bernoulli``:
  what ``nn.Dropout``, ``Dropout2d`` and torchvision's StochasticDepth trace to in train mode)
  is replaced by a new graph input, ``bernoulli_<k>`` in trace order, holding the drawn 0/1
  mask (the dtype and shape of the draw); its example value is drawn once, at export, with
  torch's generator seeded 0 (the caller's generator state is kept). A runtime supplies a fresh
  draw per step; a reference run replays the recorded masks (``replay_draws``). The draws are
  ``Trace.draws``: (name, p, mask) with ``p`` the float probability of a one, or None where
  it is a tensor. Any other random op is refused (its numbers could not be reproduced).
- Shape queries that make_fx records as nodes with a Python bool result and no user
  (``aten.is_same_size``, from ``torch.autograd.grad``'s check of its ``grad_outputs``) are
  dropped: the check ran at trace time.
- The functional forms PyTorch 2.x's functionalization writes for a copy into a fresh tensor
  or a view are made plain: ``aten.copy(dst, src)`` (dst's shape and dtype, src's data)
  becomes ``src`` itself, or its ``expand``/``_to_copy``; an ``as_strided`` whose strides are
  a plain reshape's becomes ``view``; an ``as_strided_scatter`` that overwrites the whole of
  its destination becomes a ``view`` of the source. Anything else is left for export.py to
  refuse. Uninitialised allocations nothing reads are dropped.
- ``record(gm, args, arg_names=None)`` runs a GraphModule under these pure semantics and
  returns every node's result; given ``arg_names`` it refuses a graph that changes one of its
  arguments anyway (a write nothing in the trace declares).
"""
import operator

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx

_aten = torch.ops.aten
_BATCH_NORM = _aten.native_batch_norm.default
# Identities in a graph of immutable values: their uses are rewired to their argument.
_IDENTITIES = (_aten.alias.default, _aten.lift_fresh_copy.default)


class Trace:
    """A functional trace: ``gm`` (the rewritten GraphModule), ``results`` (fx.Node -> value of
    one run on the example arguments) and ``mutated`` (state argument names, in ``state``
    order, whose new values are the graph's last outputs)."""

    def __init__(self, gm, results, mutated, draws=()):
        self.gm, self.results, self.mutated = gm, results, mutated
        self.draws = list(draws)


def functional_trace(fn, args, arg_names, state=()):
    """Trace ``fn(*args)`` into a functional graph; see the module docstring."""
    from functorch.experimental import functionalize

    gm0 = make_fx(fn, tracing_mode="real")(*_clones(args, keep_grad=True))
    _drop_queries(gm0)
    draws = _RandomDraws(gm0, args).run()
    if draws:
        args = list(args) + [mask for _, _, mask in draws]
        arg_names = list(arg_names) + [name for name, _, _ in draws]
    try:
        gm = make_fx(functionalize(gm0), tracing_mode="real")(*_clones(args, keep_grad=False))
    except RuntimeError as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise ValueError(f"functionalize could not rewrite the trace ({first}): the graph "
                         "format holds only functional ops") from e
    results = record(gm, _clones(args, keep_grad=False))
    mutated = _StateThreading(gm, results, arg_names, state).run()
    _plain_copies(gm, results)
    _drop_dead_blanks(gm)
    gm.recompile()
    results = record(gm, _clones(args, keep_grad=False), arg_names)
    return Trace(gm, results, mutated, draws)


def _clones(args, keep_grad):
    return [a.detach().clone().requires_grad_(keep_grad and a.requires_grad) for a in args]


# --------------------------------------------------------------------------------------------
# random draws and shape queries

# Schema names of the Bernoulli draws that become inputs, and of every other random op (refused).
_BERNOULLI = ("aten::bernoulli", "aten::bernoulli_")
_RANDOM = ("aten::rand", "aten::rand_like", "aten::randn", "aten::randn_like", "aten::randint",
           "aten::randint_like", "aten::randperm", "aten::normal", "aten::normal_",
           "aten::uniform", "aten::uniform_", "aten::exponential_", "aten::geometric_",
           "aten::cauchy_", "aten::log_normal_", "aten::random_", "aten::multinomial",
           "aten::native_dropout", "aten::rrelu_with_noise", "aten::poisson")
# Creation ops whose result a Bernoulli draw overwrites whole: dead once the draw is an input.
_BLANKS = ("aten::empty_like", "aten::empty", "aten::new_empty", "aten::zeros_like")
_QUERIES = ("aten::is_same_size",)


def _schema_name(n):
    schema = getattr(n.target, "_schema", None) if n.op == "call_function" else None
    return schema.name if schema is not None else None


def _plain_copies(gm, results):
    """Rewrite copy / as_strided / as_strided_scatter into plain ops (see the module doc)."""
    graph = gm.graph
    for n in list(graph.nodes):
        name = _schema_name(n)
        if name not in ("aten::copy", "aten::as_strided", "aten::as_strided_scatter"):
            continue
        out = results.get(n)
        if not isinstance(out, torch.Tensor):
            continue
        with graph.inserting_before(n):
            if name == "aten::copy":
                src, value = n.args[1], results.get(n.args[1])
                if not isinstance(value, torch.Tensor):
                    continue
                if list(value.shape) != list(out.shape):
                    src = graph.call_function(_aten.expand.default, (src, list(out.shape)))
                    results[src] = value.expand(list(out.shape))
                if value.dtype != out.dtype:
                    src = graph.call_function(_aten._to_copy.default, (src,),
                                              {"dtype": out.dtype})
                new = src
            elif name == "aten::as_strided":
                size, stride = list(n.args[1]), list(n.args[2])
                offset = n.args[3] if len(n.args) > 3 else n.kwargs.get("storage_offset")
                if not _plain_strides(results[n.args[0]], size, stride, offset):
                    continue
                new = graph.call_function(_aten.view.default, (n.args[0], size))
            else:
                dst, src = results[n.args[0]], results.get(n.args[1])
                size, stride = list(n.args[2]), list(n.args[3])
                offset = n.args[4] if len(n.args) > 4 else n.kwargs.get("storage_offset")
                if not isinstance(src, torch.Tensor) or src.numel() != dst.numel() or \
                        not _plain_strides(dst, size, stride, offset):
                    continue
                new = graph.call_function(_aten.view.default, (n.args[1], list(dst.shape)))
        results[new] = out  # the same values: later rewrites read them
        n.replace_all_uses_with(new)
        graph.erase_node(n)
    graph.lint()


def _drop_dead_blanks(gm):
    """Uninitialised allocations nothing reads (PyTorch 2.x's functionalization leaves a
    ``new_empty_strided`` behind when it replaces a write into it) are dropped."""
    for n in reversed(list(gm.graph.nodes)):
        if not n.users and _schema_name(n) in _BLANKS + ("aten::new_empty_strided",
                                                         "aten::empty_strided"):
            gm.graph.erase_node(n)


def _plain_strides(source, size, stride, offset):
    """Strides ``stride`` of ``size`` are those of ``source.view(size)`` (size-1 dims free) on
    ``source``'s own storage, from its own offset: the op reads it as a plain reshape."""
    try:
        expected = source.view(size).stride()
    except RuntimeError:
        return False
    return all(s == e for s, e, d in zip(stride, expected, size) if d > 1) and \
        offset in (None, source.storage_offset())


def _drop_queries(gm):
    for n in list(gm.graph.nodes):
        if _schema_name(n) in _QUERIES and not n.users:
            gm.graph.erase_node(n)
    gm.recompile()


class _RandomDraws:
    """Replaces each Bernoulli draw of ``gm`` (traced, not yet functionalized) by a new input
    holding the mask drawn at export; returns [(name, p, mask)] in trace order."""

    def __init__(self, gm, args):
        self.gm, self.graph, self.args = gm, gm.graph, args

    def run(self):
        nodes = list(self.graph.nodes)
        for n in nodes:
            if _schema_name(n) in _RANDOM:
                raise ValueError(f"node {n.name} ({n.target}) draws random numbers: only "
                                 "Bernoulli draws (Dropout, StochasticDepth) can become graph "
                                 "inputs; other random ops cannot be reproduced")
        found = [n for n in nodes if _schema_name(n) in _BERNOULLI]
        if not found:
            return []
        masks = self._draw(found)
        last = [n for n in nodes if n.op == "placeholder"][-1]
        position = {n: i for i, n in enumerate(nodes)}
        draws = []
        for k, n in enumerate(found):
            name = f"bernoulli_{k}"
            with self.graph.inserting_after(last):
                last = self.graph.placeholder(name)
            inplace = _schema_name(n).endswith("_")
            blank = n.args[0]
            # readers get a copy: the trace goes on writing the mask in place (Dropout's div_)
            with self.graph.inserting_before(n):
                mask = self.graph.call_function(_aten.clone.default, (last,))
            n.replace_all_uses_with(mask)
            if inplace:  # later readers of the overwritten tensor read the mask
                for user in list(blank.users):
                    if position.get(user, -1) > position[n]:
                        user.replace_input_with(blank, mask)
            self.graph.erase_node(n)
            if isinstance(blank, torch.fx.Node) and not blank.users and \
                    _schema_name(blank) in _BLANKS:
                self.graph.erase_node(blank)
            p = n.args[1] if len(n.args) > 1 else n.kwargs.get("p")
            p = float(p) if isinstance(p, (int, float)) and not isinstance(p, bool) else None
            draws.append((name, p, masks[n]))
        self.graph.lint()
        self.gm.recompile()
        return draws

    def _draw(self, found):
        """One run of the trace with the generator seeded 0; the draws' results, cloned."""
        wanted, masks = set(found), {}

        class Draw(torch.fx.Interpreter):
            def run_node(self, n):
                result = super().run_node(n)
                if n in wanted:
                    masks[n] = result.detach().clone()
                return result

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            with torch.no_grad():
                Draw(self.gm).run(*_clones(self.args, keep_grad=False))
        return masks


def replay_draws(fn, masks):
    """``fn`` whose Bernoulli draws return ``masks`` in order (a reference run of a step whose
    draws are graph inputs); a draw more or fewer than ``masks`` is an error."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Replay(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.k = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func._schema.name not in _BERNOULLI:
                return func(*args, **kwargs)
            if self.k >= len(masks):
                raise ValueError(f"reference run draws more than the {len(masks)} recorded "
                                 "Bernoulli masks")
            mask = masks[self.k]
            self.k += 1
            if func._schema.name.endswith("_"):
                return args[0].copy_(mask)
            return mask.clone()

    def replayed(*args, **kwargs):
        mode = Replay()
        with mode:
            result = fn(*args, **kwargs)
        if mode.k != len(masks):
            raise ValueError(f"reference run drew {mode.k} Bernoulli masks, the trace "
                             f"{len(masks)}")
        return result

    return replayed


# --------------------------------------------------------------------------------------------
# running a graph with pure semantics


def pure_call(target, args, kwargs):
    """Call an ATen op as the graph format defines it: never writing its arguments.
    (native_batch_norm in training writes running_mean/running_var in ATen; give it copies.)"""
    if target is _BATCH_NORM and _bn_training(args, kwargs):
        args = list(args)
        for i in (3, 4):
            if i < len(args) and isinstance(args[i], torch.Tensor):
                args[i] = args[i].clone()
    return target(*args, **kwargs)


def _bn_training(args, kwargs):
    return bool(args[5] if len(args) > 5 else kwargs.get("training"))


class _Recorder(torch.fx.Interpreter):
    """Runs a traced GraphModule and keeps every node's result (make_fx in torch 1.13 leaves
    no 'val' in node.meta). Keeping the results also keeps their storages alive, so storage
    pointers compared by the aliasing checks are never reused."""

    def __init__(self, gm):
        super().__init__(gm)
        self.results = {}

    def run_node(self, n):
        result = super().run_node(n)
        self.results[n] = result
        return result

    def call_function(self, target, args, kwargs):
        return pure_call(target, args, kwargs)


def record(gm, args, arg_names=None):
    """Every node's result of one run of ``gm`` on ``args``. With ``arg_names`` (the graph is
    final: no write left), refuse a run that changes an argument anyway."""
    pristine = [a.clone() for a in args] if arg_names is not None else None
    recorder = _Recorder(gm)
    with torch.no_grad():
        recorder.run(*args)
    if arg_names is not None:
        for name, before, after in zip(arg_names, pristine, args):
            if not _same(before, after):
                raise ValueError(f"argument {name} changed while running the functional "
                                 "graph: an op writes it in place without declaring it (the "
                                 "exporter cannot make that state explicit)")
    return recorder.results


def _same(a, b):
    """Equal dtype, shape and elements, NaN equal to NaN."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return torch.equal(a, b)


# --------------------------------------------------------------------------------------------
# making state explicit


def storage_key(t):
    if not isinstance(t, torch.Tensor) or t.numel() == 0:
        return None
    if hasattr(t, "untyped_storage"):  # PyTorch 2.x (TypedStorage is deprecated there)
        return t.untyped_storage().data_ptr()
    return t.storage().data_ptr()


class _StateThreading:
    """One walk over the functionalized graph, in order, keeping ``current``: node as traced ->
    the node holding its value now. Each write ``W`` (a ``copy_`` left by functionalization, or
    the hidden running-statistics update of a training-mode ``native_batch_norm``) sets
    ``current[destination]``; every later argument is read through ``current``. Afterwards the
    ``copy_`` nodes and the identities (``alias``, ``lift_fresh_copy``) are gone, and each state
    argument whose current value differs from itself gets a graph output."""

    def __init__(self, gm, results, arg_names, state):
        self.gm, self.graph, self.results = gm, gm.graph, results
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        self.labels = dict(zip(placeholders, arg_names))
        self.placeholders = placeholders
        self.state = [n for n, name in zip(placeholders, arg_names) if name in set(state)]
        self.current = {}

    def run(self):
        nodes = list(self.graph.nodes)
        self.position = {n: i for i, n in enumerate(nodes)}
        for i, n in enumerate(nodes):
            if n.op == "output":
                n.args = self._read(n.args)
                self._finish(n)
                break
            if n.op != "call_function":
                continue
            traced = (n.args, n.kwargs)  # as traced: a write's destination is one of these
            n.args, n.kwargs = self._read(n.args), self._read(n.kwargs)
            if n.target in _IDENTITIES:
                self._drop(n, n.args[0])
            elif n.target is _aten.copy_.default:
                self._copy(n, traced[0][0], nodes[i + 1:])
            elif n.target is _BATCH_NORM and _bn_training(n.args, n.kwargs):
                self._batch_norm(n, traced, nodes[i + 1:])
        self.graph.lint()
        return [self.labels[p] for p in self.state if self.current.get(p, p) is not p]

    def _read(self, args):
        return torch.fx.node.map_arg(args, lambda a: self.current.get(a, a))

    def _drop(self, n, replacement):
        n.replace_all_uses_with(replacement)
        self.graph.erase_node(n)

    def _write(self, n, destination, value, later):
        """``n`` writes ``value`` into ``destination`` (a node as traced)."""
        if destination.op == "get_attr":
            raise ValueError(f"node {n.name} ({n.target}) writes in place into the traced "
                             f"constant {destination.target}: the graph format has no "
                             "mutable constants")
        if destination.op == "placeholder" and destination not in self.state:
            raise ValueError(f"node {n.name} ({n.target}) writes in place into argument "
                             f"{self.labels[destination]}: the graph format has no mutable "
                             "state here (only a training step's buffers are state)")
        self._check_no_alias(n, destination, later)
        self.current[destination] = value

    def _check_no_alias(self, n, destination, later):
        """A later reader of another value defined before the write and sharing
        ``destination``'s storage (a view of it) would see the write in eager PyTorch; the
        rewrite cannot give it the new data."""
        key = storage_key(self.results.get(destination))
        if key is None:
            return
        before = self.position[n]
        for m in later:
            for a in _node_args(m):
                if a is destination or self.position.get(a, before) >= before:
                    continue
                if storage_key(self.results.get(a)) == key:
                    what = self.labels.get(destination, destination.name)
                    raise ValueError(f"node {m.name} reads {a.name}, a view of {what}, "
                                     f"after node {n.name} ({n.target}) "
                                     "wrote it in place: the graph format has no views, so "
                                     "it would read the old data")

    def _copy(self, n, destination, later):
        """``copy_(destination, source)``: the destination as traced takes the source."""
        source = n.args[1]
        dst, src = self.results[destination], self.results[n.args[1]]
        if not isinstance(src, torch.Tensor) or dst.shape != src.shape or \
                dst.dtype != src.dtype:
            shown = f"{src.dtype}{list(src.shape)}" if isinstance(src, torch.Tensor) else src
            raise ValueError(f"node {n.name} (aten.copy_) copies {shown} into "
                             f"{dst.dtype}{list(dst.shape)}: only copies of equal dtype and "
                             "shape can become state")
        self._write(n, destination, source, later)
        self._drop(n, source)

    def _batch_norm(self, n, traced, later):
        """Make the hidden running-statistics update of a training batch norm explicit."""
        args, traced = _bn_args(n), _bn_args(n, traced)
        if args[3] is None and args[4] is None:
            return
        x, momentum = args[0], args[6]
        if not isinstance(momentum, (int, float)):
            raise ValueError(f"node {n.name} (native_batch_norm): momentum {momentum!r} is not "
                             "a number")
        shape = list(self.results[x].shape)
        count = self.results[x].numel() // shape[1]
        if count < 2:
            raise ValueError(f"node {n.name} (native_batch_norm): {count} value per channel: "
                             "the unbiased running variance needs at least 2")
        with self.graph.inserting_before(n.next):
            new = _BatchNormUpdate(self.graph, n, x, shape, count, float(momentum)).build(
                {i: args[i] for i in (3, 4)})
        for i, value in new.items():
            self._write(n, traced[i], value, later)

    def _finish(self, output):
        """Append the new value of each changed state argument to the outputs."""
        extra = [self.current[p] for p in self.state if self.current.get(p, p) is not p]
        if extra:
            result = output.args[0]
            items = list(result) if isinstance(result, (tuple, list)) else [result]
            output.args = (tuple(items + extra),)


class _BatchNormUpdate:
    """The nodes computing new running statistics after batch norm node ``bn`` (inserted at
    the graph's insert point, in order):

        save_mean = getitem(bn, 1)                                 [C]
        centered  = sub(input, view(save_mean, [1, C, 1, ...]))
        var_sum   = sum(mul(centered, centered), [0, 2, ...])      [C]
        new_mean  = add(mul(running_mean, 1 - m), mul(save_mean, m))
        new_var   = add(mul(running_var, 1 - m), mul(var_sum, m / (count - 1)))

    as ATen's CPU kernel does (batch_norm_cpu_update_stats_template: the unbiased variance
    var_sum / (count - 1), count = N * spatial)."""

    def __init__(self, graph, bn, x, shape, count, momentum):
        self.graph, self.bn, self.x = graph, bn, x
        self.shape, self.count, self.momentum = shape, count, momentum

    def _call(self, target, *args, name):
        return self.graph.create_node("call_function", target, args, {},
                                      name=f"{self.bn.name}_{name}")

    def build(self, running):
        m, c = self.momentum, self.shape[1]
        save_mean = self._call(operator.getitem, self.bn, 1, name="save_mean")
        new = {}
        if running[3] is not None:
            old = self._call(_aten.mul.Scalar, running[3], 1.0 - m, name="running_mean_kept")
            step = self._call(_aten.mul.Scalar, save_mean, m, name="running_mean_step")
            new[3] = self._call(_aten.add.Tensor, old, step, name="new_running_mean")
        if running[4] is not None:
            rank = len(self.shape)
            mean = self._call(_aten.view.default, save_mean, [1, c] + [1] * (rank - 2),
                              name="batch_mean")
            centered = self._call(_aten.sub.Tensor, self.x, mean, name="centered")
            square = self._call(_aten.mul.Tensor, centered, centered, name="centered_sq")
            var_sum = self._call(_aten.sum.dim_IntList, square, [0] + list(range(2, rank)),
                                 name="var_sum")
            old = self._call(_aten.mul.Scalar, running[4], 1.0 - m, name="running_var_kept")
            step = self._call(_aten.mul.Scalar, var_sum, m / (self.count - 1),
                              name="running_var_step")
            new[4] = self._call(_aten.add.Tensor, old, step, name="new_running_var")
        return new


def _bn_args(n, traced=None):
    """native_batch_norm's 8 arguments by position, keyword arguments included (those of
    ``traced``, an (args, kwargs) pair, if given; else the node's current ones)."""
    args, kwargs = traced if traced is not None else (n.args, n.kwargs)
    args = list(args) + [None] * (8 - len(args))
    for i, name in enumerate(("input", "weight", "bias", "running_mean", "running_var",
                              "training", "momentum", "eps")):
        if name in kwargs:
            args[i] = kwargs[name]
    return args


def _node_args(n):
    found = []
    torch.fx.node.map_arg((n.args, n.kwargs), found.append)
    return found
