#!/usr/bin/env bash
# The one command a session with an NVIDIA GPU runs (docs/gpu.md, "On a GPU"). It builds nothing:
# build the carried folder first, on a machine without a GPU if need be,
#
#   cmake --build build/release --target opscope gpu_device_programs
#
# then, on the GPU machine (carrying build/release):
#
#   tests/gpu/device_check.sh [--build-dir DIR] [--work-dir DIR] [--iterations N] [--runs R]
#
# The whole build folder is far over the 64 MiB a device call carries. Pack what the check needs
# (opscope, the tracer, the two CUDA programs, and the shared libraries opscope loads that are
# neither glibc's, the C++ runtime's, nor CUDA's: the GPU machine's image has CUDA 13 with CUPTI)
# into one compressed file and carry that instead:
#
#   tests/gpu/device_check.sh --pack build/device              # here: build/device.tar.xz
#   tests/gpu/device_check.sh --build-dir build/device.tar.xz  # there: unpacked into the work dir
#
# 1. versions.txt: machine, GPU (nvidia-smi), driver, CUDA toolkit the build used, CUPTI.
# 2. tests/gpu/run.sh exactly as written, with the gpu_demo compiled here (--demo).
# 3. tests/gpu/war_story.cu (a 1 MiB config copy per inference, a memory-bound attention-like
#    kernel, a compute-bound GEMM, a tiny latency-bound kernel, CPU pre-processing overlapping the
#    GPU, NVTX ranges): R runs alone, one under `opscope gpu`, one under `opscope gpu --metrics`.
# 4. figures.md: every figure and check (check_war_story.py).
# Everything lands in $OUT (or the work dir's out/). Exit 77 where there is no GPU (after writing
# versions.txt), 1 if a check failed, 0 otherwise.
set -uo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$repo/build/release
work=${TMPDIR:-/tmp}/opscope-device-check
iterations=20
runs=3
while [[ $# -gt 0 ]]; do
  case $1 in
    --build-dir) build=$2; shift 2 ;;
    --work-dir) work=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --pack) pack=$2; shift 2 ;;
    *) echo "device_check.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

if [[ -n ${pack:-} ]]; then
  for f in opscope libopscope_cupti_tracer.so tests/gpu/war_story tests/gpu/gpu_demo; do
    [[ -e $build/$f ]] || { echo "device_check.sh: $build/$f is missing: cmake --build $build --target opscope gpu_device_programs" >&2; exit 2; }
  done
  rm -rf "$pack"
  mkdir -p "$pack/tests/gpu" "$pack/lib"
  cp "$build/opscope" "$build/libopscope_cupti_tracer.so" "$pack/"
  cp "$build/tests/gpu/war_story" "$build/tests/gpu/gpu_demo" "$pack/tests/gpu/"
  cp "$build/CMakeCache.txt" "$pack/" 2>/dev/null
  # Shared libraries, except glibc's, the C++ runtime's (the GPU machine's are newer) and CUDA's.
  ldd "$build/opscope" "$build/libopscope_cupti_tracer.so" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
    grep -v -E '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libstdc\+\+|libgcc_s|libcuda|libcupti|libnvperf[a-z_]*)\.so' |
    while read -r lib; do cp -L "$lib" "$pack/lib/"; done
  tar -C "$(dirname "$pack")" -cJf "$pack.tar.xz" "$(basename "$pack")"
  echo "device_check.sh: packed $pack ($(du -sh "$pack" | cut -f1)) into $pack.tar.xz ($(du -sh "$pack.tar.xz" | cut -f1));"
  echo "carry $pack.tar.xz and run: tests/gpu/device_check.sh --build-dir $pack.tar.xz"
  exit 0
fi
if [[ $build == *.tar.xz ]]; then
  mkdir -p "$work/pack"
  tar -C "$work/pack" -xJf "$build" || { echo "device_check.sh: cannot unpack $build" >&2; exit 2; }
  build=$work/pack/$(basename "$build" .tar.xz)
fi
# A packed folder brings its own libraries; libcupti comes from the machine's CUDA.
if [[ -d $build/lib ]]; then export LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}; fi
if ldd "$build/libopscope_cupti_tracer.so" 2>/dev/null | grep -q 'libcupti.*not found'; then
  for d in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
           $(python3 -c 'import nvidia.cuda_cupti, os; print(os.path.join(nvidia.cuda_cupti.__path__[0], "lib"))' 2>/dev/null); do
    if ls "$d"/libcupti.so.13* >/dev/null 2>&1; then export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d; break; fi
  done
fi
out=${OUT:-$work/out}
mkdir -p "$work" "$out"
opscope=$build/opscope
tracer=$build/libopscope_cupti_tracer.so
war=$build/tests/gpu/war_story
demo=$build/tests/gpu/gpu_demo
for f in "$opscope" "$war" "$demo"; do
  [[ -x $f ]] || { echo "device_check.sh: $f is missing: cmake --build $build --target opscope gpu_device_programs" >&2; exit 2; }
done
[[ -f $tracer ]] || { echo "device_check.sh: $tracer is missing (build opscope where CUDA is installed)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "device_check.sh: python3 is needed for the checks" >&2; exit 2; }

# --- 1. versions --------------------------------------------------------------------------------
cupti=$(ldd "$tracer" 2>/dev/null | awk '/libcupti/ {print $3}')
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "kernel: $(uname -srm)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') ($(nproc) cpus)"
  echo "opscope: $("$opscope" --version 2>&1)"
  echo "toolkit (build): $(grep -m1 '^CUDAToolkit_NVCC_EXECUTABLE\|^OPSCOPE_NVCC' "$build/CMakeCache.txt" 2>/dev/null)"
  grep -m1 -o 'CUDA_VERSION [0-9]*' "$(dirname "$(dirname "$(readlink -f "${cupti:-/usr/local/cuda/lib64/libcupti.so}")")")/include/cuda.h" 2>/dev/null \
    | sed 's/^/toolkit header: /'
  echo "libcupti: ${cupti:-not found by ldd} -> $(readlink -f "${cupti:-/nonexistent}" 2>/dev/null)"
  python3 - "${cupti:-libcupti.so}" <<'EOF'
import ctypes, sys
try:
    lib = ctypes.CDLL(sys.argv[1])
    v = ctypes.c_uint32()
    print("CUPTI API version (cuptiGetVersion):", v.value if lib.cuptiGetVersion(ctypes.byref(v)) == 0 else "call failed")
except OSError as e:
    print("CUPTI API version: cannot load:", e)
EOF
  python3 - <<'EOF'
import ctypes
try:
    lib = ctypes.CDLL("libcuda.so.1")
    v = ctypes.c_int()
    lib.cuDriverGetVersion(ctypes.byref(v))
    print("CUDA driver API version (cuDriverGetVersion):", v.value)
except OSError as e:
    print("CUDA driver: libcuda.so.1 not loadable:", e)
EOF
  cat /proc/driver/nvidia/version 2>/dev/null
  echo "--- nvidia-smi"
  nvidia-smi 2>&1 || echo "nvidia-smi: not available"
  nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,clocks.max.sm,clocks.max.mem,power.limit \
    --format=csv 2>&1 || true
  echo "profiling restricted to admins: $(grep -h RmProfilingAdminOnly /proc/driver/nvidia/params 2>/dev/null || echo unknown)"
  echo "user: $(id -u)"
} >"$out/versions.txt" 2>&1
cat "$out/versions.txt"

set +e
probe=$("$opscope" gpu --metrics -- true 2>&1)
set -e
if grep -q -e "no NVIDIA driver" -e "cuInit failed" -e "no CUDA device" <<<"$probe"; then
  echo "device_check.sh: skipped: $probe"
  exit 77
fi
set +e
status=0

# --- 2. run.sh as written -----------------------------------------------------------------------
OUT=$out/run_sh "$repo/tests/gpu/run.sh" --build-dir "$build" --work-dir "$work/run" --demo "$demo" \
  >"$out/run_sh.log" 2>&1
run_rc=$?
echo "run.sh exit status: $run_rc" | tee -a "$out/run_sh.log"
[[ $run_rc -eq 0 ]] || status=1

# --- 3. war_story alone, traced, with --metrics ---------------------------------------------------
ws=$work/war
rm -rf "$ws"
mkdir -p "$ws"
for r in $(seq "$runs"); do
  "$war" --iterations "$iterations" >"$ws/alone-$r.out" 2>&1
done
"$opscope" gpu -o "$ws/traced.json" -- "$war" --iterations "$iterations" >"$ws/traced.out" 2>"$ws/traced.err"
echo "opscope gpu exit status: $?" >>"$ws/traced.err"
timeout 300 "$opscope" gpu --metrics -o "$ws/metrics.json" -- "$war" --iterations "$iterations" \
  >"$ws/metrics.out" 2>"$ws/metrics.err"
echo "opscope gpu --metrics exit status: $?" >>"$ws/metrics.err"

# --- 4. figures and checks ----------------------------------------------------------------------
{
  echo "# opscope device check ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
  echo
  echo "Command: tests/gpu/device_check.sh --iterations $iterations --runs $runs"
  echo
  echo '```'
  cat "$out/versions.txt"
  echo '```'
  echo
  echo "## tests/gpu/run.sh: exit status $run_rc"
  echo
  grep -E '^(PASS|FAIL)|slowdown|median' "$work/run/result.md" 2>/dev/null
  echo
} >"$out/figures.md"
python3 "$repo/tests/gpu/check_war_story.py" "$ws" >>"$out/figures.md" 2>&1
[[ $? -eq 0 ]] || status=1
{
  echo
  echo "## opscope gpu --metrics report"
  echo
  echo '```'
  cat "$ws/metrics.out"
  tail -20 "$ws/metrics.err"
  echo '```'
} >>"$out/figures.md"
cp "$ws"/*.json "$ws"/*.out "$ws"/*.err "$out/" 2>/dev/null
cp "$work/run/result.md" "$out/run_sh_result.md" 2>/dev/null
cat "$out/figures.md"
echo "device_check.sh: $([[ $status -eq 0 ]] && echo ALL CHECKS PASSED || echo SOME CHECKS FAILED); files in $out"
exit "$status"
