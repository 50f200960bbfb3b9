// A shared library the dlopen test program loads only after sampling has started: its functions
// must still be named (opscope follows the mmap records of libraries loaded later).
#include <chrono>
#include <cstdint>

extern "C" __attribute__((noinline)) uint64_t late_library_spin(int ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  uint64_t x = 1;
  while (std::chrono::steady_clock::now() < end)
    for (int i = 0; i < 20000; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  return x;
}
