// The memory section: Derive's arithmetic, its JSON round trip and Validate, its renderers, and
// on real models that its per-step live bytes are the planner's buffers and the arena holds them.
#include "sections/memory/memory_section.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "analysis/diff.h"
#include "base/testing/golden.h"
#include "collect/model_profiler.h"
#include "opscope/engine.h"
#include "profile/profile_io.h"
#include "report/format.h"
#include "report/trace_check.h"
#include "sections/memory/memory_diff.h"
#include "sections/memory/memory_engine.h"

namespace opscope::memory {
namespace {

LiveTensor T(const std::string& name, double bytes, int first, int last,
             const std::string& place = "arena") {
  LiveTensor t;
  t.name = name;
  t.bytes = bytes;
  t.first_step = first;
  t.last_step = last;
  t.place = place;
  t.dtype = "float32";
  t.shape = {static_cast<int64_t>(bytes / 4)};
  t.producer = place == "input" ? "" : "p_" + name;
  t.last_consumer = "c_" + name;
  return t;
}

// in(0..1) -> a(0..2) -> b(1..2) -> out(2..3)
MemorySection Chain() {
  MemorySection m;
  for (const char* n : {"s0", "s1", "s2", "s3"}) m.steps.push_back({n});
  m.tensors = {T("in", 100, 0, 1, "input"), T("a", 1000, 0, 2), T("b", 400, 1, 2),
               T("out", 10, 2, 3, "output")};
  m.arena_bytes = 1408;
  m.naive_bytes = 1400;
  Derive(&m);
  return m;
}

TEST(MemorySectionTest, DeriveCountsLiveAllocatedAndReleasedPerStep) {
  MemorySection m = Chain();
  EXPECT_EQ(m.steps[0].live_bytes, 1100);
  EXPECT_EQ(m.steps[1].live_bytes, 1500);
  EXPECT_EQ(m.steps[2].live_bytes, 1410);
  EXPECT_EQ(m.steps[3].live_bytes, 10);
  EXPECT_EQ(m.steps[1].arena_live_bytes, 1400);
  EXPECT_EQ(m.steps[3].arena_live_bytes, 0);
  EXPECT_EQ(m.peak_step, 1);
  EXPECT_EQ(m.peak_live_bytes, 1500);
  EXPECT_EQ(m.steps[0].allocated_bytes, 1000);  // the input is the caller's
  EXPECT_EQ(m.steps[2].allocated_bytes, 10);
  EXPECT_EQ(m.steps[1].released_bytes, 100);
  EXPECT_EQ(m.steps[2].released_bytes, 1400);
  EXPECT_EQ(m.steps[3].released_bytes, 0);  // the output is kept
  std::vector<int> alive = AliveAt(m, 1);
  ASSERT_EQ(alive.size(), 3u);
  EXPECT_EQ(m.tensors[static_cast<size_t>(alive[0])].name, "a");
  EXPECT_EQ(m.tensors[static_cast<size_t>(alive[2])].name, "in");
}

profile::Profile WithOps(MemorySection m) {
  profile::Profile p;
  p.meta.kind = "profile";
  for (const char* n : {"s0", "s1", "s2", "s3"}) {
    profile::OpRecord op;
    op.name = n;
    op.op_type = "Relu";
    op.runs_ms = {1};
    p.ops.push_back(op);
  }
  for (int i = 0; i < 4; ++i) m.steps[static_cast<size_t>(i)].op = i;
  profile::FinalizeStats(p);
  p.sections.Get<MemorySection>() = std::move(m);
  return p;
}

TEST(MemorySectionTest, JsonRoundTripsAndCopiesAreDeep) {
  profile::Profile p = WithOps(Chain());
  ASSERT_TRUE(profile::Validate(p).ok());
  const std::string text = profile::ToJsonString(p);
  auto j = nlohmann::json::parse(text);
  ASSERT_TRUE(j.contains("memory"));
  EXPECT_EQ(j["memory"]["peak_step"], 1);
  EXPECT_EQ(j["memory"]["steps"][1]["live_bytes"], 1500);
  EXPECT_EQ(j["memory"]["tensors"][1]["place"], "arena");
  auto back = profile::FromJsonString(text, "t.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  const MemorySection* m = back->sections.Find<MemorySection>();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->tensors.size(), 4u);
  EXPECT_EQ(m->steps[2].released_bytes, 1400);
  EXPECT_EQ(profile::ToJsonString(*back), text);

  profile::Profile copy = p;
  copy.sections.Find<MemorySection>()->peak_step = 3;
  EXPECT_EQ(p.sections.Find<MemorySection>()->peak_step, 1);
}

TEST(MemorySectionTest, ValidateRefusesWhatRenderersCannotTrust) {
  auto refused = [](auto mutate) {
    profile::Profile p = WithOps(Chain());
    mutate(*p.sections.Find<MemorySection>());
    Status st = profile::Validate(p);
    return st.ok() ? std::string() : st.message();
  };
  EXPECT_NE(refused([](MemorySection& m) { m.tensors[1].last_step = 9; }).find("outside the 4"),
            std::string::npos);
  EXPECT_NE(refused([](MemorySection& m) { m.steps[0].op = 17; }).find("not in the op list"),
            std::string::npos);
  EXPECT_NE(refused([](MemorySection& m) { m.peak_step = 4; }).find("not a step"),
            std::string::npos);
  EXPECT_NE(refused([](MemorySection& m) { m.rss_bytes = -1; }).find("memory section"),
            std::string::npos);
  EXPECT_EQ(refused([](MemorySection&) {}), "");
  // A wrong shape in the file is a load error, not a crash.
  profile::Profile p = WithOps(Chain());
  auto j = nlohmann::json::parse(profile::ToJsonString(p));
  j["memory"]["steps"] = "many";
  EXPECT_FALSE(profile::FromJsonString(j.dump(), "bad.json").ok());
  j["memory"] = 7;
  EXPECT_FALSE(profile::FromJsonString(j.dump(), "bad.json").ok());
}

TEST(MemorySectionTest, EveryFormatShowsIt) {
  profile::Profile p = WithOps(Chain());
  p.sections.Find<MemorySection>()->tensors[1].name = "a<script>=1";
  report::ReportOptions o;
  std::string table;
  ASSERT_TRUE(report::RenderTables(p, o, &table).ok());
  EXPECT_NE(table.find("tensors alive at the peak"), std::string::npos) << table;
  EXPECT_NE(table.find("live during step 's1' (#2 of 4)"), std::string::npos) << table;
  o.primary = "memory";
  ASSERT_TRUE(report::RenderTables(p, o, &table).ok());
  EXPECT_EQ(table.rfind("memory (4 steps", 0), 0u) << table;

  std::string csv;
  ASSERT_TRUE(report::FindFormat("csv")->write(p, o, &csv).ok());
  EXPECT_NE(csv.find("step,name,op_type,live_bytes"), std::string::npos) << csv;
  EXPECT_NE(csv.find("2,s1,Relu,1500,1400,400,100,0,0,0,1"), std::string::npos) << csv;

  std::string html;
  ASSERT_TRUE(report::FindFormat("html")->write(p, o, &html).ok());
  EXPECT_NE(html.find("<section id=\"memory\">"), std::string::npos);
  EXPECT_NE(html.find("href=\"#memory\""), std::string::npos);
  EXPECT_NE(html.find("id=\"memory-chart\""), std::string::npos);
  EXPECT_EQ(html.find("a<script>"), std::string::npos);
  EXPECT_NE(html.find("a&lt;script&gt;=1"), std::string::npos);

  p.op_events = {{0, 0, 7, 1000, 10}, {1, 0, 7, 2000, 10}};
  std::string trace;
  ASSERT_TRUE(report::FindFormat("chrome")->write(p, o, &trace).ok());
  auto check = report::CheckChromeTrace(trace);
  EXPECT_TRUE(check.ok()) << check.status().message();
  auto j = nlohmann::json::parse(trace);
  int counters = 0;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "C" && e["name"] == "live activations (bytes)") {
      ++counters;
      if (e["ts"] == 1.0) {
        EXPECT_EQ(e["args"]["live"], 1500);
      }
    }
  EXPECT_EQ(counters, 2);
}

// Goldens of the terminal table (alone and as the primary section, with a finding), the CSV and
// the diff block (src/sections/memory/testdata; scripts/update-goldens.sh rewrites them).
TEST(MemorySectionTest, Goldens) {
  const std::string dir = std::string(OPSCOPE_SOURCE_DIR) + "/src/sections/memory/testdata/";
  profile::Profile p = WithOps(Chain());
  p.sections.Find<MemorySection>()->rss_bytes = 50e6;
  p.sections.Find<MemorySection>()->peak_rss_bytes = 60e6;
  profile::Finding f;
  f.rule = "memory-peak-tensors";
  f.severity = profile::Severity::kInfo;
  f.title = "a finding";
  p.findings.push_back(f);
  report::ReportOptions o;
  o.only = {"memory"};
  std::string out;
  ASSERT_TRUE(report::RenderTables(p, o, &out).ok());
  opscope::testing::ExpectMatchesGolden(dir + "chain.memory.txt", out);
  ASSERT_TRUE(report::FindFormat("csv")->write(p, o, &out).ok());
  opscope::testing::ExpectMatchesGolden(dir + "chain.memory.csv", out);
  MemorySection m = Chain();
  m.tensors[2].bytes = 800;
  Derive(&m);
  opscope::testing::ExpectMatchesGolden(dir + "chain.diff.txt",
                                        FormatMemoryDiff(DiffMemory(p, WithOps(m)), 10));
}

// diff: the peak and totals before/after, steps matched by name, and the tensors at the peak
// (a tensor that grew, one that appeared, one that left the peak).
TEST(MemorySectionTest, DiffNamesWhatChangedAtThePeak) {
  profile::Profile a = WithOps(Chain());
  MemorySection m = Chain();
  m.tensors[2].bytes = 800;  // b grows: the peak (step s1) grows by 400
  m.tensors[2].shape = {200};
  m.tensors.push_back(T("c", 50, 1, 1));  // appears at the peak
  m.steps[3].name = "s3b";                // a step renamed: one gone, one new
  Derive(&m);
  profile::Profile b = WithOps(m);
  b.sections.Find<MemorySection>()->steps[3].name = "s3b";
  const MemoryDiff d = DiffMemory(a, b);
  ASSERT_TRUE(d.available);
  EXPECT_EQ(d.peak.before, 1500);
  EXPECT_EQ(d.peak.after, 1950);
  EXPECT_EQ(d.peak.name, "peak step 's1' → 's1'");
  ASSERT_GE(d.at_peak.size(), 4u);
  EXPECT_EQ(d.at_peak[0].name, "b");
  EXPECT_EQ(d.at_peak[0].delta, 400);
  EXPECT_EQ(d.at_peak[0].shape_before, "100");
  EXPECT_EQ(d.at_peak[0].shape_after, "200");
  EXPECT_EQ(d.at_peak[1].name, "c");
  EXPECT_EQ(d.at_peak[1].change, "appeared");
  bool gone = false, added = false;
  for (const auto& s : d.steps) {
    gone = gone || (s.name == "s3" && s.change == "disappeared");
    added = added || (s.name == "s3b" && s.change == "appeared");
  }
  EXPECT_TRUE(gone && added);
  const std::string text = FormatMemoryDiff(d, 10);
  EXPECT_NE(text.find("activation peak"), std::string::npos) << text;
  EXPECT_NE(text.find("shape 100 → 200"), std::string::npos) << text;
  const auto j = nlohmann::json::parse(analysis::DiffToJson(analysis::DiffProfiles(a, b)));
  EXPECT_EQ(j["memory"]["peak"]["delta_bytes"], 450);
  // Without the section on one side, diff says nothing about memory.
  b.sections.Erase(MemorySection::kKey);
  EXPECT_FALSE(DiffMemory(a, b).available);
  EXPECT_EQ(FormatMemoryDiff(DiffMemory(a, b), 10), "");
}

// The models at hand: the demo, the test models, and the third-party corpus once fetched.
std::vector<std::string> Models() {
  namespace fs = std::filesystem;
  std::vector<std::string> out = {std::string(OPSCOPE_SOURCE_DIR) + "/models/bev_demo.onnx"};
  for (const char* dir : {"/tests/models", "/models/corpus/models"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(std::string(OPSCOPE_SOURCE_DIR) + dir, ec))
      if (e.path().extension() == ".onnx") out.push_back(e.path().string());
  }
  return out;
}

// Per step, the arena-live bytes are exactly the planned buffers alive then, and those buffers
// sit in the arena without overlapping one another: the section's numbers are the arena's real
// allocations, not an estimate.
TEST(MemorySectionTest, LiveBytesAreThePlannersBuffersOnEveryModel) {
  int checked = 0;
  for (const std::string& path : Models()) {
    SCOPED_TRACE(path);
    auto session = engine::Session::Load(path, engine::SessionOptions{});
    if (!session.ok()) continue;  // a corpus model the engine refuses is the corpus test's
    if (!(*session)->FillRandomInputs(1).ok() || !(*session)->Run().ok()) continue;
    ASSERT_TRUE((*session)->Run().ok());
    const engine::MemoryMap map = (*session)->Memory();
    const MemorySection m = FromSession(**session);
    ++checked;
    double naive = 0;
    std::vector<const engine::TensorLifetime*> arena;
    for (const auto& t : map.tensors)
      if (t.place == engine::TensorLifetime::Place::kArena) {
        arena.push_back(&t);
        naive += static_cast<double>((t.bytes + 63) / 64 * 64);  // the planner's alignment
        ASSERT_GE(t.arena_offset, 0);
        EXPECT_LE(static_cast<size_t>(t.arena_offset) + t.bytes, map.arena_bytes) << t.name;
      }
    EXPECT_EQ(naive, static_cast<double>(map.naive_bytes));
    EXPECT_EQ(m.arena_bytes, static_cast<double>(map.arena_bytes));
    // Engine step -> section step.
    std::vector<int> engine_steps;
    for (size_t s = 0; s < map.step_active.size(); ++s)
      if (map.step_active[s]) engine_steps.push_back(static_cast<int>(s));
    ASSERT_EQ(m.steps.size(), engine_steps.size());
    double peak_arena = 0;
    for (size_t k = 0; k < engine_steps.size(); ++k) {
      const int s = engine_steps[k];
      double sum = 0;
      std::vector<const engine::TensorLifetime*> alive;
      for (const auto* t : arena)
        if (t->first_step <= s && s <= t->last_step) {
          sum += static_cast<double>(t->bytes);
          alive.push_back(t);
        }
      EXPECT_EQ(m.steps[k].arena_live_bytes, sum) << "step " << m.steps[k].name;
      peak_arena = std::max(peak_arena, sum);
      for (size_t i = 0; i < alive.size(); ++i)
        for (size_t j = i + 1; j < alive.size(); ++j) {
          const auto *a = alive[i], *b = alive[j];
          const bool apart = a->arena_offset + static_cast<int64_t>(a->bytes) <= b->arena_offset ||
                             b->arena_offset + static_cast<int64_t>(b->bytes) <= a->arena_offset;
          EXPECT_TRUE(apart) << a->name << " and " << b->name << " overlap at step " << s;
        }
      EXPECT_GE(m.steps[k].live_bytes, m.steps[k].arena_live_bytes);
    }
    EXPECT_LE(peak_arena, m.arena_bytes);
    EXPECT_GE(m.peak_live_bytes, peak_arena);
  }
  EXPECT_GE(checked, 3);
}

// The demo model: a profile carries the section, its peak RSS is the process's (VmHWM, the
// number /usr/bin/time -v reports as maximum resident set size, from getrusage), and the
// convolutions' packed weights show up.
TEST(MemorySectionTest, ProfileOfTheDemoModelCarriesIt) {
  collect::ModelProfileOptions opt;
  opt.model_path = std::string(OPSCOPE_SOURCE_DIR) + "/models/bev_demo.onnx";
  opt.warmup = 1;
  opt.runs = 2;
  opt.measure_overhead = false;
  auto p = collect::ProfileModel(opt);
  ASSERT_TRUE(p.ok()) << p.status().message();
  const MemorySection* m = p->sections.Find<MemorySection>();
  ASSERT_NE(m, nullptr);
  EXPECT_GT(m->peak_live_bytes, 0);
  EXPECT_GT(m->weight_bytes, 0);
#if defined(__x86_64__)
  // oneDNN's x86 kernels repack the convolution weights into blocked layouts; its arm64 build in
  // Debian 12 (no SVE, no Arm Compute Library) runs reference kernels on the plain weights.
  EXPECT_GT(m->packed_weight_bytes, 0);
#endif
  struct rusage ru {};
  ASSERT_EQ(getrusage(RUSAGE_SELF, &ru), 0);
  const double maxrss = static_cast<double>(ru.ru_maxrss) * 1024;
  EXPECT_NEAR(m->peak_rss_bytes, maxrss, 0.05 * maxrss);
  EXPECT_GT(m->rss_bytes, 0);
  EXPECT_TRUE(profile::Validate(*p).ok());
}

}  // namespace
}  // namespace opscope::memory
