#!/usr/bin/python3
"""Side-by-side latency of opscope's engine and ONNX Runtime on the real-model corpus.

For each fetched model of models/corpus/MANIFEST.tsv (models/corpus/fetch.sh) and each thread
count, the two runtimes alternate REPS times on identical seeded inputs (the manifest's shapes
and values, as in tests/corpus_vs_ort.py), each time WARMUP + RUNS inferences. opscope's figure
is the median latency of its runs without the per-op observer (the profile's
overhead.baseline_median_ms); ONNX Runtime's the median of session.run with all graph
optimizations, sequential execution and intra-op threads = the thread count (bench/ort_bench.js).
Prints a markdown table (median over repetitions of each side's median, ratio opscope/ORT:
below 1 opscope is faster) and, per thread count, the geometric mean of the ratios and the
largest one (the goal of issue 11: geomean <= 1.0, none above 1.25).

ONNX Runtime is called through its Node binding, whose per-call cost (an async call, tensor
wrapping) is part of its figure: the script measures it on a one-Relu model ("ORT floor") and
prints a second ratio against ORT's median minus that floor, the stricter comparison for the
sub-millisecond models (Silero VAD, the wake-word heads).

  /usr/bin/python3 bench/corpus_vs_ort.py [--reps 3] [--runs 20] [--warmup 5] [--threads 1,2]
                                          [--markdown OUT.md] [ID ...]
Needs a release build (scripts/build.sh) and onnxruntime-node in bench/node_modules
(`cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm install`).
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import onnx  # noqa: E402
import ort_compare as oc  # noqa: E402
from corpus_vs_ort import read_manifest  # noqa: E402


def opscope_ms(binary, path, args, threads, warmup, runs):
    cmd = [binary, "profile", path, *args, "--threads", str(threads), "--warmup", str(warmup),
           "--runs", str(runs), "--format", "json"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError("opscope: " + p.stderr.strip().splitlines()[-1])
    return json.loads(p.stdout)["overhead"]["baseline_median_ms"]


def ort_ms(path, in_dir, threads, warmup, runs):
    cmd = ["node", os.path.join(ROOT, "bench", "ort_bench.js"), path, str(threads), str(warmup),
           str(runs), in_dir]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip().splitlines()[-1])
    return json.loads(p.stdout)["median_ms"]


def floor_model(path):
    """A one-node model (Relu of 16 floats): what one session.run costs ORT with no work."""
    from onnx import TensorProto, helper
    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph([node], "floor",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--opscope", default=os.path.join(ROOT, "build", "release", "opscope"))
    ap.add_argument("--models", default=os.path.join(ROOT, "models", "corpus", "models"))
    ap.add_argument("--manifest", default=os.path.join(ROOT, "models", "corpus", "MANIFEST.tsv"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--markdown", help="write the table here too")
    ap.add_argument("ids", nargs="*")
    a = ap.parse_args()
    if not oc.ort_available():
        sys.exit("onnxruntime-node is not installed: cd bench && ONNXRUNTIME_NODE_INSTALL=skip "
                 "npm install --no-audit --no-fund")
    rows = [r for r in read_manifest(a.manifest) if not a.ids or r["id"] in a.ids]
    threads = [int(t) for t in a.threads.split(",")]
    work = os.path.join(ROOT, "bench", "out", "corpus")
    os.makedirs(work, exist_ok=True)
    floor_path = os.path.join(work, "floor.onnx")
    floor_model(floor_path)
    floor_in = os.path.join(work, "floor_in")
    oc.write_inputs(oc.make_inputs(onnx.load(floor_path), "", seed=1), floor_in)
    floor = {t: statistics.median(ort_ms(floor_path, floor_in, t, 50, 500) for _ in range(3))
             for t in threads}
    lines = ["| model | threads | opscope median (ms) | ONNX Runtime median (ms) | ratio opscope/ORT "
             "| ratio vs ORT minus its floor |", "|---|---|---|---|---|---|"]
    ratios = {t: [] for t in threads}
    strict = {t: [] for t in threads}
    print("ORT floor (one-Relu model, median): " +
          ", ".join(f"{floor[t]:.4f} ms at {t} thread(s)" for t in threads))
    print("\n".join(lines), flush=True)
    for row in rows:
        path = os.path.join(a.models, row["id"] + ".onnx")
        if not os.path.exists(path):
            print(f"| {row['id']} | - | not fetched (models/corpus/fetch.sh) | | |", flush=True)
            continue
        in_dir = os.path.join(work, row["id"])
        args = oc.write_inputs(oc.make_inputs(onnx.load(path), row["inputs"], seed=1234), in_dir)
        for t in threads:
            ours, theirs = [], []
            for _ in range(a.reps):
                ours.append(opscope_ms(a.opscope, path, args, t, a.warmup, a.runs))
                theirs.append(ort_ms(path, in_dir, t, a.warmup, a.runs))
            mo, mt = statistics.median(ours), statistics.median(theirs)
            ratios[t].append(mo / mt)
            net = mt - floor[t]
            strict[t].append(mo / net if net > 0 else float("inf"))
            line = (f"| {row['id']} | {t} | {mo:.3f} | {mt:.3f} | {mo / mt:.2f} | "
                    f"{strict[t][-1]:.2f} |")
            lines.append(line)
            print(line, flush=True)
    summary = []
    for t in threads:
        if ratios[t]:
            g = math.exp(sum(math.log(r) for r in ratios[t]) / len(ratios[t]))
            gs = math.exp(sum(math.log(r) for r in strict[t]) / len(strict[t]))
            summary.append(f"{t} thread(s): geomean ratio {g:.2f} over {len(ratios[t])} models, "
                           f"largest {max(ratios[t]):.2f}; against ORT minus its floor "
                           f"({floor[t]:.4f} ms): geomean {gs:.2f}, largest {max(strict[t]):.2f}")
    print("\n".join(summary))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("\n".join([f"ORT floor: {floor}"] + lines + [""] + summary) + "\n")


if __name__ == "__main__":
    main()
