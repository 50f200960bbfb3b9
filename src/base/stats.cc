#include "base/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace opscope {

double PercentileSorted(std::span<const double> s, double q) {
  if (s.empty()) return 0;
  if (s.size() == 1) return s[0];
  double pos = q * static_cast<double>(s.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, s.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return s[lo] + (s[hi] - s[lo]) * frac;
}

Stats ComputeStats(std::span<const double> values, double trim_fraction) {
  Stats st;
  st.n = static_cast<int64_t>(values.size());
  if (values.empty()) return st;
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  st.min = v.front();
  st.max = v.back();
  st.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  st.median = PercentileSorted(v, 0.5);
  st.p90 = PercentileSorted(v, 0.9);
  double ss = 0;
  for (double x : v) ss += (x - st.mean) * (x - st.mean);
  st.stddev = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0.0;
  st.cv = st.mean != 0 ? st.stddev / st.mean : 0.0;
  size_t drop = static_cast<size_t>(std::floor(trim_fraction * static_cast<double>(v.size())));
  if (2 * drop >= v.size()) drop = 0;
  double sum = std::accumulate(v.begin() + drop, v.end() - drop, 0.0);
  st.trimmed_mean = sum / static_cast<double>(v.size() - 2 * drop);
  return st;
}

std::vector<size_t> FindOutliers(std::span<const double> values, double k) {
  std::vector<size_t> out;
  if (values.size() < 4) return out;
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  double q1 = PercentileSorted(v, 0.25), q3 = PercentileSorted(v, 0.75);
  double iqr = q3 - q1;
  double lo = q1 - k * iqr, hi = q3 + k * iqr;
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] < lo || values[i] > hi) out.push_back(i);
  return out;
}

std::string VarianceVerdict(double cv) {
  if (cv < 0.02) return "stable";
  if (cv < 0.05) return "slightly noisy";
  if (cv < 0.15) return "noisy";
  return "unstable";
}

Interval MedianConfidenceInterval(std::vector<double> values, double confidence) {
  if (values.empty()) return {};
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  // P(X <= j) for X ~ Binomial(n, 1/2), accumulated in log space so large n does not underflow.
  const double alpha = 1 - confidence;
  size_t k = 1;  // 1-based order statistic; k = 1 is the full range
  double cdf = 0;
  for (size_t j = 0; j < n / 2; ++j) {
    double log_p =
        std::lgamma(n + 1.0) - std::lgamma(j + 1.0) - std::lgamma(n - j + 1.0) - n * std::log(2.0);
    cdf += std::exp(log_p);
    // [v(j+1), v(n-j)] misses the median with probability 2 P(X <= j).
    if (2 * cdf > alpha) break;
    k = j + 1;
  }
  return {values[k - 1], values[n - k]};
}

}  // namespace opscope
