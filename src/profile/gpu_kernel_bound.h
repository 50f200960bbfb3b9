// What limits one kernel, from the throughputs `opscope gpu --metrics` measures.
//
// Nsight Compute's "speed of light" section compares a kernel's SM throughput and its memory
// throughput (the busiest of DRAM, L2 and L1), each as a percentage of the unit's peak sustained
// rate. Its guidance: above ~80% a unit is well used; below ~60% for both, the kernel neither
// saturates compute nor memory and is limited by latency (too few warps to hide stalls, or too
// little work per launch). opscope uses the 60% line:
//   compute-bound  SM throughput >= 60% and >= memory throughput
//   memory-bound   memory throughput >= 60% and > SM throughput
//   latency-bound  both below 60%; "low occupancy" when achieved occupancy is below 25% of the
//                  SM's warps, the usual reason there are too few warps to hide latency.
// The memory throughput is gpu__compute_memory_throughput when CUPTI evaluated it, else DRAM's.
#pragma once

#include <string>

namespace opscope::profile {

inline constexpr double kBoundPct = 60.0;
inline constexpr double kLowAchievedOccupancyPct = 25.0;

// Header-only, in the hub, so the gpu layer (which classifies) and the analysis rules (which
// advise) read the same thresholds.

// The memory throughput the classification uses: `memory_pct` if known (>= 0), else `dram_pct`.
inline double BoundMemoryPct(double memory_pct, double dram_pct) {
  return memory_pct >= 0 ? memory_pct : dram_pct;
}

// "compute", "memory", "latency"; "" when `sm_pct` or both memory figures are unknown (< 0).
inline std::string ClassifyKernelBound(double sm_pct, double memory_pct, double dram_pct) {
  double mem = BoundMemoryPct(memory_pct, dram_pct);
  if (!(sm_pct >= 0) || !(mem >= 0)) return "";  // also false for NaN
  if (sm_pct >= kBoundPct && sm_pct >= mem) return "compute";
  if (mem >= kBoundPct && mem > sm_pct) return "memory";
  return "latency";
}

// True when a latency-bound kernel's achieved occupancy explains it.
inline bool LowAchievedOccupancy(double achieved_occupancy_pct) {
  return achieved_occupancy_pct >= 0 && achieved_occupancy_pct < kLowAchievedOccupancyPct;
}

}  // namespace opscope::profile
