"""Placement checks for the NPU path: what `edgegrad compile --soc SOC --report R.json` must say
about a graph, computed here independently of the C partitioner and its builders.

Contract: ``check_report(graph, report, soc, conv_scopes=None)`` returns (failures, stats) for
one graph compiled for one SoC. ``graph`` is the exported MODEL.json (a dict), ``report`` the
placement report (a dict, docs/report-format.md), which lists the nodes of the COMPILED graph
(the model's graph after edgegrad's pass pipeline, src/compiler/passes), ``conv_scopes`` optionally
maps a convolution_backward node name to the scope verdict computed from the case's own
configuration (``scope_from_config``); when given it must agree with the verdict read from the
graph. Failures are one line each and name the node, its op, the SoC and what is wrong.
``stats`` counts nodes and placements (see ``_stats``).

What is checked:
  0. The report's nodes against the exported graph's (``match_nodes``): names are unique; an
     entry without "source" is a node of the graph as traced (same name and target); an entry
     with "source" is a node a pass made, and its source names a node of the graph; every node
     of the graph is listed as traced, or is the source of an entry, or was folded into a
     constant (its op is one of decompose's fills, FOLDED_FILLS), or was pruned as dead (none
     of its results is read in the exported graph, ``dead_nodes``: pass prune); the traced
     entries keep the graph's order. Entries made by a pass are checked below only as far as
     the report alone allows (their arguments are not in the exported graph): format, reasons
     that name their own op / SoC, partitions.
  1. Format: format/version/soc/htp_arch/fp16 as in SOCS below; the entry keys of
     docs/report-format.md; "npu" <=> an integer partition and no reason, "cpu" <=> no
     partition and a one-line reason; a getitem has its producer's placement and partition
     (reason "follows its producer" on the CPU), no other node has that reason; the partitions
     are numbered 0.. in order of their first node, list exactly the NPU nodes in report order,
     and the graph of partitions and CPU nodes has no cycle (edges: the traced entries'
     arguments, each value from the entry that bears its traced definer's name).
  2. Reasons follow the partitioner's gate order: "no NPU lowering for aten.X" names the node's
     own op; a float node on a SoC without fp16 can only say that or the float reason
     ("float ops need HTP V69+ with fp16; SM8350 is V68"), so it is never on the NPU; the float
     reason never appears on an fp16 SoC nor for a node without float tensors; an arch reason
     ("aten.X needs HTP V73+; SM8450 is V69") names the SoC's own arch, below the one needed.
  3. aten.convolution_backward, exactly (the scope of its NPU lowering): on an fp16 HTP V69+
     SoC it is on the NPU iff its grad_output / input / weight are float 4-D tensors,
     transposed == False, it computes something (a grad_input or grad_bias element, or a
     grad_weight element that is READ by a node or as a graph output), and, where it computes
     grad_input (a TransposeConv2d of the dilated kernel (k - 1) * dilation + 1 at dilation 1),
     with groups > 1, the derived output_padding <= padding in each dim (QNN HTP computes a
     grouped TransposeConv2d's output_padding shifted, so the lowering uses asymmetric pads
     [p, p - op] instead, which needs op <= p). Frozen and trainable weights,
     every groups value (depthwise included) and every output_mask lower. PyTorch 1.13 returns
     a grad_weight element for a non-transposed mask [*, F, T] although the mask does not ask
     for it; nothing reads it, and the lowering does not compute it
     (src/backends/htp/compile/builders/conv.c). Otherwise the node is on the CPU with one reason:
     the float reason where there is no fp16, else the builder's own sentence naming exactly one
     of the violated conditions (keywords below). "no NPU lowering for aten.convolution_backward"
     is a failure on an fp16 SoC (the op must have a builder).
  4. aten.hardtanh and aten.clamp lower to QNN's ReluMinMax, which needs min_value <= max_value
     (src/backends/htp/compile/builders/activation.c): such a node on the NPU must have both bounds
     (hardtanh's default to -1 and 1; clamp has no defaults) and, as floats, min <= max. With
     min > max ATen gives max everywhere, which the CPU computes; the node must stay there.
The cross-case rule "an op's reason is 'no NPU lowering' on every SoC or on none" needs every
report of a run; ``builder_consistency`` checks it over the collected (soc, target, reason)
triples.
"""
import collections
import re
import struct

# soc -> (HTP arch, fp16, note): docs/report-format.md and `edgegrad targets`.
SOCS = {
    "SM8350": (68, False, "V68 has no floating-point path"),
    "SM8450": (69, True, ""),
    "SM8475": (69, True, ""),
    "SM7675": (73, False, "QNN rejects fp16 on this V73 part"),
    "SM8550": (73, True, ""),
    "SM8635": (73, False, "QNN rejects fp16 on this V73 part"),
    "SM8650": (75, True, ""),
    "SM8750": (79, True, ""),
    "SM8850": (81, True, ""),
}

FLOAT_DTYPES = ("float32", "float16", "float64")
CONV_BWD = "aten.convolution_backward.default"
FOLLOWS = "follows its producer"
ENTRY_KEYS = {"name", "target", "placement", "partition", "reason", "flops"}  # and "source"
# Ops pass decompose folds into a static constant (src/compiler/passes/decompose.c, rules[]): such a
# node may be absent from the report without any entry naming it as its source.
FOLDED_FILLS = frozenset([
    "aten.ones_like.default", "aten.zeros_like.default", "aten.full.default",
    "aten.zeros.default", "aten.new_zeros.default", "aten.fill.Scalar",
    "aten.empty_like.default", "aten.empty.memory_format"])

# Conditions of the convolution_backward scope, with the words a reason naming each must use.
CONDITIONS = collections.OrderedDict([
    ("float", ("float32", "float tensor", "dtype", "int64")),
    ("rank", ("4-d", "rank")),
    ("transposed", ("transposed",)),
    ("nothing", ("no gradient",)),
    ("output_padding above padding", ("output_padding",)),
    ("strided dilated grad_weight", ("would have both",)),
])


def display_name(target):
    """aten.X as the partitioner spells it: the target without a '.default' overload."""
    return target[:-len(".default")] if target.endswith(".default") else target


def float_reason(soc):
    arch, _, note = SOCS[soc]
    if arch < 69:
        return f"float ops need HTP V69+ with fp16; {soc} is V{arch}"
    return f"float ops need HTP V69+ with fp16; {soc} is V{arch} without fp16 ({note})"


# --------------------------------------------------------------------------------------------
# the convolution_backward scope


def scope_from_config(c, present):
    """Violated scope conditions [(condition, description)] of sweep config ``c`` (a
    conv_configs.ConvConfig) whose eager PyTorch call returned the elements ``present``
    (three bools); [] means the node belongs on the NPU of an fp16 V69+ SoC. The sweep's
    function returns exactly the elements its mask asks for, so an element is read iff it is
    present and asked for."""
    violated = []
    computes = [present[i] and c.mask[i] for i in range(3)]
    if not any(computes):
        violated.append(("nothing", "no gradient computed"))
    if c.transposed:
        violated.append(("transposed", "transposed=True"))
    if computes[0] and not c.transposed:
        violated += tconv_scope([c.stride] * 2, [c.padding] * 2, list(c.derived_op), c.groups,
                                c.cin == c.groups and c.cout == c.groups,
                                [c.dilation * (k - 1) + 1 for k in c.kernel])
    if computes[1] and c.stride > 1 and c.dilation > 1:
        violated.append(("strided dilated grad_weight",
                         f"grad_weight with stride {c.stride} and dilation {c.dilation}"))
    # a grad_weight whose Conv2d padding reaches grad_output's size is lowered through an
    # explicit Pad (src/backends/htp/compile/builders/conv.c, pad_reaches_kernel): in scope
    return violated


def tconv_scope(stride, padding, op, groups, depthwise, kernel):
    """The violated conditions of grad_input's TransposeConv2d: the forms Qualcomm's HTP was
    measured to compute wrong (src/backends/htp/compile/builders/conv.c, tconv_pads): output_padding
    above the padding where group > 1 or stride > 2 (a depthwise one at stride > 1 with a
    kernel wider than 3 takes its zero-insertion form, with any output_padding: in scope).
    ``kernel``: the dilated kernel, (k - 1) * dilation + 1 per dim."""
    if depthwise and any(stride[d] > 1 and kernel[d] > 3 for d in range(2)):
        return []
    if any(op[d] > padding[d] and (groups > 1 or stride[d] > 2) for d in range(2)):
        return [("output_padding above padding",
                 f"output_padding {op} > padding {padding} with groups {groups}, stride "
                 f"{stride}")]
    return []


def scope_from_graph(graph, node):
    """Violated scope conditions of a convolution_backward node, read from the graph JSON."""
    values = graph["values"]
    args = node["args"]
    weight = args[2]["value"] if isinstance(args[2], dict) and "value" in args[2] else None
    violated = []
    tensors = [a["value"] for a in args[:3] if isinstance(a, dict) and "value" in a]
    if any(values[v].get("dtype") not in FLOAT_DTYPES for v in tensors):
        violated.append(("float", "a non-float tensor argument"))
    if any(len(values[v]["shape"]) != 4 for v in tensors) or weight is None:
        violated.append(("rank", "an argument not 4-D"))
    elements = values[node["output"]]["elements"]
    if elements[0] is None and elements[2] is None and not element_read(graph, node, 1):
        violated.append(("nothing", "no gradient computed"))
    transposed, dilation = args[7], list(args[6])
    if transposed:
        violated.append(("transposed", "transposed=True"))
    shapes_ok = not any(c in ("float", "rank") for c, _ in violated)
    stride = list(args[4])
    stride = stride * (2 // len(stride))
    dilation = dilation * (2 // len(dilation))
    if elements[0] is not None and not transposed and shapes_ok:
        x, gy, w = (values[args[i]["value"]]["shape"] for i in (1, 0, 2))
        padding = list(args[5])
        padding = padding * (2 // len(padding))
        kernel = [dilation[d] * (w[2 + d] - 1) + 1 for d in range(2)]
        op = [x[2 + d] - ((gy[2 + d] - 1) * stride[d] - 2 * padding[d] + kernel[d])
              for d in range(2)]
        violated += tconv_scope(stride, padding, op, args[9],
                                w[0] == args[9] and w[1] == 1, kernel)
    if element_read(graph, node, 1) and any(s > 1 for s in stride) and \
            any(d > 1 for d in dilation):
        violated.append(("strided dilated grad_weight",
                         f"grad_weight with stride {stride} and dilation {dilation}"))
    return violated


def element_read(graph, node, index):
    """Whether element ``index`` of ``node``'s tuple is read: present, and its value or the
    value of a getitem picking it is an argument of some node or a graph output."""
    tup = node["output"]
    element = graph["values"][tup]["elements"][index]
    if element is None:
        return False
    names = {element}
    for n in graph["nodes"]:
        if n["target"] == "getitem" and n["output"] is not None and \
                n["args"][0] == {"value": tup} and n["args"][1] == index:
            names.add(n["output"])
    if any(o["value"] in names for o in graph["outputs"]):
        return True

    def reads(a):
        if isinstance(a, list):
            return any(reads(x) for x in a)
        return isinstance(a, dict) and set(a) == {"value"} and a["value"] in names

    return any(reads(a) for n in graph["nodes"] if n["target"] != "getitem" or
               n["args"][0] != {"value": tup} for a in [*n["args"], *n["kwargs"].values()])


def conditions_named(reason):
    """The scope conditions a reason sentence names (by CONDITIONS' keywords)."""
    low = reason.lower()
    return [c for c, words in CONDITIONS.items() if any(w in low for w in words)]


def _describe(violated):
    return ", ".join(d for _, d in violated) or "in scope"


# --------------------------------------------------------------------------------------------
# the report


def _node_has_float(graph, node):
    values = graph["values"]

    def arg_float(a):
        if isinstance(a, list):
            return any(arg_float(x) for x in a)
        if isinstance(a, dict) and set(a) == {"value"}:
            v = values[a["value"]]
            return v["kind"] == "tensor" and v["dtype"] in FLOAT_DTYPES
        return False

    if any(arg_float(a) for a in node["args"]) or any(arg_float(a)
                                                     for a in node["kwargs"].values()):
        return True
    if node["output"] is None:
        return False
    out = values[node["output"]]
    if out["kind"] == "tensor":
        return out["dtype"] in FLOAT_DTYPES
    return any(e is not None and values[e]["dtype"] in FLOAT_DTYPES for e in out["elements"])


def _defined_by(graph):
    """value id -> index of the graph node defining it (a tuple and each of its elements)."""
    defined_by = {}
    for i, n in enumerate(graph["nodes"]):
        if n["output"] is None:
            continue
        defined_by[n["output"]] = i
        v = graph["values"][n["output"]]
        for e in v.get("elements", []) or []:
            if e is not None:
                defined_by[e] = i
    return defined_by


def _values_in(a, out):
    """Adds the value ids argument ``a`` (lists included) reads to the set ``out``."""
    if isinstance(a, list):
        for x in a:
            _values_in(x, out)
    elif isinstance(a, dict) and set(a) == {"value"}:
        out.add(a["value"])


def dead_nodes(graph):
    """Names of the graph's dead nodes, the ones pass prune removes (src/compiler/passes/prune.c):
    none of whose results (its output; a tuple's elements) is a graph output or read by a live node.
    One sweep from the last node back decides it (nodes are in topological order), so a chain
    dies whole and a tuple lives while one of its getitems does. (prune keeps a dead node a
    skip list selects; such a node is simply listed.)"""
    read, dead = {o["value"] for o in graph["outputs"]}, set()
    for n in reversed(graph["nodes"]):
        out = n["output"]
        results = set() if out is None else \
            {out, *[e for e in graph["values"][out].get("elements") or [] if e is not None]}
        if results & read:
            for a in [*n["args"], *n["kwargs"].values()]:
                _values_in(a, read)
        else:
            dead.add(n["name"])
    return dead


def match_nodes(graph, rnodes):
    """Failures of check 0 (the report's entries against the graph's nodes) and, per entry,
    the graph node it is as traced (None for an entry a pass made)."""
    nodes = graph["nodes"]
    index = {n["name"]: i for i, n in enumerate(nodes)}
    f, traced = [], []
    names = [r.get("name") for r in rnodes]
    dup = sorted({x for x in names if names.count(x) > 1}, key=str)
    if dup:
        f.append(f"report lists nodes {dup} more than once")
    sources = set()
    for r in rnodes:
        name, target = r.get("name"), r.get("target")
        if "source" in r:
            traced.append(None)
            if r["source"] not in index:
                f.append(f"report node {name} ({target}): source {r['source']!r} names no node "
                         "of the graph")
            else:
                sources.add(r["source"])
        elif name in index and nodes[index[name]]["target"] == target:
            traced.append(nodes[index[name]])
        else:
            traced.append(None)
            what = (f"target {target!r}, the graph's is {nodes[index[name]]['target']!r}"
                    if name in index else "no node of the graph has this name")
            f.append(f"report node {name} ({target}) has no source and is not as traced: {what}")
    listed = {n["name"] for n in traced if n is not None}
    dead = dead_nodes(graph)
    for n in nodes:
        if n["name"] not in listed and n["name"] not in sources and \
                n["target"] not in FOLDED_FILLS and n["name"] not in dead:
            f.append(f"graph node {n['name']} ({n['target']}): the report does not list it, no "
                     "entry names it as its source, its op is not a fill folded to a "
                     "constant, and it is not dead (some result is read)")
    order = [index[n["name"]] for n in traced if n is not None]
    if order != sorted(order):
        f.append("report entries of traced nodes are not in the graph's order")
    return f, traced


def check_report(graph, report, soc, conv_scopes=None):
    """(failures, stats) for ``report``, the placement of ``graph`` on ``soc``."""
    f = []
    arch, fp16, _ = SOCS[soc]
    want_top = {"format": "edgegrad.placement", "version": 1, "soc": soc, "htp_arch": arch,
                "fp16": fp16}
    for key, want in want_top.items():
        if report.get(key) != want:
            f.append(f"report {key} = {report.get(key)!r}, want {want!r}")
    rnodes = report.get("nodes")
    if not isinstance(rnodes, list) or not all(isinstance(r, dict) for r in rnodes):
        return f + [f"report nodes {str(rnodes)[:100]}: not a list of objects"], None
    matched, traced = match_nodes(graph, rnodes)
    if matched:
        return f + matched, None
    links = _Links(graph, rnodes, traced)
    for r, n in zip(rnodes, traced):
        made = "" if n is not None else f", made from {r['source']}"
        where = f"node {r['name']} ({r['target']}{made}) on {soc}"
        f += [f"{where}: {msg}" for msg in _check_entry(graph, n, r, rnodes, links, soc,
                                                         conv_scopes)]
    f += _check_partitions(rnodes, report.get("partitions"), links.preds)
    f += _check_flops(graph, rnodes, traced, report.get("flops"))
    stats = _stats(graph, rnodes, traced, conv_scopes)
    top = report.get("flops")
    stats["npu_flops_share"] = top.get("npu_share") if isinstance(top, dict) else None
    return f, stats


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _traced_flops(graph, n):
    """The FLOPs of a traced convolution, convolution_backward, mm or addmm, computed here from
    the graph (cost.h's rule: a multiply-add is 2; each gradient convolution_backward computes
    costs the forward's, grad_bias one per grad_output element; addmm adds its bias); None for
    other ops."""
    values = {v["id"]: v for v in graph["values"]}
    shape = lambda a: values[a["value"]]["shape"]  # noqa: E731
    target = n["target"]
    if target == "aten.convolution.default":
        return 2 * _numel(values[n["output"]]["shape"]) * _numel(shape(n["args"][1])[1:])
    if target == "aten.convolution_backward.default":
        gy = _numel(shape(n["args"][0]))
        fwd = 2 * gy * _numel(shape(n["args"][2])[1:])
        elems = values[n["output"]]["elements"]
        return sum((fwd if e < 2 else gy) for e, v in enumerate(elems[:3]) if v is not None)
    if target in ("aten.mm.default", "aten.addmm.default"):
        out = _numel(values[n["output"]]["shape"])
        k = shape(n["args"][0 if target == "aten.mm.default" else 1])[-1]
        return 2 * out * k + (out if target == "aten.addmm.default" else 0)
    return None


def _check_flops(graph, rnodes, traced, top):
    """Each entry's "flops" is a non-negative integer, a traced conv / matrix product's the
    count computed here; the top-level "flops" sums them: total, npu (the NPU entries'), and
    npu_share = npu / total."""
    f = []
    for r, n in zip(rnodes, traced):
        got = r.get("flops")
        if not isinstance(got, int) or isinstance(got, bool) or got < 0:
            f.append(f"node {r.get('name')}: flops {got!r}, want a non-negative integer")
            continue
        want = _traced_flops(graph, n) if n is not None else None
        if want is not None and got != want:
            f.append(f"node {r['name']} ({r['target']}): flops {got}, want {want}")
    if f:
        return f
    total = sum(r["flops"] for r in rnodes)
    npu = sum(r["flops"] for r in rnodes if r["placement"] == "npu")
    if not isinstance(top, dict) or set(top) != {"total", "npu", "npu_share"}:
        return [f"report flops {top!r}: want an object of total, npu and npu_share"]
    # the totals are sums of unrounded per-node doubles, each rounded once: within 1 per node
    if abs(top["total"] - total) > len(rnodes) or abs(top["npu"] - npu) > len(rnodes):
        f.append(f"report flops {top}: the entries sum to total {total}, npu {npu}")
    share = top["npu"] / top["total"] if top["total"] else 0
    if abs(top["npu_share"] - share) > 1e-9:
        f.append(f"report flops npu_share {top['npu_share']}, want npu / total = {share}")
    return f


class _Links:
    """How the report's entries connect. ``by_name``: name -> entry index; ``producer(v)``: the
    name of the graph node defining value v; ``preds``: per entry, the entries it depends on
    as far as the graph tells — a traced entry reads its arguments' values, each from the entry
    bearing the name of the node that defined it in the graph (a pass keeps that name on the
    node defining a replaced node's output; a folded fill defines none). Entries made by a pass
    get no edges. Where a pass put a node between two traced ones, the edge stands for a path
    through it, so a cycle found here is a real one."""

    def __init__(self, graph, rnodes, traced):
        self.by_name = {r["name"]: i for i, r in enumerate(rnodes)}
        self._defined_by, self._nodes = _defined_by(graph), graph["nodes"]

        def uses(a, out):
            if isinstance(a, list):
                for x in a:
                    uses(x, out)
            elif isinstance(a, dict) and set(a) == {"value"} and a["value"] in self._defined_by:
                out.add(self.producer(a["value"]))

        self.preds = []
        for i, n in enumerate(traced):
            names = set()
            if n is not None:
                for a in [*n["args"], *n["kwargs"].values()]:
                    uses(a, names)
            self.preds.append({self.by_name[x] for x in names
                               if x in self.by_name and self.by_name[x] != i})

    def producer(self, value):
        return self._nodes[self._defined_by[value]]["name"]


def _check_entry(graph, n, r, rnodes, links, soc, conv_scopes):
    """Failures of one entry (without the 'node ...' prefix); ``n`` is its traced graph node,
    or None for an entry a pass made (checked from the report alone)."""
    arch, fp16, _ = SOCS[soc]
    f = []
    if set(r) - {"source"} != ENTRY_KEYS or ("source" in r and not isinstance(r["source"], str)):
        f.append(f"entry keys {sorted(r)}, want {sorted(ENTRY_KEYS)} and optionally 'source'")
    target = r.get("target")
    placement, partition, reason = r.get("placement"), r.get("partition"), r.get("reason")
    if placement == "npu":
        if not isinstance(partition, int) or isinstance(partition, bool) or reason is not None:
            f.append(f"npu entry with partition {partition!r}, reason {reason!r}")
    elif placement == "cpu":
        if partition is not None or not isinstance(reason, str) or not reason.strip() \
                or "\n" in reason:
            f.append(f"cpu entry with partition {partition!r}, reason {reason!r}")
            return f
    else:
        return f + [f"placement {placement!r}"]
    if target == "getitem":
        if n is not None:
            producer_name = links.producer(n["args"][0]["value"])
            if producer_name not in links.by_name:
                return f + [f"its producer {producer_name} is not in the report"]
            producer = rnodes[links.by_name[producer_name]]
            if (placement, partition) != (producer.get("placement"),
                                          producer.get("partition")):
                f.append(f"getitem placed {placement}/{partition}, its producer "
                         f"{producer.get('placement')}/{producer.get('partition')}")
        if placement == "cpu" and reason != FOLLOWS:
            f.append(f"getitem reason {reason!r}, want {FOLLOWS!r}")
        return f
    has_float = _node_has_float(graph, n) if n is not None else None  # None: unknown
    op = display_name(target)
    no_lowering = f"no NPU lowering for {op}"
    if placement == "cpu":
        if reason == FOLLOWS:
            f.append(f"reason {FOLLOWS!r} on a node that is not a getitem")
        if reason.startswith("no NPU lowering for") and reason != no_lowering:
            f.append(f"reason {reason!r} names another op (want {no_lowering!r})")
        if reason.startswith("float ops need"):
            if fp16:
                f.append(f"float reason {reason!r} on {soc}, which has fp16")
            elif has_float is False:
                f.append(f"float reason {reason!r} but the node has no float tensor")
            elif reason != float_reason(soc):
                f.append(f"reason {reason!r}, want {float_reason(soc)!r}")
        m = re.fullmatch(r"(\S+) needs HTP V(\d+)\+; (\S+) is V(\d+)", reason)
        if m:
            if m.group(1) != op or m.group(3) != soc or int(m.group(4)) != arch \
                    or int(m.group(2)) <= arch:
                f.append(f"arch reason {reason!r} inconsistent with {op} on {soc} (V{arch})")
            if has_float and not fp16:
                f.append(f"arch reason {reason!r} where the float gate comes first")
    if has_float and not fp16:
        if placement != "cpu":
            f.append(f"float node on the NPU of {soc}, which has no fp16")
        elif reason not in (no_lowering, float_reason(soc)):
            f.append(f"reason {reason!r}, want {float_reason(soc)!r} (or {no_lowering!r} "
                     "if the op has no builder)")
    if n is not None and target in MIN_MAX_OPS and placement == "npu":
        f += _check_min_max(n)
    if target == CONV_BWD:
        if n is None:
            f.append("a convolution_backward made by a pass: the NPU lowers the traced node "
                     "whole (decompose's skip table)")
        else:
            f += _check_conv_backward(graph, n, placement, reason, soc, conv_scopes)
    return f


# ReluMinMax lowerings: target -> (positional index, keyword, default) of min and of max.
MIN_MAX_OPS = {
    "aten.hardtanh.default": ((1, "min_val", -1.0), (2, "max_val", 1.0)),
    "aten.clamp.default": ((1, "min", None), (2, "max", None)),
}


def _number_arg(node, pos, kw, default):
    """A number argument rounded to float32 (as the builder reads it); None when absent or
    None."""
    a = node["args"][pos] if pos < len(node["args"]) else node["kwargs"].get(kw, default)
    if isinstance(a, dict) and set(a) == {"float"}:
        a = a["float"]
    if a is None or isinstance(a, dict):
        return None
    return struct.unpack("f", struct.pack("f", float(a)))[0] if abs(float(a)) < 3.4e38 \
        else float(a)


def _check_min_max(n):
    """Check 4: a ReluMinMax-lowered node on the NPU has both bounds and min <= max."""
    lo, hi = (_number_arg(n, *spec) for spec in MIN_MAX_OPS[n["target"]])
    if lo is None or hi is None:
        return [f"on the NPU with a bound missing (min {lo}, max {hi}): ReluMinMax needs both"]
    if not lo <= hi:
        return [f"on the NPU with min {lo} > max {hi}: ReluMinMax needs min_value <= max_value"]
    return []


def _check_conv_backward(graph, n, placement, reason, soc, conv_scopes):
    arch, fp16, _ = SOCS[soc]
    violated = scope_from_graph(graph, n)
    f = []
    if conv_scopes is not None and n["name"] in conv_scopes:
        from_config = conv_scopes[n["name"]]
        if [c for c, _ in from_config] != [c for c, _ in violated]:
            f.append(f"harness: scope from the config ({_describe(from_config)}) != scope "
                     f"from the graph ({_describe(violated)})")
    scope = f"scope: {_describe(violated)}"
    if not fp16 or arch < 69:
        if placement != "cpu":
            f.append(f"on the NPU of {soc} (no fp16), want the CPU with "
                     f"{float_reason(soc)!r}; {scope}")
        elif violated and violated[0][0] == "float":
            pass  # no float tensor: the float gate does not apply
        elif reason not in (float_reason(soc), "no NPU lowering for aten.convolution_backward"):
            f.append(f"reason {reason!r}, want {float_reason(soc)!r}; {scope}")
        return f
    if reason == "no NPU lowering for aten.convolution_backward":
        want = "npu" if not violated else "a builder reason"
        return f + [f"want {want} ({scope}), got cpu: {reason!r} (no builder registered)"]
    if not violated:
        if placement != "npu":
            f.append(f"want npu ({scope}), got cpu: {reason!r}")
        return f
    if placement == "npu":
        return f + [f"on the NPU but out of scope ({_describe(violated)})"]
    named = conditions_named(reason)
    wanted = {c for c, _ in violated}
    if len(named) != 1 or named[0] not in wanted:
        f.append(f"reason {reason!r} names {named or 'no condition'}; want exactly one of "
                 f"the violated conditions ({_describe(violated)})")
    return f


def _check_partitions(rnodes, partitions, preds):
    """Partitions: numbered in order of their first node, exactly the NPU nodes, acyclic."""
    if not isinstance(partitions, list):
        return [f"report partitions {partitions!r}"]
    index = {r["name"]: i for i, r in enumerate(rnodes)}
    by_id = collections.defaultdict(list)
    for i, r in enumerate(rnodes):
        if r.get("placement") == "npu" and isinstance(r.get("partition"), int):
            by_id[r["partition"]].append(i)
    f = []
    listed = []
    for k, p in enumerate(partitions):
        names = p.get("nodes") if isinstance(p, dict) else None
        if not isinstance(p, dict) or p.get("id") != k or not isinstance(names, list) \
                or any(x not in index for x in names):
            f.append(f"partition {k}: malformed entry {p!r}"[:300])
            continue
        members = [index[x] for x in names]
        listed.append(members)
        if members != by_id.get(k, []):
            f.append(f"partition {k}: lists {names}, but the nodes placed in it are "
                     f"{[rnodes[i]['name'] for i in by_id.get(k, [])]}")
    if set(by_id) - set(range(len(partitions))):
        f.append(f"nodes placed in partitions {sorted(set(by_id) - set(range(len(partitions))))}"
                 " that the report does not list")
    firsts = [m[0] for m in listed if m]
    if firsts != sorted(firsts) or any(not m for m in listed):
        f.append("partitions are not numbered in order of their first node (or one is empty)")
    if not f:
        f += _check_acyclic(rnodes, preds)
    return f


def _check_acyclic(rnodes, preds):
    """The graph of partitions and CPU nodes must have no cycle."""
    def vertex(i):
        r = rnodes[i]
        return ("p", r["partition"]) if r["placement"] == "npu" else ("n", i)

    succ = collections.defaultdict(set)
    indeg = collections.Counter()
    verts = {vertex(i) for i in range(len(rnodes))}
    for i, ps in enumerate(preds):
        for p in ps:
            a, b = vertex(p), vertex(i)
            if a != b and b not in succ[a]:
                succ[a].add(b)
                indeg[b] += 1
    ready = [v for v in verts if indeg[v] == 0]
    seen = 0
    while ready:
        v = ready.pop()
        seen += 1
        for w in succ[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    if seen != len(verts):
        return ["the partitions and CPU nodes form a cycle (a partition needs its own result)"]
    return []


def _stats(graph, rnodes, traced, conv_scopes):
    """Counts for the summary, over the report's (compiled graph's) entries: nodes (getitems
    excluded), NPU nodes, per-target [npu, cpu], convolution_backward nodes in scope / on the
    NPU, and the ones whose tuple holds a grad_weight element that nothing reads (PyTorch's
    unasked one); check_report adds npu_flops_share, the report's NPU share of the FLOPs."""
    s = {"nodes": 0, "npu": 0, "by_target": collections.defaultdict(lambda: [0, 0]),
         "conv_bwd": 0, "conv_bwd_in_scope": 0, "conv_bwd_npu": 0,
         "conv_bwd_unread_gw": 0, "reasons": set()}
    for n, r in zip(traced, rnodes):
        if r["target"] == "getitem":
            continue
        npu = r["placement"] == "npu"
        s["nodes"] += 1
        s["npu"] += npu
        s["by_target"][r["target"]][0 if npu else 1] += 1
        s["reasons"].add((r["target"], r["reason"]))  # None on the NPU
        if n is not None and n["target"] == CONV_BWD:
            violated = scope_from_graph(graph, n)
            s["conv_bwd"] += 1
            s["conv_bwd_in_scope"] += not violated
            s["conv_bwd_npu"] += npu
            elements = graph["values"][n["output"]]["elements"]
            if elements[1] is not None and not element_read(graph, n, 1):
                s["conv_bwd_unread_gw"] += 1
    s["by_target"] = dict(s["by_target"])
    return s


def builder_consistency(triples):
    """Failures of the rule: an op's reason is 'no NPU lowering for aten.X' on every SoC with
    SoC where the op appears, or on none (the builder gate comes first, so a SoC without fp16
    says it exactly where an fp16 SoC does). ``triples``: iterable of (soc, target, reason),
    reason None for a node on the NPU."""
    no_lowering = collections.defaultdict(set)
    other = collections.defaultdict(set)
    for soc, target, reason in triples:
        if target == "getitem":
            continue
        if reason == f"no NPU lowering for {display_name(target)}":
            no_lowering[target].add(soc)
        else:
            other[target].add(soc)
    f = []
    for target in sorted(set(no_lowering) & set(other)):
        f.append(f"{target}: 'no NPU lowering' on {sorted(no_lowering[target])} but a builder "
                 f"answered on {sorted(other[target])}")
    return f
