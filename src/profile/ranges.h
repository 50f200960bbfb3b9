// Annotated ranges (opscope's annotation API, NVTX push/pop and start/end) as instances on a
// timeline, with their nesting.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace opscope::profile {

struct Range {
  std::string name;
  std::string domain;  // NVTX domain or "opscope"
  int32_t tid = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t depth = 0;                       // 0 = top level on its thread
  int32_t parent = -1;                     // index into Profile::ranges, -1 for top level
  std::map<std::string, double> counters;  // counter deltas over the range, if collected
  int32_t run = -1;  // measured run (`opscope run`: one process per run), -1 if unknown
};

}  // namespace opscope::profile
