#!/usr/bin/env bash
# The aarch64 build and its tests, on this x86 machine: installs the cross tools, makes the arm64
# sysroot from Debian's packages (scripts/make-arm64-sysroot.sh), cross-builds with the `arm64`
# preset (build/arm64) and runs the tests under qemu-aarch64-static -cpu cortex-a76.
#   scripts/test-arm64.sh            every test that can run under qemu-user
#   scripts/test-arm64.sh --subset   what CI runs: the engine's conformance, kernel and unit tests
#                                    and the profile, import, memory and board end-to-end tests
# Extra arguments go to ctest. Tests labelled `host_only` need what qemu-user cannot give (they
# start aarch64 programs of the build from another program: qemu-user does not follow execve,
# and this machine registers no binfmt handler; or they drive the binary from Python, Node.js or
# Chromium of the host) and are left out; perf_event tests skip with the reason (qemu-user has
# no perf_event_open).
set -euo pipefail
cd "$(dirname "$0")/.."
subset=0
if [[ "${1:-}" == --subset ]]; then
  subset=1
  shift
fi
scripts/install-deps.sh --arm64
scripts/make-arm64-sysroot.sh
cmake --preset arm64 >/dev/null
if ((subset)); then
  # The engine's test programs (conformance, kernels, passes, sessions) and the end-to-end tests
  # of `profile`, `import` and the sections, with the binary they drive. Tests of programs not
  # built here appear as *_NOT_BUILT and are left out.
  targets=(--target opscope profile_cli_test import_cli_test telemetry_section_test
    memory_section_test)
  while read -r t; do targets+=("$t"); done < <(ninja -C build/arm64 -t targets all |
    sed -n 's|^src/engine/\([a-z0-9_]*_test\): CXX_EXECUTABLE_LINKER.*|\1|p')
  cmake --build --preset arm64 -j"$(nproc)" "${targets[@]}"
  cd build/arm64
  ctest --output-on-failure -j"$(nproc)" --timeout 1800 -LE host_only -E '_NOT_BUILT$' "$@"
else
  cmake --build --preset arm64 -j"$(nproc)"
  cd build/arm64
  ctest --output-on-failure -j"$(nproc)" --timeout 1800 -LE host_only "$@"
fi
