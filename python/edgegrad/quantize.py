"""QDQ quantization of a model for export: ``qdq(model, calibration_batch, ...)``.

Contract:
- ``qdq(model, calibration_batch, *, per_channel_weights=True, activations=True,
  types=(nn.Conv2d, nn.Linear))`` returns a deep copy of ``model`` (the original is untouched)
  in which every module of one of ``types`` computes its op on quantize -> dequantize pairs,
  the form PyTorch's QDQ models take and edgegrad's graph format holds
  (docs/graph-format.md, "Quantized models"):
      x' = dequantize(quantize_per_tensor(x, s_x, z_x, quint8))               (activations)
      W' = dequantize(quantize_per_channel(W, s_w, 0, axis 0, qint8))         (weights)
      y  = conv2d / linear(x', W', bias)                                     (bias stays float)
  With ``per_channel_weights=False`` the weight is quantized per tensor (qint8, zero point 0).
- Calibration: the copy runs once on ``calibration_batch`` (no grad, in the model's mode) and
  records each wrapped module's input min/max. Activations: asymmetric quint8 over
  [min(lo, 0), max(hi, 0)], scale = range / 255 (1.0 for an all-zero input), zero point
  round(-lo / scale) clamped to [0, 255]. Weights: symmetric qint8, scale = max|W| / 127 per
  output channel (or per tensor; 1.0 for an all-zero channel), zero point 0, computed from the
  weight at qdq() time: quantized weights are meant to be frozen.
- Per-channel scales (float64) and zero points (int64) are buffers of the wrapped module
  (``<module>.weight_scale`` / ``.weight_zero_point``), so an exported step holds them as
  statics, which is what edgegrad needs: it reads them when compiling. Parameter and buffer
  names of the model are otherwise unchanged.
- Training: PyTorch's quantize ops have no gradient (their output does not require grad), so a
  gradient never flows through a quantized activation or into a quantized weight. For a
  training step whose gradients must pass a layer's input, leave its activations float
  (``activations=False`` or ``types`` without that layer), and keep quantized weights frozen.
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

_QUINT8 = (0, 255)
_QINT8_MAX = 127


class _QDQ:
    """Mixin for a wrapped module: holds the calibrated parameters, quantizes x and W."""

    def _qdq_init(self, act_range, per_channel, activations):
        self.qdq_activations = activations
        if activations:
            lo, hi = min(act_range[0], 0.0), max(act_range[1], 0.0)
            scale = (hi - lo) / (_QUINT8[1] - _QUINT8[0]) or 1.0
            zp = int(min(max(round(-lo / scale), _QUINT8[0]), _QUINT8[1]))
            self.act_scale, self.act_zero_point = float(scale), zp
        w = self.weight.detach()
        if per_channel:
            amax = w.reshape(w.shape[0], -1).abs().amax(dim=1).double()
            scale = torch.where(amax > 0, amax / _QINT8_MAX, torch.ones_like(amax))
            self.register_buffer("weight_scale", scale)
            self.register_buffer("weight_zero_point", torch.zeros(w.shape[0], dtype=torch.long))
        else:
            amax = float(w.abs().max())
            self.weight_scale_t = amax / _QINT8_MAX if amax > 0 else 1.0
        self.qdq_per_channel = per_channel

    def _qdq_input(self, x):
        if not self.qdq_activations:
            return x
        return torch.quantize_per_tensor(x, self.act_scale, self.act_zero_point,
                                         torch.quint8).dequantize()

    def _qdq_weight(self, w):
        if self.qdq_per_channel:
            q = torch.quantize_per_channel(w, self.weight_scale, self.weight_zero_point, 0,
                                           torch.qint8)
        else:
            q = torch.quantize_per_tensor(w, self.weight_scale_t, 0, torch.qint8)
        return q.dequantize()


class QDQConv2d(_QDQ, nn.Conv2d):
    def forward(self, x):
        return self._conv_forward(self._qdq_input(x), self._qdq_weight(self.weight), self.bias)


class QDQLinear(_QDQ, nn.Linear):
    def forward(self, x):
        return F.linear(self._qdq_input(x), self._qdq_weight(self.weight), self.bias)


_WRAPPERS = {nn.Conv2d: QDQConv2d, nn.Linear: QDQLinear}


def qdq(model, calibration_batch, *, per_channel_weights=True, activations=True,
        types=(nn.Conv2d, nn.Linear)):
    """A QDQ-quantized copy of ``model``; see the module docstring."""
    for t in types:
        if t not in _WRAPPERS:
            raise ValueError(f"types: {t.__name__} has no QDQ wrapper (supported: "
                             f"{', '.join(k.__name__ for k in _WRAPPERS)})")
    model = copy.deepcopy(model)
    targets = [(name, m) for name, m in model.named_modules()
               if type(m) in types]  # exact types: a subclass may compute something else
    if not targets:
        raise ValueError(f"the model has no module of types {[t.__name__ for t in types]}")
    ranges, hooks = {}, []

    def observe(name):
        def hook(_module, inputs):
            x = inputs[0].detach()
            lo, hi = float(x.min()), float(x.max())
            old = ranges.get(name, (lo, hi))
            ranges[name] = (min(lo, old[0]), max(hi, old[1]))
        return hook

    for name, m in targets:
        hooks.append(m.register_forward_pre_hook(observe(name)))
    with torch.no_grad():
        model(calibration_batch)
    for h in hooks:
        h.remove()
    for name, m in targets:
        if name not in ranges:
            raise ValueError(f"module {name} did not run on the calibration batch: its "
                             "activations cannot be calibrated")
        m.__class__ = _WRAPPERS[type(m)]
        m._qdq_init(ranges[name], per_channel_weights, activations)
    return model
