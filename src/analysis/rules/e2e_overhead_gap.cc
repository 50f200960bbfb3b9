// e2e-overhead-gap: the end-to-end time is much larger than the sum of the ops.
#include <fmt/format.h>

#include "analysis/range_stats.h"
#include "analysis/rules.h"
#include "base/strings.h"
#include "profile/attached.h"

namespace opscope::analysis::rules {

inline constexpr double kMinGapFraction = 0.15, kMinGapMs = 0.2;

// `opscope run` profiles: the program's wall time against its annotated top-level stages.
static void ApplyRanges(const profile::Profile& p, std::vector<profile::Finding>* out) {
  RangeReport rep = SummarizeRanges(p);
  double e2e = p.e2e.stats.median;
  double staged = rep.top_total_ms / rep.runs;
  double gap = e2e - staged;
  if (e2e <= 0 || gap < kMinGapMs || gap / e2e < kMinGapFraction) return;
  profile::Finding f;
  f.severity = gap / e2e >= 0.4 ? profile::Severity::kWarning : profile::Severity::kInfo;
  if (profile::IsAttachedSpan(p)) {
    // A span of a running program: no start-up in it, and a stage that straddles either end of
    // the span is not recorded at all (range_attach.h), which also counts as unannotated here.
    f.title =
        fmt::format("{:.0f}% of the attached span is outside the recorded stages", gap / e2e * 100);
    f.evidence = fmt::format(
        "opscope was attached for {}, the top-level ranges recorded whole cover {}: {} "
        "({:.1f}%) is unannotated or in stages cut by the start or end of the span",
        HumanMs(e2e), HumanMs(staged), HumanMs(gap), gap / e2e * 100);
    f.suggestion =
        "attach for longer (many stages per span make the cut ones matter less) and annotate "
        "what runs between the stages (waiting for input, I/O, other threads' work)";
  } else {
    f.title = fmt::format("{:.0f}% of the program's time is outside the annotated stages",
                          gap / e2e * 100);
    f.evidence = fmt::format(
        "the program runs {} (median), its top-level ranges cover {} per run: {} "
        "({:.1f}%) is unannotated",
        HumanMs(e2e), HumanMs(staged), HumanMs(gap), gap / e2e * 100);
    f.suggestion =
        "annotate the rest (process start-up, model loading, input decoding, output "
        "writing) to see whether it matters in steady state; one-time start-up cost "
        "matters for short-lived programs only";
  }
  f.numbers["e2e_ms"] = e2e;
  f.numbers["ranges_ms"] = staged;
  f.numbers["gap_ms"] = gap;
  f.numbers["gap_fraction"] = gap / e2e;
  out->push_back(std::move(f));
}

static void Apply(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  const profile::Profile& p = ctx.profile;
  if (p.e2e.runs_ms.empty()) return;
  if (p.ops.empty()) {
    if (!p.ranges.empty()) ApplyRanges(p, out);
    return;
  }
  double e2e = p.e2e.stats.trimmed_mean > 0 ? p.e2e.stats.trimmed_mean : p.e2e.stats.median;
  double ops = rule_util::SumOfOpsMs(p);
  double gap = e2e - ops;
  if (e2e <= 0 || gap < kMinGapMs || gap / e2e < kMinGapFraction) return;
  profile::Finding f;
  f.severity = gap / e2e >= 0.4 ? profile::Severity::kCritical : profile::Severity::kWarning;
  f.title = fmt::format("{:.0f}% of the end-to-end time is outside the ops", gap / e2e * 100);
  f.evidence = fmt::format(
      "end-to-end {} per run, ops sum to {}: {} ({:.1f}%) is spent between "
      "ops",
      HumanMs(e2e), HumanMs(ops), HumanMs(gap), gap / e2e * 100);
  if (p.overhead && p.overhead->measurable && p.overhead->pct > 0)
    f.evidence += fmt::format(" (opscope's own measured overhead: {:.1f}%)", p.overhead->pct);
  f.suggestion =
      "the runtime or the pipeline costs more than the network's arithmetic: look for "
      "per-inference allocations, input/output copies and conversions, thread-pool "
      "wake-ups and session setup inside the timed loop; annotate the stages and use "
      "`opscope run -- CMD` to see where the time goes";
  f.numbers["e2e_ms"] = e2e;
  f.numbers["ops_ms"] = ops;
  f.numbers["gap_ms"] = gap;
  f.numbers["gap_fraction"] = gap / e2e;
  out->push_back(std::move(f));
}

extern const Rule kRule_e2e_overhead_gap = {
    "e2e-overhead-gap",
    "end-to-end trimmed mean exceeds the sum of op times (or, for `run`, of the top-level "
    "ranges per run) by >= 15% and >= 0.2 ms",
    Apply};

}  // namespace opscope::analysis::rules
