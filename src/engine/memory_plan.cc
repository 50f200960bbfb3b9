#include "engine/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace opscope::engine {

MemoryStats PlanArena(std::vector<PlannedBuffer>& buffers) {
  MemoryStats stats;
  stats.buffers = buffers.size();
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });
  std::vector<size_t> placed;
  for (size_t idx : order) {
    PlannedBuffer& b = buffers[idx];
    size_t size = (b.bytes + 63) / 64 * 64;
    stats.naive_bytes += size;
    // Intervals of live, already placed buffers, sorted by offset.
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t p : placed) {
      const PlannedBuffer& o = buffers[p];
      if (o.last_step < b.first_step || b.last_step < o.first_step) continue;
      busy.push_back({o.offset, o.offset + (o.bytes + 63) / 64 * 64});
    }
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (const auto& [lo, hi] : busy) {
      if (offset + size <= lo) break;
      offset = std::max(offset, hi);
    }
    b.offset = offset;
    stats.arena_bytes = std::max(stats.arena_bytes, offset + size);
    placed.push_back(idx);
  }
  return stats;
}

}  // namespace opscope::engine
