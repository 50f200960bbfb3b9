// Cost of one OPSCOPE_RANGE (push + pop) in a tight loop, next to the same loop without it.
// Run it directly (recorder absent: the "disabled" cost) and under `opscope run` (recording);
// bench/annotate_overhead.sh does both side by side. Prints the median of 15 batches.
#include <dlfcn.h>
#include <opscope/annotate.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

static volatile int g_sink;

__attribute__((noinline)) static void Plain(int n) {
  for (int i = 0; i < n; ++i) g_sink = i;
}
__attribute__((noinline)) static void Annotated(int n) {
  for (int i = 0; i < n; ++i) {
    OPSCOPE_RANGE("step");
    g_sink = i;
  }
}

template <typename F>
static double MedianNsPerIter(F f, int n) {
  std::vector<double> v;
  for (int b = 0; b < 15; ++b) {
    auto t0 = std::chrono::steady_clock::now();
    f(n);
    auto t1 = std::chrono::steady_clock::now();
    v.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 200000;
  if (n <= 0) n = 200000;
  bool recording = dlsym(RTLD_DEFAULT, "opscope_annotate_api_v1") != nullptr &&
                   std::getenv("OPSCOPE_RANGES_OUT");
  double plain = MedianNsPerIter(Plain, n);
  double annotated = MedianNsPerIter(Annotated, n);
  std::printf("%s: loop %.2f ns/iter, with OPSCOPE_RANGE %.2f ns/iter: %.2f ns per range\n",
              recording ? "recording" : "not under opscope", plain, annotated, annotated - plain);
  return 0;
}
