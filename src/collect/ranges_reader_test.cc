// The range file's attach records (`cut B|A`) and DropPartialRanges (ranges_reader.h).
#include "collect/ranges_reader.h"

#include <gtest/gtest.h>

namespace opscope::collect {
namespace {

profile::Range R(const char* name, int32_t tid, int64_t start, int64_t end) {
  profile::Range r;
  r.name = name;
  r.tid = tid;
  r.start_ns = start;
  r.end_ns = end;
  return r;
}

std::vector<std::string> Names(const std::vector<profile::Range>& v) {
  std::vector<std::string> out;
  for (const auto& r : v) out.push_back(r.name);
  return out;
}

TEST(RangesReader, CutLinesAreParsed) {
  const std::string text =
      "opscope-ranges 1\npid 7\nsource annotate\nname 0 work\ndomain 0 opscope\n"
      "range P 11 100 200 0 0 0 -1\ncut B 11 250\ncut A 11 900\n";
  std::vector<profile::Range> ranges;
  RangeFileInfo info;
  ASSERT_TRUE(ParseRangeRecords(text, "f", &ranges, &info).ok());
  ASSERT_EQ(info.cuts.size(), 2u);
  EXPECT_EQ(info.cuts[0].kind, 'B');
  EXPECT_EQ(info.cuts[0].tid, 11);
  EXPECT_EQ(info.cuts[0].ns, 250);
  EXPECT_EQ(info.cuts[1].kind, 'A');
  EXPECT_EQ(info.cuts[1].ns, 900);
  RangeFileInfo bad;
  Status st = ParseRangeRecords("opscope-ranges 1\ncut X 1 2\n", "g", &ranges, &bad);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("g:2: cut line needs B|A"), std::string::npos) << st.message();
}

TEST(RangesReader, DropPartialRangesAppliesEveryRecordersCutsAndTheWindow) {
  // Thread 1: a stage opened before the attach ended at 300 (B, said by the NVTX file), a stage
  // still open at the detach began at 800 (A, said by the annotate file). Thread 2: no cuts.
  std::vector<profile::Range> v = {R("inside-early", 1, 120, 200), R("whole", 1, 400, 700),
                                   R("inside-late", 1, 850, 900),  R("t2-whole", 2, 150, 950),
                                   R("before-window", 2, 90, 95),  R("after-window", 2, 960, 990)};
  std::vector<RangeFileInfo> infos(2);
  infos[0].cuts = {{'B', 1, 300}, {'B', 1, 250}};
  infos[1].cuts = {{'A', 1, 800}, {'A', 1, 820}};
  EXPECT_EQ(DropPartialRanges(100, 955, infos, &v), 4u);
  EXPECT_EQ(Names(v), (std::vector<std::string>{"whole", "t2-whole"}));
}

// Two recorders attached a few ms apart: a stage the first one recorded from before the second
// attached is left out, and so is what it holds (a `normalize` inside a `pre-processing` that
// began between the two attaches would otherwise be reported at top level); likewise at the end.
TEST(RangesReader, RangesInsideAStageOutsideTheWindowAreLeftOutWithIt) {
  std::vector<profile::Range> v = {R("pre-processing", 1, 90, 300), R("normalize", 1, 150, 200),
                                   R("network", 1, 400, 700),       R("post", 1, 900, 1100),
                                   R("nms", 1, 950, 990),           R("t2", 2, 120, 130)};
  std::vector<RangeFileInfo> infos(2);
  EXPECT_EQ(DropPartialRanges(100, 1000, infos, &v), 4u);
  EXPECT_EQ(Names(v), (std::vector<std::string>{"network", "t2"}));
}

}  // namespace
}  // namespace opscope::collect
