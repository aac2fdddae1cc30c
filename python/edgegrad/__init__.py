"""edgegrad's Python side: export PyTorch functions and training steps to edgegrad's graph
format (docs/graph-format.md, docs/export.md)."""
from .export import FORMAT_VERSION, ExportResult, export_function, export_training_step
from .joint import export_joint

__all__ = ["FORMAT_VERSION", "ExportResult", "export_function", "export_training_step",
           "export_joint"]
