#include <fmt/format.h>

#include <algorithm>

#include "analysis/hygiene.h"
#include "analysis/roofline.h"
#include "analysis/rules.h"
#include "base/strings.h"

namespace opscope::analysis {

namespace rules {
#define OPSCOPE_RULE(ident) extern const Rule kRule_##ident;
#include "analysis/rules/rules.def"
#undef OPSCOPE_RULE
}  // namespace rules

const std::vector<const Rule*>& AllRules() {
  static const std::vector<const Rule*> all = {
#define OPSCOPE_RULE(ident) &rules::kRule_##ident,
#include "analysis/rules/rules.def"
#undef OPSCOPE_RULE
  };
  return all;
}

std::vector<profile::Finding> RunRules(const profile::Profile& p, const MachineCeilings* ceilings) {
  RuleContext ctx{p, nullptr, {}};
  if (ceilings && ceilings->Usable()) {
    ctx.ceilings = ceilings;
    ctx.roofline = ComputeRoofline(p, *ceilings);
  }
  std::vector<profile::Finding> out;
  for (const Rule* r : AllRules()) {
    std::vector<profile::Finding> f;
    r->apply(ctx, &f);
    for (auto& x : f) {
      if (x.rule.empty()) x.rule = r->id;
      out.push_back(std::move(x));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.severity < b.severity;  // kCritical first
  });
  return out;
}

void Diagnose(profile::Profile* p, const MachineCeilings* ceilings) {
  if (ceilings && ceilings->Usable()) {
    p->meta.machine = *ceilings;
    std::string mismatch = CeilingsMismatch(*ceilings, p->meta.cpu_model);
    if (!mismatch.empty() && ceilings->method != "manual") p->meta.degradations.push_back(mismatch);
    if (StartsWith(ceilings->verification, "unverified: "))
      p->meta.degradations.push_back("machine ceilings " + ceilings->verification);
    StoreRoofline(ComputeRoofline(*p, *ceilings), p);
  } else {
    for (auto& op : p->ops) op.roofline.reset();
  }
  p->findings = RunRules(*p, ceilings);
  p->verdicts = ComputeVerdicts(*p);
}

namespace rule_util {

std::vector<const profile::OpRecord*> OpsByShare(const profile::Profile& p) {
  std::vector<const profile::OpRecord*> v;
  for (const auto& op : p.ops)
    if (op.status != profile::OpStatus::kFolded) v.push_back(&op);
  std::stable_sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->share > b->share; });
  return v;
}

std::string OpBrief(const profile::OpRecord& op) {
  return fmt::format("{} {:.1f}% ({})", op.name, op.share * 100, HumanMs(op.stats.trimmed_mean));
}

double SumOfOpsMs(const profile::Profile& p) {
  double s = 0;
  for (const auto& op : p.ops)
    if (op.status != profile::OpStatus::kFolded) s += op.stats.trimmed_mean;
  return s;
}

}  // namespace rule_util
}  // namespace opscope::analysis
