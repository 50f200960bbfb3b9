#include "sections/memory/memory_section.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "profile/json_fields.h"
#include "profile/profile.h"

namespace opscope::memory {

#define LIVE_TENSOR_FIELDS(X) \
  X(name);                    \
  X(shape);                   \
  X(dtype);                   \
  X(bytes);                   \
  X(place);                   \
  X(first_step);              \
  X(last_step);               \
  X(producer);                \
  X(last_consumer)
#define MEM_STEP_FIELDS(X) \
  X(name);                 \
  X(op);                   \
  X(allocated_bytes);      \
  X(released_bytes);       \
  X(live_bytes);           \
  X(arena_live_bytes);     \
  X(weight_bytes);         \
  X(packed_weight_bytes);  \
  X(workspace_bytes)
#define MEMORY_FIELDS(X)  \
  X(device);              \
  X(source);              \
  X(peak_step);           \
  X(peak_live_bytes);     \
  X(arena_bytes);         \
  X(naive_bytes);         \
  X(weight_bytes);        \
  X(packed_weight_bytes); \
  X(workspace_bytes);     \
  X(rss_bytes);           \
  X(peak_rss_bytes);      \
  X(steps);               \
  X(tensors)

void to_json(nlohmann::json& j, const LiveTensor& v) { LIVE_TENSOR_FIELDS(OPSCOPE_JSON_PUT); }
void from_json(const nlohmann::json& j, LiveTensor& v) { LIVE_TENSOR_FIELDS(OPSCOPE_JSON_GET); }
void to_json(nlohmann::json& j, const MemStep& v) { MEM_STEP_FIELDS(OPSCOPE_JSON_PUT); }
void from_json(const nlohmann::json& j, MemStep& v) { MEM_STEP_FIELDS(OPSCOPE_JSON_GET); }

std::unique_ptr<profile::SectionData> MemorySection::Clone() const {
  return std::make_unique<MemorySection>(*this);
}

void MemorySection::ToJson(nlohmann::json& j) const {
  const MemorySection& v = *this;
  j = nlohmann::json::object();
  MEMORY_FIELDS(OPSCOPE_JSON_PUT);
}

namespace {

std::unique_ptr<profile::SectionData> FromJson(const nlohmann::json& j) {
  auto m = std::make_unique<MemorySection>();
  if (!j.is_object())
    throw nlohmann::json::type_error::create(302, "the memory section is not an object", &j);
  MemorySection& v = *m;
  MEMORY_FIELDS(OPSCOPE_JSON_GET);
  return m;
}

bool Bytes(double b) { return std::isfinite(b) && b >= 0 && b <= 1e18; }

}  // namespace

Status MemorySection::Validate(const profile::Profile& p) const {
  const int n = static_cast<int>(steps.size());
  for (double b : {peak_live_bytes, arena_bytes, naive_bytes, weight_bytes, packed_weight_bytes,
                   workspace_bytes, rss_bytes, peak_rss_bytes})
    if (!Bytes(b)) return DataLoss("a byte count is negative, not finite or above 1e18");
  if (peak_step < -1 || peak_step >= n)
    return DataLoss("peak_step " + std::to_string(peak_step) + " is not a step");
  for (int i = 0; i < n; ++i) {
    const MemStep& s = steps[static_cast<size_t>(i)];
    const std::string where = "step #" + std::to_string(i) + " '" + s.name + "'";
    if (s.op < -1 || s.op >= static_cast<int>(p.ops.size()))
      return DataLoss(where + " names op #" + std::to_string(s.op) + ", not in the op list");
    for (double b : {s.allocated_bytes, s.released_bytes, s.live_bytes, s.arena_live_bytes,
                     s.weight_bytes, s.packed_weight_bytes, s.workspace_bytes})
      if (!Bytes(b)) return DataLoss(where + " has a negative, non-finite or huge byte count");
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const LiveTensor& t = tensors[i];
    const std::string where = "tensor #" + std::to_string(i) + " '" + t.name + "'";
    if (t.first_step < 0 || t.last_step < t.first_step || t.last_step >= n)
      return DataLoss(where + " lives over steps " + std::to_string(t.first_step) + ".." +
                      std::to_string(t.last_step) + ", outside the " + std::to_string(n) +
                      " steps");
    if (!Bytes(t.bytes)) return DataLoss(where + " has a negative, non-finite or huge size");
    for (int64_t d : t.shape)
      if (d < 0) return DataLoss(where + " has a negative dimension");
  }
  return Status::Ok();
}

void Derive(MemorySection* m) {
  const size_t n = m->steps.size();
  for (MemStep& s : m->steps)
    s.allocated_bytes = s.released_bytes = s.live_bytes = s.arena_live_bytes = 0;
  // Difference arrays over the steps: +bytes at first_step, -bytes after last_step.
  std::vector<double> live(n + 1, 0), arena(n + 1, 0);
  for (const LiveTensor& t : m->tensors) {
    const size_t a = static_cast<size_t>(t.first_step), b = static_cast<size_t>(t.last_step);
    if (a >= n || b >= n || b < a) continue;
    live[a] += t.bytes;
    live[b + 1] -= t.bytes;
    if (t.place == "arena") {
      arena[a] += t.bytes;
      arena[b + 1] -= t.bytes;
    }
    if (t.place != "input") m->steps[a].allocated_bytes += t.bytes;
    if (t.place != "output" && !t.last_consumer.empty()) m->steps[b].released_bytes += t.bytes;
  }
  double l = 0, ar = 0;
  for (size_t s = 0; s < n; ++s) {
    l += live[s];
    ar += arena[s];
    // Sums of doubles that are whole numbers below 2^53: exact, so no drift below zero.
    m->steps[s].live_bytes = l;
    m->steps[s].arena_live_bytes = ar;
  }
  SetPeak(m);
}

void SetPeak(MemorySection* m) {
  m->peak_step = -1;
  m->peak_live_bytes = 0;
  for (size_t s = 0; s < m->steps.size(); ++s)
    if (m->peak_step < 0 || m->steps[s].live_bytes > m->peak_live_bytes) {
      m->peak_step = static_cast<int>(s);
      m->peak_live_bytes = m->steps[s].live_bytes;
    }
}

std::vector<int> AliveAt(const MemorySection& m, int step) {
  std::vector<int> out;
  for (size_t i = 0; i < m.tensors.size(); ++i)
    if (m.tensors[i].first_step <= step && step <= m.tensors[i].last_step)
      out.push_back(static_cast<int>(i));
  std::stable_sort(out.begin(), out.end(), [&](int a, int b) {
    return m.tensors[static_cast<size_t>(a)].bytes > m.tensors[static_cast<size_t>(b)].bytes;
  });
  return out;
}

OPSCOPE_REGISTER_SECTION_TYPE(memory, {MemorySection::kKey, &FromJson});

}  // namespace opscope::memory
