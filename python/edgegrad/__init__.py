"""edgegrad's Python side: export PyTorch functions and training steps to edgegrad's graph
format (docs/graph-format.md, docs/export.md)."""
from .export import FORMAT_VERSION, ExportResult, export_function, export_training_step

__all__ = ["FORMAT_VERSION", "ExportResult", "export_function", "export_training_step"]
