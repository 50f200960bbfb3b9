// Differential tests of Softmax/LogSoftmax (both opset variants) and of the polynomial exp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/ops/elementwise_common.h"
#include "engine/ops/elementwise_test_util.h"
#include "engine/testing/kernel_runner.h"

namespace opscope::engine::testing {
namespace {

using Shape = std::vector<int64_t>;

// Softmax over the flattened block [axis, end) (coerce) or over one axis, in double.
Tensor NaiveSoftmax(const Tensor& x, int64_t axis, bool coerce, bool log) {
  const int64_t rank = x.rank();
  if (axis < 0) axis += rank;
  Tensor y(DataType::kFloat32, x.shape());
  // Group elements: key = index with the softmax dims zeroed.
  Shape key_shape = x.shape();
  for (int64_t d = 0; d < rank; ++d)
    if (coerce ? d >= axis : d == axis) key_shape[d] = 1;
  std::vector<std::vector<int64_t>> groups(Numel(key_shape));
  for (int64_t i = 0; i < x.numel(); ++i) {
    Shape idx = Unravel(i, x.shape());
    for (int64_t d = 0; d < rank; ++d)
      if (coerce ? d >= axis : d == axis) idx[d] = 0;
    groups[Ravel(idx, key_shape)].push_back(i);
  }
  for (const auto& g : groups) {
    double m = -INFINITY, s = 0;
    for (int64_t i : g) m = std::max(m, static_cast<double>(x.data<float>()[i]));
    for (int64_t i : g) s += std::exp(x.data<float>()[i] - m);
    for (int64_t i : g)
      y.data<float>()[i] = static_cast<float>(log ? x.data<float>()[i] - m - std::log(s)
                                                  : std::exp(x.data<float>()[i] - m) / s);
  }
  return y;
}

TEST(SoftmaxTest, MatchesNaiveBothOpsetVariants) {
  uint32_t seed = 1;
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (Shape s : {Shape{7}, Shape{13, 7}, Shape{2, 13, 7}, Shape{3, 1, 127}, Shape{2, 3, 600},
                    Shape{64, 1000}, Shape{4, 300, 5}}) {
      const int64_t rank = static_cast<int64_t>(s.size());
      for (int opset : {11, 13}) {
        for (int64_t axis = -rank; axis < rank; ++axis) {
          Tensor x = RandomTensor(s, seed++, -20, 20);
          Node n = MakeNode(op, 1, 1, opset);
          n.attrs.Set("axis", IntAttr(axis));
          auto out = MustRun(n, {&x});
          ASSERT_EQ(out.size(), 1u);
          Tensor want = NaiveSoftmax(x, axis, opset < 13, std::string(op) == "LogSoftmax");
          EXPECT_EQ(CompareTensors(out[0], want, 1e-6, 1e-5), "")
              << op << " opset " << opset << " " << ShapeString(s) << " axis " << axis;
        }
      }
    }
  }
}

TEST(SoftmaxTest, DefaultAxisDependsOnOpset) {
  Tensor x = RandomTensor({2, 3, 4}, 5, -2, 2);
  auto old = MustRun(MakeNode("Softmax", 1, 1, 11), {&x});
  EXPECT_EQ(CompareTensors(old[0], NaiveSoftmax(x, 1, true, false), 1e-6, 1e-5), "");
  auto now = MustRun(MakeNode("Softmax", 1, 1, 13), {&x});
  EXPECT_EQ(CompareTensors(now[0], NaiveSoftmax(x, -1, false, false), 1e-6, 1e-5), "");
}

TEST(SoftmaxTest, ExtremeValues) {
  Tensor x = FloatTensor({2, 3}, {10000, 10001, 10002, -1e30f, 0, -INFINITY});
  auto out = MustRun(MakeNode("Softmax", 1, 1, 13), {&x});
  EXPECT_EQ(CompareTensors(out[0], NaiveSoftmax(x, -1, false, false), 1e-7, 1e-5), "");
  EXPECT_EQ(out[0].data<float>()[5], 0.0f);
  auto lout = MustRun(MakeNode("LogSoftmax", 1, 1, 13), {&x});
  EXPECT_EQ(lout[0].data<float>()[5], -INFINITY);
  Tensor all_inf = FloatTensor({2}, {-INFINITY, -INFINITY});
  out = MustRun(MakeNode("Softmax", 1, 1, 13), {&all_inf});
  EXPECT_TRUE(std::isnan(out[0].data<float>()[0]));  // 0/0, as the definition gives
}

TEST(SoftmaxTest, FastExpAccuracy) {
  // Relative error against double exp over the normal range, absolute in the subnormal range.
  double worst = 0;
  for (float x = -87.0f; x <= 88.5f; x += 0.00137f) {
    double e = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::fabs(FastExp(x) - e) / e);
  }
  EXPECT_LT(worst, 3e-7);  // ~2.5 ulp of float
  for (float x = -103.0f; x < -87.0f; x += 0.01f)
    EXPECT_NEAR(FastExp(x), std::exp(static_cast<double>(x)), 2e-45) << x;
  EXPECT_EQ(FastExp(0.0f), 1.0f);
  EXPECT_EQ(FastExp(-110.0f), 0.0f);
  EXPECT_EQ(FastExp(-INFINITY), 0.0f);
  EXPECT_EQ(FastExp(89.0f), INFINITY);
  EXPECT_EQ(FastExp(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(FastExp(NAN)));
  for (float x = -30; x <= 30; x += 0.01f) {
    double s = 1 / (1 + std::exp(-static_cast<double>(x)));
    EXPECT_NEAR(FastSigmoid(x), s, 1e-7 + 4e-7 * s) << x;
    double t = std::tanh(static_cast<double>(x));
    EXPECT_NEAR(FastTanh(x), t, 1e-7 + 1e-6 * std::fabs(t)) << x;
  }
  double worst_erf = 0;
  for (float x = -6; x <= 6; x += 0.0007f) {
    double e = std::erf(static_cast<double>(x));
    if (e != 0) worst_erf = std::max(worst_erf, std::fabs(FastErf(x) - e) / std::fabs(e));
  }
  EXPECT_LT(worst_erf, 4e-7);
  EXPECT_NEAR(FastErf(1e-6f), std::erf(static_cast<double>(1e-6f)), 3e-13);  // ~2 float ulp
  EXPECT_EQ(FastErf(10.0f), 1.0f);
  EXPECT_EQ(FastErf(-INFINITY), -1.0f);
  EXPECT_TRUE(std::isnan(FastErf(NAN)));
  for (float x : {1e-6f, -1e-4f, 0.01f, -0.0624f, 0.0626f, 0.2f})
    EXPECT_NEAR(FastTanh(x), std::tanh(static_cast<double>(x)), 1e-6 * std::fabs(x)) << x;
}

TEST(SoftmaxTest, BadInput) {
  Tensor x = RandomTensor({3, 4}, 1);
  Node n = MakeNode("Softmax", 1, 1, 13);
  n.attrs.Set("axis", IntAttr(2));
  ExpectNodeError(n, {&x}, "out of range");
  Tensor i = IntTensor({2}, {1, 2});
  ExpectNodeError(MakeNode("LogSoftmax", 1, 1, 13), {&i}, "floating-point");
}

TEST(SoftmaxTest, Cost) {
  auto k = FindKernel("", "Softmax")(MakeNode("Softmax", 1, 1, 13));
  Cost c = (*k)->EstimateCost({{DataType::kFloat32, {2, 10}}}, {{DataType::kFloat32, {2, 10}}});
  EXPECT_EQ(c.flops, 100);
  EXPECT_EQ(c.bytes, 160);
}

}  // namespace
}  // namespace opscope::engine::testing
