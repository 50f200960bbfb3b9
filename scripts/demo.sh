#!/usr/bin/env bash
# The first command of the README: install what is missing, build, profile the demo model.
# Builds only the opscope binary (not the tests and benchmarks, which scripts/test.sh builds).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release opscope
exec build/release/opscope profile models/bev_demo.onnx --threads 2 --warmup 10 --runs 50 -o profile.json "$@"
