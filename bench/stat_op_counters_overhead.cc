// Cost of per-operator counters: ns per step (the begin + end reads of every counted thread) for
// 1, 2 and 4 counted threads, against the same loop without counters. Steps are empty, so the
// numbers are the pure reading cost that `opscope profile --counters` adds to every node.
//
//   build/release/bench/stat_op_counters_overhead [STEPS]
#include <sys/syscall.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/stats.h"
#include "collect/op_counters.h"

using opscope::collect::OpCounters;

namespace {

// Threads that only exist to be counted (they sleep on a condition variable).
class IdleThreads {
 public:
  explicit IdleThreads(int n) {
    for (int i = 0; i < n; ++i)
      threads_.emplace_back([this] {
        {
          std::lock_guard<std::mutex> lock(mu_);
          tids_.push_back(static_cast<pid_t>(syscall(SYS_gettid)));
        }
        cv_.notify_all();
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_; });
      });
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return static_cast<int>(tids_.size()) == n; });
  }
  ~IdleThreads() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  std::vector<pid_t> tids() {
    std::lock_guard<std::mutex> lock(mu_);
    return tids_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::thread> threads_;
  std::vector<pid_t> tids_;
  bool stop_ = false;
};

double NsPerStep(opscope::OpObserver* obs, int steps) {
  const int64_t t0 = opscope::NowNs();
  if (obs) obs->OnRunBegin(0);
  for (int s = 0; s < steps; ++s) {
    if (obs) obs->OnStepBegin(s % 64);
    if (obs) obs->OnStepEnd(s % 64);
  }
  if (obs) obs->OnRunEnd(0);
  return static_cast<double>(opscope::NowNs() - t0) / steps;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 20000;
  std::printf("%-8s %-50s %14s %14s %10s\n", "threads", "events", "ns/step (med)", "baseline",
              "reads");
  for (int threads : {1, 2, 4}) {
    IdleThreads idle(threads - 1);
    OpCounters::Options o;
    o.num_steps = 64;
    o.tids = idle.tids();
    o.tids.push_back(static_cast<pid_t>(syscall(SYS_gettid)));
    auto c = OpCounters::Create(o);
    if (!c.ok()) {
      std::fprintf(stderr, "%s\n", c.status().message().c_str());
      return 1;
    }
    std::vector<double> with, without;
    for (int rep = 0; rep < 7; ++rep) {  // interleaved: counters, none, counters, ...
      with.push_back(NsPerStep(c->get(), steps));
      without.push_back(NsPerStep(nullptr, steps));
    }
    std::string names;
    for (const auto& n : (*c)->event_names()) names += (names.empty() ? "" : ",") + n;
    std::printf("%-8d %-50s %14.0f %14.1f %10s\n", threads, names.c_str(),
                opscope::ComputeStats(with).median, opscope::ComputeStats(without).median,
                (*c)->rdpmc_reads() > 0 ? "rdpmc+read" : "read()");
  }
  return 0;
}
