#!/usr/bin/env bash
# Configures and builds opscope (release by default: never profile a debug build).
# Usage: scripts/build.sh [preset] [target...]   (release | debug | asan | fuzz; all targets
# unless some are named, e.g. `scripts/build.sh release opscope` for the binary alone)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
shift || true
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j"$(nproc)" "${targets[@]}"
