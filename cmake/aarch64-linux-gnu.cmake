# Cross build for aarch64 (Jetson Orin, RK3588, any arm64 Debian 12): Debian's cross compilers
# (g++-aarch64-linux-gnu) against the arm64 sysroot that scripts/make-arm64-sysroot.sh unpacks
# from Debian's arm64 packages. Tests run under qemu-user (CMAKE_CROSSCOMPILING_EMULATOR), so
# `ctest` works in the build tree as in a native one. Used by the `arm64` preset.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

if(NOT OPSCOPE_ARM64_SYSROOT)
  set(OPSCOPE_ARM64_SYSROOT "${CMAKE_CURRENT_LIST_DIR}/../build/arm64-sysroot")
endif()
get_filename_component(OPSCOPE_ARM64_SYSROOT "${OPSCOPE_ARM64_SYSROOT}" ABSOLUTE)
if(NOT EXISTS "${OPSCOPE_ARM64_SYSROOT}/.opscope-sysroot")
  message(FATAL_ERROR "no arm64 sysroot at ${OPSCOPE_ARM64_SYSROOT}: run scripts/make-arm64-sysroot.sh "
                      "(or scripts/test-arm64.sh, which makes it)")
endif()
set(CMAKE_SYSROOT "${OPSCOPE_ARM64_SYSROOT}")
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# The target's libraries and CMake packages come from the sysroot only; programs (protoc, the
# host's Python) from the host.
set(CMAKE_FIND_ROOT_PATH "${OPSCOPE_ARM64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${OPSCOPE_ARM64_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR}
    "${OPSCOPE_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${OPSCOPE_ARM64_SYSROOT}/usr/share/pkgconfig")
# Cortex-A76 (RK3588's big cores, and close to Orin's A78AE): the CPU the emulator models; the
# binary itself targets plain armv8-a, so it runs on every arm64 board.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -cpu cortex-a76 -L "${OPSCOPE_ARM64_SYSROOT}")
