"""The model zoo: real CNN training steps (normalisation, pooling, activations, losses, state)
exported with export_training_step and compared with PyTorch run eagerly.

Contract: ``ZOO`` maps a case name to a builder ``f(stem, seed) -> cases.Built``; ``SGD_RUNS``
likewise for multi-step SGD runs. Each builder seeds torch with ``seed``, builds a small model
(batch 2-4, spatial 8-32), exports one training step to ``stem.json`` and computes the
reference with ``eager``: a deep copy of the model trained with ``loss.backward()``, never by
re-running the trace. The reference holds ``loss``, ``grad_<param>`` for every trainable
parameter, ``grad_input`` if asked, and ``new_<buffer>`` for every buffer the eager step
changed; ``check_outputs`` fails a case whose graph outputs differ from that set (so an
un-exported buffer update or a missing gradient is a failure, never a skip). A case may also
require convolution_backward output masks to appear in its graph (``masks``).
``INFERENCE`` likewise maps a case name to a builder of a forward-only graph of a frozen model
(``build_inference``: every parameter and buffer a static, the reference ``model(x)``), where
tuple-producing forward ops (batch norm, max pooling with indices, group norm) have no backward
reading their extra elements.
"""
import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from edgegrad import export_function, export_training_step
from edgegrad._functional import replay_draws

T, F_ = True, False


# --------------------------------------------------------------------------------------------
# models


class LeNet5(nn.Module):
    """LeCun et al. 1998: conv5-tanh-avgpool, conv5-tanh-avgpool, 120-84-10, on 1x32x32."""

    def __init__(self):
        super().__init__()
        self.conv1, self.pool1 = nn.Conv2d(1, 6, 5), nn.AvgPool2d(2)
        self.conv2, self.pool2 = nn.Conv2d(6, 16, 5), nn.AvgPool2d(2)
        self.fc1, self.fc2, self.fc3 = nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool1(torch.tanh(self.conv1(x)))
        x = self.pool2(torch.tanh(self.conv2(x)))
        x = torch.tanh(self.fc1(torch.flatten(x, 1)))
        return self.fc3(torch.tanh(self.fc2(x)))


class BasicBlock(nn.Module):
    """ResNet basic block (He et al. 2016) with a projection shortcut (1x1 conv + BN)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + self.shortcut(x))


class ResNetBlockNet(nn.Module):
    """BasicBlock(8 -> 16, stride 2) + global average pool + linear head."""

    def __init__(self, classes=5):
        super().__init__()
        self.block = BasicBlock(8, 16, 2)
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        y = F.adaptive_avg_pool2d(self.block(x), 1)
        return self.fc(torch.flatten(y, 1))


class InvertedResidual(nn.Module):
    """MobileNetV2 block (Sandler et al. 2018): 1x1 expand + BN + ReLU6, 3x3 depthwise + BN +
    ReLU6, 1x1 project + BN, identity residual (stride 1, cin == cout)."""

    def __init__(self, c, expand):
        super().__init__()
        hidden = c * expand
        self.conv = nn.Sequential(
            nn.Conv2d(c, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, hidden, 3, 1, 1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, c, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        return x + self.conv(x)


class MobileNetV2Net(nn.Module):
    """Stem conv (stride 2) + BN + ReLU6, one inverted residual, pooled linear head."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU6(inplace=True))
        self.block = InvertedResidual(8, 4)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        y = self.block(self.stem(x))
        return self.head(F.adaptive_avg_pool2d(y, 1).flatten(1))


class GroupNormSiLUNet(nn.Module):
    """conv + GroupNorm + SiLU twice (second conv strided), linear head."""

    def __init__(self):
        super().__init__()
        self.conv1, self.gn1 = nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(4, 8)
        self.conv2, self.gn2 = nn.Conv2d(8, 8, 3, 2, 1), nn.GroupNorm(2, 8)
        self.act = nn.SiLU()
        self.fc = nn.Linear(8 * 6 * 6, 6)

    def forward(self, x):
        x = self.act(self.gn1(self.conv1(x)))
        x = self.act(self.gn2(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


class InstanceNormNet(nn.Module):
    """conv + InstanceNorm2d(affine) + ReLU twice, linear head."""

    def __init__(self, track_running_stats=False):
        super().__init__()
        kw = dict(affine=True, track_running_stats=track_running_stats)
        self.conv1, self.in1 = nn.Conv2d(3, 6, 3), nn.InstanceNorm2d(6, **kw)
        self.conv2, self.in2 = nn.Conv2d(6, 6, 3, padding=1), nn.InstanceNorm2d(6, **kw)
        self.fc = nn.Linear(6 * 8 * 8, 4)

    def forward(self, x):
        x = F.relu(self.in1(self.conv1(x)))
        x = F.relu(self.in2(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


class MaxPoolNet(nn.Module):
    """conv + ReLU + MaxPool2d(2), conv + ReLU + MaxPool2d(3, stride 2, padding 1), head."""

    def __init__(self):
        super().__init__()
        self.conv1, self.pool1 = nn.Conv2d(3, 6, 3, padding=1), nn.MaxPool2d(2)
        self.conv2, self.pool2 = nn.Conv2d(6, 8, 3, padding=1), nn.MaxPool2d(3, 2, 1)
        self.fc = nn.Linear(8 * 4 * 4, 5)

    def forward(self, x):
        x = self.pool1(F.relu(self.conv1(x)))
        x = self.pool2(F.relu(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


class AvgPoolCeilNet(nn.Module):
    """AvgPool2d with ceil_mode on odd sizes: (3, stride 2, padding 1) counting the padding,
    then (2, stride 2) whose last window hangs over the edge, not counting the padding."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3)
        self.pool1 = nn.AvgPool2d(3, 2, 1, ceil_mode=True)
        self.conv2 = nn.Conv2d(6, 6, 1)
        self.pool2 = nn.AvgPool2d(2, ceil_mode=True, count_include_pad=False)
        self.fc = nn.Linear(6 * 3 * 3, 4)

    def forward(self, x):                      # 2x3x11x11
        x = self.pool1(F.relu(self.conv1(x)))  # 9x9 -> 5x5 (ceil)
        x = self.pool2(self.conv2(x))          # 5x5 -> 3x3 (ceil)
        return self.fc(torch.flatten(x, 1))


class AdaptiveMaxPoolNet(nn.Module):
    """AdaptiveMaxPool2d((3, 3), return_indices=True) over 7x7 (overlapping windows)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3)
        self.pool = nn.AdaptiveMaxPool2d((3, 3), return_indices=True)
        self.fc = nn.Linear(6 * 3 * 3, 4)

    def forward(self, x):
        values, indices = self.pool(torch.tanh(self.conv(x)))
        return self.fc(torch.flatten(values, 1))


class AdaptiveAvgPoolNet(nn.Module):
    """AdaptiveAvgPool2d to (3, 2) over 7x7 (uneven, overlapping windows)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3)
        self.pool = nn.AdaptiveAvgPool2d((3, 2))
        self.fc = nn.Linear(6 * 3 * 2, 4)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(F.relu(self.conv(x))), 1))


class BatchNorm1dHeadNet(nn.Module):
    """conv + ReLU, then a classifier head Linear + BatchNorm1d + ReLU + Linear (rank-2
    batch norm: its running statistics are updated over the batch only)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, 2, 1)
        self.fc1, self.bn = nn.Linear(4 * 4 * 4, 12), nn.BatchNorm1d(12)
        self.fc2 = nn.Linear(12, 3)

    def forward(self, x):
        x = torch.flatten(F.relu(self.conv(x)), 1)
        return self.fc2(F.relu(self.bn(self.fc1(x))))


class SmallConvNet(nn.Module):
    """Three biased convs + ReLU, a max pool, linear head (the fine-tuning backbone)."""

    def __init__(self, bn=False):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=not bn)
        self.bn2 = nn.BatchNorm2d(8) if bn else nn.Identity()
        self.pool = nn.MaxPool2d(2)
        self.conv3 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.fc = nn.Linear(8 * 4 * 4, 5)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = self.pool(F.relu(self.bn2(self.conv2(x))))
        x = F.relu(self.conv3(x))
        return self.fc(torch.flatten(x, 1))


class BNConvNet(nn.Module):
    """conv + BN + ReLU twice (no conv biases), pooled linear head."""

    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
        self.conv2, self.bn2 = nn.Conv2d(8, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class SharedBatchNorm1dNet(nn.Module):
    """One BatchNorm1d applied twice: its running statistics are updated twice per step (the
    second update starts from the first's result) and num_batches_tracked grows by 2."""

    def __init__(self):
        super().__init__()
        self.fc1, self.bn, self.fc2 = nn.Linear(5, 6), nn.BatchNorm1d(6), nn.Linear(6, 6)

    def forward(self, x):
        return self.fc2(self.bn(F.relu(self.fc2(self.bn(self.fc1(x))))))


class EmaBufferNet(nn.Module):
    """A buffer updated with in-place ops (mul_, add_) in forward and read after the update."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("ema", torch.zeros(4))

    def forward(self, x):
        y = self.fc(x)
        self.ema.mul_(0.9).add_(y.detach().mean(0), alpha=0.1)
        return y * self.ema


# --------------------------------------------------------------------------------------------
# eager reference


class DropoutNet(nn.Module):
    """conv-BN-ReLU, Dropout2d(0.2), conv-ReLU, global average pool, Dropout(0.3), linear: in
    train mode both dropouts draw masks, which the export makes graph inputs (bernoulli_<k>)."""

    def __init__(self, classes=5):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.drop2d, self.conv2 = nn.Dropout2d(0.2), nn.Conv2d(8, 8, 3, padding=1)
        self.drop, self.fc = nn.Dropout(0.3), nn.Linear(8, classes)

    def forward(self, x):
        y = self.drop2d(F.relu(self.bn1(self.conv1(x))))
        y = F.adaptive_avg_pool2d(F.relu(self.conv2(y)), 1)
        return self.fc(self.drop(torch.flatten(y, 1)))


class FrozenConvNet(nn.Module):
    """conv-ReLU-conv, every weight frozen: the step of an input-gradient query."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(3, 6, 3, padding=1), nn.Conv2d(6, 4, 3)
        for p in self.parameters():
            p.requires_grad_(False)

    def forward(self, x):
        return self.conv2(F.relu(self.conv1(x)))


def _flat(name):
    return name.replace(".", "_")


def _numpy(tensors):
    return {name: t.detach().contiguous().numpy() for name, t in tensors.items()}


def eager(model, loss_fn, x, target, trainable, input_grad=False, steps=1, lr=0.0, draws=None):
    """PyTorch's training of a deep copy of ``model``: ``steps`` steps of loss.backward() and
    plain SGD (``p -= lr * grad``) on the ``trainable`` parameters, the same inputs each step.

    Returns (last-step outputs, losses, final tensors): the outputs are named as the exported
    graph names them (``loss``, ``grad_<p>``, ``grad_input``, ``new_<b>`` for each buffer the
    step changed); the final tensors are every trainable parameter and every buffer after the
    last step, by input name (dots -> '_'). ``draws``: the export's random masks
    (ExportResult.draws), which the forward's Bernoulli draws return, in order, every step."""
    model = copy.deepcopy(model)
    forward = replay_draws(model, list(draws.values())) if draws else model
    for name, p in model.named_parameters():
        p.requires_grad_(name in trainable)
    losses, outputs = [], {}
    for _ in range(steps):
        before = {n: b.clone() for n, b in model.named_buffers()}
        model.zero_grad(set_to_none=True)
        xx = x.clone().requires_grad_(input_grad)
        loss = loss_fn(forward(xx), target)
        loss.backward()
        losses.append(loss.item())
        outputs = {"loss": loss}
        outputs.update({"grad_" + _flat(n): p.grad.clone() for n, p in model.named_parameters()
                        if n in trainable})
        if input_grad:
            outputs["grad_input"] = xx.grad
        outputs.update({"new_" + _flat(n): b.clone() for n, b in model.named_buffers()
                        if not torch.equal(b, before[n])})
        with torch.no_grad():
            for n, p in model.named_parameters():
                if n in trainable:
                    p.add_(p.grad, alpha=-lr)
    final = {_flat(n): p for n, p in model.named_parameters() if n in trainable}
    final.update({_flat(n): b for n, b in model.named_buffers()})
    return _numpy(outputs), np.array(losses, dtype=np.float32), _numpy(final)


def runtime_inputs(graph, model, x, target, draws=None):
    """The value of each graph input, by the export's naming: input, target, parameters and
    buffers with dots replaced by '_', the random masks ``draws`` by their names."""
    known = {"input": x, "target": target, **(draws or {})}
    known.update({_flat(n): p for n, p in model.named_parameters()})
    known.update({_flat(n): b for n, b in model.named_buffers()})
    missing = [e["name"] for e in graph["inputs"] if e["name"] not in known]
    if missing:
        raise ValueError(f"graph inputs {missing} are neither example inputs, parameters nor "
                         "buffers")
    return _numpy({e["name"]: known[e["name"]] for e in graph["inputs"]})


def check_outputs(graph, reference):
    """The graph's outputs must be exactly the reference's (same names, same order)."""
    names = [e["name"] for e in graph["outputs"]]
    if names != list(reference):
        raise ValueError(f"graph outputs {names} != PyTorch's {list(reference)}")


def conv_masks(graph):
    """The output_mask of every convolution_backward node, as tuples."""
    return {tuple(n["args"][10]) for n in graph["nodes"]
            if n["target"] == "aten.convolution_backward.default"}


def ops(graph):
    return sorted({n["target"] for n in graph["nodes"]})


# --------------------------------------------------------------------------------------------
# case builders


def build_zoo(model, loss_fn, x, target, stem, trainable=None, input_grad=False, masks=(),
              steps=1, lr=None, note="", statics=None):
    """Export ``model``'s training step and compute PyTorch's reference (see module doc).
    ``statics``: if given, the graph's static names must be exactly these."""
    import cases

    params = [n for n, _ in model.named_parameters()]
    trainable = params if trainable is None else list(trainable)
    result = export_training_step(model, loss_fn, (x, target), stem, trainable=trainable,
                                  input_grad=input_grad)
    graph = result.graph
    inputs = runtime_inputs(graph, model, x, target, result.draws)
    reference, losses, final = eager(model, loss_fn, x, target, trainable, input_grad,
                                     steps, lr or 0.0, result.draws)
    check_outputs(graph, reference)
    got = [e["name"] for e in graph["statics"]]
    if statics is not None and got != list(statics):
        raise ValueError(f"graph statics {got}, want {list(statics)}")
    missing = [m for m in masks if tuple(m) not in conv_masks(graph)]
    if missing:
        raise ValueError(f"convolution_backward masks {missing} not in the graph "
                         f"(it has {sorted(conv_masks(graph))})")
    trained = "all" if len(trainable) == len(params) else f"{len(trainable)}/{len(params)}"
    state = [e["name"] for e in graph["outputs"] if e["role"] == "buffer_update"]
    description = (f"{type(model).__name__}{note}; {'train' if model.training else 'eval'} "
                   f"mode; trainable {trained}; {len(state)} state buffers")
    built = cases.Built(result.json_path, inputs, reference, description, info=True)
    if steps > 1:
        built.steps, built.lr = steps, lr
        built.losses = losses
        built.final = {k: v for k, v in final.items() if k in inputs}
        if set(built.final) != {k for k in inputs if k not in ("input", "target")
                                and k not in result.draws}:
            raise ValueError(f"final values {sorted(built.final)} do not cover the parameter "
                             f"and buffer inputs {sorted(inputs)}")
    return built


def _cls(n, classes):
    return torch.randint(0, classes, (n,), dtype=torch.int64)


def _lenet5(stem, seed):
    torch.manual_seed(seed)
    return build_zoo(LeNet5(), F.cross_entropy, torch.randn(2, 1, 32, 32), _cls(2, 10), stem)


def _resnet_block(stem, seed):
    torch.manual_seed(seed)
    return build_zoo(ResNetBlockNet(), F.cross_entropy, torch.randn(4, 8, 16, 16), _cls(4, 5),
                     stem, input_grad=True)


def _resnet_block_eval(stem, seed):
    """eval mode: BN normalises with its running statistics (statics), no state outputs."""
    torch.manual_seed(seed)
    model = ResNetBlockNet()
    _warm_up(model, torch.randn(4, 8, 16, 16))
    model.eval()
    return build_zoo(model, F.cross_entropy, torch.randn(2, 8, 16, 16), _cls(2, 5), stem)


def _warm_up(model, x):
    """Give BN layers non-trivial running statistics (a few train-mode forwards)."""
    model.train()
    with torch.no_grad():
        for k in range(3):
            model(x * (1 + k) + k)


def _mobilenet_v2_block(stem, seed):
    torch.manual_seed(seed)
    return build_zoo(MobileNetV2Net(), F.mse_loss, torch.randn(2, 3, 16, 16),
                     torch.randn(2, 4), stem)


def _groupnorm_silu(stem, seed):
    torch.manual_seed(seed)
    return build_zoo(GroupNormSiLUNet(), F.mse_loss, torch.randn(2, 3, 12, 12),
                     torch.randn(2, 6), stem, input_grad=True)


def _instancenorm(stem, seed):
    torch.manual_seed(seed)
    return build_zoo(InstanceNormNet(), F.cross_entropy, torch.randn(3, 3, 10, 10), _cls(3, 4),
                     stem)


def _instancenorm_tracked(stem, seed):
    """track_running_stats=True: ATen updates per-sample copies of the running statistics
    (repeat) inside batch_norm, then averages them back into the buffers."""
    torch.manual_seed(seed)
    return build_zoo(InstanceNormNet(track_running_stats=True), F.cross_entropy,
                     torch.randn(2, 3, 10, 10), _cls(2, 4), stem, note=" (tracked stats)")


def _maxpool(stem, seed):
    torch.manual_seed(seed)
    return build_zoo(MaxPoolNet(), F.cross_entropy, torch.randn(2, 3, 16, 16), _cls(2, 5), stem)


def _avgpool_ceil(stem, seed):
    torch.manual_seed(seed)
    return build_zoo(AvgPoolCeilNet(), F.cross_entropy, torch.randn(2, 3, 11, 11), _cls(2, 4),
                     stem, input_grad=True)


def _adaptive_maxpool(stem, seed):
    torch.manual_seed(seed)
    return build_zoo(AdaptiveMaxPoolNet(), F.cross_entropy, torch.randn(2, 3, 9, 9),
                     _cls(2, 4), stem)


def _adaptive_avgpool(stem, seed):
    torch.manual_seed(seed)
    return build_zoo(AdaptiveAvgPoolNet(), F.cross_entropy, torch.randn(2, 3, 9, 9),
                     _cls(2, 4), stem)


def _batchnorm1d_head(stem, seed):
    torch.manual_seed(seed)
    return build_zoo(BatchNorm1dHeadNet(), F.cross_entropy, torch.randn(4, 3, 8, 8),
                     _cls(4, 3), stem)


def _finetune_bias_only(stem, seed):
    """BitFit-style: every weight frozen (statics), every bias trained. The gradient reaches
    conv1's bias through the frozen conv2 and conv3: masks [T, F, T] and [F, F, T]."""
    torch.manual_seed(seed)
    model = SmallConvNet()
    trainable = [n for n, _ in model.named_parameters() if n.endswith("bias")]
    return build_zoo(model, F.cross_entropy, torch.randn(2, 3, 16, 16), _cls(2, 5), stem,
                     trainable, masks=[(T, F_, T), (F_, F_, T)], note=" (bias only)")


def _finetune_bn_affine(stem, seed):
    """Only the BatchNorm affine parameters train; the running statistics still update
    (train mode), so they are state. conv2's weight is frozen: mask [T, F, F]."""
    torch.manual_seed(seed)
    model = BNConvNet()
    trainable = [n for n, _ in model.named_parameters() if n.startswith("bn")]
    return build_zoo(model, F.cross_entropy, torch.randn(4, 3, 8, 8), _cls(4, 5), stem,
                     trainable, masks=[(T, F_, F_)], note=" (BN affine only)")


def _finetune_head(stem, seed):
    """A trainable classifier head and conv1's bias over a frozen backbone (frozen conv2 without
    bias, a frozen BatchNorm in train mode whose statistics still update, frozen conv3): the
    gradient flows through the frozen convs (mask [T, F, F]) to conv1's bias ([F, F, T])."""
    torch.manual_seed(seed)
    model = SmallConvNet(bn=True)
    trainable = ["conv1.bias", "fc.weight", "fc.bias"]
    return build_zoo(model, F.cross_entropy, torch.randn(2, 3, 16, 16), _cls(2, 5), stem,
                     trainable, masks=[(T, F_, F_), (F_, F_, T)], note=" (head + conv1 bias)")


def _finetune_frozen_bn_stats(stem, seed):
    """The usual way to freeze BatchNorm statistics while fine-tuning: model.train() but
    bn2.eval(). bn2 normalises with its running statistics, which become statics; nothing is
    state."""
    torch.manual_seed(seed)
    model = SmallConvNet(bn=True)
    _warm_up(model, torch.randn(2, 3, 16, 16))
    model.bn2.eval()
    trainable = ["conv1.bias", "bn2.weight", "bn2.bias", "fc.weight", "fc.bias"]
    return build_zoo(model, F.cross_entropy, torch.randn(2, 3, 16, 16), _cls(2, 5), stem,
                     trainable, note=" (frozen BN statistics: bn2.eval())",
                     statics=["conv1.weight", "conv2.weight", "conv3.weight", "conv3.bias",
                              "bn2.running_mean", "bn2.running_var", "bn2.num_batches_tracked"])


def _dropout(stem, seed):
    """train-mode Dropout and Dropout2d: the masks are inputs, PyTorch's step replays them."""
    torch.manual_seed(seed)
    return build_zoo(DropoutNet(), F.cross_entropy, torch.randn(2, 3, 10, 10), _cls(2, 5), stem,
                     note=" (Dropout2d, Dropout: masks as inputs)")


def _autograd_grad_input(stem, seed):
    """The input gradient of a frozen net, asked for as users write it:
    ``torch.autograd.grad(out, x, grad_outputs=v)`` (make_fx records an is_same_size check of
    v, which the export drops)."""
    import cases

    torch.manual_seed(seed)
    model = FrozenConvNet()
    x, v = torch.randn(2, 3, 8, 8), torch.randn(2, 4, 6, 6)

    def step(x, v):
        (g,) = torch.autograd.grad(model(x), x, grad_outputs=v)
        return g

    result = export_function(step, (x.clone().requires_grad_(), v), stem, arg_names=["x", "v"],
                             output_names=["grad_x"])
    xx = x.clone().requires_grad_()
    model(xx).backward(v)
    return cases.Built(result.json_path, _numpy({"x": x, "v": v}), _numpy({"grad_x": xx.grad}),
                       "FrozenConvNet; torch.autograd.grad(out, x, grad_outputs=v)", info=True)


ZOO = {
    "zoo_dropout": _dropout,
    "zoo_autograd_grad_input": _autograd_grad_input,
    "zoo_lenet5": _lenet5,
    "zoo_resnet_block": _resnet_block,
    "zoo_resnet_block_eval": _resnet_block_eval,
    "zoo_mobilenet_v2_block": _mobilenet_v2_block,
    "zoo_groupnorm_silu": _groupnorm_silu,
    "zoo_instancenorm": _instancenorm,
    "zoo_instancenorm_tracked": _instancenorm_tracked,
    "zoo_maxpool": _maxpool,
    "zoo_avgpool_ceil": _avgpool_ceil,
    "zoo_adaptive_maxpool": _adaptive_maxpool,
    "zoo_adaptive_avgpool": _adaptive_avgpool,
    "zoo_batchnorm1d_head": _batchnorm1d_head,
    "zoo_finetune_bias_only": _finetune_bias_only,
    "zoo_finetune_bn_affine": _finetune_bn_affine,
    "zoo_finetune_head": _finetune_head,
    "zoo_finetune_frozen_bn_stats": _finetune_frozen_bn_stats,
}


# --------------------------------------------------------------------------------------------
# inference: forward-only graphs of frozen models (every parameter and buffer a static), where
# the tuple-producing forward ops have no backward reading their extra elements


class MaxPoolIndicesNet(nn.Module):
    """conv + ReLU + MaxPool2d(3, 2, 1, return_indices=True): values and indices both
    returned (the int64 indices are a graph output)."""

    def __init__(self):
        super().__init__()
        self.conv, self.pool = nn.Conv2d(3, 6, 3, padding=1), nn.MaxPool2d(3, 2, 1,
                                                                           return_indices=True)

    def forward(self, x):
        return self.pool(F.relu(self.conv(x)))


class AdaptiveMaxPoolIndicesNet(AdaptiveMaxPoolNet):
    """AdaptiveMaxPoolNet's pool, returning the values and the int64 indices."""

    def forward(self, x):
        return self.pool(torch.tanh(self.conv(x)))


def build_inference(model, x, stem, output_names=("out",), note=""):
    """Export ``model``'s forward pass on ``x`` with every parameter and buffer frozen (statics
    named like the training steps' inputs, dots -> '_'); the reference is ``model(x)`` run
    eagerly without gradients. ``output_names``: one per tensor the forward returns."""
    import cases
    from torch.nn.utils.stateless import functional_call

    state = dict(model.named_parameters())
    state.update(model.named_buffers())
    names = list(state)

    def forward(x, *tensors):
        return functional_call(model, dict(zip(names, tensors)), (x,))

    flat = [_flat(n) for n in names]
    result = export_function(forward, (x, *[t.detach() for t in state.values()]), stem,
                             arg_names=("input", *flat), output_names=list(output_names),
                             static_args=flat)
    with torch.no_grad():
        out = model(x)
    out = out if isinstance(out, tuple) else (out,)
    if len(out) != len(output_names):
        raise ValueError(f"forward returns {len(out)} tensors for output names "
                         f"{list(output_names)}")
    description = (f"{type(model).__name__}{note}; forward only, "
                   f"{'train' if model.training else 'eval'} mode; {len(flat)} statics")
    return cases.Built(result.json_path, _numpy({"input": x}),
                       _numpy(dict(zip(output_names, out))), description, info=True)


def _eval(model, x):
    _warm_up(model, x)
    return model.eval()


def _infer_bn_conv(stem, seed):
    """Conv + BatchNorm2d (eval: running statistics) + ReLU twice, pooled head."""
    torch.manual_seed(seed)
    x = torch.randn(2, 3, 8, 8)
    return build_inference(_eval(BNConvNet(), x), x, stem)


def _infer_resnet_block(stem, seed):
    torch.manual_seed(seed)
    x = torch.randn(2, 8, 16, 16)
    return build_inference(_eval(ResNetBlockNet(), x), x, stem)


def _infer_mobilenet_v2_block(stem, seed):
    """Includes a depthwise 3x3 conv and ReLU6 (hardtanh)."""
    torch.manual_seed(seed)
    x = torch.randn(2, 3, 16, 16)
    return build_inference(_eval(MobileNetV2Net(), x), x, stem)


def _infer_lenet5(stem, seed):
    torch.manual_seed(seed)
    return build_inference(LeNet5().eval(), torch.randn(2, 1, 32, 32), stem)


def _infer_maxpool(stem, seed):
    """MaxPool2d whose indices nothing reads."""
    torch.manual_seed(seed)
    return build_inference(MaxPoolNet().eval(), torch.randn(2, 3, 16, 16), stem)


def _infer_maxpool_indices(stem, seed):
    torch.manual_seed(seed)
    return build_inference(MaxPoolIndicesNet().eval(), torch.randn(2, 3, 9, 10), stem,
                           ("values", "indices"))


def _infer_groupnorm_silu(stem, seed):
    """GroupNorm whose mean / rstd nothing reads."""
    torch.manual_seed(seed)
    return build_inference(GroupNormSiLUNet().eval(), torch.randn(2, 3, 12, 12), stem)


def _infer_instancenorm(stem, seed):
    """InstanceNorm2d (affine, untracked): batch statistics even in eval mode."""
    torch.manual_seed(seed)
    return build_inference(InstanceNormNet().eval(), torch.randn(3, 3, 10, 10), stem)


def _infer_adaptive_maxpool(stem, seed):
    """AdaptiveMaxPool2d(return_indices=True) whose indices nothing reads."""
    torch.manual_seed(seed)
    return build_inference(AdaptiveMaxPoolNet().eval(), torch.randn(2, 3, 9, 9), stem)


def _infer_adaptive_maxpool_indices(stem, seed):
    torch.manual_seed(seed)
    return build_inference(AdaptiveMaxPoolIndicesNet().eval(), torch.randn(2, 3, 9, 9), stem,
                           ("values", "indices"))


def _infer_avgpool_ceil(stem, seed):
    torch.manual_seed(seed)
    return build_inference(AvgPoolCeilNet().eval(), torch.randn(2, 3, 11, 11), stem)


INFERENCE = {
    "infer_bn_conv": _infer_bn_conv,
    "infer_resnet_block": _infer_resnet_block,
    "infer_mobilenet_v2_block": _infer_mobilenet_v2_block,
    "infer_lenet5": _infer_lenet5,
    "infer_maxpool": _infer_maxpool,
    "infer_maxpool_indices": _infer_maxpool_indices,
    "infer_groupnorm_silu": _infer_groupnorm_silu,
    "infer_instancenorm": _infer_instancenorm,
    "infer_adaptive_maxpool": _infer_adaptive_maxpool,
    "infer_adaptive_maxpool_indices": _infer_adaptive_maxpool_indices,
    "infer_avgpool_ceil": _infer_avgpool_ceil,
}


SGD_LR = 0.1


def _sgd_resnet_block(stem, seed):
    """5 steps of plain SGD on the ResNet block (`edgegrad run --steps 5`): the loss of each
    step, the final parameters and running statistics, and the last step's outputs."""
    torch.manual_seed(seed)
    return build_zoo(ResNetBlockNet(), F.cross_entropy, torch.randn(4, 8, 16, 16), _cls(4, 5),
                     stem, steps=5, lr=SGD_LR, note=f" x5 SGD steps, lr {SGD_LR}")


def _sgd_shared_batchnorm1d(stem, seed):
    torch.manual_seed(seed)
    return build_zoo(SharedBatchNorm1dNet(), F.mse_loss, torch.randn(4, 5), torch.randn(4, 6),
                     stem, steps=3, lr=SGD_LR, note=f" x3 SGD steps, lr {SGD_LR}")


def _sgd_ema_buffer(stem, seed):
    torch.manual_seed(seed)
    return build_zoo(EmaBufferNet(), F.mse_loss, torch.randn(3, 4), torch.randn(3, 4), stem,
                     steps=3, lr=SGD_LR, note=f" x3 SGD steps, lr {SGD_LR}")


SGD_RUNS = {
    "sgd_resnet_block_5steps": _sgd_resnet_block,
    "sgd_shared_batchnorm1d_3steps": _sgd_shared_batchnorm1d,
    "sgd_ema_buffer_3steps": _sgd_ema_buffer,
}
