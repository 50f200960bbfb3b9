// Programs whose counts are known by construction, for `opscope stat` tests and the side-by-side
// comparison with `perf stat` (bench/stat_vs_perf.sh).
//
//   stat_workload faults PAGES THREADS   each thread touches PAGES fresh 4 KiB pages (1 fault each)
//   stat_workload spin ITERS THREADS     each thread runs ITERS iterations of a dependent loop
//   stat_workload sleep N                N 100-microsecond sleeps (N voluntary context switches)
//   stat_workload fork-faults PAGES      a forked child touches PAGES pages; the parent waits
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr size_t kPage = 4096;

void Faults(long pages) {
  const size_t bytes = static_cast<size_t>(pages) * kPage;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  madvise(p, bytes, MADV_NOHUGEPAGE);  // one fault per 4 KiB page, not per 2 MiB
  volatile char* c = static_cast<char*>(p);
  for (long i = 0; i < pages; ++i) c[static_cast<size_t>(i) * kPage] = 1;
  munmap(p, bytes);
}

void Spin(long iters) {
  volatile uint64_t x = 1;
  for (long i = 0; i < iters; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
}

void OnThreads(int threads, void (*fn)(long), long arg) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(fn, arg);
  for (auto& t : pool) t.join();
}

int Usage() {
  std::fprintf(stderr,
               "usage: stat_workload faults PAGES THREADS | spin ITERS THREADS | sleep N | "
               "fork-faults PAGES\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return Usage();
  const char* mode = argv[1];
  const long n = std::atol(argv[2]);
  const int threads = argc > 3 ? std::atoi(argv[3]) : 1;
  if (n < 0 || threads < 1) return Usage();
  if (!std::strcmp(mode, "faults")) {
    OnThreads(threads, Faults, n);
  } else if (!std::strcmp(mode, "spin")) {
    OnThreads(threads, Spin, n);
  } else if (!std::strcmp(mode, "sleep")) {
    for (long i = 0; i < n; ++i) {
      timespec ts{0, 100000};
      nanosleep(&ts, nullptr);
    }
  } else if (!std::strcmp(mode, "fork-faults")) {
    pid_t child = fork();
    if (child == 0) {
      Faults(n);
      _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
  } else {
    return Usage();
  }
  return 0;
}
