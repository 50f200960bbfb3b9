// Loads a library with dlopen after a short delay and spends its time in it.
// Usage: record_dlopen LIBRARY_PATH [MS]
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  void* h = dlopen(argv[1], RTLD_NOW);
  if (!h) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  auto fn = reinterpret_cast<uint64_t (*)(int)>(dlsym(h, "late_library_spin"));
  if (!fn) return 1;
  volatile uint64_t sink = fn(argc > 2 ? std::atoi(argv[2]) : 500);
  (void)sink;
  return 0;
}
