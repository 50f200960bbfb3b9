// Differential tests of the broadcasting binary/variadic kernels against naive twins.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
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

using Shape = std::vector<int64_t>;

const std::vector<std::pair<Shape, Shape>> kShapePairs = {
    {{7}, {7}},
    {{1}, {1}},
    {{}, {5}},
    {{13, 7}, {7}},
    {{13, 7}, {13, 1}},
    {{2, 3, 13, 7}, {1, 3, 1, 1}},
    {{1}, {127, 13}},
    {{7, 1, 13}, {1, 127, 1}},
    {{3, 1}, {1, 7}},
    {{2, 1, 3, 1, 5}, {4, 1, 1, 5}},
    {{64, 33, 31}, {33, 1}},  // large enough to split across threads
    {{300, 257}, {257}},
    {{1, 70000}, {1}},  // one long run split by element
    {{0, 3}, {3}},      // empty output
};

// Naive broadcast of f over two tensors of the same element type.
template <typename T, typename TO = T, typename F>
Tensor NaiveBinary(const Tensor& a, const Tensor& b, DataType out_dt, F f) {
  Shape os = NaiveBroadcastShape({a.shape(), b.shape()});
  Tensor out(out_dt, os);
  for (int64_t i = 0; i < out.numel(); ++i) {
    Shape idx = Unravel(i, os);
    out.data<TO>()[i] = static_cast<TO>(f(a.data<T>()[BroadcastSource(idx, a.shape())],
                                          b.data<T>()[BroadcastSource(idx, b.shape())]));
  }
  return out;
}

template <typename T>
void CheckArith(DataType dt, const std::string& op, std::function<T(T, T)> ref, double lo,
                double hi, double blo, double bhi) {
  uint32_t seed = 1;
  for (const auto& [sa, sb] : kShapePairs) {
    for (bool swap : {false, true}) {
      Shape s0 = swap ? sb : sa, s1 = swap ? sa : sb;
      Tensor a = RandomTyped<T>(dt, s0, seed++, lo, hi);
      Tensor b = RandomTyped<T>(dt, s1, seed++, blo, bhi);
      auto out = MustRun(MakeNode(op, 2, 1), {&a, &b});
      ASSERT_EQ(out.size(), 1u);
      Tensor want = NaiveBinary<T>(a, b, dt, ref);
      EXPECT_EQ(CompareTensors(out[0], want), "")
          << op << " " << DataTypeName(dt) << " " << ShapeString(s0) << " x " << ShapeString(s1);
    }
  }
}

TEST(BinaryTest, ArithmeticFloat) {
  CheckArith<float>(
      DataType::kFloat32, "Add", [](float x, float y) { return x + y; }, -5, 5, -5, 5);
  CheckArith<float>(
      DataType::kFloat32, "Sub", [](float x, float y) { return x - y; }, -5, 5, -5, 5);
  CheckArith<float>(
      DataType::kFloat32, "Mul", [](float x, float y) { return x * y; }, -5, 5, -5, 5);
  CheckArith<float>(
      DataType::kFloat32, "Div", [](float x, float y) { return x / y; }, -5, 5, 0.5, 5);
  CheckArith<float>(
      DataType::kFloat32, "Max", [](float x, float y) { return std::max(x, y); }, -5, 5, -5, 5);
  CheckArith<float>(
      DataType::kFloat32, "Min", [](float x, float y) { return std::min(x, y); }, -5, 5, -5, 5);
  CheckArith<float>(
      DataType::kFloat32, "Pow", [](float x, float y) { return std::pow(x, y); }, 0.1, 3, -2, 2);
  CheckArith<double>(
      DataType::kFloat64, "Add", [](double x, double y) { return x + y; }, -5, 5, -5, 5);
}

TEST(BinaryTest, ArithmeticIntegers) {
  CheckArith<int64_t>(
      DataType::kInt64, "Add", [](int64_t x, int64_t y) { return x + y; }, -100, 100, -100, 100);
  CheckArith<int64_t>(
      DataType::kInt64, "Mul", [](int64_t x, int64_t y) { return x * y; }, -100, 100, -100, 100);
  CheckArith<int32_t>(
      DataType::kInt32, "Sub", [](int32_t x, int32_t y) { return x - y; }, -100, 100, -100, 100);
  // Integer division truncates toward zero.
  CheckArith<int32_t>(
      DataType::kInt32, "Div", [](int32_t x, int32_t y) { return x / y; }, -100, 100, 1, 9);
  CheckArith<int64_t>(
      DataType::kInt64, "Div", [](int64_t x, int64_t y) { return x / y; }, -100, 100, -9, -1);
  CheckArith<uint8_t>(
      DataType::kUint8, "Add", [](uint8_t x, uint8_t y) { return uint8_t(x + y); }, 0, 255, 0, 255);
  CheckArith<int8_t>(
      DataType::kInt8, "Max", [](int8_t x, int8_t y) { return std::max(x, y); }, -128, 127, -128,
      127);
  CheckArith<int64_t>(
      DataType::kInt64, "Pow",
      [](int64_t x, int64_t y) {
        int64_t r = 1;
        for (int64_t i = 0; i < y; ++i) r *= x;
        return r;
      },
      -5, 5, 0, 6);
}

TEST(BinaryTest, IntegerModFollowsDivisorSign) {
  Tensor a = IntTensor({6}, {5, -5, 5, -5, 7, 0});
  Tensor b = IntTensor({6}, {3, 3, -3, -3, 7, 4});
  auto out = MustRun(MakeNode("Mod", 2, 1), {&a, &b});
  Tensor want = IntTensor({6}, {2, 1, -1, -2, 0, 0});
  EXPECT_EQ(CompareTensors(out[0], want), "");
  Node f = MakeNode("Mod", 2, 1);
  f.attrs.Set("fmod", IntAttr(1));
  out = MustRun(f, {&a, &b});
  want = IntTensor({6}, {2, -2, 2, -2, 0, 0});
  EXPECT_EQ(CompareTensors(out[0], want), "");
}

TEST(BinaryTest, Comparisons) {
  struct Case {
    const char* op;
    std::function<uint8_t(float, float)> f;
  };
  std::vector<Case> cases = {
      {"Equal", [](float x, float y) -> uint8_t { return x == y; }},
      {"Greater", [](float x, float y) -> uint8_t { return x > y; }},
      {"Less", [](float x, float y) -> uint8_t { return x < y; }},
      {"GreaterOrEqual", [](float x, float y) -> uint8_t { return x >= y; }},
      {"LessOrEqual", [](float x, float y) -> uint8_t { return x <= y; }},
  };
  uint32_t seed = 100;
  for (const auto& c : cases) {
    for (const auto& [sa, sb] : kShapePairs) {
      // Small integers stored as float so that equality actually happens.
      Tensor a = RandomTyped<float>(DataType::kFloat32, sa, seed++, -3, 3);
      Tensor b = RandomTyped<float>(DataType::kFloat32, sb, seed++, -3, 3);
      for (auto* t : {&a, &b})
        for (int64_t i = 0; i < t->numel(); ++i)
          t->data<float>()[i] = std::floor(t->data<float>()[i]);
      auto out = MustRun(MakeNode(c.op, 2, 1), {&a, &b});
      Tensor want = NaiveBinary<float, uint8_t>(a, b, DataType::kBool, c.f);
      EXPECT_EQ(CompareTensors(out[0], want), "") << c.op << " " << ShapeString(sa);
    }
  }
  Tensor a = IntTensor({4}, {1, 2, 3, 4});
  Tensor b = IntTensor({1}, {3});
  auto out = MustRun(MakeNode("Greater", 2, 1), {&a, &b});
  Tensor want = MakeTyped<uint8_t>(DataType::kBool, {4}, {0, 0, 0, 1});
  EXPECT_EQ(CompareTensors(out[0], want), "");
}

TEST(BinaryTest, Logic) {
  uint32_t seed = 7;
  for (const char* op : {"And", "Or", "Xor"}) {
    for (const auto& [sa, sb] : kShapePairs) {
      Tensor a = RandomBool(sa, seed++), b = RandomBool(sb, seed++);
      auto out = MustRun(MakeNode(op, 2, 1), {&a, &b});
      std::string o = op;
      Tensor want =
          NaiveBinary<uint8_t>(a, b, DataType::kBool, [o](uint8_t x, uint8_t y) -> uint8_t {
            return o == "And" ? (x && y) : o == "Or" ? (x || y) : (x != y);
          });
      EXPECT_EQ(CompareTensors(out[0], want), "") << op;
    }
  }
  Tensor a = RandomBool({3}, 1);
  Tensor f = RandomTensor({3}, 1);
  ExpectNodeError(MakeNode("And", 2, 1), {&a, &f});
}

TEST(BinaryTest, PReluUnidirectional) {
  Tensor x = RandomTensor({2, 3, 7, 5}, 3, -2, 2);
  Tensor slope = RandomTensor({3, 1, 1}, 4, 0, 1);
  auto out = MustRun(MakeNode("PRelu", 2, 1), {&x, &slope});
  Tensor want = NaiveBinary<float>(x, slope, DataType::kFloat32,
                                   [](float v, float s) { return v < 0 ? v * s : v; });
  EXPECT_EQ(CompareTensors(out[0], want), "");
  // The slope must broadcast to X, not the other way round.
  Tensor big = RandomTensor({4, 2, 3, 7, 5}, 5);
  ExpectNodeError(MakeNode("PRelu", 2, 1), {&x, &big}, "slope");
}

TEST(BinaryTest, VariadicMaxMinSumMean) {
  Tensor a = RandomTensor({3, 1, 5}, 11, -3, 3);
  Tensor b = RandomTensor({4, 1}, 12, -3, 3);
  Tensor c = RandomTensor({5}, 13, -3, 3);
  Tensor d = RandomTensor({1, 4, 5}, 14, -3, 3);
  Shape os = {3, 4, 5};
  struct Case {
    const char* op;
    std::function<double(std::vector<double>)> f;
  };
  std::vector<Case> cases = {
      {"Max", [](std::vector<double> v) { return *std::max_element(v.begin(), v.end()); }},
      {"Min", [](std::vector<double> v) { return *std::min_element(v.begin(), v.end()); }},
      {"Sum",
       [](std::vector<double> v) {
         double s = 0;
         for (double x : v) s += x;
         return s;
       }},
      {"Mean",
       [](std::vector<double> v) {
         double s = 0;
         for (double x : v) s += x;
         return s / v.size();
       }},
  };
  for (const auto& cs : cases) {
    for (int n = 1; n <= 4; ++n) {
      std::vector<const Tensor*> ins = {&a, &b, &c, &d};
      ins.resize(n);
      auto out = MustRun(MakeNode(cs.op, n, 1), ins);
      std::vector<std::vector<int64_t>> shapes;
      for (auto* t : ins) shapes.push_back(t->shape());
      Shape s = NaiveBroadcastShape(shapes);
      Tensor want(DataType::kFloat32, s);
      for (int64_t i = 0; i < want.numel(); ++i) {
        Shape idx = Unravel(i, s);
        std::vector<double> vals;
        for (auto* t : ins) vals.push_back(t->data<float>()[BroadcastSource(idx, t->shape())]);
        want.data<float>()[i] = static_cast<float>(cs.f(vals));
      }
      EXPECT_EQ(CompareTensors(out[0], want), "") << cs.op << " with " << n << " inputs";
    }
  }
  (void)os;
}

TEST(BinaryTest, Float16UpcastsAndRoundsBack) {
  Tensor a(DataType::kFloat16, {4}), b(DataType::kFloat16, {4});
  const float av[] = {1.5f, -2.0f, 65504.0f, 0.1f}, bv[] = {1.0f, -3.0f, 1.0f, 0.2f};
  for (int i = 0; i < 4; ++i) {
    a.data<uint16_t>()[i] = FloatToHalf(av[i]);
    b.data<uint16_t>()[i] = FloatToHalf(bv[i]);
  }
  auto out = MustRun(MakeNode("Max", 2, 1), {&a, &b});
  ASSERT_EQ(out[0].dtype(), DataType::kFloat16);
  EXPECT_EQ(HalfToFloat(out[0].data<uint16_t>()[0]), 1.5f);
  EXPECT_EQ(HalfToFloat(out[0].data<uint16_t>()[1]), -2.0f);
  EXPECT_EQ(HalfToFloat(out[0].data<uint16_t>()[2]), 65504.0f);
  out = MustRun(MakeNode("Add", 2, 1), {&a, &b});
  EXPECT_EQ(out[0].data<uint16_t>()[3],
            FloatToHalf(HalfToFloat(a.data<uint16_t>()[3]) + HalfToFloat(b.data<uint16_t>()[3])));
}

TEST(BinaryTest, PowMixedTypes) {
  Tensor x = FloatTensor({3}, {1, 2, 3});
  Tensor y = IntTensor({3}, {4, 5, 6});
  auto out = MustRun(MakeNode("Pow", 2, 1), {&x, &y});
  EXPECT_EQ(CompareTensors(out[0], FloatTensor({3}, {1, 32, 729})), "");
  Tensor xi = IntTensor({3}, {1, 2, 3});
  Tensor yf = FloatTensor({3}, {4, 5, 6});
  out = MustRun(MakeNode("Pow", 2, 1), {&xi, &yf});
  EXPECT_EQ(CompareTensors(out[0], IntTensor({3}, {1, 32, 729})), "");
  Tensor two = FloatTensor({}, {2});
  out = MustRun(MakeNode("Pow", 2, 1), {&x, &two});
  EXPECT_EQ(CompareTensors(out[0], FloatTensor({3}, {1, 4, 9})), "");
}

TEST(BinaryTest, IntegerOverflowWrapsAndMinOverMinusOne) {
  Tensor a =
      IntTensor({2}, {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()});
  Tensor one = IntTensor({1}, {1});
  auto out = MustRun(MakeNode("Add", 2, 1), {&a, &one});
  EXPECT_EQ(out[0].data<int64_t>()[0], std::numeric_limits<int64_t>::min());
  Tensor m1 = IntTensor({1}, {-1});
  out = MustRun(MakeNode("Div", 2, 1), {&a, &m1});  // INT64_MIN / -1 must not trap
  EXPECT_EQ(out[0].data<int64_t>()[1], std::numeric_limits<int64_t>::min());
}

TEST(BinaryTest, FusedActivationMatchesSeparate) {
  Tensor a = RandomTensor({13, 127}, 21, -3, 3);
  Tensor b = RandomTensor({127}, 22, -3, 3);
  for (PostOpKind kind : {PostOpKind::kRelu, PostOpKind::kClip, PostOpKind::kSigmoid,
                          PostOpKind::kHardSwish, PostOpKind::kLeakyRelu}) {
    Node n = MakeNode("Add", 2, 1);
    auto k = FindKernel("", "Add")(n);
    ASSERT_TRUE(k.ok());
    PostOp po{kind, kind == PostOpKind::kClip ? -1.0f : 0.1f, 1.0f};
    ASSERT_TRUE((*k)->AddPostOp(po));
    auto plain = MustRun(n, {&a, &b});
    // Run the fused kernel through a minimal context.
    struct Ctx : KernelContext {
      std::vector<const Tensor*> in;
      Tensor out;
      int num_inputs() const override { return static_cast<int>(in.size()); }
      const Tensor* input(int i) const override { return i < num_inputs() ? in[i] : nullptr; }
      int num_outputs() const override { return 1; }
      bool output_wanted(int i) const override { return i == 0; }
      StatusOr<Tensor*> Output(int, DataType dt, const std::vector<int64_t>& s) override {
        out = Tensor(dt, s);
        return &out;
      }
      int threads() const override { return 1; }
    } ctx;
    ctx.in = {&a, &b};
    ASSERT_TRUE((*k)->Run(ctx).ok());
    Tensor want = plain[0];
    for (int64_t i = 0; i < want.numel(); ++i)
      want.data<float>()[i] = ApplyActivation(kind, want.data<float>()[i], po.alpha, po.beta);
    EXPECT_EQ(CompareTensors(ctx.out, want, 1e-6, 1e-6), "") << static_cast<int>(kind);
  }
  // Comparisons do not take post-ops; neither does a bias add.
  auto eq = FindKernel("", "Equal")(MakeNode("Equal", 2, 1));
  EXPECT_FALSE((*eq)->AddPostOp({PostOpKind::kRelu}));
  auto add = FindKernel("", "Add")(MakeNode("Add", 2, 1));
  EXPECT_FALSE((*add)->AddPostOp({PostOpKind::kBiasAdd}));
}

// A minimal context that keeps its output (RunKernel creates the kernel itself, so post-ops
// added to our kernel instance need their own context).
struct KeepContext : KernelContext {
  std::vector<const Tensor*> in;
  Tensor out;
  int num_inputs() const override { return static_cast<int>(in.size()); }
  const Tensor* input(int i) const override { return i < num_inputs() ? in[i] : nullptr; }
  int num_outputs() const override { return 1; }
  bool output_wanted(int i) const override { return i == 0; }
  StatusOr<Tensor*> Output(int, DataType dt, const std::vector<int64_t>& s) override {
    out = Tensor(dt, s);
    return &out;
  }
  int threads() const override { return 1; }
};

TEST(BinaryTest, FusedActivationOnOtherTypes) {
  // int64 Div + Relu, float64 Mean + Clip, float16 Sub + Relu: the post-op must not be dropped.
  Tensor a = IntTensor({4}, {-9, 9, -4, 4}), b = IntTensor({1}, {2});
  auto div = FindKernel("", "Div")(MakeNode("Div", 2, 1));
  ASSERT_TRUE((*div)->AddPostOp({PostOpKind::kRelu}));
  KeepContext ctx;
  ctx.in = {&a, &b};
  ASSERT_TRUE((*div)->Run(ctx).ok());
  EXPECT_EQ(CompareTensors(ctx.out, IntTensor({4}, {0, 4, 0, 2})), "");

  Tensor d0 = MakeTyped<double>(DataType::kFloat64, {3}, {-4, 0, 4});
  Tensor d1 = MakeTyped<double>(DataType::kFloat64, {3}, {-2, 1, 2});
  auto mean = FindKernel("", "Mean")(MakeNode("Mean", 2, 1));
  ASSERT_TRUE((*mean)->AddPostOp({PostOpKind::kClip, -1.0f, 2.5f}));
  ctx.in = {&d0, &d1};
  ASSERT_TRUE((*mean)->Run(ctx).ok());
  EXPECT_EQ(CompareTensors(ctx.out, MakeTyped<double>(DataType::kFloat64, {3}, {-1, 0.5, 2.5})),
            "");

  Tensor h0(DataType::kFloat16, {2}), h1(DataType::kFloat16, {2});
  h0.data<uint16_t>()[0] = FloatToHalf(1.0f);
  h0.data<uint16_t>()[1] = FloatToHalf(3.0f);
  h1.data<uint16_t>()[0] = FloatToHalf(2.0f);
  h1.data<uint16_t>()[1] = FloatToHalf(1.0f);
  auto sub = FindKernel("", "Sub")(MakeNode("Sub", 2, 1));
  ASSERT_TRUE((*sub)->AddPostOp({PostOpKind::kRelu}));
  ctx.in = {&h0, &h1};
  ASSERT_TRUE((*sub)->Run(ctx).ok());
  EXPECT_EQ(HalfToFloat(ctx.out.data<uint16_t>()[0]), 0.0f);
  EXPECT_EQ(HalfToFloat(ctx.out.data<uint16_t>()[1]), 2.0f);
}

TEST(BinaryTest, BadInput) {
  Tensor a = RandomTensor({3, 4}, 1), b = RandomTensor({5}, 2);
  ExpectNodeError(MakeNode("Add", 2, 1), {&a, &b}, "broadcast");
  Tensor i = IntTensor({4}, {1, 2, 3, 4});
  Tensor af = RandomTensor({4}, 3);
  ExpectNodeError(MakeNode("Mul", 2, 1), {&af, &i}, "different types");
  Tensor z = IntTensor({4}, {1, 0, 3, 4});
  ExpectNodeError(MakeNode("Div", 2, 1), {&i, &z}, "division by zero");
  ExpectNodeError(MakeNode("Mod", 2, 1), {&i, &z}, "division by zero");
  ExpectNodeError(MakeNode("Add", 2, 1), {&a, nullptr}, "missing");
  ExpectNodeError(MakeNode("Add", 3, 1), {&a, &a, &a}, "2 inputs");
  Tensor bl = RandomBool({4}, 1);
  ExpectNodeError(MakeNode("Add", 2, 1), {&bl, &bl}, "unsupported");
}

// An empty broadcast may carry dims whose running product overflows int64, and a non-empty one
// may be too large to exist: neither is iterated, and neither wraps around (model_struct_fuzz
// found the signed overflow in Numel through a Min of [7,1,2^31-1,0] and [2^31-1,1,0]).
TEST(BinaryTest, BroadcastPlanOfHugeShapesDoesNotOverflow) {
  const int64_t big = std::numeric_limits<int32_t>::max(), t40 = int64_t{1} << 40;
  EXPECT_EQ(Numel({}), 1);
  EXPECT_EQ(Numel({2, 3, 4}), 24);
  EXPECT_EQ(Numel({7, big, big, 0}), 0);
  EXPECT_EQ(Numel({t40, t40}), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Numel({-1, 3}), -3);  // a negative dim stays visible to the callers that check it

  const Shape a = {7, 1, big, 0}, b = {big, 1, 0};
  BroadcastPlan p;
  ASSERT_TRUE(MakeBroadcastPlan({&a, &b}, &p));
  EXPECT_EQ(p.out_shape, (Shape{7, big, big, 0}));
  EXPECT_EQ(p.out_numel, 0);
  EXPECT_EQ(p.dims, (Shape{0}));
  ASSERT_EQ(p.strides.size(), 2u);
  EXPECT_EQ(p.strides[0], (Shape{0}));

  const Shape c = {t40, 1}, d = {1, t40};
  ASSERT_TRUE(MakeBroadcastPlan({&c, &d}, &p));
  EXPECT_EQ(p.out_shape, (Shape{t40, t40}));
  EXPECT_EQ(p.out_numel, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(p.dims, (Shape{0}));
  int rows = 0;
  ForEachRow<2>(p, 1, [&](int64_t, const std::array<int64_t, 2>&, int64_t) { ++rows; });
  EXPECT_EQ(rows, 0);

  // An ordinary plan still collapses its dims.
  const Shape e = {2, 3, 4}, f = {4};
  ASSERT_TRUE(MakeBroadcastPlan({&e, &f}, &p));
  EXPECT_EQ(p.out_numel, 24);
  EXPECT_EQ(p.dims, (Shape{6, 4}));
}

TEST(BinaryTest, CostIsOneFlopPerOutputPerStep) {
  auto k = FindKernel("", "Add")(MakeNode("Add", 2, 1));
  Cost c = (*k)->EstimateCost({{DataType::kFloat32, {2, 3}}, {DataType::kFloat32, {3}}},
                              {{DataType::kFloat32, {2, 3}}});
  EXPECT_EQ(c.flops, 6);
  EXPECT_EQ(c.bytes, (6 + 3 + 6) * 4);
  auto s = FindKernel("", "Sum")(MakeNode("Sum", 3, 1));
  c = (*s)->EstimateCost(
      {{DataType::kFloat32, {10}}, {DataType::kFloat32, {10}}, {DataType::kFloat32, {10}}},
      {{DataType::kFloat32, {10}}});
  EXPECT_EQ(c.flops, 20);
  auto m = FindKernel("", "Mean")(MakeNode("Mean", 2, 1));
  c = (*m)->EstimateCost({{DataType::kFloat32, {10}}, {DataType::kFloat32, {10}}},
                         {{DataType::kFloat32, {10}}});
  EXPECT_EQ(c.flops, 20);  // one add and one scale per element
}

TEST(BinaryTest, ThreadCountDoesNotChangeResults) {
  Tensor a = RandomTensor({64, 33, 31}, 31), b = RandomTensor({33, 1}, 32);
  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  auto one = MustRun(MakeNode("Mul", 2, 1), {&a, &b});
  omp_set_num_threads(5);
  auto five = MustRun(MakeNode("Mul", 2, 1), {&a, &b});
  omp_set_num_threads(saved);
  EXPECT_EQ(CompareTensors(one[0], five[0], 0, 0), "");
}

}  // namespace
}  // namespace opscope::engine::testing
