"""Regenerates the fixtures of the quantization-pass tests (tests/unit/test_pass_quant.c):
small QDQ graphs traced by PyTorch (python/edgegrad/quantize.py for the model ones).

    PYTHONPATH=python /usr/bin/python3 tests/data/make_quant_fixtures.py

  quant_net     inference of conv(3->4, 3, pad 1) -> relu -> conv(4->5, 3, stride 2) -> relu,
                qdq(per_channel_weights=True) on both convs: activations quantize_per_tensor
                (quint8), weights quantize_per_channel (qint8, axis 0, frozen), x [2, 3, 8, 8].
  quant_tuple   a, b = split(x, [2, 3], dim 1); b quantized per tensor (quint8, 0.05, 3);
                y = 3 x quantized twice with different parameters (0.1/0 and 0.2/0, qint8);
                outputs a + 1, dq(b) * 2, dq(q1(y)) + dq(q2(y)); x [2, 5, 4].
  quant_step    the frozen-backbone training step of quant_net + flatten + linear(45 -> 2),
                cross-entropy loss: weights frozen and quantized per channel, the second conv's
                bias and the head trainable, so aten.convolution_backward reads the dequantized
                weight (and no gradient flows through a quantized activation).
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))


def backbone():
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(),
                         nn.Conv2d(4, 5, 3, stride=2), nn.ReLU())


def tuple_fn(x):
    a, b = torch.split(x, [2, 3], 1)
    qb = torch.quantize_per_tensor(b, 0.05, 3, torch.quint8).dequantize()
    y = x * 3
    q1 = torch.quantize_per_tensor(y, 0.1, 0, torch.qint8).dequantize()
    q2 = torch.quantize_per_tensor(y, 0.2, 0, torch.qint8).dequantize()
    return a + 1, qb * 2, q1 + q2


def main():
    from edgegrad.export import export_function, export_training_step
    from edgegrad.quantize import qdq

    def stem(name):
        return os.path.join(HERE, name)

    torch.manual_seed(7)
    x = torch.randn(2, 3, 8, 8)
    net = qdq(backbone().eval(), x, types=(nn.Conv2d,))
    export_function(lambda x: net(x), (x,), stem("quant_net"))
    export_function(tuple_fn, (torch.randn(2, 5, 4),), stem("quant_tuple"))
    step_model = qdq(nn.Sequential(*backbone(), nn.Flatten(), nn.Linear(45, 2)).train(), x,
                     types=(nn.Conv2d,))
    export_training_step(step_model, F.cross_entropy, (x, torch.tensor([0, 1])),
                         stem("quant_step"), trainable=["2.bias", "5.weight", "5.bias"])


if __name__ == "__main__":
    main()
