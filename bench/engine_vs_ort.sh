#!/usr/bin/env bash
# Side-by-side latency of opscope's engine and ONNX Runtime (CPU, graph optimizations on) on
# the same models, at 1 and 2 threads, in one run. For each (model, threads) the two runtimes
# alternate REPS times (each time WARMUP + RUNS inferences) so machine noise hits both alike;
# the reported figure is the median over repetitions of each side's median latency, and the
# ratio opscope / ORT (< 1: opscope faster).
#
#   bench/engine_vs_ort.sh [REPS=3] [RUNS=20] [WARMUP=5]
#   MODELS="mobilenet_style" bench/engine_vs_ort.sh ...   (a subset of the four models)
#   MODELS="models/corpus/models/isnet_quint8.onnx" bench/engine_vs_ort.sh 3 5 2  (any .onnx path)
# Needs a release build (scripts/build.sh) and installs onnxruntime-node from npm into bench/.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-3}
RUNS=${2:-20}
WARMUP=${3:-5}
OUT=bench/out
mkdir -p "$OUT/models"
OPSCOPE=build/release/opscope
[[ -x $OPSCOPE ]] || scripts/build.sh release

if [[ ! -d bench/node_modules/onnxruntime-node ]]; then
  # The package's install script would download GPU binaries that cannot be reached; the CPU
  # build ships inside the npm package itself.
  (cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund --silent)
fi
/usr/bin/python3 tools/gen_models.py "$OUT/models" resnet_style mobilenet_style transformer_encoder >/dev/null
cp models/bev_demo.onnx "$OUT/models/"

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

table="| model | threads | opscope median (ms) | ONNX Runtime median (ms) | ratio opscope/ORT |\n|---|---|---|---|---|\n"
for model in ${MODELS:-resnet_style mobilenet_style transformer_encoder bev_demo}; do
  path="$OUT/models/$model.onnx"
  if [[ $model == *.onnx ]]; then path=$model; model=$(basename "$model" .onnx); fi
  for threads in 1 2; do
    ours=(); theirs=()
    for ((r = 0; r < REPS; r++)); do
      o=$($OPSCOPE profile "$path" --threads "$threads" --warmup "$WARMUP" --runs "$RUNS" \
            --format json | /usr/bin/python3 -c 'import json,sys; p=json.load(sys.stdin); print(p["overhead"]["baseline_median_ms"])')
      t=$(node bench/ort_bench.js "$path" "$threads" "$WARMUP" "$RUNS" | \
            /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["median_ms"])')
      ours+=("$o"); theirs+=("$t")
    done
    mo=$(printf '%s\n' "${ours[@]}" | median)
    mt=$(printf '%s\n' "${theirs[@]}" | median)
    ratio=$(awk -v a="$mo" -v b="$mt" 'BEGIN {printf "%.2f", a / b}')
    line="| $model | $threads | $(printf %.2f "$mo") | $(printf %.2f "$mt") | $ratio |"
    echo "$line"
    table+="$line\n"
  done
done
printf "%b" "$table" > "$OUT/engine_vs_ort.md"
echo "wrote $OUT/engine_vs_ort.md"
