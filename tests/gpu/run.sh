#!/usr/bin/env bash
# The prepared on-GPU check of `opscope gpu` (docs/gpu.md, "On a GPU").
#
#   tests/gpu/run.sh [--build-dir DIR] [--work-dir DIR] [--nvcc PATH] [--demo PATH] [--iterations N]
#                    [--runs R]
#
# 1. Builds tests/gpu/gpu_demo.cu with nvcc (for this machine's GPU, or for sm_87 as a compile
#    check where there is none), unless --demo names one built already (the device check does,
#    so the GPU machine needs no nvcc).
# 2. Stops with exit 77 ("skipped") when opscope finds no NVIDIA driver or device.
# 3. Runs the demo R times alone, then R times under `opscope gpu`, and compares its own loop
#    time (opscope's overhead, reported, never asserted).
# 4. Checks the profile of one traced run (tests/gpu/check_profile.py): every NVTX range, every
#    kernel in its layer, kernel time within 5% of CUDA events, the copies (sizes, pageable,
#    pinned, async), the repeated 1 MiB HtoD finding, synchronizations, API calls.
# 5. Crashes the demo mid-run under opscope and checks the trace up to the crash survived.
# Writes result.md (GPU, figures, every check) into the work dir and, if set, into $OUT.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$repo/build/release
work=${TMPDIR:-/tmp}/opscope-gpu-check
nvcc=${NVCC:-}
demo=
iterations=50
runs=3
while [[ $# -gt 0 ]]; do
  case $1 in
    --build-dir) build=$2; shift 2 ;;
    --work-dir) work=$2; shift 2 ;;
    --nvcc) nvcc=$2; shift 2 ;;
    --demo) demo=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n $nvcc ]] || nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
opscope=$build/opscope
mkdir -p "$work"
result=$work/result.md
say() { echo "$*" | tee -a "$result"; }
: >"$result"

[[ -x $opscope ]] || { echo "run.sh: $opscope not built (cmake --build $build --target opscope)" >&2; exit 2; }

# --- 1. build the demo ------------------------------------------------------------------------
if [[ -n $demo ]]; then
  [[ -x $demo ]] || { echo "run.sh: --demo $demo is not an executable" >&2; exit 2; }
  cp "$demo" "$work/gpu_demo"
else
  [[ -x $nvcc ]] || { echo "run.sh: nvcc not found (pass --nvcc PATH or --demo PATH)" >&2; exit 2; }
  cuda_home=$(cd "$(dirname "$nvcc")/.." && pwd)
  arch=sm_87
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then arch=native; fi
  echo "run.sh: building gpu_demo (nvcc -arch=$arch)"
  "$nvcc" -O2 -std=c++17 -lineinfo -arch="$arch" -I"$cuda_home/include" \
    -o "$work/gpu_demo" "$repo/tests/gpu/gpu_demo.cu"
fi

# --- 2. is there a GPU? ----------------------------------------------------------------------
set +e
probe=$("$opscope" gpu -- true 2>&1)
set -e
if grep -q -e "no NVIDIA driver" -e "cuInit failed" -e "no CUDA device" <<<"$probe"; then
  echo "run.sh: gpu_demo compiled; skipped the GPU checks: $probe"
  exit 77
fi
command -v python3 >/dev/null || { echo "run.sh: python3 is needed for the checks" >&2; exit 2; }

gpu=$(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>/dev/null | head -1 || true)
say "# opscope gpu check ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
say ""
say "- GPU: ${gpu:-unknown (no nvidia-smi)}"
say "- opscope: $("$opscope" --version), tracer $build/libopscope_cupti_tracer.so"
say "- demo: $iterations iterations, $runs runs each way; command: tests/gpu/run.sh --iterations $iterations --runs $runs"
say ""

field() { sed -n "s/.*GPU_DEMO.* $1=\([^ ]*\).*/\1/p" "$2" | tail -1; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# --- 3. overhead: alone vs. under opscope, interleaved -----------------------------------------
: >"$work/base.txt"; : >"$work/traced.txt"
for r in $(seq "$runs"); do
  "$work/gpu_demo" --iterations "$iterations" >"$work/base-$r.out"
  field loop_ms "$work/base-$r.out" >>"$work/base.txt"
  "$opscope" gpu --gpu-trace -o "$work/demo-$r.json" -- "$work/gpu_demo" --iterations "$iterations" \
    >"$work/traced-$r.out" 2>"$work/traced-$r.err"
  field loop_ms "$work/traced-$r.out" >>"$work/traced.txt"
done
base=$(median <"$work/base.txt")
traced=$(median <"$work/traced.txt")
overhead=$(awk -v b="$base" -v t="$traced" 'BEGIN {printf "%.1f", (t - b) / b * 100}')
say "## Overhead"
say ""
say "- demo loop alone: median $base ms (runs: $(paste -sd' ' "$work/base.txt"))"
say "- under opscope gpu: median $traced ms (runs: $(paste -sd' ' "$work/traced.txt"))"
say "- slowdown: $overhead %"
say ""

# --- 4. checks on the last traced run ---------------------------------------------------------
event_ms=$(field event_kernel_ms "$work/traced-$runs.out")
say "## Checks (run $runs; CUDA events measured $event_ms ms of kernels)"
say ""
set +e
python3 "$repo/tests/gpu/check_profile.py" "$work/demo-$runs.json" "$iterations" "$event_ms" | tee -a "$result"
status=${PIPESTATUS[0]}

# --- 5. a crash in the middle -----------------------------------------------------------------
crash_after=5
"$opscope" gpu -o "$work/crash.json" -- "$work/gpu_demo" --iterations "$iterations" --crash-after $crash_after \
  >"$work/crash.out" 2>"$work/crash.err"
crash_rc=$?
[[ $crash_rc -eq 139 ]] && echo "PASS  opscope returned the program's status 139 (SIGSEGV)" | tee -a "$result" \
  || { echo "FAIL  opscope returned $crash_rc for the crashing program, expected 139" | tee -a "$result"; status=1; }
python3 "$repo/tests/gpu/check_profile.py" "$work/crash.json" $crash_after 0 --crash 11 | tee -a "$result"
[[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
set -e

say ""
say "## Report of run $runs"
say ""
say '```'
sed -n '/^==== opscope gpu/,/^GPU trace:/p' "$work/traced-$runs.out" | head -120 >>"$result"
sed -n '/^Findings:/,$p' "$work/traced-$runs.out" >>"$result"
say '```'
if [[ -n ${OUT:-} ]]; then
  mkdir -p "$OUT"
  cp "$result" "$work/demo-$runs.json" "$work/traced-$runs.out" "$OUT/" 2>/dev/null || true
fi
echo "run.sh: $( [[ $status -eq 0 ]] && echo ALL CHECKS PASSED || echo SOME CHECKS FAILED ); details in $result"
exit "$status"
