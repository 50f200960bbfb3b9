#!/usr/bin/env bash
# Configures and builds opscope (release by default: never profile a debug build).
# Usage: scripts/build.sh [preset]   (release | debug | asan | fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j"$(nproc)"
