// Diff of two profiles of a model before and after removing a deliberate bottleneck (a layout
// Transpose): testdata/make_diff_profiles.py builds them.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "analysis/diag_test_util.h"
#include "analysis/diff.h"
#include "profile/profile_io.h"

namespace opscope::analysis {
namespace {

profile::Profile Load(const char* name) {
  auto p = profile::LoadProfile(std::string(OPSCOPE_SOURCE_DIR) + "/src/analysis/testdata/" + name);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? *p : profile::Profile{};
}

TEST(DiagDiff, BottleneckRemoved) {
  ProfileDiff d = DiffProfiles(Load("model_before.json"), Load("model_after.json"));
  ASSERT_TRUE(d.e2e.available);
  EXPECT_TRUE(d.e2e.has_ci);
  EXPECT_TRUE(d.e2e.significant);
  EXPECT_NEAR(d.e2e.speedup, 2.0, 0.01);
  EXPECT_NEAR(d.e2e.delta_pct, -50.0, 0.5);
  EXPECT_LT(d.e2e.ci_low_pct, d.e2e.delta_pct);
  EXPECT_GT(d.e2e.ci_high_pct, d.e2e.delta_pct);
  EXPECT_LT(d.e2e.ci_high_pct, -45);
  EXPECT_NE(d.headline.find("2.00× faster"), std::string::npos) << d.headline;
  // Largest change first: the removed Transpose.
  ASSERT_FALSE(d.nodes.empty());
  EXPECT_EQ(d.nodes[0].name, "to_nhwc");
  EXPECT_EQ(d.nodes[0].change, "disappeared");
  EXPECT_NEAR(d.nodes[0].delta_ms, -18.0, 0.1);
  for (size_t i = 1; i < d.nodes.size(); ++i)
    EXPECT_GE(std::fabs(d.nodes[i - 1].delta_ms), std::fabs(d.nodes[i].delta_ms));
  bool appeared = false, reshaped = false;
  for (const auto& n : d.nodes) {
    if (n.name == "cast_out") appeared = n.change == "appeared";
    if (n.name == "reshape1")
      reshaped = n.shape_changed && n.shape_before == "1x56x56x64" && n.shape_after == "1x64x3136";
    if (n.name == "conv1") {
      EXPECT_FALSE(n.shape_changed);
    }
  }
  EXPECT_TRUE(appeared);
  EXPECT_TRUE(reshaped);
  EXPECT_EQ(d.op_types[0].op_type, "Transpose");
  EXPECT_EQ(d.op_types[0].count_after, 0);
}

TEST(DiagDiff, SameProfileIsNoChange) {
  ProfileDiff d = DiffProfiles(Load("model_before.json"), Load("model_before.json"));
  EXPECT_FALSE(d.e2e.significant);
  EXPECT_NEAR(d.e2e.delta_pct, 0, 1e-9);
  EXPECT_NE(d.headline.find("no significant change"), std::string::npos) << d.headline;
}

TEST(DiagDiff, DeterministicCi) {
  std::vector<double> a = {10, 11, 9, 10.5, 9.5}, b = {5, 5.5, 4.5, 5.2, 4.8};
  double l1, h1, l2, h2;
  BootstrapChangeCi(a, b, &l1, &h1);
  BootstrapChangeCi(a, b, &l2, &h2);
  EXPECT_EQ(l1, l2);
  EXPECT_EQ(h1, h2);
  EXPECT_LT(l1, -45);
  EXPECT_GT(h1, -55);
}

TEST(DiagDiff, NoPerRunTimesFallsBackToSumOfOps) {
  auto a = Load("model_before.json"), b = Load("model_after.json");
  a.e2e.runs_ms.clear();
  b.e2e.runs_ms.clear();
  ProfileDiff d = DiffProfiles(a, b);
  EXPECT_EQ(d.e2e.basis, "sum of ops");
  EXPECT_FALSE(d.e2e.has_ci);
  EXPECT_TRUE(d.headline.starts_with("sum of ops")) << d.headline;
}

TEST(DiagDiff, OpTypesOnOneSideAreNewOrGone) {
  ProfileDiff d = DiffProfiles(Load("model_before.json"), Load("model_after.json"));
  std::map<std::string, std::string> change;
  for (const auto& t : d.op_types) change[t.op_type] = t.change;
  EXPECT_EQ(change["Transpose"], "gone");
  EXPECT_EQ(change["Cast"], "new");
  EXPECT_EQ(change["Conv"], "changed");
  std::string table = FormatDiff(d, false);
  std::string transpose = table.substr(table.find("\nTranspose"), 90);
  EXPECT_NE(transpose.find("gone"), std::string::npos) << transpose;
  EXPECT_EQ(transpose.find("new"), std::string::npos) << transpose;
}

TEST(DiagDiff, StatesRunCountsAndCallsAFewRunsWeak) {
  auto a = Load("model_before.json"), b = Load("model_after.json");
  a.e2e.runs_ms.resize(3);
  b.e2e.runs_ms.resize(3);
  ProfileDiff d = DiffProfiles(a, b);
  EXPECT_EQ(d.e2e.runs_before, 3u);
  EXPECT_TRUE(d.e2e.weak_ci);
  EXPECT_NE(d.headline.find("3 vs 3 runs, weak CI"), std::string::npos) << d.headline;
  bool noted = false;
  for (const auto& n : d.notes)
    noted = noted || n.find("from 3 runs before and 3 after") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_TRUE(nlohmann::json::parse(DiffToJson(d))["e2e"]["weak_ci"].get<bool>());

  // Enough runs: the counts are stated, the interval is not called weak.
  for (auto* p : {&a, &b}) {
    auto runs = p->e2e.runs_ms;
    p->e2e.runs_ms.clear();
    for (int i = 0; i < 4; ++i)
      p->e2e.runs_ms.insert(p->e2e.runs_ms.end(), runs.begin(), runs.end());
  }
  d = DiffProfiles(a, b);
  EXPECT_FALSE(d.e2e.weak_ci);
  EXPECT_NE(d.headline.find("12 vs 12 runs)"), std::string::npos) << d.headline;
}

TEST(DiagDiff, DifferentKindsAndModelsAreSaid) {
  auto a = Load("model_before.json"), b = Load("model_after.json");
  EXPECT_EQ(KindMismatch(a, b), "");
  b.meta.kind = "run";
  std::string why = KindMismatch(a, b);
  EXPECT_NE(why.find("different things"), std::string::npos) << why;
  ProfileDiff d = DiffProfiles(a, b);
  ASSERT_FALSE(d.notes.empty());
  EXPECT_NE(d.notes[0].find("different things"), std::string::npos) << d.notes[0];

  b = Load("model_after.json");
  for (auto& op : b.ops) op.name = "other_" + op.name;
  d = DiffProfiles(a, b);
  bool noted = false;
  for (const auto& n : d.notes)
    noted = noted || n.find("no node name in common") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(DiagDiff, AbsurdValuesKeepTheTableNarrow) {
  auto a = Load("model_before.json"), b = Load("model_after.json");
  for (double& v : b.e2e.runs_ms) v *= 1e298;
  b.ops[0].stats.trimmed_mean = 1e300;
  ProfileDiff d = DiffProfiles(a, b);
  std::string table = FormatDiff(d, false);
  size_t start = 0;
  while (start < table.size()) {
    size_t end = table.find('\n', start);
    if (end == std::string::npos) end = table.size();
    EXPECT_LT(end - start, 220u) << table.substr(start, end - start);
    start = end + 1;
  }
  EXPECT_NE(table.find("e+"), std::string::npos) << table;
}

TEST(DiagDiff, GoldenTableAndJson) {
  ProfileDiff d = DiffProfiles(Load("model_before.json"), Load("model_after.json"));
  testing::ExpectGolden("model_before-after.diff.txt", FormatDiff(d, false));
  std::string js = DiffToJson(d);
  auto j = nlohmann::json::parse(js);
  EXPECT_EQ(j["schema"], "opscope.diff/1");
  EXPECT_EQ(j["nodes"].size(), 7u);
  testing::ExpectGolden("model_before-after.diff.json", js);
}

}  // namespace
}  // namespace opscope::analysis

namespace opscope::analysis {
namespace {

profile::OpRecord Layer(const std::string& name, std::vector<std::string> nodes, double ms) {
  profile::OpRecord op;
  op.name = name;
  op.op_type = "CaskConvolution";
  op.source_nodes = std::move(nodes);
  op.runs_ms = {ms};
  return op;
}

// Two TensorRT engines of one model: `A + B + C` fused in one, `A + B` and `C` in the other.
TEST(DiffGroups, LayersOfTheSameNodesCutDifferentlyAreOneGroup) {
  profile::Profile a, b;
  a.meta.kind = b.meta.kind = "import/tensorrt";
  a.ops = {Layer("A + B + C", {"A", "B", "C"}, 3.0), Layer("D", {"D"}, 1.0),
           Layer("Reformatting CopyNode for Input Tensor 0 to D", {}, 0.25)};
  b.ops = {Layer("A + B", {"A", "B"}, 1.5), Layer("C", {"C"}, 0.5), Layer("D", {"D"}, 1.25)};
  profile::FinalizeStats(a);
  profile::FinalizeStats(b);
  ProfileDiff d = DiffProfiles(a, b);
  ASSERT_EQ(d.groups.size(), 1u);
  const GroupDelta& g = d.groups[0];
  EXPECT_EQ(g.before_layers, (std::vector<std::string>{"A + B + C"}));
  EXPECT_EQ(g.after_layers, (std::vector<std::string>{"A + B", "C"}));
  EXPECT_EQ(g.nodes, (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_DOUBLE_EQ(g.before_ms, 3.0);
  EXPECT_DOUBLE_EQ(g.after_ms, 2.0);
  EXPECT_DOUBLE_EQ(g.delta_pct, -100.0 / 3);
  // The grouped layers are not reported as unrelated additions and removals; the rest are.
  std::map<std::string, std::string> change;
  for (const auto& n : d.nodes) change[n.name] = n.change;
  EXPECT_EQ(change.count("A + B + C"), 0u);
  EXPECT_EQ(change.count("A + B"), 0u);
  EXPECT_EQ(change.count("C"), 0u);
  EXPECT_EQ(change["D"], "changed");
  EXPECT_EQ(change["Reformatting CopyNode for Input Tensor 0 to D"], "disappeared");
  EXPECT_NE(FormatDiff(d, false).find("  before: A + B + C\n  after:  A + B | C\n"),
            std::string::npos)
      << FormatDiff(d, false);
  nlohmann::json j = nlohmann::json::parse(DiffToJson(d));
  ASSERT_EQ(j["groups"].size(), 1u);
  EXPECT_EQ(j["groups"][0]["after_layers"][1], "C");
}

// Joined to the model, layers are the rows that share a fused step.
TEST(DiffGroups, JoinedRowsGroupByTheirStep) {
  profile::Profile a, b;
  auto node = [](const std::string& n, const std::string& step, double ms) {
    profile::OpRecord op;
    op.name = n;
    op.op_type = "Conv";
    op.status = profile::OpStatus::kFused;
    op.step = step;
    op.runs_ms = {ms};
    return op;
  };
  a.ops = {node("A", "A + B + C", 1), node("B", "A + B + C", 1), node("C", "A + B + C", 1)};
  b.ops = {node("A", "A + B", 0.75), node("B", "A + B", 0.75), node("C", "C", 0.5)};
  profile::FinalizeStats(a);
  profile::FinalizeStats(b);
  ProfileDiff d = DiffProfiles(a, b);
  ASSERT_EQ(d.groups.size(), 1u);
  EXPECT_DOUBLE_EQ(d.groups[0].delta_ms, -1.0);
  EXPECT_EQ(d.nodes.size(), 3u);  // the nodes still compare one by one (estimated splits)
  // The same cut on both sides is no group.
  EXPECT_TRUE(DiffProfiles(a, a).groups.empty());
}

}  // namespace
}  // namespace opscope::analysis
