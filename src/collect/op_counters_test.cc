// OpCounters against a fake engine loop: a driving thread and two pool threads, steps whose
// work is known by construction (fresh pages touched -> page faults; busy loops -> task-clock).
#include "collect/op_counters.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "collect/perf_skip_testing.h"

namespace opscope::collect {
namespace {

constexpr size_t kPage = 4096;

// Touches `pages` fresh anonymous pages (one fault each; THP is avoided with MADV_NOHUGEPAGE)
// and spins a little so task-clock has something to count.
void DoWork(int units) {
  const size_t pages = 256 * static_cast<size_t>(units);
  void* p =
      mmap(nullptr, pages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  madvise(p, pages * kPage, MADV_NOHUGEPAGE);
  volatile char* c = static_cast<char*>(p);
  for (size_t i = 0; i < pages; ++i) c[i * kPage] = 1;
  volatile uint64_t x = 0;
  for (int i = 0; i < 200000 * units; ++i) x = x + static_cast<uint64_t>(i);
  munmap(p, pages * kPage);
}

// A two-thread pool: Run(units) makes both threads do `units` of work and waits for them.
class FakePool {
 public:
  FakePool() {
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this, i] { Loop(i); });
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return tids_ready_ == 2; });
  }
  ~FakePool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      ++generation_;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  std::vector<pid_t> tids() const { return {tids_[0], tids_[1]}; }
  void Run(int units) {
    std::unique_lock<std::mutex> lock(mu_);
    units_ = units;
    done_ = 0;
    ++generation_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return done_ == 2; });
  }

 private:
  void Loop(int i) {
    uint64_t seen = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      tids_[i] = static_cast<pid_t>(syscall(SYS_gettid));
      ++tids_ready_;
    }
    cv_.notify_all();
    for (;;) {
      int units;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        if (stop_) return;
        units = units_;
      }
      DoWork(units);
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++done_;
      }
      cv_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::thread> threads_;
  pid_t tids_[2] = {0, 0};
  int tids_ready_ = 0, units_ = 0, done_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

int EventIndex(const OpCounters& c, const std::string& name) {
  for (size_t i = 0; i < c.event_names().size(); ++i)
    if (c.event_names()[i] == name) return static_cast<int>(i);
  return -1;
}

TEST(OpCountersTest, PerStepCountsMatchWholeRunAndScaleWithWork) {
  OPSCOPE_SKIP_WITHOUT_PERF_EVENTS();
  FakePool pool;
  OpCounters::Options o;
  o.num_steps = 3;
  o.tids = pool.tids();
  o.tids.push_back(static_cast<pid_t>(syscall(SYS_gettid)));  // the driving thread works too
  o.events = *ParseEventList("task-clock,page-faults,context-switches,cycles");
  auto created = OpCounters::Create(o);
  ASSERT_TRUE(created.ok()) << created.status().message();
  OpCounters& c = **created;
  const int work[3] = {1, 4, 2};
  for (int run = 0; run < 3; ++run) {
    c.OnRunBegin(run);
    for (int step = 0; step < 3; ++step) {
      c.OnStepBegin(step);
      pool.Run(work[step]);
      c.OnStepEnd(step);
    }
    c.OnRunEnd(run);
  }
  EXPECT_EQ(c.runs_observed(), 3);
  EXPECT_EQ(c.read_errors(), 0);
  const int faults = EventIndex(c, "page-faults"), clock = EventIndex(c, "task-clock");
  ASSERT_GE(faults, 0);
  ASSERT_GE(clock, 0);
  // Per-step sums vs the independent whole-run count: within 5%.
  for (int e : {faults, clock}) {
    const double steps = c.StepsTotal(e), whole = c.WholeRunTotal(e);
    ASSERT_GT(whole, 0) << c.event_names()[e];
    EXPECT_NEAR(steps / whole, 1.0, 0.05)
        << c.event_names()[e] << ": steps " << steps << " whole " << whole;
  }
  // 2 threads x 256 pages x units x 3 runs.
  EXPECT_GE(c.StepTotal(0, faults), 2 * 256 * 3 * 0.9);
  const double ratio = c.StepTotal(1, faults) / c.StepTotal(0, faults);
  EXPECT_GT(ratio, 3.0);
  EXPECT_LT(ratio, 5.0);
  const double ratio2 = c.StepTotal(2, faults) / c.StepTotal(0, faults);
  EXPECT_GT(ratio2, 1.5);
  EXPECT_LT(ratio2, 2.5);
  // The OpRecord::counters form: per run, task-clock in ms.
  auto per_run = c.StepCounters(1);
  EXPECT_NEAR(per_run["page-faults"], c.StepTotal(1, faults) / 3, 1e-6);
  EXPECT_NEAR(per_run["task-clock"], c.StepTotal(1, clock) / 3 / 1e6, 1e-9);
  EXPECT_GT(c.ReadNsPerStep(), 0);
  EXPECT_EQ(c.MinRunningFraction(faults), 1.0);  // software events are never multiplexed

  // Into a profile: 4 ops, the last one fused into step 1 (no counters of its own).
  profile::Profile p;
  for (const char* name : {"conv", "relu", "pool", "add"}) {
    profile::OpRecord op;
    op.name = name;
    p.ops.push_back(op);
  }
  WriteOpCounters(c, {0, 1, 2, -1}, &p);
  EXPECT_NEAR(p.ops[1].counters["page-faults"], per_run["page-faults"], 1e-9);
  EXPECT_TRUE(p.ops[3].counters.empty());
  if (EventIndex(c, "cycles") < 0) {
    EXPECT_EQ(p.meta.extra["counters_read"], "read()");  // no PMU: software events, never rdpmc
  }
  EXPECT_TRUE(profile::Validate(p).ok());
  EXPECT_GT(CounterOverheadPct(c, 1000.0), 0);
}

// Nested steps (a control-flow node's subgraph steps run inside its step): the parent's counts
// span its whole step, its subgraph's work included; the child's only its own.
TEST(OpCountersTest, NestedStepsCountTheParentInclusively) {
  OPSCOPE_SKIP_WITHOUT_PERF_EVENTS();
  FakePool pool;
  OpCounters::Options o;
  o.num_steps = 2;
  o.tids = pool.tids();
  o.tids.push_back(static_cast<pid_t>(syscall(SYS_gettid)));
  o.events = *ParseEventList("page-faults");
  auto created = OpCounters::Create(o);
  ASSERT_TRUE(created.ok()) << created.status().message();
  OpCounters& c = **created;
  for (int run = 0; run < 3; ++run) {
    c.OnRunBegin(run);
    c.OnStepBegin(0);
    pool.Run(2);  // the parent's own work, before its child
    c.OnStepBegin(1);
    pool.Run(1);
    c.OnStepEnd(1);
    c.OnStepEnd(0);
    c.OnRunEnd(run);
  }
  const int faults = EventIndex(c, "page-faults");
  ASSERT_GE(faults, 0);
  const double ratio = c.StepTotal(0, faults) / c.StepTotal(1, faults);
  EXPECT_GT(ratio, 2.5);  // 3 units against 1 (a child overwriting the parent's begin gives ~1)
  EXPECT_LT(ratio, 3.5);
}

TEST(OpCountersTest, BadArguments) {
  OPSCOPE_SKIP_WITHOUT_PERF_EVENTS();
  OpCounters::Options o;
  o.tids = {static_cast<pid_t>(syscall(SYS_gettid))};
  EXPECT_FALSE(OpCounters::Create(o).ok());  // no steps
  o.num_steps = 1;
  o.tids = {999999999};  // no such thread
  auto c = OpCounters::Create(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("no longer exists"), std::string::npos)
      << c.status().message();
}

}  // namespace
}  // namespace opscope::collect
