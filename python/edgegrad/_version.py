"""edgegrad's version and the graph format's, importable without PyTorch.

``__version__`` is the C library's EG_VERSION_STRING (include/edgegrad.h; the package
metadata of python/pyproject.toml reads it from here): an exporter and a runtime of the same
release agree on the format. ``FORMAT_VERSION`` is the graph format version the exporter
writes (docs/graph-format.md).
"""
__version__ = "0.2.0"
FORMAT_VERSION = 1
