#include "analysis/machine.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "base/strings.h"
#include "profile/json_text.h"

namespace opscope::analysis {

double MachineCeilings::PeakGflops(int threads) const {
  if (threads == 1 && peak_gflops_one > 0) return peak_gflops_one;
  return peak_gflops_all > 0 ? peak_gflops_all : peak_gflops_one;
}

double MachineCeilings::PeakGopsInt8(int threads) const {
  if (threads == 1 && peak_gops_int8_one > 0) return peak_gops_int8_one;
  return peak_gops_int8_all > 0 ? peak_gops_int8_all : peak_gops_int8_one;
}

// clang-format off
#define CEILING_FIELDS(X)                                                                      \
  X(peak_gflops_all) X(peak_gflops_one) X(peak_gops_int8_all) X(peak_gops_int8_one)           \
  X(triad_gbps) X(llc_gbps) X(llc_bytes) X(threads) X(cpu_model) X(measured_at) X(method)      \
  X(cpu_flags) X(cpus) X(spread_pct) X(spread_of) X(repeats) X(pinned_cpus) X(core_types)
// clang-format on

std::string CeilingsToJson(const MachineCeilings& c) {
  nlohmann::json j;
  j["schema"] = "opscope.machine/2";
#define PUT(f) j[#f] = c.f;
  CEILING_FIELDS(PUT)
#undef PUT
  return profile::DumpJson(j, 1) + "\n";
}

StatusOr<MachineCeilings> CeilingsFromJson(const std::string& text, const std::string& origin) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return DataLoss(origin + ": not valid JSON; re-create it with `opscope machine`");
  // /1 files (no CPU stamp) are still read: CheckCeilingsCpu treats them as unverified.
  std::string schema = j.value("schema", "");
  if (schema != "opscope.machine/1" && schema != "opscope.machine/2")
    return Unsupported(origin +
                       ": not an opscope machine file (schema opscope.machine/2 expected)");
  MachineCeilings c;
  try {
#define GET(f) \
  if (j.contains(#f) && !j[#f].is_null()) j[#f].get_to(c.f);
    CEILING_FIELDS(GET)
#undef GET
  } catch (const nlohmann::json::exception& e) {
    return DataLoss(origin + ": malformed machine file: " + e.what());
  }
  if (c.peak_gflops_all < 0 || c.peak_gflops_one < 0 || c.triad_gbps < 0 || c.llc_gbps < 0 ||
      c.peak_gops_int8_all < 0 || c.peak_gops_int8_one < 0)
    return DataLoss(origin + ": negative ceiling; re-create it with `opscope machine`");
  return c;
}

void CeilingsToMeta(const MachineCeilings& c, profile::Meta* meta) {
  auto num = [](double v) { return fmt::format("{:.6g}", v); };
  meta->extra["machine.peak_gflops_all"] = num(c.peak_gflops_all);
  meta->extra["machine.peak_gflops_one"] = num(c.peak_gflops_one);
  if (c.peak_gops_int8_all > 0 || c.peak_gops_int8_one > 0) {
    meta->extra["machine.peak_gops_int8_all"] = num(c.peak_gops_int8_all);
    meta->extra["machine.peak_gops_int8_one"] = num(c.peak_gops_int8_one);
  }
  meta->extra["machine.triad_gbps"] = num(c.triad_gbps);
  meta->extra["machine.llc_gbps"] = num(c.llc_gbps);
  meta->extra["machine.llc_bytes"] = num(c.llc_bytes);
  meta->extra["machine.threads"] = std::to_string(c.threads);
  meta->extra["machine.cpu_model"] = c.cpu_model;
  meta->extra["machine.measured_at"] = c.measured_at;
  meta->extra["machine.method"] = c.method;
  if (!c.pinned_cpus.empty()) meta->extra["machine.pinned_cpus"] = c.pinned_cpus;
  if (!c.verification.empty()) meta->extra["machine.verification"] = c.verification;
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
  num("machine.peak_gops_int8_all", &c.peak_gops_int8_all);
  num("machine.peak_gops_int8_one", &c.peak_gops_int8_one);
  num("machine.triad_gbps", &c.triad_gbps);
  num("machine.llc_gbps", &c.llc_gbps);
  num("machine.llc_bytes", &c.llc_bytes);
  int64_t threads = 0;
  if (ParseInt64(str("machine.threads"), &threads)) c.threads = static_cast<int>(threads);
  c.cpu_model = str("machine.cpu_model");
  c.measured_at = str("machine.measured_at");
  c.method = str("machine.method");
  c.pinned_cpus = str("machine.pinned_cpus");
  c.verification = str("machine.verification");
  if (!c.Usable()) return std::nullopt;
  return c;
}

std::string RelevantCpuFlags(const std::string& cpuinfo_flags) {
  // x86: SIMD widths, FMA, VNNI/BF16/FP16/AMX; Arm: NEON/ASIMD, dot product, FP16, SVE, SME.
  static const char* const kRelevant[] = {
      "sse2",     "sse4_2",      "avx",         "avx2",        "fma",      "avx512f",  "avx512bw",
      "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16",
      "amx_int8", "neon",        "asimd",       "asimdhp",     "asimddp",  "fphp",     "i8mm",
      "bf16",     "sve",         "sve2",        "sme"};
  std::istringstream in(cpuinfo_flags);
  std::vector<std::string> out;
  std::string f;
  while (in >> f)
    if (std::find(std::begin(kRelevant), std::end(kRelevant), f) != std::end(kRelevant))
      out.push_back(f);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return Join(out, " ");
}

// Flags in `a` that are not in `b`, space-separated.
static std::string FlagsMissing(const std::string& a, const std::string& b) {
  std::istringstream ia(a);
  std::string f, out;
  std::vector<std::string> vb;
  std::istringstream ib(b);
  for (std::string x; ib >> x;) vb.push_back(x);
  while (ia >> f)
    if (std::find(vb.begin(), vb.end(), f) == vb.end()) out += (out.empty() ? "" : " ") + f;
  return out;
}

Status CheckCeilingsCpu(const MachineCeilings& c, const CpuStamp& here, const std::string& origin,
                        std::string* note) {
  note->clear();
  if (c.method == "manual") return Status::Ok();
  if (c.cpus == 0 && c.cpu_flags.empty()) {
    *note = fmt::format(
        "{}: the ceilings carry no CPU stamp (written by an older opscope), so "
        "they are used unverified; run `opscope machine` again to re-measure and "
        "stamp them",
        origin);
    return Status::Ok();
  }
  std::vector<std::string> diffs;
  if (!c.cpu_model.empty() && !here.model.empty() && Trim(c.cpu_model) != Trim(here.model))
    diffs.push_back(fmt::format("model '{}' here", here.model));
  if (c.cpus > 0 && here.cpus > 0 && c.cpus != here.cpus)
    diffs.push_back(fmt::format("{} CPUs here, {} then", here.cpus, c.cpus));
  if (!here.flags.empty() && c.cpu_flags != here.flags) {
    std::string gone = FlagsMissing(c.cpu_flags, here.flags);
    std::string added = FlagsMissing(here.flags, c.cpu_flags);
    std::string d = "ISA flags differ";
    if (!gone.empty()) d += " (missing here: " + gone + ")";
    if (!added.empty()) d += " (new here: " + added + ")";
    diffs.push_back(d);
  }
  if (diffs.empty()) return Status::Ok();
  return Unavailable(fmt::format(
      "{}: machine ceilings were measured on '{}' ({} CPUs, flags: {}) but this CPU is '{}' ({} "
      "CPUs, flags: {}): {}; run `opscope machine` again here (or pass --peak-gflops/--peak-gbps "
      "for the machine the profile is meant for)",
      origin, c.cpu_model, c.cpus, c.cpu_flags.empty() ? "-" : c.cpu_flags, here.model, here.cpus,
      here.flags.empty() ? "-" : here.flags, Join(diffs, ", ")));
}

Status CheckCeilingsStable(const MachineCeilings& c) {
  const char* fix =
      "other processes were competing for the CPU; run `opscope machine` again on a "
      "quiet machine (stop builds and benchmarks first), or add --force to store "
      "them anyway";
  if (c.spread_pct > kMaxCeilingSpreadPct)
    return Unavailable(fmt::format(
        "ceilings not stored: {} varied {:.0f}% between {} repeats (median below best; at most "
        "{:.0f}% is accepted): {}",
        c.spread_of, c.spread_pct, c.repeats, kMaxCeilingSpreadPct, fix));
  if (c.threads > 1 && c.peak_gflops_all > 0 && c.peak_gflops_all < c.peak_gflops_one)
    return Unavailable(fmt::format(
        "ceilings not stored: the all-core peak ({:.1f} GFLOP/s on {} threads) is below the "
        "one-core peak ({:.1f} GFLOP/s): {}",
        c.peak_gflops_all, c.threads, c.peak_gflops_one, fix));
  return Status::Ok();
}

std::string CeilingsMismatch(const MachineCeilings& c, const std::string& cpu_model) {
  if (c.cpu_model.empty() || cpu_model.empty() || Trim(c.cpu_model) == Trim(cpu_model)) return "";
  return fmt::format(
      "machine ceilings were measured on '{}' but this profile ran on '{}': "
      "the roofline percentages compare against the other machine's roofs "
      "(run `opscope machine` here, or pass --peak-gflops/--peak-gbps for the target)",
      c.cpu_model, cpu_model);
}

}  // namespace opscope::analysis
