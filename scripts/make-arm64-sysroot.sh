#!/usr/bin/env bash
# Makes the arm64 Debian 12 sysroot that the cross build (`cmake --preset arm64`) compiles and
# links against, and that qemu-aarch64-static runs the tests in, from Debian's own arm64 packages.
# Debian's arm64 -dev packages cannot be co-installed with their amd64 twins (multiarch file
# conflicts in libdnnl-dev and libonnx-dev), so they are unpacked into a folder instead:
# debootstrap --foreign resolves the dependency closure and downloads it; every package is then
# unpacked with dpkg-deb (no arm64 code runs, nothing is configured). Absolute symlinks are made
# relative so that they resolve inside the sysroot.
# Usage: scripts/make-arm64-sysroot.sh [DIR]   (default build/arm64-sysroot; reused when its
# package list is unchanged). Needs root (debootstrap) and the network access to Debian's archive.
set -euo pipefail
cd "$(dirname "$0")/.."

# The arm64 twins of what the native build links (scripts/install-deps.sh), plus the C and C++
# runtimes' development files.
PACKAGES=(
  libc6-dev libstdc++-12-dev libgomp1
  libonnx-dev libprotobuf-dev libdnnl-dev ocl-icd-opencl-dev opencl-c-headers
  libdw-dev libelf-dev zlib1g-dev nlohmann-json3-dev libcli11-dev libfmt-dev
  libgtest-dev libgmock-dev libsimdjson-dev libsqlite3-dev libzstd-dev libpfm4-dev
)
if [[ "${1:-}" == --list ]]; then
  printf '%s\n' "${PACKAGES[@]}"
  exit 0
fi
out=$(realpath -m "${1:-build/arm64-sysroot}")
mirror=${OPSCOPE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
want=$(printf '%s\n' bookworm "$mirror" "${PACKAGES[@]}" | sha256sum | cut -c1-16)
if [[ -f "$out/.opscope-sysroot" && "$(cat "$out/.opscope-sysroot")" == "$want" ]]; then
  echo "arm64 sysroot: $out (up to date)"
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "make-arm64-sysroot: debootstrap needs root; run this script as root (or with sudo)" >&2
  exit 1
fi
for tool in debootstrap dpkg-deb; do
  command -v "$tool" >/dev/null || {
    echo "make-arm64-sysroot: $tool is missing (scripts/install-deps.sh --arm64 installs it)" >&2
    exit 1
  }
done

tmp="$out.partial"
rm -rf "$tmp"
mkdir -p "$(dirname "$out")"
include=$(IFS=,; echo "${PACKAGES[*]}")
echo "arm64 sysroot: downloading Debian 12 arm64 packages into $tmp"
if ! debootstrap --foreign --arch=arm64 --variant=minbase --include="$include" \
    bookworm "$tmp" "$mirror" >"$tmp.log" 2>&1; then
  tail -20 "$tmp.log" >&2
  echo "make-arm64-sysroot: debootstrap failed (log: $tmp.log)" >&2
  exit 1
fi
n=0
for deb in "$tmp"/var/cache/apt/archives/*.deb; do
  dpkg-deb --fsys-tarfile "$deb" | tar -C "$tmp" --keep-directory-symlink -xf -
  n=$((n + 1))
done
# /usr/lib/aarch64-linux-gnu/libm.so -> /lib/aarch64-linux-gnu/libm.so.6 and the like: made
# relative to the link's own folder, so the linker finds the sysroot's file, not the host's.
while IFS= read -r link; do
  target=$(readlink "$link")
  rel=$(realpath -m --relative-to="$(dirname "$link")" "$tmp$target")
  ln -sfn "$rel" "$link"
done < <(find "$tmp/usr" "$tmp/etc" -type l -lname '/*')
rm -rf "$tmp/var/cache/apt/archives" "$tmp/debootstrap"
rm -f "$tmp.log"
echo "$want" >"$tmp/.opscope-sysroot"
rm -rf "$out"
mv "$tmp" "$out"
echo "arm64 sysroot: $out ($n packages, $(du -sh "$out" | cut -f1))"
