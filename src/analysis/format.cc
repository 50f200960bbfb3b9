#include "analysis/format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/strings.h"

namespace opscope::analysis {

std::string FormatFindings(const std::vector<profile::Finding>& findings, bool color) {
  if (findings.empty()) return "Findings: none (no rule triggered)\n";
  std::string bold = color ? "\x1b[1m" : "", reset = color ? "\x1b[0m" : "";
  std::string out = bold + fmt::format("Findings ({})", findings.size()) + reset + "\n";
  for (const auto& f : findings) {
    std::string sev = profile::SeverityName(f.severity);
    if (color) {
      const char* c = f.severity == profile::Severity::kCritical  ? "\x1b[31m"
                      : f.severity == profile::Severity::kWarning ? "\x1b[33m"
                                                                  : "\x1b[36m";
      sev = c + sev + reset;
    }
    out += fmt::format("  [{}] {}: {}\n", sev, f.rule, f.title);
    if (!f.evidence.empty()) out += "      evidence: " + f.evidence + "\n";
    if (!f.suggestion.empty()) out += "      do: " + f.suggestion + "\n";
    if (!f.ops.empty()) out += "      ops: " + Join(f.ops, ", ") + "\n";
  }
  return out;
}

std::string FormatCeilings(const MachineCeilings& c) {
  std::string s = fmt::format("peak {:.1f} GFLOP/s", c.peak_gflops_all);
  if (c.threads > 0) s += fmt::format(" ({} threads)", c.threads);
  if (c.peak_gflops_one > 0) s += fmt::format(", {:.1f} GFLOP/s one core", c.peak_gflops_one);
  s += fmt::format("; memory {:.1f} GB/s (triad)", c.triad_gbps);
  if (c.llc_gbps > 0) s += fmt::format(", {:.1f} GB/s in LLC", c.llc_gbps);
  if (c.triad_gbps > 0 && c.peak_gflops_all > 0)
    s += fmt::format("; ridge {:.1f} FLOP/B", c.peak_gflops_all / c.triad_gbps);
  if (!c.method.empty())
    s += " [" + c.method + (c.cpu_model.empty() ? "" : ", " + c.cpu_model) + "]";
  return s;
}

std::string FormatRoofline(const std::vector<RooflinePoint>& points, const MachineCeilings& c,
                           bool color, size_t max_rows) {
  std::string out = "Roofline: " + FormatCeilings(c) + "\n";
  std::vector<const RooflinePoint*> v;
  for (const auto& p : points) v.push_back(&p);
  std::stable_sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->share > b->share; });
  out += fmt::format("{:<30} {:<14} {:>7} {:>9} {:>10} {:>9} {:>7}  {:<14} {}\n", "op", "type",
                     "share", "FLOP/B", "GFLOP/s", "GB/s", "%roof", "class", "counters");
  for (size_t i = 0; i < v.size() && i < max_rows; ++i) {
    const RooflinePoint& p = *v[i];
    std::string name = p.name.size() > 30 ? p.name.substr(0, 27) + "..." : p.name;
    std::string type = p.op_type.size() > 14 ? p.op_type.substr(0, 14) : p.op_type;
    std::string cls = BoundClassName(p.cls);
    if (color) {
      const char* k = p.cls == BoundClass::kMemory         ? "\x1b[33m"
                      : p.cls == BoundClass::kCompute      ? "\x1b[32m"
                      : p.cls == BoundClass::kDataMovement ? "\x1b[35m"
                                                           : "\x1b[36m";
      cls = k + fmt::format("{:<14}", cls) + "\x1b[0m";
    }
    std::string counters = p.counter_confirmation;
    if (counters == "no hardware counters") counters = "-";
    // "!" after %roof: the op runs above a roof, so the ceilings are wrong (footnote below).
    out +=
        fmt::format("{:<30} {:<14} {:>6.1f}% {:>9.2f} {:>10.2f} {:>9.2f} {:>6.0f}%{} {:<14} {}\n",
                    name, type, p.share * 100, p.intensity, p.achieved_gflops, p.achieved_gbps,
                    p.pct_of_roof, p.above_roof.empty() ? " " : "!", cls, counters);
  }
  if (v.size() > max_rows) out += fmt::format("... {} more ops\n", v.size() - max_rows);
  size_t above = 0;
  for (const auto* p : v) above += !p->above_roof.empty();
  if (above > 0)
    out += fmt::format(
        "! {} op(s) run above the machine ceilings: the ceilings are wrong "
        "(measured under load or on another machine), and so are the classes and "
        "%roof above; run `opscope machine` again on a quiet machine\n",
        above);
  return out;
}

namespace {
constexpr double kFixedLimit = 1e7;
}  // namespace

std::string BoundedSigned(double v, int decimals) {
  if (!std::isfinite(v)) return "n/a";
  if (std::fabs(v) >= kFixedLimit) return fmt::format("{:+.3g}", v);
  return fmt::format("{:+.{}f}", v, decimals);
}

std::string BoundedPct(double pct) {
  std::string s = BoundedSigned(pct, 1);
  return s == "n/a" ? s : s + "%";
}

std::string BoundedMs(double ms) {
  if (!std::isfinite(ms)) return "n/a";
  if (std::fabs(ms) >= kFixedLimit) return fmt::format("{:.3g} s", ms / 1000);
  return HumanMs(ms);
}

}  // namespace opscope::analysis
