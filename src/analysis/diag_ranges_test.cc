#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "analysis/diag_test_util.h"
#include "analysis/range_stats.h"
#include "analysis/rules.h"
#include "base/strings.h"
#include "collect/ranges_reader.h"
#include "profile/attached.h"
#include "report/format.h"
#include "report/range_table.h"
#include "report/trace_check.h"

namespace opscope::analysis {
namespace {

// Two frames of pre-processing (with resize inside), network and post-processing on thread 10,
// plus a loader range on thread 11. Times in ms.
const char* kRecords =
    "opscope-ranges 1\n"
    "pid 4242\n"
    "source annotate\n"
    "name 0 pre-processing\n"
    "name 1 resize\n"
    "name 2 network\n"
    "name 3 post-processing\n"
    "name 4 loader, \"io\"\n"
    "domain 0 default\n"
    "domain 1 opscope\n"
    "range P 10 1000000 81000000 1 1 1 70000000\n"
    "range P 10 0 100000000 0 1 0 90000000\n"
    "range P 10 100000000 130000000 2 1 0 -1\n"
    "range P 10 130000000 140000000 3 1 0 -1\n"
    "range P 10 141000000 221000000 1 1 1 -1\n"
    "range P 10 140000000 240000000 0 1 0 -1\n"
    "range P 10 240000000 270000000 2 1 0 -1\n"
    "range U 10 270000000 280000000 3 1 0 -1\n"
    "range S 11 5000000 6000000 4 0 0 -1\n";

std::vector<profile::Range> Parsed(collect::RangeFileInfo* info) {
  std::vector<profile::Range> r;
  Status st = collect::ParseRangeRecords(kRecords, "t.ranges", &r, info);
  EXPECT_TRUE(st.ok()) << st.message();
  collect::AssignNesting(&r);
  return r;
}

TEST(DiagRanges, ParseAndNest) {
  collect::RangeFileInfo info;
  auto r = Parsed(&info);
  ASSERT_EQ(r.size(), 9u);
  EXPECT_EQ(info.pid, 4242);
  EXPECT_EQ(info.source, "annotate");
  EXPECT_EQ(info.unclosed, 1);
  // Sorted by thread then start: the first pre-processing contains the first resize.
  EXPECT_EQ(r[0].name, "pre-processing");
  EXPECT_EQ(r[0].depth, 0);
  EXPECT_EQ(r[1].name, "resize");
  EXPECT_EQ(r[1].parent, 0);
  EXPECT_EQ(r[1].depth, 1);
  EXPECT_DOUBLE_EQ(r[1].counters.at("thread_cpu_ms"), 70.0);
  EXPECT_EQ(r[2].name, "network");
  EXPECT_EQ(r[2].parent, -1);
  EXPECT_EQ(r.back().name, "loader, \"io\"");
  EXPECT_EQ(r.back().tid, 11);
  EXPECT_EQ(r.back().domain, "default");
}

TEST(DiagRanges, BadRecords) {
  std::vector<profile::Range> r;
  collect::RangeFileInfo info;
  EXPECT_EQ(collect::ParseRangeRecords("hello\n", "f", &r, &info).code(), StatusCode::kDataLoss);
  EXPECT_EQ(collect::ParseRangeRecords("", "f", &r, &info).code(), StatusCode::kDataLoss);
  EXPECT_EQ(collect::ParseRangeRecords("opscope-ranges 1\nrange P 1 2\n", "f", &r, &info).code(),
            StatusCode::kDataLoss);
  EXPECT_EQ(collect::ParseRangeRecords("opscope-ranges 1\nrange P 1 5 2 0 0 0 -1\nname 0 a\n", "f",
                                       &r, &info)
                .code(),
            StatusCode::kDataLoss);  // ends before it starts
  EXPECT_EQ(collect::ParseRangeRecords("opscope-ranges 1\nrange P 1 2 5 9 0 0 -1\n", "f", &r, &info)
                .code(),
            StatusCode::kDataLoss);  // missing name
  EXPECT_EQ(collect::ParseRangeRecords("opscope-ranges 1\nbogus 1\n", "f", &r, &info).code(),
            StatusCode::kDataLoss);
  // Truncations of a valid file never crash; either parse or a DataLoss.
  std::string full = kRecords;
  for (size_t n = 0; n < full.size(); n += 7) {
    std::vector<profile::Range> out;
    Status st = collect::ParseRangeRecords(full.substr(0, n), "trunc", &out, &info);
    EXPECT_TRUE(st.ok() || st.code() == StatusCode::kDataLoss);
  }
}

profile::Profile RunProfile() {
  profile::Profile p;
  p.meta.kind = "run";
  p.meta.runs = 2;
  p.meta.source = "./pipeline";
  collect::RangeFileInfo info;
  p.ranges = Parsed(&info);
  EXPECT_TRUE(profile::Validate(p).ok());
  return p;
}

TEST(DiagRanges, Summary) {
  RangeReport rep = SummarizeRanges(RunProfile());
  ASSERT_EQ(rep.ranges.size(), 5u);
  EXPECT_EQ(rep.runs, 2);
  EXPECT_EQ(rep.ranges[0].path, "pre-processing");
  EXPECT_EQ(rep.ranges[0].calls, 2);
  EXPECT_DOUBLE_EQ(rep.ranges[0].total_ms, 200);
  EXPECT_DOUBLE_EQ(rep.ranges[0].per_run_ms, 100);
  EXPECT_EQ(rep.ranges[1].path, "pre-processing/resize");
  EXPECT_EQ(rep.ranges[1].depth, 1);
  EXPECT_EQ(rep.ranges[1].parent_row, 0);
  EXPECT_DOUBLE_EQ(rep.ranges[1].share_of_parent, 0.8);
  EXPECT_EQ(rep.ranges[2].path, "loader, \"io\"");
  EXPECT_EQ(rep.ranges[3].path, "network");
  EXPECT_EQ(rep.ranges[4].path, "post-processing");
  EXPECT_DOUBLE_EQ(rep.top_total_ms, 200 + 1 + 60 + 20);
  EXPECT_NEAR(rep.ranges[0].share_of_top, 200.0 / 281, 1e-12);
  EXPECT_TRUE(
      rep.headline.starts_with("pre-processing 100.000 ms (71.2%), loader, \"io\" 500.0 us"))
      << rep.headline;
}

// A top-level range named "" (writers_fuzz's first input: SummarizeRanges recursed into "" as its
// own child until the stack overflowed), with a child of its own, and a top-level name that
// equals a nested path.
TEST(DiagRanges, EmptyNamesAndPathsThatLookNestedDoNotLoop) {
  profile::Profile p;
  p.meta.kind = "run";
  p.meta.runs = 1;
  auto add = [&](std::string name, int64_t start, int64_t end, int32_t parent) {
    profile::Range r;
    r.name = std::move(name);
    r.tid = 1;
    r.start_ns = start;
    r.end_ns = end;
    r.parent = parent;
    r.run = 0;
    p.ranges.push_back(r);
  };
  add("", 0, 1000000, -1);
  add("inner", 100, 900000, 0);
  add("a", 2000000, 3000000, -1);
  add("b", 2100000, 2500000, 2);
  add("a/b", 4000000, 4500000, -1);
  profile::FinalizeStats(p);
  RangeReport rep = SummarizeRanges(p);
  std::vector<std::string> paths;
  for (const auto& r : rep.ranges) paths.push_back(r.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"", "/inner", "a", "a/b"})) << Join(paths, " | ");
  EXPECT_EQ(rep.ranges[1].depth, 1);
  EXPECT_EQ(rep.ranges[1].parent_row, 0);
}

// A `run -p` profile: one attached span, reported as such in the table (with the rules'
// findings) and the Chrome trace, never as "whole program: 1 runs".
TEST(DiagRanges, GoldenAttachedSpan) {
  profile::Profile p = RunProfile();
  p.meta.runs = 1;
  p.meta.source = "pid 4242 (pipeline)";
  p.meta.attached = p.meta.source;
  for (auto& r : p.ranges) r.run = 0;
  p.e2e.runs_ms = {400};
  profile::FinalizeStats(p);
  Diagnose(&p, nullptr);
  ASSERT_TRUE(profile::Validate(p).ok());
  std::string table, trace;
  ASSERT_TRUE(report::FindFormat("table")->write(p, {}, &table).ok());
  testing::ExpectGolden("pipeline_ranges.attached.table.txt", table);
  EXPECT_EQ(table.find("whole program"), std::string::npos);
  ASSERT_TRUE(report::FindFormat("chrome")->write(p, {}, &trace).ok());
  testing::ExpectGolden("pipeline_ranges.attached.trace.json", trace);
  auto attached_check = report::CheckChromeTrace(trace);
  EXPECT_TRUE(attached_check.ok()) << attached_check.status().message();
}

TEST(DiagRanges, GoldenTableCsvTrace) {
  profile::Profile p = RunProfile();
  RangeReport rep = SummarizeRanges(p);
  testing::ExpectGolden("pipeline_ranges.table.txt", report::FormatRangeTable(rep, false));
  std::string csv = report::RangesToCsv(rep);
  testing::ExpectGolden("pipeline_ranges.csv", csv);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 6);
  std::string trace;
  ASSERT_TRUE(report::FindFormat("chrome")->write(p, {}, &trace).ok());
  testing::ExpectGolden("pipeline_ranges.trace.json", trace);
  auto check = report::CheckChromeTrace(trace);
  EXPECT_TRUE(check.ok()) << check.status().message();
  auto j = nlohmann::json::parse(trace);
  int complete = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      ++complete;
      EXPECT_GE(e["dur"].get<double>(), 0);
      EXPECT_TRUE(e.contains("tid"));
    }
  }
  EXPECT_EQ(complete, 9);
}

}  // namespace
}  // namespace opscope::analysis
