// compute-bound-hot: hot ops right of the ridge point: arithmetic sets their time.
#include <fmt/format.h>

#include <algorithm>

#include "analysis/rules.h"
#include "base/strings.h"

namespace opscope::analysis::rules {

inline constexpr double kHotShare = 0.05, kPoorKernelPct = 30;

static void Apply(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  std::vector<const RooflinePoint*> hot;
  for (const RooflinePoint& r : ctx.roofline)
    if (r.cls == BoundClass::kCompute && r.share >= kHotShare) hot.push_back(&r);
  if (hot.empty()) return;
  std::sort(hot.begin(), hot.end(), [](auto* a, auto* b) { return a->share > b->share; });
  profile::Finding f;
  double share = 0;
  std::vector<std::string> lines, poor;
  for (const RooflinePoint* r : hot) {
    share += r->share;
    f.ops.push_back(r->name);
    lines.push_back(
        fmt::format("{} ({}) {:.1f}%: {:.1f} FLOP/B, {:.1f} GFLOP/s = {:.0f}% of peak; "
                    "counters {}",
                    r->name, r->op_type, r->share * 100, r->intensity, r->achieved_gflops,
                    r->pct_of_roof, r->counter_confirmation));
    if (r->pct_of_roof < kPoorKernelPct) poor.push_back(r->name);
  }
  f.severity = share >= 0.25 ? profile::Severity::kWarning : profile::Severity::kInfo;
  f.title =
      fmt::format("{} compute-bound hot op(s) take {:.1f}% of op time", hot.size(), share * 100);
  f.evidence = Join(lines, "; ");
  f.suggestion =
      "reduce or speed up the arithmetic: quantize (int8 does 2-4x the MACs per cycle "
      "of fp32 on CPUs with VNNI/dot-product instructions), fuse the following "
      "elementwise ops into it, or prune/shrink the layer";
  if (!poor.empty())
    f.suggestion += fmt::format(
        "; {} reach(es) under {:.0f}% of peak: a better kernel (blocked, "
        "vectorised, e.g. oneDNN/Winograd for Conv) or more threads "
        "would help before anything else",
        Join(poor, ", "), kPoorKernelPct);
  f.numbers["share"] = share;
  f.numbers["ops"] = static_cast<double>(hot.size());
  f.numbers["top_pct_of_roof"] = hot.front()->pct_of_roof;
  out->push_back(std::move(f));
}

extern const Rule kRule_compute_bound_hot = {
    "compute-bound-hot", "roofline class compute-bound and share >= 5% (needs machine ceilings)",
    Apply};

}  // namespace opscope::analysis::rules
