// Per-node confidence intervals for a diff, and the CI performance gate of
// `opscope diff --fail-above PCT` / `--fail-op-above PCT`.
//
// A node's change is the percent change of its trimmed mean, with the same 95% bootstrap interval
// the end-to-end change uses (BootstrapChangeCi in diff.h: resamples of each side's per-run times,
// fixed seed). The gate fails only when the "after" side is slower beyond the threshold AND the
// interval excludes zero (its low end is above 0): a change of the point estimate inside the
// run-to-run noise does not fail a build, and neither does a significant change below the
// threshold. Without per-run times on both sides (fewer than 2 runs, or a profile with op sums
// only) the gate cannot tell noise from change and refuses, rather than pass silently.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/diff.h"
#include "base/status.h"
#include "profile/profile.h"

namespace opscope::analysis {

struct ChangeCi {
  bool has_ci = false;  // both sides have >= 2 per-run times
  double low_pct = 0, high_pct = 0;
  bool significant = false;  // the interval excludes 0
};

// The 95% interval of the percent change of a node's trimmed mean (empty when either side has
// fewer than 2 runs or a zero time).
ChangeCi NodeChangeCi(const profile::OpRecord& before, const profile::OpRecord& after);

struct GateOptions {
  std::optional<double> fail_above_pct;     // end to end
  std::optional<double> fail_op_above_pct;  // any node that exists on both sides
};

struct GateOp {
  std::string name;
  double delta_pct = 0;
  ChangeCi ci;
};

struct GateVerdict {
  bool failed = false;
  std::vector<std::string> lines;  // one verdict line per gate ("diff gate: FAIL: ...")
  std::vector<GateOp> slower_ops;  // nodes over --fail-op-above with an interval above 0
};

// InvalidArgument when a requested gate has no per-run times to decide on.
StatusOr<GateVerdict> EvaluateGate(const profile::Profile& before, const profile::Profile& after,
                                   const ProfileDiff& d, const GateOptions& o);

}  // namespace opscope::analysis
