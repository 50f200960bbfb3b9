#!/usr/bin/env bash
# Report speed: `opscope report` against `perf report` on recordings of the same program
# (tests/record_split, two threads) with DWARF call graphs, and the total cost
# record + report for both tools, since opscope moves unwinding and symbolization into record.
#
# usage: bench/report_speed.sh [BUILD_DIR]   env: DURATION_MS (60000) FREQ (4000) STACK (8192)
#        REPORT_REPEATS (3)
# `opscope report` shows file:line by default; perf report is timed in its default form (no
# srcline, which is faster for perf) and, with SRCLINE=1, also with --sort sym,srcline.
set -euo pipefail
BUILD=${1:-build/release}
DURATION_MS=${DURATION_MS:-60000}
FREQ=${FREQ:-4000}
STACK=${STACK:-8192}
REPORT_REPEATS=${REPORT_REPEATS:-3}
OPSCOPE=$BUILD/opscope
PROG=$BUILD/tests/record_split_dwarf
TMP=${TMPDIR:-/tmp}/opscope_report_speed.$$
mkdir -p "$TMP"
trap 'rm -rf "$TMP"' EXIT

now() { date +%s.%N; }
elapsed() { /usr/bin/python3 -c "print(f'{$2 - $1:.2f}')"; }

t0=$(now); "$OPSCOPE" record -q -F "$FREQ" --call-graph "dwarf,$STACK" -o "$TMP/o.rec" -- "$PROG" "$DURATION_MS"; t1=$(now)
o_rec=$(elapsed "$t0" "$t1")
t0=$(now); perf record -q -F "$FREQ" --call-graph "dwarf,$STACK" -o "$TMP/perf.data" -- "$PROG" "$DURATION_MS" 2>/dev/null; t1=$(now)
p_rec=$(elapsed "$t0" "$t1")

o_samples=$("$OPSCOPE" report "$TMP/o.rec" --format json | /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["samples"], "samples,", j["lost"], "lost")')
p_samples=$(perf report -i "$TMP/perf.data" --stdio 2>&1 | grep -m1 '^# Samples' || true)

o_times=(); p_times=(); ps_times=()
for ((i = 0; i < REPORT_REPEATS; i++)); do
  t0=$(now); "$OPSCOPE" report "$TMP/o.rec" >/dev/null; t1=$(now); o_times+=("$(elapsed "$t0" "$t1")")
  t0=$(now); perf report -i "$TMP/perf.data" --stdio >/dev/null 2>&1; t1=$(now); p_times+=("$(elapsed "$t0" "$t1")")
  if [ "${SRCLINE:-0}" = 1 ]; then
    t0=$(now); perf report -i "$TMP/perf.data" --stdio --sort sym,srcline >/dev/null 2>&1; t1=$(now); ps_times+=("$(elapsed "$t0" "$t1")")
  fi
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
o_rep=$(median "${o_times[@]}"); p_rep=$(median "${p_times[@]}")
o_size=$(du -h "$TMP/o.rec" | cut -f1); p_size=$(du -h "$TMP/perf.data" | cut -f1)
echo "report speed: ${DURATION_MS} ms x 2 threads at -F $FREQ, DWARF stacks $STACK B"
echo "opscope: $o_samples; perf: $p_samples"
printf '%-8s %10s %10s %10s %8s\n' tool "record s" "report s" "total s" "file"
printf '%-8s %10s %10s %10s %8s\n' opscope "$o_rec" "$o_rep" "$(/usr/bin/python3 -c "print(f'{$o_rec+$o_rep:.2f}')")" "$o_size"
printf '%-8s %10s %10s %10s %8s\n' perf "$p_rec" "$p_rep" "$(/usr/bin/python3 -c "print(f'{$p_rec+$p_rep:.2f}')")" "$p_size"
echo "perf report / opscope report: $(/usr/bin/python3 -c "print(f'{$p_rep/$o_rep:.1f}x')")"
if [ "${SRCLINE:-0}" = 1 ]; then echo "perf report --sort sym,srcline: $(median "${ps_times[@]}") s"; fi
