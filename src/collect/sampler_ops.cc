#include "collect/sampler_ops.h"

#include <algorithm>
#include <vector>

namespace opscope::collect {

AttributionStats AttributeSamplesToOps(profile::Profile& p) {
  AttributionStats stats;
  if (!p.samples) return stats;
  std::vector<const profile::OpEvent*> evs;
  for (const auto& e : p.op_events)
    if (e.op >= 0 && e.op < static_cast<int32_t>(p.ops.size()) && e.dur_ns >= 0) evs.push_back(&e);
  std::sort(evs.begin(), evs.end(), [](auto* a, auto* b) { return a->start_ns < b->start_ns; });
  // max_end[i]: latest end among events 0..i, so a backward scan can stop once nothing earlier
  // can still be running.
  std::vector<int64_t> max_end(evs.size());
  for (size_t i = 0; i < evs.size(); ++i)
    max_end[i] = std::max(i ? max_end[i - 1] : INT64_MIN, evs[i]->start_ns + evs[i]->dur_ns);
  for (auto& s : p.samples->samples) {
    s.op = -1;
    auto it =
        std::upper_bound(evs.begin(), evs.end(), s.time_ns,
                         [](int64_t t, const profile::OpEvent* e) { return t < e->start_ns; });
    const profile::OpEvent* best = nullptr;
    for (size_t i = static_cast<size_t>(it - evs.begin()); i-- > 0;) {
      if (max_end[i] <= s.time_ns) break;
      const profile::OpEvent* e = evs[i];
      if (s.time_ns >= e->start_ns + e->dur_ns) continue;
      if (!best) best = e;
      if (e->tid == s.tid) {
        best = e;
        break;
      }
    }
    if (best) {
      s.op = best->op;
      ++stats.attributed;
    } else {
      ++stats.outside;
    }
  }
  return stats;
}

}  // namespace opscope::collect
