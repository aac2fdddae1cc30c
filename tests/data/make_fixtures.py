"""Regenerates the small committed fixtures the C and CLI tests use without PyTorch.

    PYTHONPATH=python /usr/bin/python3 tests/data/make_fixtures.py

tiny_step: the training step of conv(1->4, 3, stride 2, pad 1) -> relu -> conv(4->4, 3) ->
flatten -> linear(64 -> 3) with cross-entropy loss on a batch of 2 12x12 images, all
parameters trainable except the first conv's weight (frozen, so it is a static weight).
Inputs are written to tiny_step_inputs/<name>.npy and PyTorch's outputs to
tiny_step_reference/<name>.npy.
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from edgegrad.export import export_training_step  # noqa: E402


def main():
    torch.manual_seed(7)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, stride=2, padding=1), nn.ReLU(),
                          nn.Conv2d(4, 4, 3), nn.Flatten(), nn.Linear(64, 3))
    x = torch.randn(2, 1, 12, 12)
    target = torch.tensor([2, 0])
    trainable = [n for n, _ in model.named_parameters() if n != "0.weight"]
    stem = os.path.join(HERE, "tiny_step")
    res = export_training_step(model, nn.functional.cross_entropy, (x, target), stem,
                               trainable=trainable)
    params = dict(model.named_parameters())
    inputs = {"input": x, "target": target}
    for n in trainable:
        inputs[n.replace(".", "_")] = params[n].detach()
    os.makedirs(stem + "_inputs", exist_ok=True)
    for name, t in inputs.items():
        np.save(os.path.join(stem + "_inputs", name + ".npy"), t.numpy())
    loss = nn.functional.cross_entropy(model(x), target)
    grads = torch.autograd.grad(loss, [params[n] for n in trainable])
    os.makedirs(stem + "_reference", exist_ok=True)
    np.save(os.path.join(stem + "_reference", "loss.npy"), loss.detach().numpy())
    for n, g in zip(trainable, grads):
        np.save(os.path.join(stem + "_reference", "grad_" + n.replace(".", "_") + ".npy"),
                g.numpy())
    print("wrote", res.json_path)


if __name__ == "__main__":
    main()
