"""Fine-tuning from Python: edgegrad.Trainer drives the C library's trainer (eg_trainer_*,
include/edgegrad.h), the training loop `edgegrad train` runs, over numpy arrays:

    tr = edgegrad.Trainer("step.json", optimizer="adam", lr=1e-3, eval="step.eval.json")
    history = tr.fit({"input": x, "target": y}, epochs=5, val=0.25)
    tr.save_weights("tuned.safetensors")       # model.load_state_dict(..., strict=False)

The same options give the same weights as `edgegrad train`, bit for bit (on as many threads:
another count rounds reductions in another order): mini-batches of the
graph's batch size in an order drawn from (seed, epoch), Dropout masks from the same stream,
torch.optim's update rules, StepLR / CosineAnnealingLR per epoch, GradScaler's loss scaling.

Arrays: the trainer reads the training and validation arrays where they are (no copy when an
array is C-contiguous and of a dtype the library takes: the input's, any integer dtype for
labels, uint8 for float32 images with ``normalize``); it keeps a reference to each, and they
must not change while it trains on them. Numpy only, never PyTorch.
"""
import ctypes
import math
import os
import signal
import threading
import weakref

import numpy as np

from . import _capi, runtime
from ._capi import ArgumentError, StateError, Status

_KINDS = {"sgd": 0, "adam": 1, "adamw": 2}
_SCHEDULES = {"constant": 0, "step": 1, "cosine": 2}
_EVENTS = ["step", "epoch", "eval"]
_LOSS_SCALING = {"none": 0, "static": 1, "dynamic": 2, "auto": 3}  # eg_loss_scale_mode
M64 = (1 << 64) - 1  # the largest seed


def default_init(path):
    """STEM.init.safetensors beside ``path`` ("STEM.json" or "STEM.egp", as the exporter and
    `edgegrad compile -o STEM.egp` name them) when it exists, else None."""
    path = os.fspath(path)
    for ext in (".json", ".egp"):
        if path.endswith(ext):
            init = path[:-len(ext)] + ".init.safetensors"
            return init if os.path.isfile(init) else None
    return None


_LABEL_DTYPES = {np.dtype(t) for t in ("int64", "int32", "int8", "uint8")}


def _data_array(info, value, normalize, where):
    """``value`` as the library takes examples of input ``info`` ([N, ...]): kept as it is when
    C-contiguous and of a dtype the trainer reads (the input's; any integer dtype edgegrad has
    for an integer input; uint8 for a float32 one with normalize), else converted once (other
    integers to int64, floats within their kind); anything else is left for the library to
    refuse with its message."""
    a = value if isinstance(value, np.ndarray) else np.asarray(value)
    want = info.dtype
    if want.kind in "iu":
        if a.dtype not in _LABEL_DTYPES and a.dtype.kind in "iub":
            a = np.asarray(a, dtype=np.int64)
    elif not (normalize and want == np.float32 and a.dtype == np.uint8):
        if a.dtype != want and np.can_cast(a.dtype, want, "same_kind"):
            a = np.asarray(a, dtype=want)
    return runtime.as_input(a, a.dtype if a.dtype in runtime._EG_DTYPE else want, where)


def _read_arrays(path, names, what):
    """Arrays `names` of a folder of <name>.npy files or an .npz archive (numpy.savez)."""
    try:
        if os.path.isdir(path):
            return {n: np.load(os.path.join(path, n + ".npy"), allow_pickle=False)
                    for n in names}
        with np.load(path, allow_pickle=False) as z:
            return {n: z[n] for n in names}
    except (OSError, KeyError, ValueError) as e:
        raise ArgumentError(f"{what} {path}: {e}: a folder of <input>.npy files or an .npz "
                            f"archive holding {', '.join(n + '.npy' for n in names)}") from None


class _Arrays:
    """An eg_trainer_array list over numpy arrays, keeping them (and the names) alive."""

    def __init__(self, rt, arrays, normalize, what, exact=False, state=()):
        # the inputs arrays feed: data and labels, not the step's parameters and buffers
        # (`state`: their names), which an eval graph takes as inputs of its own
        feeds = [t for t in rt.inputs if t.role in ("data", "label") and t.name not in state]
        if isinstance(arrays, (str, os.PathLike)):  # files, as `edgegrad train --data` reads
            arrays = _read_arrays(os.fspath(arrays), [t.name for t in feeds], what)
        if isinstance(arrays, (tuple, list)):
            if len(arrays) != len(feeds):
                raise ArgumentError(
                    f"{what}: {len(arrays)} arrays for {len(feeds)} data and label inputs "
                    f"({', '.join(t.name for t in feeds)}): give one each, in that order, or a "
                    f"dict by name")
            arrays = dict(zip((t.name for t in feeds), arrays))
        if not isinstance(arrays, dict):
            raise ArgumentError(f"{what}: expected a dict {{input name: array}} or a tuple of "
                                f"arrays, got {type(arrays).__name__}")
        self.arrays, self.names = [], []
        self.c = _capi.sized((_capi.TrainerArray * max(1, len(arrays)))())
        for k, (name, value) in enumerate(arrays.items()):
            info = rt._in.get(name)
            where = f"{what}[{name!r}]"  # the library's messages: "data arrays['target']: ..."
            if info is None:  # the library refuses it, naming the inputs
                a = np.asarray(value)
            elif exact:  # one batch: the input's own dtype and shape
                a = runtime.as_input(value, info.dtype, where)
            else:
                a = _data_array(info, value, normalize, where)
            if a.dtype not in runtime._EG_DTYPE:
                a = runtime.as_input(a, info.dtype if info else a.dtype, where)
            self.arrays.append(a)
            self.names += [name.encode(), where.encode()]
            self.c[k].input, self.c[k].origin = self.names[-2], self.names[-1]
            self.c[k].t = runtime.tensor_of(a)
        self.n = len(arrays)


def _identity(arrays):
    """Which array objects ``arrays`` (a dict or a sequence) holds, by name or position."""
    if isinstance(arrays, dict):
        return tuple(sorted((k, id(v)) for k, v in arrays.items()))
    if isinstance(arrays, (tuple, list)):
        return tuple((k, id(v)) for k, v in enumerate(arrays))
    return id(arrays)


def _event(e):
    kind = _EVENTS[e.kind] if 0 <= e.kind < len(_EVENTS) else str(e.kind)

    def opt(x):
        return None if math.isnan(x) else x

    d = {"event": kind, "epoch": e.epoch}
    if kind == "step":
        d.update(step=e.step, steps=e.steps, global_step=e.global_step, loss=e.loss, lr=e.lr)
    else:
        if kind == "epoch":
            d.update(train_loss=e.loss, steps=e.steps, steps_run=e.steps_run,
                     global_step=e.global_step, seconds=e.seconds, zero_grads=e.zero_grads)
        d.update(val_loss=opt(e.val_loss), val_accuracy=opt(e.val_accuracy), lr=e.lr)
    d.update(loss_scale=e.loss_scale, skipped_steps=e.skipped_steps)
    return d


class _Interrupt:
    """Ctrl-C while the library trains: Python runs a signal's handler only between bytecodes,
    here at the next event's callback, where a KeyboardInterrupt raised at any point would be
    lost to ctypes (which ignores a callback's exception). So during a trainer call SIGINT's
    default handler is replaced by one that sets ``hit``; the callback then stops the run
    (returning non-zero) and the call raises KeyboardInterrupt. In the main thread only, and
    only over Python's default handler (an app's own handler is left as it is)."""

    def __init__(self):
        self.hit, self.old = False, None

    def _handler(self, signum, frame):
        self.hit = True

    def __enter__(self):
        self.hit, self.old = False, None
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self.old = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc):
        if self.old is not None:
            signal.signal(signal.SIGINT, self.old)
            self.old = None


def _thunk(ref):
    """The C callback of a trainer: its _on_event, through a weak reference (so that the thunk
    the trainer holds keeps no cycle and the trainer is freed as soon as it is unused)."""
    def on_event(event, user):
        tr = ref()
        return tr._on_event(event) if tr is not None else 0
    return on_event


class Trainer(_capi.Closable):
    """A training loop over a training step (see the module's doc).

    ``program``: the step — a path (STEP.json, or a compiled STEP.egp), loaded with ``soc``,
    ``threads``, ``max_memory`` and ``precision`` as edgegrad.load takes them, or a Runtime.
    ``init``: the parameters' and buffers' first values (a safetensors file by state_dict name,
    or a folder of <input>.npy); None: STEM.init.safetensors beside a ``program`` path when it
    exists (a Runtime keeps the values it has).
    ``optimizer``: "sgd", "adam" or "adamw", with torch.optim's rules and ``lr`` (None:
    1e-3), ``momentum``, ``dampening``, ``nesterov`` (SGD), ``betas``, ``eps`` (Adam, AdamW),
    ``weight_decay`` (None: torch's default, 0 or for AdamW 1e-2).
    ``schedule``: None or "constant"; ("step", step_size[, gamma=0.1]) as StepLR;
    ("cosine", T_max) as CosineAnnealingLR; applied per epoch.
    ``eval``: the evaluation graph (STEM.eval.json, or its .egp; a path or a Runtime), run over
    the validation set fit() or evaluate() is given.
    ``seed``, ``shuffle``: the example order and the Dropout masks' stream.
    ``normalize``: (mean, std): uint8 images for float32 inputs become (x/255 - mean) / std.
    ``loss_scale``: None (the library's choice, as `edgegrad train`'s: dynamic where the NPU
    partitions compute in fp16, else none), "none", "dynamic" (``loss_scale_interval`` good
    steps before it grows; None: 2000) or a number (a static scale).
    ``callback``: called with each event as a dict ({"event": "step"|"epoch"|"eval", ...});
    returning True stops fit() after that event; an exception it raises stops fit() and is
    raised from it.
    Errors raise edgegrad.Error (a subclass per status) with the library's message.
    """

    def __init__(self, program, init=None, optimizer="sgd", lr=None, momentum=0.0,
                 dampening=0.0, nesterov=False, weight_decay=None, betas=(0.9, 0.999), eps=1e-8,
                 schedule=None, eval=None, seed=0, shuffle=True, normalize=None, loss_scale=None,
                 loss_scale_interval=None, callback=None, soc=None, threads=None,
                 max_memory=None, precision=None):
        self._tr = None
        self._owned, self._used = [], []
        self._lib = lib = _capi.library()
        self.callback = callback
        self._data = self._val = None
        self._given = None  # (identity of the arrays set_data was given, val fraction, them)
        self._pending_checkpoint = None
        self._events, self._raised, self._stop = None, None, False
        self._interrupt = _Interrupt()
        load = dict(soc=soc, threads=threads, max_memory=max_memory, precision=precision)
        try:
            self.runtime = self._runtime(program, load, "program")
            self.eval_runtime = self._runtime(eval, load, "eval") if eval is not None else None
            opt = self._options(optimizer, lr, momentum, dampening, nesterov, weight_decay,
                                betas, eps, schedule, seed, shuffle, normalize, loss_scale,
                                loss_scale_interval)
            tr = ctypes.c_void_p()
            lib.check(lib.eg_trainer_create(self.runtime.handle, ctypes.byref(opt),
                                            ctypes.byref(tr)))
            self._tr = tr
            self._normalize = bool(normalize)
            self._thunk = _capi.TRAINER_CALLBACK(_thunk(weakref.ref(self)))
            lib.eg_trainer_set_callback(tr, self._thunk, None)
            if init is None and not isinstance(program, runtime.Runtime):
                init = default_init(program)
            if init is not None:
                self.runtime.load_weights(init)
        except BaseException:
            self.close()
            raise

    def _runtime(self, what, load, label):
        if isinstance(what, runtime.Runtime):
            rt = what
        elif isinstance(what, (str, bytes, os.PathLike)):
            rt = runtime.load(what, **load)
            self._owned.append(rt)
        else:
            raise ArgumentError(f"{label}: expected a path or an edgegrad.Runtime, got "
                                f"{type(what).__name__}")
        rt.handle  # a closed runtime is refused here  # noqa: B018
        rt._users += 1
        self._used.append(rt)
        return rt

    def _options(self, optimizer, lr, momentum, dampening, nesterov, weight_decay, betas, eps,
                 schedule, seed, shuffle, normalize, loss_scale, loss_scale_interval):
        lib = self._lib
        if optimizer not in _KINDS:
            raise ArgumentError(f"optimizer {optimizer!r}: expected 'sgd', 'adam' or 'adamw'")
        kind = _KINDS[optimizer]
        if kind != 0 and (momentum or dampening or nesterov):
            raise ArgumentError(f"momentum/dampening/nesterov are options of sgd, not of "
                                f"{optimizer}")
        o, opt = _capi.OptimizerOptions(), _capi.TrainerOptions()
        lib.check(_capi.fill(lib.eg_optimizer_defaults, kind, o))
        lib.check(_capi.fill(lib.eg_trainer_defaults, opt))
        o.loss_scale = _LOSS_SCALING["auto"]  # the trainer's default (its NULL optimizer's)
        if lr is not None:
            o.lr = lr
        if weight_decay is not None:
            o.weight_decay = weight_decay
        o.momentum, o.dampening, o.nesterov = momentum, dampening, bool(nesterov)
        if kind != 0:
            o.beta1, o.beta2 = betas
            o.eps = eps
        self._loss_scale(o, loss_scale, loss_scale_interval)
        opt.optimizer = ctypes.pointer(o)  # keeps o alive as long as opt
        self._schedule(opt, schedule)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not (
                0 <= seed <= M64):
            raise ArgumentError(f"seed {seed!r}: expected an integer in [0, 2^64)")
        opt.seed, opt.shuffle = int(seed), bool(shuffle)
        if normalize is not None:
            try:
                mean, std = normalize
            except (TypeError, ValueError):
                raise ArgumentError(f"normalize {normalize!r}: expected (mean, std)") from None
            opt.normalize, opt.mean, opt.std = True, mean, std
        return opt

    def _loss_scale(self, o, loss_scale, interval):
        """Loss scaling into eg_optimizer_options ``o``: None leaves the trainer's default,
        AUTO (dynamic where the NPU partitions compute in fp16, else none)."""
        if loss_scale is None:
            pass
        elif loss_scale == "none":
            o.loss_scale = _LOSS_SCALING["none"]
        elif loss_scale == "dynamic":
            o.loss_scale = _LOSS_SCALING["dynamic"]
        elif isinstance(loss_scale, (int, float, np.number)) and not isinstance(loss_scale, bool):
            o.loss_scale, o.init_scale = _LOSS_SCALING["static"], float(loss_scale)
        else:
            raise ArgumentError(f"loss_scale {loss_scale!r}: expected None, 'none', 'dynamic' "
                                f"or a scale > 0")
        if interval is not None:
            if o.loss_scale not in (_LOSS_SCALING["dynamic"], _LOSS_SCALING["auto"]):
                raise ArgumentError(f"loss_scale_interval {interval}: the interval is dynamic "
                                    f"loss scaling's (loss_scale='dynamic' or None)")
            o.growth_interval = interval

    def _schedule(self, opt, schedule):
        if schedule is None or schedule == "constant":
            return
        kind = schedule[0] if isinstance(schedule, (tuple, list)) and schedule else schedule
        args = tuple(schedule[1:]) if isinstance(schedule, (tuple, list)) else ()
        if kind == "step" and 1 <= len(args) <= 2:
            opt.schedule, opt.lr_step = _SCHEDULES["step"], args[0]
            if len(args) == 2:
                opt.lr_gamma = args[1]
        elif kind == "cosine" and len(args) == 1:
            opt.schedule, opt.epochs = _SCHEDULES["cosine"], args[0]
        else:
            raise ArgumentError(f"schedule {schedule!r}: expected None, 'constant', "
                                f"('step', step_size[, gamma]) or ('cosine', T_max)")

    # ---- lifetime ----

    @property
    def handle(self):
        if not self._tr:
            raise StateError("the Trainer was closed")
        return self._tr

    def close(self):
        """Frees the trainer, then the runtimes it loaded itself (a Runtime it was given stays
        usable). Also done when the object is collected."""
        if getattr(self, "_tr", None):
            self._lib.eg_trainer_destroy(self._tr)
            self._tr = None
        for rt in getattr(self, "_used", []):
            rt._users -= 1
        self._used = []
        for rt in getattr(self, "_owned", []):
            rt.close()
        self._owned = []

    # ---- events ----

    def _on_event(self, event):
        if self._interrupt.hit:  # Ctrl-C: stop after this event, raised by _call
            return 1
        try:
            d = _event(event.contents)
            if self._events is not None and d["event"] == "epoch":
                self._events.append(d)
            if self.callback is not None and self.callback(d) is True:
                self._stop = True
                return 1
            return 0
        except BaseException as e:  # noqa: B036 - raised again from fit()/step()
            self._raised = e
            return 1

    def _call(self, fn, *args):
        """Runs a trainer call that may report events; raises what a callback raised (or
        KeyboardInterrupt for a Ctrl-C while it ran), then the call's own error. Returns
        whether a callback asked to stop."""
        self._raised, self._stop = None, False
        with self._interrupt:
            status = fn(*args)
        raised, stop = self._raised, self._stop
        self._raised = None
        if raised is not None:
            raise raised
        if self._interrupt.hit:
            raise KeyboardInterrupt
        if stop and status == Status.STATE:
            return True
        self._lib.check(status)
        return False

    # ---- data ----

    def set_data(self, arrays, val=None):
        """The training set ({input name: array [N, ...]} for every data and label input, or a
        tuple of them in input order) and, with an eval graph, the validation set (the same,
        or a fraction in (0, 1): that share of ``arrays`` held back as `edgegrad train
        --val-split` does, the last of an order drawn from the seed). New training arrays start
        the position over at epoch 0."""
        fraction = val if isinstance(val, float) else None
        if fraction is not None and self.eval_runtime is None:
            raise ArgumentError(f"val={val}: a validation set needs the evaluation graph: "
                                f"Trainer(..., eval='STEM.eval.json')")
        data = _Arrays(self.runtime, arrays, self._normalize, "arrays")
        self._lib.check(self._lib.eg_trainer_set_data(self.handle, data.c, data.n))
        # what was given, by identity (its arrays held, so that no other object takes an id)
        values = list(arrays.values() if isinstance(arrays, dict) else arrays)
        self._data, self._given = data, (_identity(arrays), fraction, values)
        if fraction is not None:
            self._lib.check(self._lib.eg_trainer_hold_out(self.handle, self.eval_runtime.handle,
                                                          fraction))
        elif val is not None:
            self.set_val(val)
        if self._pending_checkpoint is not None:
            path, self._pending_checkpoint = self._pending_checkpoint, None
            self.load_checkpoint(path)

    def set_val(self, val):
        """The validation set of the eval graph ({input name: array} or a tuple)."""
        if self.eval_runtime is None:
            raise ArgumentError("val: a validation set needs the evaluation graph: "
                                "Trainer(..., eval='STEM.eval.json')")
        state = {t.name for t in self.runtime.inputs if t.role in ("parameter", "buffer")}
        v = _Arrays(self.eval_runtime, val, self._normalize, "val", state=state)
        self._lib.check(self._lib.eg_trainer_set_eval(self.handle, self.eval_runtime.handle,
                                                      v.c, v.n))
        self._val = v

    # ---- training ----

    def fit(self, arrays=None, epochs=1, val=None):
        """Trains until ``epochs`` epochs are done in all (a total: a trainer restored from a
        checkpoint after epoch 1 and fitted to epochs=2 runs one more; at or past it, nothing).
        ``arrays``: the training set (set_data: a dict by input name, a tuple in the inputs'
        order, or the path of a folder of <input>.npy files or of an .npz archive, as
        ``edgegrad train --data`` reads; None: the one given before; the very same
        arrays again keep the position and the split they had); ``val``: the validation set or
        a fraction of ``arrays`` (set_data).
        Before the first step of a fresh run the validation set is evaluated (an "eval" event).
        Returns the history of the epochs run now: a list of dicts (epoch, train_loss, val_loss,
        val_accuracy — None without a validation set or for a non-classifier —, lr, seconds,
        steps, steps_run, global_step, zero_grads, loss_scale, skipped_steps)."""
        fraction = val if isinstance(val, float) else None
        same = self._given is not None and self._given[0] == _identity(arrays) and (
            fraction is None or fraction == self._given[1])  # no val: the split made before
        if arrays is not None and not same:
            self.set_data(arrays, val)
        elif fraction is not None and arrays is None:
            raise ArgumentError("val: a fraction splits the training arrays given with it: "
                                "pass them again (fit(arrays, val=...))")
        elif val is not None and fraction is None:
            self.set_val(val)
        if self._data is None:
            raise StateError("fit: no training set: give the arrays (fit(arrays, epochs=...))")
        self._events = []
        try:
            self._call(self._lib.eg_trainer_fit, self.handle, int(epochs))
            return self._events
        finally:
            self._events = None

    def step(self, batch=None):
        """One training step; returns its loss. ``batch`` ({input name: array [B, ...]} for
        every data and label input, or a tuple in input order): a step on that batch alone
        (eg_trainer_step_batch: no data set, order or epochs). None: the next step of the
        training set's epochs (eg_trainer_step; at an epoch's end it evaluates and reports)."""
        loss = ctypes.c_double()
        if batch is None:
            if self._data is None:
                raise StateError("step: no training set: give a batch (step(batch)) or the "
                                 "arrays first (set_data)")
            self._call(self._lib.eg_trainer_step, self.handle, ctypes.byref(loss))
        else:
            b = _Arrays(self.runtime, batch, self._normalize, "batch", exact=True)
            self._call(self._lib.eg_trainer_step_batch, self.handle, b.c, b.n,
                       ctypes.byref(loss))
        return loss.value

    def evaluate(self, val=None):
        """The evaluation graph over the validation set (``val``: set it first) with the
        current parameters and buffers: {"val_loss", "val_accuracy"} (accuracy None where the
        graph is no classifier)."""
        if val is not None:
            self.set_val(val)
        loss, acc = ctypes.c_double(), ctypes.c_double()
        self._lib.check(self._lib.eg_trainer_evaluate(self.handle, ctypes.byref(loss),
                                                      ctypes.byref(acc)))
        return {"val_loss": loss.value,
                "val_accuracy": None if math.isnan(acc.value) else acc.value}

    @property
    def position(self):
        """{"epoch": epochs done, "step": steps done in the next epoch, "steps_per_epoch"}."""
        e, s, n = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
        self._lib.eg_trainer_position(self.handle, ctypes.byref(e), ctypes.byref(s),
                                      ctypes.byref(n))
        return {"epoch": e.value, "step": s.value, "steps_per_epoch": n.value}

    @property
    def sizes(self):
        """{"examples", "batch", "val_examples", "val_batch"}: the training set's examples and
        the step's batch size (an epoch feeds examples // batch batches), the validation set's
        (0 without one)."""
        v = [ctypes.c_int64() for _ in range(4)]
        self._lib.eg_trainer_sizes(self.handle, *(ctypes.byref(x) for x in v))
        return dict(zip(("examples", "batch", "val_examples", "val_batch"), (x.value for x in v)))

    @property
    def loss_scaling(self):
        """The loss scaling the trainer does: "none", "static" or "dynamic" (None's choice
        resolved)."""
        mode = self._lib.eg_optimizer_loss_scaling(self._lib.eg_trainer_optimizer(self.handle))
        return {v: k for k, v in _LOSS_SCALING.items()}.get(mode, str(mode))

    @property
    def loss_scale(self):
        """The loss scale of the next step (1 without loss scaling)."""
        return self._lib.eg_optimizer_loss_scale(self._lib.eg_trainer_optimizer(self.handle))

    @property
    def skipped_steps(self):
        """Steps skipped so far because loss scaling found their gradients overflowed."""
        return self._lib.eg_optimizer_skipped_steps(self._lib.eg_trainer_optimizer(self.handle))

    # ---- state and files ----

    def state_dict(self):
        """The parameters and buffers as they are now: {PyTorch state_dict name: numpy array}
        (copies; model.load_state_dict({k: torch.from_numpy(v) ...}, strict=False) takes
        them)."""
        self.handle  # noqa: B018 - refused once closed
        return self.runtime.state_dict()

    def save_weights(self, path, producer=None):
        """Writes the parameters and buffers (safetensors, atomically) under their state_dict
        names, as `edgegrad train --out` does."""
        self._lib.check(self._lib.eg_trainer_save_weights(
            self.handle, runtime._path(path), producer.encode() if producer else None))
        return path

    def set_log(self, path, append=False):
        """Writes every event to ``path`` as `edgegrad train --log` does (one JSON object per
        line, flushed as written), appending with ``append`` (a resumed run), else anew; None
        stops it."""
        self._lib.check(self._lib.eg_trainer_set_log(
            self.handle, runtime._path(path) if path is not None else None, bool(append)))

    def set_checkpoints(self, path, every_steps=0):
        """Has the trainer write a checkpoint to ``path`` after every epoch, and with
        ``every_steps`` also every that many steps within one (`edgegrad train --checkpoint`,
        --checkpoint-every); None stops it. A failing step's error says which checkpoint is
        intact."""
        self._lib.check(self._lib.eg_trainer_set_checkpoints(
            self.handle, runtime._path(path) if path is not None else None, int(every_steps)))

    def save_checkpoint(self, path):
        """Writes a checkpoint (safetensors, atomically): parameters, buffers, optimizer state,
        position, random stream and the run's signature; load_checkpoint continues from it bit
        for bit."""
        self._lib.check(self._lib.eg_trainer_save_checkpoint(self.handle, runtime._path(path)))
        return path

    def load_checkpoint(self, path):
        """Restores a checkpoint of this run (same model, options and data; another is refused
        naming the first difference). Without a training set yet, it is restored when one is
        given (fit(arrays) or set_data), since the checkpoint is checked against the data."""
        self.handle  # noqa: B018
        if self._data is None:
            if not os.path.isfile(path):
                raise _capi.FileError(f"{path}: no such checkpoint file")
            self._pending_checkpoint = os.fspath(path)
            return
        self._lib.check(self._lib.eg_trainer_load_checkpoint(self.handle, runtime._path(path)))
