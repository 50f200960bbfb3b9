#include "analysis/machine.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "base/strings.h"

namespace opscope::analysis {

double MachineCeilings::PeakGflops(int threads) const {
  if (threads == 1 && peak_gflops_one > 0) return peak_gflops_one;
  return peak_gflops_all > 0 ? peak_gflops_all : peak_gflops_one;
}

#define CEILING_FIELDS(X) X(peak_gflops_all) X(peak_gflops_one) X(triad_gbps) X(llc_gbps) \
  X(llc_bytes) X(threads) X(cpu_model) X(measured_at) X(method)

std::string CeilingsToJson(const MachineCeilings& c) {
  nlohmann::json j;
  j["schema"] = "opscope.machine/1";
#define PUT(f) j[#f] = c.f;
  CEILING_FIELDS(PUT)
#undef PUT
  return j.dump(1) + "\n";
}

StatusOr<MachineCeilings> CeilingsFromJson(const std::string& text, const std::string& origin) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return DataLoss(origin + ": not valid JSON; re-create it with `opscope machine`");
  if (j.value("schema", "") != "opscope.machine/1")
    return Unsupported(origin + ": not an opscope machine file (schema opscope.machine/1 expected)");
  MachineCeilings c;
  try {
#define GET(f) if (j.contains(#f) && !j[#f].is_null()) j[#f].get_to(c.f);
    CEILING_FIELDS(GET)
#undef GET
  } catch (const nlohmann::json::exception& e) {
    return DataLoss(origin + ": malformed machine file: " + e.what());
  }
  if (c.peak_gflops_all < 0 || c.peak_gflops_one < 0 || c.triad_gbps < 0 || c.llc_gbps < 0)
    return DataLoss(origin + ": negative ceiling; re-create it with `opscope machine`");
  return c;
}

void CeilingsToMeta(const MachineCeilings& c, profile::Meta* meta) {
  auto num = [](double v) { return fmt::format("{:.6g}", v); };
  meta->extra["machine.peak_gflops_all"] = num(c.peak_gflops_all);
  meta->extra["machine.peak_gflops_one"] = num(c.peak_gflops_one);
  meta->extra["machine.triad_gbps"] = num(c.triad_gbps);
  meta->extra["machine.llc_gbps"] = num(c.llc_gbps);
  meta->extra["machine.llc_bytes"] = num(c.llc_bytes);
  meta->extra["machine.threads"] = std::to_string(c.threads);
  meta->extra["machine.cpu_model"] = c.cpu_model;
  meta->extra["machine.measured_at"] = c.measured_at;
  meta->extra["machine.method"] = c.method;
}

std::optional<MachineCeilings> CeilingsFromMeta(const profile::Meta& meta) {
  auto it = meta.extra.find("machine.triad_gbps");
  if (it == meta.extra.end()) return std::nullopt;
  MachineCeilings c;
  auto num = [&](const char* key, double* out) {
    auto f = meta.extra.find(key);
    if (f != meta.extra.end()) ParseDouble(f->second, out);
  };
  auto str = [&](const char* key) {
    auto f = meta.extra.find(key);
    return f == meta.extra.end() ? std::string() : f->second;
  };
  num("machine.peak_gflops_all", &c.peak_gflops_all);
  num("machine.peak_gflops_one", &c.peak_gflops_one);
  num("machine.triad_gbps", &c.triad_gbps);
  num("machine.llc_gbps", &c.llc_gbps);
  num("machine.llc_bytes", &c.llc_bytes);
  int64_t threads = 0;
  if (ParseInt64(str("machine.threads"), &threads)) c.threads = static_cast<int>(threads);
  c.cpu_model = str("machine.cpu_model");
  c.measured_at = str("machine.measured_at");
  c.method = str("machine.method");
  if (!c.Usable()) return std::nullopt;
  return c;
}

std::string CeilingsMismatch(const MachineCeilings& c, const std::string& cpu_model) {
  if (c.cpu_model.empty() || cpu_model.empty() || Trim(c.cpu_model) == Trim(cpu_model)) return "";
  return fmt::format("machine ceilings were measured on '{}' but this profile ran on '{}': "
                     "the roofline percentages compare against the other machine's roofs "
                     "(run `opscope machine` here, or pass --peak-gflops/--peak-gbps for the target)",
                     c.cpu_model, cpu_model);
}

}  // namespace opscope::analysis
