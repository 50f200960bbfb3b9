#!/usr/bin/python3
"""Writes the two hand-built profiles for the diff tests: a small detector before and after
removing a deliberate bottleneck (a layout Transpose inserted in front of conv2). Deterministic:
run it again to regenerate model_before.json and model_after.json."""
import json

NOISE = [1.000, 1.012, 0.991, 1.004, 0.996, 1.008, 0.993, 1.002]

def stats(v):
    s = sorted(v)
    n = len(s)
    mean = sum(s) / n
    med = (s[n // 2 - 1] + s[n // 2]) / 2 if n % 2 == 0 else s[n // 2]
    return {"n": n, "mean": mean, "median": med, "trimmed_mean": mean, "min": s[0], "max": s[-1],
            "p90": s[-1], "stddev": 0, "cv": 0}

def op(i, name, typ, ms, outs, flops, nbytes):
    runs = [round(ms * k, 6) for k in NOISE]
    return {"name": name, "op_type": typ, "index": i, "input_shapes": [], "output_shapes": outs,
            "flops": flops, "bytes": nbytes, "runs_ms": runs, "stats": stats(runs), "share": 0,
            "status": "executed", "attribution": "measured"}

def profile(source, ops, e2e_ms):
    total = sum(o["stats"]["trimmed_mean"] for o in ops)
    for o in ops:
        o["share"] = o["stats"]["trimmed_mean"] / total
    runs = [round(e2e_ms * k, 6) for k in NOISE]
    return {"schema": "opscope.profile/1",
            "meta": {"kind": "profile", "tool_version": "0.1.0", "build_type": "Release",
                     "source": source, "cpu_model": "Test CPU", "threads": 2, "warmup": 2,
                     "runs": len(runs), "governor": "performance"},
            "e2e": {"runs_ms": runs, "stats": stats(runs), "throughput_per_s": 1000 / e2e_ms},
            "ops": ops, "findings": []}

before = profile("detector_v1.onnx", [
    op(0, "conv1", "Conv", 8.0, [[1, 64, 56, 56]], 2.3e9, 3.2e6),
    op(1, "relu1", "Relu", 1.0, [[1, 64, 56, 56]], 2.0e5, 1.6e6),
    op(2, "to_nhwc", "Transpose", 18.0, [[1, 56, 56, 64]], 0, 1.6e6),
    op(3, "reshape1", "Reshape", 0.5, [[1, 56, 56, 64]], 0, 1.6e6),
    op(4, "conv2", "Conv", 9.0, [[1, 128, 28, 28]], 2.6e9, 3.6e6),
    op(5, "gemm", "Gemm", 3.0, [[1, 1000]], 2.0e8, 4.1e6),
], 40.2)
after = profile("detector_v2.onnx", [
    op(0, "conv1", "Conv", 8.0, [[1, 64, 56, 56]], 2.3e9, 3.2e6),
    op(1, "relu1", "Relu", 1.0, [[1, 64, 56, 56]], 2.0e5, 1.6e6),
    op(2, "reshape1", "Reshape", 0.3, [[1, 64, 3136]], 0, 1.6e6),
    op(3, "conv2", "Conv", 8.6, [[1, 128, 28, 28]], 2.6e9, 3.6e6),
    op(4, "cast_out", "Cast", 0.2, [[1, 1000]], 0, 8.0e3),
    op(5, "gemm", "Gemm", 3.0, [[1, 1000]], 2.0e8, 4.1e6),
], 20.1)
for name, p in (("model_before.json", before), ("model_after.json", after)):
    with open(name, "w") as f:
        json.dump(p, f, indent=1)
        f.write("\n")
