// Gather, GatherElements, GatherND, ScatterND, ScatterElements and Scatter against naive twins
// on random odd shapes, plus index validation (out of range -> error naming the node).
#include <gtest/gtest.h>

#include <random>

#include "engine/ops/common.h"
#include "engine/ops/layout_copy.h"
#include "engine/testing/kernel_runner.h"

namespace opscope::engine {
namespace {

using testing::IntAttr;
using testing::IntTensor;
using testing::MakeNode;
using testing::RandomTensor;
using testing::RunKernel;
using testing::StringAttr;

std::vector<int64_t> Coords(int64_t o, const std::vector<int64_t>& shape) {
  std::vector<int64_t> c(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    c[d] = o % shape[d];
    o /= shape[d];
  }
  return c;
}

int64_t Offset(const std::vector<int64_t>& c, const std::vector<int64_t>& shape) {
  int64_t off = 0;
  for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + c[d];
  return off;
}

Tensor RandomIndices(std::vector<int64_t> shape, int64_t dim, std::mt19937& rng) {
  Tensor t(DataType::kInt64, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<int64_t>()[i] = static_cast<int64_t>(rng() % (2 * dim)) - dim;  // negatives too
  return t;
}

TEST(GatherTest, RandomAxesAgainstTwin) {
  std::mt19937 rng(1);
  for (int iter = 0; iter < 60; ++iter) {
    const int r = 1 + static_cast<int>(rng() % 4);
    std::vector<int64_t> shape(r);
    for (int64_t& d : shape) d = 1 + rng() % 7;
    const int axis = static_cast<int>(rng() % r);
    std::vector<int64_t> ishape(rng() % 3);
    for (int64_t& d : ishape) d = 1 + rng() % 5;
    Tensor x = RandomTensor(shape, iter);
    Tensor idx = RandomIndices(ishape, shape[axis], rng);
    Node n = MakeNode("Gather", 2, 1);
    n.attrs.Set("axis", IntAttr(axis - (iter % 2 ? r : 0)));
    auto out = RunKernel(n, {&x, &idx});
    ASSERT_TRUE(out.ok()) << out.status().message();
    const Tensor& y = (*out)[0];
    for (int64_t o = 0; o < y.numel(); ++o) {
      std::vector<int64_t> c = Coords(o, y.shape()), src;
      src.assign(c.begin(), c.begin() + axis);
      std::vector<int64_t> ic(c.begin() + axis, c.begin() + axis + ishape.size());
      int64_t i = idx.data<int64_t>()[Offset(ic, ishape)];
      src.push_back(i < 0 ? i + shape[axis] : i);
      src.insert(src.end(), c.begin() + axis + ishape.size(), c.end());
      ASSERT_EQ(y.data<float>()[o], x.data<float>()[Offset(src, shape)]);
    }
  }
}

TEST(GatherTest, OutOfRangeIndexIsAnError) {
  Tensor x = RandomTensor({3, 4}, 1);
  for (int64_t bad : {3, -4, 100}) {
    Tensor idx = IntTensor({1}, {bad});
    auto r = RunKernel(MakeNode("Gather", 2, 1), {&x, &idx});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("Gather_test"), std::string::npos);
    EXPECT_NE(r.status().message().find(std::to_string(bad)), std::string::npos);
  }
  Tensor f = RandomTensor({1}, 1);
  EXPECT_FALSE(RunKernel(MakeNode("Gather", 2, 1), {&x, &f}).ok());  // float indices
}

TEST(GatherElementsTest, RandomAgainstTwin) {
  std::mt19937 rng(2);
  for (int iter = 0; iter < 60; ++iter) {
    const int r = 1 + static_cast<int>(rng() % 4);
    std::vector<int64_t> shape(r), ishape(r);
    for (int d = 0; d < r; ++d) {
      shape[d] = 1 + rng() % 7;
      ishape[d] = 1 + rng() % shape[d];
    }
    const int axis = static_cast<int>(rng() % r);
    ishape[axis] = 1 + rng() % 9;
    Tensor x = RandomTensor(shape, iter);
    Tensor idx = RandomIndices(ishape, shape[axis], rng);
    Node n = MakeNode("GatherElements", 2, 1);
    n.attrs.Set("axis", IntAttr(axis));
    auto out = RunKernel(n, {&x, &idx});
    ASSERT_TRUE(out.ok()) << out.status().message();
    const Tensor& y = (*out)[0];
    ASSERT_EQ(y.shape(), ishape);
    for (int64_t o = 0; o < y.numel(); ++o) {
      std::vector<int64_t> c = Coords(o, ishape);
      int64_t i = idx.data<int64_t>()[o];
      c[axis] = i < 0 ? i + shape[axis] : i;
      ASSERT_EQ(y.data<float>()[o], x.data<float>()[Offset(c, shape)]);
    }
  }
  Tensor x = RandomTensor({2, 2}, 1);
  Tensor big = IntTensor({2, 2}, {0, 1, 2, 0});
  EXPECT_FALSE(RunKernel(MakeNode("GatherElements", 2, 1), {&x, &big}).ok());
}

TEST(GatherNDTest, BatchDimsAgainstTwin) {
  std::mt19937 rng(3);
  for (int iter = 0; iter < 60; ++iter) {
    const int r = 1 + static_cast<int>(rng() % 4);
    std::vector<int64_t> shape(r);
    for (int64_t& d : shape) d = 1 + rng() % 5;
    const int b = static_cast<int>(rng() % r);  // batch_dims < r
    const int64_t k = 1 + static_cast<int64_t>(rng() % (r - b));
    std::vector<int64_t> ishape(shape.begin(), shape.begin() + b);
    const int extra = static_cast<int>(rng() % 3);
    for (int i = 0; i < extra; ++i) ishape.push_back(1 + rng() % 4);
    ishape.push_back(k);
    Tensor x = RandomTensor(shape, iter);
    Tensor idx(DataType::kInt64, ishape);
    for (int64_t t = 0; t < idx.numel(); ++t) {
      const int64_t dim = shape[b + t % k];
      idx.data<int64_t>()[t] = static_cast<int64_t>(rng() % (2 * dim)) - dim;
    }
    Node n = MakeNode("GatherND", 2, 1);
    n.attrs.Set("batch_dims", IntAttr(b));
    auto out = RunKernel(n, {&x, &idx});
    ASSERT_TRUE(out.ok()) << out.status().message();
    const Tensor& y = (*out)[0];
    const int q = static_cast<int>(ishape.size());
    for (int64_t o = 0; o < y.numel(); ++o) {
      std::vector<int64_t> c = Coords(o, y.shape());
      std::vector<int64_t> tup(c.begin(), c.begin() + (q - 1));
      tup.push_back(0);
      std::vector<int64_t> src(c.begin(), c.begin() + b);
      for (int64_t j = 0; j < k; ++j) {
        tup[q - 1] = j;
        int64_t v = idx.data<int64_t>()[Offset(tup, ishape)];
        src.push_back(v < 0 ? v + shape[b + j] : v);
      }
      src.insert(src.end(), c.begin() + (q - 1), c.end());
      ASSERT_EQ(y.data<float>()[o], x.data<float>()[Offset(src, shape)]) << "iter " << iter;
    }
  }
  Tensor x = RandomTensor({2, 3}, 1);
  Tensor bad = IntTensor({1, 2}, {1, 3});
  EXPECT_FALSE(RunKernel(MakeNode("GatherND", 2, 1), {&x, &bad}).ok());
  Tensor deep = IntTensor({1, 3}, {0, 0, 0});
  EXPECT_FALSE(RunKernel(MakeNode("GatherND", 2, 1), {&x, &deep}).ok());
}

TEST(ScatterNDTest, ReductionsAgainstTwin) {
  std::mt19937 rng(4);
  for (const std::string red : {"none", "add", "mul"}) {
    for (int iter = 0; iter < 30; ++iter) {
      const int r = 1 + static_cast<int>(rng() % 3);
      std::vector<int64_t> shape(r);
      for (int64_t& d : shape) d = 1 + rng() % 5;
      const int64_t k = 1 + static_cast<int64_t>(rng() % r);
      const int64_t m = 1 + rng() % 4;
      Tensor x = RandomTensor(shape, iter);
      Tensor idx(DataType::kInt64, {m, k});
      for (int64_t t = 0; t < idx.numel(); ++t)
        idx.data<int64_t>()[t] = static_cast<int64_t>(rng() % shape[t % k]);
      if (red == "none") {  // duplicate tuples only with reductions, where order is irrelevant
        if (shape[0] < m) continue;
        for (int64_t t = 0; t < m; ++t) idx.data<int64_t>()[t * k] = t;
      }
      std::vector<int64_t> ushape = {m};
      ushape.insert(ushape.end(), shape.begin() + k, shape.end());
      Tensor up = RandomTensor(ushape, iter + 100);
      Node n = MakeNode("ScatterND", 3, 1, 16);
      n.attrs.Set("reduction", StringAttr(red));
      auto out = RunKernel(n, {&x, &idx, &up});
      ASSERT_TRUE(out.ok()) << out.status().message();
      Tensor want(DataType::kFloat32, shape);
      CopyTensorData(x, &want);
      int64_t slice = 1;
      for (int d = static_cast<int>(k); d < r; ++d) slice *= shape[d];
      for (int64_t t = 0; t < m; ++t) {
        std::vector<int64_t> c(r, 0);
        for (int64_t j = 0; j < k; ++j) c[j] = idx.data<int64_t>()[t * k + j];
        const int64_t base = Offset(c, shape);
        for (int64_t s = 0; s < slice; ++s) {
          float& w = want.data<float>()[base + s];
          const float u = up.data<float>()[t * slice + s];
          w = red == "none" ? u : red == "add" ? w + u : w * u;
        }
      }
      EXPECT_EQ(testing::CompareFloat((*out)[0], want, 1e-6f, 1e-6f), "") << red;
    }
  }
  Tensor x = RandomTensor({2, 2}, 1);
  Tensor idx = IntTensor({1, 1}, {2});
  Tensor up = RandomTensor({1, 2}, 2);
  EXPECT_FALSE(RunKernel(MakeNode("ScatterND", 3, 1), {&x, &idx, &up}).ok());
  Tensor idx_ok = IntTensor({1, 1}, {1});
  Tensor up_bad = RandomTensor({1, 3}, 2);
  EXPECT_FALSE(RunKernel(MakeNode("ScatterND", 3, 1), {&x, &idx_ok, &up_bad}).ok());
}

TEST(ScatterElementsTest, AxisReductionAndDeprecatedScatter) {
  std::mt19937 rng(5);
  for (const std::string op : {"ScatterElements", "Scatter"}) {
    for (const std::string red : {"none", "add", "mul"}) {
      if (op == "Scatter" && red != "none") continue;
      for (int iter = 0; iter < 30; ++iter) {
        const int r = 1 + static_cast<int>(rng() % 3);
        std::vector<int64_t> shape(r), ishape(r);
        for (int d = 0; d < r; ++d) {
          shape[d] = 1 + rng() % 6;
          ishape[d] = 1 + rng() % shape[d];
        }
        const int axis = static_cast<int>(rng() % r);
        Tensor x = RandomTensor(shape, iter);
        Tensor idx = RandomIndices(ishape, shape[axis], rng);
        Tensor up = RandomTensor(ishape, iter + 7);
        Node n = MakeNode(op, 3, 1, op == "Scatter" ? 10 : 16);
        n.attrs.Set("axis", IntAttr(axis));
        if (op != "Scatter") n.attrs.Set("reduction", StringAttr(red));
        auto out = RunKernel(n, {&x, &idx, &up});
        ASSERT_TRUE(out.ok()) << out.status().message();
        Tensor want(DataType::kFloat32, shape);
        CopyTensorData(x, &want);
        for (int64_t e = 0; e < idx.numel(); ++e) {  // in order: last write wins for "none"
          std::vector<int64_t> c = Coords(e, ishape);
          int64_t v = idx.data<int64_t>()[e];
          c[axis] = v < 0 ? v + shape[axis] : v;
          float& w = want.data<float>()[Offset(c, shape)];
          const float u = up.data<float>()[e];
          w = red == "none" ? u : red == "add" ? w + u : w * u;
        }
        EXPECT_EQ(testing::CompareFloat((*out)[0], want, 1e-6f, 1e-6f), "") << op << " " << red;
      }
    }
  }
  Tensor x = RandomTensor({3}, 1);
  Tensor idx = IntTensor({1}, {-4});
  Tensor up = RandomTensor({1}, 2);
  EXPECT_FALSE(RunKernel(MakeNode("ScatterElements", 3, 1), {&x, &idx, &up}).ok());
  Node bad = MakeNode("ScatterElements", 3, 1);
  bad.attrs.Set("reduction", StringAttr("avg"));
  EXPECT_FALSE(FindKernel("", "ScatterElements")(bad).ok());
}

}  // namespace
}  // namespace opscope::engine

namespace opscope::engine {
namespace {

TEST(GatherTest, MovesEveryElementSize) {
  for (DataType dt : {DataType::kUint8, DataType::kFloat16, DataType::kInt32, DataType::kInt64}) {
    Tensor x(dt, {4, 3});
    const size_t es = DataTypeSize(dt);
    for (size_t b = 0; b < x.nbytes(); ++b)
      static_cast<uint8_t*>(x.raw())[b] = static_cast<uint8_t>(b);
    Tensor idx = testing::IntTensor({2}, {3, -4});  // rows 3 and 0
    auto out = testing::RunKernel(testing::MakeNode("Gather", 2, 1), {&x, &idx});
    ASSERT_TRUE(out.ok()) << out.status().message();
    const uint8_t* y = static_cast<const uint8_t*>((*out)[0].raw());
    for (size_t b = 0; b < 3 * es; ++b) {
      EXPECT_EQ(y[b], static_cast<uint8_t>(9 * es + b)) << DataTypeName(dt);
      EXPECT_EQ(y[3 * es + b], static_cast<uint8_t>(b)) << DataTypeName(dt);
    }
  }
}

TEST(GatherTest, CostCountsGatheredRowsAndIndices) {
  auto k = FindKernel("", "Gather")(testing::MakeNode("Gather", 2, 1));
  ASSERT_TRUE(k.ok());
  TensorDesc data{DataType::kFloat32, {1000, 64}}, idx{DataType::kInt64, {10}},
      out{DataType::kFloat32, {10, 64}};
  Cost c = (*k)->EstimateCost({data, idx}, {out});
  EXPECT_EQ(c.flops, 0);
  EXPECT_EQ(c.bytes, 2.0 * 10 * 64 * 4 + 10 * 8);  // not the whole 256 KB table
}

}  // namespace
}  // namespace opscope::engine
