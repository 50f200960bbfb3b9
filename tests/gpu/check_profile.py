#!/usr/bin/env python3
"""Checks an `opscope gpu` profile of tests/gpu/gpu_demo.cu against what the demo does by
construction. Standard library only. Prints one PASS/FAIL line per check; exit 1 if any fails.

usage: check_profile.py PROFILE.json ITERATIONS EVENT_KERNEL_MS [--crash SIGNAL]
"""
import json
import sys

MIB = 1 << 20
LAYER_OF = {"conv_like": "layer1_conv", "relu_scale": "layer2_relu", "block_reduce": "layer3_reduce"}


def main():
    path, iterations, event_ms = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    crash = int(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[4] == "--crash" else 0
    p = json.load(open(path))
    g = p["gpu"]
    ranges = p["ranges"]
    failures = []

    def check(ok, what):
        print(("PASS  " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    def in_iteration(idx):
        while idx >= 0:
            if ranges[idx]["name"] == "iteration":
                return True
            idx = ranges[idx]["parent"]
        return False

    if crash:
        kernels = [k for k in g["kernels"] if k["range"] >= 0 and in_iteration(k["range"])]
        check(g["end_signal"] == crash, f"the tracer saw the fatal signal {crash} (got {g['end_signal']})")
        check(len(kernels) >= 3 * (iterations - 1),
              f"kernels of the {iterations} iterations before the crash are in the profile ({len(kernels)})")
        return 1 if failures else 0

    check(p["meta"]["kind"] == "gpu", "profile kind is gpu")
    check(g["complete"] and g["end_signal"] == 0, "trace complete, no fatal signal")
    check(g["dropped_records"] == 0, f"no dropped records ({g['dropped_records']})")
    check(len(g["devices"]) >= 1, f"device recorded: {g['devices'][0]['name'] if g['devices'] else '-'}")

    iters = [r for r in ranges if r["name"] == "iteration"]
    check(len(iters) == iterations, f"{iterations} 'iteration' NVTX ranges ({len(iters)})")
    for layer in ("preprocess", "upload", "layer1_conv", "layer2_relu", "layer3_reduce", "download", "postprocess"):
        n = sum(1 for r in ranges if r["name"] == layer and r["parent"] >= 0 and ranges[r["parent"]]["name"] == "iteration")
        check(n == iterations, f"nested range '{layer}' once per iteration ({n})")

    measured = [k for k in g["kernels"] if k["range"] >= 0 and in_iteration(k["range"])]
    check(len(measured) == 3 * iterations, f"3 kernels per iteration attributed to iterations ({len(measured)})")
    wrong = 0
    for k in measured:
        base = k["name"].split("(")[0]
        if LAYER_OF.get(base) != ranges[k["range"]]["name"]:
            wrong += 1
    check(wrong == 0, f"every kernel attributed to its layer range ({wrong} wrong)")
    check(all("(" in k["name"] for k in g["kernels"]), "kernel names demangled")
    reduce = [k for k in measured if k["name"].startswith("block_reduce")]
    check(bool(reduce) and reduce[0]["dynamic_shared_bytes"] == 1024 and reduce[0]["block"][0] == 256,
          "block_reduce launch configuration (256 threads, 1024 B dynamic shared memory)")
    check(all(0 < k["occupancy"] <= 1 for k in measured), "theoretical occupancy computed for every kernel")

    opscope_ms = sum(k["end_ns"] - k["start_ns"] for k in measured) / 1e6
    err = abs(opscope_ms - event_ms) / event_ms if event_ms > 0 else 1
    check(err <= 0.05, f"kernel time {opscope_ms:.3f} ms vs CUDA events {event_ms:.3f} ms: {100 * err:.2f}% apart (<= 5%)")

    cfg = [m for m in g["memcpys"] if m["kind"] == "HtoD" and m["bytes"] == MIB]
    inp = [m for m in g["memcpys"] if m["kind"] == "HtoD" and m["bytes"] == 4 * MIB]
    out = [m for m in g["memcpys"] if m["kind"] == "DtoH" and m["bytes"] == 256 * 1024]
    check(len(cfg) == iterations + 2, f"1 MiB HtoD config copy every iteration incl. 2 warm-up ({len(cfg)})")
    check(all(m["pageable"] for m in cfg), "config copies flagged pageable")
    check(len(inp) == iterations + 2 and not any(m["pageable"] for m in inp), "4 MiB input copies pinned")
    check(len(out) == iterations + 2 and all(m["async"] for m in out), "256 KiB DtoH async copies")

    rules = {}
    for f in p["findings"]:
        rules.setdefault(f["rule"], []).append(f)
    check(all(m["content_hash"] for m in cfg + inp), "HtoD copies fingerprinted")
    check(len({m["content_hash"] for m in cfg}) == 1, "config copies carry identical bytes")
    check(len({m["content_hash"] for m in inp}) == len(inp), "input copies carry new bytes each iteration")
    rep = [f for f in rules.get("gpu-repeated-copy", []) if f["numbers"].get("bytes_each") == MIB]
    check(len(rep) == 1 and rep[0]["numbers"]["iterations_with"] == iterations
          and rep[0]["numbers"]["same_content"] == rep[0]["numbers"]["fingerprinted"] >= iterations,
          "finding: the 1 MiB HtoD copy repeated every iteration with the same content")
    check(not any(f["numbers"].get("bytes_each") == 4 * MIB for f in rules.get("gpu-repeated-copy", [])),
          "no finding for the 4 MiB input (same size, new content each iteration)")
    check(any(f["ops"] == ["[CUDA memcpy HtoD]"] for f in rules.get("gpu-pageable-copy", [])),
          "finding: pageable HtoD copies")
    check("gpu-waits-for-cpu" in rules or "cpu-waits-for-gpu" in rules, "finding: iteration split (who waits)")
    syncs = [s for s in g["syncs"] if s["type"] == "stream"]
    check(len(syncs) >= iterations, f"a stream synchronization per iteration ({len(syncs)})")
    names = {a["name"] for a in g["api_calls"]}
    check({"cudaMemcpy", "cudaMemcpyAsync", "cudaLaunchKernel", "cudaStreamSynchronize"} <= names,
          "runtime API calls recorded")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
