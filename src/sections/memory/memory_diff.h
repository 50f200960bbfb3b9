// The memory section in `opscope diff` (analysis layer): the peak, the arena, the weights and
// the process's peak RSS before and after, every step's live bytes (steps matched by name), and
// how the tensors alive at the peak changed.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "profile/profile.h"

namespace opscope::memory {

struct BytesDelta {
  std::string name;
  // "changed", "appeared" (after only), "disappeared" (before only); for the tensors at the
  // peak: "joined the peak" / "left the peak" when a tensor of both sides is alive at one peak only
  std::string change;
  double before = 0, after = 0, delta = 0;
  std::string shape_before, shape_after;  // tensors only
};

struct MemoryDiff {
  bool available = false;  // both profiles carry the memory section
  BytesDelta peak;         // name: "peak step 'a' → 'b'"
  BytesDelta arena, weights, packed_weights, workspace, peak_rss;
  std::vector<BytesDelta> steps;    // live bytes per step, by |delta| descending
  std::vector<BytesDelta> at_peak;  // tensors alive at either side's peak, by |delta| descending
};

MemoryDiff DiffMemory(const profile::Profile& before, const profile::Profile& after);
// The terminal block ("" when not available).
std::string FormatMemoryDiff(const MemoryDiff& d, size_t max_rows);
void MemoryDiffToJson(const MemoryDiff& d, nlohmann::json& j);

}  // namespace opscope::memory
