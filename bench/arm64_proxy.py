#!/usr/bin/env python3
"""The aarch64 proxy of the boards issue, measured on an x86 machine.

Runs `opscope profile MODEL --runs 3 --warmup 1` twice side by side: the native x86 build, and
the aarch64 cross build under `qemu-aarch64-static -cpu cortex-a76` (scripts/test-arm64.sh builds
it). Reports each one's wall time, and the relative L2 distance ||a - x|| / ||x|| between every
output of the two (same seed, so the same random inputs), which must stay within 1e-4.

  bench/arm64_proxy.py [--model models/bev_demo.onnx] [--native build/release/opscope]
                       [--arm64 build/arm64/opscope] [--sysroot build/arm64-sysroot]

On a real board, run the native binary there instead (`opscope profile MODEL --runs 3 --warmup
1 --save-outputs DIR` on the board and here) and compare the two folders with --compare A B.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper


def run(cmd):
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    dt = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
    return dt


def outputs(folder):
    out = {}
    for f in sorted(glob.glob(os.path.join(folder, "output_*.pb"))):
        t = onnx.TensorProto()
        with open(f, "rb") as fh:
            t.ParseFromString(fh.read())
        out[t.name or os.path.basename(f)] = numpy_helper.to_array(t).astype(np.float64)
    return out


def compare(a_dir, b_dir):
    a, b = outputs(a_dir), outputs(b_dir)
    if not a or a.keys() != b.keys():
        sys.exit(f"outputs differ in names: {sorted(a)} vs {sorted(b)}")
    worst = 0.0
    for name in a:
        x, y = a[name], b[name]
        if x.shape != y.shape:
            sys.exit(f"{name}: shape {x.shape} vs {y.shape}")
        rel = float(np.linalg.norm(y - x) / max(np.linalg.norm(x), 1e-30))
        worst = max(worst, rel)
        print(f"  {name:<24} {str(list(x.shape)):<20} relative L2 {rel:.3g}")
    return worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="models/bev_demo.onnx")
    ap.add_argument("--native", default="build/release/opscope")
    ap.add_argument("--arm64", default="build/arm64/opscope")
    ap.add_argument("--sysroot", default="build/arm64-sysroot")
    ap.add_argument("--compare", nargs=2, metavar=("X86_DIR", "ARM_DIR"))
    a = ap.parse_args()
    if a.compare:
        worst = compare(*a.compare)
        print(f"worst relative L2 {worst:.3g} (goal <= 1e-4)")
        return 0 if worst <= 1e-4 else 1
    args = ["profile", a.model, "--runs", "3", "--warmup", "1", "--seed", "7"]
    with tempfile.TemporaryDirectory() as tmp:
        x86, arm = os.path.join(tmp, "x86"), os.path.join(tmp, "arm64")
        t_x86 = run([a.native, *args, "--save-outputs", x86])
        qemu = ["qemu-aarch64-static", "-cpu", "cortex-a76", "-L", a.sysroot]
        t_arm = run([*qemu, a.arm64, *args, "--save-outputs", arm])
        print(f"{' '.join(args)}")
        print(f"  x86-64 native:                    {t_x86:7.1f} s")
        print(f"  aarch64 under qemu -cpu cortex-a76: {t_arm:7.1f} s (goal < 120 s)")
        worst = compare(x86, arm)
    print(f"worst relative L2 {worst:.3g} (goal <= 1e-4)")
    return 0 if worst <= 1e-4 and t_arm < 120 else 1


if __name__ == "__main__":
    sys.exit(main())
