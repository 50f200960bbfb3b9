#include "collect/perf_map.h"

#include <gtest/gtest.h>

namespace opscope::collect {

TEST(PerfMap, ParsesFindsAndPrefersNewerEntries) {
  PerfMap m = PerfMap::Parse(
      "7f0000001000 100 jit_avx2_conv_fwd\n"
      "0x7f0000002000 0x80 brgemm kernel with spaces\n"
      "garbage line\n"
      "7f0000001040 10 newer_overlapping\n"
      "\n");
  EXPECT_EQ(m.bad_lines(), 1u);
  ASSERT_NE(m.Find(0x7f0000002010), nullptr);
  EXPECT_EQ(m.Find(0x7f0000002010)->name, "brgemm kernel with spaces");
  EXPECT_EQ(m.Find(0x7f0000002080), nullptr);
  EXPECT_EQ(m.Find(0x7f0000000fff), nullptr);
  ASSERT_NE(m.Find(0x7f0000001045), nullptr);
  EXPECT_EQ(m.Find(0x7f0000001045)->name, "newer_overlapping");
}

TEST(PerfMap, MissingFileIsAnError) {
  EXPECT_FALSE(PerfMap::Load("/nonexistent/perf-1.map").ok());
}

}  // namespace opscope::collect
