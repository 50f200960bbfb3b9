#include "base/stats.h"

#include <gtest/gtest.h>

namespace opscope {

TEST(StatsTest, HandComputed) {
  std::vector<double> v = {5, 1, 4, 2, 3, 100, 6, 7, 8, 9};
  Stats s = ComputeStats(v);
  EXPECT_EQ(s.n, 10);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 100);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.mean, 14.5);
  // 10% trimmed: drop 1 and 100 -> mean of 2..9 = 5.5
  EXPECT_DOUBLE_EQ(s.trimmed_mean, 5.5);
  EXPECT_NEAR(s.p90, 9 + 0.1 * 91, 1e-9);
}

TEST(StatsTest, EmptyAndSingle) {
  EXPECT_EQ(ComputeStats(std::vector<double>{}).n, 0);
  Stats s = ComputeStats(std::vector<double>{3.0});
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.trimmed_mean, 3);
  EXPECT_DOUBLE_EQ(s.stddev, 0);
}

TEST(StatsTest, Outliers) {
  std::vector<double> v = {10, 10.1, 9.9, 10.2, 9.8, 10, 50};
  auto o = FindOutliers(v);
  ASSERT_EQ(o.size(), 1u);
  EXPECT_EQ(o[0], 6u);
}

}  // namespace opscope
