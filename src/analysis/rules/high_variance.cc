// high-variance: run-to-run spread too large to trust a comparison.
#include <fmt/format.h>

#include "analysis/hygiene.h"
#include "analysis/rules.h"
#include "base/strings.h"
#include "profile/attached.h"

namespace opscope::analysis::rules {

inline constexpr double kNoisyCv = 0.05;

static void Apply(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  const profile::Profile& p = ctx.profile;
  std::vector<double> runs = p.e2e.runs_ms;
  // `run -p`: one attached span, not repeated runs; there is no -r to advise.
  if (profile::IsAttachedSpan(p)) return;
  if (runs.size() < 3) {
    if (!runs.empty() || p.meta.runs > 0) {
      profile::Finding f;
      f.severity = profile::Severity::kInfo;
      f.title = "too few runs to judge the variance";
      f.evidence = fmt::format("{} measured run(s)", runs.size());
      f.suggestion = "use at least 5 measured runs (-r 10) after warm-up";
      f.numbers["runs"] = static_cast<double>(runs.size());
      out->push_back(std::move(f));
    }
    return;
  }
  RepeatReport rep = AnalyzeRepeats(runs);
  if (rep.stats.cv < kNoisyCv && rep.outlier_runs.empty()) return;
  profile::Finding f;
  f.severity = rep.stats.cv >= 0.15 ? profile::Severity::kCritical : profile::Severity::kWarning;
  f.title = rep.stats.cv >= kNoisyCv
                ? fmt::format("run-to-run variation is high (CV {:.1f}%): results are {}",
                              rep.stats.cv * 100, rep.verdict)
                : fmt::format("{} outlier run(s)", rep.outlier_runs.size());
  f.evidence =
      rep.words + fmt::format("; min {}, max {}", HumanMs(rep.stats.min), HumanMs(rep.stats.max));
  std::vector<std::string> why;
  if (p.meta.warmup == 0)
    why.push_back("no warm-up runs (first-run allocations and cold caches are measured)");
  if (!p.meta.governor.empty() && p.meta.governor != "performance")
    why.push_back("cpufreq governor '" + p.meta.governor + "' changes the clock under load");
  if (DetectThrottling(p.clocks).throttled)
    why.push_back("the machine throttled (see the throttling finding)");
  why.push_back("other processes competing for the cores (shared or virtual machine)");
  f.suggestion = "do not compare numbers that move this much; likely causes: " + Join(why, "; ") +
                 ". Use more runs and warm-up, the performance governor, pinned threads "
                 "(taskset), and an idle machine; the median and trimmed mean are more robust "
                 "than the mean";
  f.numbers["cv"] = rep.stats.cv;
  f.numbers["outliers"] = static_cast<double>(rep.outlier_runs.size());
  f.numbers["runs"] = static_cast<double>(rep.stats.n);
  out->push_back(std::move(f));
}

extern const Rule kRule_high_variance = {
    "high-variance", "end-to-end CV >= 5% or far-out outlier runs (Tukey k=3); < 3 runs: info",
    Apply};

}  // namespace opscope::analysis::rules
