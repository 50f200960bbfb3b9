// cpu-governor: a cpufreq governor that scales the clock with load makes timings move.
#include "analysis/rules.h"

namespace opscope::analysis::rules {

static void Apply(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  const std::string& g = ctx.profile.meta.governor;
  if (g.empty() || g == "performance" || g == "userspace") return;
  profile::Finding f;
  f.severity = profile::Severity::kInfo;
  f.title = "cpufreq governor is '" + g + "'";
  f.evidence = "the '" + g +
               "' governor raises and lowers the clock with load, so short runs "
               "and the first runs after idle are measured at a lower frequency";
  f.suggestion =
      "for benchmarking, `cpupower frequency-set -g performance` (or write "
      "'performance' to /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)";
  out->push_back(std::move(f));
}

extern const Rule kRule_cpu_governor = {
    "cpu-governor", "meta.governor is set and is not 'performance' or 'userspace'", Apply};

}  // namespace opscope::analysis::rules
