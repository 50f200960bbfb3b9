// The advice rule engine.
//
// A rule is one file src/analysis/rules/<rule_id>.cc defining `const Rule kRule_<ident>` plus one
// line OPSCOPE_RULE(<ident>) in rules/rules.def (an explicit list rather than static
// self-registration, because a static library drops object files nobody references). Each rule
// reads the Profile (and the roofline, when ceilings are known) and appends Findings: the rule
// id, a severity, a one-line title, the evidence in words and as `numbers`, the suggestion, and
// the ops concerned. Rules are pure and deterministic; RunRules sorts the result by severity
// (critical, warning, info) and keeps each rule's own order within a severity.
#pragma once

#include <string>
#include <vector>

#include "analysis/machine.h"
#include "analysis/roofline.h"
#include "profile/profile.h"

namespace opscope::analysis {

struct RuleContext {
  const profile::Profile& profile;
  const MachineCeilings* ceilings = nullptr;  // null: roofline-based rules stay silent
  std::vector<RooflinePoint> roofline;        // empty without ceilings
};

struct Rule {
  const char* id;       // "data-movement-share"
  const char* trigger;  // the condition, in words, for docs and `--list-rules`
  void (*apply)(const RuleContext& ctx, std::vector<profile::Finding>* out);
};

// Every rule, in rules.def order.
const std::vector<const Rule*>& AllRules();

// Applies every rule. `ceilings` may be null (or unusable): roofline rules are then skipped and
// the other rules still run.
std::vector<profile::Finding> RunRules(const profile::Profile& p, const MachineCeilings* ceilings);

// What a command calls last on a profile it made (`profile`, `stat`, `record`, `run`, `import`):
// stores usable ceilings in meta.machine, records a degradation when
// they were measured on another CPU model, and replaces p->findings with RunRules' result.
void Diagnose(profile::Profile* p, const MachineCeilings* ceilings);

// Helpers shared by rule files.
namespace rule_util {
// Ops that ran (status "executed" or "fused") sorted by share, descending.
std::vector<const profile::OpRecord*> OpsByShare(const profile::Profile& p);
// "Transpose_3 12.1% (1.10 ms)"
std::string OpBrief(const profile::OpRecord& op);
// Sum of the trimmed means of the ops that ran, ms.
double SumOfOpsMs(const profile::Profile& p);
}  // namespace rule_util

}  // namespace opscope::analysis
