// A program whose CPU profile is known by construction, for the sampling accuracy test:
// two threads each run work(), which spends 3/4 of its loop iterations in heavy() and 1/4 in
// light() (same per-iteration body, so the split holds by instruction count, not by timing).
// heavy() and light() end with a call so that they are not leaf functions: GCC omits the frame
// pointer setup of leaf functions that need no stack even with -fno-omit-frame-pointer, which
// would hide work() from frame-pointer call chains (perf shows the same).
// Usage: record_split [MS]   work MS milliseconds per thread (default 1500)
//        record_split nCOUNT   a fixed amount of work (COUNT rounds per thread), for overhead
//                              benchmarks; prints the elapsed time of the work to stderr
#include <chrono>
#include <cstdint>
#include <cstdio>
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

extern "C" __attribute__((noinline)) void work(int64_t ms, int64_t rounds) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  uint64_t x = 1;
  for (int64_t r = 0; rounds > 0 ? r < rounds : std::chrono::steady_clock::now() < end; ++r) {
    for (int k = 0; k < 4; ++k) {
      x = heavy(x);
      x = light(x);
    }
  }
  g_sink = x;
}

int main(int argc, char** argv) {
  int64_t ms = 1500, rounds = 0;
  if (argc > 1 && argv[1][0] == 'n') {
    rounds = std::atoll(argv[1] + 1);
  } else if (argc > 1) {
    ms = std::atoll(argv[1]);
  }
  auto t0 = std::chrono::steady_clock::now();
  std::thread t([ms, rounds] { work(ms, rounds); });
  work(ms, rounds);
  t.join();
  if (rounds > 0)
    std::fprintf(
        stderr, "elapsed_ms=%.1f\n",
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}
