// A program whose CPU profile is known by construction, for the sampling accuracy test:
// two threads each run work(), which spends 3/4 of its loop iterations in heavy() and 1/4 in
// light() (same per-iteration body, so the split holds by instruction count, not by timing).
// heavy() and light() end with a call so that they are not leaf functions: GCC omits the frame
// pointer setup of leaf functions that need no stack even with -fno-omit-frame-pointer, which
// would hide work() from frame-pointer call chains (perf shows the same).
// Usage: record_split [milliseconds of work per thread, default 1500]
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>

static volatile uint64_t g_sink;

__attribute__((noinline)) static uint64_t Body(uint64_t x, int n) {
  for (int i = 0; i < n; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  return x;
}

extern "C" __attribute__((noinline)) uint64_t heavy(uint64_t x) {
  for (int i = 0; i < 3; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    for (int j = 0; j < 20000; ++j) x ^= (x >> 7) * 31 + j;
    asm volatile("" : "+r"(x));
  }
  return Body(x, 1);
}

extern "C" __attribute__((noinline)) uint64_t light(uint64_t x) {
  x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  for (int j = 0; j < 20000; ++j) x ^= (x >> 7) * 31 + j;
  asm volatile("" : "+r"(x));
  return Body(x, 1);
}

extern "C" __attribute__((noinline)) void work(int64_t ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  uint64_t x = 1;
  while (std::chrono::steady_clock::now() < end) {
    for (int k = 0; k < 4; ++k) {
      x = heavy(x);
      x = light(x);
    }
  }
  g_sink = x;
}

int main(int argc, char** argv) {
  int64_t ms = argc > 1 ? std::atoll(argv[1]) : 1500;
  std::thread t([ms] { work(ms); });
  work(ms);
  t.join();
  return 0;
}
