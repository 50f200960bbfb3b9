#!/usr/bin/env bash
# Two opscope builds side by side on the same models (an engine change, before and after), in one
# run. For each model the two binaries alternate REPS times, each time `opscope profile` with
# WARMUP + RUNS inferences at THREADS threads; the figures are the median over repetitions of
# each side's median latency (the profile's overhead.baseline_median_ms, no observer) and of its
# user CPU time per inference (robust when other work shares the machine), and the ratios B/A
# (< 1: B faster).
#
#   bench/ab_builds.sh A_BINARY B_BINARY [REPS=5] [RUNS=15] [WARMUP=3] [THREADS=1] -- MODEL...
#   MODEL is a path, optionally followed by profile options after a comma:
#     models/corpus/models/ppocr_v4_det.onnx,--shape,x=1x3x640x640
# Environment variables reach both sides (e.g. OPSCOPE_REGION_LAYOUT); AB_ENV_A / AB_ENV_B add
# one NAME=VALUE to one side only (the same binary twice with another region layout).
set -euo pipefail
A=$1 B=$2
shift 2
REPS=5 RUNS=15 WARMUP=3 THREADS=1
for v in REPS RUNS WARMUP THREADS; do
  if [[ $# -gt 0 && $1 != -- ]]; then printf -v "$v" '%s' "$1"; shift; fi
done
[[ ${1:-} == -- ]] && shift
[[ $# -gt 0 ]] || { echo "usage: $0 A B [REPS RUNS WARMUP THREADS] -- MODEL..." >&2; exit 2; }

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
# One profile: prints "<median ms> <user CPU ms per inference>".
one() {
  local bin=$1 extra_env=$2 model=$3
  shift 3
  local tf json
  tf=$(mktemp) json=$(mktemp)
  env ${extra_env:+"$extra_env"} /usr/bin/time -f %U -o "$tf" "$bin" profile "$model" "$@" \
    --threads "$THREADS" --warmup "$WARMUP" --runs "$RUNS" --format json >"$json"
  local ms
  ms=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["overhead"]["baseline_median_ms"])' "$json")
  # The overhead measurement adds as many runs again (interleaved); the planning run is one more.
  awk -v ms="$ms" -v u="$(cat "$tf")" -v n=$((2 * RUNS + WARMUP + 1)) \
    'BEGIN {printf "%s %.3f\n", ms, 1000 * u / n}'
  rm -f "$tf" "$json"
}

echo "| model | A median (ms) | B median (ms) | B/A | A CPU ms/inf | B CPU ms/inf | B/A CPU |"
echo "|---|---|---|---|---|---|---|"
for spec in "$@"; do
  IFS=, read -r -a parts <<<"$spec"
  model=${parts[0]}
  opts=("${parts[@]:1}")
  am=() bm=() ac=() bc=()
  for ((r = 0; r < REPS; r++)); do
    read -r m c < <(one "$A" "${AB_ENV_A:-}" "$model" "${opts[@]}")
    am+=("$m") ac+=("$c")
    read -r m c < <(one "$B" "${AB_ENV_B:-}" "$model" "${opts[@]}")
    bm+=("$m") bc+=("$c")
  done
  ma=$(printf '%s\n' "${am[@]}" | median) mb=$(printf '%s\n' "${bm[@]}" | median)
  ca=$(printf '%s\n' "${ac[@]}" | median) cb=$(printf '%s\n' "${bc[@]}" | median)
  awk -v n="$(basename "$model" .onnx)" -v ma="$ma" -v mb="$mb" -v ca="$ca" -v cb="$cb" \
    'BEGIN {printf "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", n, ma, mb, mb / ma, ca, cb, cb / ca}'
done
