"""edgegrad.Trainer (the C library's trainer, eg_trainer_*, from Python) against `edgegrad
train` and PyTorch training loops:

    python tests/python/test_trainer.py --edgegrad build/edgegrad --workdir DIR [--filter S]

The library is the one EDGEGRAD_LIB names (CMake sets it to the build's libedgegrad.so), else
the package's own search. Runs under PyTorch 2.x and 1.13. Cases:
- ``cli/demo``: the demo's fine-tuning (examples/digits_step on the CPU and compiled for SM8650, the digits
  5-9 of scripts/digits_data.py, a quarter held back for validation, 5 epochs of Adam, seed 1,
  the SoC's fp16 with its default dynamic loss scaling) by Trainer.fit(val=0.25) writes the
  bytes `edgegrad train --val-split 0.25` writes with --out (both on 1 thread: another count
  rounds reductions in another order), and its
  history holds the per-epoch losses, validation loss and accuracy and learning rate of the
  CLI's --log;
- ``cli/lenet5``: the same bit for bit on the CPU for SGD with momentum, Nesterov, weight
  decay, a shuffled order and a step schedule, the data given as a tuple, each on its default
  threads (importing PyTorch sets OpenMP's default to 1 thread; the Trainer's stays the CLI's);
  set_checkpoints and set_log write the checkpoint and log lines --checkpoint and --log write
  (times aside); sizes and loss_scaling ("none" on the CPU; the demo's "dynamic");
- ``torch/<case>``: the cases of tests/conformance/test_train.py (LeNet-5 with SGD, momentum,
  Nesterov, weight decay and StepLR; a ResNet block with BatchNorm and Adam; a MobileNetV2
  block, MSE, AdamW and a cosine schedule; a frozen backbone with momentum and dampening; a
  Dropout net whose masks the trainer draws), and the ResNet block with AdamW's defaults (torch's
  weight decay 1e-2): the per-step losses (the callback's step events) and the state_dict after
  2 epochs match the torch.optim loop over the same batches at the project tolerance;
- ``resume``: a run saved mid-epoch with save_checkpoint and continued in a new Trainer by
  load_checkpoint (given before the data) and fit(epochs=E) ends with the weights of an
  uninterrupted run bit for bit (Adam, BatchNorm buffers, Dropout masks' stream), its history
  starting at the interrupted epoch; fitting to E again runs nothing; `edgegrad train --resume`
  of the same checkpoint writes the same bytes, and the Trainer continuing a checkpoint
  `edgegrad train` wrote after epoch 1 does too;
- ``step_batch``: step(batch) returns the loss a Runtime run of the same weights and batch
  gives, bit for bit, and updates the parameters by plain SGD;
- ``callback``: events arrive as eval, steps, epoch, ...; a callback returning True stops fit()
  after that event (the history so far, the position kept, a later fit() goes on); an exception
  it raises comes out of fit() as it was raised;
- ``interrupt``: SIGINT (Ctrl-C) to a process inside fit() raises KeyboardInterrupt from it;
- ``errors``: refusals raise edgegrad.Error subclasses with the library's message: a label out
  of range and a NaN image (set_data), Nesterov without momentum, a checkpoint of another run,
  fit without data, a validation set without an eval graph, an unknown optimizer, closing a
  runtime a trainer uses.
Prints one line per case and `python_trainer: N passed, M failed`; exit 1 on any failure.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path[:0] = [os.path.join(ROOT, "tests", "conformance"), os.path.join(ROOT, "python")]

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import edgegrad  # noqa: E402
import harness  # noqa: E402
import test_train  # noqa: E402
import zoo  # noqa: E402
from edgegrad.tolerance import compare  # noqa: E402

warnings.filterwarnings("ignore", category=FutureWarning)
EXAMPLES = os.path.join(ROOT, "examples")

# Trainer options of test_train.CASES (their `edgegrad train` flags)
OPTIONS = {
    "lenet5": dict(optimizer="sgd", lr=0.01, momentum=0.9, nesterov=True, weight_decay=1e-4,
                   seed=7, schedule=("step", 1, 0.5)),
    "resnet_block": dict(optimizer="adam", lr=1e-3, shuffle=False),
    "mobilenet_v2_block": dict(optimizer="adamw", lr=2e-3, weight_decay=0.05, seed=11,
                               schedule=("cosine", test_train.EPOCHS)),
    "finetune_head": dict(optimizer="sgd", lr=0.05, momentum=0.8, dampening=0.1,
                          shuffle=False),
    "dropout": dict(optimizer="sgd", lr=0.05, momentum=0.9, weight_decay=1e-3, seed=3),
}


# and one of the Trainer's defaults: AdamW's weight decay (torch's 1e-2), shuffled from seed 0
CASES = test_train.CASES + [
    test_train.Case("adamw_defaults", zoo.ResNetBlockNet, (8, 16, 16),
                    lambda n: torch.randint(0, 5, (n,), dtype=torch.int64), F.cross_entropy,
                    lambda p: torch.optim.AdamW(p, lr=1e-2), [], shuffle=True, data_seed=1)]
OPTIONS["adamw_defaults"] = dict(optimizer="adamw", lr=1e-2)


def _case(name):
    return next(c for c in CASES if c.name == name)


def _bytes(path):
    with open(path, "rb") as f:
        return f.read()


def _cli(a, *args):
    r = subprocess.run([a.edgegrad, *args], capture_output=True, text=True, timeout=900)
    if r.returncode:
        raise RuntimeError(f"edgegrad {args[0]} exit {r.returncode}: {r.stderr.strip()}")
    return r


def _history_vs_log(history, log):
    """Differences between Trainer.fit's history and the CLI's --log epoch lines."""
    epochs = [e for e in (json.loads(line) for line in open(log)) if e["event"] == "epoch"]
    if len(epochs) != len(history):
        return f"{len(history)} epochs in the history, {len(epochs)} in the log"
    for h, e in zip(history, epochs):
        for k in ("epoch", "train_loss", "val_loss", "val_accuracy", "lr"):
            want = e.get(k)
            if (want is None) != (h[k] is None) or (
                    want is not None and abs(h[k] - want) > 1e-6 * max(1.0, abs(want))):
                return f"epoch {e['epoch']} {k}: history {h[k]}, log {want}"
    return None


def case_cli_demo(a, work):
    data = os.path.join(work, "digits59")
    r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "digits_data.py"),
                        data], capture_output=True, text=True, timeout=300)
    if r.returncode:
        return f"digits_data.py: {r.stderr.strip()}"
    stem = os.path.join(EXAMPLES, "digits_step")
    init = stem + ".init.safetensors"
    arrays = {k: np.load(os.path.join(data, k + ".npy")) for k in ("input", "target")}
    paths = [("SM8650", edgegrad.compile(stem + ".json", os.path.join(work, "step.egp"), "SM8650"),
              edgegrad.compile(stem + ".eval.json", os.path.join(work, "eval.egp"), "SM8650"),
              "dynamic", 65536.0),  # the SoC's fp16: dynamic loss scaling
             ("cpu", stem + ".json", stem + ".eval.json", "none", 1.0)]
    for path, step, ev, scaling, scale in paths:
        cli_out = os.path.join(work, path + "_cli.safetensors")
        log = os.path.join(work, path + "_log.jsonl")
        _cli(a, "train", step, "--eval", ev, "--data", data, "--val-split", "0.25", "--init",
             init, "--epochs", "5", "--optimizer", "adam", "--lr", "0.01", "--seed", "1",
             "--log", log, "--out", cli_out, "--threads", "1", "-q")
        py_out = os.path.join(work, path + "_py.safetensors")
        with edgegrad.Trainer(step, init=init, optimizer="adam", lr=0.01, seed=1, eval=ev,
                              threads=1) as tr:
            if tr.loss_scaling != scaling or tr.loss_scale != scale:
                return (f"{path}: loss scaling {tr.loss_scaling}, scale {tr.loss_scale}; want "
                        f"{scaling}, {scale}")
            history = tr.fit(data if path == "cpu" else arrays, epochs=5, val=0.25)  # files too
            tr.save_weights(py_out, producer="edgegrad train")
        if _bytes(py_out) != _bytes(cli_out):
            return f"{path}: Trainer.fit's weights are not the bytes edgegrad train wrote"
        if history[-1]["val_accuracy"] < 0.9:
            return f"{path}: validation accuracy {history[-1]['val_accuracy']} after 5 epochs"
        why = _history_vs_log(history, log)
        if why:
            return f"{path}: {why}"
    if _bytes(os.path.join(work, "cpu_py.safetensors")) == _bytes(
            os.path.join(work, "SM8650_py.safetensors")):
        return "the CPU path and the SM8650 program gave the same bytes"
    return None


def case_cli_lenet5(a, work):
    case = _case("lenet5")
    _, x, t, stem = test_train.prepare(case, work)
    out, log = os.path.join(work, "cli.safetensors"), os.path.join(work, "log.jsonl")
    os.makedirs(os.path.join(work, "ck"))
    _cli(a, "train", stem + ".json", "--data", os.path.join(work, "data"), "--init",
         stem + ".init.safetensors", "--epochs", "3", "--out", out, "--log", log,
         "--checkpoint", os.path.join(work, "ck"), "-q", *case.flags)
    py_log, py_ck = os.path.join(work, "py.jsonl"), os.path.join(work, "py_ck.safetensors")
    # both on their default threads (one per core), which PyTorch, imported here, does not move
    with edgegrad.Trainer(stem + ".json", **OPTIONS["lenet5"]) as tr:
        tr.set_log(py_log)
        tr.set_checkpoints(py_ck)
        history = tr.fit((x.numpy(), t.numpy()), epochs=3)
        tr.save_weights(os.path.join(work, "py.safetensors"), producer="edgegrad train")
        if tr.sizes != {"examples": 41, "batch": 4, "val_examples": 0, "val_batch": 0}:
            return f"sizes {tr.sizes}"
        if tr.loss_scaling != "none":
            return f"loss scaling {tr.loss_scaling} on the CPU kernels"
    if _bytes(os.path.join(work, "py.safetensors")) != _bytes(out):
        return "Trainer.fit's weights are not the bytes edgegrad train wrote"
    if _bytes(py_ck) != _bytes(os.path.join(work, "ck", "checkpoint.safetensors")):
        return "set_checkpoints wrote another checkpoint than edgegrad train --checkpoint"
    untimed = [[{k: v for k, v in json.loads(line).items() if k != "seconds"}
                for line in open(f)] for f in (py_log, log)]
    if untimed[0] != untimed[1]:
        return "set_log's lines differ from edgegrad train --log's (times aside)"
    return _history_vs_log(history, log)


def case_torch(a, work, name):
    case = _case(name)
    model, x, t, stem = test_train.prepare(case, work)
    losses = []

    def on_event(e):
        if e["event"] == "step":
            losses.append(e["loss"])

    with edgegrad.Trainer(stem + ".json", callback=on_event, **OPTIONS[name]) as tr:
        tr.fit({"input": x.numpy(), "target": t.numpy()}, epochs=test_train.EPOCHS)
        got = tr.state_dict()
    draws = test_train.random_draws(stem)
    want_losses, want_sd = test_train.torch_loop(case, model, x, t, OPTIONS[name].get("seed", 0),
                                                 draws)
    if len(losses) != len(want_losses):
        return f"{len(losses)} steps reported, PyTorch ran {len(want_losses)}"
    bad = compare(np.array(losses, np.float32), np.array(want_losses, np.float32))
    if bad:
        return f"per-step losses: {bad}"
    trained = set(case.trainable or [n for n, _ in model.named_parameters()])
    if set(got) != trained | {n for n, _ in model.named_buffers()}:
        return f"state_dict names {sorted(got)}"
    for k, v in got.items():
        bad = compare(v, want_sd[k].numpy())
        if bad:
            return f"{k}: {bad}"
    return None


def case_resume(a, work):
    case = _case("dropout")
    _, x, t, stem = test_train.prepare(case, work)
    arrays = {"input": x.numpy(), "target": t.numpy()}
    opts = dict(optimizer="adam", lr=1e-3, seed=5, threads=1)
    whole, resumed = os.path.join(work, "whole.safetensors"), os.path.join(work, "r.safetensors")
    with edgegrad.Trainer(stem + ".json", **opts) as tr:
        tr.fit(arrays, epochs=3)
        tr.save_weights(whole, producer="edgegrad train")
    ck = os.path.join(work, "ck.safetensors")
    with edgegrad.Trainer(stem + ".json", **opts) as tr:
        tr.fit(arrays, epochs=1)
        for _ in range(3):
            tr.step()
        tr.save_checkpoint(ck)
        if tr.position != {"epoch": 1, "step": 3, "steps_per_epoch": 10}:
            return f"position {tr.position} after an epoch and 3 steps"
    with edgegrad.Trainer(stem + ".json", init=None, **opts) as tr:
        tr.load_checkpoint(ck)  # before the data: restored when fit() gives it
        history = tr.fit(arrays, epochs=3)
        if [h["epoch"] for h in history] != [2, 3] or history[0]["steps_run"] != 7:
            return f"resumed history {[(h['epoch'], h['steps_run']) for h in history]}"
        if tr.fit(arrays, epochs=3) != []:
            return "fit to the epochs already done trained again"
        tr.save_weights(resumed, producer="edgegrad train")
    if _bytes(resumed) != _bytes(whole):
        return "the resumed run's weights differ from the uninterrupted run's"
    # `edgegrad train --resume` continues the Trainer's checkpoint just as well
    os.makedirs(os.path.join(work, "ckdir"))
    shutil.copy(ck, os.path.join(work, "ckdir", "checkpoint.safetensors"))
    cli = os.path.join(work, "cli.safetensors")
    _cli(a, "train", stem + ".json", "--data", test_train.data_path(case, work, "data"),
         "--epochs", "3", "--optimizer", "adam", "--lr", "1e-3", "--seed", "5", "--threads", "1",
         "--checkpoint", os.path.join(work, "ckdir"), "--resume", "--out", cli, "-q")
    if _bytes(cli) != _bytes(whole):
        return "edgegrad train --resume of the Trainer's checkpoint differs from the whole run"
    # and the Trainer continues `edgegrad train`'s checkpoint (after its epoch 1) just as well
    _cli(a, "train", stem + ".json", "--data", test_train.data_path(case, work, "data"),
         "--epochs", "1", "--optimizer", "adam", "--lr", "1e-3", "--seed", "5", "--threads", "1",
         "--checkpoint", os.path.join(work, "ckcli"), "-q")
    from_cli = os.path.join(work, "from_cli.safetensors")
    with edgegrad.Trainer(stem + ".json", init=None, **opts) as tr:
        tr.load_checkpoint(os.path.join(work, "ckcli", "checkpoint.safetensors"))
        tr.fit(arrays, epochs=3)
        tr.save_weights(from_cli, producer="edgegrad train")
    if _bytes(from_cli) != _bytes(whole):
        return "the Trainer continuing edgegrad train's checkpoint differs from the whole run"
    return None


def case_step_batch(a, work):
    case = _case("finetune_head")
    _, x, t, stem = test_train.prepare(case, work)
    batch = {"input": x[:4].numpy(), "target": t[:4].numpy()}
    with edgegrad.load(stem + ".json") as rt:
        rt.load_weights(stem + ".init.safetensors")
        want = rt.run(batch)
        before = rt.state_dict()
    lr = 0.125
    with edgegrad.Trainer(stem + ".json", optimizer="sgd", lr=lr) as tr:
        loss = tr.step(batch)
        after = tr.state_dict()
    if np.float32(loss).tobytes() != want["loss"].tobytes():
        return f"step loss {loss}, a run of the same batch {want['loss']}"
    with edgegrad.load(stem + ".json") as rt:  # parameters: p - lr * grad
        for info in rt.inputs:
            if info.role == "parameter":
                expect = before[info.state_dict] - np.float32(lr) * want[info.pair]
                bad = compare(after[info.state_dict], expect)
                if bad:
                    return f"{info.state_dict} after the step: {bad}"
            elif info.role == "buffer":
                new = want[info.pair]
                if after[info.state_dict].tobytes() != new.tobytes():
                    return f"{info.state_dict}: not the step's new value"
    return None


def case_callback(a, work):
    case = _case("resnet_block")
    _, x, t, stem = test_train.prepare(case, work)
    vx, vt = case.val
    events = []

    def stop_at_first_epoch(e):
        events.append((e["event"], e["epoch"], e.get("step")))
        return e["event"] == "epoch"

    arrays = (x.numpy(), t.numpy())
    with edgegrad.Trainer(stem + ".json", eval=stem + ".eval.json",
                          callback=stop_at_first_epoch) as tr:
        history = tr.fit(arrays, epochs=3, val=(vx.numpy(), vt.numpy()))
        want = [("eval", 0, None)] + [("step", 1, s) for s in range(1, 11)] + [("epoch", 1, None)]
        if events != want:
            return f"events {events}"
        if len(history) != 1 or tr.position["epoch"] != 1:
            return f"stopped: history {len(history)} epochs, position {tr.position}"
        if history[0]["val_loss"] is None or history[0]["val_accuracy"] is None:
            return f"no validation in the history: {history[0]}"

        class Boom(Exception):
            pass

        def boom(e):
            if e["event"] == "step" and e["step"] == 2:
                raise Boom("from the callback")

        tr.callback = boom
        try:
            tr.fit(arrays, epochs=3)
            return "an exception raised by the callback did not come out of fit()"
        except Boom:
            pass
        if tr.position["epoch"] != 1 or tr.position["step"] != 2:
            return f"position {tr.position} after the callback raised at step 2"
        tr.callback = None
        history = tr.fit(arrays, epochs=3)
        if [h["epoch"] for h in history] != [2, 3]:
            return f"after the stops, fit ran epochs {[h['epoch'] for h in history]}"
    return None


_INTERRUPTED = """
import sys, numpy as np, edgegrad
d = np.load(sys.argv[1])
def started(e):
    if e["event"] == "step" and e["epoch"] == 1 and e["step"] == 1:
        print("started", flush=True)
tr = edgegrad.Trainer(sys.argv[2], optimizer="adam", lr=1e-3, callback=started)
try:
    tr.fit({"input": d["input"], "target": d["target"]}, epochs=1000000)
except KeyboardInterrupt:
    print("interrupted", tr.position["epoch"], flush=True)
"""


def case_interrupt(a, work):
    """Ctrl-C during fit() raises KeyboardInterrupt from it, the position kept."""
    case = _case("dropout")
    _, _, _, stem = test_train.prepare(case, work)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    p = subprocess.Popen([sys.executable, "-c", _INTERRUPTED,
                          test_train.data_path(case, work, "data"), stem + ".json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = p.stdout.readline().strip()
        if line != "started":
            return f"the child said {line!r}: {p.stderr.read().strip()[-300:]}"
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    if p.returncode != 0 or not out.startswith("interrupted"):
        return f"after SIGINT: exit {p.returncode}, stdout {out!r}, stderr {err.strip()[-300:]!r}"
    return None


def case_errors(a, work):
    case = _case("resnet_block")
    _, x, t, stem = test_train.prepare(case, work)
    xs, ts = x.numpy(), t.numpy()
    label, nan = ts.copy(), xs.copy()
    label[5], nan[3, 0, 1, 2] = 9, np.nan
    step = stem + ".json"
    tr = edgegrad.Trainer(step, optimizer="sgd", lr=0.1)
    other = os.path.join(work, "other.safetensors")
    with edgegrad.Trainer(step, optimizer="sgd", lr=0.5) as tr2:
        tr2.fit((xs, ts), epochs=1)
        tr2.save_checkpoint(other)
    checks = [
        ("label", lambda: tr.set_data((xs, label)), edgegrad.ArgumentError,
         "data arrays['target']: label 9 at example 5"),
        ("nan", lambda: tr.set_data((nan, ts)), edgegrad.ArgumentError, "(example 3) is nan"),
        ("no data", lambda: tr.fit(epochs=1), edgegrad.StateError, "no training set"),
        ("val without eval", lambda: tr.fit((xs, ts), val=(xs[:8], ts[:8])),
         edgegrad.ArgumentError, "eval"),
        ("nesterov", lambda: edgegrad.Trainer(step, nesterov=True), edgegrad.ArgumentError,
         "nesterov"),
        ("optimizer", lambda: edgegrad.Trainer(step, optimizer="lbfgs"),
         edgegrad.ArgumentError, "lbfgs"),
        ("other checkpoint", lambda: (tr.set_data((xs, ts)), tr.load_checkpoint(other)),
         edgegrad.ArgumentError, "written by another run (lr=0.5"),
        ("close runtime", lambda: tr.runtime.close(), edgegrad.StateError, "Trainer"),
    ]
    for label_, fn, cls, needle in checks:
        bad = harness.raises(fn, cls, needle)
        if bad:
            return f"{label_}: {bad}"
    tr.close()
    return harness.raises(lambda: tr.step(), edgegrad.StateError, "closed")


def main():
    jobs = [("cli/demo", case_cli_demo), ("cli/lenet5", case_cli_lenet5)]
    jobs += [(f"torch/{c.name}", lambda a, w, n=c.name: case_torch(a, w, n))
             for c in CASES]
    jobs += [("resume", case_resume), ("step_batch", case_step_batch),
             ("callback", case_callback), ("interrupt", case_interrupt),
             ("errors", case_errors)]
    harness.main(__doc__, "python_trainer", jobs)


if __name__ == "__main__":
    main()
