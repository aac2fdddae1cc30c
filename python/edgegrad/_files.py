"""Atomic file writing: a reader never sees a half-written file.

Contract: ``write_atomic(path, data)`` writes ``data`` (bytes) to a temporary file in the same
folder as ``path`` and then renames it over ``path`` with ``os.replace`` (atomic on POSIX). On
any error the temporary file is removed and ``path`` is left as it was.
"""
import os
import tempfile


def write_atomic(path, data):
    """Write ``data`` (bytes) to ``path`` atomically; return ``path``."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                               dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
