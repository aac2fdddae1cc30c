"""ctypes bindings of edgegrad's C API (include/edgegrad.h): the shared library, found once per
process, its structures laid out as the header declares them, and its status codes as Python
exceptions carrying eg_last_error()'s message.

Which library (first that exists; ``EDGEGRAD_LIB`` alone when set):

1. ``EDGEGRAD_LIB``: a library file (libedgegrad.so or libedgegrad_rt.so) or a folder
   holding one;
2. the source tree: this package at ``REPO/python/edgegrad`` and a CMake build at
   ``REPO/build`` (``make`` puts libedgegrad.so there);
3. an install: the lib folder of the prefix this package is installed under (``pip install
   ./python`` into a prefix or virtual environment P puts it in P/lib/pythonX.Y/site-packages:
   P/lib, where ``cmake --install build --prefix P`` puts the libraries), then
   ``sys.prefix``'s;
4. the system's loader (LD_LIBRARY_PATH, ld.so.cache) by soname.

libedgegrad (the whole toolchain) is preferred in each place; libedgegrad_rt (no graph JSON
loader, no compiler) runs compiled programs (.egp) alone. One library serves the process:
eg_last_error() is per thread *and* per library, so the two are never mixed.

Layouts: every structure here mirrors the header field for field; tests/python/abi_layout.c
prints the C offsets and sizes and tests/python/test_runtime.py compares them with these.
Struct sizes (the header's "binary compatibility" rules): a structure the library reads starts
with struct_size, which ``Sized`` sets to its ctypes size when it is made, as a C initialiser
sets sizeof; a function that fills a structure takes its size as its last argument (``fill``
passes it), which C callers get from the header's macro of the same name.
"""
import ctypes
import enum
import os
import sys
import sysconfig

from ._version import __version__

# ---- status codes and exceptions -------------------------------------------------------------


class Status(enum.IntEnum):
    """eg_status."""
    OK = 0
    IO = 1
    FORMAT = 2
    INVALID = 3
    UNSUPPORTED = 4
    ARGUMENT = 5
    NOMEM = 6
    RUNTIME = 7
    LIMIT = 8
    STATE = 9


class Error(Exception):
    """A failing edgegrad call: ``str(e)`` is the library's one-line message (eg_last_error(),
    "<where>: <what> (<values>): <rule>"), ``e.status`` the eg_status as a ``Status`` (None for
    errors of the Python side that no C call returned, such as a library not found)."""

    status = None

    def __init__(self, message, status=None):
        super().__init__(message)
        if status is not None:
            self.status = Status(status)


class FileError(Error, OSError):
    """EG_ERR_IO: a file could not be opened, read or written."""
    status = Status.IO


class FormatError(Error, ValueError):
    """EG_ERR_FORMAT: a file is malformed (JSON, safetensors, .npy, .egp)."""
    status = Status.FORMAT


class InvalidError(Error, ValueError):
    """EG_ERR_INVALID: a graph breaks a rule."""
    status = Status.INVALID


class UnsupportedError(Error):
    """EG_ERR_UNSUPPORTED: well-formed but not supported by edgegrad."""
    status = Status.UNSUPPORTED


class ArgumentError(Error, ValueError):
    """EG_ERR_ARGUMENT: the caller passed something wrong (name, dtype, shape, option)."""
    status = Status.ARGUMENT


class OutOfMemoryError(Error, MemoryError):
    """EG_ERR_NOMEM."""
    status = Status.NOMEM


class RunError(Error):
    """EG_ERR_RUNTIME: the data made a run fail (a label out of range, a loss not finite)."""
    status = Status.RUNTIME


class LimitError(Error):
    """EG_ERR_LIMIT: a limit the caller set (max_memory) would be exceeded."""
    status = Status.LIMIT


class StateError(Error):
    """EG_ERR_STATE: the call is not valid in the object's current state."""
    status = Status.STATE


class LibraryNotFoundError(Error, ImportError):
    """No edgegrad shared library where this package looks for one (the message lists where)."""


_BY_STATUS = {c.status: c for c in (FileError, FormatError, InvalidError, UnsupportedError,
                                     ArgumentError, OutOfMemoryError, RunError, LimitError,
                                     StateError)}


def error(status, message):
    """The exception for eg_status ``status`` with ``message``."""
    cls = _BY_STATUS.get(status, Error)
    return cls(message, status) if cls is Error else cls(message)


class Closable:
    """An owner of library handles: close() frees them, and runs at the end of a ``with`` block
    and when the object is collected (never raising there)."""

    def close(self):
        raise NotImplementedError

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---- structures (include/edgegrad.h) ----------------------------------------------------------

MAX_RANK = 8
c_enum = ctypes.c_int  # every eg_* enum: its values fit an int, so GCC and Clang give it int's size


class Sized(ctypes.Structure):
    """A structure that starts with ``struct_size``, made with it set to its own size (so an
    array of them made by ctypes, which calls no __init__, must set it per element: ``sized``)."""

    def __init__(self, *args, **kwargs):
        super().__init__(ctypes.sizeof(self), *args, **kwargs)


def sized(array):
    """Sets struct_size in every element of a ctypes array of a Sized structure; returns it."""
    for element in array:
        element.struct_size = ctypes.sizeof(element)
    return array


def fill(fn, *args):
    """Calls a library function that fills its last argument, a structure, passing that
    structure by reference and its size (the function's ``out_size``); returns the status."""
    *head, out = args
    return fn(*head, ctypes.byref(out), ctypes.sizeof(out))


class Tensor(ctypes.Structure):
    """eg_tensor."""
    _fields_ = [("dtype", c_enum), ("rank", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_RANK), ("data", ctypes.c_void_p)]


class TensorDesc(ctypes.Structure):
    """eg_tensor_desc."""
    _fields_ = [("name", ctypes.c_char_p), ("tensor", Tensor), ("role", c_enum),
                ("pair", ctypes.c_int), ("state_dict", ctypes.c_char_p), ("random", c_enum),
                ("random_p", ctypes.c_double)]


class RuntimeOptions(Sized):
    """eg_runtime_options."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("max_memory_bytes", ctypes.c_size_t), ("num_threads", ctypes.c_int),
                ("profile", ctypes.c_bool), ("dump_partitions_dir", ctypes.c_char_p),
                ("precision", c_enum)]


class CompileOptions(Sized):
    """eg_compile_options."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("soc", ctypes.c_char_p),
                ("skip_ops", ctypes.POINTER(ctypes.c_char_p)), ("num_skip_ops", ctypes.c_int),
                ("skip_nodes", ctypes.POINTER(ctypes.c_char_p)), ("num_skip_nodes", ctypes.c_int),
                ("no_fallback", ctypes.c_int), ("dump_after", ctypes.c_char_p),
                ("precision", c_enum)]


class TargetInfo(ctypes.Structure):
    """eg_target_info."""
    _fields_ = [("soc", ctypes.c_char_p), ("product", ctypes.c_char_p), ("htp_arch", ctypes.c_int),
                ("vtcm_mb", ctypes.c_int), ("has_float", ctypes.c_int), ("note", ctypes.c_char_p),
                ("soc_model", ctypes.c_int), ("float_precision", ctypes.c_char_p)]


class ProgramInfo(ctypes.Structure):
    """eg_program_info."""
    _fields_ = [("soc", ctypes.c_char_p), ("precision", ctypes.c_char_p),
                ("num_partitions", ctypes.c_int), ("num_npu_nodes", ctypes.c_int),
                ("num_cpu_nodes", ctypes.c_int), ("num_steps", ctypes.c_int),
                ("static_bytes", ctypes.c_size_t), ("file_bytes", ctypes.c_size_t)]


class OptimizerOptions(Sized):
    """eg_optimizer_options."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("kind", c_enum), ("lr", ctypes.c_double), ("weight_decay", ctypes.c_double),
                ("momentum", ctypes.c_double), ("dampening", ctypes.c_double),
                ("nesterov", ctypes.c_bool), ("beta1", ctypes.c_double),
                ("beta2", ctypes.c_double), ("eps", ctypes.c_double), ("loss_scale", c_enum),
                ("init_scale", ctypes.c_double), ("growth_factor", ctypes.c_double),
                ("backoff_factor", ctypes.c_double), ("growth_interval", ctypes.c_int64)]


class TrainerOptions(Sized):
    """eg_trainer_options (``optimizer`` points at an OptimizerOptions the caller keeps alive
    until eg_trainer_create has read it)."""
    _fields_ = [("struct_size", ctypes.c_size_t),
                ("optimizer", ctypes.POINTER(OptimizerOptions)), ("schedule", c_enum),
                ("lr_step", ctypes.c_int64), ("lr_gamma", ctypes.c_double),
                ("epochs", ctypes.c_int64), ("shuffle", ctypes.c_bool),
                ("seed", ctypes.c_uint64), ("normalize", ctypes.c_bool),
                ("mean", ctypes.c_double), ("std", ctypes.c_double)]


class TrainerArray(Sized):
    """eg_trainer_array."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("input", ctypes.c_char_p), ("t", Tensor), ("origin", ctypes.c_char_p)]


class TrainerEvent(ctypes.Structure):
    """eg_trainer_event (the library's: its struct_size says which fields it has)."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("kind", c_enum), ("epoch", ctypes.c_int64), ("step", ctypes.c_int64),
                ("steps", ctypes.c_int64), ("global_step", ctypes.c_int64),
                ("loss", ctypes.c_double), ("lr", ctypes.c_double),
                ("val_loss", ctypes.c_double), ("val_accuracy", ctypes.c_double),
                ("seconds", ctypes.c_double), ("steps_run", ctypes.c_int64),
                ("zero_grads", ctypes.c_double), ("loss_scale", ctypes.c_double),
                ("skipped_steps", ctypes.c_int64)]


# every structure the header declares that Python mirrors, by its C name (the layout test)
STRUCTS = {"eg_tensor": Tensor, "eg_tensor_desc": TensorDesc,
           "eg_runtime_options": RuntimeOptions, "eg_compile_options": CompileOptions,
           "eg_target_info": TargetInfo, "eg_program_info": ProgramInfo,
           "eg_optimizer_options": OptimizerOptions, "eg_trainer_options": TrainerOptions,
           "eg_trainer_array": TrainerArray, "eg_trainer_event": TrainerEvent}

TRAINER_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(TrainerEvent), ctypes.c_void_p)

# ---- functions -------------------------------------------------------------------------------

_p = ctypes.c_void_p
_s = ctypes.c_char_p
_i, _i64, _d, _z = ctypes.c_int, ctypes.c_int64, ctypes.c_double, ctypes.c_size_t
_P = ctypes.POINTER
_st = c_enum  # eg_status

# name -> (restype, argtypes); a function returning eg_status is checked by call()
PROTOTYPES = {
    "eg_version": (_i, []),
    "eg_version_string": (_s, []),
    "eg_last_error": (_s, []),
    "eg_dtype_name": (_s, [c_enum]),
    "eg_io_role_name": (_s, [c_enum]),
    "eg_model_load": (_st, [_s, _P(_p)]),
    "eg_model_load_compiled": (_st, [_s, _P(_p)]),
    "eg_model_destroy": (None, [_p]),
    "eg_model_num_inputs": (_i, [_p]),
    "eg_model_num_outputs": (_i, [_p]),
    "eg_model_input": (_st, [_p, _i, _P(TensorDesc), _z]),
    "eg_model_output": (_st, [_p, _i, _P(TensorDesc), _z]),
    "eg_model_is_compiled": (_i, [_p]),
    "eg_model_program_info": (_st, [_p, _P(ProgramInfo), _z]),
    "eg_model_input_classes": (_st, [_p, _i, _P(_i64), _P(_i64)]),
    "eg_model_save_compiled": (_st, [_p, _P(CompileOptions), _s]),
    "eg_num_targets": (_i, []),
    "eg_get_target": (_st, [_i, _P(TargetInfo), _z]),
    "eg_runtime_create_with_options": (_st, [_p, _P(RuntimeOptions), _P(_p)]),
    "eg_runtime_create_compiled_with_options": (_st, [_p, _P(CompileOptions),
                                                      _P(RuntimeOptions), _P(_p)]),
    "eg_runtime_destroy": (None, [_p]),
    "eg_runtime_set_input": (_st, [_p, _s, _P(Tensor)]),
    "eg_runtime_run": (_st, [_p]),
    "eg_runtime_input": (_st, [_p, _i, _P(Tensor)]),
    "eg_runtime_output": (_st, [_p, _i, _P(Tensor)]),
    "eg_runtime_load_weights": (_st, [_p, _s]),
    "eg_optimizer_defaults": (_st, [c_enum, _P(OptimizerOptions), _z]),
    "eg_optimizer_loss_scale": (_d, [_p]),
    "eg_optimizer_loss_scaling": (c_enum, [_p]),
    "eg_optimizer_skipped_steps": (_i64, [_p]),
    "eg_optimizer_steps": (_i64, [_p]),
    "eg_trainer_defaults": (_st, [_P(TrainerOptions), _z]),
    "eg_trainer_create": (_st, [_p, _P(TrainerOptions), _P(_p)]),
    "eg_trainer_destroy": (None, [_p]),
    "eg_trainer_set_data": (_st, [_p, _P(TrainerArray), _i]),
    "eg_trainer_set_eval": (_st, [_p, _p, _P(TrainerArray), _i]),
    "eg_trainer_hold_out": (_st, [_p, _p, _d]),
    "eg_trainer_set_callback": (None, [_p, TRAINER_CALLBACK, _p]),
    "eg_trainer_set_log": (_st, [_p, _s, ctypes.c_bool]),
    "eg_trainer_set_checkpoints": (_st, [_p, _s, _i64]),
    "eg_trainer_sizes": (None, [_p, _P(_i64), _P(_i64), _P(_i64), _P(_i64)]),
    "eg_trainer_step": (_st, [_p, _P(_d)]),
    "eg_trainer_fit": (_st, [_p, _i64]),
    "eg_trainer_step_batch": (_st, [_p, _P(TrainerArray), _i, _P(_d)]),
    "eg_trainer_evaluate": (_st, [_p, _P(_d), _P(_d)]),
    "eg_trainer_position": (None, [_p, _P(_i64), _P(_i64), _P(_i64)]),
    "eg_trainer_optimizer": (_p, [_p]),
    "eg_trainer_save_checkpoint": (_st, [_p, _s]),
    "eg_trainer_load_checkpoint": (_st, [_p, _s]),
    "eg_trainer_save_weights": (_st, [_p, _s, _s]),
}

# ---- finding the library -----------------------------------------------------------------------

_FULL, _RT = "libedgegrad.so", "libedgegrad_rt.so"


def _candidates():
    """(place, [paths in preference order]) for every place looked in, in order."""
    env = os.environ.get("EDGEGRAD_LIB")
    if env:
        if os.path.isdir(env):
            return [("EDGEGRAD_LIB", [os.path.join(env, _FULL), os.path.join(env, _RT)])]
        return [("EDGEGRAD_LIB", [env])]
    here = os.path.dirname(os.path.abspath(__file__))
    places = []
    repo = os.path.dirname(os.path.dirname(here))
    if (os.path.basename(os.path.dirname(here)) == "python"
            and os.path.isfile(os.path.join(repo, "include", "edgegrad.h"))):
        places.append(os.path.join(repo, "build"))
    # PREFIX/lib/pythonX.Y/site-packages/edgegrad -> PREFIX; then sys.prefix
    prefixes = [os.path.normpath(os.path.join(here, "..", "..", "..", "..")), sys.prefix]
    multiarch = sysconfig.get_config_var("MULTIARCH")
    for prefix in prefixes:
        for lib in ("lib", "lib64") + ((os.path.join("lib", multiarch),) if multiarch else ()):
            folder = os.path.join(prefix, lib)
            if folder not in places:
                places.append(folder)
    found = [("folder " + p, [os.path.join(p, _FULL), os.path.join(p, _RT)]) for p in places]
    # the soname: libedgegrad.so.MAJOR, before 1.0 libedgegrad.so.0.MINOR (CMakeLists.txt)
    major, minor = __version__.split(".")[:2]
    so = major if major != "0" else f"{major}.{minor}"
    found.append(("the system's library path", [f"{_FULL}.{so}", f"{_RT}.{so}"]))
    return found


class _Library:
    """The loaded library: its path, whether it has the compiler, its functions as attributes
    (each with the header's prototype; one the library lacks raises Error when used)."""

    def __init__(self, path, handle):
        self.path, self._handle = path, handle
        self.has_compiler = hasattr(handle, "eg_model_load")
        for name, (restype, argtypes) in PROTOTYPES.items():
            try:
                fn = getattr(handle, name)
            except AttributeError:
                continue
            fn.restype, fn.argtypes = restype, argtypes
            setattr(self, name, fn)

    def __getattr__(self, name):
        if name in PROTOTYPES:
            raise Error(f"{self.path}: no function {name}: this edgegrad library predates it "
                        f"(rebuild edgegrad, or point EDGEGRAD_LIB at a newer one)")
        raise AttributeError(name)

    def has(self, name):
        """Whether the library has function ``name`` (one newer than the library may not)."""
        return name in self.__dict__

    def check(self, status):
        """Raises the exception of a non-OK eg_status with the library's message."""
        if status != Status.OK:
            message = self.eg_last_error()
            raise error(status, message.decode("utf-8", "replace") if message else
                        f"edgegrad: status {status} without a message")


_lib = None


def library():
    """The process's edgegrad library, found and loaded on first use."""
    global _lib
    if _lib is not None:
        return _lib
    tried, errors = [], []
    for place, paths in _candidates():
        for path in paths:
            system = os.sep not in path
            if not system and not os.path.exists(path):
                tried.append(path)
                continue
            try:
                handle = ctypes.CDLL(path)
            except OSError as e:
                (tried if system else errors).append(path if system else f"{path} ({e})")
                continue
            _lib = _Library(path if not system else _resolved(handle, path), handle)
            _check_version(_lib)
            return _lib
    why = f"; could not load {'; '.join(errors)}" if errors else ""
    raise LibraryNotFoundError(
        f"edgegrad: no edgegrad shared library ({_FULL} or {_RT}) found: looked for "
        f"{', '.join(tried)}{why} (build it with `make`, install it with `cmake --install build "
        f"--prefix PREFIX`, or set EDGEGRAD_LIB to the library or its folder)")


def _resolved(handle, name):
    """The file a library loaded by soname came from (for messages), or its soname."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                if line.rstrip().endswith(name) or f"/{name}" in line:
                    return line.split()[-1]
    except OSError:
        pass
    return name


def _check_version(lib):
    """The library's version must be this package's release series (same major and, before
    1.0, same minor): the structures here are that release's."""
    got = lib.eg_version_string().decode()
    want = __version__.split(".")
    have = got.split(".")
    same = have[0] == want[0] and (want[0] != "0" or have[1:2] == want[1:2])
    if not same:
        global _lib
        _lib = None
        raise Error(f"{lib.path}: edgegrad library {got}, this Python package is "
                    f"{__version__}: their versions must match (same major version; before "
                    f"1.0, same minor)")


def library_path():
    """The path of the edgegrad shared library this process uses (found on first use)."""
    return library().path
