// The rule that decides whether opscope's own overhead was measured or is inside the noise.
#include "collect/model_profiler.h"

#include <gtest/gtest.h>

namespace opscope::collect {
namespace {

profile::Overhead WithMedians(double observed, double baseline) {
  profile::Overhead o;
  o.observed_median_ms = observed;
  o.baseline_median_ms = baseline;
  o.pct = (observed - baseline) / baseline * 100;
  return o;
}

TEST(OverheadNoise, NegativeDifferenceUnderLoadIsNotAMeasurement) {
  // Under load the runs with the observer happened to be faster (-19.86% of medians); the
  // paired differences straddle 0.
  profile::Overhead o = WithMedians(8.02, 10.0);
  std::vector<double> diffs = {-3.1, 2.5, -2.8, 1.9, -0.4, 3.3, -2.2, 0.8, -1.5, 2.9, -3.6, 0.2};
  JudgeOverheadNoise(diffs, &o);
  EXPECT_FALSE(o.measurable);
  EXPECT_LT(o.noise_low_pct, 0);
  EXPECT_GT(o.noise_high_pct, 0);
}

TEST(OverheadNoise, ConsistentPositiveDifferenceIsMeasured) {
  profile::Overhead o = WithMedians(10.2, 10.0);
  std::vector<double> diffs(20);
  for (size_t i = 0; i < diffs.size(); ++i) diffs[i] = 0.15 + 0.01 * static_cast<double>(i % 7);
  JudgeOverheadNoise(diffs, &o);
  EXPECT_TRUE(o.measurable);
  EXPECT_GT(o.noise_low_pct, 1.0);
  EXPECT_LT(o.noise_high_pct, 2.5);
}

TEST(OverheadNoise, NegativeMediansNeverMeasuredAndNoPairsNeither) {
  // Every pair says "slower with the observer" but the medians disagree: not a measurement.
  profile::Overhead o = WithMedians(9.9, 10.0);
  JudgeOverheadNoise(std::vector<double>(10, 0.1), &o);
  EXPECT_FALSE(o.measurable);
  o = WithMedians(10.5, 10.0);
  JudgeOverheadNoise({}, &o);
  EXPECT_FALSE(o.measurable);
}

}  // namespace
}  // namespace opscope::collect
