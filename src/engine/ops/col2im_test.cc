// Col2Im against a naive twin written as ONNX's reference loop (2-D and 3-D), and a hand-counted
// case.
#include <gtest/gtest.h>

#include <vector>

#include "engine/ops/common.h"
#include "engine/ops/elementwise_test_util.h"
#include "engine/testing/kernel_runner.h"

namespace opscope::engine::testing {
namespace {

using Shape = std::vector<int64_t>;

// For every column element: its block offset and grid position give the image pixel to add to.
Tensor NaiveCol2Im(const Tensor& x, const Shape& image, const Shape& block, const Shape& dil,
                   const Shape& pads, const Shape& str) {
  const size_t nd = image.size();
  Shape grid(nd);
  int64_t kprod = 1;
  for (size_t d = 0; d < nd; ++d) {
    grid[d] = (image[d] + pads[d] + pads[d + nd] - (dil[d] * (block[d] - 1) + 1)) / str[d] + 1;
    kprod *= block[d];
  }
  const int64_t N = x.dim(0), C = x.dim(1) / kprod;
  Shape os = {N, C};
  os.insert(os.end(), image.begin(), image.end());
  Tensor y(DataType::kFloat32, os);
  for (int64_t i = 0; i < y.numel(); ++i) y.data<float>()[i] = 0;
  for (int64_t f = 0; f < x.numel(); ++f) {
    Shape idx = Unravel(f, x.shape());  // n, c * kprod + kk, l
    const int64_t n = idx[0], c = idx[1] / kprod, kk = idx[1] % kprod;
    Shape k = Unravel(kk, block), g = Unravel(idx[2], grid);
    Shape pix = {n, c};
    bool inside = true;
    for (size_t d = 0; d < nd; ++d) {
      const int64_t p = g[d] * str[d] - pads[d] + k[d] * dil[d];
      inside = inside && p >= 0 && p < image[d];
      pix.push_back(p);
    }
    if (inside) y.data<float>()[Ravel(pix, os)] += x.data<float>()[f];
  }
  return y;
}

TEST(Col2ImTest, MatchesNaiveTwin) {
  struct Case {
    Shape image, block, dil, pads, str;
    int64_t n, c;
  };
  uint32_t seed = 1;
  for (const Case& t : {Case{{5, 5}, {1, 5}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, 1},
                        Case{{7, 13}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2, 3},
                        Case{{9, 8}, {2, 3}, {2, 1}, {0, 1, 2, 0}, {2, 3}, 1, 2},
                        Case{{4, 5, 6}, {2, 2, 3}, {1, 2, 1}, {1, 0, 0, 0, 1, 1}, {1, 1, 2}, 1, 2},
                        Case{{1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, 7}}) {
    const size_t nd = t.image.size();
    int64_t kprod = 1, L = 1;
    for (size_t d = 0; d < nd; ++d) {
      kprod *= t.block[d];
      L *=
          (t.image[d] + t.pads[d] + t.pads[d + nd] - (t.dil[d] * (t.block[d] - 1) + 1)) / t.str[d] +
          1;
    }
    Tensor x = RandomTensor({t.n, t.c * kprod, L}, seed++);
    Node node = MakeNode("Col2Im", 3, 1, 18);
    node.attrs.Set("dilations", IntsAttr(t.dil));
    node.attrs.Set("pads", IntsAttr(t.pads));
    node.attrs.Set("strides", IntsAttr(t.str));
    Tensor img = IntTensor({static_cast<int64_t>(nd)}, t.image);
    Tensor blk = IntTensor({static_cast<int64_t>(nd)}, t.block);
    auto out = MustRun(node, {&x, &img, &blk});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(
        CompareTensors(out[0], NaiveCol2Im(x, t.image, t.block, t.dil, t.pads, t.str), 1e-6, 1e-6),
        "")
        << ShapeString(t.image) << " block " << ShapeString(t.block);
  }
}

TEST(Col2ImTest, OverlapCountsAndBadInput) {
  // Ones through 2x2 blocks on a 3x3 image, stride 1: each pixel gets one per block covering it.
  Tensor ones = FloatTensor({1, 4, 4}, std::vector<float>(16, 1.0f));
  Tensor img = IntTensor({2}, {3, 3}), blk = IntTensor({2}, {2, 2});
  auto out = MustRun(MakeNode("Col2Im", 3, 1, 18), {&ones, &img, &blk});
  EXPECT_EQ(CompareTensors(out[0], FloatTensor({1, 1, 3, 3}, {1, 2, 1, 2, 4, 2, 1, 2, 1})), "");
  Tensor wrong_l = FloatTensor({1, 4, 5}, std::vector<float>(20, 1.0f));
  ExpectNodeError(MakeNode("Col2Im", 3, 1, 18), {&wrong_l, &img, &blk}, "block positions");
  Tensor wrong_c = FloatTensor({1, 3, 4}, std::vector<float>(12, 1.0f));
  ExpectNodeError(MakeNode("Col2Im", 3, 1, 18), {&wrong_c, &img, &blk}, "multiple");
  Tensor big = IntTensor({2}, {4, 4});
  ExpectNodeError(MakeNode("Col2Im", 3, 1, 18), {&ones, &img, &big}, "does not fit");
  // Sizes whose padded extent, span or products would overflow int64.
  Tensor vast = IntTensor({2}, {int64_t{1} << 62, 3});
  ExpectNodeError(MakeNode("Col2Im", 3, 1, 18), {&ones, &vast, &blk},
                  "image_shape, block_shape, dilations or pads of spatial dim 0 out of range");
  auto k = FindKernel("", "Col2Im")(MakeNode("Col2Im", 3, 1, 18));
  EXPECT_EQ(
      (*k)->EstimateCost({{DataType::kFloat32, {1, 4, 4}}}, {{DataType::kFloat32, {1, 1, 3, 3}}})
          .flops,
      16);
}

}  // namespace
}  // namespace opscope::engine::testing
