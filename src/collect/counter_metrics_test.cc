#include "collect/counter_metrics.h"

#include <gtest/gtest.h>

namespace opscope::collect {
namespace {

TEST(DerivedMetricsTest, Formulas) {
  std::map<std::string, double> v = {{"cycles", 2e9},           {"instructions", 3e9},
                                     {"cache-references", 1e7}, {"cache-misses", 2e6},
                                     {"branches", 5e8},         {"branch-misses", 5e6},
                                     {"LLC-load-misses", 3e6},  {"L1-dcache-load-misses", 6e7},
                                     {"task-clock", 1000},      {"page-faults", 500},
                                     {"context-switches", 10}};
  auto d = DerivedMetrics(v, 500);
  EXPECT_DOUBLE_EQ(d["ipc"], 1.5);
  EXPECT_DOUBLE_EQ(d["cache_miss_rate"], 0.2);
  EXPECT_DOUBLE_EQ(d["branch_miss_rate"], 0.01);
  EXPECT_DOUBLE_EQ(d["cache_mpki"], 2e6 / 3e9 * 1000);
  EXPECT_DOUBLE_EQ(d["llc_mpki"], 1.0);
  EXPECT_DOUBLE_EQ(d["l1d_mpki"], 20.0);
  EXPECT_DOUBLE_EQ(d["ghz"], 2.0);
  EXPECT_DOUBLE_EQ(d["cpus_utilized"], 2.0);
  EXPECT_DOUBLE_EQ(d["page_faults_per_cpu_ms"], 0.5);
  EXPECT_DOUBLE_EQ(d["context_switches_per_s"], 20);
}

TEST(VerdictTest, EachOutcome) {
  auto verdict = [](std::map<std::string, double> v) {
    return DecideVerdict(DerivedMetrics(v, 0), v).verdict;
  };
  EXPECT_EQ(verdict({{"task-clock", 10}}), "undetermined (no hardware counters)");
  EXPECT_EQ(verdict({{"cycles", 1e9}, {"instructions", 2.5e9}}), "compute-bound");
  EXPECT_EQ(verdict({{"cycles", 1e9}, {"instructions", 0.5e9}, {"LLC-load-misses", 1e6}}),
            "memory-bound");
  EXPECT_EQ(
      verdict(
          {{"cycles", 1e9}, {"instructions", 0.8e9}, {"branches", 1e8}, {"branch-misses", 1e7}}),
      "front-end or branch-bound");
  EXPECT_EQ(verdict({{"cycles", 1e9}, {"instructions", 1.5e9}, {"cache-misses", 1e3}}),
            "compute-bound");
  EXPECT_EQ(verdict({{"cycles", 1e9}, {"instructions", 0.5e9}}),
            "undetermined (no cache counters)");
  auto r = DecideVerdict(
      DerivedMetrics({{"cycles", 1e9}, {"instructions", 0.5e9}, {"LLC-load-misses", 1e6}}, 0), {});
  EXPECT_NE(r.reason.find("IPC 0.50"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("LLC MPKI 2.00"), std::string::npos) << r.reason;
}

TEST(SummarizeTest, StatsDerivedOutliers) {
  profile::StatSection s;
  for (int i = 0; i < 8; ++i) {
    profile::StatRun run;
    run.wall_ms = 10;
    profile::CounterReading tc;
    tc.event = "task-clock";
    tc.unit = "ms";
    tc.value = i == 5 ? 80 : 9 + 0.1 * i;  // run 6 is wildly off
    tc.enabled_ns = tc.running_ns = 1;
    profile::CounterReading ins;
    ins.event = "instructions";
    ins.supported = false;
    run.counters = {tc, ins};
    s.runs.push_back(run);
  }
  SummarizeStat(s);
  ASSERT_TRUE(s.summary.count("task-clock"));
  EXPECT_FALSE(s.summary.count("instructions"));
  EXPECT_EQ(s.summary["task-clock"].n, 8);
  ASSERT_EQ(s.outliers.size(), 1u);
  EXPECT_NE(s.outliers[0].find("run 6"), std::string::npos) << s.outliers[0];
  EXPECT_NEAR(s.derived["cpus_utilized"], s.summary["task-clock"].median / 10, 1e-9);
  EXPECT_EQ(s.verdict, "undetermined (no hardware counters)");
}

TEST(OpColumnsTest, HardwareOrStandIns) {
  auto hw = OpCounterColumns(
      {{"cycles", 1e6}, {"instructions", 2e6}, {"cache-misses", 4e3}, {"branch-misses", 1e3}}, 1.0);
  ASSERT_EQ(hw.size(), 3u);
  EXPECT_EQ(hw[0].header, "IPC");
  EXPECT_EQ(hw[0].text, "2.00");
  EXPECT_EQ(hw[1].header, "cache MPKI");
  EXPECT_DOUBLE_EQ(hw[1].value, 2.0);
  auto sw = OpCounterColumns(
      {{"cpu-clock", 2}, {"task-clock", 2}, {"page-faults", 100}, {"context-switches", 3}}, 1.0);
  ASSERT_EQ(sw.size(), 3u);
  EXPECT_EQ(sw[0].header, "CPUs busy");
  EXPECT_DOUBLE_EQ(sw[0].value, 2.0);
  EXPECT_EQ(sw[1].header, "faults/cpu-ms");
  EXPECT_DOUBLE_EQ(sw[1].value, 50);
  EXPECT_EQ(sw[2].header, "ctx-sw");
}

}  // namespace
}  // namespace opscope::collect
