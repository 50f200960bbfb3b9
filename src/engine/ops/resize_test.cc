// Resize / Upsample / GridSample against naive twins. The Resize twin follows ONNX's reference
// algorithm (pick the n nearest source indexes of an edge-padded axis by sorting on distance,
// then an N-D tensor-product sum) rather than the kernel's separable per-axis passes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>

#include "engine/ops/common.h"
#include "engine/ops/layout_copy.h"
#include "engine/testing/kernel_runner.h"

namespace opscope::engine {
namespace {

using testing::FloatAttr;
using testing::FloatsAttr;
using testing::FloatTensor;
using testing::IntAttr;
using testing::IntTensor;
using testing::MakeNode;
using testing::RandomTensor;
using testing::RunKernel;
using testing::StringAttr;

struct Taps {
  std::vector<int64_t> idx;
  std::vector<double> w;
  bool extrap = false;
};

Taps ReferenceTaps(const std::string& mode, const std::string& coord, const std::string& nearest,
                   double A, bool exclude, int64_t in, double scale, int64_t x, double r0,
                   double r1, int64_t out) {
  const double ow = scale * static_cast<double>(in);
  double xo;
  if (coord == "half_pixel_symmetric")
    xo = static_cast<double>(in) / 2 * (1 - out / ow) + (x + 0.5) / scale - 0.5;
  else if (coord == "align_corners")
    xo = ow == 1 ? 0 : x * (in - 1) / (ow - 1);
  else if (coord == "asymmetric")
    xo = x / scale;
  else if (coord == "pytorch_half_pixel")
    xo = ow == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  else if (coord == "tf_half_pixel_for_nearest")
    xo = (x + 0.5) / scale;
  else if (coord == "tf_crop_and_resize")
    xo = (ow == 1 ? (r1 - r0) * (in - 1) / 2 : x * (r1 - r0) * (in - 1) / (ow - 1)) + r0 * (in - 1);
  else
    xo = (x + 0.5) / scale - 0.5;
  Taps t;
  if (coord == "tf_crop_and_resize" && (xo < 0 || xo > in - 1)) {
    t.extrap = true;
    return t;
  }
  const double ratio = xo == std::floor(xo) ? 1 : xo - std::floor(xo);
  std::vector<double> c;
  if (mode == "linear") {
    c = {1 - ratio, ratio};
  } else if (mode == "cubic") {
    const double r = ratio, s = 1 - ratio;
    c = {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
         ((A + 2) * r - (A + 3)) * r * r + 1, ((A + 2) * s - (A + 3)) * s * s + 1,
         ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A};
  } else if (ratio == 1) {
    c = {0, 1};
  } else if (nearest == "round_prefer_ceil") {
    c = {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
  } else if (nearest == "floor") {
    c = {1, 0};
  } else if (nearest == "ceil") {
    c = {0, 1};
  } else {
    c = {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
  }
  const int n = static_cast<int>(c.size());
  const int64_t pad = (n + 1) / 2;
  std::vector<int64_t> cand;
  for (int64_t i = -pad; i < in + pad; ++i) cand.push_back(i);
  std::stable_sort(cand.begin(), cand.end(), [&](int64_t a, int64_t b) {
    const double da = std::fabs(xo - a), db = std::fabs(xo - b);
    return da != db ? da < db : a < b;
  });
  std::vector<int64_t> near(cand.begin(), cand.begin() + n);
  std::sort(near.begin(), near.end());
  if (exclude && mode == "cubic") {  // the attribute is defined for cubic only
    double sum = 0;
    for (int k = 0; k < n; ++k) {
      if (near[k] < 0 || near[k] >= in) c[k] = 0;
      sum += c[k];
    }
    for (double& v : c) v /= sum;
  }
  for (int k = 0; k < n; ++k) {
    t.idx.push_back(std::clamp<int64_t>(near[k], 0, in - 1));
    t.w.push_back(c[k]);
  }
  return t;
}

Tensor ReferenceResize(const Tensor& x, const std::vector<int64_t>& os,
                       const std::vector<double>& sc, const std::string& mode,
                       const std::string& coord, const std::string& nearest, double A, bool exclude,
                       const std::vector<double>& roi, float extrap) {
  const int r = x.rank();
  std::vector<std::vector<Taps>> taps(r);
  for (int d = 0; d < r; ++d)
    for (int64_t o = 0; o < os[d]; ++o)
      taps[d].push_back(ReferenceTaps(mode, coord, nearest, A, exclude, x.dim(d), sc[d], o,
                                      roi.empty() ? 0 : roi[d], roi.empty() ? 1 : roi[d + r],
                                      os[d]));
  Tensor y(DataType::kFloat32, os);
  const std::vector<int64_t> is = ContiguousStrides(x.shape());
  for (int64_t o = 0; o < y.numel(); ++o) {
    std::vector<const Taps*> t(r);
    int64_t rem = o;
    bool ex = false;
    for (int d = r - 1; d >= 0; --d) {
      t[d] = &taps[d][rem % os[d]];
      rem /= os[d];
      ex = ex || t[d]->extrap;
    }
    if (ex) {
      y.data<float>()[o] = extrap;
      continue;
    }
    double acc = 0;
    std::vector<size_t> k(r, 0);
    while (true) {
      double w = 1;
      int64_t off = 0;
      for (int d = 0; d < r; ++d) {
        w *= t[d]->w[k[d]];
        off += t[d]->idx[k[d]] * is[d];
      }
      acc += w * x.data<float>()[off];
      int d = r - 1;
      for (; d >= 0; --d) {
        if (++k[d] < t[d]->idx.size()) break;
        k[d] = 0;
      }
      if (d < 0) break;
    }
    y.data<float>()[o] = static_cast<float>(acc);
  }
  return y;
}

TEST(ResizeTest, RandomModesAgainstReferenceAlgorithm) {
  std::mt19937 rng(21);
  const char* coords[] = {"half_pixel",          "pytorch_half_pixel",        "align_corners",
                          "asymmetric",          "tf_half_pixel_for_nearest", "tf_crop_and_resize",
                          "half_pixel_symmetric"};
  const char* nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  const char* modes[] = {"nearest", "linear", "cubic"};
  const float scale_choices[] = {0.5f, 0.6f, 0.8f, 1.0f, 1.5f, 2.0f, 3.0f};
  for (int iter = 0; iter < 150; ++iter) {
    const std::string mode = modes[iter % 3];
    const std::string coord = coords[rng() % 7];
    const std::string nearest = nearests[rng() % 4];
    const bool exclude = rng() % 2;
    const float A = rng() % 2 ? -0.75f : -0.5f;
    const int r = 2 + static_cast<int>(rng() % 3);
    std::vector<int64_t> shape(r);
    for (int64_t& d : shape) d = 1 + rng() % 7;
    Tensor x = RandomTensor(shape, iter);
    const bool use_sizes = rng() % 2;
    std::vector<double> sc(r);
    std::vector<int64_t> os(r);
    std::vector<float> scales_f(r);
    for (int d = 0; d < r; ++d) {
      if (d < r - 2 && rng() % 2) {
        scales_f[d] = 1;
        os[d] = shape[d];
      } else if (use_sizes) {
        os[d] = 1 + rng() % 9;
      } else {
        scales_f[d] = scale_choices[rng() % 7];
        os[d] = static_cast<int64_t>(std::floor(static_cast<double>(scales_f[d]) * shape[d]));
      }
      sc[d] = use_sizes ? static_cast<double>(os[d]) / shape[d] : scales_f[d];
    }
    std::vector<double> roi;
    std::vector<float> roi_f;
    if (coord == "tf_crop_and_resize") {
      for (int d = 0; d < 2 * r; ++d) {
        roi_f.push_back(d < r ? 0.1f * (rng() % 4) : 0.7f + 0.2f * (rng() % 3));
        roi.push_back(roi_f.back());
      }
    }
    Node n = MakeNode("Resize", 4, 1, 13);
    n.attrs.Set("mode", StringAttr(mode));
    n.attrs.Set("coordinate_transformation_mode", StringAttr(coord));
    n.attrs.Set("nearest_mode", StringAttr(nearest));
    n.attrs.Set("cubic_coeff_a", FloatAttr(A));
    n.attrs.Set("exclude_outside", IntAttr(exclude));
    n.attrs.Set("extrapolation_value", FloatAttr(-7.f));
    Tensor roi_t = FloatTensor({static_cast<int64_t>(roi_f.size())}, roi_f);
    Tensor scales_t = FloatTensor({r}, scales_f);
    Tensor sizes_t = IntTensor({r}, os);
    Tensor empty(DataType::kFloat32, {0});
    auto out =
        RunKernel(n, {&x, &roi_t, use_sizes ? &empty : &scales_t, use_sizes ? &sizes_t : nullptr});
    ASSERT_TRUE(out.ok()) << out.status().message();
    Tensor want = ReferenceResize(x, os, sc, mode, coord, nearest, A, exclude, roi, -7.f);
    EXPECT_EQ(testing::CompareFloat((*out)[0], want, 1e-5f, 1e-4f), "")
        << mode << " " << coord << " " << nearest << " exclude=" << exclude << " shape "
        << ShapeString(shape) << " -> " << ShapeString(os);
  }
}

TEST(ResizeTest, LargeEnoughToRunThreaded) {
  // 1x8x40x40 -> 1x8x80x80 crosses ParallelFor's threshold in every pass.
  Tensor x = RandomTensor({1, 8, 40, 40}, 5);
  Tensor roi(DataType::kFloat32, {0});
  Tensor scales = FloatTensor({4}, {1, 1, 2, 2});
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    Node n = MakeNode("Resize", 3, 1, 13);
    n.attrs.Set("mode", StringAttr(mode));
    auto out = RunKernel(n, {&x, &roi, &scales});
    ASSERT_TRUE(out.ok()) << out.status().message();
    Tensor want = ReferenceResize(x, {1, 8, 80, 80}, {1, 1, 2, 2}, mode, "half_pixel",
                                  "round_prefer_floor", -0.75, false, {}, 0);
    EXPECT_EQ(testing::CompareFloat((*out)[0], want, 1e-5f, 1e-4f), "") << mode;
  }
}

TEST(ResizeTest, NearestMovesAnyDtype) {
  Tensor x = IntTensor({1, 2}, {5, 9});
  Tensor scales = FloatTensor({2}, {1, 2});
  Node n = MakeNode("Resize", 3, 1, 13);
  n.attrs.Set("coordinate_transformation_mode", StringAttr("asymmetric"));
  Tensor roi(DataType::kFloat32, {0});
  auto r = RunKernel(n, {&x, &roi, &scales});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(ReadInts((*r)[0]), (std::vector<int64_t>{5, 5, 9, 9}));
  n.attrs.Set("mode", StringAttr("linear"));
  EXPECT_FALSE(RunKernel(n, {&x, &roi, &scales}).ok());  // linear needs float
}

TEST(ResizeTest, Opset10AndUpsampleLegacySemantics) {
  Tensor x = FloatTensor({1, 1, 2, 2}, {1, 2, 3, 4});
  // Upsample-7: scales attribute, nearest floor(x / scale).
  Node u7 = MakeNode("Upsample", 1, 1, 7);
  u7.attrs.Set("scales", FloatsAttr({1, 1, 2, 3}));
  auto r = RunKernel(u7, {&x});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(testing::CompareFloat((*r)[0],
                                  FloatTensor({1, 1, 4, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                                             3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}),
                                  0, 0),
            "");
  // Upsample-9 and Resize-10: scales input; linear is asymmetric with edge clamping.
  Tensor s = FloatTensor({4}, {1, 1, 1, 2});
  for (const char* op : {"Upsample", "Resize"}) {
    Node n = MakeNode(op, 2, 1, std::string(op) == "Upsample" ? 9 : 10);
    n.attrs.Set("mode", StringAttr("linear"));
    r = RunKernel(n, {&x, &s});
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(testing::CompareFloat(
                  (*r)[0], FloatTensor({1, 1, 2, 4}, {1, 1.5f, 2, 2, 3, 3.5f, 4, 4}), 1e-6f, 0),
              "")
        << op;
  }
  // Resize-10 nearest downsampling rounds up (ceil), as ONNX Runtime does.
  Tensor x5 = FloatTensor({1, 5}, {0, 1, 2, 3, 4});
  Tensor d = FloatTensor({2}, {1, 0.6f});
  r = RunKernel(MakeNode("Resize", 2, 1, 10), {&x5, &d});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(testing::CompareFloat((*r)[0], FloatTensor({1, 3}, {0, 2, 4}), 0, 0), "");
}

TEST(ResizeTest, BadInput) {
  Tensor x = RandomTensor({1, 1, 2, 2}, 1);
  Tensor roi(DataType::kFloat32, {0});
  Tensor scales = FloatTensor({4}, {1, 1, 2, 2});
  Tensor sizes = IntTensor({4}, {1, 1, 4, 4});
  Tensor short_scales = FloatTensor({2}, {2, 2});
  Tensor neg = FloatTensor({4}, {1, 1, -2, 2});
  Node n = MakeNode("Resize", 4, 1, 13);
  EXPECT_FALSE(RunKernel(n, {&x, &roi, &scales, &sizes}).ok());
  EXPECT_FALSE(RunKernel(n, {&x, &roi, &short_scales}).ok());
  EXPECT_FALSE(RunKernel(n, {&x, &roi, &neg}).ok());
  EXPECT_FALSE(RunKernel(n, {&x, &roi}).ok());
  Node crop = MakeNode("Resize", 4, 1, 13);
  crop.attrs.Set("coordinate_transformation_mode", StringAttr("tf_crop_and_resize"));
  EXPECT_FALSE(RunKernel(crop, {&x, &roi, &scales}).ok());  // roi missing
  Node bad = MakeNode("Resize", 4, 1, 13);
  bad.attrs.Set("mode", StringAttr("area"));
  EXPECT_FALSE(FindKernel("", "Resize")(bad).ok());
  Node policy = MakeNode("Resize", 4, 1, 18);
  policy.attrs.Set("keep_aspect_ratio_policy", StringAttr("fit"));
  EXPECT_FALSE(FindKernel("", "Resize")(policy).ok());
  Node axes = MakeNode("Resize", 4, 1, 18);
  axes.attrs.Set("axes", testing::IntsAttr({2, -2}));  // repeated axis
  Tensor two = FloatTensor({2}, {2, 2});
  EXPECT_FALSE(RunKernel(axes, {&x, &roi, &two}).ok());
}

TEST(ResizeTest, AntialiasRunsWhereItChangesNothingAndOtherwiseNamesTheNode) {
  Tensor x = RandomTensor({1, 1, 4, 4}, 2);
  Tensor roi(DataType::kFloat32, {0});
  Tensor up = FloatTensor({4}, {1, 1, 2, 2}), down = FloatTensor({4}, {1, 1, 0.5f, 0.5f});
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    Node plain = MakeNode("Resize", 3, 1, 18);
    plain.attrs.Set("mode", StringAttr(mode));
    Node aa = plain;
    aa.attrs.Set("antialias", IntAttr(1));
    auto want = RunKernel(plain, {&x, &roi, &up});
    auto got = RunKernel(aa, {&x, &roi, &up});
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(testing::CompareFloat((*got)[0], (*want)[0], 0, 0), "") << mode;
    auto d = RunKernel(aa, {&x, &roi, &down});
    if (std::string(mode) == "nearest") {
      EXPECT_TRUE(d.ok()) << d.status().message();
    } else {
      ASSERT_FALSE(d.ok());
      EXPECT_NE(d.status().message().find("'" + aa.name + "'"), std::string::npos);
      EXPECT_NE(d.status().message().find("antialias"), std::string::npos);
      EXPECT_EQ(d.status().code(), StatusCode::kUnsupported);
    }
  }
}

// Bilinear on the last two axes follows ONNX Runtime's arithmetic bit for bit (a quantized model
// that re-quantizes after a Resize amplifies any last-bit difference: docs/corpus.md,
// isnet_quint8). The twin below is ORT's expression written out naively: float coordinates,
// weights as float distances (0.5 and 0.5 at an edge), the four products summed in that order.
TEST(ResizeTest, BilinearMatchesOnnxRuntimesArithmeticExactly) {
  auto twin = [](const Tensor& x, int64_t oh, int64_t ow, float sh, float sw, bool half_pixel) {
    const int64_t n = x.dim(0) * x.dim(1), h = x.dim(2), w = x.dim(3);
    std::vector<float> out(static_cast<size_t>(n * oh * ow));
    auto coord = [&](int64_t o, float s, int64_t len, int64_t* i1, int64_t* i2, float* d1,
                     float* d2) {
      float c = static_cast<float>(o);
      if (s != 1.0f) c = half_pixel ? ((c + 0.5f) / s) - 0.5f : c / s;
      c = std::max(0.0f, std::min(c, static_cast<float>(len - 1)));
      *i1 = std::min(static_cast<int64_t>(c), len - 1);
      *i2 = std::min(*i1 + 1, len - 1);
      *d1 = std::fabs(c - static_cast<float>(*i1));
      *d2 = std::fabs(c - static_cast<float>(*i2));
      if (*i1 == *i2) *d1 = *d2 = 0.5f;
    };
    const float* in = x.data<float>();
    for (int64_t p = 0; p < n; ++p)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xx = 0; xx < ow; ++xx) {
          int64_t y1, y2, x1, x2;
          float dy1, dy2, dx1, dx2;
          coord(y, sh, h, &y1, &y2, &dy1, &dy2);
          coord(xx, sw, w, &x1, &x2, &dx1, &dx2);
          const float* b = in + p * h * w;
          out[(p * oh + y) * ow + xx] = dx2 * dy2 * b[y1 * w + x1] + dx1 * dy2 * b[y1 * w + x2] +
                                        dx2 * dy1 * b[y2 * w + x1] + dx1 * dy1 * b[y2 * w + x2];
        }
    return out;
  };
  Tensor roi(DataType::kFloat32, {0});
  struct Case {
    std::vector<int64_t> shape;
    float sh, sw;
    const char* coord;
  };
  for (const Case& c :
       {Case{{1, 3, 128, 128}, 2, 2, "half_pixel"}, Case{{2, 5, 7, 13}, 3, 1.5f, "half_pixel"},
        Case{{1, 2, 9, 4}, 1, 4, "asymmetric"}, Case{{1, 1, 16, 16}, 0.5f, 0.75f, "half_pixel"}}) {
    Tensor x = RandomTensor(c.shape, 11);
    Node n = MakeNode("Resize", 3, 1, 13);
    n.attrs.Set("mode", StringAttr("linear"));
    n.attrs.Set("coordinate_transformation_mode", StringAttr(c.coord));
    Tensor scales = FloatTensor({4}, {1, 1, c.sh, c.sw});
    auto got = RunKernel(n, {&x, &roi, &scales});
    ASSERT_TRUE(got.ok()) << got.status().message();
    const int64_t oh = static_cast<int64_t>(std::floor(c.sh * c.shape[2]));
    const int64_t ow = static_cast<int64_t>(std::floor(c.sw * c.shape[3]));
    std::vector<float> want = twin(x, oh, ow, c.sh, c.sw, std::string(c.coord) == "half_pixel");
    ASSERT_EQ((*got)[0].numel(), static_cast<int64_t>(want.size()));
    const float* g = (*got)[0].data<float>();
    int differ = 0;
    for (size_t i = 0; i < want.size(); ++i) differ += g[i] != want[i];
    EXPECT_EQ(differ, 0) << c.coord << " " << c.sh << "x" << c.sw;
  }
}

TEST(ResizeTest, Opset18AxesAndKeepAspectRatioPolicy) {
  Tensor x = RandomTensor({2, 3, 4, 8}, 3);
  Tensor roi(DataType::kFloat32, {0});
  Tensor empty(DataType::kFloat32, {0});
  auto run = [&](Node n, const Tensor* scales, const Tensor* sizes) {
    n.attrs.Set("mode", StringAttr("linear"));
    auto r = RunKernel(n, {&x, &roi, scales ? scales : &empty, sizes});
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? (*r)[0] : Tensor();
  };
  // axes [2, 3] (and [-1, -2] in the other order) equal full-rank scales.
  Tensor full = FloatTensor({4}, {1, 1, 1.5f, 0.5f});
  Tensor want = run(MakeNode("Resize", 3, 1, 18), &full, nullptr);
  Node ax = MakeNode("Resize", 3, 1, 18);
  ax.attrs.Set("axes", testing::IntsAttr({2, 3}));
  Tensor two = FloatTensor({2}, {1.5f, 0.5f});
  EXPECT_EQ(testing::CompareFloat(run(ax, &two, nullptr), want, 0, 0), "");
  Node neg = MakeNode("Resize", 3, 1, 18);
  neg.attrs.Set("axes", testing::IntsAttr({-1, -2}));
  Tensor swapped = FloatTensor({2}, {0.5f, 1.5f});
  EXPECT_EQ(testing::CompareFloat(run(neg, &swapped, nullptr), want, 0, 0), "");
  // sizes over axes; stretch is the default.
  Node sz = MakeNode("Resize", 4, 1, 18);
  sz.attrs.Set("axes", testing::IntsAttr({2, 3}));
  Tensor sizes = IntTensor({2}, {6, 6});
  Tensor out = run(sz, nullptr, &sizes);
  EXPECT_EQ(out.shape(), (std::vector<int64_t>{2, 3, 6, 6}));
  Tensor full_sizes = IntTensor({4}, {2, 3, 6, 6});
  Tensor want_sizes = run(MakeNode("Resize", 4, 1, 18), nullptr, &full_sizes);
  EXPECT_EQ(testing::CompareFloat(out, want_sizes, 0, 0), "");
  // not_larger: one scale min(6/4, 6/8) = 0.75 -> [3, 6]; not_smaller: 1.5 -> [6, 12]. Each
  // equals resizing with that scale on both axes.
  for (auto [policy, scale, h, w] :
       {std::tuple{"not_larger", 0.75f, 3, 6}, std::tuple{"not_smaller", 1.5f, 6, 12}}) {
    Node p = sz;
    p.attrs.Set("keep_aspect_ratio_policy", StringAttr(policy));
    Tensor got = run(p, nullptr, &sizes);
    EXPECT_EQ(got.shape(), (std::vector<int64_t>{2, 3, h, w})) << policy;
    Tensor s = FloatTensor({4}, {1, 1, scale, scale});
    EXPECT_EQ(testing::CompareFloat(got, run(MakeNode("Resize", 3, 1, 18), &s, nullptr), 0, 0), "")
        << policy;
  }
  // half_pixel_symmetric, ONNX's opset-19 example: [1 2 3 4] scaled by 0.6 -> [1.667, 3.333].
  Tensor row = FloatTensor({1, 1, 1, 4}, {1, 2, 3, 4});
  Tensor s06 = FloatTensor({4}, {1, 1, 1, 0.6f});
  Node hps = MakeNode("Resize", 3, 1, 19);
  hps.attrs.Set("mode", StringAttr("linear"));
  hps.attrs.Set("coordinate_transformation_mode", StringAttr("half_pixel_symmetric"));
  auto r = RunKernel(hps, {&row, &roi, &s06});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(testing::CompareFloat((*r)[0], FloatTensor({1, 1, 1, 2}, {5.0f / 3, 10.0f / 3}), 1e-5f),
            "");
}

TEST(ResizeTest, CostCountsTapsPerResizedAxis) {
  Node n = MakeNode("Resize", 3, 1, 13);
  n.attrs.Set("mode", StringAttr("linear"));
  auto k = FindKernel("", "Resize")(n);
  ASSERT_TRUE(k.ok());
  TensorDesc in{DataType::kFloat32, {1, 2, 4, 4}}, out{DataType::kFloat32, {1, 2, 8, 8}};
  Cost c = (*k)->EstimateCost({in}, {out});
  EXPECT_EQ(c.flops, 128.0 * 2 * 2 * 2);  // 128 outputs, 2 taps, multiply-add, 2 resized axes
  EXPECT_EQ(c.bytes, (32 + 128) * 4.0);
}

// ------------------------------------------------------------------ GridSample

double Pix(const Tensor& x, int64_t n, int64_t c, int64_t yy, int64_t xx) {
  const int64_t H = x.dim(2), W = x.dim(3);
  if (yy < 0 || yy >= H || xx < 0 || xx >= W) return 0;
  return x.data<float>()[((n * x.dim(1) + c) * H + yy) * W + xx];
}

double PadCoord(double v, int64_t size, const std::string& pad, bool align) {
  if (pad == "border") return std::min(std::max(v, 0.0), static_cast<double>(size - 1));
  if (pad == "reflection") {
    const double lo = align ? 0 : -0.5, hi = align ? size - 1 : size - 0.5;
    const double span = hi - lo;
    if (span <= 0) return 0;
    // Bounce between lo and hi, one reflection at a time.
    for (int i = 0; i < 1000 && (v < lo || v > hi); ++i) v = v < lo ? 2 * lo - v : 2 * hi - v;
    return std::min(std::max(v, 0.0), static_cast<double>(size - 1));
  }
  return v;
}

double Cubic(double d) {
  const double A = -0.75;
  d = std::fabs(d);
  if (d <= 1) return ((A + 2) * d - (A + 3)) * d * d + 1;
  if (d < 2) return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
  return 0;
}

TEST(GridSampleTest, AllModesPaddingsAlignAgainstTwin) {
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> u(-1.6f, 1.6f);
  for (const std::string mode : {"bilinear", "nearest", "bicubic"})
    for (const std::string pad : {"zeros", "border", "reflection"})
      for (int align = 0; align < 2; ++align) {
        // The last combination is large enough for ParallelFor to split the rows.
        const bool big = mode == "bicubic" && pad == "reflection" && align == 1;
        const int64_t N = 2, C = big ? 16 : 3, H = 1 + rng() % 6, W = 1 + rng() % 6,
                      Ho = big ? 40 : 4, Wo = big ? 40 : 5;
        Tensor x = RandomTensor({N, C, H, W}, 3);
        Tensor g(DataType::kFloat32, {N, Ho, Wo, 2});
        for (int64_t i = 0; i < g.numel(); ++i) g.data<float>()[i] = u(rng);
        Node n = MakeNode("GridSample", 2, 1, 16);
        n.attrs.Set("mode", StringAttr(mode));
        n.attrs.Set("padding_mode", StringAttr(pad));
        n.attrs.Set("align_corners", IntAttr(align));
        auto out = RunKernel(n, {&x, &g});
        ASSERT_TRUE(out.ok()) << out.status().message();
        Tensor want(DataType::kFloat32, {N, C, Ho, Wo});
        for (int64_t b = 0; b < N; ++b)
          for (int64_t c = 0; c < C; ++c)
            for (int64_t i = 0; i < Ho; ++i)
              for (int64_t j = 0; j < Wo; ++j) {
                const float* gp = g.data<float>() + ((b * Ho + i) * Wo + j) * 2;
                double ix = align ? (gp[0] + 1) / 2.0 * (W - 1) : ((gp[0] + 1) * W - 1) / 2.0;
                double iy = align ? (gp[1] + 1) / 2.0 * (H - 1) : ((gp[1] + 1) * H - 1) / 2.0;
                double v = 0;
                if (mode == "bicubic") {
                  const double fx = std::floor(ix), fy = std::floor(iy);
                  for (int a = -1; a <= 2; ++a)
                    for (int e = -1; e <= 2; ++e) {
                      const double ty = PadCoord(fy + a, H, pad, align);
                      const double tx = PadCoord(fx + e, W, pad, align);
                      v += Cubic(iy - (fy + a)) * Cubic(ix - (fx + e)) *
                           Pix(x, b, c, static_cast<int64_t>(ty), static_cast<int64_t>(tx));
                    }
                } else {
                  ix = PadCoord(ix, W, pad, align);
                  iy = PadCoord(iy, H, pad, align);
                  if (mode == "nearest") {
                    v = Pix(x, b, c, static_cast<int64_t>(std::nearbyint(iy)),
                            static_cast<int64_t>(std::nearbyint(ix)));
                  } else {
                    const int64_t x0 = static_cast<int64_t>(std::floor(ix)),
                                  y0 = static_cast<int64_t>(std::floor(iy));
                    const double tx = ix - x0, ty = iy - y0;
                    v = (1 - tx) * (1 - ty) * Pix(x, b, c, y0, x0) +
                        tx * (1 - ty) * Pix(x, b, c, y0, x0 + 1) +
                        (1 - tx) * ty * Pix(x, b, c, y0 + 1, x0) +
                        tx * ty * Pix(x, b, c, y0 + 1, x0 + 1);
                  }
                }
                want.data<float>()[((b * C + c) * Ho + i) * Wo + j] = static_cast<float>(v);
              }
        EXPECT_EQ(testing::CompareFloat((*out)[0], want, 1e-5f, 1e-4f), "")
            << mode << " " << pad << " align=" << align << " H=" << H << " W=" << W;
      }
}

TEST(GridSampleTest, BadInput) {
  Tensor x = RandomTensor({1, 1, 3, 3}, 1);
  Tensor g = RandomTensor({1, 2, 2, 3}, 2);
  EXPECT_FALSE(RunKernel(MakeNode("GridSample", 2, 1, 16), {&x, &g}).ok());
  Tensor x3 = RandomTensor({1, 3, 3}, 1);
  Tensor g2 = RandomTensor({1, 2, 2, 2}, 2);
  EXPECT_FALSE(RunKernel(MakeNode("GridSample", 2, 1, 16), {&x3, &g2}).ok());
  Tensor nan = FloatTensor({1, 1, 1, 2}, {NAN, 0});
  auto r = RunKernel(MakeNode("GridSample", 2, 1, 16), {&x, &nan});
  ASSERT_TRUE(r.ok());  // a NaN point samples nothing rather than crashing
  Node n = MakeNode("GridSample", 2, 1, 16);
  n.attrs.Set("padding_mode", StringAttr("wrap"));
  EXPECT_FALSE(FindKernel("", "GridSample")(n).ok());
}

// 5-D GridSample (opset 20): trilinear and nearest, every padding, both align_corners, against
// a twin that interpolates each output point from the formula.
TEST(GridSampleTest, VolumetricMatchesNaiveTwin) {
  const int64_t N = 2, C = 3, D = 4, H = 5, W = 6, Do = 3, Ho = 2, Wo = 7;
  Tensor x = testing::RandomTensor({N, C, D, H, W}, 31);
  Tensor grid = testing::RandomTensor({N, Do, Ho, Wo, 3}, 32, -1.3f, 1.3f);
  for (const char* mode : {"linear", "nearest"})
    for (const char* pad : {"zeros", "border", "reflection"})
      for (int align : {0, 1}) {
        Node n = testing::MakeNode("GridSample", 2, 1, 20);
        n.attrs.Set("mode", testing::StringAttr(mode));
        n.attrs.Set("padding_mode", testing::StringAttr(pad));
        n.attrs.Set("align_corners", testing::IntAttr(align));
        auto out = testing::RunKernel(n, {&x, &grid});
        ASSERT_TRUE(out.ok()) << out.status().message();
        Tensor want(DataType::kFloat32, {N, C, Do, Ho, Wo});
        auto at = [&](int64_t b, int64_t c, int64_t z, int64_t y, int64_t xx) -> double {
          if (z < 0 || z >= D || y < 0 || y >= H || xx < 0 || xx >= W) return 0;
          return x.data<float>()[(((b * C + c) * D + z) * H + y) * W + xx];
        };
        auto unnorm = [&](double v, int64_t size) {
          return align ? (v + 1) / 2 * (size - 1) : ((v + 1) * size - 1) / 2;
        };
        for (int64_t b = 0; b < N; ++b)
          for (int64_t o = 0; o < Do * Ho * Wo; ++o) {
            const float* g = grid.data<float>() + (b * Do * Ho * Wo + o) * 3;
            double ix = PadCoord(unnorm(g[0], W), W, pad, align);
            double iy = PadCoord(unnorm(g[1], H), H, pad, align);
            double iz = PadCoord(unnorm(g[2], D), D, pad, align);
            for (int64_t c = 0; c < C; ++c) {
              double v = 0;
              if (std::string(mode) == "nearest") {
                v = at(b, c, std::llround(std::nearbyint(iz)), std::llround(std::nearbyint(iy)),
                       std::llround(std::nearbyint(ix)));
              } else {
                const double fx = std::floor(ix), fy = std::floor(iy), fz = std::floor(iz);
                for (int k = 0; k < 8; ++k) {
                  const int dx = k & 1, dy = (k >> 1) & 1, dz = k >> 2;
                  const double w = (dx ? ix - fx : 1 - (ix - fx)) * (dy ? iy - fy : 1 - (iy - fy)) *
                                   (dz ? iz - fz : 1 - (iz - fz));
                  v += w * at(b, c, static_cast<int64_t>(fz) + dz, static_cast<int64_t>(fy) + dy,
                              static_cast<int64_t>(fx) + dx);
                }
              }
              want.data<float>()[(b * C + c) * Do * Ho * Wo + o] = static_cast<float>(v);
            }
          }
        EXPECT_EQ(testing::CompareFloat((*out)[0], want, 1e-5f, 1e-4f), "")
            << mode << " " << pad << " align " << align;
      }
  Node cubic = testing::MakeNode("GridSample", 2, 1, 20);
  cubic.attrs.Set("mode", testing::StringAttr("cubic"));
  auto err = testing::RunKernel(cubic, {&x, &grid});
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.status().message().find("mode cubic is defined for 4-D inputs only"),
            std::string::npos);
}

}  // namespace
}  // namespace opscope::engine
