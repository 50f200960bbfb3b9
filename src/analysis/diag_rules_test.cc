// Each rule gets a profile built to trigger it (and the clean profile triggers none).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "analysis/diag_test_util.h"
#include "analysis/format.h"
#include "analysis/hygiene.h"
#include "analysis/rules.h"

namespace opscope::analysis {
namespace {

using testing::MakeOp;
using testing::MakeProfile;

MachineCeilings Ceilings() {
  MachineCeilings c;
  c.peak_gflops_all = c.peak_gflops_one = 100;
  c.triad_gbps = 10;
  c.threads = 2;
  c.method = "manual";
  return c;
}

std::vector<double> Steady(double ms, int n = 8) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(ms * (1 + 0.001 * (i % 3)));
  return v;
}

// Balanced, release build, steady, performance governor, e2e = sum of ops: no rule fires.
profile::Profile Clean() {
  std::vector<profile::OpRecord> ops;
  for (int i = 0; i < 25; ++i)  // 25 mid-size convs at 60% of the compute roof, 4% share each
    ops.push_back(MakeOp("conv" + std::to_string(i), "Conv", 1.0, 6e7, 1e5));
  return MakeProfile(ops, Steady(25.0));
}

const profile::Finding* FindRule(const std::vector<profile::Finding>& f, const std::string& id) {
  auto it = std::find_if(f.begin(), f.end(), [&](const auto& x) { return x.rule == id; });
  return it == f.end() ? nullptr : &*it;
}

TEST(DiagRules, RegistryHasEveryRuleOnceWithTrigger) {
  std::set<std::string> ids;
  for (const Rule* r : AllRules()) {
    EXPECT_TRUE(ids.insert(r->id).second) << r->id;
    EXPECT_GT(std::string(r->trigger).size(), 10u) << r->id;
  }
  for (const char* id :
       {"debug-build", "throttling", "pipeline-bottleneck", "data-movement-share",
        "memory-bound-hot", "compute-bound-hot", "many-small-ops", "e2e-overhead-gap",
        "high-variance", "cpu-governor", "counters-unavailable"})
    EXPECT_TRUE(ids.count(id)) << id;
}

TEST(DiagRules, CleanProfileTriggersNothing) {
  auto c = Ceilings();
  auto f = RunRules(Clean(), &c);
  EXPECT_TRUE(f.empty()) << FormatFindings(f, false);
}

TEST(DiagRules, DataMovementShare) {
  auto p = Clean();
  p.ops.push_back(MakeOp("Transpose_7", "Transpose", 4.0, 0, 32e6));
  p.ops.push_back(MakeOp("Reshape_8", "Reshape", 1.0, 0, 8e6));
  p.e2e.runs_ms = Steady(30.0);
  profile::FinalizeStats(p);
  auto f = RunRules(p, nullptr);
  const auto* x = FindRule(f, "data-movement-share");
  ASSERT_NE(x, nullptr) << FormatFindings(f, false);
  EXPECT_EQ(x->ops, (std::vector<std::string>{"Transpose_7", "Reshape_8"}));
  EXPECT_NEAR(x->numbers.at("share"), 5.0 / 30, 1e-9);
  EXPECT_EQ(x->severity, profile::Severity::kWarning);
  EXPECT_NE(x->suggestion.find("strided copy"), std::string::npos);
}

TEST(DiagRules, MemoryBoundHot) {
  auto p = Clean();
  // 0.1 FLOP/B, 40 MB in 5 ms = 8 GB/s: memory-bound, 1/6 share.
  p.ops.push_back(MakeOp("attention_softmax", "Softmax", 5.0, 4e6, 40e6));
  p.e2e.runs_ms = Steady(30.0);
  profile::FinalizeStats(p);
  auto c = Ceilings();
  auto f = RunRules(p, &c);
  const auto* x = FindRule(f, "memory-bound-hot");
  ASSERT_NE(x, nullptr) << FormatFindings(f, false);
  EXPECT_EQ(x->ops, std::vector<std::string>{"attention_softmax"});
  EXPECT_NEAR(x->numbers.at("top_pct_of_roof"), 80, 1e-6);
  EXPECT_NE(x->suggestion.find("tile"), std::string::npos);
  // Without ceilings the roofline rules stay silent.
  EXPECT_EQ(FindRule(RunRules(p, nullptr), "memory-bound-hot"), nullptr);
}

TEST(DiagRules, ComputeBoundHotWithPoorKernel) {
  auto p = Clean();
  // 100 FLOP/B, 1 GFLOP in 50 ms = 20 GFLOP/s: 20% of peak: compute-bound, poor kernel.
  p.ops.push_back(MakeOp("MatMul_big", "MatMul", 50.0, 1e9, 1e7));
  p.e2e.runs_ms = Steady(75.0);
  profile::FinalizeStats(p);
  auto c = Ceilings();
  auto f = RunRules(p, &c);
  const auto* x = FindRule(f, "compute-bound-hot");
  ASSERT_NE(x, nullptr) << FormatFindings(f, false);
  EXPECT_EQ(x->ops, std::vector<std::string>{"MatMul_big"});
  EXPECT_NE(x->suggestion.find("better kernel"), std::string::npos);
  EXPECT_NE(x->suggestion.find("quantize"), std::string::npos);
}

TEST(DiagRules, ManySmallOps) {
  std::vector<profile::OpRecord> ops;
  for (int i = 0; i < 40; ++i)
    ops.push_back(MakeOp("add" + std::to_string(i), "Add", 0.02, 1e3, 1e4));
  ops.push_back(MakeOp("conv", "Conv", 1.0, 6e7, 1e5));
  auto p = MakeProfile(ops, Steady(1.8));
  auto f = RunRules(p, nullptr);
  const auto* x = FindRule(f, "many-small-ops");
  ASSERT_NE(x, nullptr) << FormatFindings(f, false);
  EXPECT_EQ(x->numbers.at("small_ops"), 40);
  EXPECT_EQ(x->ops.size(), 8u);
}

TEST(DiagRules, E2EGap) {
  auto p = Clean();
  p.e2e.runs_ms = Steady(50.0);  // ops sum to 25 ms
  profile::FinalizeStats(p);
  auto f = RunRules(p, nullptr);
  const auto* x = FindRule(f, "e2e-overhead-gap");
  ASSERT_NE(x, nullptr) << FormatFindings(f, false);
  EXPECT_NEAR(x->numbers.at("gap_fraction"), 0.5, 0.01);
  EXPECT_EQ(x->severity, profile::Severity::kCritical);
}

TEST(DiagRules, HighVarianceSaysWhy) {
  auto p = Clean();
  p.meta.warmup = 0;
  p.e2e.runs_ms = {25, 32, 22, 38, 25, 30, 24, 35};
  profile::FinalizeStats(p);
  auto f = RunRules(p, nullptr);
  const auto* x = FindRule(f, "high-variance");
  ASSERT_NE(x, nullptr) << FormatFindings(f, false);
  EXPECT_GT(x->numbers.at("cv"), 0.15);
  EXPECT_EQ(x->severity, profile::Severity::kCritical);
  EXPECT_NE(x->suggestion.find("no warm-up"), std::string::npos);
}

TEST(DiagRules, OutlierRunIsReported) {
  auto p = Clean();
  p.e2e.runs_ms = Steady(25.0, 12);
  p.e2e.runs_ms[5] = 75;
  profile::FinalizeStats(p);
  const auto* x = FindRule(RunRules(p, nullptr), "high-variance");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->numbers.at("outliers"), 1);
  EXPECT_NE(x->evidence.find("outlier run(s) 5"), std::string::npos) << x->evidence;
}

TEST(DiagRules, ThrottlingTraceIsReported) {
  auto p = Clean();
  for (int r = -2; r < 8; ++r)
    p.clocks.push_back({r, r < 4 ? 2400.0 : 1800.0, 50.0 + 3 * std::max(r, 0)});
  auto f = RunRules(p, nullptr);
  const auto* x = FindRule(f, "throttling");
  ASSERT_NE(x, nullptr) << FormatFindings(f, false);
  EXPECT_EQ(x->severity, profile::Severity::kCritical);
  EXPECT_NEAR(x->numbers.at("freq_drop_pct"), 25, 1e-9);
  EXPECT_NEAR(x->numbers.at("temp_rise_c"), 21, 1e-9);
  EXPECT_NE(x->evidence.find("affected runs: 4, 5, 6, 7"), std::string::npos) << x->evidence;
  EXPECT_EQ(f.front().severity, profile::Severity::kCritical);
}

TEST(DiagRules, DebugBuilds) {
  auto p = Clean();
  p.meta.build_type = "Debug";
  BuildVerdictToMeta(ClassifyProducers({"GNU C++17 12.2.0 -mtune=generic -march=x86-64 -g -O0"}),
                     "/usr/bin/app", &p.meta);
  auto f = RunRules(p, nullptr);
  int n = 0;
  for (const auto& x : f)
    if (x.rule == "debug-build") {
      ++n;
      EXPECT_EQ(x.severity, profile::Severity::kCritical);
    }
  EXPECT_EQ(n, 2) << FormatFindings(f, false);
}

TEST(DiagRules, GovernorAndCounters) {
  auto p = Clean();
  p.meta.governor = "powersave";
  p.meta.degradations = {"cycles unavailable (no hardware PMU): using cpu-clock",
                         "counters multiplexed (62% of the time counted)"};
  auto f = RunRules(p, nullptr);
  EXPECT_NE(FindRule(f, "cpu-governor"), nullptr);
  int counters = 0;
  for (const auto& x : f) counters += x.rule == "counters-unavailable";
  EXPECT_EQ(counters, 2) << FormatFindings(f, false);
}

TEST(DiagRules, PipelineBottleneck) {
  profile::Profile p;
  p.meta.kind = "run";
  p.meta.runs = 1;
  auto add = [&](const char* name, int64_t s, int64_t e) {
    profile::Range r;
    r.name = name;
    r.domain = "opscope";
    r.tid = 7;
    r.start_ns = s;
    r.end_ns = e;
    p.ranges.push_back(r);
  };
  add("pre-processing", 0, 238'000'000);
  add("network", 238'000'000, 298'000'000);
  add("post-processing", 298'000'000, 310'000'000);
  auto f = RunRules(p, nullptr);
  const auto* x = FindRule(f, "pipeline-bottleneck");
  ASSERT_NE(x, nullptr) << FormatFindings(f, false);
  EXPECT_EQ(x->title, "'pre-processing', not the network, is the bottleneck");
  EXPECT_NEAR(x->numbers.at("share"), 238.0 / 310, 1e-9);
}

TEST(DiagRules, GoldenFindings) {
  // Several rules at once: the text form and the order by severity are the contract.
  auto p = Clean();
  p.meta.build_type = "Debug";
  p.ops.push_back(MakeOp("Transpose_7", "Transpose", 4.0, 0, 32e6));
  p.ops.push_back(MakeOp("attention_softmax", "Softmax", 5.0, 4e6, 40e6));
  p.e2e.runs_ms = Steady(50.0);
  for (int r = 0; r < 8; ++r) p.clocks.push_back({r, 2400.0 - 100 * r, 0});
  profile::FinalizeStats(p);
  auto c = Ceilings();
  testing::ExpectGolden("findings_mixed.ceil100-10.txt", FormatFindings(RunRules(p, &c), false));
}

}  // namespace
}  // namespace opscope::analysis

namespace opscope::analysis {
namespace {

TEST(DiagRules, DiagnoseCopiesCeilingsAndNotesMismatch) {
  auto p = Clean();
  p.meta.cpu_model = "Cortex-A78AE";
  MachineCeilings c = Ceilings();
  c.method = "measured";
  c.cpu_model = "AMD EPYC";
  p.e2e.runs_ms = Steady(50.0);
  profile::FinalizeStats(p);
  Diagnose(&p, &c);
  ASSERT_TRUE(p.meta.machine.has_value());
  EXPECT_EQ(p.meta.machine->triad_gbps, 10);
  ASSERT_EQ(p.meta.degradations.size(), 1u);
  EXPECT_NE(p.meta.degradations[0].find("measured on 'AMD EPYC'"), std::string::npos);
  EXPECT_FALSE(p.findings.empty());
  EXPECT_TRUE(profile::Validate(p).ok());
}

}  // namespace
}  // namespace opscope::analysis

namespace opscope::analysis {
namespace {

TEST(DiagRules, UnannotatedTimeInRun) {
  profile::Profile p;
  p.meta.kind = "run";
  p.meta.runs = 2;
  for (int run = 0; run < 2; ++run) {
    profile::Range r;
    r.name = "network";
    r.tid = 1;
    r.start_ns = run * 1'000'000'000LL;
    r.end_ns = r.start_ns + 40'000'000;
    p.ranges.push_back(r);
  }
  p.e2e.runs_ms = {100, 100};
  profile::FinalizeStats(p);
  auto f = RunRules(p, nullptr);
  const profile::Finding* x = nullptr;
  for (const auto& y : f)
    if (y.rule == "e2e-overhead-gap") x = &y;
  ASSERT_NE(x, nullptr) << FormatFindings(f, false);
  EXPECT_NEAR(x->numbers.at("ranges_ms"), 40, 1e-9);
  EXPECT_NEAR(x->numbers.at("gap_fraction"), 0.6, 1e-9);
}

}  // namespace
}  // namespace opscope::analysis

namespace opscope::analysis {
namespace {

// Dynamic quantization: a DynamicQuantizeLinear per ConvInteger, run as steps of their own.
TEST(DiagRules, QuantConversionNamesUnfusedQdqNodesWithTheirShare) {
  std::vector<profile::OpRecord> ops;
  for (int i = 0; i < 4; ++i) {
    ops.push_back(
        testing::MakeOp("dq" + std::to_string(i), "DynamicQuantizeLinear", 1.0, 4e5, 5e5));
    ops.push_back(testing::MakeOp("ci" + std::to_string(i), "ConvInteger", 4.0, 0, 2e5));
    ops.back().int_ops = 4e8;
  }
  profile::OpRecord fused = testing::MakeOp("q_fused", "QuantizeLinear", 0.1, 1e3, 1e3);
  fused.status = profile::OpStatus::kFused;
  ops.push_back(fused);
  auto p = testing::MakeProfile(ops, Steady(20.1));
  auto c = Ceilings();
  auto f = RunRules(p, &c);
  const profile::Finding* q = FindRule(f, "quant-conversion");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->severity,
            profile::Severity::kWarning);  // 4 of 20.1 ms = 19.9%, just under the critical 20%
  EXPECT_NE(q->evidence.find("DynamicQuantizeLinear×4"), std::string::npos) << q->evidence;
  EXPECT_NE(q->evidence.find("1 other Q/DQ node(s) were fused"), std::string::npos) << q->evidence;
  EXPECT_EQ(q->ops.size(), 4u);
  EXPECT_NEAR(q->numbers.at("share"), 4.0 / 20.1, 1e-3);
  // All conversions fused (QDQ model): no finding.
  for (auto& op : p.ops)
    if (op.op_type == "DynamicQuantizeLinear") op.status = profile::OpStatus::kFused;
  EXPECT_EQ(FindRule(RunRules(p, &c), "quant-conversion"), nullptr);
}

}  // namespace
}  // namespace opscope::analysis
