"""HTP cycles per training step, from `make htp-check`'s JSON (build/htp-check.json).

    python3 bench/htp_step_cycles.py build/htp-check.json [--cases resnet18_full,...] [--soc SM8650]

For each case (a torchvision family x regime of `make htp-check`, or a conformance case): the
emulated HTP cycles of its NPU partitions summed over the step (each partition's cycles are the
smallest of the two runs htp-check makes, as bench/htp_cycles.md advises), the share of them
QNN spent in Transpose ops (the layout conversions of the NHWC partitions: edgegrad's own
Transposes and those the QNN execution provider kept), the partitions and the QNN ops QNN
built. Prints a Markdown table.

What the numbers are: QNN's HTP emulator counts cycles of its x86 emulation, which move with the
host's load and do not rank ops by their cost on a phone (bench/htp_cycles.md has the evidence);
read them as the emulator's measure of the step, not as NPU time.
"""
import argparse
import json
import sys

DEFAULT_CASES = "resnet18_full,mobilenet_v2_full,squeezenet1_1_full"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("json")
    p.add_argument("--cases", default=DEFAULT_CASES)
    p.add_argument("--soc", default="SM8650")
    args = p.parse_args(argv)
    with open(args.json) as f:
        rows = json.load(f)
    print("| step | partitions | QNN ops built | HTP cycles (emulated) | in Transpose |")
    print("|---|---:|---:|---:|---:|")
    missing = []
    for case in args.cases.split(","):
        parts = [r for r in rows if r["case"] == case and r["soc"] == args.soc and
                 r.get("partition")]
        if not parts or any(r.get("cycles") is None for r in parts):
            missing.append(case)
            continue
        total = sum(r["cycles"] for r in parts)
        transposes = sum(r.get("cycles_by_type", {}).get("Transpose", 0) for r in parts)
        built = sum(sum(r.get("qnn_built", {}).values()) for r in parts)
        print(f"| {case} | {len(parts)} | {built} | {total / 1e6:.1f} M | "
              f"{100 * transposes / total:.1f} % |")
    if missing:
        print(f"htp_step_cycles: no cycles for {', '.join(missing)} on {args.soc} in "
              f"{args.json} (run make htp-check)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
