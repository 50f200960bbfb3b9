#!/usr/bin/env bash
# Overhead of `opscope record` against `perf record` at the same frequency and call-graph mode,
# side by side in one run (interleaved repeats, medians, ratios).
#
# The workload is tests/record_split (two CPU-bound threads) doing a fixed amount of work.
# Reported per tool and mode: median wall time of the whole command (profiler included, so
# opscope's symbolization at the end counts), median CPU time (user+sys of the profiler and the
# program together: on a shared machine this is the honest cost), and the slowdown of each
# against the unprofiled program.
#
# usage: bench/record_overhead.sh [BUILD_DIR]     env: FREQ (997) ROUNDS (400) REPEATS (5)
#        STACK (8192: DWARF stack bytes for both tools) MODES ("fp dwarf")
set -euo pipefail
BUILD=${1:-build/release}
FREQ=${FREQ:-997}
ROUNDS=${ROUNDS:-400}
REPEATS=${REPEATS:-5}
STACK=${STACK:-8192}
MODES=${MODES:-fp dwarf}
OPSCOPE=$BUILD/opscope
PROG_FP=$BUILD/tests/record_split_fp
PROG_DW=$BUILD/tests/record_split_dwarf
command -v perf >/dev/null || { echo "perf not found" >&2; exit 1; }
[ -x "$OPSCOPE" ] && [ -x "$PROG_FP" ] && [ -x "$PROG_DW" ] ||
  { echo "build opscope record_split_fp record_split_dwarf first" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
RESULTS=$TMP/results.txt

# measure NAME CMD...: appends "NAME wall user sys" using bash's time (children included).
measure() {
  local name=$1; shift
  local t
  t=$( { TIMEFORMAT='%R %U %S'; time "$@" >/dev/null 2>&1; } 2>&1 )
  echo "$name $t" >>"$RESULTS"
}

for ((i = 0; i < REPEATS; i++)); do
  measure baseline-fp "$PROG_FP" "n$ROUNDS"
  measure baseline-dwarf "$PROG_DW" "n$ROUNDS"
  for mode in $MODES; do
    if [ "$mode" = fp ]; then prog=$PROG_FP; ocg=fp; pcg=fp; else prog=$PROG_DW; ocg="dwarf,$STACK"; pcg="dwarf,$STACK"; fi
    measure "opscope-$mode" "$OPSCOPE" record -q -F "$FREQ" --call-graph "$ocg" -o "$TMP/o.rec" -- "$prog" "n$ROUNDS"
    measure "perf-$mode" perf record -q -F "$FREQ" --call-graph "$pcg" -o "$TMP/perf.data" -- "$prog" "n$ROUNDS"
  done
done

/usr/bin/python3 - "$RESULTS" "$FREQ" "$ROUNDS" "$REPEATS" "$STACK" "$MODES" <<'PY'
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    name, wall, user, sys_ = line.split()
    rows.setdefault(name, []).append((float(wall), float(user) + float(sys_)))
freq, rounds, repeats, stack, modes = sys.argv[2:7]
print(f"record overhead: -F {freq}, {rounds} rounds x 2 threads, {repeats} repeats, DWARF stack {stack} B (medians)")
print(f"{'command':<16} {'wall s':>8} {'cpu s':>8} {'wall vs base':>13} {'cpu vs base':>12}")
for mode in modes.split():
    base = rows[f"baseline-{mode}"]
    bw, bc = st.median(w for w, _ in base), st.median(c for _, c in base)
    print(f"{'baseline-'+mode:<16} {bw:8.2f} {bc:8.2f} {'':>13} {'':>12}")
    res = {}
    for tool in ("opscope", "perf"):
        r = rows[f"{tool}-{mode}"]
        w, c = st.median(x for x, _ in r), st.median(y for _, y in r)
        res[tool] = (w, c)
        print(f"{tool+'-'+mode:<16} {w:8.2f} {c:8.2f} {100*(w/bw-1):+12.1f}% {100*(c/bc-1):+11.1f}%")
    ow, oc = res["opscope"]; pw, pc = res["perf"]
    print(f"  {mode}: opscope/perf wall {ow/pw:.2f}x, cpu {oc/pc:.2f}x")
PY
