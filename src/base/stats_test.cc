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

// The sign-test interval against binomial tables: n = 9 gives [v(2), v(8)] (coverage 96.1%),
// n = 20 gives [v(6), v(15)] (95.9%), n < 6 the whole range.
TEST(StatsTest, MedianConfidenceInterval) {
  std::vector<double> nine = {9, 1, 8, 2, 7, 3, 6, 4, 5};
  Interval i9 = MedianConfidenceInterval(nine);
  EXPECT_EQ(i9.low, 2);
  EXPECT_EQ(i9.high, 8);
  std::vector<double> twenty;
  for (int i = 20; i >= 1; --i) twenty.push_back(i);
  Interval i20 = MedianConfidenceInterval(twenty);
  EXPECT_EQ(i20.low, 6);
  EXPECT_EQ(i20.high, 15);
  Interval i3 = MedianConfidenceInterval({-1, 4, 2});
  EXPECT_EQ(i3.low, -1);
  EXPECT_EQ(i3.high, 4);
  Interval none = MedianConfidenceInterval({});
  EXPECT_EQ(none.low, 0);
  EXPECT_EQ(none.high, 0);
}

}  // namespace opscope
