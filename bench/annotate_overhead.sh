#!/usr/bin/env bash
# Side by side: the annotation cost outside and inside `opscope run`.
# Usage: bench/annotate_overhead.sh [build dir, default build/release] [iterations per batch]
set -euo pipefail
build=${1:-build/release}
n=${2:-200000}
"$build/bench/annotate_overhead" "$n"
"$build/opscope" run --format csv -o /dev/null -- "$build/bench/annotate_overhead" "$n" 2>/dev/null |
  grep -E '^(recording|not under)' || true
# `run` prints its table to stdout; the program's line goes first.
"$build/opscope" run -- "$build/bench/annotate_overhead" "$n" | head -1
