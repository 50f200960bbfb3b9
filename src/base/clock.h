// Clocks. Every timestamp opscope stores is CLOCK_MONOTONIC nanoseconds, the clock perf_event
// (with use_clockid), CUPTI's aligned timestamps and std::chrono::steady_clock share on Linux, so
// CPU, counter and GPU events line up on one timeline without conversion.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>

namespace opscope {

inline int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// Wall-clock time as ISO 8601 UTC ("2026-11-29T15:04:22Z"), for profile metadata.
std::string IsoTimeNow();

}  // namespace opscope
