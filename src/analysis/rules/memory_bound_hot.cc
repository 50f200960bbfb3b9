// memory-bound-hot: hot ops left of the ridge point: bytes, not FLOPs, set their time.
#include <fmt/format.h>

#include <algorithm>

#include "analysis/rules.h"
#include "base/strings.h"

namespace opscope::analysis::rules {

inline constexpr double kHotShare = 0.05;

static void Apply(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  std::vector<const RooflinePoint*> hot;
  for (const RooflinePoint& r : ctx.roofline)
    if (r.cls == BoundClass::kMemory && r.share >= kHotShare) hot.push_back(&r);
  if (hot.empty()) return;
  std::sort(hot.begin(), hot.end(), [](auto* a, auto* b) { return a->share > b->share; });
  profile::Finding f;
  double share = 0;
  std::vector<std::string> lines;
  bool low_bw = false, confirmed = false;
  for (const RooflinePoint* r : hot) {
    share += r->share;
    f.ops.push_back(r->name);
    lines.push_back(
        fmt::format("{} ({}) {:.1f}%: {:.2f} FLOP/B, {:.1f} GB/s = {:.0f}% of bandwidth; "
                    "counters {}",
                    r->name, r->op_type, r->share * 100, r->intensity, r->achieved_gbps,
                    r->pct_of_roof, r->counter_confirmation));
    low_bw |= r->pct_of_roof < 50;
    confirmed |= StartsWith(r->counter_confirmation, "confirmed");
  }
  f.severity = share >= 0.25 ? profile::Severity::kCritical : profile::Severity::kWarning;
  f.title =
      fmt::format("{} memory-bound hot op(s) take {:.1f}% of op time", hot.size(), share * 100);
  f.evidence = Join(lines, "; ");
  f.suggestion =
      "reduce bytes, not FLOPs: fuse it with its neighbours so intermediates stay in "
      "cache (elementwise ops into the producing Conv/MatMul), tile it so a block is "
      "reused from cache (attention: a flash-attention style tiled kernel), and lower "
      "the precision (fp16/bf16 halves the traffic, int8 quarters it)";
  if (low_bw)
    f.suggestion +=
        "; ops far below the bandwidth roof also suffer from their access pattern "
        "(strided or gathered reads): make the innermost loop contiguous";
  f.numbers["share"] = share;
  f.numbers["ops"] = static_cast<double>(hot.size());
  f.numbers["top_pct_of_roof"] = hot.front()->pct_of_roof;
  f.numbers["counters_confirm"] = confirmed ? 1 : 0;
  out->push_back(std::move(f));
}

extern const Rule kRule_memory_bound_hot = {
    "memory-bound-hot", "roofline class memory-bound and share >= 5% (needs machine ceilings)",
    Apply};

}  // namespace opscope::analysis::rules
