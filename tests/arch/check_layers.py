#!/usr/bin/env python3
"""check_layers.py [ROOT] — the include rule of docs/architecture.md, checked on src/.

Reads the layer table of docs/architecture.md (rank, layer, path patterns, library) and every
`#include "..."` of every file under src/, and fails (exit 1, one line per fault) when:
  - a file matches no layer's pattern;
  - an include names a file that exists neither under src/ nor under include/;
  - a file includes a header of a layer ranked above its own;
  - a file of library `cli` includes anything but edgegrad.h and its own layer;
  - a file outside a backend's folder src/backends/<name>/ and the registry (REGISTRY) names
    the backend: an identifier with its prefix (eg_<name>_..., EG_<NAME>_..., derived from the
    folder's name: one prefix per backend) or a path into its folder (an include of one of its
    headers, or a comment pointing there), under src/ or include/;
  - a file's layer is of another library than its folder makes it: the compiler's files are
    those CMakeLists.txt's EG_COMPILER_GLOBS find (src/compiler/ and src/backends/<name>/compile/,
    with their headers), the CLI's src/cli/, the runtime's all the others;
  - the table is missing, or has fewer than 10 layers (it was not read).
Prints the number of files and includes checked. Standard library only.

check_layers.py --self-test [ROOT] plants one violation of each backend rule in a copy of
ROOT's src/, include/ and docs/ (a file naming the htp backend's prefix, one including its
header, one naming a second backend's prefix) and of the folder rule (a compiler-layer file
outside the compiler's folders, a runtime-layer file inside them), and checks that each is
reported (exit 1), and that the copy as it was passes."""
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile

SELF_TEST = len(sys.argv) > 1 and sys.argv[1] == "--self-test"
ARGS = sys.argv[2:] if SELF_TEST else sys.argv[1:]
ROOT = os.path.abspath(ARGS[0] if ARGS else os.path.join(os.path.dirname(__file__), "..", ".."))
# The files that may name every backend: the registries of compile and runtime halves.
REGISTRY = {"src/compiler/backends.c", "src/backends/backends_rt.c"}
ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*([\w-]+)\s*\|(.*?)\|\s*(\w+)\s*\|")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
COMPILER_GLOBS = re.compile(r"^set\(EG_COMPILER_GLOBS\b([^)]*)\)", re.M)


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
    prefix: src/backends/htp/compile/lower.c is htp-compile, not htp-run."""
    best, best_len = None, -1
    for layer in layers:
        for p in layer["patterns"]:
            if fnmatch.fnmatchcase(path, p):
                literal = len(p.split("*")[0])
                if literal > best_len:
                    best, best_len = layer, literal
    return best


def compiler_folders():
    """The folders CMakeLists.txt's EG_COMPILER_GLOBS (GLOB_RECURSE patterns `<folder>/*.c`)
    make the compiler library of, as fnmatch patterns of their files."""
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = COMPILER_GLOBS.search(f.read())
    globs = re.findall(r"\$\{PROJECT_SOURCE_DIR\}/(\S+)/\*\.c\b", m.group(1)) if m else []
    return [g + "/*" for g in globs]


def library_of_folder(path, folders):
    """The library the folder of `path` (relative to ROOT) puts it in."""
    if path.startswith(os.path.join("src", "cli") + os.sep):
        return "cli"
    return "compiler" if any(fnmatch.fnmatchcase(path, g) for g in folders) else "rt"


def backends():
    """Each backend's folder name under src/backends/ and the pattern of what names it."""
    folder = os.path.join(ROOT, "src", "backends")
    out = []
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if os.path.isdir(os.path.join(folder, name)):
            pattern = re.compile(r"\b(?:eg_%s_\w*|EG_%s_\w*)|backends/%s/" %
                                 (re.escape(name), re.escape(name.upper()), re.escape(name)))
            out.append((name, pattern))
    return out


def backend_faults():
    """Files outside a backend's folder (and the registry) that name the backend."""
    faults = []
    for name, pattern in backends():
        own = os.path.join("src", "backends", name) + os.sep
        for top in ("src", "include"):
            for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
                for fname in sorted(names):
                    if not fname.endswith((".c", ".h", ".def")):
                        continue
                    path = os.path.relpath(os.path.join(dirpath, fname), ROOT)
                    if path.startswith(own) or path in REGISTRY:
                        continue
                    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                        text = f.read()
                    for m in pattern.finditer(text):
                        line = text.count("\n", 0, m.start()) + 1
                        faults.append(f"{path}:{line}: names backend {name} ({m.group(0)}): only "
                                      f"src/backends/{name}/ and the registry name a backend")
    return faults


def self_test():
    """Plants a violation of each backend rule in a copy of the tree; each must be reported."""
    here = os.path.abspath(__file__)
    plants = [("src/runtime/planted_prefix.c", "static int x(void) { return eg_htp_planted(); }\n",
               "names backend htp (eg_htp_planted)"),
              ("src/runtime/planted_include.c", '#include "backends/htp/values.h"\n',
               "names backend htp (backends/htp/)"),
              ("src/program/planted_second.h", "/* eg_zz_thing */\n",
               "names backend zz (eg_zz_thing)"),
              ("src/runtime/planted_compiler.c", "static int planted;\n",
               "layer planted-compiler (library compiler) but its folder makes it rt"),
              ("src/compiler/planted_rt.c", "static int planted;\n",
               "layer planted-rt (library rt) but its folder makes it compiler")]
    # the layers of the two planted files: rows the copy's table gains
    rows = ("| 18 | planted-compiler | `src/runtime/planted_compiler.c` | compiler | planted |\n"
            "| 19 | planted-rt | `src/compiler/planted_rt.c` | rt | planted |\n")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for d in ("src", "include", "docs"):
            shutil.copytree(os.path.join(ROOT, d), os.path.join(tmp, d))
        shutil.copy(os.path.join(ROOT, "CMakeLists.txt"), tmp)
        with open(os.path.join(tmp, "docs", "architecture.md"), "a", encoding="utf-8") as f:
            f.write("\n" + rows)
        os.makedirs(os.path.join(tmp, "src", "backends", "zz"))
        run = lambda: subprocess.run([sys.executable, here, tmp], capture_output=True, text=True)
        clean = run()
        if clean.returncode != 0:
            print("self-test: the copy fails before anything is planted:\n" + clean.stdout)
            return 1
        for path, text, want in plants:
            with open(os.path.join(tmp, path), "w", encoding="utf-8") as f:
                f.write(text)
            r = run()
            found = r.returncode == 1 and any(
                line.startswith(path) and want in line for line in r.stdout.splitlines())
            print(f"self-test: {path}: {'reported' if found else 'NOT reported'} ({want})")
            ok = ok and found
            os.remove(os.path.join(tmp, path))
    return 0 if ok else 1


def main():
    if SELF_TEST:
        return self_test()
    layers = read_layers()
    faults = []
    if len(layers) < 10:
        print(f"docs/architecture.md: {len(layers)} layers read: the layer table is missing")
        return 1
    folders = compiler_folders()
    if len(folders) < 2:
        print(f"CMakeLists.txt: {len(folders)} compiler folders read from EG_COMPILER_GLOBS "
              "(set(EG_COMPILER_GLOBS ${PROJECT_SOURCE_DIR}/<folder>/*.c ...)): it was not read")
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
            folder_lib = library_of_folder(path, folders)
            if own["library"] != folder_lib:
                faults.append(f"{path}: in layer {own['name']} (library {own['library']}) but its "
                              f"folder makes it {folder_lib} ({', '.join(folders)} the compiler, "
                              "src/cli/* the CLI): a file's folder says its library")
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
    faults += backend_faults()
    for f in faults:
        print(f)
    print(f"check_layers: {files} files, {n_includes} includes, {len(layers)} layers: "
          f"{len(faults)} against the rule")
    return 1 if faults or files == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
