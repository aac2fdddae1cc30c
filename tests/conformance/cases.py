"""Conformance cases: each exports a graph with edgegrad.export and computes PyTorch's
reference outputs eagerly (never by re-running the trace).

Contract: ``all_cases()`` lists Case's (name, kind, spec), cheap to create and picklable; kinds
are "convolution_backward" (the sweep), "training_step", "model_zoo" (zoo.py's models),
"inference" (zoo.py's forward-only frozen models) and "sgd_steps" (zoo.py's multi-step runs).
``build(case, folder)`` exports the case's graph to ``folder/model.json`` (+ .safetensors) and returns a Built with the graph path, the runtime
inputs (name -> numpy array, in the graph's input order) and the reference outputs (name ->
numpy array, in the graph's output order); for a sweep case also ``conv_scopes`` (its
convolution_backward's NPU scope, computed from its configuration and PyTorch's eager call);
for a run of ``steps`` > 1 SGD steps at learning rate ``lr`` also the reference ``losses``
(float32 [steps]) and ``final`` values of the parameter and buffer inputs (the outputs are then
those of the last step). ``info``: the case also requires
``edgegrad info --json`` to accept the graph. Everything is seeded: the same case builds the same
files and numbers.
"""
import dataclasses
import os
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from edgegrad import export_function, export_training_step

import conv_configs
import placement
import zoo

CONV_SEED = 20240611


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    kind: str   # "convolution_backward", "training_step", "model_zoo", "inference", "sgd_steps"
    spec: object


@dataclasses.dataclass
class Built:
    json_path: str
    inputs: dict
    reference: dict
    description: str
    info: bool = False
    steps: int = 1
    lr: float = None
    losses: np.ndarray = None
    final: dict = None
    # convolution_backward node name -> violated NPU-scope conditions, from the case's own
    # configuration (placement.scope_from_config); None when the case has no such config
    conv_scopes: dict = None


def all_cases():
    """Every case: the convolution_backward sweep (conv_bwd_*: the grid; conv_npu_*: aimed at
    the NPU lowering's scope and its limits), the training steps, the model zoo, the
    forward-only frozen models, the multi-step SGD runs."""
    configs = conv_configs.generate(seed=CONV_SEED)
    conv_configs.check_coverage(configs)
    cases = [Case(f"conv_bwd_{i:03d}", "convolution_backward", c) for i, c in enumerate(configs)]
    cases += [Case(f"conv_npu_{i:03d}", "convolution_backward", c)
              for i, c in enumerate(conv_configs.generate_npu(seed=CONV_SEED + 1))]
    cases += [Case(name, "training_step", name) for name in TRAINING_STEPS]
    cases += [Case(name, "model_zoo", name) for name in zoo.ZOO]
    cases += [Case(name, "inference", name) for name in zoo.INFERENCE]
    cases += [Case(name, "sgd_steps", name) for name in zoo.SGD_RUNS]
    return cases


def build(case, folder):
    os.makedirs(folder, exist_ok=True)
    stem = os.path.join(folder, "model")
    if case.kind == "convolution_backward":
        return build_conv(case.spec, stem, _seed(case.name))
    builders = {"training_step": TRAINING_STEPS, "model_zoo": zoo.ZOO,
                "inference": zoo.INFERENCE, "sgd_steps": zoo.SGD_RUNS}
    return builders[case.kind][case.spec](stem, _seed(case.name))


def _seed(name):
    return zlib.crc32(name.encode())


def _numpy(tensors):
    return {name: t.detach().contiguous().numpy() for name, t in tensors.items()}


# --------------------------------------------------------------------------------------------
# convolution_backward sweep

_GRAD_NAMES = ("grad_input", "grad_weight", "grad_bias")


def conv_tensors(c, seed):
    """(grad_out, x, w) for config ``c``, seeded."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(c.batch, c.cin, *c.size, generator=g)
    w = torch.randn(*c.weight_shape(), generator=g)
    grad_out = torch.randn(c.batch, c.cout, *c.out_size(), generator=g)
    return grad_out, x, w


def conv_function(c):
    """fn(grad_out, x, w) calling aten.convolution_backward for ``c``, returning the
    gradients that the mask asks for.

    Not simply the non-None elements: PyTorch 1.13 on the CPU also returns grad_weight for a
    non-transposed convolution whose mask is [*, False, True]. The trace keeps that element in
    the tuple (as it does in a bias-only training step, where nothing uses it); the sweep
    compares only what the mask requests."""
    bias_sizes = None if c.bias_sizes_none else [c.cout]
    stride, padding, dilation = [c.stride] * 2, [c.padding] * 2, [c.dilation] * 2

    def fn(grad_out, x, w):
        grads = torch.ops.aten.convolution_backward(
            grad_out, x, w, bias_sizes, stride, padding, dilation, c.transposed,
            list(c.output_padding), c.groups, list(c.mask))
        return tuple(g for g, wanted in zip(grads, c.mask) if wanted)

    return fn


def build_conv(c, stem, seed):
    fn = conv_function(c)
    grad_out, x, w = conv_tensors(c, seed)
    names = [n for n, m in zip(_GRAD_NAMES, c.mask) if m]
    static = ("w",) if c.static_weight else ()
    result = export_function(fn, (grad_out, x, w), stem, arg_names=("grad_out", "x", "w"),
                             output_names=names, static_args=static)
    inputs = {"grad_out": grad_out, "x": x, "w": w}
    inputs = {k: v for k, v in inputs.items() if k not in static}
    with torch.no_grad():
        reference = dict(zip(names, fn(grad_out, x, w)))
    built = Built(result.json_path, _numpy(inputs), _numpy(reference), c.describe())
    present = conv_present(c, grad_out, x, w)
    built.conv_scopes = {n["name"]: placement.scope_from_config(c, present)
                         for n in result.graph["nodes"] if n["target"] == placement.CONV_BWD}
    return built


def conv_present(c, grad_out, x, w):
    """Which elements PyTorch's eager aten.convolution_backward returns for ``c`` (three
    bools): the mask's, plus grad_weight where PyTorch 1.13 computes it unasked."""
    with torch.no_grad():
        grads = torch.ops.aten.convolution_backward(
            grad_out, x, w, None if c.bias_sizes_none else [c.cout], [c.stride] * 2,
            [c.padding] * 2, [c.dilation] * 2, c.transposed, list(c.output_padding), c.groups,
            list(c.mask))
    return tuple(g is not None for g in grads)


# --------------------------------------------------------------------------------------------
# training steps


class ConvMLP(nn.Module):
    """conv -> relu -> conv -> flatten -> linear (MSE training)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3, padding=1)
        self.conv2 = nn.Conv2d(6, 4, 3)
        self.fc = nn.Linear(4 * 6 * 6, 5)

    def forward(self, x):
        x = self.conv2(F.relu(self.conv1(x)))
        return self.fc(torch.flatten(x, 1))


class StridedNet(nn.Module):
    """Two stride-2 convs with biases, relu, linear head (cross-entropy training)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(8, 12, 3, stride=2, padding=1)
        self.fc = nn.Linear(12 * 3 * 3, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        return self.fc(torch.flatten(x, 1))


class DilatedNet(nn.Module):
    """LRASPP-MobileNetV3's dilated last stages at a small input: conv -> relu, a depthwise
    5x5 dilation-2 conv (its grad_input a TransposeConv2d of the 9x9 dilated kernel), a plain
    3x3 dilation-2 conv, a grouped 3x3 dilation-3 conv, a 1x1 conv with dilation 2 (a no-op
    dilation), and, with ``stride``, a grouped 3x3 dilation-2 stride-2 conv and a plain one
    (grad_input only when their weights are frozen: grad_weight with stride and dilation both
    > 1 stays on the CPU), linear head. (Not a depthwise one at stride 2: QNN's HTP refuses
    the forward DepthWiseConv2d with stride 2 and dilation 2, measured.)"""

    def __init__(self, stride=False):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.dw = nn.Conv2d(8, 8, 5, padding=4, dilation=2, groups=8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=2, dilation=2)
        self.grouped = nn.Conv2d(8, 8, 3, padding=3, dilation=3, groups=2)
        self.point = nn.Conv2d(8, 6, 1, dilation=2)
        self.strided = nn.Sequential(nn.Conv2d(6, 6, 3, stride=2, padding=2, dilation=2,
                                               groups=2),
                                     nn.Conv2d(6, 6, 3, stride=2, padding=2, dilation=2)) \
            if stride else nn.Identity()
        side = 3 if stride else 9
        self.fc = nn.Linear(6 * side * side, 5)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.dw(x))
        x = F.relu(self.conv2(x))
        x = F.relu(self.grouped(x))
        x = self.strided(F.relu(self.point(x)))
        return self.fc(torch.flatten(x, 1))


class SENet(nn.Module):
    """A MobileNetV3 / EfficientNet block's activations: conv -> act, a squeeze-excitation gate
    (mean, 1x1 conv, inner act, 1x1 conv, gate, multiply), conv -> act, linear head. MobileNetV3:
    hardswish, relu, hardsigmoid; EfficientNet: silu, silu, sigmoid."""

    def __init__(self, act, inner, gate):
        super().__init__()
        self.act, self.inner, self.gate = act, inner, gate
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.se_reduce = nn.Conv2d(8, 4, 1)
        self.se_expand = nn.Conv2d(4, 8, 1)
        self.conv2 = nn.Conv2d(8, 6, 3, stride=2, padding=1)
        self.fc = nn.Linear(6 * 4 * 4, 5)

    def forward(self, x):
        x = self.act(self.conv1(x))
        s = self.inner(self.se_reduce(x.mean((2, 3), keepdim=True)))
        x = x * self.gate(self.se_expand(s))
        x = self.act(self.conv2(x))
        return self.fc(torch.flatten(x, 1))


class WideDepthwiseNet(nn.Module):
    """MobileNetV3's 5x5 depthwise blocks at a small input: conv -> relu, two depthwise 5x5
    stride-2 convs (8x8 -> 4x4 -> 2x2; their grad_input is a depthwise TransposeConv2d wider
    than 3 at stride 2, lowered with its zeros inserted explicitly), a depthwise 5x5 stride-1
    conv on the 2x2 map (padding 2 reaches grad_output's 2x2: its grad_weight Conv2d pads
    through an explicit Pad) and a 2x2 conv with padding 2 (stride 1: its forward and
    grad_weight Conv2d pad through an explicit Pad), a constant padding with a fill
    (constant_pad_nd: a Pad, its backward a crop) and a linear head."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.dw1 = nn.Conv2d(8, 8, 5, stride=2, padding=2, groups=8)
        self.dw2 = nn.Conv2d(8, 8, 5, stride=2, padding=2, groups=8)
        self.dw3 = nn.Conv2d(8, 8, 5, padding=2, groups=8)
        self.conv2 = nn.Conv2d(8, 4, 2, padding=2)
        self.fc = nn.Linear(4 * 6 * 7, 5)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.dw2(F.relu(self.dw1(x))))
        x = F.relu(self.conv2(F.relu(self.dw3(x))))
        return self.fc(torch.flatten(F.pad(x, (2, 0, 0, 1), value=0.5), 1))


class ShuffleBlockNet(nn.Module):
    """ShuffleNetV2's unit at a small input: conv -> relu, the channels split in two (one half
    kept, the other through 1x1 conv -> relu), joined and shuffled (view, transpose, view),
    and a SqueezeNet Fire-style expand (two convs concatenated): split and cat forward, slice
    and cat backward, linear head."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.branch = nn.Conv2d(4, 4, 1)
        self.e1 = nn.Conv2d(8, 3, 1)
        self.e3 = nn.Conv2d(8, 5, 3, padding=1)
        self.fc = nn.Linear(8 * 6 * 6, 5)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        a, b = x.chunk(2, 1)
        x = torch.cat([a, F.relu(self.branch(b))], 1)
        n, c, h, w = x.shape
        x = x.view(n, 2, c // 2, h, w).transpose(1, 2).contiguous().view(n, c, h, w)
        x = torch.cat([F.relu(self.e1(x)), F.relu(self.e3(x))], 1)
        return self.fc(torch.flatten(x, 1))


class PooledNet(nn.Module):
    """A classifier's end: conv -> relu -> strided conv -> relu -> adaptive_avg_pool2d(1) ->
    linear (the global pooling's backward broadcasts the [N, C, 1, 1] gradient over the map)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 12, 3, stride=2, padding=1)
        self.fc = nn.Linear(12, 7)

    def forward(self, x):
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class ResNetStemNet(nn.Module):
    """ResNet's stem and first block's shape: conv -> batch norm -> relu -> max_pool2d(3, 2, 1)
    -> conv -> relu -> adaptive_avg_pool2d(1) -> linear (max pooling's indices and its
    backward in the training step)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 12, 3, padding=1)
        self.fc = nn.Linear(12, 5)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
        x = F.relu(self.conv2(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class WideDownsampleNet(nn.Module):
    """ResNet's downsampling block at layer-4 width: conv 3->128 -> relu, then a 3x3 stride-2
    conv 128->256 beside a 1x1 stride-2 shortcut conv 128->256, added -> relu ->
    adaptive_avg_pool2d(1) -> linear. Both strided convs' grad_weight take the im2col form at
    6 x 6 (N*Ho*Wo = 18 <= Cout, conv.c lower_grad_weight_pixels) and the tap form at 24 x 24
    (288 pixels; ci x Cout = 32768, conv.c lower_grad_weight_taps)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 128, 3, padding=1, bias=False)
        self.conv2 = nn.Conv2d(128, 256, 3, stride=2, padding=1, bias=False)
        self.down = nn.Conv2d(128, 256, 1, stride=2, bias=False)
        self.fc = nn.Linear(256, 5)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x) + self.down(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class DeepDownsampleNet(nn.Module):
    """ResNet-50's layer4 downsample: conv 3->1024 (1x1) -> relu on a 4x4 map, then the 1x1
    stride-2 conv 1024->2048 with its batch norm (batch statistics, running stats updated) ->
    relu -> adaptive_avg_pool2d(1) -> linear. edgegrad runs that conv as a StridedSlice of the
    pixels it reads and a stride-1 Conv2d (conv.c pointwise_subsample: inside ResNet-50's step
    the strided Conv2d crashes QNN HTP's emulator after fast preparation,
    tests/htp/test_qnn_ref.py); this case checks that form at full width, on the CPU against
    PyTorch and on QNN HTP."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 1024, 1, bias=False)
        self.down = nn.Conv2d(1024, 2048, 1, stride=2, bias=False)
        self.bn = nn.BatchNorm2d(2048)
        self.fc = nn.Linear(2048, 5)

    def forward(self, x):
        x = F.relu(self.bn(self.down(F.relu(self.conv1(x)))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class UpsampleSegNet(nn.Module):
    """A segmentation head's upsampling (LRASPP's shape): conv -> relu -> strided conv -> relu,
    back to the input's size by bilinear (align_corners false, x2) and by nearest from a
    fractional bilinear (align_corners true) size, added, then a 1x1 conv per pixel."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3, padding=1)
        self.conv2 = nn.Conv2d(6, 8, 3, stride=2, padding=1)
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        y = F.relu(self.conv2(F.relu(self.conv1(x))))
        a = F.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)
        b = F.interpolate(y, size=(7, 6), mode="bilinear", align_corners=True)
        return self.head(a + F.interpolate(b, size=a.shape[2:], mode="nearest"))


class PixelScaleSegNet(nn.Module):
    """A segmentation head's per-pixel classifier (LRASPP's scale branch): conv -> relu, a
    global average (adaptive_avg_pool2d(1)) -> 1x1 conv -> sigmoid scaling the map, plus
    context from a padded 3x3 average pool and from an adaptive average pool (6x8 -> 3x4)
    upsampled back, then a 1x1 conv to class scores per pixel, trained with a pixel-wise
    cross_entropy (nll_loss2d)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3, padding=1)
        self.scale = nn.Conv2d(6, 6, 1)
        self.head = nn.Conv2d(6, 4, 1)

    def forward(self, x):
        y = F.relu(self.conv1(x))
        y = y * torch.sigmoid(self.scale(F.adaptive_avg_pool2d(y, 1)))
        c = F.adaptive_avg_pool2d(y, (3, 4))
        c = F.interpolate(c, size=y.shape[2:], mode="bilinear", align_corners=False)
        return self.head(y + F.avg_pool2d(y, 3, 1, 1) + c)


def pixel_cross_entropy(scores, target):
    """torchvision's segmentation loss: cross_entropy per pixel, 255 the void label."""
    return F.cross_entropy(scores, target, ignore_index=255)


class TransformerMlpNet(nn.Module):
    """A transformer block's MLP half over tokens [B, L, D] (ViT's): a linear embedding,
    LayerNorm -> Linear -> GELU (erf) -> Linear with a residual, a second LayerNorm over the
    last two dims without affine parameters and GELU's tanh form, then a linear head on the
    class token (ViT's x[:, 0]: select, select_backward) plus the other tokens' mean (a slice
    and slice_backward)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(6, 8)
        self.norm = nn.LayerNorm(8)
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 8)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        t = self.embed(x)
        t = t + self.fc2(F.gelu(self.fc1(self.norm(t))))
        t = F.gelu(F.layer_norm(t, t.shape[1:]), approximate="tanh")
        return self.head(t[:, 0] + t[:, 1:].mean(1))


def eager_step(model, loss_fn, x, target, trainable, input_grad):
    """PyTorch's loss and gradients, computed eagerly with loss.backward()."""
    model.zero_grad()
    for name, p in model.named_parameters():
        p.requires_grad_(name in trainable)
    x = x.clone().requires_grad_(input_grad)
    loss = loss_fn(model(x), target)
    loss.backward()
    ref = {"loss": loss}
    ref.update({"grad_" + name.replace(".", "_"): p.grad
                for name, p in model.named_parameters() if name in trainable})
    if input_grad:
        ref["grad_input"] = x.grad
    return _numpy(ref)


class AttentionPoolNet(nn.Module):
    """Self-attention over tokens [B, L, D] (a ViT block's attention half): a linear embedding,
    projections to q, k and v split into 2 heads, causal scaled-dot-product attention
    (PyTorch 2's fused op; under PyTorch 1.x its math form: matmul, softmax, matmul), an output
    projection with a residual, then softmax-weighted pooling of the tokens (torch.softmax over
    the token dim) and a linear head."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(6, 8)
        self.q, self.k, self.v = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8)
        self.proj = nn.Linear(8, 8)
        self.score = nn.Linear(8, 1)
        self.head = nn.Linear(8, 5)
        # PyTorch 1.x's causal mask, made once (aten.triu is no op of edgegrad's)
        self.register_buffer("causal", torch.full((16, 16), float("-inf")).triu(1))

    def forward(self, x):
        t = self.embed(x)
        b, l, d = t.shape
        q, k, v = (f(t).reshape(b, l, 2, d // 2).transpose(1, 2) for f in (self.q, self.k,
                                                                          self.v))
        if hasattr(F, "scaled_dot_product_attention"):
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            s = q @ k.transpose(-2, -1) * (d // 2) ** -0.5 + self.causal[:l, :l]
            a = torch.softmax(s, -1) @ v
        t = t + self.proj(a.transpose(1, 2).reshape(b, l, d))
        w = torch.softmax(self.score(t), 1)
        return self.head((w * t).sum(1))


def build_training(model, loss_fn, x, target, stem, trainable=None, input_grad=False):
    """Export ``model``'s step and compute its eager reference."""
    params = dict(model.named_parameters())
    trainable = list(params) if trainable is None else list(trainable)
    result = export_training_step(model, loss_fn, (x, target), stem, trainable=trainable,
                                  input_grad=input_grad)
    inputs = {"input": x, "target": target}
    inputs.update({n.replace(".", "_"): params[n] for n in params if n in trainable})
    reference = eager_step(model, loss_fn, x, target, trainable, input_grad)
    trained = "all" if len(trainable) == len(params) else ", ".join(trainable)
    return Built(result.json_path, _numpy(inputs), reference,
                 f"{type(model).__name__}; trainable: {trained}"
                 f"{'; with grad_input' if input_grad else ''}")


def _conv_mlp_mse(stem, seed):
    torch.manual_seed(seed)
    model = ConvMLP()
    x, target = torch.randn(2, 3, 8, 8), torch.randn(2, 5)
    return build_training(model, F.mse_loss, x, target, stem)


def _strided_cross_entropy(stem, seed):
    torch.manual_seed(seed)
    model = StridedNet()
    x, target = torch.randn(4, 3, 11, 11), torch.randint(0, 10, (4,), dtype=torch.int64)
    return build_training(model, F.cross_entropy, x, target, stem)


def _strided_frozen_convs(stem, seed):
    """Transfer learning: conv weights frozen (statics), biases and head trained, plus the
    input gradient (convolution_backward with grad_weight masked)."""
    torch.manual_seed(seed)
    model = StridedNet()
    x, target = torch.randn(3, 3, 9, 10), torch.randint(0, 10, (3,), dtype=torch.int64)
    trainable = ["conv1.bias", "conv2.bias", "fc.weight", "fc.bias"]
    return build_training(model, F.cross_entropy, x, target, stem, trainable, input_grad=True)


def _se(act, inner, gate):
    """Full training of SENet with the input gradient: its activations, gate and their
    backward ops in one step."""
    def build(stem, seed):
        torch.manual_seed(seed)
        model = SENet(act, inner, gate)
        x, target = torch.randn(2, 3, 8, 8) * 2, torch.randint(0, 5, (2,), dtype=torch.int64)
        return build_training(model, F.cross_entropy, x, target, stem, input_grad=True)
    return build


def _wide_depthwise(stem, seed):
    """Full training of WideDepthwiseNet with the input gradient: both forms QNN HTP computes
    wrong as plain ops (a padding reaching the kernel, a wide depthwise TransposeConv2d at
    stride 2) in one step."""
    torch.manual_seed(seed)
    model = WideDepthwiseNet()
    x, target = torch.randn(2, 3, 8, 8), torch.randint(0, 5, (2,), dtype=torch.int64)
    return build_training(model, F.cross_entropy, x, target, stem, input_grad=True)


def _dilated(stem, seed):
    """Full training of DilatedNet with the input gradient: grad_input of dilated depthwise,
    plain and grouped convs (the dilated kernel built inside the partition)."""
    torch.manual_seed(seed)
    model = DilatedNet()
    x, target = torch.randn(2, 3, 9, 9), torch.randint(0, 5, (2,), dtype=torch.int64)
    return build_training(model, F.cross_entropy, x, target, stem, input_grad=True)


def _dilated_strided_frozen(stem, seed):
    """DilatedNet with its stride-2 dilated convs, conv weights frozen (biases and head
    trained), with the input gradient: every convolution_backward computes grad_input of a
    dilated conv, stride 1 and 2."""
    torch.manual_seed(seed)
    model = DilatedNet(stride=True)
    x, target = torch.randn(2, 3, 9, 9), torch.randint(0, 5, (2,), dtype=torch.int64)
    trainable = [n for n, _ in model.named_parameters() if not n.endswith("weight") or
                 n.startswith("fc.")]
    return build_training(model, F.cross_entropy, x, target, stem, trainable, input_grad=True)


def _shuffle_block(stem, seed):
    """Full training of ShuffleBlockNet with the input gradient: channel split, concatenation
    and shuffle, forward and backward, in one step."""
    torch.manual_seed(seed)
    model = ShuffleBlockNet()
    x, target = torch.randn(2, 3, 6, 6), torch.randint(0, 5, (2,), dtype=torch.int64)
    return build_training(model, F.cross_entropy, x, target, stem, input_grad=True)


def _pooled_cross_entropy(stem, seed):
    """Full training of PooledNet with cross_entropy over a batch where one target is
    ignore_index (-100): not counted in the mean, no gradient in its row."""
    torch.manual_seed(seed)
    model = PooledNet()
    x, target = torch.randn(4, 3, 10, 10), torch.tensor([3, -100, 6, 0], dtype=torch.int64)
    return build_training(model, F.cross_entropy, x, target, stem, input_grad=True)


def _resnet_stem(stem, seed):
    """Full training of ResNetStemNet with the input gradient: max_pool2d_with_indices with its
    indices read and its backward, in one step."""
    torch.manual_seed(seed)
    model = ResNetStemNet()
    x, target = torch.randn(2, 3, 16, 16), torch.randint(0, 5, (2,), dtype=torch.int64)
    # batch norm's running statistics are inputs of the step too, as they were before the
    # eager reference step updates them
    buffers = _numpy({n.replace(".", "_"): b.clone() for n, b in model.named_buffers()})
    built = build_training(model, F.cross_entropy, x, target, stem, input_grad=True)
    built.inputs.update(buffers)
    return built


def _wide_downsample(size):
    """Full training of WideDownsampleNet on size x size inputs with the input gradient (an
    even input: the 1x1 stride-2 conv never reads its last row and column)."""
    def build(stem, seed):
        torch.manual_seed(seed)
        model = WideDownsampleNet()
        x, target = torch.randn(2, 3, size, size), torch.randint(0, 5, (2,), dtype=torch.int64)
        return build_training(model, F.cross_entropy, x, target, stem, input_grad=True)
    return build


def _deep_downsample(stem, seed):
    """Full training of DeepDownsampleNet (batch 2 of 3x4x4)."""
    torch.manual_seed(seed)
    model = DeepDownsampleNet()
    x, target = torch.randn(2, 3, 4, 4), torch.randint(0, 5, (2,), dtype=torch.int64)
    buffers = _numpy({n.replace(".", "_"): b.clone() for n, b in model.named_buffers()})
    built = build_training(model, F.cross_entropy, x, target, stem)
    built.inputs.update(buffers)
    return built


def _upsample_seg(stem, seed):
    """Full training of UpsampleSegNet with the input gradient: bilinear and nearest
    upsampling and both backward ops in one step."""
    torch.manual_seed(seed)
    model = UpsampleSegNet()
    x, target = torch.randn(2, 3, 10, 10), torch.randn(2, 2, 10, 10)
    return build_training(model, F.mse_loss, x, target, stem, input_grad=True)


def _pixel_seg(stem, seed):
    """Full training of PixelScaleSegNet with the input gradient: nll_loss2d and its backward
    over targets with void (255) pixels, avg_pool2d's and _adaptive_avg_pool2d's backward, in
    one step."""
    torch.manual_seed(seed)
    model = PixelScaleSegNet()
    x, target = torch.randn(2, 3, 6, 8), torch.randint(0, 4, (2, 6, 8), dtype=torch.int64)
    target[0, 2, :] = 255
    target[1, :3, 5] = 255
    return build_training(model, pixel_cross_entropy, x, target, stem, input_grad=True)


def _transformer_mlp(stem, seed):
    """Full training of TransformerMlpNet with the input gradient: native_layer_norm, gelu
    (both forms) and their backward ops in one step."""
    torch.manual_seed(seed)
    model = TransformerMlpNet()
    x, target = torch.randn(2, 5, 6), torch.randint(0, 5, (2,), dtype=torch.int64)
    return build_training(model, F.cross_entropy, x, target, stem, input_grad=True)


def _attention_pool(stem, seed):
    """Full training of AttentionPoolNet with the input gradient: scaled-dot-product attention,
    softmax and their backward ops in one step."""
    torch.manual_seed(seed)
    model = AttentionPoolNet()
    x, target = torch.randn(2, 6, 6), torch.randint(0, 5, (2,), dtype=torch.int64)
    return build_training(model, F.cross_entropy, x, target, stem, input_grad=True)


TRAINING_STEPS = {
    "train_conv_mlp_mse": _conv_mlp_mse,
    "train_strided_cross_entropy": _strided_cross_entropy,
    "train_strided_frozen_convs": _strided_frozen_convs,
    "train_hardswish_se": _se(F.hardswish, F.relu, F.hardsigmoid),
    "train_silu_se": _se(F.silu, F.silu, torch.sigmoid),
    "train_pooled_cross_entropy": _pooled_cross_entropy,
    "train_shuffle_block": _shuffle_block,
    "train_wide_depthwise": _wide_depthwise,
    "train_dilated": _dilated,
    "train_dilated_strided_frozen": _dilated_strided_frozen,
    "train_resnet_stem": _resnet_stem,
    "train_wide_downsample": _wide_downsample(6),
    "train_wide_downsample_taps": _wide_downsample(24),
    "train_deep_downsample": _deep_downsample,
    "train_upsample_seg": _upsample_seg,
    "train_pixel_seg": _pixel_seg,
    "train_transformer_mlp": _transformer_mlp,
    "train_attention_pool": _attention_pool,
}
