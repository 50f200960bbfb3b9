// The telemetry section's findings (analysis layer; listed in analysis/rules/rules.def):
// - board-power-mode: a Jetson measured in a power mode other than MAXN, or with jetson_clocks
//   off (the clocks scale with load, so the numbers move);
// - clock-below-ceiling: a CPU-cluster or memory clock (and the GPU's, for GPU profiles) ran well
//   below its ceiling during the measured runs (DVFS, a power cap or thermal throttling).
#include <fmt/format.h>

#include "analysis/rules.h"
#include "base/strings.h"
#include "sections/telemetry/telemetry_section.h"

namespace opscope::analysis::rules {
namespace {

using telemetry::Channel;
using telemetry::TelemetrySection;

inline constexpr double kBelowCeiling = 0.9;  // median under 90% of the ceiling

void PowerMode(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  const TelemetrySection* t = ctx.profile.sections.Find<TelemetrySection>();
  if (!t || t->platform != "jetson") return;
  auto get = [&](const char* k) {
    auto it = t->environment.find(k);
    return it == t->environment.end() ? std::string() : it->second;
  };
  const std::string mode = get("power mode"), clocks = get("jetson_clocks");
  const bool maxn = mode.find("MAXN") != std::string::npos;
  const bool pinned = StartsWith(clocks, "on");
  if ((mode.empty() || maxn) && (clocks.empty() || pinned)) return;
  profile::Finding f;
  f.rule = "board-power-mode";
  f.severity = profile::Severity::kWarning;
  std::vector<std::string> what;
  if (!mode.empty() && !maxn) what.push_back("power mode " + mode);
  if (!clocks.empty() && !pinned) what.push_back("jetson_clocks " + clocks);
  f.title = "the board was not at full speed: " + Join(what, "; ");
  f.evidence = Join(what, "; ") +
               ": every time in this profile is for that setting, and with dynamic clocks it "
               "moves with load and temperature";
  f.suggestion =
      "for numbers comparable with other boards and reports, measure in MAXN (`sudo nvpmodel -m "
      "0`) with `sudo jetson_clocks`; to measure the deployment's own power budget, keep its mode "
      "and say which one next to every figure";
  f.numbers["maxn"] = maxn ? 1 : 0;
  f.numbers["jetson_clocks_on"] = pinned ? 1 : 0;
  out->push_back(std::move(f));
}

void BelowCeiling(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  const TelemetrySection* t = ctx.profile.sections.Find<TelemetrySection>();
  if (!t || t->sample_ns.size() < 2) return;  // a description, not samples of the runs
  std::vector<std::string> low;
  double worst = 1;
  // The clocks of what did the work: CPU clusters and memory always; the GPU when the profile
  // holds GPU activity. An accelerator idling at its floor while the CPU engine ran is no news.
  auto relevant = [&](const Channel& c) {
    if (StartsWith(c.name, "cpu clock") || StartsWith(c.name, "emc ") || StartsWith(c.name, "dmc "))
      return true;
    return ctx.profile.gpu.has_value() && StartsWith(c.name, "gpu ");
  };
  for (const Channel& c : t->channels) {
    if (c.kind != "clock" || c.max <= 0 || !relevant(c)) continue;
    const double median = telemetry::Summarize(c).median;
    if (median >= kBelowCeiling * c.max) continue;
    worst = std::min(worst, median / c.max);
    low.push_back(fmt::format("{} median {:.0f} of {:.0f} MHz ({:.0f}%)", c.name, median, c.max,
                              median / c.max * 100));
  }
  if (low.empty()) return;
  profile::Finding f;
  f.rule = "clock-below-ceiling";
  f.severity = worst < 0.6 ? profile::Severity::kWarning : profile::Severity::kInfo;
  f.title = fmt::format("{} clock(s) ran below their ceiling during the runs", low.size());
  f.evidence = Join(low, "; ");
  f.suggestion =
      "a clock under its ceiling is DVFS at work (a governor that waits for load), a power cap "
      "or thermal throttling: pin the clocks for measurement (jetson_clocks; the performance "
      "governor for cpufreq/devfreq), check the thermal zones beside them, and compare runs only "
      "at the same clocks";
  f.numbers["clocks_below"] = static_cast<double>(low.size());
  f.numbers["worst_ratio"] = worst;
  out->push_back(std::move(f));
}

}  // namespace

extern const Rule kRule_board_power_mode = {
    "board-power-mode", "a Jetson in a power mode other than MAXN, or with jetson_clocks off",
    PowerMode};
extern const Rule kRule_clock_below_ceiling = {
    "clock-below-ceiling",
    "a CPU-cluster or memory clock (the GPU's too in a GPU profile) whose median over the runs is "
    "under 90% of its ceiling",
    BelowCeiling};

}  // namespace opscope::analysis::rules
