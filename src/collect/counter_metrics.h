// Derived metrics, the bound verdict, and the per-operator columns, from counter values.
//
// Pure functions over `event name -> value` maps (values as StatRun/OpRecord store them: counts,
// and milliseconds for task-clock/cpu-clock). The thresholds of the verdict are constants here
// and documented, with their reasoning, in docs/stat.md; a verdict always carries the numbers
// that decided it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "profile/stat.h"

namespace opscope::collect {

// Verdict thresholds (docs/stat.md, "How the verdict is reached").
inline constexpr double kComputeBoundIpc = 2.0;  // IPC at or above: compute-bound
inline constexpr double kLowIpc = 1.0;           // below: the core is mostly waiting
inline constexpr double kMemoryLlcMpki = 1.0;    // LLC load misses per kilo-instruction
inline constexpr double kMemoryCacheMpki = 5.0;  // cache-misses per kilo-instruction
inline constexpr double kMemoryL1dMpki = 20.0;   // L1D load misses per kilo-instruction
inline constexpr double kBranchMissRate = 0.05;  // branch-misses / branches
inline constexpr double kBranchMpki = 10.0;      // branch-misses per kilo-instruction
// A run is an outlier when it is outside Tukey's far-out fences (3 IQR) AND at least this far
// (relative) from the median.
inline constexpr double kOutlierMinRelative = 0.10;

// Derived metrics from one set of values. Keys (present only when their inputs are):
//   ipc, cycles_per_instruction, cache_miss_rate, branch_miss_rate, cache_mpki, l1d_mpki,
//   llc_mpki, branch_mpki, ghz (cycles per task-clock ns), cpus_utilized (task-clock / wall),
//   page_faults_per_cpu_ms, context_switches_per_s.
// `wall_ms` <= 0 leaves out the per-wall-time metrics.
std::map<std::string, double> DerivedMetrics(const std::map<std::string, double>& values,
                                             double wall_ms);

struct Verdict {
  std::string verdict;  // "compute-bound", "memory-bound", "front-end or branch-bound",
                        // "undetermined (...)"
  std::string reason;   // the numbers and thresholds that decided it
};
Verdict DecideVerdict(const std::map<std::string, double>& derived,
                      const std::map<std::string, double>& values);

// Fills summary (per-event stats over runs, plus "wall-ms"), derived (from the medians),
// verdict and outliers of `section` from its runs. Unsupported events are left out of summary.
// Appends one "counter multiplexed: EVENT ran NN.N% of the time" line per multiplexed event to
// section.degradations.
void SummarizeStat(profile::StatSection& section);

// The per-operator columns of the hotspot table: IPC and misses per kilo-instruction where the
// hardware counted them, otherwise the software stand-ins (CPU ms per op ms = threads busy,
// page faults per CPU ms, context switches per op). Each column has a header, a value and a
// display string. `op_ms` is the op's time per run (for the per-time stand-ins), 0 if unknown.
struct CounterColumn {
  std::string header;  // "IPC", "cache MPKI", "faults/cpu-ms", ...
  double value = 0;
  std::string text;  // formatted, e.g. "1.84"
};
std::vector<CounterColumn> OpCounterColumns(const std::map<std::string, double>& counters,
                                            double op_ms);

}  // namespace opscope::collect
