#!/usr/bin/python3
"""Memory and time of `opscope import` and `opscope report` on very large inputs (docs/benchmarks.md,
"Very large inputs"; the hardening issue #39's goal: <= 1.5 GB peak RSS and <= 60 s each on a
2-core machine).

Writes, in a scratch folder:
  flat.txt    perf script with one frame per sample on the header line (`perf script -F
              comm,pid,time,event,ip,sym,dso` style), about SIZE_MB: the most samples per byte
  deep.txt    perf script with 8-40 frames per sample, about SIZE_MB
  events.json an opscope profile of 100 ops and EVENTS op events
  ops.json    an opscope profile of OPS distinct ops
then runs `import FILE -o OUT.json` on the perf scripts and `report` on every profile, and prints
the wall time, CPU time and peak RSS of each (/usr/bin/time -v).

  /usr/bin/python3 bench/big_inputs.py BUILD/opscope [SIZE_MB=1100] [EVENTS=10000000] [OPS=1000000]
"""
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

opscope = sys.argv[1]
size_mb = int(sys.argv[2]) if len(sys.argv) > 2 else 1100
n_events = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000_000
n_ops = int(sys.argv[4]) if len(sys.argv) > 4 else 1_000_000
scratch = tempfile.mkdtemp(prefix="opscope-big-inputs-")
random.seed(1)


def write_flat(path, target):
    funcs = ["fn_%d" % i for i in range(2000)]
    t = 1000.0
    with open(path, "w") as f:
        while f.tell() < target:
            lines = []
            for s in range(4096):
                t += 0.00025
                fi = random.randrange(len(funcs))
                lines.append("python3 %d %12.6f:     250000 cpu-clock: %16x %s+0x%x "
                             "(/opt/app/libinfer.so)\n"
                             % (17584 + s % 4, t, 0x400000 + fi * 64, funcs[fi], s % 64))
            f.write("".join(lines))


def write_deep(path, target):
    mods = ["/usr/lib/x86_64-linux-gnu/libc.so.6", "/opt/app/libinfer.so", "[kernel.kallsyms]",
            "/usr/bin/python3.11"]
    funcs = ["fn_%d_%s" % (i, "x" * (i % 17)) for i in range(400)]
    t = 1000.0
    with open(path, "w") as f:
        while f.tell() < target:
            lines = []
            for s in range(256):
                t += 0.00025
                lines.append("python3 %d %12.6f:     250000 cpu-clock: \n" % (17584 + s % 4, t))
                for d in range(random.randint(8, 40)):
                    fi = random.randrange(len(funcs))
                    lines.append("\t%16x %s+0x%x (%s)\n"
                                 % (0x400000 + fi * 64 + d, funcs[fi], d * 4, mods[fi % 4]))
                lines.append("\n")
            f.write("".join(lines))


def write_profile(path, ops, events):
    with open(path, "w") as f:
        f.write('{"schema":"opscope.profile/1","meta":{"kind":"profile","source":"big.onnx",'
                '"runs":2},"e2e":{"runs_ms":[10.0,11.0]},"findings":[],"ops":[')
        for start in range(0, ops, 100000):
            f.write(("," if start else "") + ",".join(
                '{"name":"node_%d","op_type":"Conv","index":%d,"status":"executed",'
                '"runs_ms":[0.001,0.002],"flops":1000000,"bytes":100000}' % (i, i)
                for i in range(start, min(ops, start + 100000))))
        f.write('],"op_events":[')
        for start in range(0, events, 100000):
            f.write(("," if start else "") + ",".join(
                '[%d,%d,1,%d,1000]' % (k % ops, k % 2, k * 1000)
                for k in range(start, min(events, start + 100000))))
        f.write("]}")


def measure(args):
    r = subprocess.run(["/usr/bin/time", "-v", opscope] + args, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, errors="replace")
    def field(name):
        m = re.search(name + r": (.*)", r.stderr)
        return m.group(1).strip() if m else "?"
    cpu = float(field("User time \\(seconds\\)")) + float(field("System time \\(seconds\\)"))
    rss_mb = int(field("Maximum resident set size \\(kbytes\\)")) / 1024
    wall = field("Elapsed \\(wall clock\\) time \\(h:mm:ss or m:ss\\)")
    ok = "ok" if r.returncode == 0 else "exit %d: %s" % (r.returncode, r.stderr.splitlines()[0])
    return wall, cpu, rss_mb, ok


def main():
    target = size_mb << 20
    files = []
    try:
        for name, writer in (("flat.txt", write_flat), ("deep.txt", write_deep)):
            path = os.path.join(scratch, name)
            writer(path, target)
            files.append(path)
        write_profile(os.path.join(scratch, "events.json"), 100, n_events)
        write_profile(os.path.join(scratch, "ops.json"), n_ops, 0)
        print("CPU: %s" % next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                                if l.startswith("model name")), "?"))
        print("| command | input | wall | CPU | peak RSS | result |")
        print("|---|---|---|---|---|---|")
        runs = []
        for path in files:
            out = path + ".json"
            runs.append((["import", path, "-o", out], path))
            runs.append((["report", out], out))
        runs.append((["report", os.path.join(scratch, "events.json")],
                     os.path.join(scratch, "events.json")))
        runs.append((["report", os.path.join(scratch, "ops.json")],
                     os.path.join(scratch, "ops.json")))
        for args, path in runs:
            wall, cpu, rss, ok = measure(args)
            print("| %s | %s (%d MB) | %s | %.1f s | %.0f MB | %s |"
                  % (args[0], os.path.basename(path), os.path.getsize(path) >> 20, wall, cpu, rss,
                     ok))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


main()
