// Summary statistics of repeated measurements, computed the way an expert does by hand:
// the median and a trimmed mean (the extremes dropped) are the numbers to trust; min, max, p90,
// standard deviation and the coefficient of variation say how far to trust them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace opscope {

// Fraction dropped from EACH end for the trimmed mean (10% low + 10% high).
inline constexpr double kDefaultTrimFraction = 0.10;

struct Stats {
  int64_t n = 0;
  double mean = 0, median = 0, trimmed_mean = 0, min = 0, max = 0, p90 = 0, stddev = 0;
  double cv = 0;  // stddev / mean (0 when mean is 0)
};

Stats ComputeStats(std::span<const double> values, double trim_fraction = kDefaultTrimFraction);

// Linear-interpolated percentile (q in [0,1]) of an already sorted sequence.
double PercentileSorted(std::span<const double> sorted, double q);

// Indices of values outside [Q1 - k*IQR, Q3 + k*IQR] (Tukey fences, k = 3 for "far out").
std::vector<size_t> FindOutliers(std::span<const double> values, double k = 3.0);

// A plain-words verdict on a coefficient of variation: "stable", "noisy", "unstable".
std::string VarianceVerdict(double cv);

// A distribution-free confidence interval for the median of `values` (e.g. paired differences),
// from order statistics and the sign test: [v(k), v(n+1-k)] with the largest k whose two-sided
// binomial(n, 1/2) tail stays within 1 - confidence. Below 6 values no k reaches 95%, and the
// interval is the whole range [min, max]. Empty input gives [0, 0].
struct Interval {
  double low = 0, high = 0;
};
Interval MedianConfidenceInterval(std::vector<double> values, double confidence = 0.95);

}  // namespace opscope
