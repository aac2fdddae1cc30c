"""Checks a partition dump (`edgegrad run --dump-partitions DUMP`) against the program
(`edgegrad inspect --json`), the graph (MODEL.json) and PyTorch. Used by test_dump_partitions.sh:

    python3 dump_partitions.py INSPECT.json MODEL.json INPUTS_DIR DUMP OUT [--min-shared N]
                               [--min-outputs N]

- Files: DUMP/<partition>/ holds exactly one <name>.npy per APP_WRITE and APP_READ tensor of
  each partition inspect lists (<name>: the tensor's name through the export naming rule), and
  no partition folder more. Its shape is inspect's (for rank 4, inspect's or, for a tensor held
  NHWC, inspect's permuted to NCHW); its dtype
  float32 for a float32 or fixed-point (quantized) tensor, int64 or int32 for an int32 one.
- Graph: every file is an IR value of MODEL.json (an input, a node's result, or an element of a
  node's tuple result, named "<node>_out<id>" by the lowering, matched by id, else by dtype
  and shape), and
  has exactly its dtype and shape.
- PyTorch: every file equals that value as the graph's ops compute it in PyTorch on INPUTS_DIR
  (graph_exec), within the run's --expect tolerance, or one quantization step for a value the
  graph quantizes.
- A tensor name that is in several partitions (one's output, a later one's input) has
  byte-identical files (at least --min-shared such names), and a graph output that is a dumped
  value equals the run's file OUT/<output>.npy exactly (at least --min-outputs of them).
Prints one line per failure and a closing "N passed, M failed"; exit status 1 on a failure.
"""
import argparse
import glob
import json
import os
import re
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
import graph_exec as ge  # noqa: E402

passed, failed = 0, 0


def check(cond, msg):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", msg)
    return cond


def export_name(name, tensor):
    """eg_export_name (src/util/names.c), byte for byte."""
    allowed = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
    b = name.encode()
    if 0 < len(b) <= 200 and b[:1] != b"." and all(c in allowed for c in b):
        return name
    safe = bytes(c if c in allowed else ord("_") for c in b[:200])
    if safe[:1] == b".":
        safe = b"_" + safe[1:]
    return safe.decode() + "~%d" % tensor


def file_shapes(t):
    """A rank-4 tensor is NHWC in the partition when the value is (layout_nhwc), else as
    traced: inspect does not say which, the graph check below does."""
    s = list(t["shape"])
    return [s, [s[0], s[3], s[1], s[2]]] if len(s) == 4 else [s]


def file_dtypes(t):
    if t["dtype"] == "int32":
        return ("int64", "int32")
    if t["dtype"] == "float32" or "fixed_point" in t["dtype"]:
        return ("float32",)
    return (t["dtype"],)


QDTYPES = {torch.uint8: torch.quint8, torch.int8: torch.qint8, torch.int32: torch.qint32}


def reference(graph, statics, inputs):
    """Every tensor value of the graph as PyTorch computes it (value id -> torch tensor), and the
    name -> candidate value ids map of the files."""
    env = {}
    for e in graph["inputs"]:
        env[e["value"]] = torch.from_numpy(np.array(inputs[e["name"]], order="C"))
    for e in graph["statics"]:
        env[e["value"]] = torch.from_numpy(statics[e["name"]].copy())
    names = {e["name"]: [e["value"]] for e in graph["inputs"]}
    with torch.no_grad():
        for node in graph["nodes"]:
            args = ge._pure(node["target"], [ge.decode(a, env) for a in node["args"]])
            kwargs = {k: ge.decode(a, env) for k, a in node["kwargs"].items()}
            out = node["output"]
            if node["target"].startswith("aten.quantize_per_"):  # the graph names the storage
                args = [QDTYPES.get(x, x) if isinstance(x, torch.dtype) else x for x in args]
                env[out] = ge.resolve(node["target"])(*args, **kwargs)  # a quantized tensor
            else:
                ge._bind(graph, env, node, ge.resolve(node["target"])(*args, **kwargs))
            if out is None:
                continue
            v = graph["values"][out]
            names[node["name"]] = [out] if v["kind"] == "tensor" else \
                [e for e in v["elements"] if e is not None]
    return env, names


def ir_value(graph, names, name, arr):
    """The value a file is: its name's, or for "<node>_out<id>" the element of the node's
    tuple with value id <id> (the passes keep a traced node's value ids), else the one of the
    file's dtype and shape."""
    m = re.fullmatch(r"(.*)_out(\d+)", name)
    cands = names.get(name) or (names.get(m.group(1)) if m else None) or []
    fit = [v for v in cands if graph["values"][v]["dtype"] == str(arr.dtype) and
           list(graph["values"][v]["shape"]) == list(arr.shape)]
    if m and not names.get(name) and int(m.group(2)) in fit:
        return int(m.group(2))
    return cands[0] if len(cands) == 1 else fit[0] if len(fit) == 1 else None


def quantized_values(graph):
    """Values a quantize or dequantize node reads or writes: equal to PyTorch up to a step."""
    q = set()
    for n in graph["nodes"]:
        if "quantize" in n["target"]:
            q.add(n["output"])
            q.update(a["value"] for a in n["args"] if isinstance(a, dict) and "value" in a)
    return q


def close(got, ref, quant):
    if got.dtype.kind != "f":
        return np.array_equal(got, ref)
    b = np.abs(ref).max(initial=0.0)
    tol = 1e-4 * np.abs(ref) + 1e-5 * max(1.0, b)
    if quant:  # one quantization step of the value's range over 8 bits, plus the rounding
        tol = tol + (ref.max(initial=0.0) - ref.min(initial=0.0)) / 255.0 * 1.01
    return bool(np.all(np.abs(got.astype(np.float64) - ref) <= tol))


def main():
    ap = argparse.ArgumentParser()
    for a in ("inspect", "model", "inputs", "dump", "out"):
        ap.add_argument(a)
    ap.add_argument("--min-shared", type=int, default=0)
    ap.add_argument("--min-outputs", type=int, default=0)
    a = ap.parse_args()
    prog = json.load(open(a.inspect))
    graph, statics = ge.load(a.model)
    inputs = {os.path.basename(f)[:-4]: np.load(f) for f in glob.glob(a.inputs + "/*.npy")}
    env, names = reference(graph, statics, inputs)
    quant = quantized_values(graph)

    check(sorted(os.listdir(a.dump)) == sorted(p["name"] for p in prog["partitions"]),
          f"{a.dump}: folders {sorted(os.listdir(a.dump))}, partitions "
          f"{[p['name'] for p in prog['partitions']]}")
    where = {}  # file name -> [(partition, array)]
    value_files = {}  # IR value id -> path
    for p in prog["partitions"]:
        folder = os.path.join(a.dump, p["name"])
        want = {}
        for k, t in enumerate(p["tensors"]):
            if t["type"] in ("APP_WRITE", "APP_READ"):
                want[export_name(t["name"], k) + ".npy"] = t
        have = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
        check(have == sorted(want), f"{folder}: files {have}, boundary tensors {sorted(want)}")
        for fname, t in want.items():
            path = os.path.join(folder, fname)
            if not check(os.path.isfile(path), f"{path}: missing"):
                continue
            arr = np.load(path)
            where.setdefault(fname, []).append((p["name"], arr))
            check(list(arr.shape) in file_shapes(t) and str(arr.dtype) in file_dtypes(t),
                  f"{path}: {arr.dtype} {list(arr.shape)}, inspect {t['dtype']} {t['shape']}")
            v = ir_value(graph, names, fname[:-4], arr)
            if not check(v is not None, f"{path}: no IR value of that name, dtype and shape"):
                continue
            value_files[v] = path
            iv = graph["values"][v]
            check(str(arr.dtype) == iv["dtype"] and list(arr.shape) == list(iv["shape"]),
                  f"{path}: {arr.dtype} {list(arr.shape)}, the IR value %{v}: {iv['dtype']} "
                  f"{iv['shape']}")
            ref = env[v].int_repr() if env[v].is_quantized else env[v]
            ref = ref.contiguous().numpy()
            check(close(arr, ref, v in quant),
                  f"{path}: differs from PyTorch's value %{v} (max |diff| "
                  f"{np.abs(arr.astype(np.float64) - ref).max(initial=0)})")
    shared = 0
    for fname, seen in where.items():
        if len(seen) < 2:
            continue
        shared += 1
        for p, arr in seen[1:]:
            check(arr.tobytes() == seen[0][1].tobytes(),
                  f"{fname}: {p}'s file differs from {seen[0][0]}'s")
    check(shared >= a.min_shared, f"{shared} names in several partitions, wanted {a.min_shared}+")
    defs = {n["output"]: n for n in graph["nodes"] if n["output"] is not None}
    matched = 0
    for o in graph["outputs"]:
        v, n = o["value"], defs.get(o["value"])
        if n is not None and n["target"] == "getitem":  # the element it names
            v = graph["values"][n["args"][0]["value"]]["elements"][n["args"][1]]
        if v not in value_files:
            continue
        matched += 1
        out = np.load(os.path.join(a.out, o["name"] + ".npy"))
        dumped = np.load(value_files[v])
        check(out.dtype == dumped.dtype and out.shape == dumped.shape and
              out.tobytes() == dumped.tobytes(),
              f"output {o['name']}: the run's file differs from {value_files[v]}")
    check(matched >= a.min_outputs, f"{matched} graph outputs dumped, wanted {a.min_outputs}+")
    print(f"dump_partitions.py {a.dump}: {passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
