#!/usr/bin/python3
"""Peak RSS as `opscope profile` reports it (the memory section's peak_rss_bytes, VmHWM read after
the measured runs) against /usr/bin/time -v's "Maximum resident set size" of the same run (the
kernel's ru_maxrss of the whole process, output writing included). The memory issue asks for
agreement within 5%. docs/benchmarks.md, "Peak RSS", has the figures.

  /usr/bin/python3 bench/peak_rss.py BUILD/opscope [MODEL.onnx ...]

Without models: the demo model and tests/models/*.onnx.
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
opscope = sys.argv[1]
models = sys.argv[2:] or [os.path.join(root, "models/bev_demo.onnx")] + sorted(
    glob.glob(os.path.join(root, "tests/models/*.onnx")))

print(f"{'model':<24} {'opscope peak':>14} {'time -v max':>14} {'ratio':>7}")
worst = 0.0
with tempfile.TemporaryDirectory(prefix="opscope-peak-rss-") as tmp:
    out = os.path.join(tmp, "p.json")
    for m in models:
        r = subprocess.run(["/usr/bin/time", "-v", opscope, "profile", m, "--runs", "10",
                            "--warmup", "3", "-o", out],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            print(f"{os.path.basename(m):<24} failed: {r.stderr.strip().splitlines()[-1]}")
            continue
        kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
        with open(out) as f:
            peak = json.load(f)["memory"]["peak_rss_bytes"]
        ratio = peak / (kb * 1024)
        worst = max(worst, abs(1 - ratio))
        print(f"{os.path.basename(m):<24} {peak / 2**20:>11.1f} MiB {kb / 1024:>11.1f} MiB "
              f"{ratio:>7.3f}")
print(f"largest difference: {worst * 100:.1f}%")
