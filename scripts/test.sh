#!/usr/bin/env bash
# The second command of the README: install what is missing, build, run every test (CTest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
cd build/release
ctest --output-on-failure -j"$(nproc)" --timeout 900 "$@"
