#!/usr/bin/env bash
# Side by side: the cost of one OPSCOPE_RANGE outside `opscope run`, inside it without per-range
# CPU time, and inside it with CPU time (the default).
# Usage: bench/annotate_overhead.sh [build dir, default build/release] [iterations per batch]
set -eu
build=${1:-build/release}
n=${2:-200000}
"$build/bench/annotate_overhead" "$n"
"$build/opscope" run --no-cpu-time -- "$build/bench/annotate_overhead" "$n" 2>/dev/null | head -1 | sed 's/^recording/recording, --no-cpu-time/'
"$build/opscope" run -- "$build/bench/annotate_overhead" "$n" 2>/dev/null | head -1 | sed 's/^recording/recording, CPU time on/'
