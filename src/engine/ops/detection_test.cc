// NonMaxSuppression and RoiAlign against naive twins on random inputs (NMS: repeated arg-max
// over the boxes left instead of one sort; RoiAlign: each sample interpolated from the formula),
// both box encodings, optional threshold inputs, both RoiAlign modes and coordinate modes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "engine/testing/kernel_runner.h"

namespace opscope::engine {
namespace {

using testing::MakeNode;
using testing::RandomTensor;

std::vector<int64_t> NaiveNms(const Tensor& boxes, const Tensor& scores, int64_t max_out, float iou,
                              bool has_score, float score_th) {
  const int64_t nb = boxes.dim(0), n = boxes.dim(1), nc = scores.dim(1);
  auto corner = [&](int64_t b, int64_t i, int k) {
    const float* p = boxes.data<float>() + (b * n + i) * 4;
    return k == 0   ? std::min(p[0], p[2])
           : k == 1 ? std::min(p[1], p[3])
           : k == 2 ? std::max(p[0], p[2])
                    : std::max(p[1], p[3]);
  };
  std::vector<int64_t> out;
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t c = 0; c < nc; ++c) {
      const float* s = scores.data<float>() + (b * nc + c) * n;
      std::vector<bool> alive(n);
      for (int64_t i = 0; i < n; ++i) alive[i] = !has_score || s[i] > score_th;
      int64_t taken = 0;
      while (taken < max_out) {
        int64_t best = -1;
        for (int64_t i = 0; i < n; ++i)
          if (alive[i] && (best < 0 || s[i] > s[best])) best = i;
        if (best < 0) break;
        alive[best] = false;
        out.insert(out.end(), {b, c, best});
        ++taken;
        for (int64_t i = 0; i < n; ++i) {
          if (!alive[i]) continue;
          float ay1 = corner(b, best, 0), ax1 = corner(b, best, 1), ay2 = corner(b, best, 2),
                ax2 = corner(b, best, 3);
          float by1 = corner(b, i, 0), bx1 = corner(b, i, 1), by2 = corner(b, i, 2),
                bx2 = corner(b, i, 3);
          float aa = (ay2 - ay1) * (ax2 - ax1), ab = (by2 - by1) * (bx2 - bx1);
          float ih = std::max(0.f, std::min(ay2, by2) - std::max(ay1, by1));
          float iw = std::max(0.f, std::min(ax2, bx2) - std::max(ax1, bx1));
          float inter = ih * iw;
          float v = aa <= 0 || ab <= 0 ? 0.f : inter / (aa + ab - inter);
          if (v > iou) alive[i] = false;
        }
      }
    }
  return out;
}

Tensor Scalar(float v) { return testing::FloatTensor({}, {v}); }

TEST(Detection, NonMaxSuppressionMatchesNaiveTwin) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t nb = 1 + trial % 3, n = 1 + (trial * 7) % 23, nc = 1 + trial % 4;
    Tensor boxes(DataType::kFloat32, {nb, n, 4});
    std::uniform_real_distribution<float> pos(0, 10), size(0.5f, 4);
    for (int64_t i = 0; i < nb * n; ++i) {
      float y = pos(rng), x = pos(rng), h = size(rng), w = size(rng);
      float* p = boxes.data<float>() + i * 4;
      if (i % 3 == 0)
        p[0] = y + h, p[1] = x + w, p[2] = y, p[3] = x;  // flipped corners
      else
        p[0] = y, p[1] = x, p[2] = y + h, p[3] = x + w;
    }
    Tensor scores = RandomTensor({nb, nc, n}, 100 + trial, 0, 1);
    if (trial % 5 == 0) scores.data<float>()[0] = scores.data<float>()[n > 1 ? 1 : 0];  // a tie
    const int64_t max_out = trial % 6;
    const float iou = 0.1f * (trial % 8), score_th = 0.3f;
    const bool has_score = trial % 2 == 0;
    Tensor m = testing::IntTensor({1}, {max_out}), io = Scalar(iou), st = Scalar(score_th);
    // Corner encoding, then the same boxes as centers.
    Node node = MakeNode("NonMaxSuppression", 5, 1);
    auto got = testing::RunKernel(node, {&boxes, &scores, &m, &io, has_score ? &st : nullptr});
    ASSERT_TRUE(got.ok()) << got.status().message();
    std::vector<int64_t> want = NaiveNms(boxes, scores, max_out, iou, has_score, score_th);
    const Tensor& g = (*got)[0];
    ASSERT_EQ(g.shape(), (std::vector<int64_t>{static_cast<int64_t>(want.size() / 3), 3})) << trial;
    EXPECT_EQ(std::vector<int64_t>(g.data<int64_t>(), g.data<int64_t>() + g.numel()), want)
        << trial;

    Tensor centers(DataType::kFloat32, {nb, n, 4});
    for (int64_t i = 0; i < nb * n; ++i) {
      const float* p = boxes.data<float>() + i * 4;
      float* q = centers.data<float>() + i * 4;
      q[0] = (p[1] + p[3]) / 2, q[1] = (p[0] + p[2]) / 2;
      q[2] = std::fabs(p[3] - p[1]), q[3] = std::fabs(p[2] - p[0]);
    }
    node.attrs.Set("center_point_box", testing::IntAttr(1));
    auto gc = testing::RunKernel(node, {&centers, &scores, &m, &io, has_score ? &st : nullptr});
    ASSERT_TRUE(gc.ok());
    EXPECT_EQ(
        std::vector<int64_t>((*gc)[0].data<int64_t>(), (*gc)[0].data<int64_t>() + (*gc)[0].numel()),
        want)
        << "center_point_box=1, trial " << trial;
  }
}

TEST(Detection, NonMaxSuppressionWithoutOptionalInputsSelectsNothing) {
  Tensor boxes = testing::FloatTensor({1, 2, 4}, {0, 0, 1, 1, 0, 0, 1, 1});
  Tensor scores = testing::FloatTensor({1, 1, 2}, {0.9f, 0.8f});
  auto got = testing::RunKernel(MakeNode("NonMaxSuppression", 2, 1), {&boxes, &scores});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].shape(), (std::vector<int64_t>{0, 3}));
  Tensor bad = testing::FloatTensor({1, 1, 3}, {0.9f, 0.8f, 0.1f});
  auto err = testing::RunKernel(MakeNode("NonMaxSuppression", 2, 1), {&boxes, &bad});
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.status().message().find("node 'NonMaxSuppression_test' (NonMaxSuppression): scores "
                                        "must have shape [batches, classes, boxes] = [1, C, 2]"),
            std::string::npos)
      << err.status().message();
}

float Bilinear(const float* plane, int64_t H, int64_t W, float y, float x) {
  if (y < -1 || y > H || x < -1 || x > W) return 0;
  y = std::max(y, 0.f);
  x = std::max(x, 0.f);
  float fy = std::min(y, static_cast<float>(H - 1)), fx = std::min(x, static_cast<float>(W - 1));
  int64_t y0 = static_cast<int64_t>(std::floor(fy)), x0 = static_cast<int64_t>(std::floor(fx));
  int64_t y1 = std::min(y0 + 1, H - 1), x1 = std::min(x0 + 1, W - 1);
  float ly = fy - y0, lx = fx - x0;
  return (1 - ly) * (1 - lx) * plane[y0 * W + x0] + (1 - ly) * lx * plane[y0 * W + x1] +
         ly * (1 - lx) * plane[y1 * W + x0] + ly * lx * plane[y1 * W + x1];
}

TEST(Detection, RoiAlignAverageMatchesNaiveTwin) {
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t N = 2, C = 3, H = 7 + trial % 3, W = 9 - trial % 4, R = 5;
    const int64_t oh = 1 + trial % 3, ow = 2 + trial % 2, ratio = trial % 3;
    const float scale = trial % 2 ? 0.5f : 1.f;
    const bool half = trial % 4 < 2;
    Tensor X = RandomTensor({N, C, H, W}, trial);
    Tensor rois = RandomTensor({R, 4}, 50 + trial, 0, 12);
    for (int64_t r = 0; r < R; ++r) {  // x2 >= x1, y2 >= y1 mostly, one degenerate roi
      float* p = rois.data<float>() + r * 4;
      if (p[2] < p[0]) std::swap(p[0], p[2]);
      if (p[3] < p[1]) std::swap(p[1], p[3]);
      if (r == 4) p[2] = p[0];
    }
    Tensor bi = testing::IntTensor({R}, {0, 1, 1, 0, 1});
    Node n = MakeNode("RoiAlign", 3, 1, 16);
    n.attrs.Set("output_height", testing::IntAttr(oh));
    n.attrs.Set("output_width", testing::IntAttr(ow));
    n.attrs.Set("sampling_ratio", testing::IntAttr(ratio));
    n.attrs.Set("spatial_scale", testing::FloatAttr(scale));
    n.attrs.Set("coordinate_transformation_mode",
                testing::StringAttr(half ? "half_pixel" : "output_half_pixel"));
    auto got = testing::RunKernel(n, {&X, &rois, &bi});
    ASSERT_TRUE(got.ok()) << got.status().message();
    Tensor want(DataType::kFloat32, {R, C, oh, ow});
    const float off = half ? 0.5f : 0.f;
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) {
        const float* p = rois.data<float>() + r * 4;
        float x1 = p[0] * scale - off, y1 = p[1] * scale - off;
        float rw = p[2] * scale - off - x1, rh = p[3] * scale - off - y1;
        if (!half) rw = std::max(rw, 1.f), rh = std::max(rh, 1.f);
        int64_t gh = ratio ? ratio : static_cast<int64_t>(std::ceil(rh / oh));
        int64_t gw = ratio ? ratio : static_cast<int64_t>(std::ceil(rw / ow));
        const float* plane = X.data<float>() + (bi.data<int64_t>()[r] * C + c) * H * W;
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j) {
            double sum = 0;
            for (int64_t a = 0; a < gh; ++a)
              for (int64_t b = 0; b < gw; ++b)
                sum += Bilinear(plane, H, W, y1 + (i + (a + 0.5f) / gh) * rh / oh,
                                x1 + (j + (b + 0.5f) / gw) * rw / ow);
            want.data<float>()[((r * C + c) * oh + i) * ow + j] =
                static_cast<float>(sum / std::max<int64_t>(gh * gw, 1));
          }
      }
    EXPECT_EQ(testing::CompareFloat((*got)[0], want, 1e-5f, 1e-4f), "") << "trial " << trial;
  }
}

TEST(Detection, RoiAlignMaxTakesTheLargestWeightedCorner) {
  // One 2x2 plane, one roi covering it, one bin, one sample at (0.5, 0.5) (output_half_pixel):
  // weights 0.25 each; max mode gives 0.25 * max(v), avg gives the mean.
  Tensor X = testing::FloatTensor({1, 1, 2, 2}, {1, 2, 3, 8});
  Tensor rois = testing::FloatTensor({1, 4}, {0, 0, 1, 1});
  Tensor bi = testing::IntTensor({1}, {0});
  Node n = MakeNode("RoiAlign", 3, 1, 10);
  n.attrs.Set("sampling_ratio", testing::IntAttr(1));
  auto avg = testing::RunKernel(n, {&X, &rois, &bi});
  ASSERT_TRUE(avg.ok());
  EXPECT_FLOAT_EQ((*avg)[0].data<float>()[0], 3.5f);
  n.attrs.Set("mode", testing::StringAttr("max"));
  auto mx = testing::RunKernel(n, {&X, &rois, &bi});
  ASSERT_TRUE(mx.ok());
  EXPECT_FLOAT_EQ((*mx)[0].data<float>()[0], 2.f);
  Tensor bad = testing::IntTensor({1}, {3});
  auto err = testing::RunKernel(n, {&X, &rois, &bad});
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.status().message(),
            "node 'RoiAlign_test' (RoiAlign): batch index 3 is outside [0, 1)");
}

}  // namespace
}  // namespace opscope::engine
