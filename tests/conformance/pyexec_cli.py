#!/usr/bin/python3
"""A stand-in for the edgegrad CLI's `run` command, executing graphs with graph_exec (PyTorch).

    pyexec_cli.py run MODEL.json --input NAME=FILE.npy ... --output-dir DIR

Same contract as the C CLI: writes DIR/<output name>.npy for every output; exit 0 on success,
else 1 with one line on stderr. It exists to test the conformance harness itself, e.g.
`run_conformance.py --edgegrad tests/conformance/pyexec_cli.py`.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import numpy as np  # noqa: E402

import graph_exec  # noqa: E402


def main(argv):
    parser = argparse.ArgumentParser(prog="pyexec_cli.py")
    parser.add_argument("command", choices=["run"])
    parser.add_argument("model")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    parser.add_argument("--output-dir", required=True)
    args = parser.parse_args(argv)
    try:
        graph, statics = graph_exec.load(args.model)
        inputs = {}
        for item in args.input:
            name, _, path = item.partition("=")
            inputs[name] = np.load(path)
        outputs = graph_exec.execute(graph, statics, inputs)
        os.makedirs(args.output_dir, exist_ok=True)
        for name, array in outputs.items():
            np.save(os.path.join(args.output_dir, name + ".npy"), array)
    except Exception as e:  # one line, like the C CLI
        print(f"{args.model}: {type(e).__name__}: {e}".splitlines()[0], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
