// Pooling against a naive twin (every kernel tap, bounds-checked), plus hand-computed sizes,
// Indices/storage_order, integer MaxPool, global pools, costs and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/ops/dnnl_testing.h"

namespace opscope::engine::testing {
namespace {

struct PoolCase {
  std::vector<int64_t> x, k, s, d, pb, pe;
  bool ceil = false, include_pad = false;
};

int64_t OutSize(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, bool ceil) {
  int64_t dk = (k - 1) * d + 1;
  double v = double(in + pb + pe - dk) / double(s);
  int64_t out = (ceil ? int64_t(std::ceil(v)) : int64_t(std::floor(v))) + 1;
  if (ceil && (out - 1) * s >= in + pb) --out;
  return out;
}

// Returns {Y, Indices (row-major or column-major flattened)}.
std::pair<Tensor, Tensor> NaivePool(const Tensor& x, const PoolCase& c, bool max, bool col_major) {
  size_t sp = c.k.size();
  std::vector<int64_t> in(3, 1), k(3, 1), s(3, 1), d(3, 1), pb(3, 0), pe(3, 0), out(3, 1);
  for (size_t j = 0; j < sp; ++j) {
    size_t i = j + 3 - sp;
    in[i] = x.dim(int(j) + 2), k[i] = c.k[j], s[i] = c.s[j], d[i] = c.d[j];
    pb[i] = c.pb[j], pe[i] = c.pe[j];
    out[i] = OutSize(in[i], k[i], s[i], d[i], pb[i], pe[i], c.ceil);
  }
  std::vector<int64_t> ys = {x.dim(0), x.dim(1)};
  for (size_t i = 3 - sp; i < 3; ++i) ys.push_back(out[i]);
  Tensor y(DataType::kFloat32, ys), idx(DataType::kInt64, ys);
  int64_t planes = x.dim(0) * x.dim(1), ip = in[0] * in[1] * in[2];
  int64_t o = 0;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t o0 = 0; o0 < out[0]; ++o0)
      for (int64_t o1 = 0; o1 < out[1]; ++o1)
        for (int64_t o2 = 0; o2 < out[2]; ++o2, ++o) {
          double sum = 0;
          float best = -std::numeric_limits<float>::infinity();
          int64_t best_i = 0, valid = 0, padded = 0;
          for (int64_t k0 = 0; k0 < k[0]; ++k0)
            for (int64_t k1 = 0; k1 < k[1]; ++k1)
              for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                int64_t i0 = o0 * s[0] - pb[0] + k0 * d[0];
                int64_t i1 = o1 * s[1] - pb[1] + k1 * d[1];
                int64_t i2 = o2 * s[2] - pb[2] + k2 * d[2];
                bool in_pad = i0 >= -pb[0] && i0 < in[0] + pe[0] && i1 >= -pb[1] &&
                              i1 < in[1] + pe[1] && i2 >= -pb[2] && i2 < in[2] + pe[2];
                if (in_pad) ++padded;
                if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2])
                  continue;
                ++valid;
                float v = x.data<float>()[p * ip + (i0 * in[1] + i1) * in[2] + i2];
                sum += v;
                if (v > best) {
                  best = v;
                  best_i = col_major ? i0 + i1 * in[0] + i2 * in[0] * in[1]
                                     : (i0 * in[1] + i1) * in[2] + i2;
                  best_i += p * ip;
                }
              }
          y.data<float>()[o] = max ? best : float(sum / double(c.include_pad ? padded : valid));
          idx.data<int64_t>()[o] = best_i;
        }
  return {y, idx};
}

Node PoolNode(const char* op, const PoolCase& c) {
  Node n = MakeNode(op, 1, 1);
  n.attrs.Set("kernel_shape", IntsAttr(c.k));
  n.attrs.Set("strides", IntsAttr(c.s));
  std::vector<int64_t> pads = c.pb;
  pads.insert(pads.end(), c.pe.begin(), c.pe.end());
  n.attrs.Set("pads", IntsAttr(pads));
  if (std::string(op) == "MaxPool") n.attrs.Set("dilations", IntsAttr(c.d));
  n.attrs.Set("ceil_mode", IntAttr(c.ceil));
  n.attrs.Set("count_include_pad", IntAttr(c.include_pad));
  return n;
}

std::vector<PoolCase> Cases() {
  return {
      {{1, 3, 7, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {{2, 2, 13, 7}, {3, 2}, {2, 3}, {1, 1}, {1, 0}, {2, 1}, true},
      {{1, 1, 13, 13}, {2, 3}, {3, 2}, {1, 1}, {0, 2}, {1, 0}, true, true},
      {{1, 4, 127}, {5}, {3}, {1}, {2}, {4}, false, true},
      {{1, 2, 5, 7, 6}, {2, 3, 2}, {1, 2, 2}, {1, 1, 1}, {1, 0, 1}, {0, 2, 1}, true},
      {{1, 1, 1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
      {{1, 2, 4, 4}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, true},
  };
}

TEST(AveragePool, MatchesNaiveTwin) {
  uint32_t seed = 1;
  for (const PoolCase& c : Cases()) {
    Tensor x = RandomTensor(c.x, seed++);
    auto out = RunKernel(PoolNode("AveragePool", c), {&x}, 2);
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ(CompareFloat((*out)[0], NaivePool(x, c, false, false).first, 1e-5f, 1e-5f), "")
        << "rank " << c.x.size() << " ceil " << c.ceil << " include_pad " << c.include_pad;
  }
}

TEST(MaxPool, MatchesNaiveTwinWithDilationsAndIndices) {
  uint32_t seed = 50;
  auto cases = Cases();
  cases.push_back({{1, 3, 13, 13}, {3, 2}, {2, 1}, {2, 3}, {2, 1}, {0, 1}, true});
  cases.push_back({{2, 1, 127}, {4}, {2}, {3}, {3}, {1}, true});
  for (const PoolCase& c : cases) {
    for (int order = 0; order < 2; ++order) {
      Tensor x = RandomTensor(c.x, seed++);
      Node n = PoolNode("MaxPool", c);
      n.attrs.Set("storage_order", IntAttr(order));
      n.outputs.push_back(9);
      auto out = RunKernel(n, {&x}, 2);
      ASSERT_TRUE(out.ok()) << out.status().message();
      auto [ry, ri] = NaivePool(x, c, true, order == 1);
      EXPECT_EQ(CompareFloat((*out)[0], ry, 0, 0), "");
      ASSERT_EQ((*out)[1].shape(), ri.shape());
      for (int64_t i = 0; i < ri.numel(); ++i)
        ASSERT_EQ((*out)[1].data<int64_t>()[i], ri.data<int64_t>()[i]) << i << " order " << order;
      // Without the Indices output the fast path must agree.
      auto plain = RunKernel(PoolNode("MaxPool", c), {&x});
      ASSERT_TRUE(plain.ok());
      EXPECT_EQ(CompareFloat((*plain)[0], ry, 0, 0), "");
    }
  }
}

TEST(Pool, HandComputedSizesAndValues) {
  // ONNX's averagepool_2d_ceil example: 4x4, k3 s2, ceil -> 2x2.
  Tensor x = FloatTensor({1, 1, 4, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  Node n = MakeNode("AveragePool", 1, 1);
  n.attrs.Set("kernel_shape", IntsAttr({3, 3}));
  n.attrs.Set("strides", IntsAttr({2, 2}));
  n.attrs.Set("ceil_mode", IntAttr(1));
  auto out = RunKernel(n, {&x});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(CompareFloat((*out)[0], FloatTensor({1, 1, 2, 2}, {6, 7.5f, 12, 13.5f})), "");
  // SAME_UPPER, k3 s2 on 5x5 -> 3x3, pads (1,1); SAME_LOWER on 4x4 k2 s1 puts the pad first.
  Node m = MakeNode("MaxPool", 1, 1);
  m.attrs.Set("kernel_shape", IntsAttr({2, 2}));
  m.attrs.Set("auto_pad", StringAttr("SAME_LOWER"));
  auto mo = RunKernel(m, {&x});
  ASSERT_TRUE(mo.ok());
  EXPECT_EQ(CompareFloat((*mo)[0], x, 0, 0), "");  // window ends at each pixel: max = itself
  m.attrs.Set("auto_pad", StringAttr("SAME_UPPER"));
  mo = RunKernel(m, {&x});
  ASSERT_TRUE(mo.ok());
  EXPECT_EQ(CompareFloat((*mo)[0], FloatTensor({1, 1, 4, 4}, {6, 7, 8, 8, 10, 11, 12, 12, 14, 15,
                                                                16, 16, 14, 15, 16, 16}),
                         0, 0),
            "");
  m.attrs.Set("auto_pad", StringAttr("VALID"));
  m.attrs.Set("strides", IntsAttr({2, 2}));
  mo = RunKernel(m, {&x});
  ASSERT_TRUE(mo.ok());
  EXPECT_EQ(CompareFloat((*mo)[0], FloatTensor({1, 1, 2, 2}, {6, 8, 14, 16}), 0, 0), "");
}

TEST(MaxPool, Uint8) {
  Tensor x(DataType::kUint8, {1, 1, 3, 3});
  for (int i = 0; i < 9; ++i) x.data<uint8_t>()[i] = static_cast<uint8_t>(200 + i * (i % 2 ? 1 : -1));
  Node n = MakeNode("MaxPool", 1, 1);
  n.attrs.Set("kernel_shape", IntsAttr({2, 2}));
  auto out = RunKernel(n, {&x});
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ((*out)[0].dtype(), DataType::kUint8);
  // x = 200 201 198 / 203 196 205 / 194 207 192
  std::vector<uint8_t> want = {203, 205, 207, 207};
  for (int i = 0; i < 4; ++i) EXPECT_EQ((*out)[0].data<uint8_t>()[i], want[i]) << i;
}

TEST(GlobalPool, MatchesNaive) {
  for (auto shape : {std::vector<int64_t>{2, 3, 7, 13}, std::vector<int64_t>{1, 5, 127},
                     std::vector<int64_t>{1, 2, 3, 4, 5}}) {
    Tensor x = RandomTensor(shape, 7);
    int64_t planes = shape[0] * shape[1], n = x.numel() / planes;
    std::vector<int64_t> os(shape.size(), 1);
    os[0] = shape[0], os[1] = shape[1];
    Tensor avg(DataType::kFloat32, os), mx(DataType::kFloat32, os);
    for (int64_t p = 0; p < planes; ++p) {
      double s = 0;
      float m = -1e30f;
      for (int64_t i = 0; i < n; ++i) {
        s += x.data<float>()[p * n + i];
        m = std::max(m, x.data<float>()[p * n + i]);
      }
      avg.data<float>()[p] = float(s / n);
      mx.data<float>()[p] = m;
    }
    auto a = RunKernel(MakeNode("GlobalAveragePool", 1, 1), {&x});
    auto b = RunKernel(MakeNode("GlobalMaxPool", 1, 1), {&x});
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(CompareFloat((*a)[0], avg, 1e-6f, 1e-5f), "");
    EXPECT_EQ(CompareFloat((*b)[0], mx, 0, 0), "");
  }
  Tensor bad = RandomTensor({3, 4}, 1);
  auto r = RunKernel(MakeNode("GlobalAveragePool", 1, 1), {&bad});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("GlobalAveragePool_test"), std::string::npos);
}

TEST(Pool, BadInputAndCost) {
  Tensor x = RandomTensor({1, 1, 4, 4}, 1);
  Node no_kernel = MakeNode("MaxPool", 1, 1);
  EXPECT_FALSE(FindKernel("", "MaxPool")(no_kernel).ok());
  Node n = MakeNode("MaxPool", 1, 1);
  n.attrs.Set("kernel_shape", IntsAttr({3, 3, 3}));
  auto r = RunKernel(n, {&x});  // rank mismatch
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("MaxPool_test"), std::string::npos);
  Node big = MakeNode("AveragePool", 1, 1);
  big.attrs.Set("kernel_shape", IntsAttr({5, 5}));
  EXPECT_FALSE(RunKernel(big, {&x}).ok());
  Node pads = MakeNode("AveragePool", 1, 1);
  pads.attrs.Set("kernel_shape", IntsAttr({2, 2}));
  pads.attrs.Set("pads", IntsAttr({2, 0, 0, 0}));  // pad >= kernel
  EXPECT_FALSE(RunKernel(pads, {&x}).ok());
  Node strides = MakeNode("AveragePool", 1, 1);
  strides.attrs.Set("kernel_shape", IntsAttr({2, 2}));
  strides.attrs.Set("strides", IntsAttr({0, 1}));
  EXPECT_FALSE(FindKernel("", "AveragePool")(strides).ok());

  Node c = MakeNode("MaxPool", 1, 1);
  c.attrs.Set("kernel_shape", IntsAttr({3, 3}));
  auto k = FindKernel("", "MaxPool")(c);
  ASSERT_TRUE(k.ok());
  // 2x8x5x5 output, 3x3 kernel: 400 * 9 = 3600 ops; bytes: in 2*8*7*7 + out 400 floats.
  Cost cost = (*k)->EstimateCost({{DataType::kFloat32, {2, 8, 7, 7}}},
                                 {{DataType::kFloat32, {2, 8, 5, 5}}});
  EXPECT_DOUBLE_EQ(cost.flops, 3600);
  EXPECT_DOUBLE_EQ(cost.bytes, 4.0 * (784 + 400));
  auto g = FindKernel("", "GlobalAveragePool")(MakeNode("GlobalAveragePool", 1, 1));
  ASSERT_TRUE(g.ok());
  EXPECT_DOUBLE_EQ((*g)->EstimateCost({{DataType::kFloat32, {2, 8, 7, 7}}},
                                      {{DataType::kFloat32, {2, 8, 1, 1}}})
                       .flops,
                   784);
}

}  // namespace
}  // namespace opscope::engine::testing
