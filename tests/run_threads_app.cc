// Four threads record nested ranges at once; names are built in one reused stack buffer, so
// the same pointer carries different names (the recorder must not confuse them).
#include <opscope/annotate.h>

#include <cstdio>
#include <thread>
#include <vector>

static void Worker(int t) {
  char name[32];
  for (int i = 0; i < 50; ++i) {
    std::snprintf(name, sizeof name, "job-%d", i % 2);
    OPSCOPE_RANGE(name);
    std::snprintf(name, sizeof name, "thread-%d", t);
    OPSCOPE_RANGE(name);
  }
}

int main() {
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t) pool.emplace_back(Worker, t);
  for (auto& th : pool) th.join();
  std::printf("threads_app done\n");
  return 0;
}
