#include <gtest/gtest.h>

#include "analysis/hygiene.h"
#include "analysis/rules.h"
#include "profile/profile_io.h"
#include "report/format.h"

namespace opscope::analysis {
namespace {

std::vector<profile::ClockSample> Trace(std::vector<double> mhz, std::vector<double> temp) {
  std::vector<profile::ClockSample> v;
  for (size_t i = 0; i < mhz.size(); ++i)
    v.push_back({static_cast<int32_t>(i), mhz[i], temp.empty() ? 0 : temp[i]});
  return v;
}

TEST(DiagHygiene, FrequencyDropIsThrottling) {
  auto t = DetectThrottling(Trace({2400, 2400, 2390, 2000, 1900}, {}));
  EXPECT_TRUE(t.throttled);
  EXPECT_TRUE(t.have_freq);
  EXPECT_FALSE(t.have_temp);
  EXPECT_NEAR(t.freq_drop_pct, 500.0 / 2400 * 100, 1e-9);
  EXPECT_EQ(t.affected_runs, (std::vector<int>{3, 4}));
  EXPECT_NE(t.summary.find("2400 MHz (first run) to 1900 MHz"), std::string::npos) << t.summary;
}

TEST(DiagHygiene, TemperatureRiseAloneIsReported) {
  auto t = DetectThrottling(Trace({2400, 2400, 2400, 2400}, {45, 50, 54, 58}));
  EXPECT_TRUE(t.throttled);
  EXPECT_NEAR(t.temp_rise_c, 13, 1e-9);
  EXPECT_EQ(t.affected_runs, (std::vector<int>{3}));
}

TEST(DiagHygiene, SteadyClocksAndWarmupIgnored) {
  auto v = Trace({2400, 2410, 2395, 2400}, {50, 51, 52, 51});
  v.push_back({-1, 1200, 40});  // a cold warm-up run does not count
  auto t = DetectThrottling(v);
  EXPECT_FALSE(t.throttled);
  EXPECT_TRUE(t.affected_runs.empty());
  EXPECT_NE(t.summary.find("steady"), std::string::npos);
}

TEST(DiagHygiene, NothingExposed) {
  EXPECT_FALSE(DetectThrottling(Trace({0, 0, 0}, {})).throttled);
  EXPECT_NE(DetectThrottling(Trace({0, 0, 0}, {})).summary.find("not exposed"), std::string::npos);
  EXPECT_TRUE(DetectThrottling({}).summary.empty());
}

TEST(DiagHygiene, Repeats) {
  std::vector<double> runs = {10, 10.1, 9.9, 10, 10.05, 30, 10, 9.95};
  auto r = AnalyzeRepeats(runs);
  EXPECT_EQ(r.outlier_runs, std::vector<int>{5});
  EXPECT_NEAR(r.stats.median, 10, 0.03);
  EXPECT_NE(r.words.find("outlier run(s) 5"), std::string::npos);
}

// One or two runs have no spread to speak of (one run's CV is 0): no verdict, not "stable".
TEST(DiagHygiene, FewerThanThreeRunsHaveNoNoiseEstimate) {
  for (const std::vector<double>& runs : {std::vector<double>{10}, std::vector<double>{10, 10}}) {
    auto r = AnalyzeRepeats(runs);
    EXPECT_EQ(r.verdict, "no estimate");
    EXPECT_NE(r.words.find("too few for a noise estimate"), std::string::npos) << r.words;
  }
  EXPECT_EQ(AnalyzeRepeats(std::vector<double>{10, 10, 10}).verdict, "stable");
}

TEST(DiagHygiene, Producers) {
  auto d =
      ClassifyProducers({"GNU C++17 12.2.0 -mtune=generic -march=x86-64 -g -O0", "GNU AS 2.40"});
  EXPECT_EQ(d.kind, "debug");
  EXPECT_EQ(d.opt_level, "-O0");
  auto r = ClassifyProducers(
      {"GNU C++17 12.2.0 -mtune=generic -march=x86-64 -g -O2", "GNU C17 12.2.0 -O0 -g -O3"});
  EXPECT_EQ(r.kind, "release");
  auto none = ClassifyProducers({"GNU C++17 12.2.0 -mtune=generic -march=x86-64 -g"});
  EXPECT_EQ(none.kind, "debug");
  EXPECT_EQ(none.opt_level, "none");
  EXPECT_NE(none.evidence.find("no -O flag"), std::string::npos);
  auto clang = ClassifyProducers({"Debian clang version 14.0.6"});  // clang records no flags
  EXPECT_EQ(clang.kind, "unknown");
  EXPECT_NE(clang.evidence.find("-grecord-command-line"), std::string::npos);
  auto clang_rec = ClassifyProducers({"Debian clang version 14.0.6 /usr/bin/clang++ -O0 -g x.cc"});
  EXPECT_EQ(clang_rec.kind, "debug");
  auto unk = ClassifyProducers({});
  EXPECT_EQ(unk.kind, "unknown");
  EXPECT_NE(unk.evidence.find("no DWARF producer"), std::string::npos);
  auto og = ClassifyProducers({"GNU C++17 12.2.0 -Og -g"});
  EXPECT_EQ(og.kind, "debug");
}

TEST(DiagHygiene, OwnBuildType) {
  EXPECT_EQ(ClassifyBuildType("Release").kind, "release");
  EXPECT_EQ(ClassifyBuildType("RelWithDebInfo").kind, "release");
  EXPECT_EQ(ClassifyBuildType("Debug").kind, "debug");
  EXPECT_EQ(ClassifyBuildType("").kind, "debug");
}

}  // namespace
}  // namespace opscope::analysis

#include "profile/profile_io.h"

namespace opscope::analysis {
namespace {

TEST(DiagHygiene, ClockSamplesRoundTripAndValidate) {
  profile::Profile p;
  p.meta.kind = "run";
  p.clocks = {{-1, 1200, 40}, {0, 2400.5, 55.25}, {1, 1800, 71}};
  auto back = profile::FromJsonString(profile::ToJsonString(p), "mem");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->clocks.size(), 3u);
  EXPECT_EQ(back->clocks[0].run, -1);
  EXPECT_EQ(back->clocks[1].cpu_mhz, 2400.5);
  EXPECT_EQ(back->clocks[2].temp_c, 71);
  p.clocks[1].cpu_mhz = -5;
  EXPECT_FALSE(profile::Validate(p).ok());
  // Profiles without samples do not write the key at all.
  EXPECT_EQ(profile::ToJsonString(profile::Profile{}).find("clocks"), std::string::npos);
}

}  // namespace
}  // namespace opscope::analysis

namespace opscope::analysis {
namespace {

// Diagnose stores the whole-profile verdicts (noise, throttling, build, whether ceilings were
// known); they survive the JSON, and the renderers read the stored ones rather than deriving them
// again (a changed stored sentence is what the page and the run table print).
TEST(DiagHygiene, VerdictsAreStoredOnceAndRead) {
  profile::Profile p;
  p.meta.kind = "run";
  p.meta.build_type = "Release";
  p.e2e.runs_ms = {10, 10.1, 9.9, 10, 30};
  p.clocks = {{0, 2000, 50}, {1, 2000, 51}, {2, 1500, 60}, {3, 1500, 61}, {4, 1500, 62}};
  profile::Range r;
  r.name = "network";
  r.start_ns = 0;
  r.end_ns = 1000;
  r.run = 0;
  p.ranges = {r};
  profile::FinalizeStats(p);
  Diagnose(&p, nullptr);
  ASSERT_TRUE(p.verdicts.has_value());
  EXPECT_FALSE(p.verdicts->ceilings);
  EXPECT_EQ(p.verdicts->build, "release");
  EXPECT_TRUE(p.verdicts->throttled);
  EXPECT_NEAR(p.verdicts->freq_drop_pct, 25, 1e-9);
  EXPECT_EQ(p.verdicts->outlier_runs, std::vector<int>{4});
  EXPECT_FALSE(p.verdicts->noise.empty());
  auto back = profile::FromJsonString(profile::ToJsonString(p), "v.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_TRUE(back->verdicts.has_value());
  EXPECT_EQ(back->verdicts->noise_words, p.verdicts->noise_words);
  EXPECT_EQ(back->verdicts->outlier_runs, std::vector<int>{4});

  back->verdicts->noise_words = "STORED WORDS";
  back->verdicts->throttling = "STORED CLOCKS";
  std::string table, html;
  ASSERT_TRUE(report::RenderTables(*back, report::ReportOptions{}, &table).ok());
  EXPECT_NE(table.find("whole program: STORED WORDS"), std::string::npos) << table;
  EXPECT_NE(table.find("clocks: STORED CLOCKS"), std::string::npos) << table;
  ASSERT_TRUE(report::FindFormat("html")->write(*back, report::ReportOptions{}, &html).ok());
  EXPECT_NE(html.find("STORED WORDS"), std::string::npos);

  back->verdicts->outlier_runs = {9};
  EXPECT_FALSE(profile::Validate(*back).ok());
  back->verdicts.reset();  // an older profile: derived again
  ASSERT_TRUE(report::RenderTables(*back, report::ReportOptions{}, &table).ok());
  EXPECT_NE(table.find("whole program: " + p.verdicts->noise_words), std::string::npos) << table;
}

}  // namespace
}  // namespace opscope::analysis
