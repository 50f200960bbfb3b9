#!/usr/bin/env bash
# Builds the fuzz preset (clang, libFuzzer + ASan + UBSan over the libraries under test) and runs
# every fuzz target for SECONDS each (default 60), one worker each, one after the other.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#   FUZZ_RUNS=10000000 scripts/fuzz.sh 14400 model_fuzz   (stop at 10 M executions or 4 h)
#   FUZZ_WORKERS=2 FUZZ_RUNS=10000000 scripts/fuzz.sh 9000 model_struct_fuzz
#       (two in-process fuzzers on the one corpus, 5 M executions each; the line sums them)
#   FUZZ_FLAGS='-only_ascii=1' FUZZ_TIMEOUT=120 scripts/fuzz.sh 600 import_perf_script_fuzz
#   FUZZ_MERGE=1 FUZZ_WORKERS=2 scripts/fuzz.sh 9000 model_struct_fuzz
#       (first shrink the kept corpus to the units that add coverage, with -merge=1 in N parts)
#
# Each target starts from its seeds (tests/fuzz_corpus/<target>/ plus the folders its
# opscope_fuzzer() names under SEEDS, listed in build/fuzz/fuzzers.txt) and keeps what it finds in
# build/fuzz/corpus/<target>/ between runs; a crash leaves its input in
# build/fuzz/artifacts/<target>/. FUZZ_NO_BUILD=1 runs what is already built. Prints one line per
# target: executions, executions per second, coverage, and the result. Exit status 1 when any
# target crashed. A crash input worth keeping goes into tests/fuzz_corpus/<target>/ (after the
# fix), where CTest replays it in every build, and `ctest --preset fuzz` through the sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
if [ -z "${FUZZ_NO_BUILD:-}" ]; then  # FUZZ_NO_BUILD=1: run what is built
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j"${JOBS:-2}" --target fuzzers
fi

root=$PWD
build=$root/build/fuzz
# Per-target libFuzzer flags. -entropic=0 (the plain power schedule instead of the entropic one)
# where it was measured faster from the same corpus with no less coverage (docs/fuzzing.md,
# eighth session): model_struct_fuzz 320-354 -> 756-792 execs/s, import_ort 1,453 -> 2,373; for
# record_file it was slower and for import_tflite no faster, so they keep the default.
flags_for() {
  case $1 in
    model_fuzz|model_struct_fuzz) echo -max_len=65536 -entropic=0 ;;  # the seeds are a few kB
    import_ort_fuzz) echo -max_len=16384 -entropic=0 ;;
    *) echo -max_len=16384 ;;
  esac
}

status=0
# A signal to this script reaches the workers through the wait loop below (as SIGINT).
trap ':' INT TERM HUP
workers=${FUZZ_WORKERS:-1}
case $workers in ''|*[!0-9]*|0) echo "fuzz.sh: FUZZ_WORKERS must be a positive integer" >&2; exit 2 ;; esac
runs=${FUZZ_RUNS:-}
# N workers share the executions: each stops after its part of FUZZ_RUNS (rounded up).
if [ -n "$runs" ] && [ "$workers" -gt 1 ]; then runs=$(( (runs + workers - 1) / workers )); fi

# minimize NAME PATH CORPUS: replaces CORPUS by the smallest set of its units that keeps its
# coverage (libFuzzer's -merge=1). A corpus that N workers grew keeps every unit that was new to the
# worker that found it, most of them redundant: model_struct_fuzz's had grown to 100,138 files for
# 7,044 units' worth of coverage, and each worker spent 18 minutes reading it in before its first
# mutation. The merge runs in $workers parts at once, then once over what the parts kept; an
# input that crashes or times out here is skipped by the merge (the run proper finds it again).
minimize() {
  local name=$1 path=$2 corpus=$3 tmp=$3.merge i n f part
  # merge CONTROL LOG OUT IN...: one -merge=1 pass with the run's flags.
  merge() {
    # shellcheck disable=SC2046
    "$path" -merge=1 $(flags_for "$name") -rss_limit_mb=2048 -timeout="${FUZZ_TIMEOUT:-25}" \
      -merge_control_file="$1" "${@:3}" </dev/null >"$2" 2>&1
  }
  n=$(find "$corpus" -maxdepth 1 -type f | wc -l)
  [ "$n" -gt 0 ] || return 0
  rm -rf "$tmp"
  for ((i = 1; i <= workers; i++)); do mkdir -p "$tmp/in$i" "$tmp/out$i"; done
  mkdir -p "$tmp/all"
  i=0
  while IFS= read -r -d '' f; do
    part=$((i++ % workers + 1))
    ln "$f" "$tmp/in$part/" 2>/dev/null || cp "$f" "$tmp/in$part/"
  done < <(find "$corpus" -maxdepth 1 -type f -print0)
  local mpids=()
  for ((i = 1; i <= workers; i++)); do
    merge "$tmp/control$i" "$tmp/merge$i.log" "$tmp/out$i" "$tmp/in$i" &
    mpids+=($!)
  done
  for i in "${!mpids[@]}"; do
    if ! wait "${mpids[i]}"; then  # a failed part, or a signal to this script
      kill -INT "${mpids[@]}" 2>/dev/null || true
      echo "fuzz.sh: merging part $((i + 1)) of $corpus failed; log $tmp/merge$((i + 1)).log" >&2
      return 1
    fi
  done
  merge "$tmp/control" "$tmp/merge.log" "$tmp/all" "$tmp"/out* ||
    { echo "fuzz.sh: merging $corpus failed; log $tmp/merge.log" >&2; return 1; }
  rm -rf "$corpus" && mv "$tmp/all" "$corpus" && rm -rf "$tmp"
  echo "fuzz.sh: $name: corpus minimized from $n to $(find "$corpus" -maxdepth 1 -type f | wc -l) units" >&2
}

# result_of LOG RC: ok, interrupted (no crash), or CRASH (why) file.
result_of() {
  local log=$1 rc=$2 crash why
  if [ "$rc" -eq 0 ]; then
    echo "ok"
  elif grep -q 'libFuzzer: run interrupted' "$log"; then
    # SIGINT/SIGTERM from outside (exit 72): neither ok nor a finding.
    echo "interrupted (no crash); log $log"
  else
    # The slow-unit-* files libFuzzer writes along the way are not the crash.
    crash=$( (grep -o 'Test unit written to .*' "$log" || true) | grep -v '/slow-unit-' | \
      tail -n 1 | sed 's/Test unit written to //')
    why=$(grep -m1 -o 'ERROR: [A-Za-z]*Sanitizer: [a-zA-Z-]*\|ERROR: libFuzzer: [a-z-]*\|runtime error: .*\|deadly signal' \
      "$log" || true)
    echo "CRASH (${why:-exit $rc}) ${crash:-}; log $log"
  fi
}

printf '%-20s %12s %10s %8s  %s\n' target execs exec/s cov result
while read -r name path inputs; do
  if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
  if [ ! -x "$path" ]; then
    printf '%-20s %12s %10s %8s  %s\n' "$name" - - - "not built"
    status=1
    continue
  fi
  corpus=$build/corpus/$name
  artifacts=$build/artifacts/$name/
  mkdir -p "$corpus" "$artifacts"
  if [ -n "${FUZZ_MERGE:-}" ] && ! minimize "$name" "$path" "$corpus"; then
    printf '%-20s %12s %10s %8s  %s\n' "$name" - - - "corpus merge failed"
    status=1
    continue
  fi
  # One worker logs to fuzz-<target>.log; N workers to fuzz-<target>.w<i>.log.
  logs=() pids=()
  for ((i = 1; i <= workers; i++)); do
    if [ "$workers" -eq 1 ]; then logs+=("$build/fuzz-$name.log"); else logs+=("$build/fuzz-$name.w$i.log"); fi
    # In-process (-jobs/-workers would fork a child that logs to ./fuzz-N.log). With N workers,
    # N such processes write their new units into the same corpus folder, and libFuzzer's
    # -reload (on by default) reads in what the others found. FUZZ_FLAGS: more libFuzzer flags,
    # split on spaces.
    # shellcheck disable=SC2046,SC2086
    "$path" -max_total_time="$seconds" ${runs:+-runs="$runs"} -print_final_stats=1 \
      $(flags_for "$name") ${FUZZ_FLAGS:-} -rss_limit_mb=2048 -timeout="${FUZZ_TIMEOUT:-25}" \
      -artifact_prefix="$artifacts" "$corpus" $(for d in $inputs; do [ -d "$d" ] && echo "$d"; done) \
      </dev/null >"${logs[-1]}" 2>&1 &
    pids+=($!)
  done
  # Wait for every worker. When one stops with a finding, or a signal reaches this script, the
  # others get SIGINT: libFuzzer then prints its final stats and exits 72 (interrupted).
  declare -A rcs=() live=()
  for pid in "${pids[@]}"; do live[$pid]=1; done
  while [ ${#live[@]} -gt 0 ]; do
    rc=0 done_pid=''
    wait -n -p done_pid "${!live[@]}" || rc=$?
    if [ -z "${done_pid:-}" ]; then  # a trapped signal interrupted the wait (done_pid unset)
      kill -INT "${!live[@]}" 2>/dev/null || true
      continue
    fi
    unset "live[$done_pid]"
    rcs[$done_pid]=$rc
    if [ "$rc" -ne 0 ] && [ ${#live[@]} -gt 0 ]; then kill -INT "${!live[@]}" 2>/dev/null || true; fi
  done
  execs=0 rate=0 cov='' result=ok
  for ((i = 0; i < workers; i++)); do
    log=${logs[i]}
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    r=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    c=$( (grep -o 'cov: [0-9]*' "$log" || true) | tail -n 1 | cut -d' ' -f2)
    if [ -n "$n" ] && [ "$execs" != "?" ]; then execs=$((execs + n)); else execs="?"; fi
    if [ -n "$r" ] && [ "$rate" != "?" ]; then rate=$((rate + r)); else rate="?"; fi
    if [ -n "$c" ] && { [ -z "$cov" ] || [ "$c" -gt "$cov" ]; }; then cov=$c; fi
    # The first crash names the result, else the first interruption (the others stopped
    # because of it).
    r=$(result_of "$log" "${rcs[${pids[i]}]}")
    if [ "$r" != ok ]; then
      status=1
      case $result/$r in ok/* | interrupted*/CRASH*) result=$r ;; esac
    fi
  done
  unset rcs live
  printf '%-20s %12s %10s %8s  %s\n' "$name" "$execs" "$rate" "${cov:-?}" "$result"
done <"$build/fuzzers.txt"
exit $status
