"""edgegrad.federated (Flower's simulation, edgegrad training every client) against `edgegrad
train` and a centralised run:

    python tests/python/test_federated.py --edgegrad build/edgegrad --workdir DIR [--filter S]

Needs flwr[simulation] (the .venv of scripts/install-deps.sh test) and PyTorch (the accuracy
case exports its step). The library is the one EDGEGRAD_LIB names. Cases:
- ``mean``: 2 clients on the contiguous halves (shards) of 895 digits 5-9 (448 and 447
  examples), 1 round, 1 local epoch, no shuffle, Adam, the demo step on the CPU: the global
  weights `python -m edgegrad.federated --out` writes equal the example-weighted mean of the
  weights of two `edgegrad train` runs on the halves (1e-6);
- ``fleet``: 4 clients round-robin on cpu, SM8650 and a program compiled for SM8350
  (--soc-mix cpu,SM8650,P.egp: the step's JSON on the CPU kernels, compiled for SM8650 at its
  fp16 with dynamic loss scaling, and the .egp), client 3 raising in round 1 (--fail-clients
  3@1): the round line reports "3/4 clients returned" and the failure's reason, the round
  completes, the clients evaluate the global model too (--fraction-evaluate 1), and the
  global weights are the mean of the three that returned (`edgegrad train` on shard 0 on the
  CPU, shard 1 with --soc SM8650, shard 2 on the .egp);
- ``accuracy``: the small conv net with BatchNorm of scripts/fed_demo_step.py (pretrained on
  the digits 0-4 with PyTorch, fine-tuned whole on 672 digits 5-9, batch 4), 40 clients, Dirichlet(0.5), 4 rounds
  of 1 local epoch: the global model's validation accuracy is within 5 points of a
  centralised `edgegrad train` of 4 epochs on the same data and options; each round line
  carries the round's time and the largest client peak memory; the BatchNorm buffers
  (num_batches_tracked an integer) come back aggregated;
- ``fedprox``: SGD with lr * mu = 1: FedProx's proximal step pulls each client back onto the
  global weights after every step, so the round ends where it began (1e-6); ``fedadam``: one
  round of Flower's FedAdam moves the weights and writes a valid file;
- ``all_fail``: every client raising in every round: exit 1 saying so, nothing written;
- ``partition``: shards are contiguous, iid a seeded permutation, dirichlet seeded and skewed
  by class, every example in one client, each client at least a batch;
- ``errors``: bad arguments give one line `federated: <what> (<values>): <rule>`, exit 2, and
  write nothing; ``help``: every option docs/federated.md lists is in --help and the reverse.
Prints one line per case and `python_federated: N passed, M failed`; exit 1 on any failure.
"""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path[:0] = [os.path.join(ROOT, "python")]

import numpy as np  # noqa: E402

import harness  # noqa: E402
from edgegrad import safetensors  # noqa: E402
from edgegrad.federated import _partition  # noqa: E402

EXAMPLES = os.path.join(ROOT, "examples")
DEMO = os.path.join(EXAMPLES, "digits_step")


def _digits59(work, n=None):
    """The demo's data (scripts/digits_data.py), the first n examples, as an .npz."""
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "digits_data.py"),
                    os.path.join(work, "d59")], check=True, capture_output=True)
    x = np.load(os.path.join(work, "d59", "input.npy"))[:n]
    y = np.load(os.path.join(work, "d59", "target.npy"))[:n]
    return x, y


def _npz(path, **arrays):
    np.savez(path, **arrays)
    return path


def _fed(*args, timeout=600):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    return subprocess.run([sys.executable, "-m", "edgegrad.federated", *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


def _train(a, program, data, out, *args):
    r = subprocess.run([a.edgegrad, "train", program, "--data", data, "--out", out,
                        "--threads", "1", "--quiet", *args], capture_output=True, text=True,
                       timeout=600)
    if r.returncode:
        raise RuntimeError(f"edgegrad train exit {r.returncode}: {r.stderr.strip()}")
    return safetensors.load(out)[0]


def _mean_vs(got, runs, weights, tol=1e-6):
    """None when ``got`` ({name: array}) is the weighted mean of ``runs`` to ``tol``."""
    w = np.asarray(weights, np.float64) / np.sum(weights)
    if set(got) != set(runs[0]):
        return f"names {sorted(got)} != {sorted(runs[0])}"
    for name in got:
        want = sum(wi * r[name].astype(np.float64) for wi, r in zip(w, runs))
        err = np.max(np.abs(got[name] - want) / np.maximum(1.0, np.abs(want)))
        if not err <= tol:
            return f"{name}: differs from the weighted mean by {err:.3g} (> {tol})"
    return None


def _ok(r, what):
    if r.returncode:
        raise RuntimeError(f"{what} exit {r.returncode}: {r.stderr.strip()[-2000:]}")
    return r.stdout


def case_mean(a, work):
    x, y = _digits59(work, 895)
    data = _npz(os.path.join(work, "all.npz"), input=x, target=y)
    halves = np.array_split(np.arange(len(y)), 2)
    opts = ["--optimizer", "adam", "--lr", "0.01", "--no-shuffle", "--seed", "3"]
    init = DEMO + ".init.safetensors"
    out = os.path.join(work, "global.safetensors")
    _ok(_fed("--program", DEMO + ".json", "--init", init, "--data", data, "--clients", "2",
             "--partition", "shards", "--rounds", "1", "--local-epochs", "1", *opts,
             "--out", out), "federated")
    runs = [_train(a, DEMO + ".json", _npz(os.path.join(work, f"half{k}.npz"), input=x[h],
                                           target=y[h]),
                   os.path.join(work, f"half{k}.safetensors"), "--init", init, "--epochs", "1",
                   *opts)
            for k, h in enumerate(halves)]
    return _mean_vs(safetensors.load(out)[0], runs, [len(h) for h in halves])


def case_fleet(a, work):
    x, y = _digits59(work)
    data = _npz(os.path.join(work, "all.npz"), input=x, target=y)
    parts = np.array_split(np.arange(len(y)), 4)
    egp = os.path.join(work, "step_sm8350.egp")
    subprocess.run([a.edgegrad, "compile", DEMO + ".json", "--soc", "SM8350", "-o", egp],
                   check=True, capture_output=True)
    opts = ["--optimizer", "adam", "--lr", "0.01", "--no-shuffle"]
    init = DEMO + ".init.safetensors"
    out = os.path.join(work, "global.safetensors")
    stdout = _ok(_fed("--program", DEMO + ".json", "--init", init, "--data", data,
                      "--eval", DEMO + ".eval.json", "--val-data", data, "--clients", "4",
                      "--partition", "shards", "--rounds", "1", "--soc-mix",
                      f"cpu,SM8650,{egp}", "--fail-clients", "3@1", "--fraction-evaluate", "1",
                      *opts, "--out", out), "federated")
    line = next((ln for ln in stdout.splitlines() if ln.startswith("round 1/1:")), "")
    if "3/4 clients returned" not in line or "1 failed" not in line:
        return f"round line {line!r}: want 3/4 clients returned, 1 failed"
    if "failed: client 3 (cpu): fault injected in round 1" not in stdout:
        return f"no failure reason for client 3 in {stdout!r}"
    if "val accuracy" not in line or "clients' accuracy" not in line:
        return f"round line {line!r}: no val accuracy or clients' accuracy"
    runs, sizes = [], []
    for k, (program, soc) in enumerate([(DEMO + ".json", []),
                                        (DEMO + ".json", ["--soc", "SM8650"]), (egp, [])]):
        p = parts[k]
        runs.append(_train(a, program, _npz(os.path.join(work, f"s{k}.npz"), input=x[p],
                                            target=y[p]),
                           os.path.join(work, f"s{k}.safetensors"), "--init", init,
                           "--epochs", "1", *soc, *opts))
        sizes.append(len(p))
    return _mean_vs(safetensors.load(out)[0], runs, sizes)


def case_accuracy(a, work):
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "fed_demo_step.py"), work],
                   check=True, capture_output=True)
    stem = os.path.join(work, "step")
    data, val = os.path.join(work, "train.npz"), os.path.join(work, "val.npz")
    opts = ["--optimizer", "sgd", "--lr", "0.03", "--momentum", "0.9"]
    out = os.path.join(work, "global.safetensors")
    log = os.path.join(work, "rounds.jsonl")
    stdout = _ok(_fed("--program", stem + ".json", "--eval", stem + ".eval.json", "--data", data,
                      "--val-data", val, "--clients", "40", "--partition", "dirichlet:0.5",
                      "--rounds", "4", "--local-epochs", "1", *opts, "--out", out, "--log", log),
                 "federated")
    print(stdout, end="", flush=True)
    rounds = [ln for ln in stdout.splitlines() if re.match(r"round [1-4]/4:", ln)]
    if len(rounds) != 4 or not all(re.search(r"\d+\.\d\d s, slowest client .* client peak "
                                             r"\d+ MiB", ln) for ln in rounds):
        return f"round lines {rounds}: want 4, each with its time and the clients' peak memory"
    fed_acc = float(re.search(r"val accuracy ([\d.]+)%", rounds[-1]).group(1)) / 100
    central = os.path.join(work, "central.jsonl")
    _train(a, stem + ".json", data, os.path.join(work, "central.safetensors"), "--eval",
           stem + ".eval.json", "--val-data", val, "--epochs", "4", "--log", central, *opts)
    epochs = [e for e in map(json.loads, open(central)) if e["event"] == "epoch"]
    central_acc = epochs[-1]["val_accuracy"]
    print(f"  federated {fed_acc:.1%} after 4 rounds, centralised {central_acc:.1%} after 4 "
          f"epochs", flush=True)
    w = safetensors.load(out)[0]
    nbt = w.get("bn1.num_batches_tracked")
    if nbt is None or nbt.dtype != np.int64 or not nbt > 0:
        return f"bn1.num_batches_tracked {nbt!r}: want the aggregated count (int64 > 0)"
    if fed_acc < central_acc - 0.05:
        return f"federated accuracy {fed_acc:.3f} more than 5 points below centralised " \
               f"{central_acc:.3f}"
    return None


def case_fedprox(a, work):
    x, y = _digits59(work, 256)
    data = _npz(os.path.join(work, "d.npz"), input=x, target=y)
    init = DEMO + ".init.safetensors"
    out = os.path.join(work, "prox.safetensors")
    _ok(_fed("--program", DEMO + ".json", "--init", init, "--data", data, "--clients", "2",
             "--rounds", "1", "--strategy", "fedprox", "--proximal-mu", "20", "--lr", "0.05",
             "--out", out), "federated fedprox")
    first = safetensors.load(init)[0]
    why = _mean_vs(safetensors.load(out)[0], [first], [1])
    if why:
        return f"fedprox with lr * mu = 1: {why}"
    out2 = os.path.join(work, "adam.safetensors")
    _ok(_fed("--program", DEMO + ".json", "--init", init, "--data", data, "--clients", "2",
             "--rounds", "1", "--strategy", "fedadam", "--optimizer", "adam", "--lr", "0.01",
             "--out", out2), "federated fedadam")
    moved = safetensors.load(out2)[0]
    if _mean_vs(moved, [first], [1], tol=1e-4) is None:
        return "fedadam: the weights did not move"
    return None


def case_all_fail(a, work):
    """Every client failing in every round: exit 1, the reason said, nothing written."""
    x, y = _digits59(work, 128)
    data = _npz(os.path.join(work, "d.npz"), input=x, target=y)
    out = os.path.join(work, "w.safetensors")
    r = _fed("--program", DEMO + ".json", "--data", data, "--clients", "2", "--rounds", "1",
             "--fail-clients", "0,1", "--out", out)
    err = r.stderr.strip().splitlines()
    if r.returncode != 1 or not err or "no round had a client return" not in err[-1]:
        return f"exit {r.returncode}, stderr {r.stderr!r}: want exit 1 and why"
    if "0/2 clients returned, 2 failed" not in r.stdout:
        return f"stdout {r.stdout!r}: no round line with both failures"
    if set(os.listdir(work)) - {"d.npz", "d59"}:
        return f"files written: {sorted(os.listdir(work))}"
    return None


def case_partition(a, work):
    labels = np.repeat(np.arange(5), 60)
    shards = _partition.split("shards", 4, 300, min_size=8)
    if [list(p[[0, -1]]) for p in shards] != [[0, 74], [75, 149], [150, 224], [225, 299]]:
        return f"shards {[list(p[[0, -1]]) for p in shards]}: want contiguous quarters"
    iid = _partition.split("iid", 4, 300, seed=1, min_size=8)
    d1 = _partition.split("dirichlet:0.3", 6, 300, labels, seed=5, min_size=4)
    d2 = _partition.split("dirichlet:0.3", 6, 300, labels, seed=5, min_size=4)
    for name, parts in (("iid", iid), ("dirichlet", d1)):
        if not np.array_equal(np.sort(np.concatenate(parts)), np.arange(300)):
            return f"{name}: the parts do not hold every example once"
    if not all(np.array_equal(p, q) for p, q in zip(d1, d2)):
        return "dirichlet: the same seed gave another split"

    def skew(parts):  # the mean share of a client's most common class
        return np.mean([np.bincount(labels[p], minlength=5).max() / len(p) for p in parts])
    if not skew(d1) > skew(_partition.split("iid", 6, 300, seed=5)) + 0.2:
        return f"dirichlet:0.3 class skew {skew(d1):.2f}: not above iid's"
    if min(len(p) for p in d1) < 4:
        return "dirichlet: a client below the minimum size"
    return harness.raises(lambda: _partition.split("dirichlet:0", 2, 300, labels),
                          __import__("edgegrad").ArgumentError, "dirichlet:A is a number > 0")


ERRORS = [
    (["--clients", "0"], "federated: --clients (0): at least 1"),
    (["--partition", "dirichlet:x"], "--partition dirichlet:x (x): the concentration A"),
    (["--partition", "halves"], "--partition halves (halves): expected iid, shards or"),
    (["--soc-mix", "cpu,SM9999"], "--soc-mix cpu,SM9999 (SM9999): expected cpu, a SoC"),
    (["--fail-clients", "7@1"], "federated: --fail-clients (7@1): client numbers are 0 to 3"),
    (["--fail-clients", "1@9"], "federated: --fail-clients (1@9): rounds are 1 to 2"),
    (["--val-data", "DATA"], "a validation set needs --eval EVAL"),
    (["--clients", "60"], "federated: --clients 60 (256 examples, batch 32): each client needs"),
    (["--fraction", "1.5"], "federated: --fraction (1.5): a fraction in (0, 1]"),
    (["--loss-scale", "big"], "federated: --loss-scale (big): expected none, dynamic"),
    (["--rounds", "x"], "federated: argument --rounds: invalid int value: 'x'"),
    (["--data", "nowhere.npz"], "federated: --data (nowhere.npz): no such file or folder"),
    (["--max-memory", "1Q"], "federated: max_memory '1Q': expected bytes"),
]


def case_errors(a, work):
    x, y = _digits59(work, 256)
    data = _npz(os.path.join(work, "d.npz"), input=x, target=y)
    for extra, want in ERRORS:
        out = os.path.join(work, "w.safetensors")
        base = {"--program": DEMO + ".json", "--data": data, "--clients": "4", "--rounds": "2",
                "--out": out}
        argv = []
        for k, v in base.items():
            if k not in extra:
                argv += [k, v]
        argv += [data if v == "DATA" else v for v in extra]
        r = _fed(*argv, timeout=120)
        err = r.stderr.strip()
        if r.returncode != 2 or "\n" in err or want not in err:
            return f"{extra}: exit {r.returncode}, stderr {err!r}: want exit 2 and one line " \
                   f"with {want!r}"
        if os.path.exists(out) or os.path.exists(out[:-12] + ".curves.svg"):
            return f"{extra}: a file was written"
    return None


def case_help(a, work):
    r = _fed("--help", timeout=120)
    if r.returncode:
        return f"--help exit {r.returncode}: {r.stderr}"
    given = set(re.findall(r"(--[a-z][a-z0-9-]+)", r.stdout)) - {"--help"}
    doc = open(os.path.join(ROOT, "docs", "federated.md")).read()
    table = set(re.findall(r"^\| `(--[a-z][a-z0-9-]+)", doc, re.M))
    if given != table:
        return f"options in --help but not in docs/federated.md: {sorted(given - table)}; " \
               f"in the doc but not in --help: {sorted(table - given)}"
    return None


def main():
    jobs = [("partition", case_partition), ("errors", case_errors), ("help", case_help),
            ("mean", case_mean), ("fleet", case_fleet), ("fedprox", case_fedprox), ("all_fail", case_all_fail),
            ("accuracy", case_accuracy)]
    harness.main(__doc__, "python_federated", jobs)


if __name__ == "__main__":
    main()
