#!/usr/bin/python3
"""Self-test of placement.py, the NPU-path report checks of the conformance suite: reports
written here by hand (correct ones, then each with one thing wrong) for graphs exported from
sweep configurations must pass or fail exactly as intended. Needs no edgegrad binary.

    PYTHONPATH=python /usr/bin/python3 tests/conformance/test_placement.py

Prints one line per failed check and last `placement self-test: N passed, M failed`; exit 0
only if every check passed.
"""
import copy
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "python")]

import cases  # noqa: E402
import conv_configs  # noqa: E402
import placement  # noqa: E402

V68 = "float ops need HTP V69+ with fp16; SM8350 is V68"
NO_CONV = "no NPU lowering for aten.convolution_backward"


def config(**forced):
    """A sweep configuration with the given fields (seeded, valid)."""
    import random
    rng = random.Random(7)
    return conv_configs._draw(rng, 0, **forced)


def export(c, folder, name):
    os.makedirs(os.path.join(folder, name), exist_ok=True)
    built = cases.build_conv(c, os.path.join(folder, name, "model"), 1234)
    with open(built.json_path, encoding="utf-8") as f:
        return json.load(f), built.conv_scopes


def make_report(graph, soc, placements):
    """A report placing each non-getitem node as ``placements[name]`` = reason (None: NPU;
    default: "no NPU lowering for aten.X"); getitems follow; one partition per NPU node."""
    arch, fp16, _ = placement.SOCS[soc]
    entries, part_of, partitions = [], {}, []
    defined_by = {}
    for n in graph["nodes"]:
        out = graph["values"][n["output"]] if n["output"] is not None else None
        for e in (out or {}).get("elements", []) or []:
            if e is not None:
                defined_by[e] = n["name"]
        if n["output"] is not None:
            defined_by[n["output"]] = n["name"]
    for n in graph["nodes"]:
        if n["target"] == "getitem":
            producer = defined_by[n["args"][0]["value"]]
            k = part_of.get(producer)
            if k is not None:
                partitions[k]["nodes"].append(n["name"])
            entries.append({"name": n["name"], "target": n["target"],
                            "placement": "npu" if k is not None else "cpu", "partition": k,
                            "reason": None if k is not None else "follows its producer",
                            "flops": 0})
            continue
        default = f"no NPU lowering for {placement.display_name(n['target'])}"
        reason = placements.get(n["name"], default)
        if reason is None:
            part_of[n["name"]] = len(partitions)
            partitions.append({"id": len(partitions), "nodes": [n["name"]]})
        entries.append({"name": n["name"], "target": n["target"],
                        "placement": "cpu" if reason else "npu",
                        "partition": part_of.get(n["name"]), "reason": reason,
                        "flops": placement._traced_flops(graph, n) or 0})
    total = sum(e["flops"] for e in entries)
    npu = sum(e["flops"] for e in entries if e["placement"] == "npu")
    return {"format": "edgegrad.placement", "version": 1, "soc": soc, "product": "x",
            "htp_arch": arch, "fp16": fp16,
            "flops": {"total": total, "npu": npu, "npu_share": npu / total if total else 0},
            "nodes": entries, "partitions": partitions, "warnings": []}


def decomposed(report, name, soc):
    """``report`` as if a pass had replaced CPU node ``name`` by a sub.Tensor and a mul.Tensor
    (as decompose does mse_loss_backward): the last keeps the name, both carry its source."""
    r = copy.deepcopy(report)
    k = next(i for i, e in enumerate(r["nodes"]) if e["name"] == name)
    made = [{"name": f"{name}_sub", "target": "aten.sub.Tensor"},
            {"name": name, "target": "aten.mul.Tensor"}]
    for e in made:
        e.update(placement="cpu", partition=None, source=name, flops=0,
                 reason=V68 if soc == "SM8350" else f"no NPU lowering for {e['target']}")
    r["nodes"][k:k + 1] = made
    return r


def fixture(name):
    with open(os.path.join(HERE, "..", "data", name + ".json"), encoding="utf-8") as f:
        return json.load(f)


def compiled_graph_cases(t):
    """Reports of a compiled graph (the committed step fixtures): nodes made by passes (with
    "source"), folded fills, and what must still fail."""
    check = placement.check_report
    mse = fixture("pass_mse_step")  # mse_loss_backward: decompose makes sub + mul.Scalar + mul
    cpu_everywhere = {n["name"]: V68 for n in mse["nodes"]}
    reports = {"SM8350": make_report(mse, "SM8350", cpu_everywhere),
               "SM8650": make_report(mse, "SM8650", {"convolution_backward": None})}
    for soc, good in reports.items():
        t.expect(f"as traced on {soc}", check(mse, good, soc)[0])
        t.expect(f"a decomposed node on {soc}",
                 check(mse, decomposed(good, "mse_loss_backward", soc), soc)[0])
    good = reports["SM8650"]
    r = decomposed(good, "mse_loss_backward", "SM8650")
    r["nodes"][0]["source"] = "nosuch"
    t.expect("a source naming no graph node", check(mse, r, "SM8650")[0], "names no node")
    r = decomposed(good, "mse_loss_backward", "SM8650")
    for e in r["nodes"]:
        e.pop("source", None)
    t.expect("a replaced node without source", check(mse, r, "SM8650")[0],
             "has no source and is not as traced")
    r = decomposed(good, "mse_loss_backward", "SM8650")
    next(e for e in r["nodes"] if e["name"] == "mse_loss_backward")["reason"] = \
        "no NPU lowering for aten.sub.Tensor"
    t.expect("a made node's reason naming another op", check(mse, r, "SM8650")[0],
             "names another op")
    r = decomposed(reports["SM8350"], "mse_loss_backward", "SM8350")
    t.expect("a float reason on an fp16 SoC for a made node",
             check(mse, dict(r, soc="SM8650", htp_arch=75, fp16=True), "SM8650")[0],
             "which has fp16")
    r = copy.deepcopy(good)
    r["nodes"][0], r["nodes"][1] = r["nodes"][1], r["nodes"][0]
    t.expect("traced nodes out of order", check(mse, r, "SM8650")[0], "graph's order")
    r = copy.deepcopy(good)
    r["nodes"].append(dict(r["nodes"][0]))
    t.expect("a node listed twice", check(mse, r, "SM8650")[0], "more than once")
    r = copy.deepcopy(good)
    r["nodes"][0]["extra"] = 1
    t.expect("an unknown entry key", check(mse, r, "SM8650")[0], "entry keys")
    r = decomposed(good, "mse_loss_backward", "SM8650")
    next(e for e in r["nodes"] if e["name"] == "mse_loss_backward_sub")["reason"] = \
        placement.FOLLOWS
    t.expect("a made node that 'follows its producer'", check(mse, r, "SM8650")[0],
             "not a getitem")
    # a fill decompose folds into a constant may be absent from the report; any other node not
    tiny = fixture("tiny_step")
    good = make_report(tiny, "SM8350", {n["name"]: V68 for n in tiny["nodes"]})
    fills = [e for e in good["nodes"] if e["target"] in placement.FOLDED_FILLS]
    t.expect("tiny_step holds a fill", [] if fills else ["no fill in tiny_step"])
    r = copy.deepcopy(good)
    r["nodes"] = [e for e in r["nodes"] if e["target"] not in placement.FOLDED_FILLS]
    t.expect("folded fills absent", check(tiny, r, "SM8350")[0])
    r = copy.deepcopy(good)
    r["nodes"] = [e for e in r["nodes"] if e["target"] != "aten.relu.default"]
    t.expect("a relu absent", check(tiny, r, "SM8350")[0], "the report does not list it")
    dead_node_cases(t)
    min_max_cases(t)


def min_max_graph(target, bounds):
    """A one-node graph: `target` (hardtanh / clamp) of a float32 input with args `bounds`."""
    return {"values": [{"id": 0, "kind": "tensor", "dtype": "float32", "shape": [2, 3]},
                       {"id": 1, "kind": "tensor", "dtype": "float32", "shape": [2, 3]}],
            "inputs": [{"name": "x", "value": 0}], "statics": [],
            "nodes": [{"name": "act", "target": target, "args": [{"value": 0}, *bounds],
                       "kwargs": {}, "output": 1}],
            "outputs": [{"name": "y", "value": 1}]}


def min_max_cases(t):
    """Check 4: hardtanh / clamp (ReluMinMax) on the NPU only with both bounds, min <= max."""
    check = placement.check_report
    ht, cl = "aten.hardtanh.default", "aten.clamp.default"
    decline = "min_val 1 > max_val -1: ReluMinMax needs min_value <= max_value"
    for name, target, bounds, want in [
            ("hardtanh defaults", ht, [], None),
            ("relu6", ht, [0.0, 6.0], None),
            ("hardtanh equal bounds", ht, [{"float": 0.5}, {"float": 0.5}], None),
            ("hardtanh min > max", ht, [{"float": 1.0}, {"float": -1.0}], "min_value <= max"),
            ("hardtanh default max below min", ht, [{"float": 2.0}], "min_value <= max"),
            ("clamp both bounds", cl, [{"float": -1.0}, {"float": 1.0}], None),
            ("clamp min only", cl, [{"float": -1.0}], "bound missing"),
            ("clamp max None", cl, [{"float": 1.0}, None], "bound missing"),
            ("clamp min > max", cl, [3, 2], "min_value <= max")]:
        g = min_max_graph(target, bounds)
        t.expect(f"{name} on the NPU", check(g, make_report(g, "SM8650", {"act": None}),
                                             "SM8650")[0], want)
        t.expect(f"{name} on the CPU", check(g, make_report(g, "SM8650", {"act": decline}),
                                             "SM8650")[0])


def dead_node_cases(t):
    """Nodes pass prune removes (dead: no result read) may be absent from the report; a live
    node may not. dead_nodes against hand-worked answers: a detach chain dies whole, a tuple
    lives while one getitem is read, an output's definer lives."""
    check = placement.check_report
    qnet = fixture("quant_net")  # make_fx's detach chains on both relus, nobody reads them
    detaches = {n["name"] for n in qnet["nodes"] if n["target"] == "aten.detach.default"}
    t.expect("quant_net holds 6 detach nodes", [] if len(detaches) == 6 else [str(detaches)])
    t.expect("quant_net's dead nodes are its detaches",
             [] if placement.dead_nodes(qnet) == detaches else
             [f"dead_nodes {sorted(placement.dead_nodes(qnet))}, want {sorted(detaches)}"])
    good = make_report(qnet, "SM8350", {n["name"]: V68 for n in qnet["nodes"]})
    t.expect("quant_net as traced", check(qnet, good, "SM8350")[0])
    r = copy.deepcopy(good)
    r["nodes"] = [e for e in r["nodes"] if e["name"] not in detaches]
    t.expect("dead detaches absent", check(qnet, r, "SM8350")[0])
    r = copy.deepcopy(good)
    r["nodes"] = [e for e in r["nodes"] if e["name"] != "relu_1"]
    t.expect("a live relu (the output's) absent", check(qnet, r, "SM8350")[0],
             "it is not dead")

    def tensor(i):
        return {"id": i, "kind": "tensor", "dtype": "float32", "shape": [2, 2]}

    def node(name, target, args, out):
        return {"name": name, "target": target, "args": args, "kwargs": {}, "output": out}

    values = [tensor(0), {"id": 1, "kind": "tuple", "elements": [2, 3]}, tensor(2), tensor(3),
              tensor(4), tensor(5), tensor(6), {"id": 7, "kind": "tuple", "elements": [8, 9]},
              tensor(8), tensor(9), tensor(10), tensor(11)]
    split = "aten.split_with_sizes.default"
    graph = {"values": values, "outputs": [{"name": "y", "value": 11}], "nodes": [
        node("split", split, [{"value": 0}, [1, 1], 1], 1),
        node("getitem", "getitem", [{"value": 1}, 0], 4),
        node("getitem_1", "getitem", [{"value": 1}, 1], 5),
        node("detach", "aten.detach.default", [{"value": 5}], 6),
        node("split_1", split, [{"value": 0}, [1, 1], 1], 7),
        node("getitem_2", "getitem", [{"value": 7}, 0], 10),
        node("cat", "aten.cat.default", [[{"value": 4}, {"value": 0}], 1], 11)]}
    want = {"getitem_1", "detach", "split_1", "getitem_2"}
    got = placement.dead_nodes(graph)
    t.expect("dead_nodes: tuples and chains",
             [] if got == want else [f"dead_nodes {sorted(got)}, want {sorted(want)}"])


class Checker:
    def __init__(self):
        self.passed, self.failed = 0, 0

    def expect(self, label, failures, want_substring=None):
        """want_substring None: no failure expected; else some failure must contain it."""
        ok = not failures if want_substring is None else any(
            want_substring in f for f in failures)
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            want = "no failure" if want_substring is None else repr(want_substring)
            print(f"FAIL {label}: want {want}, got {failures}")


def main():
    t = Checker()
    folder = tempfile.mkdtemp(prefix="edgegrad-placement-test-")
    in_scope = config(mask=(True, False, False), dilation=1, **conv_configs.NPU_SCOPE)
    dilated = config(mask=(True, False, False), dilation=2, **conv_configs.NPU_SCOPE)
    transposed = config(mask=(True, False, False), dilation=1, transposed=True)
    g_in, scopes_in = export(in_scope, folder, "in_scope")
    g_dl, scopes_dl = export(dilated, folder, "dilated")
    g_tr, scopes_tr = export(transposed, folder, "transposed")
    # out of scope by one condition: grad_weight's Conv2d would have stride and dilation > 1
    strided_dilated = config(mask=(False, True, False), dilation=2, static=False,
                             **{**conv_configs.NPU_SCOPE, "stride": 2})
    g_sd, scopes_sd = export(strided_dilated, folder, "strided_dilated")
    SD_REASON = ("grad_weight with stride [2, 2] and dilation [2, 2]: its Conv2d would have both "
                 "> 1, which QNN HTP refuses for some shapes (measured)")
    # [T, F, T]: PyTorch 1.13 returns grad_weight unasked (nothing reads it); [T, T, F] reads it
    unread_gw = config(mask=(True, False, True), dilation=1, **conv_configs.NPU_SCOPE)
    # stride 1: with stride 2 too, grad_weight's Conv2d would have both > 1 (out of scope)
    read_gw = config(mask=(False, True, False), dilation=2, group_kind="depthwise",
                     static=False, **{**conv_configs.NPU_SCOPE, "stride": 1})
    g_ug, scopes_ug = export(unread_gw, folder, "unread_gw")
    g_rg, scopes_rg = export(read_gw, folder, "read_gw")
    cb = "convolution_backward"
    check = placement.check_report

    # the scope itself
    t.expect("in-scope config has no violation", scopes_in[cb])
    t.expect("dilation 2 with grad_input is in scope (the dilated kernel)", scopes_dl[cb])
    t.expect("strided dilated grad_weight violates it",
             [] if [c for c, _ in scopes_sd[cb]] == ["strided dilated grad_weight"]
             else [str(scopes_sd)], None)
    t.expect("transposed violates transposed",
             [] if [c for c, _ in scopes_tr[cb]] == ["transposed"] else [str(scopes_tr)], None)

    node = next(n for n in g_ug["nodes"] if n["target"] == placement.CONV_BWD)
    t.expect("[T, F, T] traces an unread grad_weight element",
             [] if g_ug["values"][node["output"]]["elements"][1] is not None
             and not placement.element_read(g_ug, node, 1) else ["no unread element"])
    t.expect("an unread grad_weight is in scope", scopes_ug[cb] + placement.scope_from_graph(
        g_ug, node))
    t.expect("a read grad_weight (depthwise, dilated, trainable weight) is in scope",
             scopes_rg[cb])
    t.expect("unread grad_weight on the NPU",
             check(g_ug, make_report(g_ug, "SM8650", {cb: None}), "SM8650", scopes_ug)[0])
    t.expect("read grad_weight on the NPU",
             check(g_rg, make_report(g_rg, "SM8650", {cb: None}), "SM8650", scopes_rg)[0])
    t.expect("read grad_weight declined", check(g_rg, make_report(g_rg, "SM8650", {
        cb: "grad_weight is not supported on the NPU (output_mask [False, True, False])"}),
        "SM8650", scopes_rg)[0], "want npu")

    # correct reports pass
    for soc in ("SM8450", "SM8650", "SM8850"):
        t.expect(f"in scope on the NPU of {soc}",
                 check(g_in, make_report(g_in, soc, {cb: None}), soc, scopes_in)[0])
        t.expect(f"dilation with grad_input on the NPU of {soc}",
                 check(g_dl, make_report(g_dl, soc, {cb: None}), soc, scopes_dl)[0])
        t.expect(f"strided dilated grad_weight declined on {soc}",
                 check(g_sd, make_report(g_sd, soc, {cb: SD_REASON}), soc, scopes_sd)[0])
        t.expect(f"transposed declined on {soc}",
                 check(g_tr, make_report(g_tr, soc, {cb: "transposed=True unsupported"}),
                       soc, scopes_tr)[0])
    t.expect("V68 reason on SM8350",
             check(g_in, make_report(g_in, "SM8350", {cb: V68}), "SM8350", scopes_in)[0])
    t.expect("no builder on SM8350 is accepted",
             check(g_in, make_report(g_in, "SM8350", {}), "SM8350", scopes_in)[0])

    # each wrong report fails, naming the problem
    t.expect("in scope but on the CPU",
             check(g_in, make_report(g_in, "SM8650", {cb: "transposed=False unsupported"}), "SM8650",
                   scopes_in)[0], "want npu")
    t.expect("no builder on an fp16 SoC",
             check(g_in, make_report(g_in, "SM8650", {}), "SM8650", scopes_in)[0],
             "no builder registered")
    t.expect("out of scope but on the NPU",
             check(g_sd, make_report(g_sd, "SM8650", {cb: None}), "SM8650", scopes_sd)[0],
             "out of scope")
    t.expect("in scope (dilated grad_input) but on the CPU",
             check(g_dl, make_report(g_dl, "SM8650", {
                 cb: "dilation [2, 2] unsupported: TransposeConv2d has no dilation"}), "SM8650",
                   scopes_dl)[0], "want npu")
    t.expect("reason naming a condition that holds",
             check(g_sd, make_report(g_sd, "SM8650", {cb: "transposed=True unsupported"}),
                   "SM8650", scopes_sd)[0], "want exactly one")
    t.expect("reason naming two conditions",
             check(g_sd, make_report(g_sd, "SM8650", {
                 cb: "its Conv2d would have both > 1 and transposed must be False"}), "SM8650",
                   scopes_sd)[0],
             "want exactly one")
    t.expect("partitioner's placeholder reason",
             check(g_sd, make_report(g_sd, "SM8650", {
                 cb: "the NPU lowering of aten.convolution_backward declined this node"}),
                 "SM8650", scopes_sd)[0], "names no condition")
    t.expect("on the NPU of SM8350",
             check(g_in, make_report(g_in, "SM8350", {cb: None}), "SM8350", scopes_in)[0],
             "no fp16")
    t.expect("builder reason before the float gate on SM8350",
             check(g_sd, make_report(g_sd, "SM8350", {cb: SD_REASON}), "SM8350", scopes_sd)[0],
             V68)
    t.expect("float reason on an fp16 SoC",
             check(g_sd, make_report(g_sd, "SM8450", {cb: V68}), "SM8450", scopes_sd)[0],
             "which has fp16")
    t.expect("scope from config disagrees with the graph",
             check(g_in, make_report(g_in, "SM8650", {cb: None}), "SM8650", scopes_sd)[0],
             "harness: scope from the config")

    # format
    good = make_report(g_in, "SM8650", {cb: None})
    r = copy.deepcopy(good)
    # getitem reads grad_input, the output (the last getitems pick None elements: dead)
    r["nodes"] = [e for e in r["nodes"] if e["name"] != "getitem"]
    t.expect("a node missing", check(g_in, r, "SM8650")[0], "the report does not list it")

    # the report lists the compiled graph: entries a pass made carry "source"
    compiled_graph_cases(t)
    r = copy.deepcopy(good)
    r["htp_arch"] = 73
    t.expect("wrong htp_arch", check(g_in, r, "SM8650")[0], "htp_arch")
    r = copy.deepcopy(good)
    getitem = next(e for e in r["nodes"] if e["target"] == "getitem" and e["placement"] == "npu")
    getitem.update(placement="cpu", partition=None, reason="follows its producer")
    r["partitions"][0]["nodes"].remove(getitem["name"])
    t.expect("getitem not following its producer", check(g_in, r, "SM8650")[0],
             "its producer")
    r = copy.deepcopy(good)
    r["partitions"][0]["nodes"] = r["partitions"][0]["nodes"][:1]
    t.expect("partition listing too few nodes", check(g_in, r, "SM8650")[0], "partition 0")
    r = copy.deepcopy(good)
    r["nodes"][0]["reason"] = "x"
    t.expect("npu entry with a reason", check(g_in, r, "SM8650")[0], "npu entry")
    r = make_report(g_in, "SM8650", {cb: "no NPU lowering for aten.convolution"})
    t.expect("no-lowering reason naming another op", check(g_in, r, "SM8650")[0],
             "names another op")
    r = make_report(g_in, "SM8450", {cb: "aten.convolution_backward needs HTP V73+; SM8450 is V75"})
    t.expect("arch reason with the wrong arch", check(g_in, r, "SM8450")[0], "inconsistent")

    # the cross-SoC rule
    t.expect("consistent builders", placement.builder_consistency(
        [("SM8450", "aten.relu.default", None), ("SM8350", "aten.relu.default", V68),
         ("SM8450", "aten.t.default", "no NPU lowering for aten.t"),
         ("SM8350", "aten.t.default", "no NPU lowering for aten.t")]))
    t.expect("no builder on SM8350 but one on SM8450", placement.builder_consistency(
        [("SM8450", "aten.relu.default", None),
         ("SM8350", "aten.relu.default", "no NPU lowering for aten.relu")]), "aten.relu")

    # a cycle through a CPU node: conv -> cpu -> npu within one partition
    acyclic = placement._check_acyclic(
        [{"placement": "npu", "partition": 0}, {"placement": "cpu", "partition": None},
         {"placement": "npu", "partition": 0}], [set(), {0}, {1}])
    t.expect("cycle through a CPU node", acyclic, "cycle")

    import shutil
    shutil.rmtree(folder, ignore_errors=True)
    print(f"placement self-test: {t.passed} passed, {t.failed} failed")
    return 0 if t.passed and not t.failed else 1


if __name__ == "__main__":
    sys.exit(main())
