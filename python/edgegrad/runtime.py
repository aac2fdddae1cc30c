"""Running edgegrad from Python: load a training step (graph JSON, or a compiled .egp program),
set its inputs from numpy arrays, run it, read its outputs. ctypes over the C library
(edgegrad._capi says which library and where it is looked for); numpy only, never PyTorch.

    import edgegrad
    rt = edgegrad.load("step.json")                  # CPU kernels; soc="SM8650": compiled
    rt.load_weights("step.init.safetensors")         # parameters and buffers by state_dict name
    out = rt.run(input=x, target=t)                  # {"loss": array(...), "grad_fc_weight": ...}
    rt.output("loss")                                # the last run's, copied

Arrays in: a C-contiguous array of the input's dtype is handed to the library as it is (the
library copies it into the runtime's memory); anything else is converted once with
``numpy.asarray(x, dtype, order="C")`` where numpy casts it safely or within its kind
(float64 to float32, int32 to int64), and otherwise given as it is for the library to refuse
with its message. Arrays out: copies, valid after the next run and after close().

One Runtime is one C runtime: not thread-safe (use one per thread), as the C API.
"""
import ctypes
import os

import numpy as np

from . import _capi
from ._capi import ArgumentError, Error, StateError

# eg_dtype <-> numpy
DTYPES = [np.dtype("float32"), np.dtype("float64"), np.dtype("float16"), np.dtype("int64"),
          np.dtype("int32"), np.dtype("int8"), np.dtype("uint8"), np.dtype("bool")]
_EG_DTYPE = {dt: i for i, dt in enumerate(DTYPES)}

_PRECISIONS = {None: 0, "fp32": 1, "fp16": 2}


class TensorInfo:
    """One input or output of a model: ``name``, ``dtype`` (numpy), ``shape`` (tuple),
    ``role`` (eg_tensor_desc.role: "data", "label", "parameter", "buffer", "random" for
    inputs; "loss", "gradient", "buffer_update", "output" for outputs), ``pair`` (the partner's
    name: a parameter's gradient output and back, a buffer's update and back; else None),
    ``state_dict`` (a parameter's or buffer's PyTorch state_dict name, else None),
    ``random_p`` (a random input's probability of a one, else None) and ``index``."""

    __slots__ = ("name", "dtype", "shape", "role", "pair", "state_dict", "random_p", "index")

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)

    def __repr__(self):
        extra = "".join(f", {k}={getattr(self, k)!r}" for k in ("pair", "state_dict", "random_p")
                        if getattr(self, k) is not None)
        return (f"TensorInfo({self.name!r}, {self.dtype}, {self.shape}, role={self.role!r}"
                f"{extra})")


def _path(p):
    return os.fsencode(p)


def parse_size(value):
    """Bytes from an int or a string "512M", "2G", "100K", "4096" (as the CLI's --max-memory)."""
    if value is None:
        return 0
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        if value < 0:
            raise ArgumentError(f"max_memory {value}: a size in bytes must be >= 0")
        return int(value)
    s = str(value).strip()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(s[-1:].upper())
    digits = s[:-1] if scale else s
    if not digits.isdigit():
        raise ArgumentError(f"max_memory {value!r}: expected bytes, or a number with K, M, G or "
                            f"T (512M, 2G)")
    return int(digits) * (scale or 1)


def tensor_of(array):
    """An eg_tensor viewing numpy ``array`` (C-contiguous, a dtype edgegrad has)."""
    t = _capi.Tensor()
    t.dtype = _EG_DTYPE[array.dtype]
    t.rank = array.ndim
    for d, n in enumerate(array.shape):
        t.shape[d] = n
    t.data = array.ctypes.data if array.size else None
    return t


def as_input(array, want, what):
    """``array`` as a C-contiguous numpy array for an input of dtype ``want``: the array itself
    when it already is one, else converted once (a safe or same-kind cast); a dtype numpy
    cannot cast so is left for the library to refuse with its message. ``what`` names it."""
    a = array if isinstance(array, np.ndarray) else np.asarray(array)
    if a.dtype != want and np.can_cast(a.dtype, want, "same_kind"):
        return np.asarray(a, dtype=want, order="C")
    if a.dtype.newbyteorder("=") in _EG_DTYPE and a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("="))
    if a.dtype not in _EG_DTYPE:
        raise ArgumentError(f"{what}: dtype {a.dtype}: not a dtype edgegrad has "
                            f"({', '.join(str(d) for d in DTYPES)}); the input is {want}")
    if a.ndim > _capi.MAX_RANK:
        raise ArgumentError(f"{what}: rank {a.ndim}: edgegrad handles rank <= {_capi.MAX_RANK}")
    return a if a.flags.c_contiguous else np.asarray(a, order="C")


def copy_out(t):
    """A numpy copy of eg_tensor ``t`` (a view into library memory)."""
    shape = tuple(t.shape[d] for d in range(t.rank))
    out = np.empty(shape, DTYPES[t.dtype])
    if out.nbytes:
        ctypes.memmove(out.ctypes.data, t.data, out.nbytes)
    return out


def _describe(lib, model, is_input, n):
    infos = []
    for i in range(n):
        d = _capi.TensorDesc()
        lib.check(_capi.fill(lib.eg_model_input if is_input else lib.eg_model_output, model, i,
                             d))
        t = d.tensor
        infos.append(dict(
            name=d.name.decode(), dtype=DTYPES[t.dtype],
            shape=tuple(t.shape[k] for k in range(t.rank)),
            role=lib.eg_io_role_name(d.role).decode(), pair=d.pair,
            state_dict=d.state_dict.decode() if d.state_dict else None,
            random_p=d.random_p if d.random else None, index=i))
    return infos


def _compile_options(lib, soc, precision):
    opt = _capi.CompileOptions()
    opt.soc = soc.encode()
    opt.precision = _precision(precision)
    return opt


def _precision(precision):
    if precision not in _PRECISIONS:
        raise ArgumentError(f"precision {precision!r}: expected None, 'fp16' or 'fp32'")
    return _PRECISIONS[precision]


def _load_model(lib, path):
    model = ctypes.c_void_p()
    p = _path(path)
    if lib.has_compiler:
        lib.check(lib.eg_model_load(p, ctypes.byref(model)))
        return model
    status = lib.eg_model_load_compiled(p, ctypes.byref(model))
    if status == _capi.Status.FORMAT and not _is_program(path):
        raise _capi.FormatError(
            f"{path}: not a compiled program, and {lib.path} is the runtime library "
            f"libedgegrad_rt, which runs compiled programs (.egp) only: load graph JSON with "
            f"libedgegrad (EDGEGRAD_LIB), or compile it first (edgegrad compile -o STEP.egp)")
    lib.check(status)
    return model


def _is_program(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"EGP1"
    except OSError:
        return True  # the library's own message says why it cannot be read


class Runtime(_capi.Closable):
    """A loaded model (a training step, an evaluation graph, any exported function) and the
    runtime that runs it: ``edgegrad.load(path, ...)`` makes one. See the module's doc."""

    def __init__(self, path, soc=None, threads=None, max_memory=None, precision=None):
        self.path = os.fspath(path)
        self._lib = lib = _capi.library()
        self._model = self._rt = None
        self._users = 0  # Trainers holding this runtime (close() waits for them)
        opt = _capi.RuntimeOptions()
        opt.max_memory_bytes = parse_size(max_memory)
        opt.num_threads = _threads(threads)
        opt.precision = _precision(precision)
        self._model = _load_model(lib, self.path)
        try:
            self.compiled = bool(lib.eg_model_is_compiled(self._model))
            rt = ctypes.c_void_p()
            if soc is not None and not self.compiled:
                if not lib.has_compiler:
                    raise Error(f"{lib.path}: soc={soc!r}: the runtime library cannot compile")
                copt = _compile_options(lib, soc, precision)
                lib.check(lib.eg_runtime_create_compiled_with_options(
                    self._model, ctypes.byref(copt), ctypes.byref(opt), ctypes.byref(rt)))
            else:
                if soc is not None and soc.upper() != self.program()["soc"].upper():
                    raise ArgumentError(f"{self.path}: soc={soc!r}: the program is compiled for "
                                        f"{self.program()['soc']}")
                lib.check(lib.eg_runtime_create_with_options(self._model, ctypes.byref(opt),
                                                             ctypes.byref(rt)))
            self._rt = rt
        except BaseException:
            self.close()
            raise
        self.soc = soc if not self.compiled else self.program()["soc"]
        self.inputs, self.outputs = self._infos()
        self._in = {t.name: t for t in self.inputs}
        self._out = {t.name: t for t in self.outputs}

    def _infos(self):
        """(inputs, outputs) as TensorInfo lists, each pair given by its partner's name."""
        lib, m = self._lib, self._model
        ins = _describe(lib, m, True, lib.eg_model_num_inputs(m))
        outs = _describe(lib, m, False, lib.eg_model_num_outputs(m))
        for mine, other in ((ins, outs), (outs, ins)):
            for d in mine:
                d["pair"] = other[d["pair"]]["name"] if 0 <= d["pair"] < len(other) else None
        return [TensorInfo(**d) for d in ins], [TensorInfo(**d) for d in outs]

    # ---- lifetime ----

    def close(self):
        """Frees the runtime and the model (also done when the object is collected). Any use
        after it raises StateError; arrays returned earlier stay valid (they are copies).
        StateError while a Trainer uses this runtime: close the Trainer first."""
        if getattr(self, "_users", 0):
            raise StateError(f"{self.path}: the runtime is used by a Trainer: close the Trainer "
                             f"first")
        lib = getattr(self, "_lib", None)
        if lib is None:
            return
        if getattr(self, "_rt", None):
            lib.eg_runtime_destroy(self._rt)
        if getattr(self, "_model", None):
            lib.eg_model_destroy(self._model)
        self._rt = self._model = None

    @property
    def handle(self):
        """The eg_runtime pointer (a ctypes void pointer), for the trainer."""
        if not self._rt:
            raise StateError(f"{self.path}: the runtime was closed")
        return self._rt

    @property
    def model_handle(self):
        if not self._model:
            raise StateError(f"{self.path}: the runtime was closed")
        return self._model

    # ---- describing ----

    def input_info(self, name):
        """The TensorInfo of input ``name``."""
        return self._info(self._in, name, "input", self.inputs)

    def output_info(self, name):
        """The TensorInfo of output ``name``."""
        return self._info(self._out, name, "output", self.outputs)

    def _info(self, table, name, what, infos):
        try:
            return table[name]
        except KeyError:
            raise ArgumentError(f"{self.path}: no {what} called {name!r} (its {what}s: "
                                f"{', '.join(t.name for t in infos)})") from None

    def program(self):
        """A compiled model's program: {"soc", "precision", "partitions", "npu_nodes",
        "cpu_nodes"}; None for a graph run on the CPU kernels."""
        if not self.compiled:
            return None
        info = _capi.ProgramInfo()
        self._lib.check(_capi.fill(self._lib.eg_model_program_info, self.model_handle, info))
        return {"soc": info.soc.decode(), "precision": info.precision.decode(),
                "partitions": info.num_partitions, "npu_nodes": info.num_npu_nodes,
                "cpu_nodes": info.num_cpu_nodes}

    def input_classes(self, name):
        """(classes, ignore_index) of a label input that an nll_loss reads (classes 0: none)."""
        info = self.input_info(name)
        c, ig = ctypes.c_int64(), ctypes.c_int64()
        self._lib.check(self._lib.eg_model_input_classes(self.model_handle, info.index,
                                                         ctypes.byref(c), ctypes.byref(ig)))
        return c.value, ig.value

    def __repr__(self):
        where = f", compiled for {self.soc}" if self.soc else ""
        return (f"<edgegrad.Runtime {self.path!r}{where}: {len(self.inputs)} inputs, "
                f"{len(self.outputs)} outputs>")

    # ---- running ----

    def set_input(self, name, value):
        """Sets input ``name`` (the library copies the array into the runtime's memory; a
        C-contiguous array of the input's dtype is passed without a copy on this side).
        ArgumentError names the input and what it expects when dtype or shape differ."""
        info = self.input_info(name)
        a = as_input(value, info.dtype, f"{self.path}: input {name}")
        t = tensor_of(a)
        self._lib.check(self._lib.eg_runtime_set_input(self.handle, name.encode(),
                                                       ctypes.byref(t)))

    def set_inputs(self, inputs):
        """Sets every input of the dict ``inputs`` ({name: array})."""
        for name, value in inputs.items():
            self.set_input(name, value)

    def load_weights(self, path):
        """Sets every parameter and buffer input from ``path``: a safetensors file holding each
        under its state_dict name or its input name (STEM.init.safetensors, a trained weights
        file, a whole state_dict), or a folder of <input>.npy. Checked whole before any is
        set."""
        self._lib.check(self._lib.eg_runtime_load_weights(self.handle, _path(path)))

    def run(self, inputs=None, /, **named):
        """Sets the inputs given (a dict, and/or keywords: ``run(input=x, target=t)``), runs
        the model once, and returns every output as {name: numpy array} (copies). Inputs not
        given keep the values they had (every input must have been set once)."""
        if inputs:
            self.set_inputs(inputs)
        if named:
            self.set_inputs(named)
        self._lib.check(self._lib.eg_runtime_run(self.handle))
        return {t.name: self.output(t.name) for t in self.outputs}

    def output(self, name):
        """Output ``name`` of the last run, copied into a new array (it stays valid after later
        runs and after close()). StateError before the first run."""
        info = self.output_info(name)
        t = _capi.Tensor()
        self._lib.check(self._lib.eg_runtime_output(self.handle, info.index, ctypes.byref(t)))
        return copy_out(t)

    def input(self, name):
        """The current value of input ``name`` (as set, or as training changed it), copied."""
        info = self.input_info(name)
        t = _capi.Tensor()
        self._lib.check(self._lib.eg_runtime_input(self.handle, info.index, ctypes.byref(t)))
        return copy_out(t)

    def state_dict(self):
        """The parameters and buffers ({PyTorch state_dict name: numpy array}, copies; an
        input without a state_dict name under its own name), as they are now."""
        return {t.state_dict or t.name: self.input(t.name) for t in self.inputs
                if t.role in ("parameter", "buffer")}


def default_threads():
    """The kernel threads a runtime gets with threads=None: OMP_NUM_THREADS (its first number),
    else one per core this process may run on — what the CLI's kernels get. Said explicitly
    rather than left to OpenMP's process default, which an imported PyTorch changes (Debian's
    1.13 sets it to 1 on import)."""
    first = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if first.isdigit() and int(first) > 0:
        return int(first)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _threads(threads):
    if threads is None:
        return default_threads()
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ArgumentError(f"threads {threads!r}: expected an integer >= 1 (None: "
                            f"OMP_NUM_THREADS, else one per core)")
    return int(threads)


def load(path, soc=None, threads=None, max_memory=None, precision=None):
    """Loads a model and creates its runtime.

    ``path``: a graph JSON (``STEP.json``, ``STEM.eval.json``: needs libedgegrad, the
    compiler's library) or a compiled program (``.egp``: libedgegrad_rt suffices); told apart
    by the file's first bytes. ``soc``: compile a graph for that SoC ("SM8650"; NPU partitions
    on the NPU executor, the rest on the CPU kernels); for a program, its own SoC (another is
    refused). ``threads``: kernel threads (None: OMP_NUM_THREADS, else one per core, as the CLI;
    never OpenMP's process default, which importing PyTorch changes).
    ``max_memory``: bytes the runtime may reserve (an int, or "512M", "2G"; LimitError beyond
    it). ``precision``: "fp16" or "fp32" for the NPU partitions (None: the SoC's, or the
    program's recorded one). Returns a Runtime; raises edgegrad.Error (a subclass per status)
    with the library's message.
    """
    return Runtime(path, soc=soc, threads=threads, max_memory=max_memory, precision=precision)


def compile(path, out, soc, precision=None):
    """Compiles the graph ``path`` for ``soc`` and writes the program to ``out`` (.egp,
    atomically), as `edgegrad compile PATH --soc SOC -o OUT` does. Needs libedgegrad."""
    lib = _capi.library()
    if not lib.has_compiler:
        raise Error(f"{lib.path}: the runtime library cannot compile (load libedgegrad)")
    model = _load_model(lib, path)
    try:
        opt = _compile_options(lib, soc, precision)
        lib.check(lib.eg_model_save_compiled(model, ctypes.byref(opt), _path(out)))
    finally:
        lib.eg_model_destroy(model)
    return out


def targets():
    """The SoCs edgegrad compiles for: a list of dicts (soc, product, htp_arch, vtcm_mb,
    has_float, soc_model, float_precision, note), as `edgegrad targets` lists them."""
    lib = _capi.library()
    out = []
    for i in range(lib.eg_num_targets()):
        t = _capi.TargetInfo()
        lib.check(_capi.fill(lib.eg_get_target, i, t))
        out.append({"soc": t.soc.decode(), "product": t.product.decode(),
                    "htp_arch": t.htp_arch, "vtcm_mb": t.vtcm_mb, "has_float": bool(t.has_float),
                    "soc_model": t.soc_model, "note": t.note.decode(),
                    "float_precision": t.float_precision.decode()})
    return out
