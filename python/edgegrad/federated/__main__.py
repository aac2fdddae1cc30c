"""python -m edgegrad.federated: federated fine-tuning of an edgegrad training step on Flower's
simulation engine (N virtual clients, each training its shard with edgegrad). See
docs/federated.md. Exit status: 0 done, 1 the run failed, 2 bad arguments."""
import argparse
import json
import math
import os
import sys

from .._capi import Error

EPILOG = """\
partitions: iid (a permutation drawn from --seed, cut into N near-equal parts), shards (client k
takes the k-th contiguous slice of the data, in order), dirichlet:A (per class, the clients'
shares drawn from Dirichlet(A) from --seed; redrawn until each client holds a batch).

devices: --soc-mix cpu,SM8650 assigns client k the k % 2-th entry (round-robin): cpu runs the
step's JSON on the CPU kernels, a SoC name compiles it for that SoC (NPU partitions on its
executor, at its precision), a path P.egp runs that compiled program. Default: every client
runs --program as given.

Each round prints the clients sampled, returned and failed (with each failure's reason), the
clients' mean train loss, the global model's val loss and accuracy (--val-data with --eval: the
evaluation graph on the server's CPU kernels), the round's time, the slowest client's time, the
largest peak memory of a client (its worker process's resident set while it trained) and the
bytes the arrays moved (to the clients and back).

--fail-clients K[@R][,...]: fault injection for tests: client K raises instead of training in
round R (every round without @R); the round goes on with the clients that returned.
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        print(f"federated: {message}: see python -m edgegrad.federated --help", file=sys.stderr)
        sys.exit(2)


class Usage(Exception):
    """A bad argument: its message is the one line to print."""


def _pair(text):
    try:
        a, b = (float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text}: expected two numbers A,B") from None
    return a, b


def parser():
    p = _Parser(prog="python -m edgegrad.federated",
                description="Federated fine-tuning of an edgegrad training step on Flower's "
                            "simulation engine: N virtual clients, each training its share of "
                            "the data with edgegrad; the global weights under PyTorch names.",
                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_argument_group("the model and the data")
    g.add_argument("--program", required=True, metavar="STEP.json|PROGRAM.egp",
                   help="the training step (the exporter's STEP.json, or edgegrad compile's .egp)")
    g.add_argument("--init", metavar="INIT.safetensors",
                   help="the first global weights (default: STEM.init.safetensors beside "
                        "--program, else the program's own values)")
    g.add_argument("--data", required=True, metavar="DATA.npz",
                   help="the training examples: an .npz or a folder of <input>.npy, as edgegrad "
                        "train --data; split over the clients by --partition")
    g.add_argument("--val-data", metavar="V.npz",
                   help="the global model's validation set (needs --eval)")
    g.add_argument("--eval", metavar="EVAL.json|EVAL.egp", help="the evaluation graph")
    g = p.add_argument_group("the federation (Flower)")
    g.add_argument("--clients", type=int, required=True, metavar="N", help="virtual clients")
    g.add_argument("--partition", default="iid", metavar="iid|shards|dirichlet:A",
                   help="how the data is split over the clients (default iid)")
    g.add_argument("--rounds", type=int, required=True, metavar="R", help="federated rounds")
    g.add_argument("--local-epochs", type=int, default=1, metavar="E",
                   help="epochs each sampled client trains on its shard per round (default 1)")
    g.add_argument("--fraction", type=float, default=1.0, metavar="F",
                   help="fraction of the clients sampled each round (default 1)")
    g.add_argument("--min-clients", type=int, metavar="M",
                   help="sample at least M clients a round (default min(2, N); never fewer "
                        "than the fleet's share int(N * F))")
    g.add_argument("--fraction-evaluate", type=float, default=0.0, metavar="F",
                   help="fraction of the clients that also evaluate the global model on their "
                        "own shard each round (needs --eval; default 0)")
    g.add_argument("--strategy", default="fedavg", choices=["fedavg", "fedprox", "fedadam"],
                   help="Flower's aggregation strategy (default fedavg)")
    g.add_argument("--proximal-mu", type=float, default=0.1, metavar="MU",
                   help="FedProx's proximal weight (default 0.1)")
    g.add_argument("--server-lr", type=float, default=0.1, metavar="ETA",
                   help="FedAdam's server learning rate eta (default 0.1)")
    g.add_argument("--seed", type=int, default=0, metavar="S",
                   help="the partition's draw and each client's trainer seed (default 0)")
    g.add_argument("--no-shuffle", action="store_true",
                   help="clients train their examples in the data's order")
    g.add_argument("--soc-mix", metavar="DEV,DEV,...",
                   help="client k's device is entry k %% count: cpu, a SoC, or a P.egp")
    g.add_argument("--threads", type=int, default=1, metavar="N",
                   help="kernel threads of each client (and Ray CPUs it reserves; default 1)")
    g.add_argument("--workers", type=int, metavar="W",
                   help="clients training at once (default: cores // --threads)")
    g.add_argument("--round-timeout", type=float, default=3600.0, metavar="S",
                   help="seconds a round waits for replies; later ones are lost (default 3600)")
    g.add_argument("--fail-clients", metavar="K[@R],...",
                   help="fault injection (tests): client K raises in round R (every round "
                        "without @R)")
    g = p.add_argument_group("each client's optimizer (as edgegrad train)")
    g.add_argument("--optimizer", default="sgd", choices=["sgd", "adam", "adamw"])
    g.add_argument("--lr", type=float, metavar="LR", help="learning rate (default 1e-3)")
    g.add_argument("--momentum", type=float, default=0.0, metavar="M")
    g.add_argument("--dampening", type=float, default=0.0, metavar="D")
    g.add_argument("--nesterov", action="store_true")
    g.add_argument("--weight-decay", type=float, metavar="WD")
    g.add_argument("--betas", type=_pair, default=(0.9, 0.999), metavar="B1,B2")
    g.add_argument("--eps", type=float, default=1e-8, metavar="EPS")
    g.add_argument("--lr-schedule", default="constant", choices=["constant", "step", "cosine"],
                   help="per local epoch, restarting each round")
    g.add_argument("--lr-step", type=int, default=1, metavar="E")
    g.add_argument("--lr-gamma", type=float, default=0.1, metavar="G")
    g.add_argument("--normalize", type=_pair, metavar="MEAN,STD")
    g.add_argument("--loss-scale", metavar="none|dynamic|S")
    g.add_argument("--precision", choices=["fp16", "fp32"],
                   help="the NPU partitions' precision (default: the SoC's)")
    g.add_argument("--max-memory", metavar="SIZE", help="bytes each client's runtime may reserve")
    g = p.add_argument_group("output")
    g.add_argument("--out", required=True, metavar="W.safetensors",
                   help="the global weights under their PyTorch names (atomically)")
    g.add_argument("--curves", metavar="C.svg",
                   help="the loss and accuracy per round (default: W.curves.svg beside --out)")
    g.add_argument("--log", metavar="R.jsonl", help="each round's record as a JSON line")
    g.add_argument("--verbose", action="store_true", help="Flower's and Ray's own log lines")
    return p


def _check(ok, what, values, rule):
    if not ok:
        raise Usage(f"federated: {what} ({values}): {rule}")


def _failures(spec):
    """--fail-clients K[@R],... -> {client: set of rounds (empty: every round)}."""
    out = {}
    for item in spec.split(",") if spec else []:
        k, _, r = item.partition("@")
        try:
            k, r = int(k), (int(r) if r else None)
        except ValueError:
            raise Usage(f"federated: --fail-clients {spec} ({item}): expected K or K@R, client "
                        f"and round numbers") from None
        rounds = out.setdefault(k, set())
        if r is not None:
            rounds.add(r)
    return out


def _trainer_options(a):
    o = {"optimizer": a.optimizer, "lr": a.lr, "seed": a.seed, "shuffle": not a.no_shuffle,
         "weight_decay": a.weight_decay, "precision": a.precision}
    if a.optimizer == "sgd":
        o.update(momentum=a.momentum, dampening=a.dampening, nesterov=a.nesterov)
    else:
        o.update(betas=a.betas, eps=a.eps)
    if a.lr_schedule == "step":
        o["schedule"] = ("step", a.lr_step, a.lr_gamma)
    elif a.lr_schedule == "cosine":
        o["schedule"] = ("cosine", a.local_epochs)
    if a.normalize:
        o["normalize"] = a.normalize
    if a.loss_scale is not None:
        ls = a.loss_scale
        if ls not in ("none", "dynamic"):
            try:
                ls = float(ls)
            except ValueError:
                ls = math.nan
            _check(ls > 0 and math.isfinite(ls), "--loss-scale", a.loss_scale,
                   "expected none, dynamic or a scale > 0")
        o["loss_scale"] = ls
    return o


def _validate(a):
    _check(a.clients >= 1, "--clients", a.clients, "at least 1")
    _check(a.rounds >= 1, "--rounds", a.rounds, "at least 1")
    _check(a.local_epochs >= 1, "--local-epochs", a.local_epochs, "at least 1")
    _check(0 < a.fraction <= 1, "--fraction", a.fraction, "a fraction in (0, 1]")
    _check(0 <= a.fraction_evaluate <= 1, "--fraction-evaluate", a.fraction_evaluate,
           "a fraction in [0, 1]")
    _check(not a.fraction_evaluate or a.eval, "--fraction-evaluate", a.fraction_evaluate,
           "the clients' evaluation needs --eval EVAL")
    if a.min_clients is not None:
        _check(1 <= a.min_clients <= a.clients, "--min-clients", a.min_clients,
               f"between 1 and --clients {a.clients}")
    _check(a.threads >= 1, "--threads", a.threads, "at least 1")
    _check(a.workers is None or a.workers >= 1, "--workers", a.workers, "at least 1")
    _check(a.round_timeout > 0, "--round-timeout", a.round_timeout, "seconds > 0")
    _check(0 <= a.seed < 1 << 64, "--seed", a.seed, "an integer in [0, 2^64)")
    _check(a.val_data is None or a.eval, "--val-data", a.val_data,
           "a validation set needs --eval EVAL (the evaluation graph)")
    _check(a.strategy != "fedprox" or a.proximal_mu > 0, "--proximal-mu", a.proximal_mu,
           "FedProx's mu is > 0")
    _check(a.server_lr > 0, "--server-lr", a.server_lr, "a learning rate > 0")
    _check(a.optimizer == "sgd" or not (a.momentum or a.dampening or a.nesterov),
           "--momentum/--dampening/--nesterov", a.optimizer, "options of --optimizer sgd")
    _check(a.lr is None or a.lr >= 0, "--lr", a.lr, "a learning rate >= 0")
    for path, what in ((a.program, "--program"), (a.data, "--data"), (a.init, "--init"),
                       (a.val_data, "--val-data"), (a.eval, "--eval")):
        _check(path is None or os.path.exists(path), what, path, "no such file or folder")
    for path, what in ((a.out, "--out"), (a.curves, "--curves"), (a.log, "--log")):
        folder = os.path.dirname(os.path.abspath(path)) if path else "."
        _check(os.path.isdir(folder), what, path, "its folder does not exist")
    _check(a.out.endswith(".safetensors"), "--out", a.out, "a .safetensors file")
    fails = _failures(a.fail_clients)
    for k, rounds in fails.items():
        _check(0 <= k < a.clients, "--fail-clients", a.fail_clients,
               f"client numbers are 0 to {a.clients - 1}")
        _check(all(1 <= r <= a.rounds for r in rounds), "--fail-clients", a.fail_clients,
               f"rounds are 1 to {a.rounds}")
    return fails


def _line(rec, rounds, fleet):
    r = rec["round"]
    parts = []
    if r > 0:
        parts.append(f"{rec.get('returned', 0)}/{rec['sampled']} clients returned")
        if rec["failures"] or rec.get("lost"):
            parts.append(f"{len(rec['failures'])} failed" +
                         (f", {rec['lost']} lost" if rec.get("lost") else ""))
        if "train_loss" in rec:
            parts.append(f"train loss {rec['train_loss']:.4f}")
    if "val_loss" in rec:
        parts.append(f"val loss {rec['val_loss']:.4f}")
    if "val_accuracy" in rec:
        parts.append(f"val accuracy {rec['val_accuracy']:.1%}")
    if "client_eval" in rec and "val_accuracy" in rec["client_eval"]:
        parts.append(f"clients' accuracy {rec['client_eval']['val_accuracy']:.1%}")
    if r > 0:
        parts.append(f"{rec['seconds']:.2f} s")
        if "seconds_max" in rec:
            parts.append(f"slowest client {rec['seconds_max']:.2f} s")
        if "peak_mb_max" in rec:
            parts.append(f"client peak {rec['peak_mb_max']:.0f} MiB")
        parts.append(f"{rec['bytes'] / 1e6:.2f} MB moved")
    else:
        parts.append("the first weights")
    line = f"round {r}/{rounds}: " + ", ".join(parts)
    for reason in rec.get("failures", []):
        line += f"\n  failed: {reason}"
    return line


def main(argv):
    a = parser().parse_args(argv)
    try:
        fails = _validate(a)
        trainer_options = _trainer_options(a)
        return _run(a, fails, trainer_options)
    except Usage as e:
        print(e, file=sys.stderr)
        return 2
    except Error as e:  # the library's one line (a bad file, a program of another model)
        print(f"federated: {e}", file=sys.stderr)
        return 2 if isinstance(e, ValueError) else 1
    except RuntimeError as e:  # Flower's simulation stopped (its cause on the line)
        cause = e.__cause__ or e
        print(f"federated: the simulation failed ({type(cause).__name__}): {cause}: nothing "
              f"written", file=sys.stderr)
        return 1


def _run(a, fails, trainer_options):
    import numpy as np

    from . import Evaluator, Fleet, devices, feeds, quiet, run, split, strategy
    from . import _curves
    from .. import runtime, trainer

    mix = [m.strip() for m in a.soc_mix.split(",")] if a.soc_mix else None
    devs = devices(a.program, a.eval, mix)
    with runtime.load(a.program, threads=1) as rt:
        names = feeds(rt)
        labels = [t.name for t in rt.inputs if t.role == "label"]
        data_info = next((t for t in rt.inputs if t.role == "data"), None)
        batch = data_info.shape[0] if data_info is not None and data_info.shape else 1
    arrays = trainer._read_arrays(a.data, names, "--data")
    sizes = {n: len(x) for n, x in arrays.items()}
    _check(len(set(sizes.values())) == 1, "--data", a.data,
           f"every array needs the same number of examples ({sizes})")
    n = next(iter(sizes.values()))
    parts = split(a.partition, a.clients, n, labels=arrays[labels[0]] if labels else None,
                  seed=a.seed, min_size=batch)
    val = trainer._read_arrays(a.val_data, names, "--val-data") if a.val_data else None
    evaluator = Evaluator(a.program, init=a.init, eval=a.eval, val=val)
    try:
        first = evaluator.state_dict()
        # every device's program loads as its clients will load it (--max-memory included)
        # and holds the same parameters and buffers
        for d in devs:
            with runtime.load(d.program, soc=d.soc, threads=1, precision=a.precision,
                              max_memory=a.max_memory) as drt:
                theirs = {t.state_dict or t.name: (t.dtype, t.shape) for t in drt.inputs
                          if t.role in ("parameter", "buffer")}
            ours = {k: (v.dtype, v.shape) for k, v in first.items()}
            _check(theirs == ours, "--soc-mix", d.label,
                   f"its program's parameters and buffers differ from --program {a.program}'s")
        fleet = Fleet(devices=devs, data=os.path.abspath(a.data), parts=parts,
                      trainer=trainer_options, local_epochs=a.local_epochs, threads=a.threads,
                      max_memory=a.max_memory, failures=fails)
        options = {"fedprox": {"proximal_mu": a.proximal_mu},
                   "fedadam": {"eta": a.server_lr}}.get(a.strategy, {})
        with quiet(a.verbose):
            strat = strategy(a.strategy, a.clients, fraction=a.fraction,
                             min_clients=a.min_clients, fraction_evaluate=a.fraction_evaluate,
                             options=options)
        counts = [len(p) for p in parts]
        print(f"federated: {a.clients} clients ({a.partition}: {min(counts)} to {max(counts)} "
              f"examples, batch {batch}) on {', '.join(d.label for d in devs)}; {a.rounds} "
              f"rounds of {a.strategy}, {a.local_epochs} local epoch(s) each", flush=True)
        result = run(fleet, strat, evaluator, a.rounds, workers=a.workers,
                     timeout=a.round_timeout, verbose=a.verbose,
                     on_round=lambda rec: print(_line(rec, a.rounds, fleet), flush=True))
        trained = [r for r in result.rounds if r["round"] > 0 and r.get("returned")]
        if not trained:
            reasons = [f for r in result.rounds for f in r.get("failures", [])]
            print(f"federated: no round had a client return ({len(reasons)} failures; first: "
                  f"{reasons[0] if reasons else 'none'}): nothing written", file=sys.stderr)
            return 1
        curves = a.curves or a.out[:-len(".safetensors")] + ".curves.svg"
        if a.log:
            from .._files import write_atomic
            lines = [json.dumps({k: v for k, v in r.items() if k != "clients"}, default=float)
                     for r in result.rounds]
            write_atomic(a.log, ("\n".join(lines) + "\n").encode())
        _curves.write(curves, result.rounds)
        evaluator.save(a.out, {k: np.asarray(v) for k, v in result.state_dict.items()})
        print(f"federated: global weights in {a.out}, curves in {curves}")
        return 0
    finally:
        evaluator.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
