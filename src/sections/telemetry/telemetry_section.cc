#include "sections/telemetry/telemetry_section.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "profile/json_fields.h"
#include "profile/profile.h"

namespace opscope::telemetry {

#define CHANNEL_FIELDS(X) \
  X(name);                \
  X(kind);                \
  X(unit);                \
  X(source);              \
  X(max);                 \
  X(min);                 \
  X(values);              \
  X(gaps)
#define CLUSTER_FIELDS(X) \
  X(name);                \
  X(cpus);                \
  X(capacity)
#define TELEMETRY_FIELDS(X) \
  X(board);                 \
  X(platform);              \
  X(source);                \
  X(environment);           \
  X(sample_ns);             \
  X(sample_runs);           \
  X(channels);              \
  X(clusters);              \
  X(pinned_cpus);           \
  X(threads);               \
  X(thread_cpus)

void to_json(nlohmann::json& j, const Channel& v) { CHANNEL_FIELDS(OPSCOPE_JSON_PUT); }
void from_json(const nlohmann::json& j, Channel& v) { CHANNEL_FIELDS(OPSCOPE_JSON_GET); }
void to_json(nlohmann::json& j, const CoreCluster& v) { CLUSTER_FIELDS(OPSCOPE_JSON_PUT); }
void from_json(const nlohmann::json& j, CoreCluster& v) { CLUSTER_FIELDS(OPSCOPE_JSON_GET); }

std::unique_ptr<profile::SectionData> TelemetrySection::Clone() const {
  return std::make_unique<TelemetrySection>(*this);
}

void TelemetrySection::ToJson(nlohmann::json& j) const {
  const TelemetrySection& v = *this;
  j = nlohmann::json::object();
  TELEMETRY_FIELDS(OPSCOPE_JSON_PUT);
}

const Channel* TelemetrySection::Find(const std::string& name) const {
  for (const Channel& c : channels)
    if (c.name == name) return &c;
  return nullptr;
}

const CoreCluster* TelemetrySection::ClusterOf(int32_t cpu) const {
  for (const CoreCluster& c : clusters)
    if (std::find(c.cpus.begin(), c.cpus.end(), cpu) != c.cpus.end()) return &c;
  return nullptr;
}

namespace {

// Without cpu_capacity: Arm's little cores (Cortex-A5x, A3x) and Intel's E-cores by name.
bool LittleByName(const std::string& name) {
  return name.find("Cortex-A5") != std::string::npos ||
         name.find("Cortex-A3") != std::string::npos || name.find("E-core") != std::string::npos;
}

}  // namespace

bool TelemetrySection::IsLittle(const CoreCluster& c) const {
  int64_t biggest = 0;
  for (const CoreCluster& k : clusters) biggest = std::max(biggest, k.capacity);
  if (biggest > 0 && c.capacity > 0) return c.capacity < biggest;
  bool any_big = false;
  for (const CoreCluster& k : clusters) any_big |= !LittleByName(k.name);
  return any_big && LittleByName(c.name);
}

bool TelemetrySection::Heterogeneous() const {
  for (const CoreCluster& c : clusters)
    if (IsLittle(c)) return true;
  return false;
}

namespace {

std::unique_ptr<profile::SectionData> FromJson(const nlohmann::json& j) {
  if (!j.is_object())
    throw nlohmann::json::type_error::create(302, "the telemetry section is not an object", &j);
  auto t = std::make_unique<TelemetrySection>();
  TelemetrySection& v = *t;
  TELEMETRY_FIELDS(OPSCOPE_JSON_GET);
  return t;
}

bool Plausible(double v) { return std::isfinite(v) && std::fabs(v) <= 1e15; }

}  // namespace

Status TelemetrySection::Validate(const profile::Profile&) const {
  if (sample_runs.size() != sample_ns.size())
    return DataLoss("sample_runs and sample_ns differ in length");
  for (size_t i = 0; i < channels.size(); ++i) {
    const Channel& c = channels[i];
    const std::string where = "channel #" + std::to_string(i) + " '" + c.name + "'";
    if (c.name.empty()) return DataLoss(where + " has no name");
    if (c.values.size() != sample_ns.size())
      return DataLoss(where + " has " + std::to_string(c.values.size()) + " values for " +
                      std::to_string(sample_ns.size()) + " samples");
    for (double v : c.values)
      if (!Plausible(v)) return DataLoss(where + " has a non-finite or absurd value");
    if (!Plausible(c.max) || !Plausible(c.min) || c.gaps < 0)
      return DataLoss(where + " has an invalid ceiling, floor or gap count");
  }
  for (size_t i = 0; i < clusters.size(); ++i)
    if (clusters[i].name.empty() || clusters[i].cpus.empty() || clusters[i].capacity < 0)
      return DataLoss("core cluster #" + std::to_string(i) +
                      " has no name, no CPUs or a negative "
                      "capacity");
  if (!thread_cpus.empty() && thread_cpus.size() != sample_ns.size())
    return DataLoss("thread_cpus has " + std::to_string(thread_cpus.size()) + " rows for " +
                    std::to_string(sample_ns.size()) + " samples");
  for (const auto& row : thread_cpus) {
    if (row.size() != threads.size())
      return DataLoss("a row of thread_cpus has " + std::to_string(row.size()) + " CPUs for " +
                      std::to_string(threads.size()) + " threads");
    for (int32_t cpu : row)
      if (cpu < -1) return DataLoss("thread_cpus holds a CPU number below -1");
  }
  return Status::Ok();
}

Range3 Summarize(const Channel& c) {
  Range3 r;
  if (c.values.empty()) return r;
  std::vector<double> v = c.values;
  std::sort(v.begin(), v.end());
  r.min = v.front();
  r.max = v.back();
  r.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  return r;
}

OPSCOPE_REGISTER_SECTION_TYPE(telemetry, {TelemetrySection::kKey, &FromJson});

}  // namespace opscope::telemetry
