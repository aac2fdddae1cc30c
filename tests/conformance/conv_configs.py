"""Deterministic configurations for the aten.convolution_backward conformance sweep.

Contract: ``generate(count, seed)`` returns ``count`` (>= the explicit ones) valid ConvConfig's,
the same list for the same arguments: first explicit configurations covering every
(transposed, stride, output_padding) triple and every (transposed, output_mask) pair, then
configurations drawn by a seeded RNG over the grid. ``check_coverage(configs)`` counts what the
list covers and raises AssertionError naming whatever requirement is unmet; it returns the
counts. ``generate_npu(count, seed)`` returns configurations aimed at the NPU lowering's scope
(and at each of its limits, one at a time); ``in_npu_scope(c)`` says whether a configuration
meets the scope's conditions that it fixes.

Conventions (PyTorch's): for transposed=False, x is [N, Cin, H, W], weight [Cout, Cin/g, kH, kW]
and the gradient of the output has H_out = (H + 2p - d(k-1) - 1) // s + 1; the derived
output_padding is (H + 2p - d(k-1) - 1) mod s. For transposed=True, weight is
[Cin, Cout/g, kH, kW], output_padding op < max(s, d) is explicit and
H_out = (H - 1)s - 2p + d(k-1) + op + 1.
"""
import dataclasses
import itertools
import random

KERNELS = [(1, 1), (2, 2), (3, 3), (5, 5), (3, 1), (1, 3)]
STRIDES = [1, 2, 3]
PADDINGS = [0, 1, 2, 3]
DILATIONS = [1, 2]
GROUP_KINDS = ["1", "2", "depthwise"]
BATCHES = [1, 2, 3, 4]
MASKS = [m for m in itertools.product([True, False], repeat=3) if any(m)]
MAX_SPATIAL = 12      # input H, W
MAX_OUT_SPATIAL = 16  # output H, W of a transposed convolution


@dataclasses.dataclass(frozen=True)
class ConvConfig:
    """One convolution_backward call. ``output_padding`` is the explicit argument (zeros when
    not transposed); ``derived_op`` is the (H, W) output_padding the backward must use."""
    transposed: bool
    batch: int
    cin: int
    cout: int
    groups: int
    group_kind: str
    kernel: tuple
    stride: int
    padding: int
    dilation: int
    size: tuple          # input spatial (H, W)
    output_padding: tuple
    derived_op: tuple
    mask: tuple
    static_weight: bool  # freeze the weight into the safetensors file
    bias_sizes_none: bool  # pass bias_sizes=None (only when the bias gradient is masked)

    def out_size(self):
        return tuple(_out_len(self, i) for i in range(2))

    def weight_shape(self):
        kh, kw = self.kernel
        if self.transposed:
            return (self.cin, self.cout // self.groups, kh, kw)
        return (self.cout, self.cin // self.groups, kh, kw)

    def describe(self):
        flag = lambda b: "T" if b else "F"
        return (f"{'transposed' if self.transposed else 'conv'} N{self.batch} Cin{self.cin} "
                f"Cout{self.cout} g{self.groups} k{self.kernel[0]}x{self.kernel[1]} "
                f"s{self.stride} p{self.padding} d{self.dilation} in{self.size[0]}x"
                f"{self.size[1]} out{self.out_size()[0]}x{self.out_size()[1]} "
                f"op{list(self.derived_op)} mask[{''.join(map(flag, self.mask))}]"
                f"{' static-w' if self.static_weight else ''}")


def _span(c, i):
    """H + 2p - d(k-1) - 1 for a forward convolution along dimension i."""
    return c.size[i] + 2 * c.padding - c.dilation * (c.kernel[i] - 1) - 1


def _out_len(c, i):
    if c.transposed:
        return ((c.size[i] - 1) * c.stride - 2 * c.padding + c.dilation * (c.kernel[i] - 1)
                + c.output_padding[i] + 1)
    return _span(c, i) // c.stride + 1


def _channels(rng, kind):
    """(cin, cout, groups) for a group kind."""
    if kind == "1":
        return rng.randint(1, 8), rng.randint(1, 8), 1
    if kind == "2":
        return 2 * rng.randint(1, 4), 2 * rng.randint(1, 4), 2
    cin = rng.randint(2, 8)
    return cin, cin * rng.choice([1, 2]), cin


def _pick_size(rng, transposed, kernel, stride, padding, dilation, op):
    """An input length giving a valid output with (derived or explicit) output_padding op;
    None if there is none."""
    fits = []
    for n in range(1, MAX_SPATIAL + 1):
        if transposed:
            out = (n - 1) * stride - 2 * padding + dilation * (kernel - 1) + op + 1
            ok = 1 <= out <= MAX_OUT_SPATIAL
        else:
            span = n + 2 * padding - dilation * (kernel - 1) - 1
            ok = span >= 0 and span % stride == op
        if ok:
            fits.append(n)
    return rng.choice(fits) if fits else None


def _draw(rng, index, transposed=None, stride=None, op=None, mask=None, dilation=None,
          kernel=None, padding=None, group_kind=None, static=None):
    """One random valid config; the given fields are forced (``static``: the weight is frozen;
    by default every fourth config's is). Retries until valid. Unforced fields draw from
    ``rng`` in a fixed order, so ``generate``'s list never changes."""
    forced_kernel = kernel
    while True:
        t = rng.choice([False, True]) if transposed is None else transposed
        s = stride or rng.choice(STRIDES)
        d = dilation or rng.choice(DILATIONS)
        kernel = forced_kernel or rng.choice(KERNELS)
        p = rng.choice(PADDINGS) if padding is None else padding
        limit = max(s, d) if t else s
        ops = [op if op is not None else rng.randrange(limit) for _ in range(2)]
        if ops[0] >= limit:
            continue
        size = tuple(_pick_size(rng, t, kernel[i], s, p, d, ops[i]) for i in range(2))
        if None in size:
            continue
        kind = group_kind or rng.choice(GROUP_KINDS)
        cin, cout, groups = _channels(rng, kind)
        m = mask or rng.choice(MASKS)
        return ConvConfig(
            transposed=t, batch=rng.choice(BATCHES), cin=cin, cout=cout, groups=groups,
            group_kind=kind, kernel=kernel, stride=s, padding=p, dilation=d, size=size,
            output_padding=tuple(ops) if t else (0, 0), derived_op=tuple(ops), mask=m,
            static_weight=index % 4 == 3 if static is None else static,
            bias_sizes_none=not m[2] and rng.random() < 0.5)


def _explicit(rng):
    """Configs forcing every (transposed, stride, op) triple and (transposed, mask) pair."""
    wanted = []
    for t in (False, True):
        for s in STRIDES:
            wanted += [dict(transposed=t, stride=s, op=op) for op in range(s)]
        # op >= stride is legal for a transposed convolution when op < dilation
        wanted.append(dict(transposed=True, stride=1, op=1, dilation=2))
        wanted += [dict(transposed=t, mask=m) for m in MASKS]
    masks = itertools.cycle(MASKS)
    configs = []
    for i, forced in enumerate(wanted):
        forced.setdefault("mask", next(masks))
        configs.append(_draw(rng, i, **forced))
    return configs


def generate(count=330, seed=20240611):
    """``count`` configurations: the explicit ones, then seeded random draws."""
    rng = random.Random(seed)
    configs = _explicit(rng)
    while len(configs) < count:
        configs.append(_draw(rng, len(configs)))
    return configs


# The NPU lowering's scope (tests/conformance/placement.py): not transposed; every mask, groups
# value, dilation and frozen or trainable weight lowers (grad_input of a dilated conv through
# the dilated kernel).
NPU_MASKS = MASKS
NPU_SCOPE = dict(transposed=False)
# One condition broken at a time, to check each decline reason.
NPU_VIOLATIONS = {"transposed": dict(transposed=True)}
# Drawn after the violations: dilation 2 where grad_input is computed (in scope).
NPU_DILATED = dict(dilation=2)


def generate_npu(count=120, seed=20240612):
    """``count`` configurations aimed at the NPU lowering of convolution_backward: in its
    scope by construction (see NPU_SCOPE), every (stride, op) pair with every mask, every
    (kernel, padding) pair, every group kind with every mask, frozen and trainable weights
    (dilation 1 where the mask asks for grad_input, 1 or 2 otherwise); then each violation of
    NPU_VIOLATIONS with each mask asking for grad_input; then NPU_DILATED (in scope) with each
    of those masks; then seeded in-scope draws."""
    rng = random.Random(seed)
    wanted = [dict(NPU_SCOPE, stride=s, op=op, mask=m)
              for s in STRIDES for op in range(s) for m in NPU_MASKS]
    wanted += [dict(NPU_SCOPE, kernel=k, padding=p, mask=NPU_MASKS[0])
               for k in KERNELS for p in PADDINGS]
    wanted += [dict(NPU_SCOPE, group_kind=g, mask=m, static=st)
               for g in GROUP_KINDS for m in NPU_MASKS for st in (False, True)]
    wanted += [dict(NPU_SCOPE, mask=m, **v) for v in NPU_VIOLATIONS.values()
               for m in NPU_MASKS if m[0]]
    wanted += [dict(NPU_SCOPE, mask=m, **NPU_DILATED) for m in NPU_MASKS if m[0]]
    configs = []
    for i, forced in enumerate(wanted):
        forced.setdefault("dilation", 1 if forced["mask"][0] else None)
        configs.append(_draw(rng, i, **forced))
    while len(configs) < count:
        mask = rng.choice(NPU_MASKS)
        configs.append(_draw(rng, len(configs), mask=mask, dilation=1 if mask[0] else None,
                             **NPU_SCOPE))
    return configs


def in_npu_scope(c):
    """Whether ``c`` meets the scope's conditions (the sweep reads exactly the elements its
    mask asks for)."""
    return not c.transposed


def check_coverage(configs, minimum=300):
    """Count what ``configs`` cover; raise AssertionError if a requirement is unmet."""
    counts = {
        "configs": len(configs),
        "stride": {s: sum(c.stride == s for c in configs) for s in STRIDES},
        "padding": {p: sum(c.padding == p for c in configs) for p in PADDINGS},
        "kernel": {k: sum(c.kernel == k for c in configs) for k in KERNELS},
        "dilation": {d: sum(c.dilation == d for c in configs) for d in DILATIONS},
        "groups": {g: sum(c.group_kind == g for c in configs) for g in GROUP_KINDS},
        "batch": {b: sum(c.batch == b for c in configs) for b in BATCHES},
        "static_weight": {w: sum(c.static_weight == w for c in configs) for w in (False, True)},
        "parity": {(dim, par): sum(c.size[dim] % 2 == par for c in configs)
                   for dim in (0, 1) for par in (0, 1)},
    }
    for t in (False, True):
        sub = [c for c in configs if c.transposed == t]
        counts[f"mask transposed={t}"] = {m: sum(c.mask == m for c in sub) for m in MASKS}
        counts[f"stride,op transposed={t}"] = {
            (s, op, dim): sum(c.stride == s and c.derived_op[dim] == op for c in sub)
            for s in STRIDES for op in range(s) for dim in (0, 1)}
    problems = [f"{name} {key}" for name, table in counts.items() if isinstance(table, dict)
                for key, n in table.items() if n == 0]
    if len(configs) < minimum:
        problems.append(f"only {len(configs)} configs, want >= {minimum}")
    problems += [f"invalid {c.describe()}" for c in configs if not _valid(c)]
    assert not problems, "convolution_backward sweep misses: " + "; ".join(problems)
    return counts


def _valid(c):
    """PyTorch's own constraints, re-checked independently of the generator."""
    limit = max(c.stride, c.dilation) if c.transposed else c.stride
    return (all(n >= 1 for n in c.out_size()) and c.cin % c.groups == 0
            and c.cout % c.groups == 0 and all(op < limit for op in c.derived_op)
            and (c.transposed or all(_span(c, i) % c.stride == c.derived_op[i]
                                     for i in range(2))))


if __name__ == "__main__":
    for key, table in check_coverage(generate()).items():
        print(f"{key}: {table}")
    npu = generate_npu()
    print(f"npu configs: {len(npu)}, in scope by configuration: "
          f"{sum(map(in_npu_scope, npu))}")
