"""Federated fine-tuning on Flower, with edgegrad as every client's trainer (docs/federated.md).

    from edgegrad import federated
    result = federated.run("step.json", "digits.npz", eval="step.eval.json", val="val.npz",
                           clients=20, partition="dirichlet:0.5", rounds=5, local_epochs=1,
                           soc_mix=["cpu", "SM8650"], optimizer="adam", lr=0.01)
    result.state_dict           # the global parameters and buffers, by PyTorch name
    result.rounds               # a dict per round: clients, failures, losses, accuracy, ...

The federation is Flower's (``flwr``, with its ``simulation`` extra): the rounds, the sampling of
clients, the aggregation (FedAvg, FedProx or FedAdam, ``flwr.serverapp.strategy``) and the
simulation engine (Ray: many virtual clients on one machine). What is edgegrad's: the ClientApp
(``client_app``) whose train function fine-tunes the client's shard with ``edgegrad.Trainer`` —
the step's JSON on the CPU kernels, the JSON compiled for a SoC, or a compiled program (.egp) —
and returns its parameters, buffers and example count, and whose evaluate function runs the
evaluation graph; the ServerApp (``server_app``) that starts Flower's strategy from the step's
first weights, evaluates the global model with the evaluation graph after every round and
reports each round; the split of the data over the clients (``split``).

Needs numpy, edgegrad's shared library and ``flwr[simulation]`` (never PyTorch).
"""
import contextlib
import dataclasses
import logging
import os
import time

import numpy as np

from .. import runtime as _runtime_mod
from .. import trainer as _trainer_mod
from .._capi import ArgumentError
from ._partition import split

try:
    from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.serverapp import ServerApp
    from flwr.serverapp.strategy import FedAdam, FedAvg, FedProx
except ImportError as e:  # one line, saying what to install
    raise ImportError(f"edgegrad.federated: flwr ({e.name}) not importable: pip install "
                      f"'flwr[simulation]==1.42.0' (scripts/install-deps.sh test puts it in "
                      f".venv)") from None

__all__ = ["Device", "Fleet", "Result", "STRATEGIES", "client_app", "devices", "run",
           "quiet", "server_app", "split", "strategy"]

STRATEGIES = {"fedavg": FedAvg, "fedprox": FedProx, "fedadam": FedAdam}


# ---- the fleet: where each client trains, on which examples -----------------------------------

@dataclasses.dataclass(frozen=True)
class Device:
    """A kind of client device: ``label`` ("cpu", a SoC name or a program's file name), the
    ``program`` it runs (a step's JSON, or a compiled .egp) compiled for ``soc`` (None: as it
    is), and its evaluation graph ``eval`` (None: none)."""
    label: str
    program: str
    soc: str = None
    eval: str = None


def devices(program, eval=None, mix=None):
    """The Devices of a fleet from the ``--soc-mix`` entries ``mix`` (client k is of kind
    ``mix[k % len(mix)]``): ``"cpu"`` (the step's JSON on the CPU kernels), a SoC name
    (``edgegrad.targets()``: the JSON compiled for it in memory, NPU partitions on its executor,
    at its precision), or the path of a program compiled for a SoC (``edgegrad compile --soc S
    -o P.egp``). None: every client runs ``program`` as it is. A JSON evaluation graph is
    compiled for each client's SoC as its step is; an .egp one runs as it is."""
    program = os.fspath(program)
    is_json = not _runtime_mod._is_program(program)
    if not mix:
        return [Device("cpu" if is_json else os.path.basename(program), program, None, eval)]
    socs = {t["soc"].upper(): t["soc"] for t in _runtime_mod.targets()}
    out = []
    for entry in mix:
        if entry.endswith(".egp") or os.path.sep in entry:
            out.append(Device(os.path.basename(entry), entry, None, eval))
            continue
        if entry != "cpu" and entry.upper() not in socs:
            raise ArgumentError(f"--soc-mix {','.join(mix)} ({entry}): expected cpu, a SoC "
                                f"({', '.join(sorted(socs.values()))}) or a program .egp")
        if not is_json:
            raise ArgumentError(f"--soc-mix {','.join(mix)} ({entry}): a cpu or SoC client "
                                f"runs the step's graph: give --program STEP.json (the .egp "
                                f"{program} is compiled for one SoC)")
        soc = None if entry == "cpu" else socs[entry.upper()]
        out.append(Device(entry if soc is None else soc, program, soc, eval))
    return out


@dataclasses.dataclass
class Fleet:
    """What every client needs to train (sent to Flower's workers with the ClientApp):
    ``devices`` (client k is ``devices[k % len(devices)]``), ``data`` (the path of the training
    arrays: an .npz or a folder of <input>.npy, as ``edgegrad train --data``), ``parts`` (the
    example indices of each client), ``trainer`` (edgegrad.Trainer's options: optimizer, lr,
    ...; ``seed`` is the run's), ``local_epochs``, ``threads`` and ``max_memory`` of each
    client's runtime, and ``failures`` ({client: rounds}, an empty set meaning every round: the
    rounds in which that client raises instead of training — fault injection for tests)."""
    devices: list
    data: str
    parts: list
    trainer: dict
    local_epochs: int = 1
    threads: int = 1
    max_memory: object = None
    failures: dict = dataclasses.field(default_factory=dict)

    def device(self, k):
        return self.devices[k % len(self.devices)]

    def seed(self, k, server_round):
        """The trainer seed of client k in a round (its example order and Dropout masks):
        drawn from the run's seed, the round and the client, so no two agree."""
        ss = np.random.SeedSequence([int(self.trainer.get("seed", 0)), server_round, k])
        return int(ss.generate_state(1, np.uint64)[0])


# per worker process: the runtimes (a graph compiled for a SoC once) and the data set
_RUNTIMES, _DATA = {}, {}


def _runtime(path, soc, threads, max_memory, precision):
    key = (path, soc, threads, max_memory, precision)
    if key not in _RUNTIMES:
        _RUNTIMES[key] = _runtime_mod.load(path, soc=soc, threads=threads,
                                           max_memory=max_memory, precision=precision)
    return _RUNTIMES[key]


def feeds(rt):
    """The names of a step's data and label inputs (what --data holds)."""
    return [t.name for t in rt.inputs if t.role in ("data", "label")]


def _shard(fleet, rt, k):
    if fleet.data not in _DATA:
        _DATA[fleet.data] = _trainer_mod._read_arrays(fleet.data, feeds(rt), "--data")
    idx = fleet.parts[k]
    return {n: np.ascontiguousarray(a[idx]) for n, a in _DATA[fleet.data].items()}


def set_state(rt, arrays):
    """Loads parameters and buffers ({state_dict name: array}, an ArrayRecord's) into a
    runtime, each cast to its input's dtype (an aggregated integer buffer rounded)."""
    by_name = {t.state_dict or t.name: t for t in rt.inputs if t.role in ("parameter", "buffer")}
    for name, a in arrays.items():
        a = a.numpy() if isinstance(a, Array) else np.asarray(a)
        info = by_name.get(name)
        if info is None:
            raise ArgumentError(f"{rt.path}: global array {name!r} ({a.dtype} {list(a.shape)}): "
                                f"the step has no parameter or buffer of that name")
        if info.dtype.kind in "iub" and a.dtype.kind == "f":
            a = np.rint(a)
        rt.set_input(info.name, a.astype(info.dtype, copy=False))


def _peak_reset():
    """Resets the process's peak resident set (VmHWM; Linux's /proc/self/clear_refs "5")."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_mb():
    """The process's peak resident set since the last reset, in MiB (ru_maxrss without one)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _proximal(rt, mu, start):
    """FedProx's proximal term (mu/2)|w - w_global|^2 as a step of its own after each optimizer
    step: w <- w - lr * mu * (w - w_global) (decoupled, as AdamW decouples weight decay)."""
    params = {t.name: start[t.state_dict or t.name] for t in rt.inputs
              if t.role == "parameter" and (t.state_dict or t.name) in start}

    def on_event(e):
        if e["event"] == "step":
            f = e["lr"] * mu
            for name, g in params.items():
                w = rt.input(name)
                rt.set_input(name, w - f * (w - g))
    return on_event


def client_app(fleet):
    """A Flower ClientApp over edgegrad: ``train`` loads the global arrays into the client's
    runtime (its Device's program, loaded once per worker process), fine-tunes its shard for
    ``fleet.local_epochs`` epochs with edgegrad.Trainer (a fresh optimizer each round, seeded
    by Fleet.seed; with FedProx's "proximal-mu" in the config, the proximal step) and replies
    with its parameters and buffers (an ArrayRecord by state_dict name) and a MetricRecord:
    num-examples (the shard's size: FedAvg's weight), train_loss (the last local epoch's
    mean), seconds, peak_mb (the worker process's peak resident set while it trained), client.
    ``evaluate`` runs the evaluation graph over the client's shard: num-examples, val_loss and
    val_accuracy (for a classifier)."""
    app = ClientApp()

    def setup(msg, context, what):
        k = int(context.node_config["partition-id"])
        config = msg.content["config"]
        server_round = int(config.get("server-round", 0))
        dev = fleet.device(k)
        rounds = fleet.failures.get(k)
        if what == "train" and rounds is not None and (not rounds or server_round in rounds):
            raise RuntimeError(f"client {k} ({dev.label}): fault injected in round "
                               f"{server_round} (--fail-clients)")
        rt = _runtime(dev.program, dev.soc, fleet.threads, fleet.max_memory,
                      fleet.trainer.get("precision"))
        arrays = msg.content["arrays"]
        set_state(rt, arrays)
        return k, dev, server_round, rt, arrays, config

    @app.train()
    def train(msg, context):
        k, dev, server_round, rt, arrays, config = setup(msg, context, "train")
        shard = _shard(fleet, rt, k)
        options = {o: v for o, v in fleet.trainer.items() if o != "precision"}
        options["seed"] = fleet.seed(k, server_round)
        mu = float(config.get("proximal-mu", 0.0))
        if mu > 0:
            options["callback"] = _proximal(rt, mu, {n: a.numpy() for n, a in arrays.items()})
        measured = _peak_reset()
        t0 = time.perf_counter()
        with _trainer_mod.Trainer(rt, **options) as tr:
            history = tr.fit(shard, epochs=fleet.local_epochs)
            state = tr.state_dict()
        seconds = time.perf_counter() - t0
        metrics = {"num-examples": len(fleet.parts[k]), "train_loss": history[-1]["train_loss"],
                   "seconds": seconds, "client": k}
        if measured:
            metrics["peak_mb"] = _peak_mb()
        reply = RecordDict({"arrays": ArrayRecord({n: Array(a) for n, a in state.items()}),
                            "metrics": MetricRecord(metrics)})
        return Message(reply, reply_to=msg)

    @app.evaluate()
    def evaluate(msg, context):
        k, dev, _, rt, _, _ = setup(msg, context, "evaluate")
        if dev.eval is None:
            raise RuntimeError(f"client {k} ({dev.label}): no evaluation graph (--eval)")
        ev = _runtime(dev.eval, dev.soc, fleet.threads, fleet.max_memory,
                      fleet.trainer.get("precision"))
        with _trainer_mod.Trainer(rt, eval=ev) as tr:
            r = tr.evaluate(val=_shard(fleet, rt, k))
        metrics = {"num-examples": len(fleet.parts[k]), "val_loss": r["val_loss"]}
        if r["val_accuracy"] is not None:
            metrics["val_accuracy"] = r["val_accuracy"]
        return Message(RecordDict({"metrics": MetricRecord(metrics)}), reply_to=msg)

    return app


# ---- the server -------------------------------------------------------------------------------

def _nbytes(record):
    return sum(len(a.data) for a in record.values())


def _reason(msg):
    """A failed reply's reason, its last line (the client's exception message)."""
    text = (msg.error.reason or "").strip()
    text = text.split("Message:")[-1].strip() if "Message:" in text else text
    text = text.splitlines()[-1].strip() if text else f"error {msg.error.code}"
    return text[:-2] if text.endswith("'>") else text  # the exception's repr, closed


class _Report:
    """Mixed into a Flower strategy (before it): records, per round, what was sent and
    received, which clients returned and which failed, and the clients' metrics."""

    def configure_train(self, server_round, arrays, config, grid):
        msgs = list(super().configure_train(server_round, arrays, config, grid))
        self.round = {"round": server_round, "t0": time.perf_counter(), "sampled": len(msgs),
                      "bytes": len(msgs) * _nbytes(arrays), "failures": [], "clients": []}
        return msgs

    def aggregate_train(self, server_round, replies):
        replies = list(replies)
        r = self.round
        for m in replies:
            if m.has_error():
                r["failures"].append(_reason(m))
            else:
                r["bytes"] += _nbytes(m.content["arrays"])
                r["clients"].append(dict(m.content["metrics"]))
        r["returned"] = len(replies) - len(r["failures"])
        r["lost"] = r["sampled"] - len(replies)  # no reply within the round's timeout
        arrays, metrics = super().aggregate_train(server_round, replies)
        if metrics is not None:
            r.update(dict(metrics))
        return arrays, metrics

    def configure_evaluate(self, server_round, arrays, config, grid):
        msgs = list(super().configure_evaluate(server_round, arrays, config, grid))
        self.round["bytes"] += len(msgs) * _nbytes(arrays)
        return msgs

    def aggregate_evaluate(self, server_round, replies):
        replies = list(replies)
        out = super().aggregate_evaluate(server_round, replies)
        if out is not None:
            self.round["client_eval"] = dict(out)
            self.round["client_eval_failures"] = sum(m.has_error() for m in replies)
        return out


@contextlib.contextmanager
def quiet(verbose=False):
    """Flower's own log lines (its logger "flwr") silenced unless ``verbose``: the rounds are
    reported by on_round."""
    log = logging.getLogger("flwr")
    level = log.level
    if not verbose:
        log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)


def strategy(name, clients, fraction=1.0, min_clients=None, fraction_evaluate=0.0,
             options=None):
    """Flower's strategy ``name`` ("fedavg", "fedprox", "fedadam") for ``clients`` virtual
    clients, sampling ``fraction`` of them each round (at least ``min_clients``, default
    min(2, clients), and never fewer than int(clients * fraction): Flower's min_train_nodes;
    Flower draws the sample unseeded) and ``fraction_evaluate`` for the clients' own evaluation; ``options``: the strategy's own arguments (proximal_mu; eta, eta_l,
    beta_1, beta_2, tau). It reports each round (the _Report mixin)."""
    if name not in STRATEGIES:
        raise ArgumentError(f"--strategy {name} ({name}): expected "
                            f"{', '.join(STRATEGIES)}")
    m = min(2, clients) if min_clients is None else min_clients
    # Flower samples max(int(connected * fraction), min_train_nodes) nodes; in round 1 the
    # simulation's nodes may still be connecting, so the fleet's share is made the minimum
    m = max(m, int(clients * fraction))
    cls = type("Reporting" + STRATEGIES[name].__name__, (_Report, STRATEGIES[name]), {})
    return cls(fraction_train=fraction, fraction_evaluate=fraction_evaluate,
               min_train_nodes=m,
               min_evaluate_nodes=max(1, int(clients * fraction_evaluate)) if fraction_evaluate else 0,
               min_available_nodes=clients, train_metrics_aggr_fn=_train_metrics,
               **(options or {}))


def _train_metrics(records, weight_key):
    """The round's training metrics: train_loss averaged by example count, the slowest
    client's seconds and the largest peak_mb."""
    ms = [next(iter(r.metric_records.values())) for r in records]
    w = np.array([m[weight_key] for m in ms], np.float64)
    out = {"train_loss": float(np.dot(w, [m["train_loss"] for m in ms]) / w.sum()),
           "seconds_max": max(m["seconds"] for m in ms)}
    if all("peak_mb" in m for m in ms):
        out["peak_mb_max"] = max(m["peak_mb"] for m in ms)
    return MetricRecord(out)


class Evaluator:
    """The global model on the server: the step (``program``, on the CPU kernels for a JSON)
    holding the global arrays, the evaluation graph ``eval`` over the validation set ``val``;
    ``save`` writes the weights as ``edgegrad train --out`` does."""

    def __init__(self, program, init=None, eval=None, val=None, threads=None):
        self.trainer = _trainer_mod.Trainer(program, init=init, eval=eval, threads=threads)
        self.runtime = self.trainer.runtime
        self.has_val = val is not None
        if self.has_val:
            self.trainer.set_val(val)

    def state_dict(self):
        return self.runtime.state_dict()

    def evaluate(self, arrays):
        set_state(self.runtime, arrays)
        return self.trainer.evaluate() if self.has_val else {}

    def save(self, path, arrays):
        set_state(self.runtime, arrays)
        return self.trainer.save_weights(path, producer="edgegrad.federated")

    def close(self):
        self.trainer.close()


def server_app(strat, evaluator, rounds, on_round=None, timeout=3600.0, holder=None):
    """A Flower ServerApp running Flower's strategy ``strat`` (see ``strategy``) for
    ``rounds`` rounds from the evaluator's weights; after each round (and before the first)
    the evaluator evaluates the global model and ``on_round(record)`` gets the round's record
    (round, sampled, returned, failures, lost, train_loss, val_loss, val_accuracy, seconds,
    bytes, peak_mb_max, seconds_max). ``holder`` (a dict) receives "arrays" (the global
    ArrayRecord after the last round) and "rounds" (the records)."""
    app = ServerApp()
    holder = {} if holder is None else holder
    holder["rounds"] = []

    def evaluate_fn(server_round, arrays):
        metrics = evaluator.evaluate(arrays)
        rec = {"round": server_round}
        if server_round > 0:
            rec = dict(strat.round)
            rec["seconds"] = time.perf_counter() - rec.pop("t0")
        rec.update({k: v for k, v in metrics.items() if v is not None})
        holder["arrays"] = arrays
        holder["rounds"].append(rec)
        if on_round is not None:
            on_round(rec)
        return MetricRecord({k: v for k, v in metrics.items() if v is not None}) or None

    @app.main()
    def main(grid, context):
        initial = ArrayRecord({n: Array(a) for n, a in evaluator.state_dict().items()})
        strat.start(grid, initial, num_rounds=rounds, timeout=timeout,
                    train_config=ConfigRecord(), evaluate_fn=evaluate_fn)

    return app


# ---- running a federation ---------------------------------------------------------------------

@dataclasses.dataclass
class Result:
    """``state_dict``: the global parameters and buffers after the last round ({PyTorch name:
    array}); ``rounds``: a record per round (round 0: the first weights' evaluation)."""
    state_dict: dict
    rounds: list


def run(fleet, strat, evaluator, rounds, on_round=None, workers=None, timeout=3600.0,
        verbose=False):
    """Runs Flower's simulation: ``len(fleet.parts)`` virtual clients (Flower's SuperNodes, on
    its Ray backend: each client's ClientApp runs in a worker process reserving
    ``fleet.threads`` CPUs, ``workers`` clients at a time — default: the cores // threads),
    ``rounds`` rounds of ``strat`` (``strategy``) from the evaluator's weights. Returns a
    Result. Flower's own log lines are shown with ``verbose`` only."""
    from flwr.simulation import run_simulation

    cpus = os.cpu_count() or 1
    workers = workers or max(1, cpus // fleet.threads)
    holder = {}
    app = server_app(strat, evaluator, rounds, on_round=on_round, timeout=timeout,
                     holder=holder)
    # Ray's note that it will stop hiding accelerators from num_gpus=0 workers: none here
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    backend = {"client_resources": {"num_cpus": fleet.threads, "num_gpus": 0.0},
               "init_args": {"num_cpus": workers * fleet.threads, "num_gpus": 0,
                             "include_dashboard": False,
                             "logging_level": "info" if verbose else "error",
                             "log_to_driver": bool(verbose)}}
    with quiet(verbose):
        run_simulation(server_app=app, client_app=client_app(fleet),
                       num_supernodes=len(fleet.parts), backend_config=backend,
                       verbose_logging=verbose)
    if "arrays" not in holder:
        raise RuntimeError("federated: the simulation ended before its first evaluation")
    state = {n: a.numpy() for n, a in holder["arrays"].items()}
    return Result(state, holder["rounds"])

