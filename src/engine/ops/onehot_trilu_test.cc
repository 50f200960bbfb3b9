// OneHot and Trilu against naive twins (index arithmetic per element, numpy's definitions).
#include <gtest/gtest.h>

#include <vector>

#include "engine/ops/common.h"
#include "engine/ops/elementwise_test_util.h"
#include "engine/testing/kernel_runner.h"

namespace opscope::engine::testing {
namespace {

using Shape = std::vector<int64_t>;

// numpy.triu / numpy.tril over the last two dimensions.
Tensor NaiveTrilu(const Tensor& x, int64_t k, bool upper) {
  Tensor y(x.dtype(), x.shape());
  const int64_t r = x.rank(), rows = x.shape()[r - 2], cols = x.shape()[r - 1];
  for (int64_t f = 0; f < x.numel(); ++f) {
    std::vector<int64_t> idx = Unravel(f, x.shape());
    const int64_t i = idx[r - 2], j = idx[r - 1];
    (void)rows;
    (void)cols;
    const bool keep = upper ? j - i >= k : j - i <= k;
    y.data<float>()[f] = keep ? x.data<float>()[f] : 0.0f;
  }
  return y;
}

TEST(TriluTest, MatchesNaiveForEveryDiagonal) {
  uint32_t seed = 3;
  for (const Shape& s : {Shape{1, 1}, Shape{4, 7}, Shape{7, 4}, Shape{3, 5, 5}, Shape{2, 0, 3},
                         Shape{2, 3, 13, 127}}) {
    Tensor x = RandomTensor(s, seed++, -1, 1);
    for (bool upper : {true, false}) {
      for (int64_t k : {-200, -3, -1, 0, 1, 2, 6, 200}) {
        Node n = MakeNode("Trilu", 2, 1, 14);
        n.attrs.Set("upper", IntAttr(upper ? 1 : 0));
        Tensor kt = IntTensor({}, {k});
        auto out = MustRun(n, {&x, &kt});
        ASSERT_EQ(out.size(), 1u);
        EXPECT_EQ(CompareTensors(out[0], NaiveTrilu(x, k, upper), 0, 0), "")
            << ShapeString(s) << " k=" << k << " upper=" << upper;
      }
    }
    auto out = MustRun(MakeNode("Trilu", 1, 1, 14), {&x});  // defaults: upper, k = 0
    EXPECT_EQ(CompareTensors(out[0], NaiveTrilu(x, 0, true), 0, 0), "");
  }
  // Other element widths move unchanged.
  Tensor xi = IntTensor({2, 2}, {1, 2, 3, 4});
  Node lower = MakeNode("Trilu", 1, 1, 14);
  lower.attrs.Set("upper", IntAttr(0));
  EXPECT_EQ(CompareTensors(MustRun(lower, {&xi})[0], IntTensor({2, 2}, {1, 0, 3, 4})), "");
  Tensor v = FloatTensor({3}, {1, 2, 3});
  ExpectNodeError(MakeNode("Trilu", 1, 1, 14), {&v}, "rank");
  Tensor x2 = FloatTensor({2, 2}, {1, 2, 3, 4});
  Tensor kk = IntTensor({2}, {0, 1});
  ExpectNodeError(MakeNode("Trilu", 2, 1, 14), {&x2, &kk}, "k must");
}

// One-hot by definition: out[..., d, ...] = on if d == (idx < 0 ? idx + depth : idx).
Tensor NaiveOneHot(const std::vector<double>& ind, const Shape& ishape, int64_t depth, int64_t axis,
                   float off, float on) {
  Shape oshape = ishape;
  const int64_t rank = static_cast<int64_t>(ishape.size()) + 1;
  if (axis < 0) axis += rank;
  oshape.insert(oshape.begin() + axis, depth);
  Tensor y(DataType::kFloat32, oshape);
  for (int64_t f = 0; f < y.numel(); ++f) {
    std::vector<int64_t> idx = Unravel(f, oshape);
    const int64_t d = idx[axis];
    idx.erase(idx.begin() + axis);
    int64_t v = static_cast<int64_t>(ind[Ravel(idx, ishape)]);
    if (v < 0) v += depth;
    y.data<float>()[f] = v == d ? on : off;
  }
  return y;
}

TEST(OneHotTest, MatchesNaiveForEveryAxis) {
  Tensor values = FloatTensor({2}, {-1, 5});
  uint32_t seed = 9;
  for (const Shape& s : {Shape{}, Shape{7}, Shape{3, 4}, Shape{2, 3, 5}}) {
    const int64_t depth = 6;
    Tensor ind = RandomTyped<int64_t>(DataType::kInt64, s, seed++, -8, 8);  // some out of range
    std::vector<double> iv(ind.data<int64_t>(), ind.data<int64_t>() + ind.numel());
    const int64_t rank = static_cast<int64_t>(s.size()) + 1;
    for (int64_t axis = -rank; axis < rank; ++axis) {
      Node n = MakeNode("OneHot", 3, 1, 11);
      n.attrs.Set("axis", IntAttr(axis));
      Tensor dt = IntTensor({1}, {depth});
      auto out = MustRun(n, {&ind, &dt, &values});
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(CompareTensors(out[0], NaiveOneHot(iv, s, depth, axis, -1, 5), 0, 0), "")
          << ShapeString(s) << " axis " << axis;
    }
  }
  // Float indices are truncated, float depth too; the output takes values' type.
  Tensor fi = FloatTensor({3}, {1.9f, -0.5f, 2.0f});
  Tensor fd = FloatTensor({}, {3.0f});
  Tensor iv = IntTensor({2}, {0, 1});
  auto out = MustRun(MakeNode("OneHot", 3, 1, 11), {&fi, &fd, &iv});
  EXPECT_EQ(CompareTensors(out[0], IntTensor({3, 3}, {0, 1, 0, 1, 0, 0, 0, 0, 1})), "");
  // Errors name the node.
  Tensor bad_values = FloatTensor({3}, {0, 1, 2});
  ExpectNodeError(MakeNode("OneHot", 3, 1, 11), {&fi, &fd, &bad_values}, "values");
  Tensor zero = FloatTensor({}, {0});
  ExpectNodeError(MakeNode("OneHot", 3, 1, 11), {&fi, &zero, &iv}, "depth");
  Node far = MakeNode("OneHot", 3, 1, 11);
  far.attrs.Set("axis", IntAttr(3));
  ExpectNodeError(far, {&fi, &fd, &iv}, "axis");
}

// Empty indices with a huge leading dimension: an empty output, and no walk over its 2^42
// outer rows.
TEST(OneHotTest, EmptyIndicesWithHugeLeadingDimensionWriteNothing) {
  const int64_t huge = int64_t{1} << 42;
  Tensor ind(DataType::kInt64, {huge, 0}), depth = IntTensor({1}, {3});
  Tensor values = FloatTensor({2}, {0, 1});
  Node n = MakeNode("OneHot", 3, 1, 11);
  n.attrs.Set("axis", IntAttr(1));
  auto out = MustRun(n, {&ind, &depth, &values});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (Shape{huge, 3, 0}));
}

}  // namespace
}  // namespace opscope::engine::testing
