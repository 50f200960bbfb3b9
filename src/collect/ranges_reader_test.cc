// The range file's records (attach `cut B|A`, streamed `flush` and `end`, a cut last line),
// DropPartialRanges and ReadRangeFiles (ranges_reader.h).
#include "collect/ranges_reader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

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

// `opscope run`'s recorder appends as ranges close: names, ranges and a `flush` line per write,
// then `end` at the process's end. Names may follow the ranges that use them.
TEST(RangesReader, StreamedFileWithFlushAndEndLines) {
  const std::string text =
      "opscope-ranges 1\npid 7\nsource annotate\nname 0 frame\ndomain 0 opscope\n"
      "range P 11 100 200 0 0 0 -1\nflush 250 2\nrange P 11 300 400 1 0 0 -1\nname 1 late\n"
      "flush 450 1\nrange U 11 50 500 0 0 0 -1\nend 500\n";
  std::vector<profile::Range> ranges;
  RangeFileInfo info;
  ASSERT_TRUE(ParseRangeRecords(text, "f", &ranges, &info).ok());
  EXPECT_EQ(Names(ranges), (std::vector<std::string>{"frame", "late", "frame"}));
  EXPECT_TRUE(info.complete);
  EXPECT_FALSE(info.cut_line);
  EXPECT_EQ(info.last_write_ns, 450);
  EXPECT_EQ(info.open_at_last_write, 1);
  EXPECT_EQ(info.unclosed, 1);
  RangeFileInfo bad;
  Status st = ParseRangeRecords("opscope-ranges 1\nflush 1\n", "g", &ranges, &bad);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("g:2: flush line needs"), std::string::npos) << st.message();
}

// A SIGKILL can cut the file mid-line: the cut line is left out (it could parse, wrongly: a name
// or a number cut short) and said; the whole lines before it are read.
TEST(RangesReader, ACutLastLineIsLeftOutAndSaid) {
  const std::string whole =
      "opscope-ranges 1\npid 7\nsource annotate\nname 0 frame\nrange P 11 100 200 0 0 0 -1\n"
      "flush 250 0\n";
  for (const std::string cut : {"range P 11 300 40", "name 1 fra", "flush 9"}) {
    std::vector<profile::Range> ranges;
    RangeFileInfo info;
    ASSERT_TRUE(ParseRangeRecords(whole + cut, "f", &ranges, &info).ok()) << cut;
    EXPECT_EQ(Names(ranges), std::vector<std::string>{"frame"}) << cut;
    EXPECT_TRUE(info.cut_line) << cut;
    EXPECT_FALSE(info.complete);
    EXPECT_EQ(info.last_write_ns, 250);
  }
  // After the end nothing is written: a cut line there is corruption.
  std::vector<profile::Range> ranges;
  RangeFileInfo info;
  Status st = ParseRangeRecords(whole + "end 300\nrange P", "h", &ranges, &info);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_NE(st.message().find("h: a cut line after the end record"), std::string::npos)
      << st.message();
}

// ReadRangeFiles reads through the folder's descriptor by the trust rule: planted files are
// refused by name, a file cut before its first line counts as cut, not corrupt.
TEST(RangesReader, ReadRangeFilesRefusesPlantedFilesAndKeepsCutOnes) {
  const std::string parent = ::testing::TempDir() + "/ranges_reader_test_read";
  mkdir(parent.c_str(), 0755);
  auto made = RangeFolder::Make(parent, "run-");
  ASSERT_TRUE(made.ok()) << made.status().message();
  RangeFolder& f = **made;
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(f.path() + "/" + name) << text;
    chmod((f.path() + "/" + name).c_str(), 0600);
  };
  write("run0.annotate.1", "opscope-ranges 1\npid 1\nname 0 a\nrange P 1 1 2 0 0 0 -1\nend 3\n");
  write("run0.annotate.2", "");            // created, then killed
  write("run0.nvtx.3", "opscope-ran");     // killed within the header
  write("other.annotate.4", "garbage\n");  // another prefix: not read
  ASSERT_EQ(symlink("/etc/passwd", (f.path() + "/run0.nvtx.5").c_str()), 0);
  ASSERT_EQ(mkfifo((f.path() + "/run0.nvtx.6").c_str(), 0600), 0);
  std::vector<profile::Range> ranges;
  std::vector<RangeFileInfo> infos;
  std::vector<std::string> refused;
  ASSERT_TRUE(ReadRangeFiles(f, "run0", &ranges, &infos, &refused).ok());
  EXPECT_EQ(Names(ranges), std::vector<std::string>{"a"});
  ASSERT_EQ(infos.size(), 3u);
  EXPECT_TRUE(infos[0].complete);
  EXPECT_TRUE(infos[1].cut_line && !infos[1].complete);
  EXPECT_EQ(infos[1].file, "run0.annotate.2");
  EXPECT_TRUE(infos[2].cut_line && !infos[2].complete);
  EXPECT_EQ(refused, (std::vector<std::string>{
                         "run0.nvtx.5 is a symbolic link: not reading it",
                         "run0.nvtx.6 is a FIFO, not a regular file: not reading it"}));
  EXPECT_EQ(f.Remove(), "");
}

}  // namespace
}  // namespace opscope::collect
