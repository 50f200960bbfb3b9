// Tests of the shape kernels (Reshape, Flatten, Squeeze, Unsqueeze, Shape, Size, Expand, Tile,
// Concat, Split, Slice), the generators (Constant, ConstantOfShape, Range, NonZero) and Pad:
// opset variants (attributes that became inputs), naive twins on random odd shapes, bad input.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "engine/ops/common.h"
#include "engine/ops/layout_copy.h"
#include "engine/testing/kernel_runner.h"

namespace opscope::engine {
namespace {

using testing::FloatAttr;
using testing::FloatTensor;
using testing::IntAttr;
using testing::IntsAttr;
using testing::IntTensor;
using testing::MakeNode;
using testing::RandomTensor;
using testing::RunKernel;
using testing::StringAttr;

std::vector<int64_t> Ints(const Tensor& t) { return ReadInts(t); }
std::vector<float> Floats(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}
std::vector<int64_t> Shape(const StatusOr<std::vector<Tensor>>& r, int i = 0) {
  return r.ok() ? (*r)[i].shape() : std::vector<int64_t>{-999};
}

// ------------------------------------------------------------------ Reshape & co

TEST(ReshapeTest, ZeroCopiesMinusOneInfers) {
  Tensor x = RandomTensor({2, 3, 4}, 1);
  Tensor s = IntTensor({3}, {0, -1, 2});
  auto r = RunKernel(MakeNode("Reshape", 2, 1), {&x, &s});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].shape(), (std::vector<int64_t>{2, 6, 2}));
  EXPECT_EQ(Floats((*r)[0]), Floats(x));
}

TEST(ReshapeTest, AllowZeroMakesZeroLiteral) {
  Tensor x(DataType::kFloat32, {0, 3});
  Tensor s = IntTensor({2}, {3, 0});
  Node n = MakeNode("Reshape", 2, 1, 14);
  n.attrs.Set("allowzero", IntAttr(1));
  EXPECT_EQ(Shape(RunKernel(n, {&x, &s})), (std::vector<int64_t>{3, 0}));
  n.attrs.Set("allowzero", IntAttr(0));  // 0 copies dim 1 = 3 -> 9 elements != 0
  EXPECT_FALSE(RunKernel(n, {&x, &s}).ok());
}

TEST(ReshapeTest, Opset4ShapeAttribute) {
  Tensor x = RandomTensor({4, 6}, 1);
  Node n = MakeNode("Reshape", 1, 1, 4);
  n.attrs.Set("shape", IntsAttr({-1, 3}));
  EXPECT_EQ(Shape(RunKernel(n, {&x})), (std::vector<int64_t>{8, 3}));
}

TEST(ReshapeTest, BadShapes) {
  Tensor x = RandomTensor({2, 3}, 1);
  for (auto v : {std::vector<int64_t>{-1, -1}, {4, 2}, {-2, 3}, {0, 0, 0}, {-1, 4}}) {
    Tensor s = IntTensor({static_cast<int64_t>(v.size())}, v);
    auto r = RunKernel(MakeNode("Reshape", 2, 1), {&x, &s});
    ASSERT_FALSE(r.ok()) << ShapeString(v);
    EXPECT_NE(r.status().message().find("Reshape_test"), std::string::npos);
  }
}

TEST(FlattenTest, AxesIncludingNegativeAndZero) {
  Tensor x = RandomTensor({2, 3, 4, 5}, 1);
  const std::pair<int64_t, std::vector<int64_t>> cases[] = {
      {0, {1, 120}}, {1, {2, 60}}, {3, {24, 5}}, {4, {120, 1}}, {-1, {24, 5}}, {-4, {1, 120}}};
  for (const auto& [axis, want] : cases) {
    Node n = MakeNode("Flatten", 1, 1);
    n.attrs.Set("axis", IntAttr(axis));
    EXPECT_EQ(Shape(RunKernel(n, {&x})), want) << axis;
  }
  Node bad = MakeNode("Flatten", 1, 1);
  bad.attrs.Set("axis", IntAttr(5));
  EXPECT_FALSE(RunKernel(bad, {&x}).ok());
}

TEST(SqueezeTest, AttributeBefore13InputFrom13) {
  Tensor x = RandomTensor({1, 3, 1, 5}, 1);
  Node old = MakeNode("Squeeze", 1, 1, 11);
  old.attrs.Set("axes", IntsAttr({-2}));
  EXPECT_EQ(Shape(RunKernel(old, {&x})), (std::vector<int64_t>{1, 3, 5}));
  Tensor axes = IntTensor({1}, {0});
  EXPECT_EQ(Shape(RunKernel(MakeNode("Squeeze", 2, 1, 13), {&x, &axes})),
            (std::vector<int64_t>{3, 1, 5}));
  EXPECT_EQ(Shape(RunKernel(MakeNode("Squeeze", 1, 1, 13), {&x})), (std::vector<int64_t>{3, 5}));
  Tensor bad = IntTensor({1}, {1});  // size 3
  EXPECT_FALSE(RunKernel(MakeNode("Squeeze", 2, 1, 13), {&x, &bad}).ok());
  Tensor oob = IntTensor({1}, {4});
  EXPECT_FALSE(RunKernel(MakeNode("Squeeze", 2, 1, 13), {&x, &oob}).ok());
}

TEST(UnsqueezeTest, UnsortedNegativeAndDuplicateAxes) {
  Tensor x = RandomTensor({3, 4}, 1);
  Tensor axes = IntTensor({3}, {-1, 0, 2});
  EXPECT_EQ(Shape(RunKernel(MakeNode("Unsqueeze", 2, 1, 13), {&x, &axes})),
            (std::vector<int64_t>{1, 3, 1, 4, 1}));
  Node old = MakeNode("Unsqueeze", 1, 1, 11);
  old.attrs.Set("axes", IntsAttr({1}));
  EXPECT_EQ(Shape(RunKernel(old, {&x})), (std::vector<int64_t>{3, 1, 4}));
  Tensor dup = IntTensor({2}, {1, 1});
  EXPECT_FALSE(RunKernel(MakeNode("Unsqueeze", 2, 1, 13), {&x, &dup}).ok());
  Tensor oob = IntTensor({1}, {3});
  EXPECT_FALSE(RunKernel(MakeNode("Unsqueeze", 2, 1, 13), {&x, &oob}).ok());
  EXPECT_FALSE(MakeNode("Unsqueeze", 1, 1, 11).attrs.Has("axes"));
  EXPECT_FALSE(FindKernel("", "Unsqueeze")(MakeNode("Unsqueeze", 1, 1, 11)).ok());
}

TEST(ShapeTest, StartEndFromOpset15) {
  Tensor x = RandomTensor({2, 3, 4, 5}, 1);
  auto all = RunKernel(MakeNode("Shape", 1, 1, 13), {&x});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(Ints((*all)[0]), (std::vector<int64_t>{2, 3, 4, 5}));
  Node n = MakeNode("Shape", 1, 1, 15);
  n.attrs.Set("start", IntAttr(-3));
  n.attrs.Set("end", IntAttr(10));
  auto r = RunKernel(n, {&x});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Ints((*r)[0]), (std::vector<int64_t>{3, 4, 5}));
  n.attrs.Set("start", IntAttr(3));
  n.attrs.Set("end", IntAttr(1));
  EXPECT_EQ(Shape(RunKernel(n, {&x})), (std::vector<int64_t>{0}));
  auto s = RunKernel(MakeNode("Size", 1, 1), {&x});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)[0].rank(), 0);
  EXPECT_EQ((*s)[0].data<int64_t>()[0], 120);
}

// ------------------------------------------------------------------ Expand / Tile

TEST(ExpandTest, BidirectionalBroadcastAllSizes) {
  for (DataType dt : {DataType::kFloat32, DataType::kInt64, DataType::kBool}) {
    Tensor x(dt, {3, 1});
    for (int i = 0; i < 3; ++i)
      std::memcpy(static_cast<char*>(x.raw()) + i * DataTypeSize(dt), &i,
                  DataTypeSize(dt) > 4 ? 4 : DataTypeSize(dt));
    Tensor s = IntTensor({3}, {2, 1, 4});
    auto r = RunKernel(MakeNode("Expand", 2, 1), {&x, &s});
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ((*r)[0].shape(), (std::vector<int64_t>{2, 3, 4}));
    const size_t es = DataTypeSize(dt);
    for (int64_t i = 0; i < 24; ++i) {
      const int64_t row = (i / 4) % 3;
      EXPECT_EQ(std::memcmp(static_cast<const char*>((*r)[0].raw()) + i * es,
                            static_cast<const char*>(x.raw()) + row * es, es),
                0);
    }
  }
  Tensor x = RandomTensor({3, 2}, 1);
  Tensor bad = IntTensor({2}, {3, 4});
  EXPECT_FALSE(RunKernel(MakeNode("Expand", 2, 1), {&x, &bad}).ok());
}

TEST(TileTest, MatchesNaiveTwin) {
  std::mt19937 rng(3);
  for (int iter = 0; iter < 40; ++iter) {
    const int r = 1 + static_cast<int>(rng() % 4);
    std::vector<int64_t> shape(r), rep(r);
    for (int i = 0; i < r; ++i) {
      shape[i] = 1 + rng() % 7;
      rep[i] = rng() % 4;
    }
    Tensor x = RandomTensor(shape, iter);
    Tensor rt = IntTensor({r}, rep);
    auto out = RunKernel(MakeNode("Tile", 2, 1), {&x, &rt});
    ASSERT_TRUE(out.ok()) << out.status().message();
    const Tensor& y = (*out)[0];
    std::vector<int64_t> os(r);
    for (int i = 0; i < r; ++i) os[i] = shape[i] * rep[i];
    ASSERT_EQ(y.shape(), os);
    const std::vector<int64_t> is = ContiguousStrides(shape);
    for (int64_t o = 0; o < y.numel(); ++o) {
      int64_t rem = o, off = 0;
      for (int d = r - 1; d >= 0; --d) {
        off += ((rem % os[d]) % shape[d]) * is[d];
        rem /= os[d];
      }
      ASSERT_EQ(y.data<float>()[o], x.data<float>()[off]);
    }
  }
  Tensor x = RandomTensor({2, 2}, 1);
  Tensor bad = IntTensor({1}, {2});
  EXPECT_FALSE(RunKernel(MakeNode("Tile", 2, 1), {&x, &bad}).ok());
}

// ------------------------------------------------------------------ Concat / Split

TEST(ConcatTest, RandomAxesAgainstTwinAndSplitRoundTrip) {
  std::mt19937 rng(5);
  for (int iter = 0; iter < 30; ++iter) {
    const int r = 1 + static_cast<int>(rng() % 4);
    std::vector<int64_t> base(r);
    for (int64_t& d : base) d = 1 + rng() % 6;
    const int axis = static_cast<int>(rng() % r);
    const int k = 1 + static_cast<int>(rng() % 3);
    std::vector<Tensor> ins;
    std::vector<int64_t> lens;
    for (int i = 0; i < k; ++i) {
      std::vector<int64_t> s = base;
      s[axis] = rng() % 5;  // zero-length pieces allowed
      lens.push_back(s[axis]);
      ins.push_back(RandomTensor(s, iter * 10 + i));
    }
    std::vector<const Tensor*> ptrs;
    for (const Tensor& t : ins) ptrs.push_back(&t);
    Node n = MakeNode("Concat", k, 1);
    n.attrs.Set("axis", IntAttr(axis - r));  // negative axis
    auto out = RunKernel(n, ptrs);
    ASSERT_TRUE(out.ok()) << out.status().message();
    const Tensor& y = (*out)[0];
    // Twin: walk the output, find which input each axis coordinate belongs to.
    const std::vector<int64_t> ys = ContiguousStrides(y.shape());
    for (int64_t o = 0; o < y.numel(); ++o) {
      std::vector<int64_t> c(r);
      int64_t rem = o;
      for (int d = r - 1; d >= 0; --d) {
        c[d] = rem % y.dim(d);
        rem /= y.dim(d);
      }
      int piece = 0;
      while (c[axis] >= lens[piece]) c[axis] -= lens[piece++];
      const std::vector<int64_t> is = ContiguousStrides(ins[piece].shape());
      int64_t off = 0;
      for (int d = 0; d < r; ++d) off += c[d] * is[d];
      ASSERT_EQ(y.data<float>()[o], ins[piece].data<float>()[off]);
    }
    // Split it back with a 'split' input (opset 13) and compare.
    Tensor sp = IntTensor({k}, lens);
    Node s = MakeNode("Split", 2, k, 13);
    s.attrs.Set("axis", IntAttr(axis));
    auto back = RunKernel(s, {&y, &sp});
    ASSERT_TRUE(back.ok()) << back.status().message();
    for (int i = 0; i < k; ++i) EXPECT_EQ(Floats((*back)[i]), Floats(ins[i]));
  }
}

TEST(ConcatTest, MismatchedShapesAndBadAxis) {
  Tensor a = RandomTensor({2, 3}, 1), b = RandomTensor({3, 3}, 2);
  Node n = MakeNode("Concat", 2, 1);
  n.attrs.Set("axis", IntAttr(1));
  EXPECT_FALSE(RunKernel(n, {&a, &b}).ok());
  n.attrs.Set("axis", IntAttr(2));
  EXPECT_FALSE(RunKernel(n, {&a, &a}).ok());
  EXPECT_FALSE(FindKernel("", "Concat")(MakeNode("Concat", 2, 1)).ok());  // axis required
}

// Empty inputs with huge leading dimensions: nothing to copy, so the kernel must not walk the
// 2^42 outer rows (it did, for minutes, before; found by model_struct_fuzz as
// Concat([1, 4, 2^32, 0]) over the last axis).
TEST(ConcatTest, EmptyInputsWithHugeLeadingDimensionsCopyNothing) {
  const int64_t huge = int64_t{1} << 42;
  Tensor a(DataType::kFloat32, {huge, 2, 0}), b(DataType::kFloat32, {huge, 3, 0});
  Node n = MakeNode("Concat", 2, 1);
  n.attrs.Set("axis", IntAttr(1));
  auto r = RunKernel(n, {&a, &b});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].shape(), (std::vector<int64_t>{huge, 5, 0}));
  n.attrs.Set("axis", IntAttr(-1));
  Tensor c(DataType::kFloat32, {huge, 2, 0});
  r = RunKernel(n, {&a, &c});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].shape(), (std::vector<int64_t>{huge, 2, 0}));
}

TEST(SplitTest, OpsetVariants) {
  Tensor x = FloatTensor({6}, {1, 2, 3, 4, 5, 6});
  Node eq = MakeNode("Split", 1, 3, 11);
  auto r = RunKernel(eq, {&x});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Floats((*r)[2]), (std::vector<float>{5, 6}));
  Node attr = MakeNode("Split", 1, 2, 11);
  attr.attrs.Set("split", IntsAttr({4, 2}));
  r = RunKernel(attr, {&x});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Floats((*r)[0]), (std::vector<float>{1, 2, 3, 4}));
  Node num = MakeNode("Split", 1, 4, 18);
  num.attrs.Set("num_outputs", IntAttr(4));
  r = RunKernel(num, {&x});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Shape(r, 3), (std::vector<int64_t>{0}));
  EXPECT_EQ(Floats((*r)[2]), (std::vector<float>{5, 6}));
  EXPECT_FALSE(RunKernel(MakeNode("Split", 1, 4, 13), {&x}).ok());  // 6 not divisible by 4
  Tensor bad = IntTensor({2}, {4, 1});
  EXPECT_FALSE(RunKernel(MakeNode("Split", 2, 2, 13), {&x, &bad}).ok());
  // Sizes whose sum overflows int64 (a fuzz finding: UBSan signed overflow, and a wrapped sum
  // could equal the axis length) are refused before they are added up.
  Tensor huge = IntTensor({2}, {INT64_MAX - 2, 9});
  auto h = RunKernel(MakeNode("Split", 2, 2, 13), {&x, &huge});
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("more than the axis length 6"), std::string::npos)
      << h.status().message();
}

// ------------------------------------------------------------------ Slice

// Python's slice.indices() — an independent statement of the same clamping rules.
std::vector<int64_t> PySlice(int64_t start, int64_t stop, int64_t step, int64_t dim) {
  auto fix = [&](int64_t v, int64_t lower, int64_t upper) {
    if (v < 0) {
      v += dim;
      if (v < lower) v = lower;
    } else if (v > upper) {
      v = upper;
    }
    return v;
  };
  const int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? dim : dim - 1;
  start = fix(start, lower, upper);
  stop = fix(stop, lower, upper);
  std::vector<int64_t> v;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) v.push_back(i);
  return v;
}

TEST(SliceTest, RandomStartsEndsStepsAgainstPythonSemantics) {
  std::mt19937 rng(11);
  const int64_t bigs[] = {INT64_MIN, -1000, 1000, INT64_MAX};
  for (int iter = 0; iter < 200; ++iter) {
    const int r = 1 + static_cast<int>(rng() % 4);
    std::vector<int64_t> shape(r);
    for (int64_t& d : shape) d = 1 + rng() % 9;
    Tensor x = RandomTensor(shape, iter);
    std::vector<int64_t> starts, ends, axes, steps;
    std::vector<std::vector<int64_t>> picks(r);
    for (int d = 0; d < r; ++d) {
      picks[d].resize(shape[d]);
      for (int64_t i = 0; i < shape[d]; ++i) picks[d][i] = i;
    }
    for (int d = 0; d < r; ++d) {
      if (rng() % 3 == 0) continue;  // axis not sliced
      const int64_t dim = shape[d];
      int64_t step = static_cast<int64_t>(rng() % 7) - 3;
      if (step == 0) step = 1;
      // Negative steps avoid starts below -dim, where ONNX (clamp to 0) and Python differ.
      int64_t st = rng() % 5 == 0 && step > 0 ? bigs[rng() % 4]
                                              : static_cast<int64_t>(rng() % (2 * dim + 1)) - dim;
      int64_t en =
          rng() % 5 == 0 ? bigs[rng() % 4] : static_cast<int64_t>(rng() % (2 * dim + 3)) - dim - 1;
      if (step < 0 && st == INT64_MIN) st = -1;
      starts.push_back(st);
      ends.push_back(en);
      axes.push_back(rng() % 2 ? d : d - r);
      steps.push_back(step);
      picks[d] = PySlice(st, en, step, dim);
    }
    const int64_t k = static_cast<int64_t>(starts.size());
    Tensor ts = IntTensor({k}, starts), te = IntTensor({k}, ends), ta = IntTensor({k}, axes),
           tp = IntTensor({k}, steps);
    auto out = RunKernel(MakeNode("Slice", 5, 1), {&x, &ts, &te, &ta, &tp});
    ASSERT_TRUE(out.ok()) << out.status().message();
    const Tensor& y = (*out)[0];
    std::vector<int64_t> os(r);
    for (int d = 0; d < r; ++d) os[d] = static_cast<int64_t>(picks[d].size());
    ASSERT_EQ(y.shape(), os) << "iter " << iter;
    const std::vector<int64_t> is = ContiguousStrides(shape);
    for (int64_t o = 0; o < y.numel(); ++o) {
      int64_t rem = o, off = 0;
      for (int d = r - 1; d >= 0; --d) {
        off += picks[d][rem % os[d]] * is[d];
        rem /= os[d];
      }
      ASSERT_EQ(y.data<float>()[o], x.data<float>()[off]);
    }
  }
}

TEST(SliceTest, Opset9AttributesAndInt64Data) {
  Tensor x = IntTensor({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  Node n = MakeNode("Slice", 1, 1, 9);
  n.attrs.Set("starts", IntsAttr({1}));
  n.attrs.Set("ends", IntsAttr({INT64_MAX}));
  n.attrs.Set("axes", IntsAttr({1}));
  auto r = RunKernel(n, {&x});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Ints((*r)[0]), (std::vector<int64_t>{1, 2, 3, 5, 6, 7}));
}

TEST(SliceTest, BadInput) {
  Tensor x = RandomTensor({3, 3}, 1);
  Tensor s = IntTensor({1}, {0}), e = IntTensor({1}, {2}), a = IntTensor({1}, {2}),
         z = IntTensor({1}, {0}), s2 = IntTensor({2}, {0, 0});
  EXPECT_FALSE(RunKernel(MakeNode("Slice", 4, 1), {&x, &s, &e, &a}).ok());  // axis 2 of rank 2
  EXPECT_FALSE(RunKernel(MakeNode("Slice", 5, 1), {&x, &s, &e, nullptr, &z}).ok());  // step 0
  EXPECT_FALSE(RunKernel(MakeNode("Slice", 3, 1), {&x, &s2, &e}).ok());  // length mismatch
}

// ------------------------------------------------------------------ generators

TEST(ConstantTest, AllValueKinds) {
  Node n = MakeNode("Constant", 0, 1);
  n.attrs.Set("value_floats", testing::FloatsAttr({1.5f, 2.5f}));
  auto r = RunKernel(n, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Floats((*r)[0]), (std::vector<float>{1.5f, 2.5f}));
  Node i = MakeNode("Constant", 0, 1);
  i.attrs.Set("value_int", IntAttr(7));
  r = RunKernel(i, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].rank(), 0);
  EXPECT_EQ(Ints((*r)[0]), (std::vector<int64_t>{7}));
  Node t = MakeNode("Constant", 0, 1);
  AttrValue tv{};
  tv.kind = AttrValue::Kind::kTensor;
  tv.t = IntTensor({2, 2}, {1, 2, 3, 4});
  t.attrs.Set("value", tv);
  r = RunKernel(t, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Ints((*r)[0]), (std::vector<int64_t>{1, 2, 3, 4}));
  Node sp = MakeNode("Constant", 0, 1);
  sp.attrs.Set("sparse_value", tv);
  auto bad = FindKernel("", "Constant")(sp);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("sparse_value"), std::string::npos);
  EXPECT_FALSE(FindKernel("", "Constant")(MakeNode("Constant", 0, 1)).ok());
}

TEST(ConstantOfShapeTest, DefaultAndTypedValue) {
  Tensor s = IntTensor({2}, {2, 3});
  auto r = RunKernel(MakeNode("ConstantOfShape", 1, 1), {&s});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dtype(), DataType::kFloat32);
  EXPECT_EQ(Floats((*r)[0]), std::vector<float>(6, 0.f));
  Node n = MakeNode("ConstantOfShape", 1, 1);
  AttrValue v{};
  v.kind = AttrValue::Kind::kTensor;
  v.t = IntTensor({1}, {-5});
  n.attrs.Set("value", v);
  r = RunKernel(n, {&s});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Ints((*r)[0]), std::vector<int64_t>(6, -5));
  Tensor neg = IntTensor({1}, {-1});
  EXPECT_FALSE(RunKernel(n, {&neg}).ok());
  Tensor huge = IntTensor({3}, {INT64_MAX / 2, 4, 4});
  EXPECT_FALSE(RunKernel(n, {&huge}).ok());
}

TEST(RangeTest, FloatIntAndErrors) {
  Tensor a = FloatTensor({}, {1}), b = FloatTensor({}, {2}), c = FloatTensor({}, {0.25f});
  auto r = RunKernel(MakeNode("Range", 3, 1), {&a, &b, &c});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Floats((*r)[0]), (std::vector<float>{1, 1.25f, 1.5f, 1.75f}));
  Tensor s = IntTensor({}, {10}), l = IntTensor({}, {4}), d = IntTensor({}, {-3});
  r = RunKernel(MakeNode("Range", 3, 1), {&s, &l, &d});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Ints((*r)[0]), (std::vector<int64_t>{10, 7}));
  Tensor z = IntTensor({}, {0});
  EXPECT_FALSE(RunKernel(MakeNode("Range", 3, 1), {&s, &l, &z}).ok());
  EXPECT_FALSE(RunKernel(MakeNode("Range", 3, 1), {&s, &b, &d}).ok());  // mixed types
}

TEST(NonZeroTest, CoordinatesInRowMajorOrder) {
  Tensor x = FloatTensor({2, 3}, {0, 1, -0.f, 2, 0, 3});
  auto r = RunKernel(MakeNode("NonZero", 1, 1), {&x});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Ints((*r)[0]), (std::vector<int64_t>{0, 1, 1, 1, 0, 2}));
  Tensor b(DataType::kBool, {4});
  b.data<uint8_t>()[2] = 1;
  r = RunKernel(MakeNode("NonZero", 1, 1), {&b});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Ints((*r)[0]), (std::vector<int64_t>{2}));
}

// ------------------------------------------------------------------ Pad

// numpy.pad-style twin: per output element, map each coordinate back with the mode's rule.
Tensor NaivePad(const Tensor& x, const std::vector<int64_t>& pads, const std::string& mode,
                float v) {
  const int r = x.rank();
  std::vector<int64_t> os(r);
  for (int d = 0; d < r; ++d) os[d] = x.dim(d) + pads[d] + pads[d + r];
  Tensor y(DataType::kFloat32, os);
  const std::vector<int64_t> is = ContiguousStrides(x.shape());
  for (int64_t o = 0; o < y.numel(); ++o) {
    int64_t rem = o, off = 0;
    bool outside = false;
    for (int d = r - 1; d >= 0; --d) {
      int64_t i = rem % os[d] - pads[d];
      rem /= os[d];
      const int64_t n = x.dim(d);
      if (i < 0 || i >= n) {
        if (mode == "constant")
          outside = true;
        else if (mode == "edge")
          i = i < 0 ? 0 : n - 1;
        else if (mode == "wrap")
          i = ((i % n) + n) % n;
        else  // reflect, bouncing as many times as needed
          while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
      }
      off += i * is[d];
    }
    y.data<float>()[o] = outside ? v : x.data<float>()[off];
  }
  return y;
}

TEST(PadTest, ModesAgainstTwinIncludingNegativePads) {
  std::mt19937 rng(17);
  for (const std::string mode : {"constant", "reflect", "edge", "wrap"}) {
    for (int iter = 0; iter < 25; ++iter) {
      const int r = 1 + static_cast<int>(rng() % 4);
      std::vector<int64_t> shape(r), pads(2 * r);
      for (int64_t& d : shape) d = 2 + rng() % 6;
      for (int d = 0; d < r; ++d) {
        pads[d] = static_cast<int64_t>(rng() % 5) - (mode == "constant" ? 1 : 0);
        pads[d + r] = static_cast<int64_t>(rng() % 5) - (mode == "constant" ? 1 : 0);
      }
      Tensor x = RandomTensor(shape, iter);
      Tensor p = IntTensor({2 * r}, pads);
      Tensor cv = FloatTensor({}, {2.5f});
      Node n = MakeNode("Pad", 3, 1, 13);
      n.attrs.Set("mode", StringAttr(mode));
      auto out = RunKernel(n, {&x, &p, &cv});
      ASSERT_TRUE(out.ok()) << out.status().message();
      EXPECT_EQ(testing::CompareFloat((*out)[0], NaivePad(x, pads, mode, 2.5f), 0, 0), "")
          << mode << " " << ShapeString(shape) << " pads " << ShapeString(pads);
    }
  }
}

TEST(PadTest, Opset2AttributesAndInt64Data) {
  Tensor x = IntTensor({2}, {7, 8});
  Node n = MakeNode("Pad", 1, 1, 2);
  n.attrs.Set("pads", IntsAttr({1, 2}));
  n.attrs.Set("value", FloatAttr(-1));
  auto r = RunKernel(n, {&x});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Ints((*r)[0]), (std::vector<int64_t>{-1, 7, 8, -1, -1}));
}

TEST(PadTest, BadInput) {
  Tensor x = RandomTensor({2, 2}, 1);
  Tensor short_pads = IntTensor({2}, {1, 1});
  EXPECT_FALSE(RunKernel(MakeNode("Pad", 2, 1, 13), {&x, &short_pads}).ok());
  Tensor crop = IntTensor({4}, {-3, 0, 0, 0});
  EXPECT_FALSE(RunKernel(MakeNode("Pad", 2, 1, 13), {&x, &crop}).ok());
  // An empty [2^63-1, 0] input padded by one overflowed int64 (the same class as MaxPool's).
  Tensor huge(DataType::kFloat32, {std::numeric_limits<int64_t>::max(), 0});
  Tensor one = IntTensor({4}, {0, 0, 1, 0});
  auto r = RunKernel(MakeNode("Pad", 2, 1, 13), {&huge, &one});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("axis 0 of size 9223372036854775807 is out of any sensible "
                                      "range"),
            std::string::npos)
      << r.status().message();
  Node n = MakeNode("Pad", 2, 1, 13);
  n.attrs.Set("mode", StringAttr("mirror"));
  EXPECT_FALSE(FindKernel("", "Pad")(n).ok());
}

}  // namespace
}  // namespace opscope::engine
