// throttling: clocks fell or the temperature rose between the first and the last measured run.
#include <fmt/format.h>

#include "analysis/hygiene.h"
#include "analysis/rules.h"
#include "base/strings.h"

namespace opscope::analysis::rules {

static void Apply(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  ThrottleReport t = DetectThrottling(ctx.profile.clocks);
  if (!t.throttled) return;
  profile::Finding f;
  f.severity = profile::Severity::kCritical;
  f.title = "the machine throttled during the measurement";
  std::vector<std::string> runs;
  for (int r : t.affected_runs) runs.push_back(std::to_string(r));
  std::string summary = t.summary;
  if (StartsWith(summary, "throttling: ")) summary = summary.substr(12);
  f.evidence = summary + " (affected runs: " + Join(runs, ", ") + ")";
  f.suggestion =
      "results from throttled runs are slower than the hardware can do: cool the board "
      "(fan, heatsink), pin the clocks (performance governor; on Jetson `jetson_clocks`), "
      "pause between runs, or compare only runs at the same frequency";
  if (t.have_freq) {
    f.numbers["first_mhz"] = t.first_mhz;
    f.numbers["last_mhz"] = t.last_mhz;
    f.numbers["freq_drop_pct"] = t.freq_drop_pct;
  }
  if (t.have_temp) {
    f.numbers["first_temp_c"] = t.first_temp_c;
    f.numbers["last_temp_c"] = t.last_temp_c;
    f.numbers["temp_rise_c"] = t.temp_rise_c;
  }
  f.numbers["affected_runs"] = static_cast<double>(t.affected_runs.size());
  out->push_back(std::move(f));
}

extern const Rule kRule_throttling = {
    "throttling",
    "frequency of the last measured run > 5% below the first, or temperature +10 °C or more",
    Apply};

}  // namespace opscope::analysis::rules
