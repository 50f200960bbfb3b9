#include "analysis/diff_gate.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analysis/format.h"

namespace opscope::analysis {

ChangeCi NodeChangeCi(const profile::OpRecord& before, const profile::OpRecord& after) {
  ChangeCi c;
  if (before.status == profile::OpStatus::kFolded || after.status == profile::OpStatus::kFolded)
    return c;
  if (before.runs_ms.size() < 2 || after.runs_ms.size() < 2) return c;
  if (ComputeStats(before.runs_ms).trimmed_mean <= 0) return c;
  BootstrapChangeCi(before.runs_ms, after.runs_ms, &c.low_pct, &c.high_pct);
  c.has_ci = true;
  c.significant = c.low_pct > 0 || c.high_pct < 0;
  return c;
}

static std::string Ci(double lo, double hi) {
  return "95% CI " + BoundedSigned(lo, 1) + "%…" + BoundedPct(hi);
}

StatusOr<GateVerdict> EvaluateGate(const profile::Profile& before, const profile::Profile& after,
                                   const ProfileDiff& d, const GateOptions& o) {
  GateVerdict v;
  if (o.fail_above_pct) {
    const double t = *o.fail_above_pct;
    const E2EDelta& e = d.e2e;
    if (!e.available || !e.has_ci)
      return InvalidArgument(fmt::format(
          "--fail-above needs per-run end-to-end times on both sides (at least 2 runs each; here "
          "{} and {}{}) to "
          "tell a change from noise; profile with --runs 10 or more",
          e.runs_before, e.runs_after, e.basis == "sum of ops" ? ", only op sums" : ""));
    const bool slower = e.delta_pct > t && e.ci_low_pct > 0;
    std::string what = fmt::format(
        "end-to-end {} → {} ({}, {}{})", BoundedMs(e.before_ms), BoundedMs(e.after_ms),
        BoundedPct(e.delta_pct), Ci(e.ci_low_pct, e.ci_high_pct),
        e.weak_ci ? fmt::format(", weak: {} vs {} runs", e.runs_before, e.runs_after) : "");
    std::string why;
    if (slower)
      why = fmt::format("slower than the --fail-above {}% threshold, and the interval excludes 0",
                        fmt::format("{:g}", t));
    else if (e.delta_pct > t)
      why = fmt::format(
          "over the --fail-above {}% threshold but the interval includes 0: within the noise",
          fmt::format("{:g}", t));
    else
      why = fmt::format("within the --fail-above {}% threshold", fmt::format("{:g}", t));
    v.lines.push_back(std::string("diff gate: ") + (slower ? "FAIL" : "pass") + ": " + what + ": " +
                      why);
    v.failed = v.failed || slower;
  }
  if (o.fail_op_above_pct) {
    const double t = *o.fail_op_above_pct;
    std::map<std::string, const profile::OpRecord*> amap;
    for (const auto& op : after.ops) amap[op.name] = &op;
    int tested = 0, untested = 0, over_noise = 0;
    for (const auto& b : before.ops) {
      auto it = amap.find(b.name);
      if (it == amap.end()) continue;
      const profile::OpRecord& a = *it->second;
      if (b.status == profile::OpStatus::kFolded || a.status == profile::OpStatus::kFolded)
        continue;
      const double tb = b.stats.trimmed_mean, ta = a.stats.trimmed_mean;
      if (tb <= 0) continue;
      const double pct = (ta - tb) / tb * 100;
      if (pct <= t) {
        ++tested;
        continue;
      }
      ChangeCi ci = NodeChangeCi(b, a);
      if (!ci.has_ci) {
        ++untested;
        continue;
      }
      ++tested;
      if (ci.low_pct > 0)
        v.slower_ops.push_back({b.name, pct, ci});
      else
        ++over_noise;
    }
    if (tested == 0 && untested > 0)
      return InvalidArgument(
          "--fail-op-above needs per-run op times on both sides (at least 2 runs each) to tell a "
          "change from "
          "noise; profile with --runs 10 or more");
    std::stable_sort(v.slower_ops.begin(), v.slower_ops.end(),
                     [](const GateOp& x, const GateOp& y) { return x.delta_pct > y.delta_pct; });
    std::string thr = fmt::format("{:g}", t);
    std::string line;
    if (!v.slower_ops.empty()) {
      std::vector<std::string> names;
      for (size_t i = 0; i < v.slower_ops.size() && i < 5; ++i) {
        const auto& s = v.slower_ops[i];
        names.push_back(fmt::format("{} {} ({})", s.name, BoundedPct(s.delta_pct),
                                    Ci(s.ci.low_pct, s.ci.high_pct)));
      }
      line = fmt::format(
          "diff gate: FAIL: {} node(s) slower than the --fail-op-above {}% threshold with an "
          "interval "
          "that excludes 0: {}{}",
          v.slower_ops.size(), thr, fmt::join(names, "; "),
          v.slower_ops.size() > 5 ? fmt::format("; and {} more", v.slower_ops.size() - 5) : "");
      v.failed = true;
    } else {
      line = fmt::format(
          "diff gate: pass: no node slower than the --fail-op-above {}% threshold beyond the noise "
          "({} "
          "node(s) compared",
          thr, tested + untested);
      if (over_noise)
        line += fmt::format(", {} over the threshold but within the noise", over_noise);
      line += ")";
    }
    if (untested)
      line += fmt::format("; {} node(s) over the threshold without per-run times were not tested",
                          untested);
    v.lines.push_back(line);
  }
  return v;
}

}  // namespace opscope::analysis
