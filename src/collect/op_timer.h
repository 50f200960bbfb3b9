// OpTimer: the engine observer behind `opscope profile`.
//
// Records {start, end} CLOCK_MONOTONIC timestamps per step per run into a table allocated before
// the first run, so the enabled cost is two clock reads and two stores per step (no allocation,
// no strings). Runs beyond the capacity given at construction are not recorded (counted).
// A step may run several times in one run (a Loop body's step once per iteration): its
// duration is the sum of its executions, start the first begin and end the last end. Steps may
// nest (a subgraph's steps inside their If/Loop/Scan step); each keeps its own begin.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "opscope/observer.h"

namespace opscope::collect {

class OpTimer final : public OpObserver {
 public:
  OpTimer(int steps, int max_runs);

  void OnRunBegin(int run_index) override;
  void OnStepBegin(int step) override;
  void OnStepEnd(int step) override;
  void OnRunEnd(int run_index) override;

  // Runs recorded so far (each a full pass over the steps).
  int runs() const { return runs_; }
  int64_t start_ns(int run, int step) const { return start_[Index(run, step)]; }
  int64_t end_ns(int run, int step) const { return end_[Index(run, step)]; }
  // 0 if the step did not execute in that run (folded, or a branch not taken).
  int64_t duration_ns(int run, int step) const { return total_[Index(run, step)]; }
  // How many times the step began in that run.
  int64_t executions(int run, int step) const { return count_[Index(run, step)]; }
  int64_t run_start_ns(int run) const { return run_start_[run]; }
  int64_t run_end_ns(int run) const { return run_end_[run]; }
  int tid() const { return tid_; }

 private:
  size_t Index(int run, int step) const { return static_cast<size_t>(run) * steps_ + step; }
  int steps_, max_runs_;
  int runs_ = 0;
  bool recording_ = false;
  int tid_ = 0;
  std::vector<int64_t> start_, end_, total_, count_, begin_, run_start_, run_end_;
};

}  // namespace opscope::collect
