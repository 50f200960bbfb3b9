// Differential tests of the unary kernels, Clip's opset variants, activation.h and float16
// conversion.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "engine/ops/activation.h"
#include "engine/ops/elementwise_common.h"
#include "engine/ops/elementwise_test_util.h"
#include "engine/testing/kernel_runner.h"

namespace opscope::engine::testing {
namespace {

const std::vector<std::vector<int64_t>> kShapes = {{1}, {7},    {13, 7},   {2, 3, 127},
                                                   {},  {0, 4}, {300, 257}};

void CheckFloatUnary(const Node& n, double lo, double hi, const std::function<double(double)>& f,
                     double tol = 1e-6) {
  uint32_t seed = 1;
  for (const auto& s : kShapes) {
    Tensor x = RandomTensor(s, seed++, static_cast<float>(lo), static_cast<float>(hi));
    auto out = MustRun(n, {&x});
    ASSERT_EQ(out.size(), 1u);
    Tensor want(DataType::kFloat32, s);
    for (int64_t i = 0; i < x.numel(); ++i)
      want.data<float>()[i] = static_cast<float>(f(x.data<float>()[i]));
    EXPECT_EQ(CompareTensors(out[0], want, tol, tol), "") << n.op_type << " " << ShapeString(s);
  }
}

TEST(UnaryTest, FloatFunctionsMatchDefinitions) {
  CheckFloatUnary(MakeNode("Relu", 1, 1), -3, 3, [](double x) { return x > 0 ? x : 0; });
  Node lr = MakeNode("LeakyRelu", 1, 1);
  lr.attrs.Set("alpha", FloatAttr(0.1f));
  CheckFloatUnary(lr, -3, 3, [](double x) { return x >= 0 ? x : 0.1f * x; });
  CheckFloatUnary(MakeNode("LeakyRelu", 1, 1), -3, 3,
                  [](double x) { return x >= 0 ? x : 0.01f * x; });
  CheckFloatUnary(MakeNode("Sigmoid", 1, 1), -30, 30,
                  [](double x) { return 1 / (1 + std::exp(-x)); });
  CheckFloatUnary(MakeNode("Tanh", 1, 1), -5, 5, [](double x) { return std::tanh(x); });
  Node hs = MakeNode("HardSigmoid", 1, 1);
  hs.attrs.Set("alpha", FloatAttr(0.5f));
  hs.attrs.Set("beta", FloatAttr(0.6f));
  CheckFloatUnary(hs, -3, 3, [](double x) { return std::clamp(0.5 * x + 0.6, 0.0, 1.0); });
  CheckFloatUnary(MakeNode("HardSigmoid", 1, 1), -4, 4,
                  [](double x) { return std::clamp(0.2 * x + 0.5, 0.0, 1.0); });
  CheckFloatUnary(MakeNode("HardSwish", 1, 1), -5, 5,
                  [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); });
  CheckFloatUnary(MakeNode("Erf", 1, 1), -3, 3, [](double x) { return std::erf(x); });
  CheckFloatUnary(
      MakeNode("Exp", 1, 1), -10, 10, [](double x) { return std::exp(x); }, 1e-5);
  CheckFloatUnary(MakeNode("Log", 1, 1), 0.01, 10, [](double x) { return std::log(x); });
  CheckFloatUnary(MakeNode("Sqrt", 1, 1), 0, 10, [](double x) { return std::sqrt(x); });
  CheckFloatUnary(MakeNode("Reciprocal", 1, 1), 0.5, 10, [](double x) { return 1 / x; });
  CheckFloatUnary(MakeNode("Neg", 1, 1), -3, 3, [](double x) { return -x; });
  CheckFloatUnary(MakeNode("Abs", 1, 1), -3, 3, [](double x) { return std::fabs(x); });
  CheckFloatUnary(MakeNode("Sign", 1, 1), -3, 3, [](double x) {
    return x > 0 ? 1 : x < 0 ? -1 : 0;
  });
  CheckFloatUnary(MakeNode("Floor", 1, 1), -3, 3, [](double x) { return std::floor(x); });
  CheckFloatUnary(MakeNode("Ceil", 1, 1), -3, 3, [](double x) { return std::ceil(x); });
}

double SoftplusRef(double x) {
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

TEST(UnaryTest, NewerActivationsAndMathMatchDefinitions) {
  CheckFloatUnary(MakeNode("Sin", 1, 1), -10, 10, [](double x) { return std::sin(x); });
  CheckFloatUnary(MakeNode("Cos", 1, 1), -10, 10, [](double x) { return std::cos(x); });
  CheckFloatUnary(MakeNode("Round", 1, 1), -20, 20, [](double x) { return std::nearbyint(x); });
  CheckFloatUnary(MakeNode("Softplus", 1, 1), -30, 30, SoftplusRef);
  CheckFloatUnary(MakeNode("Mish", 1, 1), -30, 30,
                  [](double x) { return x * std::tanh(SoftplusRef(x)); });
  CheckFloatUnary(MakeNode("Elu", 1, 1), -5, 5,
                  [](double x) { return x >= 0 ? x : std::exp(x) - 1; });
  Node elu = MakeNode("Elu", 1, 1);
  elu.attrs.Set("alpha", FloatAttr(0.5f));
  CheckFloatUnary(elu, -5, 5, [](double x) { return x >= 0 ? x : 0.5 * (std::exp(x) - 1); });
  const double a = 1.6732632423543772, g = 1.0507009873554805;
  CheckFloatUnary(MakeNode("Selu", 1, 1), -5, 5,
                  [&](double x) { return x > 0 ? g * x : g * (a * std::exp(x) - a); });
  Node selu = MakeNode("Selu", 1, 1);
  selu.attrs.Set("alpha", FloatAttr(2.0f));
  selu.attrs.Set("gamma", FloatAttr(3.0f));
  CheckFloatUnary(selu, -5, 5, [](double x) { return x > 0 ? 3 * x : 3 * (2 * std::exp(x) - 2); });
  CheckFloatUnary(
      MakeNode("Gelu", 1, 1, 20), -6, 6,
      [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, 1e-5);
  Node gt = MakeNode("Gelu", 1, 1, 20);
  gt.attrs.Set("approximate", StringAttr("tanh"));
  CheckFloatUnary(
      gt, -6, 6,
      [](double x) {
        return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
      },
      1e-5);
  Node bad = MakeNode("Gelu", 1, 1, 20);
  bad.attrs.Set("approximate", StringAttr("fast"));
  Tensor x = FloatTensor({1}, {1});
  ExpectNodeError(bad, {&x}, "approximate");
}

TEST(UnaryTest, RoundIsHalfToEvenAndFloat64Works) {
  Tensor x = FloatTensor({8}, {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 2.4f, -2.6f});
  auto out = MustRun(MakeNode("Round", 1, 1), {&x});
  EXPECT_EQ(CompareTensors(out[0], FloatTensor({8}, {-2, -2, 0, 0, 2, 2, 2, -3})), "");
  // Large magnitudes: Softplus is x, Mish is x; no overflow to inf or NaN.
  Tensor big = FloatTensor({2}, {100, -100});
  out = MustRun(MakeNode("Softplus", 1, 1), {&big});
  EXPECT_EQ(out[0].data<float>()[0], 100.0f);
  EXPECT_GE(out[0].data<float>()[1], 0.0f);
  out = MustRun(MakeNode("Mish", 1, 1), {&big});
  EXPECT_EQ(out[0].data<float>()[0], 100.0f);
  Tensor d = MakeTyped<double>(DataType::kFloat64, {3}, {-1.0, 0.0, 2.0});
  out = MustRun(MakeNode("Gelu", 1, 1, 20), {&d});
  for (int i = 0; i < 3; ++i) {
    double v = d.data<double>()[i];
    EXPECT_NEAR(out[0].data<double>()[i], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), 1e-15);
  }
  Tensor xi = IntTensor({1}, {1});
  ExpectNodeError(MakeNode("Sin", 1, 1), {&xi}, "unsupported");
}

TEST(UnaryTest, SigmoidIsStableForLargeMagnitudes) {
  Tensor x = FloatTensor({4}, {-1000, -100, 100, 1000});
  auto out = MustRun(MakeNode("Sigmoid", 1, 1), {&x});
  EXPECT_EQ(out[0].data<float>()[0], 0.0f);
  EXPECT_FALSE(std::isnan(out[0].data<float>()[1]));
  EXPECT_EQ(out[0].data<float>()[3], 1.0f);
}

// A fused Sigmoid/Tanh (ApplyActivationInPlace) runs the standalone kernels' vectorised loops in
// place: element for element what the scalar functions give, tails and NaN included.
TEST(UnaryTest, InPlaceSigmoidAndTanhMatchTheScalarFunctions) {
  for (PostOpKind kind : {PostOpKind::kSigmoid, PostOpKind::kTanh}) {
    for (int64_t n : {1, 7, 8, 9, 31, 64, 1000, 1003}) {
      std::vector<float> v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) v[i] = -30.f + 60.f * static_cast<float>(i) / n;
      v[0] = std::numeric_limits<float>::quiet_NaN();
      if (n > 2) v[n - 1] = 0.01f;  // below tanh's 1/16 switch to the polynomial
      std::vector<float> p = v;
      ApplyActivationInPlace(kind, p.data(), n, 0, 0);
      for (int64_t i = 0; i < n; ++i) {
        const float want = kind == PostOpKind::kSigmoid ? FastSigmoid(v[i]) : FastTanh(v[i]);
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(p[i])) << i;
        } else {
          EXPECT_NEAR(p[i], want, 2e-7f * std::max(1.0f, std::fabs(want))) << n << " " << i;
        }
      }
    }
  }
}

TEST(UnaryTest, ClipOpsetVariants) {
  // Opset 11+: min and max are optional inputs.
  Tensor x = FloatTensor({5}, {-3, -1, 0, 1, 3});
  Tensor lo = FloatTensor({}, {-1.5f}), hi = FloatTensor({}, {2});
  auto out = MustRun(MakeNode("Clip", 3, 1, 13), {&x, &lo, &hi});
  EXPECT_EQ(CompareTensors(out[0], FloatTensor({5}, {-1.5f, -1, 0, 1, 2})), "");
  out = MustRun(MakeNode("Clip", 3, 1, 13), {&x, nullptr, &hi});
  EXPECT_EQ(CompareTensors(out[0], FloatTensor({5}, {-3, -1, 0, 1, 2})), "");
  out = MustRun(MakeNode("Clip", 1, 1, 13), {&x});
  EXPECT_EQ(CompareTensors(out[0], x), "");
  // Opset < 11: attributes.
  Node old = MakeNode("Clip", 1, 1, 6 + 4);
  old.attrs.Set("min", FloatAttr(-0.5f));
  old.attrs.Set("max", FloatAttr(0.5f));
  out = MustRun(old, {&x});
  EXPECT_EQ(CompareTensors(out[0], FloatTensor({5}, {-0.5f, -0.5f, 0, 0.5f, 0.5f})), "");
  // Integer Clip (opset 12+), bound outside the type's range saturates.
  Tensor xi = MakeTyped<int8_t>(DataType::kInt8, {4}, {-128, -5, 5, 127});
  Tensor li = MakeTyped<int8_t>(DataType::kInt8, {}, {-6});
  out = MustRun(MakeNode("Clip", 2, 1, 13), {&xi, &li});
  EXPECT_EQ(CompareTensors(out[0], MakeTyped<int8_t>(DataType::kInt8, {4}, {-6, -5, 5, 127})), "");
  // min > max gives max everywhere, like numpy.clip.
  Tensor lo2 = FloatTensor({}, {2}), hi2 = FloatTensor({}, {1});
  out = MustRun(MakeNode("Clip", 3, 1, 13), {&x, &lo2, &hi2});
  EXPECT_EQ(CompareTensors(out[0], FloatTensor({5}, {1, 1, 1, 1, 1})), "");
  // Non-scalar bound, mismatched bound type.
  Tensor vec = FloatTensor({2}, {0, 1});
  ExpectNodeError(MakeNode("Clip", 2, 1, 13), {&x, &vec}, "scalar");
  ExpectNodeError(MakeNode("Clip", 2, 1, 13), {&x, &li}, "type");
}

TEST(UnaryTest, IntegerAndBoolTypes) {
  Tensor x = IntTensor({5}, {-3, -1, 0, 2, std::numeric_limits<int64_t>::min()});
  auto out = MustRun(MakeNode("Relu", 1, 1), {&x});
  EXPECT_EQ(CompareTensors(out[0], IntTensor({5}, {0, 0, 0, 2, 0})), "");
  out = MustRun(MakeNode("Abs", 1, 1), {&x});
  EXPECT_EQ(out[0].data<int64_t>()[0], 3);
  EXPECT_EQ(out[0].data<int64_t>()[4], std::numeric_limits<int64_t>::min());  // wraps, no UB
  out = MustRun(MakeNode("Neg", 1, 1), {&x});
  EXPECT_EQ(out[0].data<int64_t>()[3], -2);
  Tensor b = MakeTyped<uint8_t>(DataType::kBool, {3}, {1, 0, 1});
  out = MustRun(MakeNode("Not", 1, 1), {&b});
  EXPECT_EQ(CompareTensors(out[0], MakeTyped<uint8_t>(DataType::kBool, {3}, {0, 1, 0})), "");
  ExpectNodeError(MakeNode("Exp", 1, 1), {&x}, "unsupported");
  ExpectNodeError(MakeNode("Not", 1, 1), {&x}, "bool");
  ExpectNodeError(MakeNode("Relu", 1, 1), {nullptr}, "missing");
}

TEST(UnaryTest, Float16GoesThroughFloat32) {
  Tensor x(DataType::kFloat16, {3});
  x.data<uint16_t>()[0] = FloatToHalf(-2.0f);
  x.data<uint16_t>()[1] = FloatToHalf(0.5f);
  x.data<uint16_t>()[2] = FloatToHalf(4.0f);
  auto out = MustRun(MakeNode("Sqrt", 1, 1), {&x});
  ASSERT_EQ(out[0].dtype(), DataType::kFloat16);
  EXPECT_TRUE(std::isnan(HalfToFloat(out[0].data<uint16_t>()[0])));
  EXPECT_EQ(HalfToFloat(out[0].data<uint16_t>()[2]), 2.0f);
  EXPECT_EQ(out[0].data<uint16_t>()[1], FloatToHalf(std::sqrt(0.5f)));
}

TEST(UnaryTest, HalfConversionRoundTripsAndRoundsToEven) {
  // Every finite half converts to float and back unchanged.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;  // NaN payloads
    EXPECT_EQ(FloatToHalf(HalfToFloat(static_cast<uint16_t>(h))), h) << h;
  }
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);               // rounds to infinity
  EXPECT_EQ(FloatToHalf(1.0f + 1.0f / 2048), 0x3c00);     // tie between 1 and 1+2^-10: even
  EXPECT_EQ(FloatToHalf(1.0f + 3.0f / 2048), 0x3c02);     // tie: rounds up to even
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::quiet_NaN()) & 0x7c00, 0x7c00);
}

TEST(UnaryTest, ActivationHeaderMatchesKernels) {
  Tensor x = RandomTensor({257}, 5, -8, 8);
  struct Case {
    PostOpKind kind;
    const char* op;
    float alpha, beta;
  };
  for (const Case& c :
       {Case{PostOpKind::kRelu, "Relu", 0, 0}, Case{PostOpKind::kLeakyRelu, "LeakyRelu", 0.01f, 0},
        Case{PostOpKind::kSigmoid, "Sigmoid", 0, 0}, Case{PostOpKind::kTanh, "Tanh", 0, 0},
        Case{PostOpKind::kHardSigmoid, "HardSigmoid", 0.2f, 0.5f},
        Case{PostOpKind::kHardSwish, "HardSwish", 0, 0}}) {
    auto out = MustRun(MakeNode(c.op, 1, 1), {&x});
    Tensor copy(DataType::kFloat32, x.shape());
    std::memcpy(copy.raw(), x.raw(), x.nbytes());
    ApplyActivationInPlace(c.kind, copy.data<float>(), copy.numel(), c.alpha, c.beta);
    for (int64_t i = 0; i < x.numel(); ++i) {
      float s = ApplyActivation(c.kind, x.data<float>()[i], c.alpha, c.beta);
      EXPECT_NEAR(s, out[0].data<float>()[i], 1e-6) << c.op;
      // Fused and unfused agree to the bit (the same loop for this CPU; the scalar function
      // differs from an FMA loop in the last place).
      EXPECT_EQ(out[0].data<float>()[i], copy.data<float>()[i]) << c.op;
    }
  }
  EXPECT_EQ(ApplyActivation(PostOpKind::kClip, 5, -1, 2), 2);
  EXPECT_EQ(ApplyActivation(PostOpKind::kClip, -5, -1, 2), -1);
  EXPECT_EQ(ApplyActivation(PostOpKind::kBiasAdd, 5, 0, 0), 5);
}

TEST(UnaryTest, Cost) {
  auto k = FindKernel("", "Sigmoid")(MakeNode("Sigmoid", 1, 1));
  Cost c = (*k)->EstimateCost({{DataType::kFloat32, {10, 10}}}, {{DataType::kFloat32, {10, 10}}});
  EXPECT_EQ(c.flops, 300);
  EXPECT_EQ(c.bytes, 800);
  auto gelu = FindKernel("", "Gelu")(MakeNode("Gelu", 1, 1, 20));
  c = (*gelu)->EstimateCost({{DataType::kFloat32, {10}}}, {{DataType::kFloat32, {10}}});
  EXPECT_EQ(c.flops, 50);
  auto mish = FindKernel("", "Mish")(MakeNode("Mish", 1, 1, 18));
  c = (*mish)->EstimateCost({{DataType::kFloat32, {10}}}, {{DataType::kFloat32, {10}}});
  EXPECT_EQ(c.flops, 50);
  auto r = FindKernel("", "Relu")(MakeNode("Relu", 1, 1));
  c = (*r)->EstimateCost({{DataType::kFloat32, {4}}}, {{DataType::kFloat32, {4}}});
  EXPECT_EQ(c.flops, 4);
}

}  // namespace
}  // namespace opscope::engine::testing
