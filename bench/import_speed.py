#!/usr/bin/python3
"""`opscope import` on large files: time and peak memory (docs/benchmarks.md, "Import speed").

Generates, in a scratch folder, a synthetic PyTorch profiler trace of about SIZE_MB megabytes
(ProfilerStep annotations; per step a chain of top-level aten ops, each with two nested ops, one
cudaLaunchKernel and its kernel, plus python_function and flow events as real traces have) and a
synthetic ONNX Runtime profile of about ORT_MB megabytes (model_run events with node events in
the current layout), then runs `opscope import` on each REPEAT times and prints the median wall
time and the peak resident memory of the child (ru_maxrss).

  /usr/bin/python3 bench/import_speed.py BUILD/opscope [SIZE_MB=1024] [ORT_MB=100] [REPEAT=3]
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

opscope = sys.argv[1]
size_mb = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
ort_mb = int(sys.argv[3]) if len(sys.argv) > 3 else 100
repeat = int(sys.argv[4]) if len(sys.argv) > 4 else 3
scratch = tempfile.mkdtemp(prefix="opscope-import-bench-")

OPS = ["aten::conv2d", "aten::batch_norm", "aten::relu_", "aten::add", "aten::linear",
       "aten::softmax", "aten::layer_norm", "aten::matmul"]
KERNEL = ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>"
          "(cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4::Params)")


def write_pytorch(path, target):
    corr = 1
    ext = 1
    ts = 1000.0
    step = 0
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "deviceProperties": [], "traceEvents": [\n')
        first = True
        while f.tell() < target:
            step += 1
            chunk = []
            t0 = ts
            for i in range(2000):
                name = OPS[i % len(OPS)]
                d = 40.0 + (i % 7)
                chunk.append('{"ph": "X", "cat": "cpu_op", "name": "%s", "pid": 77, "tid": 77, '
                             '"ts": %.3f, "dur": %.3f, "args": {"External id": %d, "Record function id": 0, '
                             '"Input Dims": [[8, 64, 56, 56], [64, 64, 3, 3], [64], [], [], [], []], '
                             '"Input type": ["float", "float", "float", "ScalarList", "ScalarList", '
                             '"ScalarList", "Int"], "Sequence number": %d, "Fwd thread id": 0}}'
                             % (name, ts, d, ext, ext))
                chunk.append('{"ph": "X", "cat": "cpu_op", "name": "aten::_convolution", "pid": 77, '
                             '"tid": 77, "ts": %.3f, "dur": %.3f, "args": {"External id": %d, '
                             '"Input Dims": [[8, 64, 56, 56], [64, 64, 3, 3]]}}' % (ts + 1, d - 2, ext + 1))
                chunk.append('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 77, '
                             '"tid": 77, "ts": %.3f, "dur": 6.0, "args": {"External id": %d, "cbid": 211, '
                             '"correlation": %d}}' % (ts + 3, ext + 1, corr))
                chunk.append('{"ph": "X", "cat": "kernel", "name": "%s", "pid": 0, "tid": 7, '
                             '"ts": %.3f, "dur": %.3f, "args": {"External id": %d, "queued": 0, '
                             '"device": 0, "context": 1, "stream": 7, "correlation": %d, '
                             '"registers per thread": 168, "shared memory": 49152, '
                             '"blocks per SM": 1.5, "warps per SM": 6.0, "grid": [98, 1, 1], '
                             '"block": [128, 1, 1], "est. achieved occupancy %%": 13}}'
                             % (KERNEL, ts + 10, d - 5, ext + 1, corr))
                chunk.append('{"ph": "s", "id": %d, "pid": 77, "tid": 77, "ts": %.3f, '
                             '"cat": "ac2g", "name": "ac2g"}' % (corr, ts + 3))
                chunk.append('{"ph": "X", "cat": "python_function", "name": '
                             '"torch/nn/modules/conv.py(459): forward", "pid": 77, "tid": 77, '
                             '"ts": %.3f, "dur": %.3f, "args": {"Python parent id": 3, "Python id": %d}}'
                             % (ts - 0.5, d + 1, ext))
                ts += d + 2
                ext += 2
                corr += 1
            step_ev = ('{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d", "pid": 77, '
                       '"tid": 77, "ts": %.3f, "dur": %.3f, "args": {"External id": %d}}'
                       % (step, t0 - 1, ts - t0 + 2, ext))
            ext += 1
            f.write(("" if first else ",\n") + step_ev + ",\n" + ",\n".join(chunk))
            first = False
            ts += 100
        f.write('\n], "traceName": "synthetic", "displayTimeUnit": "ms"}\n')
    return step


def write_ort(path, target):
    ts = 100
    with open(path, "w") as f:
        f.write('[\n{"cat" : "Session","pid" :1,"tid" :1,"dur" :100,"ts" :1,"ph" : "X",'
                '"name" :"model_loading_uri","args" : {}}')
        runs = 0
        while f.tell() < target:
            t0 = ts
            parts = []
            for n in range(300):
                parts.append('{"cat" : "Node","pid" :1,"tid" :1,"dur" :%d,"ts" :%d,"ph" : "X",'
                             '"name" :"node_%d_kernel_time","args" : {"op_name" : "Conv",'
                             '"provider" : "CPUExecutionProvider","node_index" : "%d",'
                             '"input_type_shape" : [{"float":[1,64,56,56]},{"float":[64,64,3,3]}],'
                             '"output_type_shape" : [{"float":[1,64,56,56]}],'
                             '"thread_scheduling_stats" : "","activation_size" : "802816",'
                             '"parameter_size" : "147456","output_size" : "802816"}}'
                             % (20 + n % 5, ts, n, n))
                ts += 25
            parts.append('{"cat" : "Session","pid" :1,"tid" :1,"dur" :%d,"ts" :%d,"ph" : "X",'
                         '"name" :"model_run","args" : {}}' % (ts - t0, t0))
            f.write(",\n" + ",\n".join(parts))
            ts += 10
            runs += 1
        f.write("\n]\n")
    return runs


def measure(args):
    """Median wall time (s), median CPU time (user+sys, s) and the largest peak RSS (MB,
    /usr/bin/time's %M) over the repeats. CPU time is the figure to compare on a loaded machine."""
    times = []
    cpus = []
    rss = 0
    for _ in range(repeat):
        t = time.monotonic()
        r = subprocess.run(["/usr/bin/time", "-f", "maxrss_kb=%M cpu_s=%U+%S"] + args,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        times.append(time.monotonic() - t)
        if r.returncode != 0:
            sys.exit("failed: %s\n%s" % (" ".join(args), r.stderr))
        kb = [l for l in r.stderr.splitlines() if l.startswith("maxrss_kb=")][-1].split()
        rss = max(rss, int(kb[0].split("=")[1]))
        u, s = kb[1].split("=")[1].split("+")
        cpus.append(float(u) + float(s))
    return statistics.median(times), statistics.median(cpus), rss / 1024.0


cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print("CPU: %s, %d CPUs, load average %.1f" % (cpu, os.cpu_count(), os.getloadavg()[0]))
sys.stdout.flush()
pt = os.path.join(scratch, "trace.json")
steps = write_pytorch(pt, size_mb << 20)
print("pytorch trace: %.0f MB, %d steps" % (os.path.getsize(pt) / 1e6, steps))
t, c, rss = measure([opscope, "import", pt, "-o", os.path.join(scratch, "pt.profile.json")])
print("import pytorch: median wall %.2f s, CPU %.2f s, peak RSS %.0f MB" % (t, c, rss))
os.remove(pt)
ort = os.path.join(scratch, "ort.json")
runs = write_ort(ort, ort_mb << 20)
print("ort profile: %.0f MB, %d runs" % (os.path.getsize(ort) / 1e6, runs))
t, c, rss2 = measure([opscope, "import", ort, "-o", os.path.join(scratch, "ort.profile.json")])
print("import ort: median wall %.2f s, CPU %.2f s, peak RSS %.0f MB" % (t, c, rss2))
os.remove(ort)
