// pipeline-bottleneck: one top-level stage of an annotated program dominates; says so when it
// is pre- or post-processing rather than the network.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "analysis/range_stats.h"
#include "analysis/rules.h"
#include "base/strings.h"

namespace opscope::analysis::rules {

inline constexpr double kDominantShare = 0.5;

static bool LooksLike(const std::string& name, std::initializer_list<const char*> words) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  for (const char* w : words)
    if (lower.find(w) != std::string::npos) return true;
  return false;
}

static void Apply(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  if (ctx.profile.ranges.empty()) return;
  RangeReport rep = SummarizeRanges(ctx.profile);
  std::vector<const RangeSummary*> top;
  for (const RangeSummary& r : rep.ranges)
    if (r.depth == 0) top.push_back(&r);
  if (top.size() < 2) return;
  const RangeSummary* big = *std::max_element(
      top.begin(), top.end(), [](auto* a, auto* b) { return a->total_ms < b->total_ms; });
  if (big->share_of_top < kDominantShare) return;
  profile::Finding f;
  bool pre_post = LooksLike(big->name, {"pre", "post", "decode", "resize", "load", "nms", "io"});
  f.severity = profile::Severity::kWarning;
  f.title = pre_post ? fmt::format("'{}', not the network, is the bottleneck", big->name)
                     : fmt::format("stage '{}' dominates the pipeline", big->name);
  f.ops = {big->name};
  f.evidence = fmt::format("{} takes {:.1f}% of the top-level stages' time ({} of {} per run); {}",
                           big->name, big->share_of_top * 100, HumanMs(big->per_run_ms),
                           HumanMs(rep.top_total_ms / rep.runs), rep.headline);
  f.suggestion =
      "optimise the dominant stage first: speeding up any other stage can gain at most " +
      fmt::format("{:.0f}%", (1 - big->share_of_top) * 100) + " of the pipeline time";
  if (pre_post)
    f.suggestion +=
        "; for pre/post-processing: vectorise or use an optimised library (OpenCV, "
        "libyuv, NPP on GPU), fuse resize+normalise into one pass, run it on "
        "another thread overlapped with inference, or move it into the model";
  f.numbers["share"] = big->share_of_top;
  f.numbers["ms_per_run"] = big->per_run_ms;
  f.numbers["top_total_ms_per_run"] = rep.top_total_ms / rep.runs;
  out->push_back(std::move(f));
}

extern const Rule kRule_pipeline_bottleneck = {
    "pipeline-bottleneck",
    ">= 2 top-level annotated ranges and one of them takes >= 50% of their total time", Apply};

}  // namespace opscope::analysis::rules
