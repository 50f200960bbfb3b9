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
  // ONNX Runtime truncates toward zero (an input smaller than the kernel can still give one
  // window); ceil_mode rounds up.
  int64_t out = (ceil ? int64_t(std::ceil(v)) : int64_t(std::trunc(v))) + 1;
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
          // count_include_pad: the whole kernel, but with ceil_mode only the taps inside the
          // padded extent (ONNX Runtime's divisors).
          int64_t whole = k[0] * k[1] * k[2];
          int64_t div = c.include_pad ? (c.ceil ? padded : whole) : valid;
          y.data<float>()[o] = max ? best : float(sum / double(div));
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
      {{2, 8, 64, 63}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 0}, true},  // large: split over threads
      // Inputs smaller than the kernel: one window that overhangs the input.
      {{1, 3, 1, 1}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {{2, 3, 3, 1}, {3, 2}, {3, 2}, {1, 1}, {0, 0}, {0, 0}, false, true},
      {{1, 2, 2, 5}, {4, 3}, {3, 2}, {1, 1}, {1, 0}, {0, 1}, true, true},
      // Stride-2 W taps long enough for the vector path, with its end-of-row limits: exactly 16
      // readable floats, an odd width, a padded window at both ends, 1-D.
      {{1, 4, 2, 96}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {{1, 1, 4, 16}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
      {{1, 2, 5, 33}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, true},
      {{1, 2, 200}, {3}, {2}, {1}, {1}, {0}, false, true},
  };
}

TEST(AveragePool, MatchesNaiveTwin) {
  uint32_t seed = 1;
  for (const PoolCase& c : Cases()) {
    Tensor x = RandomTensor(c.x, seed++);
    auto out = RunPoisoned(PoolNode("AveragePool", c), {&x}, 2);
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
      auto out = RunPoisoned(n, {&x}, 2);
      ASSERT_TRUE(out.ok()) << out.status().message();
      auto [ry, ri] = NaivePool(x, c, true, order == 1);
      EXPECT_EQ(CompareFloat((*out)[0], ry, 0, 0), "");
      ASSERT_EQ((*out)[1].shape(), ri.shape());
      for (int64_t i = 0; i < ri.numel(); ++i)
        ASSERT_EQ((*out)[1].data<int64_t>()[i], ri.data<int64_t>()[i]) << i << " order " << order;
      // Without the Indices output the fast path must agree.
      auto plain = RunPoisoned(PoolNode("MaxPool", c), {&x});
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
  auto out = RunPoisoned(n, {&x});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(CompareFloat((*out)[0], FloatTensor({1, 1, 2, 2}, {6, 7.5f, 12, 13.5f})), "");
  // SAME_UPPER, k3 s2 on 5x5 -> 3x3, pads (1,1); SAME_LOWER on 4x4 k2 s1 puts the pad first.
  Node m = MakeNode("MaxPool", 1, 1);
  m.attrs.Set("kernel_shape", IntsAttr({2, 2}));
  m.attrs.Set("auto_pad", StringAttr("SAME_LOWER"));
  auto mo = RunPoisoned(m, {&x});
  ASSERT_TRUE(mo.ok());
  EXPECT_EQ(CompareFloat((*mo)[0], x, 0, 0), "");  // window ends at each pixel: max = itself
  m.attrs.Set("auto_pad", StringAttr("SAME_UPPER"));
  mo = RunPoisoned(m, {&x});
  ASSERT_TRUE(mo.ok());
  EXPECT_EQ(CompareFloat((*mo)[0],
                         FloatTensor({1, 1, 4, 4},
                                     {6, 7, 8, 8, 10, 11, 12, 12, 14, 15, 16, 16, 14, 15, 16, 16}),
                         0, 0),
            "");
  m.attrs.Set("auto_pad", StringAttr("VALID"));
  m.attrs.Set("strides", IntsAttr({2, 2}));
  mo = RunPoisoned(m, {&x});
  ASSERT_TRUE(mo.ok());
  EXPECT_EQ(CompareFloat((*mo)[0], FloatTensor({1, 1, 2, 2}, {6, 8, 14, 16}), 0, 0), "");
}

// Inputs smaller than the kernel, ceil_mode windows that start in the end padding, and
// count_include_pad on clipped windows. Every expected shape and value (and every refusal) is
// what ONNX Runtime 1.30.0 (onnxruntime-node, CPU) computed for the same one-node opset-13 model
// and input; the input is x[i] = ((7 i mod 11) - 5) / 4 + 1/8.
struct OrtPoolCase {
  const char* name;
  const char* op;
  std::vector<int64_t> x;
  std::vector<int64_t> k, s, pads;
  int ceil = 0, include_pad = 0;
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> dilations;
  std::vector<int64_t> y_shape;  // empty: ONNX Runtime refuses (negative output size)
  std::vector<float> y;
};

// One case per line reads better than one field per line.
// clang-format off
std::vector<OrtPoolCase> OrtCases() {
  return {
      {"max k2 s2 on 1x1", "MaxPool", {1, 2, 1, 1}, {2, 2}, {2, 2}, {}, 0, 0, "NOTSET", {},
       {1, 2, 1, 1}, {-1.125f, 0.625f}},
      {"max k2 s2 on 1x1 ceil", "MaxPool", {1, 2, 1, 1}, {2, 2}, {2, 2}, {}, 1, 0, "NOTSET", {},
       {1, 2, 1, 1}, {-1.125f, 0.625f}},
      {"avg k3x2 s3x2 on 3x1", "AveragePool", {1, 2, 3, 1}, {3, 2}, {3, 2}, {}, 0, 0, "NOTSET",
       {}, {1, 2, 1, 1}, {-0.2916666567325592f, 0.375f}},
      {"avg k3x2 s3x2 on 3x1 include_pad", "AveragePool", {1, 2, 3, 1}, {3, 2}, {3, 2}, {}, 0, 1,
       "NOTSET", {}, {1, 2, 1, 1}, {-0.1458333283662796f, 0.1875f}},
      {"avg k3x2 s3x2 on 3x1 include_pad ceil", "AveragePool", {1, 1, 3, 1}, {3, 2}, {3, 2}, {},
       1, 1, "NOTSET", {}, {1, 1, 1, 1}, {-0.2916666567325592f}},
      {"avg k3 s3 on 1x1 include_pad", "AveragePool", {1, 1, 1, 1}, {3, 3}, {3, 3}, {}, 0, 1,
       "NOTSET", {}, {1, 1, 1, 1}, {-0.125f}},
      {"max k3 s1 on 1x1", "MaxPool", {1, 1, 1, 1}, {3, 3}, {1, 1}, {}, 0, 0, "NOTSET", {}, {},
       {}},
      {"max k3 s2 on 1x1", "MaxPool", {1, 1, 1, 1}, {3, 3}, {2, 2}, {}, 0, 0, "NOTSET", {},
       {1, 1, 0, 0}, {}},
      {"max k4 s2 on 1x1", "MaxPool", {1, 1, 1, 1}, {4, 4}, {2, 2}, {}, 0, 0, "NOTSET", {},
       {1, 1, 0, 0}, {}},
      {"max k4 s2 on 1x1 ceil", "MaxPool", {1, 1, 1, 1}, {4, 4}, {2, 2}, {}, 1, 0, "NOTSET", {},
       {1, 1, 0, 0}, {}},
      {"max k4 s3 on 1x1", "MaxPool", {1, 1, 1, 1}, {4, 4}, {3, 3}, {}, 0, 0, "NOTSET", {},
       {1, 1, 0, 0}, {}},
      {"max k6 s2 on 1x1", "MaxPool", {1, 1, 1, 1}, {6, 6}, {2, 2}, {}, 0, 0, "NOTSET", {}, {},
       {}},
      {"max k6 s2 on 1x1 ceil", "MaxPool", {1, 1, 1, 1}, {6, 6}, {2, 2}, {}, 1, 0, "NOTSET", {},
       {}, {}},
      {"max 1-D k3 s2 on 1", "MaxPool", {1, 1, 1}, {3}, {2}, {}, 0, 0, "NOTSET", {}, {1, 1, 0},
       {}},
      {"max 1-D k4 s3 on 2", "MaxPool", {1, 1, 2}, {4}, {3}, {}, 0, 0, "NOTSET", {}, {1, 1, 1},
       {0.625f}},
      {"max 1-D k2 d2 s2 on 2", "MaxPool", {1, 1, 2}, {2}, {2}, {}, 0, 0, "NOTSET", {2},
       {1, 1, 1}, {-1.125f}},
      {"avg 1-D k3 s1 pads 1,0 on 1 include_pad", "AveragePool", {1, 1, 1}, {3}, {1}, {1, 0}, 0,
       1, "NOTSET", {}, {1, 1, 0}, {}},
      {"avg 1-D k4 s2 pads 1,0 on 2 include_pad", "AveragePool", {1, 1, 2}, {4}, {2}, {1, 0}, 0,
       1, "NOTSET", {}, {1, 1, 1}, {-0.125f}},
      {"avg 1-D k4 s2 pads 1,0 on 2", "AveragePool", {1, 1, 2}, {4}, {2}, {1, 0}, 0, 0,
       "NOTSET", {}, {1, 1, 1}, {-0.25f}},
      {"avg 1-D k4 s2 pads 1,0 on 2 include_pad ceil", "AveragePool", {1, 1, 2}, {4}, {2},
       {1, 0}, 1, 1, "NOTSET", {}, {1, 1, 1}, {-0.1666666716337204f}},
      {"avg 1-D k4 s3 pads 0,1 on 2 include_pad", "AveragePool", {1, 1, 2}, {4}, {3}, {0, 1}, 0,
       1, "NOTSET", {}, {1, 1, 1}, {-0.125f}},
      {"avg 1-D k2 s2 on 1 include_pad ceil", "AveragePool", {1, 1, 1}, {2}, {2}, {}, 1, 1,
       "NOTSET", {}, {1, 1, 1}, {-1.125f}},
      {"avg 1-D k3 s2 on 4 include_pad ceil", "AveragePool", {1, 1, 4}, {3}, {2}, {}, 1, 1,
       "NOTSET", {}, {1, 1, 2}, {-0.2916666567325592f, 0.5f}},
      // ceil_mode: the last window would start in the end padding and is dropped.
      {"avg 1-D k3 s3 pads 1,1 on 5 include_pad ceil", "AveragePool", {1, 1, 5}, {3}, {3},
       {1, 1}, 1, 1, "NOTSET", {}, {1, 1, 2}, {-0.1666666716337204f, 0.4583333432674408f}},
      {"max 1-D k2 s2 pads 1,1 on 5 ceil", "MaxPool", {1, 1, 5}, {2}, {2}, {1, 1}, 1, 0,
       "NOTSET", {}, {1, 1, 3}, {-1.125f, 0.625f, 1.375f}},
      {"max 1-D k2 s3 pads 1,1 on 4 ceil", "MaxPool", {1, 1, 4}, {2}, {3}, {1, 1}, 1, 0,
       "NOTSET", {}, {1, 1, 2}, {-1.125f, 1.375f}},
      {"avg k3 s2 pads 1 on 2x2 include_pad", "AveragePool", {1, 1, 2, 2}, {3, 3}, {2, 2},
       {1, 1, 1, 1}, 0, 1, "NOTSET", {}, {1, 1, 1, 1}, {0.0555555559694767f}},
      {"max k2 s2 pads 1 on 4x4 ceil", "MaxPool", {1, 1, 4, 4}, {2, 2}, {2, 2}, {1, 1, 1, 1}, 1,
       0, "NOTSET", {}, {1, 1, 3, 3},
       {-1.125f, 0.625f, 1.375f, 0.375f, 1.125f, 0.125f, 0.625f, 1.375f, 0.375f}},
      {"avg k2 s2 pads 1 on 4x4 include_pad ceil", "AveragePool", {1, 1, 4, 4}, {2, 2}, {2, 2},
       {1, 1, 1, 1}, 1, 1, "NOTSET", {}, {1, 1, 3, 3},
       {-0.28125f, 0.0625f, 0.34375f, -0.125f, 0.3125f, -0.25f, 0.15625f, 0.25f, 0.09375f}},
      {"max k3 s2 pads 1 on 6x6 ceil", "MaxPool", {1, 1, 6, 6}, {3, 3}, {2, 2}, {1, 1, 1, 1}, 1,
       0, "NOTSET", {}, {1, 1, 4, 4},
       {1.125f, 1.375f, 1.375f, -0.625f, 1.125f, 1.375f, 1.125f, 1.125f, 1.375f, 1.375f, 1.125f,
        0.625f, 0.875f, 0.875f, 0.625f, -0.375f}},
      {"avg k3 s2 pads 1 on 6x6 include_pad ceil", "AveragePool", {1, 1, 6, 6}, {3, 3}, {2, 2},
       {1, 1, 1, 1}, 1, 1, "NOTSET", {}, {1, 1, 4, 4},
       {0.0833333358168602f, 0.1944444477558136f, 0.0833333358168602f, -0.2916666567325592f,
        0.0833333358168602f, 0.1527777761220932f, -0.013888888992369175f, 0.1041666641831398f,
        0.02777777798473835f, 0.0694444477558136f, -0.0972222238779068f, 0.0625f, 0.f, -0.0625f,
        -0.1458333283662796f, -0.09375f}},
      {"avg k3 s2 pads 1 on 6x6 ceil", "AveragePool", {1, 1, 6, 6}, {3, 3}, {2, 2},
       {1, 1, 1, 1}, 1, 0, "NOTSET", {}, {1, 1, 4, 4},
       {0.1875f, 0.2916666567325592f, 0.125f, -0.875f, 0.125f, 0.1527777761220932f,
        -0.013888888992369175f, 0.2083333283662796f, 0.0416666679084301f, 0.0694444477558136f,
        -0.0972222238779068f, 0.125f, 0.f, -0.125f, -0.2916666567325592f, -0.375f}},
      {"max 1-D VALID k2 s2 on 1", "MaxPool", {1, 1, 1}, {2}, {2}, {}, 0, 0, "VALID", {},
       {1, 1, 1}, {-1.125f}},
      {"max 1-D VALID k3 s1 on 1", "MaxPool", {1, 1, 1}, {3}, {1}, {}, 0, 0, "VALID", {}, {}, {}},
      {"avg 1-D VALID k4 s3 on 2", "AveragePool", {1, 1, 2}, {4}, {3}, {}, 0, 0, "VALID", {},
       {1, 1, 1}, {-0.25f}},
      {"avg 1-D SAME_UPPER k3 s1 on 1 include_pad", "AveragePool", {1, 1, 1}, {3}, {1}, {}, 0,
       1, "SAME_UPPER", {}, {1, 1, 1}, {-0.375f}},
  };
}
// clang-format on

TEST(Pool, MatchesOnnxRuntimeOnSmallInputsAndCeilEdges) {
  for (const OrtPoolCase& c : OrtCases()) {
    Tensor x(DataType::kFloat32, c.x);
    for (int64_t i = 0; i < x.numel(); ++i)
      x.data<float>()[i] = float((i * 7) % 11 - 5) / 4 + 0.125f;
    Node n = MakeNode(c.op, 1, 1);
    n.attrs.Set("kernel_shape", IntsAttr(c.k));
    n.attrs.Set("strides", IntsAttr(c.s));
    if (!c.pads.empty()) n.attrs.Set("pads", IntsAttr(c.pads));
    if (!c.dilations.empty()) n.attrs.Set("dilations", IntsAttr(c.dilations));
    n.attrs.Set("auto_pad", StringAttr(c.auto_pad));
    n.attrs.Set("ceil_mode", IntAttr(c.ceil));
    n.attrs.Set("count_include_pad", IntAttr(c.include_pad));
    auto out = RunPoisoned(n, {&x});
    if (c.y_shape.empty()) {
      ASSERT_FALSE(out.ok()) << c.name;
      EXPECT_NE(out.status().message().find("negative"), std::string::npos)
          << c.name << ": " << out.status().message();
      continue;
    }
    ASSERT_TRUE(out.ok()) << c.name << ": " << out.status().message();
    EXPECT_EQ(CompareFloat((*out)[0], FloatTensor(c.y_shape, c.y), 1e-6f, 1e-6f), "") << c.name;
  }
}

TEST(MaxPool, IndicesOfAWindowLargerThanTheInput) {
  // ONNX Runtime 1.30.0: MaxPool k2 s2 with Indices on [1, 2, 1, 1] -> Y = X, Indices = {0, 1}.
  Tensor x = FloatTensor({1, 2, 1, 1}, {-1.125f, 0.625f});
  Node n = MakeNode("MaxPool", 1, 2);
  n.attrs.Set("kernel_shape", IntsAttr({2, 2}));
  n.attrs.Set("strides", IntsAttr({2, 2}));
  auto out = RunPoisoned(n, {&x});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(CompareFloat((*out)[0], x, 0, 0), "");
  ASSERT_EQ((*out)[1].shape(), (std::vector<int64_t>{1, 2, 1, 1}));
  EXPECT_EQ((*out)[1].data<int64_t>()[0], 0);
  EXPECT_EQ((*out)[1].data<int64_t>()[1], 1);
}

TEST(MaxPool, Uint8) {
  Tensor x(DataType::kUint8, {1, 1, 3, 3});
  for (int i = 0; i < 9; ++i)
    x.data<uint8_t>()[i] = static_cast<uint8_t>(200 + i * (i % 2 ? 1 : -1));
  Node n = MakeNode("MaxPool", 1, 1);
  n.attrs.Set("kernel_shape", IntsAttr({2, 2}));
  auto out = RunPoisoned(n, {&x});
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
    auto a = RunPoisoned(MakeNode("GlobalAveragePool", 1, 1), {&x});
    auto b = RunPoisoned(MakeNode("GlobalMaxPool", 1, 1), {&x});
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(CompareFloat((*a)[0], avg, 1e-6f, 1e-5f), "");
    EXPECT_EQ(CompareFloat((*b)[0], mx, 0, 0), "");
  }
  Tensor bad = RandomTensor({3, 4}, 1);
  auto r = RunPoisoned(MakeNode("GlobalAveragePool", 1, 1), {&bad});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("GlobalAveragePool_test"), std::string::npos);
}

TEST(Pool, BadInputAndCost) {
  Tensor x = RandomTensor({1, 1, 4, 4}, 1);
  Node no_kernel = MakeNode("MaxPool", 1, 1);
  EXPECT_FALSE(FindKernel("", "MaxPool")(no_kernel).ok());
  Node n = MakeNode("MaxPool", 1, 1);
  n.attrs.Set("kernel_shape", IntsAttr({3, 3, 3}));
  auto r = RunPoisoned(n, {&x});  // rank mismatch
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("MaxPool_test"), std::string::npos);
  Node big = MakeNode("AveragePool", 1, 1);
  big.attrs.Set("kernel_shape", IntsAttr({6, 6}));  // output size 4 - 6 + 1 < 0
  r = RunPoisoned(big, {&x});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("output size would be negative"), std::string::npos)
      << r.status().message();
  Node pads = MakeNode("AveragePool", 1, 1);
  pads.attrs.Set("kernel_shape", IntsAttr({2, 2}));
  pads.attrs.Set("pads", IntsAttr({2, 0, 0, 0}));  // pad >= kernel
  EXPECT_FALSE(RunPoisoned(pads, {&x}).ok());
  Node strides = MakeNode("AveragePool", 1, 1);
  strides.attrs.Set("kernel_shape", IntsAttr({2, 2}));
  strides.attrs.Set("strides", IntsAttr({0, 1}));
  EXPECT_FALSE(FindKernel("", "AveragePool")(strides).ok());

  // An empty input may carry any other dim: [1, 1, 2^63-1, 0] plus its pads overflowed int64
  // (UBSan, model_struct_fuzz); the release build went on with a wrapped size.
  Tensor huge(DataType::kFloat32, {1, 1, std::numeric_limits<int64_t>::max(), 0});
  Node hp = MakeNode("MaxPool", 1, 1);
  hp.attrs.Set("kernel_shape", IntsAttr({3, 3}));
  hp.attrs.Set("pads", IntsAttr({1, 1, 1, 1}));
  r = RunPoisoned(hp, {&huge});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("spatial dim 0: input 9223372036854775807, kernel 3, "
                                      "dilation 1 out of range"),
            std::string::npos)
      << r.status().message();

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
  EXPECT_DOUBLE_EQ(
      (*g)->EstimateCost({{DataType::kFloat32, {2, 8, 7, 7}}}, {{DataType::kFloat32, {2, 8, 1, 1}}})
          .flops,
      784);
}

// ONNX's Global*Pool node tests are opset-1 models, which the session loader refuses; run their
// data through the kernels directly.
TEST(GlobalPool, OnnxConformanceData) {
  for (std::string op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    std::string base = op == "GlobalMaxPool" ? "test_globalmaxpool" : "test_globalaveragepool";
    for (std::string suffix : {"", "_precomputed"}) {
      std::string r = RunOnnxNodeData(MakeNode(op, 1, 1, 1), base + suffix, 1);
      if (r == "skip") GTEST_SKIP() << "libonnx-testdata is not installed";
      EXPECT_EQ(r, "") << base + suffix;
    }
  }
}

}  // namespace
}  // namespace opscope::engine::testing
