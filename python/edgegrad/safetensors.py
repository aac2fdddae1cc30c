"""A minimal safetensors writer and reader (numpy only; no safetensors package needed).

File layout (all integers little-endian):

    u64 N                       length of the header in bytes (N is a multiple of 8)
    N bytes                     UTF-8 JSON, padded with spaces:
                                {"<name>": {"dtype": "F32", "shape": [2, 3],
                                            "data_offsets": [begin, end]}, ...,
                                 "__metadata__": {"<key>": "<string>", ...}}
    bytes                       the tensors' raw C-ordered little-endian bytes; offsets are
                                relative to the start of this buffer, tensors stored back to back
                                in the order given.

Contract: ``save(path, tensors, metadata)`` writes atomically; ``load(path)`` returns
``(tensors, metadata)`` and checks the file's structure (offsets in range, sizes matching
dtype x shape, no overlap or gap), raising ValueError on a malformed file.
"""
import json
import struct

import numpy as np

from ._files import write_atomic

# safetensors dtype tag <-> numpy dtype (little-endian).
_TAG_TO_NP = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"), "U8": np.dtype("u1"), "BOOL": np.dtype("?"),
}
_NP_TO_TAG = {dt: tag for tag, dt in _TAG_TO_NP.items()}


def _as_numpy(value):
    """A C-contiguous little-endian numpy array of ``value`` (numpy array or torch tensor)."""
    if hasattr(value, "detach"):  # a torch tensor, without importing torch here
        value = value.detach().cpu().contiguous().numpy()
    array = np.asarray(value)
    if not array.flags.c_contiguous:  # (np.ascontiguousarray would turn 0-d into 1-d)
        array = array.copy(order="C")
    return array.astype(array.dtype.newbyteorder("<"), copy=False)


def encode(tensors, metadata=None):
    """The bytes of a safetensors file holding ``tensors`` (dict name -> array), in order."""
    header, chunks, offset = {}, [], 0
    for name, value in tensors.items():
        if name == "__metadata__":
            raise ValueError("safetensors: tensor name '__metadata__' is reserved")
        array = _as_numpy(value)
        tag = _NP_TO_TAG.get(array.dtype)
        if tag is None:
            raise ValueError(f"safetensors: tensor {name}: dtype {array.dtype} not supported")
        data = array.tobytes()
        header[name] = {"dtype": tag, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def save(path, tensors, metadata=None):
    """Write ``tensors`` (dict name -> numpy array or torch tensor) to ``path`` atomically."""
    return write_atomic(path, encode(tensors, metadata))


def decode(blob):
    """Parse safetensors bytes; return ``(dict name -> numpy array, metadata dict)``."""
    if len(blob) < 8:
        raise ValueError("safetensors: file shorter than its 8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > len(blob) - 8:
        raise ValueError(f"safetensors: header length {n} exceeds file size {len(blob)}")
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", {}) or {}
    buffer = memoryview(blob)[8 + n:]
    tensors, spans = {}, []
    for name, info in header.items():
        tensors[name] = _decode_tensor(name, info, buffer)
        spans.append(tuple(info["data_offsets"]))
    _check_spans(sorted(spans), len(buffer))
    return tensors, metadata


def _decode_tensor(name, info, buffer):
    dtype = _TAG_TO_NP.get(info.get("dtype"))
    if dtype is None:
        raise ValueError(f"safetensors: tensor {name}: unknown dtype {info.get('dtype')!r}")
    shape = tuple(int(d) for d in info["shape"])
    begin, end = (int(o) for o in info["data_offsets"])
    expected = dtype.itemsize * int(np.prod(shape, dtype=np.int64))
    if not 0 <= begin <= end <= len(buffer) or end - begin != expected:
        raise ValueError(f"safetensors: tensor {name}: data_offsets [{begin}, {end}] do not "
                         f"hold {expected} bytes inside a {len(buffer)}-byte buffer")
    return np.frombuffer(buffer[begin:end], dtype=dtype).reshape(shape).copy()


def _check_spans(spans, size):
    """Tensors must tile the byte buffer exactly: no gap, no overlap."""
    position = 0
    for begin, end in spans:
        if begin != position:
            raise ValueError(f"safetensors: byte {position}: gap or overlap before tensor at "
                             f"[{begin}, {end}]")
        position = end
    if position != size:
        raise ValueError(f"safetensors: {size - position} trailing bytes after the tensors")


def load(path):
    """Read the safetensors file at ``path``; return ``(tensors, metadata)``."""
    with open(path, "rb") as f:
        return decode(f.read())
