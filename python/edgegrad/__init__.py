"""edgegrad's Python side: export PyTorch functions and training steps to edgegrad's graph
format (docs/graph-format.md, docs/export.md), run and train them with the C library, and read
trained weights back (docs/python.md).

``import edgegrad`` needs numpy only: ``__version__``, ``FORMAT_VERSION`` and the submodules
``edgegrad.safetensors`` and ``edgegrad.tolerance`` work without PyTorch. The runtime
(``load``, ``Runtime``, ``Trainer``, ``compile``, ``targets``, the exceptions ``Error`` and its
subclasses) needs numpy and edgegrad's shared library (found on first use: edgegrad._capi),
never PyTorch. The exporters (``export_function``, ``export_training_step``,
``export_joint``, ``ExportResult``) import PyTorch when first used, and ``load_state_dict``
when called.
"""
import importlib

from ._version import FORMAT_VERSION, __version__

# public name -> the submodule defining it, imported on first use (PEP 562)
_LAZY = {"ExportResult": "export", "export_function": "export",
         "export_training_step": "export", "export_joint": "joint",
         "load": "runtime", "Runtime": "runtime", "TensorInfo": "runtime",
         "compile": "runtime", "targets": "runtime", "Trainer": "trainer",
         "library_path": "_capi", "Status": "_capi", "Error": "_capi", "FileError": "_capi",
         "FormatError": "_capi", "InvalidError": "_capi", "UnsupportedError": "_capi",
         "ArgumentError": "_capi", "OutOfMemoryError": "_capi", "RunError": "_capi",
         "LimitError": "_capi", "StateError": "_capi", "LibraryNotFoundError": "_capi"}

__all__ = ["FORMAT_VERSION", "__version__", "load_state_dict", *sorted(_LAZY)]


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module("." + _LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


def load_state_dict(path):
    """The tensors of the safetensors file ``path`` as ``{name: torch.Tensor}``, in file order,
    each with its stored dtype and shape.

    Made for the files that hold a model's weights under their PyTorch ``state_dict`` names:
    ``edgegrad train --out`` and an exporter's ``STEM.init.safetensors``. Such a file holds the
    trained parameters and the state buffers only (frozen ones stay in the model), so load it
    with ``model.load_state_dict(edgegrad.load_state_dict(path), strict=False)``: the result's
    ``missing_keys`` are then exactly the frozen parameters and read-only buffers, and
    ``unexpected_keys`` is empty. Raises ValueError for a malformed file.
    """
    import torch

    from . import safetensors

    tensors, _ = safetensors.load(path)
    return {name: torch.from_numpy(array) for name, array in tensors.items()}
