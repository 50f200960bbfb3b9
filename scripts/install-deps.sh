#!/usr/bin/env bash
# Installs every Debian 12 package that opscope's build, tests and benchmarks need; with --arm64
# also the cross compilers, qemu-user and debootstrap of the aarch64 cross build
# (scripts/test-arm64.sh; the sysroot's own arm64 packages come from make-arm64-sysroot.sh).
# Idempotent: packages already installed are skipped, and apt is not touched at all when
# nothing is missing. Needs root (or sudo) only when something must be installed.
# `install-deps.sh --list` prints the list and exits (tests/deps_closure.py checks that every
# package the build touches is in it, or pulled in by it through Depends).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata python3-onnx python3-numpy
  libdnnl-dev ocl-icd-opencl-dev opencl-c-headers libdw-dev libelf-dev zlib1g-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  libsimdjson-dev libsqlite3-dev libzstd-dev libpfm4-dev
  linux-perf nodejs npm chromium git clang-format-14 time
  golang-go
)
# golang-go: `go tool pprof`, the reference pprof reader, which the pprof tests read opscope's
# .pb.gz files back with (src/report/samples_report_test.cc; skipped, saying why, without it).

ARM64_PACKAGES=(g++-aarch64-linux-gnu qemu-user-static debootstrap)

list=0
for arg in "$@"; do
  case "$arg" in
    --list) list=1 ;;
    --arm64) PACKAGES+=("${ARM64_PACKAGES[@]}") ;;
    *) echo "install-deps: unknown option '$arg' (--list, --arm64)" >&2; exit 2 ;;
  esac
done
if ((list)); then
  printf '%s\n' "${PACKAGES[@]}"
  exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# nodejs/npm may come from outside Debian's archive (a preinstalled Node.js): accept that.
if command -v node >/dev/null && command -v npm >/dev/null; then
  filtered=()
  for p in "${missing[@]}"; do [[ "$p" == nodejs || "$p" == npm ]] || filtered+=("$p"); done
  missing=("${filtered[@]}")
fi

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then SUDO=sudo; else
    echo "install-deps: missing packages (${missing[*]}) and not root; run this script as root" >&2
    exit 1
  fi
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
