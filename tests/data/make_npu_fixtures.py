"""Regenerates the small committed fixtures of the NPU convolution tests
(tests/unit/test_htp_conv.c) and holds the graph edit they and tests/ops/test_npu_conv.py share
(drop_grad_weight).

    PYTHONPATH=python /usr/bin/python3 tests/data/make_npu_fixtures.py

Weights are frozen (statics) unless said otherwise; x is 2x3x9x8, the conv is 3 -> 5 channels,
3x3, stride 2, padding 1, with bias (output 2x5x5x4):
  npu_conv_fwd   y = conv2d(x, W, b)                                           -> y
  npu_conv_pair  y = conv2d(x, W, b); (gx, -, gb) = convolution_backward(y, x, W, mask
                 [True, False, True]) with the grad_weight element dropped      -> y, gx, gb
                 (the forward Conv2d and the backward composite form one NPU partition)
  npu_conv_bwd   gx = convolution_backward(gy, x, W, mask [True, False, False]) -> gx
                 (inputs gy and x: x is read by no NPU op)
  npu_conv_step  the training step of conv(3->4, 3, pad 1) -> relu -> conv(4->4, 3, stride 2,
                 pad 1, no bias) -> relu -> conv(4->4, 3, pad 1) -> relu -> flatten ->
                 linear(64 -> 3), cross-entropy, batch 2 of 3x8x8; trainable: the first and
                 last conv biases and the linear layer (a frozen backbone with trainable biases
                 and head). Its convolution_backward masks: [True, False, True] and
                 [False, False, True] (traced with grad_weight, PyTorch 1.13 CPU) and
                 [True, False, False].
  npu_conv_step_nogw  the same step with drop_grad_weight applied: masks [True, False, True]
                 and [False, False, True] without the grad_weight element, so every
                 convolution_backward lowers (the grad_bias ReduceSum included).
  npu_conv_train full training (every parameter trainable) of conv(3->4, 3, pad 1) -> relu ->
                 depthwise conv(4->4, 3, stride 2, pad 1, groups 4) -> relu -> conv(4->6, 1,
                 stride 2) -> relu -> flatten -> linear(24 -> 3), batch 2 of 3x8x8: masks
                 [F,T,T], [T,T,T] (grouped) and [T,T,T] whose grad_weight Conv2d is cropped (the
                 1x1 stride-2 conv never reads the last row and column of its 4x4 input).
  npu_conv_gw_pad (gx, gw) = convolution_backward(gy, x, W, mask [True, True, False]) of a
                 depthwise 5x5 conv, stride 1, padding 2, of x 2x4x2x2 (MobileNetV3's last
                 depthwise block at 64x64): grad_weight's Conv2d has grad_output (2x2) as its
                 kernel and a padding that reaches it, lowered through an explicit Pad.
  npu_conv_dw5_s2 gx = convolution_backward(gy, x, W, mask [True, False, False]) of a
                 depthwise 5x5 conv, stride 2, padding 2, of x 2x4x8x10 (gy 2x4x4x5, derived
                 output_padding 1 in both dims): grad_input's TransposeConv2d in its
                 zero-insertion form.
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

CONV_BWD = "aten.convolution_backward.default"


# ---- the shared edit ---------------------------------------------------------------------

def _remap(obj, ids):
    """Rewrites every value id reference inside obj (args, outputs, tuple elements)."""
    if isinstance(obj, list):
        return [_remap(x, ids) for x in obj]
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k in ("value", "output", "id") and isinstance(v, int) and not isinstance(v, bool):
                out[k] = ids[v]
            elif k == "elements":
                out[k] = [None if e is None else ids[e] for e in v]
            else:
                out[k] = _remap(v, ids)
        return out
    return obj


def drop_grad_weight(graph):
    """Makes the grad_weight element of every convolution_backward whose output_mask[1] is
    False None, as PyTorch returns it where the mask says so (1.13's CPU kernel computes it for
    [*, False, True] anyway and the trace records it: docs/graph-format.md). Removes the element
    value and the getitem picking it, which nothing may use, and renumbers the value ids densely.
    Returns the number of nodes edited."""
    values = graph["values"]
    drop_values, drop_nodes, edited = set(), set(), 0
    for node in graph["nodes"]:
        if node["target"] != CONV_BWD or node["args"][10][1]:
            continue
        tup = values[node["output"]]
        elem = tup["elements"][1]
        if elem is None:
            continue
        for i, other in enumerate(graph["nodes"]):
            if other["target"] == "getitem" and other["args"][0] == {"value": tup["id"]} \
                    and other["args"][1] == 1:
                drop_nodes.add(i)
                if other["output"] is not None:
                    drop_values.add(other["output"])
        tup["elements"][1] = None
        drop_values.add(elem)
        edited += 1
    graph["nodes"] = [n for i, n in enumerate(graph["nodes"]) if i not in drop_nodes]
    body = {k: graph[k] for k in ("nodes", "outputs", "inputs", "statics")}
    used = set()

    def collect(o):
        if isinstance(o, dict):
            if "value" in o and isinstance(o["value"], int):
                used.add(o["value"])
            for v in o.values():
                collect(v)
        elif isinstance(o, list):
            for v in o:
                collect(v)

    collect(body)
    if used & drop_values:
        raise ValueError(f"grad_weight values {sorted(used & drop_values)} are still used")
    keep = [v["id"] for v in values if v["id"] not in drop_values]
    ids = {old: new for new, old in enumerate(keep)}
    graph["values"] = [_remap(v, ids) for v in values if v["id"] not in drop_values]
    for k in ("nodes", "outputs", "inputs", "statics"):
        graph[k] = _remap(graph[k], ids)
    return edited


def edit_json(path, edit):
    import json
    with open(path) as f:
        graph = json.load(f)
    edit(graph)
    with open(path, "w") as f:
        json.dump(graph, f)


# ---- fixtures ----------------------------------------------------------------------------

aten = torch.ops.aten
STRIDE, PAD = [2, 2], [1, 1]


def conv_bwd(gy, x, w, mask):
    return aten.convolution_backward(gy, x, w, [w.shape[0]], STRIDE, PAD, [1, 1], False, [0, 0],
                                     1, mask)


def main():
    from edgegrad.export import export_function, export_training_step

    torch.manual_seed(11)
    x = torch.randn(2, 3, 9, 8)
    w, b = torch.randn(5, 3, 3, 3) * 0.3, torch.randn(5)
    gy = torch.randn(2, 5, 5, 4)

    def fwd(x, w, b):
        return F.conv2d(x, w, b, STRIDE, PAD)

    def pair(x, w, b):
        y = F.conv2d(x, w, b, STRIDE, PAD)
        r = conv_bwd(y, x, w, [True, False, True])
        return y, r[0], r[2]

    def bwd(gy, x, w):
        return conv_bwd(gy, x, w, [True, False, False])[0]

    stem = lambda name: os.path.join(HERE, name)  # noqa: E731
    export_function(fwd, (x, w, b), stem("npu_conv_fwd"), static_args=("w", "b"))
    export_function(pair, (x, w, b), stem("npu_conv_pair"), static_args=("w", "b"))
    edit_json(stem("npu_conv_pair") + ".json", drop_grad_weight)
    export_function(bwd, (gy, x, w), stem("npu_conv_bwd"), static_args=("w",))

    torch.manual_seed(12)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(4, 4, 3, stride=2, padding=1, bias=False), nn.ReLU(),
                          nn.Conv2d(4, 4, 3, padding=1), nn.ReLU(), nn.Flatten(),
                          nn.Linear(64, 3))
    xs, target = torch.randn(2, 3, 8, 8), torch.tensor([1, 2])
    export_training_step(model, F.cross_entropy, (xs, target), stem("npu_conv_step"),
                         trainable=["0.bias", "4.bias", "7.weight", "7.bias"])
    export_training_step(model, F.cross_entropy, (xs, target), stem("npu_conv_step_nogw"),
                         trainable=["0.bias", "4.bias", "7.weight", "7.bias"])
    edit_json(stem("npu_conv_step_nogw") + ".json", drop_grad_weight)

    torch.manual_seed(13)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(4, 4, 3, stride=2, padding=1, groups=4), nn.ReLU(),
                          nn.Conv2d(4, 6, 1, stride=2), nn.ReLU(), nn.Flatten(),
                          nn.Linear(24, 3))
    xs, target = torch.randn(2, 3, 8, 8), torch.tensor([0, 2])
    export_training_step(model, F.cross_entropy, (xs, target), stem("npu_conv_train"))
    pad_fixtures(stem)
    print("wrote", ", ".join(f"npu_conv_{n}" for n in ("fwd", "pair", "bwd", "step",
                                                       "step_nogw", "train", "gw_pad",
                                                       "dw5_s2")))


def pad_fixtures(stem):
    from edgegrad.export import export_function

    def gw_pad(gy, x, w):
        r = aten.convolution_backward(gy, x, w, None, [1, 1], [2, 2], [1, 1], False, [0, 0], 4,
                                      [True, True, False])
        return r[0], r[1]

    torch.manual_seed(14)
    x, w, gy = torch.randn(2, 4, 2, 2), torch.randn(4, 1, 5, 5) * 0.3, torch.randn(2, 4, 2, 2)
    export_function(gw_pad, (gy, x, w), stem("npu_conv_gw_pad"), static_args=("w",))

    def dw5_s2(gy, x, w):
        return aten.convolution_backward(gy, x, w, None, [2, 2], [2, 2], [1, 1], False, [0, 0],
                                         4, [True, False, False])[0]

    torch.manual_seed(15)
    x, w, gy = torch.randn(2, 4, 8, 10), torch.randn(4, 1, 5, 5) * 0.3, torch.randn(2, 4, 4, 5)
    export_function(dw5_s2, (gy, x, w), stem("npu_conv_dw5_s2"), static_args=("w",))


if __name__ == "__main__":
    main()
