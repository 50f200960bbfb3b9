// Tests of Cast, CastLike, Identity, Dropout, Where, CumSum and TopK against naive twins.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "engine/ops/elementwise_common.h"
#include "engine/ops/elementwise_test_util.h"
#include "engine/testing/kernel_runner.h"

namespace opscope::engine::testing {
namespace {

using Shape = std::vector<int64_t>;

Node CastNode(int64_t to) {
  Node n = MakeNode("Cast", 1, 1, 13);
  n.attrs.Set("to", IntAttr(to));
  return n;
}

TEST(CastTest, Conversions) {
  Tensor f = FloatTensor({6}, {1.7f, -1.7f, 0.0f, 300.0f, -300.0f, NAN});
  auto out = MustRun(CastNode(7), {&f});  // int64 truncates toward zero, NaN -> 0
  EXPECT_EQ(CompareTensors(out[0], IntTensor({6}, {1, -1, 0, 300, -300, 0})), "");
  out = MustRun(CastNode(9), {&f});  // bool: != 0 (NaN is true)
  EXPECT_EQ(CompareTensors(out[0], MakeTyped<uint8_t>(DataType::kBool, {6}, {1, 1, 0, 1, 1, 1})),
            "");
  out = MustRun(CastNode(2), {&f});  // uint8 wraps like numpy on x86 (300 -> 44)
  EXPECT_EQ(out[0].data<uint8_t>()[3], 44);
  out = MustRun(CastNode(11), {&f});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat64);
  EXPECT_EQ(out[0].data<double>()[0], static_cast<double>(1.7f));
  Tensor i = IntTensor({3}, {-1, 0, 70000});
  out = MustRun(CastNode(6), {&i});
  EXPECT_EQ(CompareTensors(out[0], MakeTyped<int32_t>(DataType::kInt32, {3}, {-1, 0, 70000})), "");
  out = MustRun(CastNode(1), {&i});
  EXPECT_EQ(CompareTensors(out[0], FloatTensor({3}, {-1, 0, 70000})), "");
  out = MustRun(CastNode(3), {&i});  // int8 wraps
  EXPECT_EQ(out[0].data<int8_t>()[2], static_cast<int8_t>(70000 & 0xff));
  Tensor b = MakeTyped<uint8_t>(DataType::kBool, {2}, {1, 0});
  out = MustRun(CastNode(1), {&b});
  EXPECT_EQ(CompareTensors(out[0], FloatTensor({2}, {1, 0})), "");
  // float16 both ways (double rounds once).
  Tensor d = MakeTyped<double>(DataType::kFloat64, {2}, {0.1, 65504.0});
  out = MustRun(CastNode(10), {&d});
  EXPECT_EQ(out[0].data<uint16_t>()[0], 0x2e66);
  EXPECT_EQ(out[0].data<uint16_t>()[1], 0x7bff);
  Tensor h = out[0];
  out = MustRun(CastNode(1), {&h});
  EXPECT_NEAR(out[0].data<float>()[0], 0.1f, 1e-4);
  // Same type: a copy.
  out = MustRun(CastNode(1), {&f});
  EXPECT_EQ(std::memcmp(out[0].raw(), f.raw(), f.nbytes()), 0);
}

TEST(CastTest, BadTarget) {
  Node n = CastNode(8);  // STRING
  auto k = FindKernel("", "Cast")(n);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(k.status().message().find("Cast_test"), std::string::npos);
  EXPECT_NE(k.status().message().find("data type"), std::string::npos);
  auto missing = FindKernel("", "Cast")(MakeNode("Cast", 1, 1, 13));
  EXPECT_FALSE(missing.ok());
}

TEST(CastTest, CastLikeTakesTheTargetInputsType) {
  // Every pair of engine types: CastLike(x, like) equals Cast(x, to=type of like).
  Tensor f = FloatTensor({6}, {1.7f, -1.7f, 0.0f, 300.0f, -300.0f, NAN});
  const std::vector<std::pair<DataType, int64_t>> types = {
      {DataType::kFloat32, 1},  {DataType::kUint8, 2},   {DataType::kInt8, 3},
      {DataType::kInt32, 6},    {DataType::kInt64, 7},   {DataType::kBool, 9},
      {DataType::kFloat16, 10}, {DataType::kFloat64, 11}};
  for (const auto& [from, from_onnx] : types) {
    Tensor x = MustRun(CastNode(from_onnx), {&f})[0];
    for (const auto& [to, to_onnx] : types) {
      Tensor like(to, {0});  // only its type matters; empty data
      auto got = MustRun(MakeNode("CastLike", 2, 1, 15), {&x, &like});
      auto want = MustRun(CastNode(to_onnx), {&x});
      ASSERT_EQ(got.size(), 1u);
      ASSERT_EQ(got[0].dtype(), to);
      EXPECT_EQ(std::memcmp(got[0].raw(), want[0].raw(), want[0].nbytes()), 0)
          << DataTypeName(from) << " -> " << DataTypeName(to);
    }
  }
  ExpectNodeError(MakeNode("CastLike", 2, 1, 15), {&f, nullptr}, "target_type");
  auto k = FindKernel("", "CastLike")(MakeNode("CastLike", 2, 1, 15));
  Cost c = (*k)->EstimateCost({{DataType::kFloat32, {10}}, {DataType::kFloat64, {1000}}},
                              {{DataType::kFloat64, {10}}});
  EXPECT_EQ(c.bytes, 120);  // x read + y written; target_type's data is not read
}

TEST(IdentityTest, IdentityAndInferenceDropout) {
  Tensor x = RandomTensor({3, 5}, 1);
  auto out = MustRun(MakeNode("Identity", 1, 1), {&x});
  EXPECT_EQ(CompareTensors(out[0], x, 0, 0), "");
  Tensor xi = IntTensor({2}, {5, 6});
  out = MustRun(MakeNode("Identity", 1, 1), {&xi});
  EXPECT_EQ(CompareTensors(out[0], xi), "");
  // Opset 12+: ratio and training_mode inputs; mask is bool and all true in inference.
  Tensor ratio = FloatTensor({}, {0.3f});
  out = MustRun(MakeNode("Dropout", 2, 2, 13), {&x, &ratio});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(CompareTensors(out[0], x, 0, 0), "");
  ASSERT_EQ(out[1].dtype(), DataType::kBool);
  for (int64_t i = 0; i < out[1].numel(); ++i) EXPECT_EQ(out[1].data<uint8_t>()[i], 1);
  // Opset 7-9: the mask has the input's type.
  out = MustRun(MakeNode("Dropout", 1, 2, 9), {&x});
  EXPECT_EQ(out[1].dtype(), DataType::kFloat32);
  EXPECT_EQ(out[1].data<float>()[0], 1.0f);
}

TEST(IdentityTest, TrainingDropoutKeepsAboutOneMinusRatioAndScales) {
  Tensor x(DataType::kFloat32, {10000});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 1.0f;
  Tensor ratio = FloatTensor({}, {0.25f});
  Tensor train = MakeTyped<uint8_t>(DataType::kBool, {}, {1});
  Node n = MakeNode("Dropout", 3, 2, 13);
  n.attrs.Set("seed", IntAttr(0));
  auto out = MustRun(n, {&x, &ratio, &train});
  int64_t kept = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    float y = out[0].data<float>()[i];
    bool m = out[1].data<uint8_t>()[i];
    EXPECT_EQ(y, m ? 1.0f / 0.75f : 0.0f);
    kept += m;
  }
  EXPECT_NEAR(kept / 10000.0, 0.75, 0.02);
  // The same seed gives the same mask.
  auto again = MustRun(n, {&x, &ratio, &train});
  EXPECT_EQ(std::memcmp(again[1].raw(), out[1].raw(), out[1].nbytes()), 0);
  Tensor zero = FloatTensor({}, {0.0f});
  auto id = MustRun(n, {&x, &zero, &train});
  EXPECT_EQ(CompareTensors(id[0], x, 0, 0), "");
}

TEST(WhereTest, MatchesNaiveUnderBroadcast) {
  uint32_t seed = 3;
  std::vector<std::vector<Shape>> cases = {{{7}, {7}, {7}},
                                           {{13, 7}, {7}, {13, 1}},
                                           {{1}, {3, 4}, {4}},
                                           {{2, 1, 5}, {1, 3, 1}, {5}},
                                           {{64, 128}, {64, 128}, {}},
                                           {{300, 1}, {1, 257}, {300, 257}}};
  for (const auto& c : cases) {
    Tensor cond = RandomBool(c[0], seed++);
    Tensor x = RandomTensor(c[1], seed++), y = RandomTensor(c[2], seed++);
    auto out = MustRun(MakeNode("Where", 3, 1), {&cond, &x, &y});
    Shape os = NaiveBroadcastShape(c);
    Tensor want(DataType::kFloat32, os);
    for (int64_t i = 0; i < want.numel(); ++i) {
      Shape idx = Unravel(i, os);
      want.data<float>()[i] = cond.data<uint8_t>()[BroadcastSource(idx, c[0])]
                                  ? x.data<float>()[BroadcastSource(idx, c[1])]
                                  : y.data<float>()[BroadcastSource(idx, c[2])];
    }
    EXPECT_EQ(CompareTensors(out[0], want, 0, 0), "") << ShapeString(c[0]);
  }
  Tensor cond = RandomBool({3}, 1);
  Tensor xi = IntTensor({3}, {1, 2, 3}), yi = IntTensor({1}, {9});
  auto out = MustRun(MakeNode("Where", 3, 1), {&cond, &xi, &yi});
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(out[0].data<int64_t>()[i], cond.data<uint8_t>()[i] ? i + 1 : 9);
  Tensor f = RandomTensor({3}, 2);
  ExpectNodeError(MakeNode("Where", 3, 1), {&f, &xi, &yi}, "bool");
  ExpectNodeError(MakeNode("Where", 3, 1), {&cond, &f, &yi}, "differ");
  Tensor bad = RandomTensor({4}, 2);
  ExpectNodeError(MakeNode("Where", 3, 1), {&cond, &f, &bad}, "broadcast");
}

Tensor NaiveCumSum(const Tensor& x, int64_t axis, bool exclusive, bool reverse) {
  const int64_t rank = x.rank();
  if (axis < 0) axis += rank;
  Tensor y(DataType::kFloat32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    Shape idx = Unravel(i, x.shape());
    double s = 0;
    const int64_t n = x.shape()[axis], me = idx[axis];
    for (int64_t r = 0; r < n; ++r) {
      bool take = reverse ? (exclusive ? r > me : r >= me) : (exclusive ? r < me : r <= me);
      if (!take) continue;
      idx[axis] = r;
      s += x.data<float>()[Ravel(idx, x.shape())];
    }
    y.data<float>()[i] = static_cast<float>(s);
  }
  return y;
}

TEST(CumSumTest, MatchesNaive) {
  uint32_t seed = 1;
  for (Shape s : {Shape{7}, Shape{13, 7}, Shape{2, 13, 7}, Shape{3, 127, 1}, Shape{4, 1000}}) {
    const int64_t rank = static_cast<int64_t>(s.size());
    for (int64_t axis = -rank; axis < rank; ++axis)
      for (bool ex : {false, true})
        for (bool rev : {false, true}) {
          Tensor x = RandomTensor(s, seed++);
          Tensor a = IntTensor({}, {axis});
          Node n = MakeNode("CumSum", 2, 1, 14);
          n.attrs.Set("exclusive", IntAttr(ex));
          n.attrs.Set("reverse", IntAttr(rev));
          auto out = MustRun(n, {&x, &a});
          EXPECT_EQ(CompareTensors(out[0], NaiveCumSum(x, axis, ex, rev), 1e-4, 1e-4), "")
              << ShapeString(s) << " axis " << axis << " ex " << ex << " rev " << rev;
        }
  }
  Tensor xi = IntTensor({4}, {1, 2, 3, 4});
  Tensor a32 = MakeTyped<int32_t>(DataType::kInt32, {1}, {0});
  auto out = MustRun(MakeNode("CumSum", 2, 1, 14), {&xi, &a32});
  EXPECT_EQ(CompareTensors(out[0], IntTensor({4}, {1, 3, 6, 10})), "");
  Tensor bad_axis = IntTensor({}, {1});
  ExpectNodeError(MakeNode("CumSum", 2, 1, 14), {&xi, &bad_axis}, "out of range");
  Tensor faxis = FloatTensor({}, {0});
  ExpectNodeError(MakeNode("CumSum", 2, 1, 14), {&xi, &faxis}, "axis");
}

TEST(TopKTest, MatchesNaiveWithTiesByLowerIndex) {
  uint32_t seed = 1;
  for (Shape s : {Shape{7}, Shape{13, 7}, Shape{2, 13, 7}, Shape{3, 127}, Shape{2, 1000}}) {
    const int64_t rank = static_cast<int64_t>(s.size());
    for (int64_t axis = -rank; axis < rank; ++axis) {
      const int64_t n = s[axis < 0 ? axis + rank : axis];
      for (int64_t k : {int64_t{0}, int64_t{1}, n / 2, n}) {
        for (bool largest : {true, false}) {
          Tensor x = RandomTensor(s, seed++, -5, 5);
          for (int64_t i = 0; i < x.numel(); ++i)
            x.data<float>()[i] = std::round(x.data<float>()[i]);
          Tensor kt = IntTensor({1}, {k});
          Node node = MakeNode("TopK", 2, 2, 11);
          node.attrs.Set("axis", IntAttr(axis));
          node.attrs.Set("largest", IntAttr(largest));
          auto out = MustRun(node, {&x, &kt});
          ASSERT_EQ(out.size(), 2u);
          // Naive: stable sort of each slice.
          int64_t ax = axis < 0 ? axis + rank : axis;
          Shape os = s;
          os[ax] = k;
          Tensor wv(DataType::kFloat32, os), wi(DataType::kInt64, os);
          for (int64_t j = 0; j < wv.numel(); ++j) {
            Shape idx = Unravel(j, os);
            std::vector<std::pair<float, int64_t>> slice;
            for (int64_t r = 0; r < n; ++r) {
              Shape src = idx;
              src[ax] = r;
              slice.push_back({x.data<float>()[Ravel(src, s)], r});
            }
            std::stable_sort(slice.begin(), slice.end(), [largest](auto& a, auto& b) {
              return largest ? a.first > b.first : a.first < b.first;
            });
            wv.data<float>()[j] = slice[idx[ax]].first;
            wi.data<int64_t>()[j] = slice[idx[ax]].second;
          }
          EXPECT_EQ(CompareTensors(out[0], wv, 0, 0), "")
              << ShapeString(s) << " axis " << axis << " k " << k;
          EXPECT_EQ(CompareTensors(out[1], wi), "")
              << ShapeString(s) << " axis " << axis << " k " << k;
        }
      }
    }
  }
}

TEST(TopKTest, OpsetVariantsAndBadInput) {
  Tensor x = FloatTensor({5}, {3, 1, 4, 1, 5});
  Node old = MakeNode("TopK", 1, 2, 9);
  old.attrs.Set("k", IntAttr(2));
  auto out = MustRun(old, {&x});
  EXPECT_EQ(CompareTensors(out[0], FloatTensor({2}, {5, 4})), "");
  EXPECT_EQ(CompareTensors(out[1], IntTensor({2}, {4, 2})), "");
  ExpectNodeError(MakeNode("TopK", 1, 2, 9), {&x}, "k");
  Tensor big = IntTensor({1}, {6});
  ExpectNodeError(MakeNode("TopK", 2, 2, 11), {&x, &big}, "outside");
  Tensor neg = IntTensor({1}, {-1});
  ExpectNodeError(MakeNode("TopK", 2, 2, 11), {&x, &neg}, "outside");
  // NaN sorts above every number without breaking the sort.
  Tensor nan = FloatTensor({4}, {1, NAN, 3, NAN});
  Tensor k3 = IntTensor({1}, {3});
  out = MustRun(MakeNode("TopK", 2, 2, 11), {&nan, &k3});
  EXPECT_EQ(CompareTensors(out[1], IntTensor({3}, {1, 3, 2})), "");
}

TEST(MiscTest, Costs) {
  Node n = MakeNode("TopK", 2, 2, 11);
  auto k = FindKernel("", "TopK")(n);
  Cost c = (*k)->EstimateCost({{DataType::kFloat32, {4, 64}}, {DataType::kInt64, {1}}},
                              {{DataType::kFloat32, {4, 8}}, {DataType::kInt64, {4, 8}}});
  EXPECT_EQ(c.flops, 256 * 3);
  auto cs = FindKernel("", "CumSum")(MakeNode("CumSum", 2, 1, 14));
  c = (*cs)->EstimateCost({{DataType::kFloat32, {10}}, {DataType::kInt64, {}}},
                          {{DataType::kFloat32, {10}}});
  EXPECT_EQ(c.flops, 10);
  EXPECT_EQ(c.bytes, 80);
  auto w = FindKernel("", "Where")(MakeNode("Where", 3, 1));
  c = (*w)->EstimateCost(
      {{DataType::kBool, {10}}, {DataType::kFloat32, {10}}, {DataType::kFloat32, {10}}},
      {{DataType::kFloat32, {10}}});
  EXPECT_EQ(c.flops, 0);
  EXPECT_EQ(c.bytes, 10 + 40 + 40 + 40);
}

}  // namespace
}  // namespace opscope::engine::testing
