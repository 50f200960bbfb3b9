#!/usr/bin/env python3
"""Figures and checks of tests/gpu/war_story.cu under `opscope gpu` and `opscope gpu --metrics`,
for tests/gpu/device_check.sh. Standard library only. Prints Markdown: every figure, then one
PASS/FAIL line per check; exit 1 if any check fails.

usage: check_war_story.py WORK_DIR
  WORK_DIR holds alone-*.out (the program alone), traced.json/.out (under opscope gpu) and
  metrics.json/.out/.err (under opscope gpu --metrics).
"""
import glob
import json
import os
import re
import statistics
import sys

KERNELS = {"attn_scores": ("attention", "memory"), "sgemm_tiled": ("gemm", "compute"),
           "bias_small": ("bias", "latency")}
MIB = 1 << 20


def war_line(path):
    """The WAR_STORY line of one run's stdout as a dict (empty if missing)."""
    try:
        text = open(path).read()
    except OSError:
        return {}
    m = re.findall(r"^WAR_STORY (.*)$", text, re.M)
    if not m:
        return {}
    return dict(re.findall(r'(\w+)=("[^"]*"|\S+)', m[-1]))


def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None


def main():
    work = sys.argv[1]
    failures = []

    def check(ok, what):
        print(("PASS  " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    alone = [war_line(p) for p in sorted(glob.glob(os.path.join(work, "alone-*.out")))]
    alone_ms = [float(a["loop_ms"]) for a in alone if "loop_ms" in a]
    traced_line = war_line(os.path.join(work, "traced.out"))
    metrics_line = war_line(os.path.join(work, "metrics.out"))
    print("## war_story figures\n")
    if alone:
        a = alone[-1]
        print(f"- device: {a.get('device', '?')} (cc {a.get('cc', '?')})")
        print(f"- alone: loop median {statistics.median(alone_ms):.3f} ms over {len(alone_ms)} runs "
              f"({', '.join(f'{x:.3f}' for x in alone_ms)}); per launch by CUDA events: attention "
              f"{a.get('attention_ms')} ms, gemm {a.get('gemm_ms')} ms, bias {a.get('bias_ms')} ms")
    for name, line in (("under opscope gpu", traced_line), ("under opscope gpu --metrics", metrics_line)):
        if line:
            slow = (float(line["loop_ms"]) / statistics.median(alone_ms) - 1) * 100 if alone_ms else float("nan")
            print(f"- {name}: loop {line['loop_ms']} ms ({slow:+.1f}% vs. alone); CUDA events: attention "
                  f"{line.get('attention_ms')} ms, gemm {line.get('gemm_ms')} ms, bias {line.get('bias_ms')} ms")
    print()

    traced = load(os.path.join(work, "traced.json"))
    check(traced is not None, "opscope gpu wrote a profile of war_story")
    if traced:
        g = traced["gpu"]
        iterations = int(traced_line.get("iterations", 0))
        by_name = {}
        for k in g["kernels"]:
            base = k["name"].split("(")[0]
            by_name.setdefault(base, []).append(k)
        print("### Kernel times (opscope gpu, no --metrics)\n")
        for base, (layer, _) in KERNELS.items():
            ks = by_name.get(base, [])
            if not ks:
                check(False, f"kernel {base} traced")
                continue
            mean_ms = statistics.mean((k["end_ns"] - k["start_ns"]) / 1e6 for k in ks)
            event = float(traced_line.get(f"{layer}_ms", "nan"))
            ratio = mean_ms / event if event > 0 else float("nan")
            print(f"- {base}: {len(ks)} launches, mean {mean_ms:.4f} ms (CUDA events {event:.4f} ms, ratio {ratio:.3f}); "
                  f"regs/thread {ks[0]['registers_per_thread']}, shared/block "
                  f"{ks[0]['static_shared_bytes'] + ks[0]['dynamic_shared_bytes']} B, "
                  f"theoretical occupancy {100 * ks[0]['occupancy']:.0f}%")
            ranges = traced["ranges"]
            in_layer = sum(1 for k in ks if k["range"] >= 0 and ranges[k["range"]]["name"] == layer)
            check(in_layer >= iterations, f"{base} attributed to NVTX range '{layer}' ({in_layer} launches)")
            if base != "bias_small":  # a few microseconds: event resolution dominates
                check(0.9 <= ratio <= 1.1, f"{base} time within 10% of CUDA events (ratio {ratio:.3f})")
        copies = [m for m in g["memcpys"] if m["kind"] == "HtoD" and m["bytes"] == MIB]
        check(len(copies) >= iterations, f"1 MiB HtoD config copy every iteration ({len(copies)})")
        titles = [f["title"] for f in traced.get("findings", [])]
        check(any("1 MiB" in t or "1.0 MiB" in t or "repeated" in t.lower() for t in titles),
              "a finding flags the repeated 1 MiB copy")
        print("\n### Findings (opscope gpu)\n")
        for f in traced.get("findings", []):
            print(f"- [{f['severity']}] {f['title']}")
        report = open(os.path.join(work, "traced.out")).read() if os.path.exists(os.path.join(work, "traced.out")) else ""
        split = re.search(r"^ (\d+) 'infer' iterations: .*$", report, re.M)
        print("\n### CPU/GPU overlap (opscope gpu)\n")
        print(f"- {split.group(0).strip() if split else 'no iteration line in the report'}")
        overlap = re.search(r"overlapped \S+ \((\d+)%\)", split.group(0)) if split else None
        check(overlap is not None and int(overlap.group(1)) > 0,
              f"CPU pre-processing overlaps GPU work ({overlap.group(1) if overlap else '?'}%)")
        print()

    metrics = load(os.path.join(work, "metrics.json"))
    check(metrics is not None, "opscope gpu --metrics wrote a profile")
    if metrics:
        g = metrics["gpu"]
        print(f"### Per-kernel throughput (opscope gpu --metrics, {g.get('metrics_passes', 0)} passes per kernel)\n")
        check(g.get("metrics_passes", 0) > 0, f"metrics collected ({g.get('metrics_passes', 0)} replay passes)")
        with_metrics = [k for k in g["kernels"] if k.get("bound")]
        share = len(with_metrics) / len(g["kernels"]) if g["kernels"] else 0
        check(share >= 0.9, f"throughput figures for >= 90% of kernels ({len(with_metrics)} of {len(g['kernels'])})")
        for base, (_, want) in KERNELS.items():
            ks = [k for k in with_metrics if k["name"].split("(")[0] == base]
            if not ks:
                check(False, f"{base} has throughput figures")
                continue
            med = lambda key: statistics.median(k[key] for k in ks)
            bounds = sorted({k["bound"] for k in ks})
            print(f"- {base}: {len(ks)} launches; SM {med('sm_throughput_pct'):.1f}%, memory "
                  f"{med('memory_throughput_pct'):.1f}%, DRAM {med('dram_throughput_pct'):.1f}%, achieved occupancy "
                  f"{med('achieved_occupancy_pct'):.1f}%, duration under replay {med('metrics_duration_ns') / 1e6:.4f} ms; "
                  f"bound {'/'.join(bounds)}")
            majority = max(bounds, key=lambda b: sum(1 for k in ks if k["bound"] == b))
            check(majority == want, f"{base} classified {want}-bound (got {majority})")
        print("\n### Findings (--metrics)\n")
        for f in metrics.get("findings", []):
            print(f"- [{f['severity']}] {f['title']}")
            if f.get("rule") == "gpu-kernel-bound":
                print(f"  evidence: {f['evidence']}")
        print("\n### Limits recorded (--metrics)\n")
        for d in metrics["meta"].get("degradations", []):
            print(f"- {d}")
        print()
    else:
        err = os.path.join(work, "metrics.err")
        if os.path.exists(err):
            print("--metrics stderr:\n```\n" + open(err).read()[-3000:] + "\n```")
    print(f"\nwar_story: {len(failures)} check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
