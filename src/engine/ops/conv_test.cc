// Conv / ConvTranspose against naive twins, fused activations, geometry, costs, bad input.
#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>

#include "engine/ops/conv_common.h"
#include "engine/ops/dnnl_common.h"
#include "engine/ops/dnnl_testing.h"
#include "engine/ops/region_layout.h"

namespace opscope::engine::testing {
namespace {

struct Geo {
  std::vector<int64_t> s, d, pb, pe;
  int64_t group = 1;
};

// Direct convolution over up to 3 spatial dims (lower ranks are padded with size-1 dims).
Tensor NaiveConv(const Tensor& x, const Tensor& w, const Tensor* b, const Geo& g) {
  int sp = x.rank() - 2;
  auto pad3 = [&](std::vector<int64_t> v, int64_t fill) {
    v.insert(v.begin(), 3 - v.size(), fill);
    return v;
  };
  std::vector<int64_t> in = pad3({x.shape().begin() + 2, x.shape().end()}, 1);
  std::vector<int64_t> k = pad3({w.shape().begin() + 2, w.shape().end()}, 1);
  auto s = pad3(g.s, 1), d = pad3(g.d, 1), pb = pad3(g.pb, 0), pe = pad3(g.pe, 0);
  int64_t N = x.dim(0), C = x.dim(1), OC = w.dim(0), icg = C / g.group, ocg = OC / g.group;
  std::vector<int64_t> out(3);
  for (int i = 0; i < 3; ++i) out[i] = (in[i] + pb[i] + pe[i] - ((k[i] - 1) * d[i] + 1)) / s[i] + 1;
  std::vector<int64_t> ys = {N, OC};
  for (int i = 3 - sp; i < 3; ++i) ys.push_back(out[i]);
  Tensor y(DataType::kFloat32, ys);
  const float* px = x.data<float>();
  const float* pw = w.data<float>();
  float* py = y.data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < OC; ++oc) {
      int64_t grp = oc / ocg;
      for (int64_t o0 = 0; o0 < out[0]; ++o0)
        for (int64_t o1 = 0; o1 < out[1]; ++o1)
          for (int64_t o2 = 0; o2 < out[2]; ++o2) {
            double acc = b ? b->data<float>()[oc] : 0.0;
            for (int64_t ic = 0; ic < icg; ++ic)
              for (int64_t k0 = 0; k0 < k[0]; ++k0)
                for (int64_t k1 = 0; k1 < k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    int64_t i0 = o0 * s[0] - pb[0] + k0 * d[0];
                    int64_t i1 = o1 * s[1] - pb[1] + k1 * d[1];
                    int64_t i2 = o2 * s[2] - pb[2] + k2 * d[2];
                    if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2])
                      continue;
                    int64_t c = grp * icg + ic;
                    acc += double(px[(((n * C + c) * in[0] + i0) * in[1] + i1) * in[2] + i2]) *
                           pw[(((oc * icg + ic) * k[0] + k0) * k[1] + k1) * k[2] + k2];
                  }
            py[(((n * OC + oc) * out[0] + o0) * out[1] + o1) * out[2] + o2] = float(acc);
          }
    }
  return y;
}

// Scatter form of the transposed convolution, on an explicit output size.
Tensor NaiveConvTranspose(const Tensor& x, const Tensor& w, const Tensor* b, const Geo& g,
                          std::vector<int64_t> out_sp) {
  int sp = x.rank() - 2;
  auto pad3 = [&](std::vector<int64_t> v, int64_t fill) {
    v.insert(v.begin(), 3 - v.size(), fill);
    return v;
  };
  std::vector<int64_t> in = pad3({x.shape().begin() + 2, x.shape().end()}, 1);
  std::vector<int64_t> k = pad3({w.shape().begin() + 2, w.shape().end()}, 1);
  auto s = pad3(g.s, 1), d = pad3(g.d, 1), pb = pad3(g.pb, 0);
  auto out = pad3(out_sp, 1);
  int64_t N = x.dim(0), C = x.dim(1), ocg = w.dim(1), OC = ocg * g.group, icg = C / g.group;
  std::vector<int64_t> ys = {N, OC};
  for (int i = 3 - sp; i < 3; ++i) ys.push_back(out[i]);
  Tensor y(DataType::kFloat32, ys);
  std::vector<double> acc(static_cast<size_t>(y.numel()), 0.0);
  const float* px = x.data<float>();
  const float* pw = w.data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      int64_t grp = c / icg;
      for (int64_t i0 = 0; i0 < in[0]; ++i0)
        for (int64_t i1 = 0; i1 < in[1]; ++i1)
          for (int64_t i2 = 0; i2 < in[2]; ++i2) {
            float xv = px[(((n * C + c) * in[0] + i0) * in[1] + i1) * in[2] + i2];
            for (int64_t oc = 0; oc < ocg; ++oc)
              for (int64_t k0 = 0; k0 < k[0]; ++k0)
                for (int64_t k1 = 0; k1 < k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    int64_t o0 = i0 * s[0] + k0 * d[0] - pb[0];
                    int64_t o1 = i1 * s[1] + k1 * d[1] - pb[1];
                    int64_t o2 = i2 * s[2] + k2 * d[2] - pb[2];
                    if (o0 < 0 || o0 >= out[0] || o1 < 0 || o1 >= out[1] || o2 < 0 || o2 >= out[2])
                      continue;
                    int64_t occ = grp * ocg + oc;
                    acc[(((n * OC + occ) * out[0] + o0) * out[1] + o1) * out[2] + o2] +=
                        double(xv) * pw[(((c * ocg + oc) * k[0] + k0) * k[1] + k1) * k[2] + k2];
                  }
          }
    }
  int64_t plane = out[0] * out[1] * out[2];
  for (int64_t i = 0; i < y.numel(); ++i)
    y.data<float>()[i] = float(acc[i] + (b ? b->data<float>()[(i / plane) % OC] : 0.0));
  return y;
}

Node ConvNode(const char* op, const Geo& g, bool bias) {
  Node n = MakeNode(op, bias ? 3 : 2, 1);
  n.attrs.Set("strides", IntsAttr(g.s));
  n.attrs.Set("dilations", IntsAttr(g.d));
  std::vector<int64_t> pads = g.pb;
  pads.insert(pads.end(), g.pe.begin(), g.pe.end());
  n.attrs.Set("pads", IntsAttr(pads));
  n.attrs.Set("group", IntAttr(g.group));
  return n;
}

struct ConvCase {
  std::vector<int64_t> x, w;
  Geo g;
  bool bias;
};

TEST(Conv, MatchesNaiveTwinOnOddShapes) {
  std::vector<ConvCase> cases = {
      {{1, 3, 7, 7}, {5, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}, 1}, true},
      {{2, 4, 13, 7}, {6, 2, 3, 2}, {{2, 1}, {1, 2}, {0, 1}, {2, 0}, 2}, true},
      {{1, 16, 13, 13}, {16, 1, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, {1, 1}, 16}, true},  // depthwise
      {{1, 32, 7, 7}, {17, 32, 1, 1}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}, 1}, false},   // blocked 1x1
      {{1, 16, 9, 11}, {32, 16, 3, 3}, {{1, 2}, {2, 1}, {2, 0}, {1, 3}, 1}, true},   // blocked
      {{3, 5, 127}, {7, 5, 5}, {{3}, {2}, {4}, {1}, 1}, true},                       // 1-D
      // 1-D depthwise: the direct stencil as a one-row plane (Silero VAD's 258x8, k 5), strided
      // and unpadded, k 7 without bias; stride 3 and dilation 2 stay on oneDNN.
      {{1, 258, 8}, {258, 1, 5}, {{1}, {1}, {2}, {2}, 258}, true},
      {{2, 6, 37}, {6, 1, 3}, {{2}, {1}, {1}, {0}, 6}, true},
      {{1, 4, 20}, {4, 1, 7}, {{1}, {1}, {3}, {3}, 4}, false},
      {{1, 4, 20}, {4, 1, 3}, {{3}, {1}, {1}, {1}, 4}, true},
      {{1, 4, 20}, {4, 1, 3}, {{1}, {2}, {2}, {2}, 4}, true},
      {{1, 2, 5, 6, 7}, {4, 1, 2, 3, 2}, {{1, 2, 1}, {2, 1, 1}, {1, 0, 1}, {0, 1, 1}, 2}, true},
      {{1, 1, 1, 1}, {1, 1, 1, 1}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}, 1}, true},
      // Strided 1x1 (ResNet's downsampling shortcut): the pointwise GEMM on a subsampled X;
      // odd sizes, batch 2, unequal strides, 1-D, and a grouped one that stays on oneDNN.
      {{2, 24, 13, 11}, {40, 24, 1, 1}, {{2, 2}, {1, 1}, {0, 0}, {0, 0}, 1}, true},
      {{1, 8, 9, 10}, {5, 8, 1, 1}, {{3, 2}, {1, 1}, {0, 0}, {0, 0}, 1}, false},
      {{2, 6, 23}, {7, 6, 1}, {{2}, {1}, {0}, {0}, 1}, true},
      {{1, 8, 9, 9}, {6, 4, 1, 1}, {{2, 2}, {1, 1}, {0, 0}, {0, 0}, 2}, true},
      // A stride of 2^31-1 where the output has one position (oneDNN 2.6 crashed making the
      // 1-D one: model_struct_fuzz), and beside an ordinary stride in 2-D.
      {{1, 1, 3}, {1, 1, 3}, {{2147483647}, {1}, {2}, {0}, 1}, false},
      {{1, 3, 7, 9}, {4, 3, 3, 3}, {{2147483647, 2}, {1, 1}, {1, 1}, {1, 0}, 1}, true},
  };
  uint32_t seed = 1;
  for (const ConvCase& c : cases) {
    Tensor x = RandomTensor(c.x, seed++), w = RandomTensor(c.w, seed++);
    Tensor b = RandomTensor({c.w[0]}, seed++);
    Node n = ConvNode("Conv", c.g, c.bias);
    auto out = RunPoisoned(
        n, c.bias ? std::vector<const Tensor*>{&x, &w, &b} : std::vector<const Tensor*>{&x, &w}, 2);
    ASSERT_TRUE(out.ok()) << out.status().message();
    Tensor ref = NaiveConv(x, w, c.bias ? &b : nullptr, c.g);
    EXPECT_EQ(CompareFloat((*out)[0], ref, 1e-4f, 1e-4f), "") << "case x rank " << c.x.size();
  }
}

// The direct NCHW depthwise path (2-D, group == C == OC, kernel <= 7x7, stride 1/2, no
// dilation) and its neighbours that fall back to oneDNN (dilation 2, stride 3, 9x9 kernel):
// odd sizes, asymmetric and oversized pads, with and without bias, fused Clip and a fused
// chain that goes through the scalar post-op path.
TEST(Conv, DepthwiseDirectPathMatchesNaiveTwin) {
  struct DwCase {
    std::vector<int64_t> x;
    int64_t kh, kw;
    Geo g;
    bool bias;
  };
  std::vector<DwCase> cases = {
      {{1, 7, 13, 13}, 3, 3, {{2, 2}, {1, 1}, {0, 1}, {2, 0}}, true},
      {{2, 13, 7, 13}, 3, 3, {{1, 1}, {1, 1}, {1, 0}, {0, 2}}, true},
      {{1, 1, 1, 1}, 3, 3, {{2, 2}, {1, 1}, {1, 1}, {1, 1}}, true},
      {{1, 7, 1, 7}, 3, 3, {{2, 1}, {1, 1}, {1, 0}, {1, 2}}, false},
      {{1, 13, 13, 7}, 5, 5, {{2, 2}, {1, 1}, {2, 1}, {0, 2}}, true},
      {{1, 7, 13, 13}, 5, 5, {{1, 1}, {1, 1}, {2, 2}, {2, 2}}, true},
      {{1, 7, 13, 7}, 3, 5, {{1, 2}, {1, 1}, {1, 2}, {0, 2}}, true},  // run-time K/S
      {{1, 7, 7, 13}, 7, 1, {{2, 1}, {1, 1}, {3, 0}, {3, 0}}, true},
      {{1, 7, 7, 7}, 3, 3, {{1, 1}, {1, 1}, {4, 5}, {3, 4}}, true},  // pads > kernel
      {{1, 7, 7, 8}, 3, 3, {{2, 2}, {1, 1}, {4, 5}, {3, 4}}, true},
      {{1, 7, 12, 12}, 3, 3, {{2, 2}, {1, 1}, {0, 0}, {1, 1}}, true},  // even width, pl 0
      {{2, 7, 13, 14}, 5, 5, {{2, 2}, {1, 1}, {2, 2}, {2, 2}}, true},
      {{1, 13, 13, 1}, 3, 3, {{2, 2}, {1, 1}, {1, 1}, {1, 1}}, true},
      // Unit strides wider than DwPlaneGeo::kFlatMaxWidth go row by row; narrower ones take the
      // flat path, with compile-time (3x3, 5x5) and run-time (3x5, 7x7, 1x1) tap counts.
      {{1, 3, 9, 67}, 3, 3, {{1, 1}, {1, 1}, {1, 1}, {1, 1}}, true},
      {{1, 3, 6, 70}, 5, 5, {{1, 1}, {1, 1}, {2, 0}, {2, 3}}, true},
      {{1, 3, 5, 64}, 3, 3, {{1, 1}, {1, 1}, {0, 1}, {1, 0}}, true},
      {{2, 7, 9, 9}, 3, 5, {{1, 1}, {1, 1}, {1, 2}, {1, 2}}, true},
      {{1, 7, 7, 7}, 7, 7, {{1, 1}, {1, 1}, {3, 3}, {3, 3}}, false},
      {{1, 5, 4, 6}, 1, 1, {{1, 1}, {1, 1}, {1, 0}, {0, 2}}, true},
      {{1, 7, 13, 13}, 3, 3, {{1, 1}, {2, 2}, {2, 2}, {2, 2}}, true},  // dilated: oneDNN
      {{1, 7, 13, 13}, 3, 3, {{3, 3}, {1, 1}, {1, 1}, {1, 1}}, true},  // stride 3: oneDNN
      {{1, 7, 13, 13}, 9, 9, {{1, 1}, {1, 1}, {4, 4}, {4, 4}}, true},  // 9x9: oneDNN
  };
  uint32_t seed = 300;
  for (DwCase& c : cases) {
    const int64_t C = c.x[1];
    c.g.group = C;
    Tensor x = RandomTensor(c.x, seed++, -2, 2), w = RandomTensor({C, 1, c.kh, c.kw}, seed++);
    Tensor b = RandomTensor({C}, seed++);
    Node n = ConvNode("Conv", c.g, c.bias);
    std::vector<const Tensor*> in = {&x, &w};
    if (c.bias) in.push_back(&b);
    Tensor plain = NaiveConv(x, w, c.bias ? &b : nullptr, c.g);
    std::string where = "x " + std::to_string(c.x[1]) + "x" + std::to_string(c.x[2]) + "x" +
                        std::to_string(c.x[3]) + " k " + std::to_string(c.kh) + "x" +
                        std::to_string(c.kw) + " s " + std::to_string(c.g.s[0]) + "," +
                        std::to_string(c.g.s[1]);
    auto out = RunPoisoned(n, in, 2);
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ(CompareFloat((*out)[0], plain, 1e-4f, 1e-4f), "") << where;
    PostOp clip{PostOpKind::kClip, 0.f, 0.6f};
    out = RunWithPostOps(n, in, {clip});
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ(CompareFloat((*out)[0], ApplyRef(plain, clip), 1e-4f, 1e-4f), "") << where << " clip";
    std::vector<PostOp> chain = {{PostOpKind::kHardSwish}, {PostOpKind::kRelu}};
    out = RunWithPostOps(n, in, chain);
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ(CompareFloat((*out)[0], ApplyRef(ApplyRef(plain, chain[0]), chain[1]), 1e-4f, 1e-4f),
              "")
        << where << " chain";
  }
}

TEST(Conv, AutoPadSameUpperLowerValid) {
  Tensor x = RandomTensor({1, 2, 7, 8}, 11), w = RandomTensor({3, 2, 4, 3}, 12);
  struct {
    const char* mode;
    Geo g;
  } cases[] = {{"SAME_UPPER", {{2, 3}, {1, 1}, {1, 0}, {2, 1}}},  // total pads 3 / 1
               {"SAME_LOWER", {{2, 3}, {1, 1}, {2, 1}, {1, 0}}},
               {"VALID", {{2, 3}, {1, 1}, {0, 0}, {0, 0}}}};
  for (auto& c : cases) {
    Node n = MakeNode("Conv", 2, 1);
    n.attrs.Set("auto_pad", StringAttr(c.mode));
    n.attrs.Set("strides", IntsAttr({2, 3}));
    auto out = RunPoisoned(n, {&x, &w});
    ASSERT_TRUE(out.ok()) << out.status().message();
    Tensor ref = NaiveConv(x, w, nullptr, c.g);
    EXPECT_EQ(CompareFloat((*out)[0], ref), "") << c.mode;
    if (std::string(c.mode) != "VALID") {
      EXPECT_EQ((*out)[0].dim(2), 4);
      EXPECT_EQ((*out)[0].dim(3), 3);
    }
  }
}

TEST(Conv, FusedActivationsEqualSeparateOps) {
  for (auto shape : {std::vector<int64_t>{1, 3, 9, 9}, std::vector<int64_t>{1, 16, 9, 9}}) {
    Tensor x = RandomTensor(shape, 21, -2, 2), w = RandomTensor({16, shape[1], 3, 3}, 22);
    Tensor b = RandomTensor({16}, 23);
    Geo g{{1, 1}, {1, 1}, {1, 1}, {1, 1}, 1};
    Node n = ConvNode("Conv", g, true);
    Tensor plain = NaiveConv(x, w, &b, g);
    for (const PostOp& op : AllActivations()) {
      auto out = RunWithPostOps(n, {&x, &w, &b}, {op});
      ASSERT_TRUE(out.ok()) << out.status().message();
      EXPECT_EQ(CompareFloat((*out)[0], ApplyRef(plain, op), 1e-4f, 1e-4f), "")
          << "post-op " << static_cast<int>(op.kind) << " C=" << shape[1];
    }
    // Two activations chain in order.
    std::vector<PostOp> chain = {{PostOpKind::kLeakyRelu, 0.2f}, {PostOpKind::kClip, -0.1f, 0.5f}};
    auto out = RunWithPostOps(n, {&x, &w, &b}, chain);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(CompareFloat((*out)[0], ApplyRef(ApplyRef(plain, chain[0]), chain[1])), "");
  }
  // The strided pointwise path, with a bias (applied with the activations after the GEMM) and
  // without (the activations as the matmul's post-ops).
  for (bool bias : {true, false}) {
    Tensor x = RandomTensor({2, 12, 11, 9}, 31, -2, 2), w = RandomTensor({20, 12, 1, 1}, 32);
    Tensor b = RandomTensor({20}, 33);
    Geo g{{2, 2}, {1, 1}, {0, 0}, {0, 0}, 1};
    Node n = ConvNode("Conv", g, bias);
    Tensor plain = NaiveConv(x, w, bias ? &b : nullptr, g);
    for (const PostOp& op : AllActivations()) {
      auto out = RunWithPostOps(
          n, bias ? std::vector<const Tensor*>{&x, &w, &b} : std::vector<const Tensor*>{&x, &w},
          {op});
      ASSERT_TRUE(out.ok()) << out.status().message();
      EXPECT_EQ(CompareFloat((*out)[0], ApplyRef(plain, op), 1e-4f, 1e-4f), "")
          << "strided 1x1, post-op " << static_cast<int>(op.kind) << " bias " << bias;
    }
  }
  // Conv has no last-dim bias add.
  Node n = MakeNode("Conv", 2, 1);
  auto k = FindKernel("", "Conv")(n);
  ASSERT_TRUE(k.ok());
  EXPECT_FALSE((*k)->AddPostOp({PostOpKind::kBiasAdd}));
}

// A fused residual Add (AddResidual): Y = after(post_ops(conv(X)) + R) on every path of the
// kernel with NCHW activations (oneDNN's blocked kernels behind reorders, the pointwise GEMM with
// and without a bias, the strided pointwise GEMM, the depthwise stencil, an empty X), where it
// is one pass after the convolution. Inside channels-last regions it is a oneDNN binary
// post-op (SessionTest.ResidualAddsJoinTheirConvolution).
TEST(Conv, FusedResidualAddEqualsSeparateOps) {
  const std::vector<ConvCase> cases = {
      {{1, 16, 9, 9}, {16, 16, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}, 1}, true},
      {{2, 12, 7, 5}, {20, 12, 1, 1}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}, 1}, true},
      {{2, 12, 7, 5}, {20, 12, 1, 1}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}, 1}, false},
      {{1, 12, 11, 9}, {20, 12, 1, 1}, {{2, 2}, {1, 1}, {0, 0}, {0, 0}, 1}, true},
      {{1, 8, 10, 10}, {8, 1, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}, 8}, true},
      {{1, 0, 4, 4}, {6, 0, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}, 1}, true},
  };
  const std::vector<std::pair<std::vector<PostOp>, std::vector<PostOp>>> chains = {
      {{}, {}},
      {{}, {{PostOpKind::kRelu}}},
      {{{PostOpKind::kRelu}}, {{PostOpKind::kSigmoid}}},
      {{{PostOpKind::kLinear, 0.5f, 0.25f}}, {{PostOpKind::kClip, -0.3f, 0.4f}}},
  };
  uint32_t seed = 400;
  for (const ConvCase& c : cases) {
    Tensor x = RandomTensor(c.x, seed++), w = RandomTensor(c.w, seed++);
    Tensor b = RandomTensor({c.w[0]}, seed++);
    Node n = ConvNode("Conv", c.g, c.bias);
    Tensor plain = NaiveConv(x, w, c.bias ? &b : nullptr, c.g);
    Tensor r = RandomTensor(plain.shape(), seed++, -1, 1);
    for (const auto& [before, after] : chains) {
      auto k = FindKernel("", "Conv")(n);
      ASSERT_TRUE(k.ok());
      for (const PostOp& op : before) ASSERT_TRUE((*k)->AddPostOp(op));
      ASSERT_TRUE((*k)->AddResidual(3, after));
      EXPECT_FALSE((*k)->AddResidual(3, after));                 // only one
      EXPECT_FALSE((*k)->AddPostOp(PostOp{PostOpKind::kTanh}));  // after it: through AddResidual
      Tensor want(DataType::kFloat32, plain.shape());  // a copy (Tensor copies share data)
      if (plain.nbytes()) std::memcpy(want.raw(), plain.raw(), plain.nbytes());
      for (const PostOp& op : before) want = ApplyRef(want, op);
      for (int64_t i = 0; i < want.numel(); ++i) want.data<float>()[i] += r.data<float>()[i];
      for (const PostOp& op : after) want = ApplyRef(want, op);
      for (int run = 0; run < 2; ++run) {
        NnTestContext ctx({&x, &w, c.bias ? &b : nullptr, &r}, 1);
        Status st = (*k)->Run(ctx);
        ASSERT_TRUE(st.ok()) << st.message();
        EXPECT_EQ(CompareFloat(ctx.outputs()[0], want, 1e-4f, 1e-4f), "")
            << "x " << ShapeString(c.x) << " before " << before.size() << " after " << after.size();
      }
      // A residual of another shape is an internal error, not a read past its end.
      Tensor small = RandomTensor({1}, 1);
      NnTestContext bad({&x, &w, c.bias ? &b : nullptr, &small}, 1);
      EXPECT_NE((*k)->Run(bad).message().find("residual"), std::string::npos);
    }
  }
}

TEST(Conv, WeightChangeAtSameAddressIsSeen) {
  Tensor x = RandomTensor({1, 16, 5, 5}, 31), w = RandomTensor({16, 16, 3, 3}, 32);
  Node n = MakeNode("Conv", 2, 1);
  auto k = FindKernel("", "Conv")(n);
  ASSERT_TRUE(k.ok());
  Geo g{{1, 1}, {1, 1}, {0, 0}, {0, 0}, 1};
  for (int r = 0; r < 2; ++r) {
    NnTestContext ctx({&x, &w}, 1);
    ASSERT_TRUE((*k)->Run(ctx).ok());
    EXPECT_EQ(CompareFloat(ctx.outputs()[0], NaiveConv(x, w, nullptr, g)), "") << r;
    w.data<float>()[7] += 1.0f;  // same pointer, new content
  }
}

TEST(Conv, ShapeChangeRebuilds) {
  Node n = MakeNode("Conv", 2, 1);
  auto k = FindKernel("", "Conv")(n);
  ASSERT_TRUE(k.ok());
  Tensor w = RandomTensor({4, 2, 3, 3}, 41);
  Geo g{{1, 1}, {1, 1}, {0, 0}, {0, 0}, 1};
  for (int64_t h : {5, 9, 5}) {
    Tensor x = RandomTensor({2, 2, h, 7}, 42 + static_cast<uint32_t>(h));
    NnTestContext ctx({&x, &w}, 1);
    ASSERT_TRUE((*k)->Run(ctx).ok());
    EXPECT_EQ(CompareFloat(ctx.outputs()[0], NaiveConv(x, w, nullptr, g)), "") << h;
  }
}

TEST(Conv, BadInputIsAnErrorNamingTheNode) {
  Tensor x = RandomTensor({1, 3, 5, 5}, 1), w = RandomTensor({4, 2, 3, 3}, 2);
  Node n = MakeNode("Conv", 2, 1);
  auto out = RunPoisoned(n, {&x, &w});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("Conv_test"), std::string::npos);
  Tensor x2 = RandomTensor({3, 5}, 1);
  EXPECT_FALSE(RunPoisoned(n, {&x2, &w}).ok());
  Tensor small = RandomTensor({1, 2, 2, 2}, 3);
  EXPECT_FALSE(RunPoisoned(n, {&small, &w}).ok());  // kernel larger than the input
  Tensor b = RandomTensor({5}, 4), x3 = RandomTensor({1, 2, 5, 5}, 5);
  Node nb = MakeNode("Conv", 3, 1);
  EXPECT_FALSE(RunPoisoned(nb, {&x3, &w, &b}).ok());  // bias size
  Node bad = MakeNode("Conv", 2, 1);
  bad.attrs.Set("auto_pad", StringAttr("SAME"));
  EXPECT_FALSE(FindKernel("", "Conv")(bad).ok());
  Node bad2 = MakeNode("Conv", 2, 1);
  bad2.attrs.Set("strides", IntsAttr({1, 1, 1}));
  EXPECT_FALSE(RunPoisoned(bad2, {&x3, &w}).ok());
  Node bad3 = MakeNode("Conv", 2, 1);
  bad3.attrs.Set("group", IntAttr(0));
  EXPECT_FALSE(FindKernel("", "Conv")(bad3).ok());
}

TEST(Conv, CostIsHandComputed) {
  Node n = MakeNode("Conv", 3, 1);
  n.attrs.Set("group", IntAttr(2));
  auto k = FindKernel("", "Conv")(n);
  ASSERT_TRUE(k.ok());
  // N=1, IC=4, OC=6, group 2, 3x3 kernel, 5x5 output: 2*1*6*25*(4/2)*9 = 5400 + 150 bias.
  std::vector<TensorDesc> in = {{DataType::kFloat32, {1, 4, 7, 7}},
                                {DataType::kFloat32, {6, 2, 3, 3}},
                                {DataType::kFloat32, {6}}};
  std::vector<TensorDesc> out = {{DataType::kFloat32, {1, 6, 5, 5}}};
  Cost c = (*k)->EstimateCost(in, out);
  EXPECT_DOUBLE_EQ(c.flops, 5400 + 150);
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (196 + 108 + 6 + 150));
  (*k)->AddPostOp({PostOpKind::kRelu});
  EXPECT_DOUBLE_EQ((*k)->EstimateCost(in, out).flops, 5400 + 150 + 150);
}

// oneDNN's verbose lines (one per primitive created and run, naming its implementation) while
// `f` runs.
std::string OneDnnLog(const std::function<void()>& f) {
  ::testing::internal::CaptureStdout();
  dnnl::set_verbose(2);
  f();
  dnnl::set_verbose(0);
  return ::testing::internal::GetCapturedStdout();
}

bool AvxFiveTwelve() {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core || isa == dnnl::cpu_isa::avx512_core_vnni ||
         isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
}

// Output rows wider than kMaxBrgconvRow stay off oneDNN's brgconv kernel, whose creation costs
// memory per column (the model_struct_fuzz finding: a 1-D Conv padded by 2^20 took 1.5-4 GB
// before its first run), and still compute the convolution: blocked kernels, the first-layer
// layout for 3 input channels, a grouped one that only the plain GEMM path takes, 2-D, and the
// finding itself with X and W one non-constant tensor.
TEST(Conv, WideRowsStayOffBrgconvAndMatchNaiveTwin) {
  const int64_t wide = kMaxBrgconvRow + 3;
  std::vector<ConvCase> cases = {
      {{1, 3, 1}, {1, 3, 1}, {{1}, {1}, {1048576}, {2}, 1}, false},
      {{1, 16, wide}, {16, 16, 3}, {{1}, {1}, {1}, {1}, 1}, true},
      {{1, 3, wide}, {16, 3, 3}, {{1}, {1}, {1}, {1}, 1}, true},
      {{1, 6, wide}, {6, 3, 3}, {{1}, {1}, {1}, {1}, 2}, true},
      {{1, 8, 2, wide}, {8, 8, 2, 3}, {{1, 1}, {1, 1}, {0, 1}, {1, 1}, 1}, false},
  };
  uint32_t seed = 40;
  for (const ConvCase& c : cases) {
    Tensor x = RandomTensor(c.x, seed++), w = RandomTensor(c.w, seed++);
    Tensor b = RandomTensor({c.w[0]}, seed++);
    Node n = ConvNode("Conv", c.g, c.bias);
    StatusOr<std::vector<Tensor>> out = Internal("not run");
    const std::string log = OneDnnLog([&] {
      out = RunPoisoned(
          n, c.bias ? std::vector<const Tensor*>{&x, &w, &b} : std::vector<const Tensor*>{&x, &w});
    });
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ(log.find("brgconv:"), std::string::npos) << log;
    EXPECT_NE(log.find(",convolution,"), std::string::npos) << "oneDNN ran no convolution";
    Tensor ref = NaiveConv(x, w, c.bias ? &b : nullptr, c.g);
    EXPECT_EQ(CompareFloat((*out)[0], ref, 1e-4f, 1e-4f), "") << "x dim 1 " << c.x[1];
  }
  // The control: a row of kMaxBrgconvRow columns still gets brgconv where oneDNN has it, so the
  // log above would have shown it.
  if (!AvxFiveTwelve()) {
    std::cout << "[ SKIPPED  ] the control: oneDNN 2.6 has brgconv only on AVX-512\n";
    return;
  }
  Geo g{{1}, {1}, {1}, {1}, 1};
  Tensor x = RandomTensor({1, 16, kMaxBrgconvRow}, 1), w = RandomTensor({16, 16, 3}, 2);
  const std::string log = OneDnnLog([&] {
    ASSERT_TRUE(RunPoisoned(ConvNode("Conv", g, false), {&x, &w}).ok());
  });
  EXPECT_NE(log.find("brgconv:"), std::string::npos) << log;
}

// The same inside a channels-last region: X and Y stored NHWC, where the row's width would
// otherwise give brgconv the tensors as they are.
TEST(Conv, WideRowsInAChannelsLastRegionStayOffBrgconv) {
  struct ForceNhwc {
    ForceNhwc() { SetRegionLayoutForTesting(RegionLayout::kNhwc); }
    ~ForceNhwc() { SetRegionLayoutForTesting(std::nullopt); }
  } force_nhwc;
  auto to_nhwc = [](const Tensor& t, bool back) {  // back: NHWC bytes -> NCHW
    Tensor r(DataType::kFloat32, t.shape());
    const int64_t N = t.dim(0), C = t.dim(1), P = t.numel() / (N * C);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t p = 0; p < P; ++p) {
          const int64_t nchw = (n * C + c) * P + p, nhwc = (n * P + p) * C + c;
          r.data<float>()[back ? nchw : nhwc] = t.data<float>()[back ? nhwc : nchw];
        }
    return r;
  };
  for (int64_t width : {kMaxBrgconvRow + 5, int64_t{3}}) {
    Geo g{{1, 1}, {1, 1}, {0, 1}, {0, 1}, 1};
    Tensor x = RandomTensor({1, 16, 2, width}, 7), w = RandomTensor({16, 16, 1, 3}, 8);
    Tensor b = RandomTensor({16}, 9), xl = to_nhwc(x, false);
    auto k = FindKernel("", "Conv")(ConvNode("Conv", g, true));
    ASSERT_TRUE(k.ok());
    ASSERT_TRUE((*k)->SetChannelsLast(true, true));
    NnTestContext ctx({&xl, &w, &b}, 1);
    Status st;
    const std::string log = OneDnnLog([&] { st = (*k)->Run(ctx); });
    ASSERT_TRUE(st.ok()) << st.message();
    if (width > kMaxBrgconvRow)
      EXPECT_EQ(log.find("brgconv:"), std::string::npos) << log;
    else if (AvxFiveTwelve())
      EXPECT_NE(log.find("brgconv:"), std::string::npos) << log;
    EXPECT_EQ(CompareFloat(to_nhwc(ctx.outputs()[0], true), NaiveConv(x, w, &b, g), 1e-4f, 1e-4f),
              "")
        << "width " << width;
  }
}

// ---- ConvTranspose ----

struct TCase {
  std::vector<int64_t> x, w;  // w = [C, OC/g, k...]
  Geo g;
  std::vector<int64_t> output_padding;
  bool bias;
};

std::vector<int64_t> TransposedSize(const TCase& c) {
  std::vector<int64_t> out;
  size_t sp = c.x.size() - 2;
  for (size_t i = 0; i < sp; ++i) {
    int64_t op = c.output_padding.empty() ? 0 : c.output_padding[i];
    out.push_back(c.g.s[i] * (c.x[i + 2] - 1) + (c.w[i + 2] - 1) * c.g.d[i] + 1 + op - c.g.pb[i] -
                  c.g.pe[i]);
  }
  return out;
}

TEST(ConvTranspose, MatchesNaiveTwinOnOddShapes) {
  std::vector<TCase> cases = {
      {{1, 3, 7, 7}, {3, 5, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, {1, 1}, 1}, {}, true},
      {{2, 4, 5, 7}, {4, 3, 3, 2}, {{2, 3}, {1, 2}, {0, 1}, {2, 0}, 2}, {1, 2}, true},
      {{1, 16, 13, 13}, {16, 16, 3, 3}, {{2, 2}, {1, 1}, {1, 1}, {1, 1}, 1}, {1, 1}, false},
      {{1, 2, 13}, {2, 7, 5}, {{3}, {2}, {4}, {0}, 1}, {2}, true},
      {{1, 2, 3, 4, 5},
       {2, 2, 2, 3, 2},
       {{1, 2, 2}, {1, 1, 2}, {0, 1, 0}, {1, 0, 0}, 1},
       {0, 1, 1},
       true},
      {{1, 1, 1, 1}, {1, 1, 1, 1}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}, 1}, {}, false},
      // Kernel = stride: the GEMM + pixel-shuffle path (2x2 s2, 3x2 s3x2 with 2 images, 1x1
      // s1), and its neighbours that stay on oneDNN (a pad, output_padding, groups).
      {{1, 8, 5, 7}, {8, 4, 2, 2}, {{2, 2}, {1, 1}, {0, 0}, {0, 0}, 1}, {}, true},
      {{2, 3, 4, 5}, {3, 5, 3, 2}, {{3, 2}, {1, 1}, {0, 0}, {0, 0}, 1}, {}, false},
      {{1, 6, 3, 3}, {6, 2, 1, 1}, {{1, 1}, {1, 1}, {0, 0}, {0, 0}, 1}, {}, true},
      // ... over blocks of input rows (each block's 256x130 GEMM result is shuffled in cache):
      // 37 one-row blocks, and 2 images of an 8-row block and a 3-row one.
      {{1, 4, 37, 130}, {4, 64, 2, 2}, {{2, 2}, {1, 1}, {0, 0}, {0, 0}, 1}, {}, true},
      {{2, 5, 11, 40}, {5, 48, 2, 2}, {{2, 2}, {1, 1}, {0, 0}, {0, 0}, 1}, {}, false},
      {{1, 4, 5, 5}, {4, 3, 2, 2}, {{2, 2}, {1, 1}, {1, 0}, {0, 1}, 1}, {}, true},
      {{1, 4, 5, 5}, {4, 3, 2, 2}, {{2, 2}, {1, 1}, {0, 0}, {0, 0}, 1}, {1, 1}, true},
      {{1, 4, 5, 5}, {4, 3, 2, 2}, {{2, 2}, {1, 1}, {0, 0}, {0, 0}, 2}, {}, true},
  };
  uint32_t seed = 100;
  for (const TCase& c : cases) {
    Tensor x = RandomTensor(c.x, seed++), w = RandomTensor(c.w, seed++);
    int64_t OC = c.w[1] * c.g.group;
    Tensor b = RandomTensor({OC}, seed++);
    Node n = ConvNode("ConvTranspose", c.g, c.bias);
    if (!c.output_padding.empty()) n.attrs.Set("output_padding", IntsAttr(c.output_padding));
    auto out = RunPoisoned(
        n, c.bias ? std::vector<const Tensor*>{&x, &w, &b} : std::vector<const Tensor*>{&x, &w}, 2);
    ASSERT_TRUE(out.ok()) << out.status().message();
    Tensor ref = NaiveConvTranspose(x, w, c.bias ? &b : nullptr, c.g, TransposedSize(c));
    EXPECT_EQ(CompareFloat((*out)[0], ref, 1e-4f, 1e-4f), "") << "case rank " << c.x.size();
  }
}

TEST(ConvTranspose, OutputShapeAndAutoPad) {
  Tensor x = RandomTensor({1, 2, 3, 3}, 7), w = RandomTensor({2, 2, 3, 3}, 8);
  Tensor b = RandomTensor({2}, 9);
  // output_shape larger than the natural 9x7 output: rows past it hold only bias (+ relu).
  Node n = MakeNode("ConvTranspose", 3, 1);
  n.attrs.Set("strides", IntsAttr({3, 2}));
  n.attrs.Set("output_shape", IntsAttr({10, 8}));
  Geo g{{3, 2}, {1, 1}, {0, 0}, {0, 0}, 1};
  Tensor ref = NaiveConvTranspose(x, w, &b, g, {10, 8});
  auto out = RunWithPostOps(n, {&x, &w, &b}, {{PostOpKind::kRelu}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(CompareFloat((*out)[0], ApplyRef(ref, {PostOpKind::kRelu})), "");
  // SAME_UPPER: output = input * stride; total pad 1 goes to the end.
  Node s = MakeNode("ConvTranspose", 2, 1);
  s.attrs.Set("strides", IntsAttr({2, 2}));
  s.attrs.Set("auto_pad", StringAttr("SAME_UPPER"));
  auto so = RunPoisoned(s, {&x, &w});
  ASSERT_TRUE(so.ok()) << so.status().message();
  EXPECT_EQ(CompareFloat((*so)[0], NaiveConvTranspose(x, w, nullptr,
                                                      {{2, 2}, {1, 1}, {0, 0}, {1, 1}, 1}, {6, 6})),
            "");
  s.attrs.Set("auto_pad", StringAttr("SAME_LOWER"));
  so = RunPoisoned(s, {&x, &w});
  ASSERT_TRUE(so.ok());
  EXPECT_EQ(CompareFloat((*so)[0], NaiveConvTranspose(x, w, nullptr,
                                                      {{2, 2}, {1, 1}, {1, 1}, {0, 0}, 1}, {6, 6})),
            "");
}

TEST(ConvTranspose, FusedActivationsEqualSeparateOps) {
  Tensor x = RandomTensor({1, 4, 5, 5}, 51, -2, 2), w = RandomTensor({4, 3, 3, 3}, 52);
  Tensor b = RandomTensor({3}, 53);
  Geo g{{2, 2}, {1, 1}, {1, 1}, {0, 0}, 1};
  Node n = ConvNode("ConvTranspose", g, true);
  Tensor plain = NaiveConvTranspose(x, w, &b, g, {10, 10});
  for (const PostOp& op : AllActivations()) {
    auto out = RunWithPostOps(n, {&x, &w, &b}, {op});
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ(CompareFloat((*out)[0], ApplyRef(plain, op), 1e-4f, 1e-4f), "")
        << static_cast<int>(op.kind);
  }
}

// The kernel = stride path applies fused activations to its shuffled rows.
TEST(ConvTranspose, KernelEqualsStrideFusedActivationsEqualSeparateOps) {
  Tensor x = RandomTensor({2, 5, 4, 6}, 61, -2, 2), w = RandomTensor({5, 3, 2, 2}, 62);
  Tensor b = RandomTensor({3}, 63);
  Geo g{{2, 2}, {1, 1}, {0, 0}, {0, 0}, 1};
  Node n = ConvNode("ConvTranspose", g, true);
  Tensor plain = NaiveConvTranspose(x, w, &b, g, {8, 12});
  for (const PostOp& op : AllActivations()) {
    auto out = RunWithPostOps(n, {&x, &w, &b}, {op});
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ(CompareFloat((*out)[0], ApplyRef(plain, op), 1e-4f, 1e-4f), "")
        << static_cast<int>(op.kind);
  }
}

TEST(ConvTranspose, BadInputAndCost) {
  Tensor x = RandomTensor({1, 3, 5, 5}, 1), w = RandomTensor({4, 2, 3, 3}, 2);
  Node n = MakeNode("ConvTranspose", 2, 1);
  auto out = RunPoisoned(n, {&x, &w});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("ConvTranspose_test"), std::string::npos);
  Node op = MakeNode("ConvTranspose", 2, 1);
  op.attrs.Set("output_padding", IntsAttr({1, 1}));  // must be < stride
  Tensor x4 = RandomTensor({1, 4, 5, 5}, 3);
  EXPECT_FALSE(RunPoisoned(op, {&x4, &w}).ok());
  auto k = FindKernel("", "ConvTranspose")(n);
  ASSERT_TRUE(k.ok());
  // 2 * N*IC*H*W * (OC/g)*kh*kw = 2 * 4*25 * 2*9 = 3600.
  Cost c =
      (*k)->EstimateCost({{DataType::kFloat32, {1, 4, 5, 5}}, {DataType::kFloat32, {4, 2, 3, 3}}},
                         {{DataType::kFloat32, {1, 2, 7, 7}}});
  EXPECT_DOUBLE_EQ(c.flops, 3600);
}

// ---- Layout measurement (not a test: run with --gtest_also_run_disabled_tests) ----
//
// Times oneDNN convolutions created with plain NCHW activations against `any` (blocked)
// activations including the reorders in and out, side by side in one process, to back the
// heuristic in conv.cc. Prints the median thread CPU time of 30 runs (run it with
// OMP_NUM_THREADS=1 so all work is on the calling thread); asserts nothing about time.

// CPU time of the calling thread: with OMP_NUM_THREADS=1 every kernel runs on it, and unlike
// wall time it does not count the time the (shared, overloaded) build VM preempts us.
double ThreadCpuMs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double MedianMs(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double TimeConv(const std::vector<int64_t>& xs, const std::vector<int64_t>& ws, int64_t stride,
                int64_t pad, int64_t group, bool blocked, std::string* impl) {
  using dnnl::memory;
  std::vector<int64_t> wd = ws;
  if (group > 1) wd = {group, ws[0] / group, ws[1], ws[2], ws[3]};
  int64_t oh = (xs[2] + 2 * pad - ws[2]) / stride + 1, ow = (xs[3] + 2 * pad - ws[3]) / stride + 1;
  std::vector<int64_t> ys = {xs[0], ws[0], oh, ow};
  auto any = [](const std::vector<int64_t>& s) {
    return memory::desc(DnnlDims(s), memory::data_type::f32, memory::format_tag::any);
  };
  memory::desc src_plain = DnnlPlainDesc(xs), dst_plain = DnnlPlainDesc(ys);
  dnnl::convolution_forward::desc d(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
      blocked ? any(xs) : src_plain, any(wd), blocked ? any(ys) : dst_plain, {stride, stride},
      {0, 0}, {pad, pad}, {pad, pad});
  dnnl::convolution_forward::primitive_desc pd(d, DnnlEngine());
  dnnl::convolution_forward conv(pd);
  *impl = pd.impl_info_str();
  Tensor x = RandomTensor(xs, 1), y(DataType::kFloat32, ys);
  memory xu(src_plain, DnnlEngine(), x.data<float>()), yu(dst_plain, DnnlEngine(), y.data<float>());
  memory xp = pd.src_desc() == src_plain ? xu : memory(pd.src_desc(), DnnlEngine());
  memory yp = pd.dst_desc() == dst_plain ? yu : memory(pd.dst_desc(), DnnlEngine());
  memory w(pd.weights_desc(), DnnlEngine());
  std::vector<double> times;
  for (int r = 0; r < 31; ++r) {
    double t0 = ThreadCpuMs();
    if (xp != xu) dnnl::reorder(xu, xp).execute(DnnlStream(), xu, xp);
    conv.execute(DnnlStream(), {{DNNL_ARG_SRC, xp}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, yp}});
    if (yp != yu) dnnl::reorder(yp, yu).execute(DnnlStream(), yp, yu);
    DnnlStream().wait();
    if (r > 0) times.push_back(ThreadCpuMs() - t0);
  }
  return MedianMs(times);
}

TEST(ConvBench, DISABLED_PlainVsBlockedActivations) {
  struct Shape {
    const char* name;
    std::vector<int64_t> x, w;
    int64_t stride, pad, group;
  } shapes[] = {
      {"stem 3->32 3x3 s2 224", {1, 3, 224, 224}, {32, 3, 3, 3}, 2, 1, 1},
      {"8->8 3x3 56", {1, 8, 56, 56}, {8, 8, 3, 3}, 1, 1, 1},
      {"128->128 3x3 28", {1, 128, 28, 28}, {128, 128, 3, 3}, 1, 1, 1},
      {"16->16 3x3 56", {1, 16, 56, 56}, {16, 16, 3, 3}, 1, 1, 1},
      {"64->64 3x3 56", {1, 64, 56, 56}, {64, 64, 3, 3}, 1, 1, 1},
      {"256->64 1x1 56", {1, 256, 56, 56}, {64, 256, 1, 1}, 1, 0, 1},
      {"64->256 1x1 56", {1, 64, 56, 56}, {256, 64, 1, 1}, 1, 0, 1},
      {"64->128 1x1 s2 56", {1, 64, 56, 56}, {128, 64, 1, 1}, 2, 0, 1},
      {"dw 128 3x3 28", {1, 128, 28, 28}, {128, 1, 3, 3}, 1, 1, 128},
      {"g32 128->128 3x3 28", {1, 128, 28, 28}, {128, 4, 3, 3}, 1, 1, 32},
      {"g4 64->64 3x3 28", {1, 64, 28, 28}, {64, 16, 3, 3}, 1, 1, 4},
      {"4->64 3x3 56", {1, 4, 56, 56}, {64, 4, 3, 3}, 1, 1, 1},
  };
  for (auto& s : shapes) {
    std::string pi, bi;
    double plain = TimeConv(s.x, s.w, s.stride, s.pad, s.group, false, &pi);
    double blocked = TimeConv(s.x, s.w, s.stride, s.pad, s.group, true, &bi);
    std::printf("%-22s plain %8.3f ms (%s)  blocked+reorders %8.3f ms (%s)  ratio %.2f\n", s.name,
                plain, pi.c_str(), blocked, bi.c_str(), plain / blocked);
  }
}

// What oneDNN 2.6 costs to make and run a wide 1-D convolution with `any` activations (brgconv
// on AVX-512), the explicit blocked layout conv.cc gives rows wider than kMaxBrgconvRow (X
// blocked too, or X plain for few input channels), and plain NCW (im2col + GEMM): creation wall
// time, the heap the primitive keeps, and the median thread CPU time of one run.
TEST(ConvBench, DISABLED_WideRowCreation) {
  using dnnl::memory;
  using tag = memory::format_tag;
  struct Shape {
    const char* name;
    int64_t iw, c, oc, k, pl, pr;
  } shapes[] = {
      {"3->1 k1 pads 2^20,2 (fuzz)", 1, 3, 1, 1, 1048576, 2},
      {"3->1 k1 row 65537", 65536, 3, 1, 1, 0, 1},
      {"64->64 k3 row 2^20", 1048576, 64, 64, 3, 1, 1},
      {"64->64 k3 row 65536", 65536, 64, 64, 3, 1, 1},
      {"64->64 k3 row 16384", 16384, 64, 64, 3, 1, 1},
      {"3->16 k3 row 65536", 65536, 3, 16, 3, 1, 1},
      {"8->64 k3 row 65536", 65536, 8, 64, 3, 1, 1},
  };
  auto heap_mb = [] {
    struct mallinfo2 m = mallinfo2();
    return double(m.uordblks + m.hblkhd) / (1 << 20);
  };
  for (const Shape& s : shapes) {
    const int64_t ow = s.iw + s.pl + s.pr - s.k + 1;
    const tag blocked = BlockedActivationTag(3);
    struct Variant {
      const char* name;
      tag x, y;
    } variants[] = {{"any", tag::any, tag::any},
                    {"blocked", s.c >= 16 ? blocked : tag::ncw, blocked},
                    {"plain", tag::ncw, tag::ncw}};
    std::printf("%-27s", s.name);
    for (const Variant& v : variants) {
      const double h0 = heap_mb();
      const auto t0 = std::chrono::steady_clock::now();
      memory::desc xd({1, s.c, s.iw}, memory::data_type::f32, v.x);
      memory::desc yd({1, s.oc, ow}, memory::data_type::f32, v.y);
      memory::desc wd({s.oc, s.c, s.k}, memory::data_type::f32, tag::any);
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                        dnnl::algorithm::convolution_direct, xd, wd, yd, {1}, {0},
                                        {s.pl}, {s.pr});
      dnnl::convolution_forward::primitive_desc pd(d, DnnlEngine());
      dnnl::convolution_forward conv(pd);
      const double create_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const double kept = heap_mb() - h0;
      memory x(pd.src_desc(), DnnlEngine()), w(pd.weights_desc(), DnnlEngine()),
          y(pd.dst_desc(), DnnlEngine());
      std::vector<double> times;
      for (int r = 0; r < 6; ++r) {
        const double c0 = ThreadCpuMs();
        conv.execute(DnnlStream(), {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, y}});
        DnnlStream().wait();
        if (r > 0) times.push_back(ThreadCpuMs() - c0);
      }
      std::printf(" | %s %s make %7.1f ms keeps %6.1f MB run %8.3f ms", v.name, pd.impl_info_str(),
                  create_ms, kept, MedianMs(times));
    }
    std::printf("\n");
  }
}

// ---- Kernel throughput (not a test: run with --gtest_also_run_disabled_tests) ----

struct BenchCase {
  const char* name;
  Node node;
  std::vector<std::vector<int64_t>> inputs;
};

TEST(NnBench, DISABLED_KernelThroughput) {
  auto node = [](const char* op, int nin, std::vector<std::pair<const char*, AttrValue>> attrs) {
    Node n = MakeNode(op, nin, 1);
    for (auto& [k, v] : attrs) n.attrs.Set(k, v);
    return n;
  };
  std::vector<BenchCase> cases = {
      {"Conv 64->64 3x3 56x56",
       node("Conv", 3, {{"pads", IntsAttr({1, 1, 1, 1})}}),
       {{1, 64, 56, 56}, {64, 64, 3, 3}, {64}}},
      {"Conv 256->64 1x1 56x56", node("Conv", 3, {}), {{1, 256, 56, 56}, {64, 256, 1, 1}, {64}}},
      {"Conv dw 128 3x3 28x28",
       node("Conv", 3, {{"pads", IntsAttr({1, 1, 1, 1})}, {"group", IntAttr(128)}}),
       {{1, 128, 28, 28}, {128, 1, 3, 3}, {128}}},
      {"ConvTranspose 64->32 k4 s2 28",
       node("ConvTranspose", 2, {{"strides", IntsAttr({2, 2})}, {"pads", IntsAttr({1, 1, 1, 1})}}),
       {{1, 64, 28, 28}, {64, 32, 4, 4}}},
      {"MatMul 128x768 x 768x768", node("MatMul", 2, {}), {{128, 768}, {768, 768}}},
      {"MatMul 12x128x64 x 12x64x128", node("MatMul", 2, {}), {{12, 128, 64}, {12, 64, 128}}},
      {"Gemm 1x2048 x 1000x2048^T",
       node("Gemm", 3, {{"transB", IntAttr(1)}}),
       {{1, 2048}, {1000, 2048}, {1000}}},
      {"Einsum bhqd,bhkd->bhqk",
       node("Einsum", 2, {{"equation", StringAttr("bhqd,bhkd->bhqk")}}),
       {{1, 12, 128, 64}, {1, 12, 128, 64}}},
      {"MaxPool 3x3 s2 64x112x112",
       node("MaxPool", 1,
            {{"kernel_shape", IntsAttr({3, 3})},
             {"strides", IntsAttr({2, 2})},
             {"pads", IntsAttr({1, 1, 1, 1})}}),
       {{1, 64, 112, 112}}},
      {"AveragePool 2x2 s2 256x56x56",
       node("AveragePool", 1, {{"kernel_shape", IntsAttr({2, 2})}, {"strides", IntsAttr({2, 2})}}),
       {{1, 256, 56, 56}}},
      {"GlobalAveragePool 2048x7x7", node("GlobalAveragePool", 1, {}), {{1, 2048, 7, 7}}},
      {"LayerNorm 128x768", node("LayerNormalization", 3, {}), {{128, 768}, {768}, {768}}},
      {"BatchNorm 64x56x56",
       node("BatchNormalization", 5, {}),
       {{1, 64, 56, 56}, {64}, {64}, {64}, {64}}},
      {"InstanceNorm 64x56x56",
       node("InstanceNormalization", 3, {}),
       {{1, 64, 56, 56}, {64}, {64}}},
  };
  std::printf("%-32s %10s %10s %10s\n", "kernel", "cpu ms", "GFLOP/s", "GB/s");
  for (BenchCase& c : cases) {
    std::vector<Tensor> ins;
    uint32_t seed = 1;
    for (auto& s : c.inputs) ins.push_back(RandomTensor(s, seed++, 0.1f, 1.0f));
    std::vector<const Tensor*> ptrs;
    for (auto& t : ins) ptrs.push_back(&t);
    auto k = FindKernel("", c.node.op_type)(c.node);
    ASSERT_TRUE(k.ok());
    std::vector<double> times;
    std::vector<TensorDesc> in_d, out_d;
    for (auto& t : ins) in_d.push_back({t.dtype(), t.shape()});
    for (int r = 0; r < 21; ++r) {
      NnTestContext ctx(ptrs, 1);
      double t0 = ThreadCpuMs();
      ASSERT_TRUE((*k)->Run(ctx).ok()) << c.name;
      double ms = ThreadCpuMs() - t0;
      if (r > 0) times.push_back(ms);
      if (out_d.empty()) out_d.push_back({ctx.outputs()[0].dtype(), ctx.outputs()[0].shape()});
    }
    Cost cost = (*k)->EstimateCost(in_d, out_d);
    double ms = MedianMs(times);
    std::printf("%-32s %10.3f %10.2f %10.2f\n", c.name, ms, cost.flops / ms / 1e6,
                cost.bytes / ms / 1e6);
  }
}

}  // namespace
}  // namespace opscope::engine::testing
