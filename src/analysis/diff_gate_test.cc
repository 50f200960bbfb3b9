// The diff gate (--fail-above / --fail-op-above): slower beyond the threshold with an interval
// above zero fails; slower within the noise, slower below the threshold, and faster pass; no
// per-run data is refused.
#include "analysis/diff_gate.h"

#include <gtest/gtest.h>

#include "analysis/diag_test_util.h"

namespace opscope::analysis {
namespace {

using testing::MakeOp;
using testing::MakeProfile;

// Runs around `center` with a deterministic spread of +-`spread` (fraction).
std::vector<double> Runs(double center, double spread, int n = 20) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i)
    v.push_back(center * (1 + spread * (((i * 7) % n) / double(n - 1) * 2 - 1)));
  return v;
}

profile::OpRecord Op(const std::string& name, std::vector<double> runs) {
  profile::OpRecord op = MakeOp(name, "Conv", 1, 1e6, 1e5);
  op.runs_ms = std::move(runs);
  return op;
}

struct Pair {
  profile::Profile before, after;
  ProfileDiff d;
};
Pair Make(double before_ms, double after_ms, double spread, double op_before = 1,
          double op_after = 1) {
  Pair p;
  p.before = MakeProfile({Op("conv1", Runs(op_before, spread)), Op("relu1", Runs(0.5, 0.01))},
                         Runs(before_ms, spread));
  p.after = MakeProfile({Op("conv1", Runs(op_after, spread)), Op("relu1", Runs(0.5, 0.01))},
                        Runs(after_ms, spread));
  p.d = DiffProfiles(p.before, p.after);
  return p;
}

TEST(DiffGate, SlowerBeyondThresholdFails) {
  Pair p = Make(10, 12, 0.02);  // +20%, tight runs
  GateOptions o;
  o.fail_above_pct = 5;
  auto v = EvaluateGate(p.before, p.after, p.d, o);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_TRUE(v->failed);
  ASSERT_EQ(v->lines.size(), 1u);
  EXPECT_NE(v->lines[0].find("diff gate: FAIL: end-to-end"), std::string::npos) << v->lines[0];
  EXPECT_NE(v->lines[0].find("interval excludes 0"), std::string::npos) << v->lines[0];
}

TEST(DiffGate, SlowerBelowThresholdPasses) {
  Pair p = Make(10, 10.3, 0.005);  // +3%, significant but under 5%
  GateOptions o;
  o.fail_above_pct = 5;
  auto v = EvaluateGate(p.before, p.after, p.d, o);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(p.d.e2e.significant);
  EXPECT_FALSE(v->failed) << v->lines[0];
  EXPECT_NE(v->lines[0].find("pass"), std::string::npos);
}

TEST(DiffGate, SlowerWithinNoisePasses) {
  // +8% point change, but each side spreads +-60%: the interval includes 0.
  profile::Profile b = MakeProfile({Op("conv1", Runs(1, 0.6))}, {10, 4, 16, 5, 15, 6, 14});
  profile::Profile a =
      MakeProfile({Op("conv1", Runs(1.08, 0.6))}, {10.8, 4.3, 17.3, 5.4, 16.2, 6.5, 15.1});
  ProfileDiff d = DiffProfiles(b, a);
  ASSERT_GT(d.e2e.delta_pct, 5);
  ASSERT_FALSE(d.e2e.significant);
  GateOptions o;
  o.fail_above_pct = 5;
  o.fail_op_above_pct = 5;
  auto v = EvaluateGate(b, a, d, o);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_FALSE(v->failed);
  ASSERT_EQ(v->lines.size(), 2u);
  EXPECT_NE(v->lines[0].find("within the noise"), std::string::npos) << v->lines[0];
  EXPECT_NE(v->lines[1].find("over the threshold but within the noise"), std::string::npos)
      << v->lines[1];
}

TEST(DiffGate, FasterPasses) {
  Pair p = Make(12, 10, 0.02, 1.2, 1.0);
  GateOptions o;
  o.fail_above_pct = 1;
  o.fail_op_above_pct = 1;
  auto v = EvaluateGate(p.before, p.after, p.d, o);
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->failed);
  EXPECT_TRUE(v->slower_ops.empty());
}

TEST(DiffGate, OneSlowerOpFailsTheOpGateOnly) {
  Pair p = Make(10, 10, 0.02, 1.0, 1.5);  // conv1 +50%, end to end unchanged
  GateOptions o;
  o.fail_above_pct = 5;
  o.fail_op_above_pct = 10;
  auto v = EvaluateGate(p.before, p.after, p.d, o);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->failed);
  ASSERT_EQ(v->slower_ops.size(), 1u);
  EXPECT_EQ(v->slower_ops[0].name, "conv1");
  EXPECT_GT(v->slower_ops[0].ci.low_pct, 0);
  EXPECT_NE(v->lines[0].find("pass"), std::string::npos);
  EXPECT_NE(v->lines[1].find("FAIL: 1 node(s)"), std::string::npos) << v->lines[1];
  // A higher op threshold passes.
  o.fail_op_above_pct = 80;
  v = EvaluateGate(p.before, p.after, p.d, o);
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->failed);
}

TEST(DiffGate, RefusesWithoutPerRunTimes) {
  profile::Profile b = MakeProfile({Op("conv1", {1.0})}, {10});
  profile::Profile a = MakeProfile({Op("conv1", {2.0})}, {20});
  ProfileDiff d = DiffProfiles(b, a);
  GateOptions o;
  o.fail_above_pct = 5;
  auto v = EvaluateGate(b, a, d, o);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("--fail-above needs per-run"), std::string::npos);
  o.fail_above_pct.reset();
  o.fail_op_above_pct = 5;
  v = EvaluateGate(b, a, d, o);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("--fail-op-above needs per-run"), std::string::npos);
}

TEST(DiffGate, NodeCiMatchesTheEndToEndMethod) {
  profile::OpRecord b = Op("x", Runs(1, 0.02)), a = Op("x", Runs(1.2, 0.02));
  b.stats = ComputeStats(b.runs_ms);
  a.stats = ComputeStats(a.runs_ms);
  ChangeCi c = NodeChangeCi(b, a);
  double lo = 0, hi = 0;
  BootstrapChangeCi(b.runs_ms, a.runs_ms, &lo, &hi);
  EXPECT_TRUE(c.has_ci);
  EXPECT_TRUE(c.significant);
  EXPECT_DOUBLE_EQ(c.low_pct, lo);
  EXPECT_DOUBLE_EQ(c.high_pct, hi);
  EXPECT_LT(lo, 20);
  EXPECT_GT(hi, 20);
}

}  // namespace
}  // namespace opscope::analysis
