// The `opscope stat` section: whole-program counter readings over repeated runs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/stats.h"

namespace opscope::profile {

struct CounterReading {
  std::string event;  // name as the user asked for it ("cycles", "r01c2", ...)
  std::string unit;   // "count", "ms" (task-clock), ...
  double value = 0;   // scaled for multiplexing: raw * enabled / running (ms for clocks)
  double raw = 0;     // as the kernel counted it (ns for task-clock/cpu-clock)
  double enabled_ns = 0, running_ns = 0;
  bool supported = true;  // false: the kernel refused it; `note` says why
  std::string note;
  std::string requested;  // the name asked for when another event stands in ("cycles"), else ""
  double running_fraction = 1;  // running / enabled: < 1 when the counter was multiplexed
};

// The counts of one thread when opscope attached to running processes (`stat -p/-t`): the
// run's `counters` are their sums.
struct TaskCounts {
  int32_t pid = 0, tid = 0;
  std::string comm;  // the thread's name (/proc/TID/comm) when counting began
  std::vector<CounterReading> counters;
};

struct StatRun {
  std::vector<CounterReading> counters;
  std::vector<TaskCounts> tasks;  // attach mode only: per thread, largest task-clock first
  double wall_ms = 0;
  int exit_code = 0;    // the command's exit status
  int term_signal = 0;  // non-zero if it died on a signal
  std::string note;     // "terminated by signal SIGSEGV (11)", ...
};

struct StatSection {
  std::vector<std::string> command;
  std::vector<StatRun> runs;
  std::map<std::string, Stats> summary;   // event -> stats over runs
  std::map<std::string, double> derived;  // "ipc", "branch_miss_rate", ...
  std::string verdict;                    // "compute-bound", "memory-bound", ...
  std::string verdict_reason;
  // Every fallback taken while counting ("cycles unavailable (no hardware PMU): using cpu-clock");
  // the same lines are in meta.degradations.
  std::vector<std::string> degradations;
  // Runs that differ wildly from the rest (Tukey far-out), in words: "run 3: task-clock 41.2 ms
  // vs median 12.0 ms".
  std::vector<std::string> outliers;
  bool user_only = false;  // exclude_kernel was needed (perf_event_paranoid)
  // What was counted when opscope did not start the command: "pid 1234 (7 threads)",
  // "system-wide (CPUs 0-3)"; empty for `stat -- CMD`.
  std::string attached;
};

}  // namespace opscope::profile
