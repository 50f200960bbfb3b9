// data-movement-share: layout operators (Reshape, Transpose, Concat, Gather, ...) take a large
// part of the time although they compute nothing.
#include <fmt/format.h>

#include <map>

#include "analysis/rules.h"
#include "base/strings.h"

namespace opscope::analysis::rules {

inline constexpr double kWarnShare = 0.10, kCriticalShare = 0.30, kSingleOpShare = 0.05;

static void Apply(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  double share = 0, ms = 0, bytes = 0;
  std::map<std::string, int> by_type;
  std::vector<const profile::OpRecord*> dm;
  for (const profile::OpRecord* op : rule_util::OpsByShare(ctx.profile)) {
    if (!IsDataMovementOp(op->op_type)) continue;
    share += op->share;
    ms += op->stats.trimmed_mean;
    bytes += op->bytes;
    by_type[op->op_type]++;
    dm.push_back(op);
  }
  if (dm.empty()) return;
  if (share < kWarnShare && dm.front()->share < kSingleOpShare) return;
  profile::Finding f;
  f.severity = share >= kCriticalShare ? profile::Severity::kCritical : profile::Severity::kWarning;
  f.title = fmt::format("data-movement ops take {:.1f}% of op time", share * 100);
  std::vector<std::string> types, top;
  for (const auto& [t, n] : by_type) types.push_back(fmt::format("{}×{}", t, n));
  for (size_t i = 0; i < dm.size() && i < 5; ++i) {
    top.push_back(rule_util::OpBrief(*dm[i]));
    f.ops.push_back(dm[i]->name);
  }
  f.evidence = fmt::format(
      "{} op(s) that only move data ({}) take {} per run, {:.1f}% of op time, "
      "moving {}; largest: {}",
      dm.size(), Join(types, ", "), HumanMs(ms), share * 100, HumanBytes(bytes), Join(top, "; "));
  bool transposes = by_type.count("Transpose") > 0;
  f.suggestion =
      "fold the layout change into the neighbouring op (a Conv/MatMul that writes the "
      "layout its consumer wants), choose the tensor layout once at the model input "
      "instead of converting back and forth, and remove Reshape/Transpose pairs that "
      "cancel (graph optimiser or export options)";
  if (transposes)
    f.suggestion +=
        "; a Transpose of a large tensor is a strided copy: its cost is memory "
        "traffic, not arithmetic";
  f.numbers["share"] = share;
  f.numbers["ms"] = ms;
  f.numbers["bytes"] = bytes;
  f.numbers["ops"] = static_cast<double>(dm.size());
  out->push_back(std::move(f));
}

extern const Rule kRule_data_movement_share = {
    "data-movement-share",
    "data-movement ops (IsDataMovementOp) together >= 10% of op time, or one of them >= 5%", Apply};

}  // namespace opscope::analysis::rules
