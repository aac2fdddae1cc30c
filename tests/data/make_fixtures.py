"""Regenerates the small committed fixtures the C and CLI tests use without PyTorch.

    PYTHONPATH=python /usr/bin/python3 tests/data/make_fixtures.py

tiny_step: the training step of conv(1->4, 3, stride 2, pad 1) -> relu -> conv(4->4, 3) ->
flatten -> linear(64 -> 3) with cross-entropy loss on a batch of 2 12x12 images, all
parameters trainable except the first conv's weight (frozen, so it is a static weight).

fuse_step (tests/unit/test_fuse.c: fused batch-norm chains on the CPU path): the training step
of conv(3->8, 3, pad 1) -> BatchNorm -> ReLU -> conv(8->8, 3, stride 2, pad 1) -> BatchNorm ->
ReLU6 -> flatten -> linear(128 -> 5), cross-entropy, on a batch of 4 8x8 images, every parameter
trainable. Its chains: BatchNorm -> ReLU (the batch norm's output read by the ReLU alone),
BatchNorm -> ReLU6 (hardtanh_backward reads the batch norm's output too), and
threshold_backward / hardtanh_backward -> the batch-norm backwards.

Each fixture STEM's inputs are written to STEM_inputs/<name>.npy and PyTorch's outputs (loss
and gradients) to STEM_reference/<name>.npy.
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from edgegrad.export import export_training_step  # noqa: E402


def write_step(name, model, x, target, trainable):
    """Exports the cross-entropy training step of model on (x, target) as STEM.json with its
    inputs and PyTorch's loss and gradients."""
    stem = os.path.join(HERE, name)
    res = export_training_step(model, nn.functional.cross_entropy, (x, target), stem,
                               trainable=trainable)
    for extra in (".eval.json", ".init.safetensors"):  # not used by the tests
        if os.path.exists(stem + extra):
            os.remove(stem + extra)
    known = {"input": x, "target": target}
    known.update({n.replace(".", "_"): p.detach() for n, p in model.named_parameters()})
    known.update({n.replace(".", "_"): b for n, b in model.named_buffers()})
    os.makedirs(stem + "_inputs", exist_ok=True)
    for e in res.graph["inputs"]:
        np.save(os.path.join(stem + "_inputs", e["name"] + ".npy"), known[e["name"]].numpy())
    params = dict(model.named_parameters())
    loss = nn.functional.cross_entropy(model(x), target)
    grads = torch.autograd.grad(loss, [params[n] for n in trainable])
    os.makedirs(stem + "_reference", exist_ok=True)
    np.save(os.path.join(stem + "_reference", "loss.npy"), loss.detach().numpy())
    for n, g in zip(trainable, grads):
        np.save(os.path.join(stem + "_reference", "grad_" + n.replace(".", "_") + ".npy"),
                g.numpy())
    print("wrote", res.json_path)


def main():
    torch.manual_seed(7)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, stride=2, padding=1), nn.ReLU(),
                          nn.Conv2d(4, 4, 3), nn.Flatten(), nn.Linear(64, 3))
    x = torch.randn(2, 1, 12, 12)
    target = torch.tensor([2, 0])
    write_step("tiny_step", model, x, target,
               [n for n, _ in model.named_parameters() if n != "0.weight"])

    torch.manual_seed(11)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8),
                          nn.ReLU6(), nn.Flatten(), nn.Linear(128, 5))
    x = torch.randn(4, 3, 8, 8)
    target = torch.tensor([1, 4, 0, 2])
    write_step("fuse_step", model, x, target, [n for n, _ in model.named_parameters()])


if __name__ == "__main__":
    main()
