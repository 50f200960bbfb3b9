#include "analysis/machine.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "base/strings.h"
#include "profile/json_text.h"

namespace opscope::analysis {

std::string CeilingsToJson(const MachineCeilings& c) {
  nlohmann::json j;
  j["schema"] = "opscope.machine/2";
#define PUT(f) j[#f] = c.f;
  OPSCOPE_CEILING_FILE_FIELDS(PUT)
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
    OPSCOPE_CEILING_FILE_FIELDS(GET)
#undef GET
  } catch (const nlohmann::json::exception& e) {
    return DataLoss(origin + ": malformed machine file: " + e.what());
  }
  if (c.peak_gflops_all < 0 || c.peak_gflops_one < 0 || c.triad_gbps < 0 || c.llc_gbps < 0 ||
      c.peak_gops_int8_all < 0 || c.peak_gops_int8_one < 0)
    return DataLoss(origin + ": negative ceiling; re-create it with `opscope machine`");
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
