// Golden tests of the stat table and separated-values output, on synthetic sections: one from a
// machine with a PMU (multiplexed cache events, several runs, an outlier) and one from a machine
// without (the fallback). Regenerate with OPSCOPE_UPDATE_GOLDEN=1 and review the diff.
#include "report/stat_table.h"

#include <gtest/gtest.h>

#include "base/testing/golden.h"
#include "collect/counter_metrics.h"
#include "profile/profile_io.h"

namespace opscope::report {
namespace {

void CompareGolden(const std::string& name, const std::string& actual) {
  ::opscope::testing::ExpectMatchesGolden(
      std::string(OPSCOPE_SOURCE_DIR) + "/src/report/testdata/stat/" + name, actual);
}

profile::CounterReading Reading(const std::string& event, double value, double fraction = 1,
                                const std::string& unit = "count") {
  profile::CounterReading c;
  c.event = event;
  c.unit = unit;
  c.value = value;
  c.raw = value * fraction;
  c.enabled_ns = 1e9;
  c.running_ns = 1e9 * fraction;
  c.running_fraction = fraction;
  return c;
}

profile::Profile WithPmu() {
  profile::Profile p;
  p.meta.kind = "stat";
  profile::StatSection s;
  s.command = {"./matmul", "--size", "1024"};
  const double jitter[5] = {1.0, 1.01, 0.99, 1.0, 1.6};  // run 5 is an outlier
  for (double j : jitter) {
    profile::StatRun run;
    run.wall_ms = 500 * j;
    run.counters = {Reading("task-clock", 1980 * j, 1, "ms"),
                    Reading("context-switches", 12),
                    Reading("page-faults", 4100),
                    Reading("cycles", 7.9e9 * j),
                    Reading("instructions", 4.1e9),
                    Reading("branches", 4.0e8),
                    Reading("branch-misses", 1.2e6),
                    Reading("cache-references", 2.0e8, 0.62),
                    Reading("cache-misses", 9.0e7, 0.62),
                    Reading("LLC-load-misses", 1.1e7, 0.62)};
    profile::CounterReading l1 = Reading("L1-dcache-load-misses", 0);
    l1.supported = false;
    l1.running_fraction = 0;
    l1.note = "not supported (ENOENT): no hardware PMU here, or the CPU lacks it";
    run.counters.push_back(l1);
    s.runs.push_back(run);
  }
  collect::SummarizeStat(s);
  p.stat = s;
  return p;
}

profile::Profile WithoutPmu() {
  profile::Profile p;
  p.meta.kind = "stat";
  profile::StatSection s;
  s.command = {"sleep", "0.1"};
  profile::StatRun run;
  run.wall_ms = 101.5;
  run.counters = {Reading("task-clock", 0.61, 1, "ms"), Reading("context-switches", 1),
                  Reading("page-faults", 71)};
  profile::CounterReading clock = Reading("cpu-clock", 0.6, 1, "ms");
  clock.requested = "cycles";
  clock.note = "cpu-clock stands in for cycles (no hardware PMU)";
  run.counters.push_back(clock);
  profile::CounterReading ins = Reading("instructions", 0);
  ins.supported = false;
  ins.running_fraction = 0;
  run.counters.push_back(ins);
  s.runs.push_back(run);
  s.degradations = {"cycles unavailable (no hardware PMU): using cpu-clock",
                    "not counted (no hardware PMU here, or the CPU lacks them): instructions"};
  collect::SummarizeStat(s);
  p.stat = s;
  p.meta.degradations = s.degradations;
  return p;
}

TEST(StatTableTest, WithPmuTable) {
  profile::Profile p = WithPmu();
  ASSERT_TRUE(profile::Validate(p).ok());
  EXPECT_EQ(p.stat->verdict, "memory-bound");
  ASSERT_EQ(p.stat->outliers.size(), 3u);  // run 5: task-clock, cycles and wall time
  CompareGolden("matmul-pmu.r5.txt", FormatStatTable(p));
}

TEST(StatTableTest, WithPmuSeparated) {
  CompareGolden("matmul-pmu.r5.x-semicolon.csv", FormatStatSeparated(WithPmu(), ";"));
}

TEST(StatTableTest, WithoutPmuTable) {
  profile::Profile p = WithoutPmu();
  ASSERT_TRUE(profile::Validate(p).ok());
  CompareGolden("sleep-nopmu.r1.txt", FormatStatTable(p));
  CompareGolden("sleep-nopmu.r1.x-comma.csv", FormatStatSeparated(p, ","));
}

TEST(StatTableTest, JsonRoundTripKeepsNewFields) {
  profile::Profile p = WithoutPmu();
  auto back = profile::FromJsonString(profile::ToJsonString(p), "mem");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->stat->runs[0].counters[3].requested, "cycles");
  EXPECT_EQ(back->stat->degradations, p.stat->degradations);
  EXPECT_EQ(FormatStatTable(*back), FormatStatTable(p));
}

}  // namespace
}  // namespace opscope::report
