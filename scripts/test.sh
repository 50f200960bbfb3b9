#!/usr/bin/env bash
# The second command of the README: install what is missing, build, run every test (CTest); then
# the aarch64 cross build's CI subset under qemu-user (scripts/test-arm64.sh --subset).
# OPSCOPE_ARM64=0 leaves the aarch64 stage out (a quicker run on a developer's machine).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
(cd build/release && ctest --output-on-failure -j"$(nproc)" --timeout 900 "$@")
if [[ "${OPSCOPE_ARM64:-1}" != 0 ]]; then
  echo "test.sh: the aarch64 build under qemu-user (scripts/test-arm64.sh --subset)"
  scripts/test-arm64.sh --subset
fi
