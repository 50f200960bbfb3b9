// Arena planning for activation buffers.
//
// Each buffer lives from the step that produces it to the last step that reads it (inclusive).
// Buffers are placed greedily, largest first, at the lowest 64-byte-aligned offset that does not
// overlap any already placed buffer whose lifetime intersects — the "greedy by size" strategy
// that TFLite's arena planner also uses. Two buffers used by the same step never share memory,
// so kernels may read inputs while writing outputs.
#pragma once

#include <cstddef>
#include <vector>

namespace opscope::engine {

struct PlannedBuffer {
  size_t bytes = 0;
  int first_step = 0, last_step = 0;
  size_t offset = 0;  // filled by PlanArena
};

struct MemoryStats {
  size_t arena_bytes = 0;  // size of the planned arena
  size_t naive_bytes = 0;  // sum of all planned buffers (no reuse)
  size_t buffers = 0;
};

MemoryStats PlanArena(std::vector<PlannedBuffer>& buffers);

}  // namespace opscope::engine
