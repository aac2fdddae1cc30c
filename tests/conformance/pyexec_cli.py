#!/usr/bin/python3
"""A stand-in for the edgegrad CLI's `run` and `info --json` commands, executing graphs with
graph_exec (PyTorch).

    pyexec_cli.py run MODEL.json --input NAME=FILE.npy ... --output-dir DIR [--steps N --lr LR]
    pyexec_cli.py info --json MODEL.json

Same contract as the C CLI: `run` writes DIR/<output name>.npy for every output (of the last
step); with --steps N it runs N steps of plain SGD (graph_exec.run_steps) and also writes
DIR/losses.npy and DIR/final/<input>.npy for every parameter and buffer input. `info --json`
prints {"inputs", "outputs", "ops": {target: count}, "nodes"}. Exit 0 on success, else 1 with
one line on stderr. It exists to test the conformance harness itself, e.g.
`run_conformance.py --edgegrad tests/conformance/pyexec_cli.py`.
"""
import argparse
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import numpy as np  # noqa: E402

import graph_exec  # noqa: E402


def _run(args):
    graph, statics = graph_exec.load(args.model)
    inputs = {}
    for item in args.input:
        name, _, path = item.partition("=")
        inputs[name] = np.load(path)
    os.makedirs(args.output_dir, exist_ok=True)
    if args.steps > 1:
        losses, final, outputs = graph_exec.run_steps(graph, statics, inputs, args.steps, args.lr)
        np.save(os.path.join(args.output_dir, "losses.npy"), losses)
        params, buffers, _ = graph_exec.training_io(graph)
        os.makedirs(os.path.join(args.output_dir, "final"), exist_ok=True)
        for name in list(params) + list(buffers):
            np.save(os.path.join(args.output_dir, "final", name + ".npy"), final[name])
    else:
        outputs = graph_exec.execute(graph, statics, inputs)
    for name, array in outputs.items():
        np.save(os.path.join(args.output_dir, name + ".npy"), array)


def _info(args):
    graph, _ = graph_exec.load(args.model)
    io = lambda entries: [{"name": e["name"], **{k: graph["values"][e["value"]][k]
                                                for k in ("dtype", "shape")},
                           **{k: e[k] for k in ("role", "of") if k in e}} for e in entries]
    ops = collections.Counter(n["target"] for n in graph["nodes"])
    print(json.dumps({"inputs": io(graph["inputs"]), "outputs": io(graph["outputs"]),
                      "ops": dict(ops), "nodes": len(graph["nodes"])}))


def main(argv):
    parser = argparse.ArgumentParser(prog="pyexec_cli.py")
    parser.add_argument("command", choices=["run", "info"])
    parser.add_argument("model")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    parser.add_argument("--output-dir")
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--lr", type=float, default=0.0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("-q", "--quiet", action="store_true")
    args = parser.parse_args(argv)
    try:
        if args.command == "info":
            _info(args)
        elif not args.output_dir:
            raise ValueError("run needs --output-dir")
        else:
            _run(args)
    except Exception as e:  # one line, like the C CLI
        print(f"{args.model}: {type(e).__name__}: {e}".splitlines()[0], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
