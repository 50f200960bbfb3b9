// many-small-ops: a crowd of tiny ops dominates: per-op overhead, not work, sets the time.
#include <fmt/format.h>

#include "analysis/rules.h"
#include "base/strings.h"

namespace opscope::analysis::rules {

inline constexpr double kSmallOpMs = 0.05;  // 50 us
inline constexpr int kMinCount = 10;
inline constexpr double kMinShare = 0.25;

static void Apply(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  int n = 0, total = 0;
  double share = 0, ms = 0;
  std::vector<std::string> names;
  for (const profile::OpRecord* op : rule_util::OpsByShare(ctx.profile)) {
    ++total;
    if (op->stats.trimmed_mean >= kSmallOpMs) continue;
    ++n;
    share += op->share;
    ms += op->stats.trimmed_mean;
    if (names.size() < 8) names.push_back(op->name);
  }
  if (n < kMinCount || share < kMinShare) return;
  profile::Finding f;
  f.severity = share >= 0.5 ? profile::Severity::kCritical : profile::Severity::kWarning;
  f.title = fmt::format("{} small ops (< {}) take {:.1f}% of op time", n, HumanMs(kSmallOpMs),
                        share * 100);
  f.ops = names;
  f.evidence = fmt::format(
      "{} of {} ops take under {} each, {} together per run ({:.1f}% of op "
      "time, mean {} per op): dispatch and synchronisation overhead per op "
      "is comparable to their work",
      n, total, HumanMs(kSmallOpMs), HumanMs(ms), share * 100, HumanMs(ms / n));
  f.suggestion =
      "fuse the graph: let the runtime's graph optimiser fuse elementwise chains and "
      "fold constants (ORT graph_optimization_level=ORT_ENABLE_ALL, TensorRT), "
      "replace decomposed ops (LayerNorm/GELU written as 6-10 primitive ops) with "
      "their fused forms, and batch inputs so each op does more work per dispatch";
  f.numbers["small_ops"] = n;
  f.numbers["share"] = share;
  f.numbers["ms"] = ms;
  out->push_back(std::move(f));
}

extern const Rule kRule_many_small_ops = {
    "many-small-ops", ">= 10 ops under 50 us each that together take >= 25% of op time", Apply};

}  // namespace opscope::analysis::rules
