#!/usr/bin/env python3
"""check_layers.py [ROOT] — the include rule of docs/architecture.md, checked on src/.

Reads the layer table of docs/architecture.md (rank, layer, path patterns, library) and every
`#include "..."` of every file under src/, and fails (exit 1, one line per fault) when:
  - a file matches no layer's pattern;
  - an include names a file that exists neither under src/ nor under include/;
  - a file includes a header of a layer ranked above its own;
  - a file of library `cli` includes anything but edgegrad.h and its own layer;
  - the table is missing, or has fewer than 10 layers (it was not read).
Prints the number of files and includes checked. Standard library only."""
import fnmatch
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*([\w-]+)\s*\|(.*?)\|\s*(\w+)\s*\|")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_layers():
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
        text = f.read()
    layers = []
    for line in text.splitlines():
        m = ROW.match(line)
        if not m:
            continue
        patterns = re.findall(r"`([^`]+)`", m.group(3))
        layers.append({"rank": int(m.group(1)), "name": m.group(2), "patterns": patterns,
                       "library": m.group(4)})
    return layers


def layer_of(path, layers):
    """The layer whose pattern matches `path` (relative to ROOT) with the longest literal
    prefix: src/backends/htp/lower.c is htp-compile, not htp-run."""
    best, best_len = None, -1
    for layer in layers:
        for p in layer["patterns"]:
            if fnmatch.fnmatchcase(path, p):
                literal = len(p.split("*")[0])
                if literal > best_len:
                    best, best_len = layer, literal
    return best


def main():
    layers = read_layers()
    faults = []
    if len(layers) < 10:
        print(f"docs/architecture.md: {len(layers)} layers read: the layer table is missing")
        return 1
    files = n_includes = 0
    for dirpath, _, names in os.walk(os.path.join(ROOT, "src")):
        for name in sorted(names):
            if not name.endswith((".c", ".h", ".def")):
                continue
            path = os.path.relpath(os.path.join(dirpath, name), ROOT)
            files += 1
            own = layer_of(path, layers)
            if own is None:
                faults.append(f"{path}: in no layer of docs/architecture.md: add it to a pattern")
                continue
            with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                text = f.read()
            for m in INCLUDE.finditer(text):
                inc = m.group(1)
                n_includes += 1
                line = text.count("\n", 0, m.start()) + 1
                where = f"{path}:{line}"
                if inc == "edgegrad.h":
                    continue
                local = os.path.join(os.path.dirname(path), inc)
                if own["library"] == "cli" and os.path.exists(os.path.join(ROOT, local)):
                    target = os.path.normpath(local)
                elif os.path.exists(os.path.join(ROOT, "src", inc)):
                    target = os.path.join("src", inc)
                else:
                    faults.append(f"{where}: includes \"{inc}\", which is no file under src/ "
                                  "or include/")
                    continue
                theirs = layer_of(target, layers)
                if theirs is None:
                    continue  # reported as a file in no layer
                if own["library"] == "cli" and theirs is not own:
                    faults.append(f"{where}: the CLI includes {target} (layer {theirs['name']}): "
                                  "the CLI is written against edgegrad.h alone")
                elif theirs["rank"] > own["rank"]:
                    faults.append(f"{where}: {own['name']} (rank {own['rank']}, {own['library']}) "
                                  f"includes {target} of {theirs['name']} (rank {theirs['rank']}, "
                                  f"{theirs['library']}): includes go down the layers only")
    for f in faults:
        print(f)
    print(f"check_layers: {files} files, {n_includes} includes, {len(layers)} layers: "
          f"{len(faults)} against the rule")
    return 1 if faults or files == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
