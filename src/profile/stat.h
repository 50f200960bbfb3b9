// The `opscope stat` section: whole-program counter readings over repeated runs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/stats.h"

namespace opscope::profile {

struct CounterReading {
  std::string event;       // name as the user asked for it ("cycles", "r01c2", ...)
  std::string unit;        // "count", "ms" (task-clock), ...
  double value = 0;        // scaled for multiplexing: raw * enabled / running
  double raw = 0;
  double enabled_ns = 0, running_ns = 0;
  bool supported = true;   // false: the kernel refused it; `note` says why
  std::string note;
};

struct StatRun {
  std::vector<CounterReading> counters;
  double wall_ms = 0;
  int exit_code = 0;        // the command's exit status
  int term_signal = 0;      // non-zero if it died on a signal
};

struct StatSection {
  std::vector<std::string> command;
  std::vector<StatRun> runs;
  std::map<std::string, Stats> summary;   // event -> stats over runs
  std::map<std::string, double> derived;  // "ipc", "branch_miss_rate", ...
  std::string verdict;                    // "compute-bound", "memory-bound", ...
  std::string verdict_reason;
};

}  // namespace opscope::profile
