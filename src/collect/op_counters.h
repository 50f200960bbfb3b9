// OpCounters: per-operator hardware/software counters, an OpObserver for the engine.
//
// Design. The engine calls OnStepBegin/OnStepEnd around every execution step on the thread that
// drives the run, while the kernels of a step may run on every thread of its pool. So counts are
// per thread: one counter group per OS thread id (pid=tid, cpu=-1, no inherit: the pool's
// threads exist before the run and live through it). At step begin and end every thread's group
// is read; the per-step delta of each event, scaled for multiplexing with that step's own
// enabled/running deltas, is added to the step's total, summed over threads.
//
// Reads. rdpmc reads the counters of the CPU the calling thread runs on, so it can only read
// the calling thread's OWN counters (another thread's events are not on this CPU, or belong to
// whatever runs there). The driving thread's hardware groups are therefore read with rdpmc from
// the mmap'd pages when the kernel sets cap_user_rdpmc and every member is active on the PMU;
// its software group (software events are never on the PMU), every group of every other
// thread, and any group rdpmc cannot serve are read with one PERF_FORMAT_GROUP read() per group.
// Nothing allocates after Create().
//
// The whole-run check. A second, independent set of groups on the same threads is read only at
// OnRunBegin/OnRunEnd. The per-step totals summed over steps should match it (to within what
// runs between steps: the executor's own bookkeeping); tests hold it to 5%.
//
// Cost. The time spent reading counters in OnStepBegin/OnStepEnd is measured with the
// monotonic clock and exposed (ReadNsPerStep, TotalReadNs) for Profile::Overhead::counters_pct.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "collect/perf_event.h"
#include "opscope/observer.h"
#include "profile/profile.h"

namespace opscope::collect {

class OpCounters : public OpObserver {
 public:
  struct Options {
    int num_steps = 0;
    std::vector<pid_t> tids;  // every OS thread that runs kernels
    std::vector<EventSpec> events = DefaultOpEvents();
    PerfEventOpener* opener = nullptr;  // nullptr: the real kernel
    bool use_rdpmc = true;              // for the driving thread's own group
  };

  // Opens one step group and one whole-run group per thread, with the fallback ladder (cycles
  // becomes cpu-clock without a PMU, hardware events the machine lacks are dropped, user-only
  // under perf_event_paranoid=2). Fails on a permission problem, a thread that does not exist,
  // or when nothing at all can be counted.
  static StatusOr<std::unique_ptr<OpCounters>> Create(Options options);

  void OnRunBegin(int run_index) override;
  void OnStepBegin(int step) override;
  void OnStepEnd(int step) override;
  void OnRunEnd(int run_index) override;

  int num_steps() const { return num_steps_; }
  // Counted events (after fallbacks); unsupported ones are not listed. Index = event index.
  const std::vector<std::string>& event_names() const { return names_; }
  const std::vector<std::string>& degradations() const { return degradations_; }
  int runs_observed() const { return runs_; }

  // Sum over every observed run and every thread, scaled; time events in nanoseconds.
  double StepTotal(int step, int event) const;
  // Sum over steps of StepTotal(step, event).
  double StepsTotal(int event) const;
  // The independent whole-run count (OnRunBegin..OnRunEnd), summed over runs and threads.
  double WholeRunTotal(int event) const;

  // The OpRecord::counters form for one step: event -> value per run (mean over the observed
  // runs; time events in ms, others counts). Use for every source node of the step.
  std::map<std::string, double> StepCounters(int step) const;

  // Lowest running/enabled fraction seen for an event in any step read (1: never multiplexed).
  double MinRunningFraction(int event) const;

  // Measured cost of the reads: mean ns per step (begin + end reads of every thread), total ns.
  double ReadNsPerStep() const;
  int64_t TotalReadNs() const { return read_ns_; }
  // Reads of the driving thread's counters that used rdpmc for at least one (hardware) group /
  // that used read() only (for the docs and the profile).
  int64_t rdpmc_reads() const { return rdpmc_reads_; }
  int64_t syscall_reads() const { return syscall_reads_; }
  // Reads that failed (a thread exited mid-run, ...); their steps miss that thread's counts.
  int64_t read_errors() const { return read_errors_; }

 private:
  OpCounters() = default;
  void ReadAll(std::vector<CounterSet>& sets, std::vector<RawCount>& out, bool allow_rdpmc);
  int SelfIndex();

  int num_steps_ = 0;
  bool use_rdpmc_ = true;
  std::vector<pid_t> tids_;
  std::vector<CounterSet> step_sets_, whole_sets_;
  std::vector<int> slot_of_event_;  // event index -> slot index in each CounterSet
  std::vector<std::string> names_;
  std::vector<bool> is_time_;
  std::vector<std::string> degradations_;
  size_t slots_ = 0;
  // [thread][slot], flattened.
  std::vector<RawCount> begin_, end_, run_begin_, run_end_;
  // Steps nest (a control-flow subgraph's steps inside their If/Loop/Scan step): one begin row
  // per nesting level, preallocated; a parent's counts include its subgraph's. Steps nested
  // deeper than kMaxNesting are not counted (nested_too_deep_).
  static constexpr int kMaxNesting = 8;
  std::vector<std::vector<RawCount>> begin_stack_;
  int depth_ = 0;
  int64_t nested_too_deep_ = 0;
  std::vector<double> step_acc_;   // [step][event]
  std::vector<double> whole_acc_;  // [event]
  std::vector<double> min_fraction_;
  int runs_ = 0;
  int self_index_ = -2;  // -2: not looked up yet; -1: the driving thread is not counted
  int64_t read_ns_ = 0, step_reads_ = 0;
  int64_t rdpmc_reads_ = 0, syscall_reads_ = 0, read_errors_ = 0;
};

// Writes the counters into a profile: ops[i].counters = c.StepCounters(step_of_op[i]) for every
// op with step_of_op[i] >= 0 (give each step to ONE op, e.g. the first source node of a fused
// step, so the per-op sums keep matching the whole-run count); appends c.degradations() to
// meta.degradations (once each); records in meta.extra how counters were read:
// "counters_events" (comma-separated), "counters_read" ("rdpmc+read()" or "read()"),
// "counters_read_ns_per_step", "counters_min_running_pct" (lowest multiplexing fraction).
void WriteOpCounters(const OpCounters& c, const std::vector<int>& step_of_op, profile::Profile* p);

// The measured cost of the counter reads as a percentage of `measured_ms`, the total time of
// the runs the observer saw: the value for Profile::Overhead::counters_pct.
double CounterOverheadPct(const OpCounters& c, double measured_ms);

}  // namespace opscope::collect
