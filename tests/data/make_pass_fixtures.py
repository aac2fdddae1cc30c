"""Regenerates the fixtures of the compiler-pass tests (tests/unit/test_passes.c): small graphs
holding every op the `decompose` pass rewrites (src/compiler/passes/decompose.c), traced by PyTorch.

    PYTHONPATH=python /usr/bin/python3 tests/data/make_pass_fixtures.py

  pass_mse_step   the training step of conv(1->2, 3, pad 1) -> relu -> flatten ->
                  linear(32 -> 4) -> unsqueeze(1) -> squeeze(1), MSE loss, batch 2 of 1x4x4;
                  every parameter trainable. Holds aten.mse_loss_backward, aten.unsqueeze,
                  aten.squeeze.dim (the backward of unsqueeze), aten.ones_like (the loss seed)
                  and aten.convolution_backward.
  pass_fills      out = x * ones_like(x) + full([3], 2.5) + zeros_like(x) + new_zeros(x, [3])
                  + fill(x, 1.5) + zeros([3]) + squeeze(unsqueeze(x, 0)), x of [2, 3]: every
                  fill the pass folds into a static, and squeeze.default.
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, padding=1)
        self.fc = nn.Linear(32, 4)

    def forward(self, x):
        y = self.fc(torch.flatten(F.relu(self.conv(x)), 1))
        return torch.squeeze(torch.unsqueeze(y, 1), 1)


def fills(x):
    return (x * torch.ones_like(x) + torch.full([3], 2.5) + torch.zeros_like(x)
            + x.new_zeros([3]) + torch.fill(x, 1.5) + torch.zeros([3])
            + torch.squeeze(torch.unsqueeze(x, 0)))


def main():
    from edgegrad.export import export_function, export_training_step

    def stem(name):
        return os.path.join(HERE, name)

    torch.manual_seed(5)
    model = Net()
    xs, target = torch.randn(2, 1, 4, 4), torch.randn(2, 4)
    export_training_step(model, F.mse_loss, (xs, target), stem("pass_mse_step"))
    export_function(fills, (torch.randn(2, 3),), stem("pass_fills"))


if __name__ == "__main__":
    main()
