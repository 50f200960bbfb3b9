// Differential tests of the permutation kernels (Transpose, DepthToSpace, SpaceToDepth) and the
// StridedCopy/PermuteCopy primitives against index-by-index twins, for every element size.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>

#include "engine/ops/common.h"
#include "engine/ops/layout_copy.h"
#include "engine/testing/kernel_runner.h"

namespace opscope::engine {
namespace {

using testing::IntAttr;
using testing::IntsAttr;
using testing::MakeNode;
using testing::RunKernel;
using testing::StringAttr;

Tensor RandomBytes(DataType dt, std::vector<int64_t> shape, uint32_t seed) {
  Tensor t(dt, std::move(shape));
  std::mt19937 rng(seed);
  auto* p = static_cast<uint8_t*>(t.raw());
  for (size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<uint8_t>(rng());
  return t;
}

// out[o] = in[sum_d o_d * stride_of_in[perm[d]]], decoded element by element.
Tensor NaiveTranspose(const Tensor& x, const std::vector<int64_t>& perm) {
  const int r = x.rank();
  std::vector<int64_t> os(r);
  for (int i = 0; i < r; ++i) os[i] = x.dim(static_cast<int>(perm[i]));
  Tensor y(x.dtype(), os);
  const std::vector<int64_t> is = ContiguousStrides(x.shape());
  const size_t es = DataTypeSize(x.dtype());
  for (int64_t o = 0; o < y.numel(); ++o) {
    int64_t rem = o, off = 0;
    for (int d = r - 1; d >= 0; --d) {
      off += (rem % os[d]) * is[perm[d]];
      rem /= os[d];
    }
    std::memcpy(static_cast<char*>(y.raw()) + o * es, static_cast<const char*>(x.raw()) + off * es,
                es);
  }
  return y;
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

TEST(TransposeTest, RandomPermutationsAllElementSizes) {
  std::mt19937 rng(7);
  const int64_t dims[] = {1, 2, 3, 7, 13};
  const DataType types[] = {DataType::kUint8, DataType::kFloat16, DataType::kFloat32,
                            DataType::kInt64};
  for (int iter = 0; iter < 300; ++iter) {
    const int r = 1 + static_cast<int>(rng() % 6);
    std::vector<int64_t> shape(r);
    for (int64_t& d : shape) d = dims[rng() % 5];
    std::vector<int64_t> perm(r);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    const DataType dt = types[iter % 4];
    Tensor x = RandomBytes(dt, shape, static_cast<uint32_t>(iter));
    Node n = MakeNode("Transpose", 1, 1);
    n.attrs.Set("perm", IntsAttr(perm));
    auto out = RunKernel(n, {&x});
    ASSERT_TRUE(out.ok()) << out.status().message();
    ASSERT_TRUE(SameBytes((*out)[0], NaiveTranspose(x, perm)))
        << "shape " << ShapeString(shape) << " perm " << ShapeString(perm) << " dtype "
        << DataTypeName(dt);
  }
}

TEST(TransposeTest, TiledAndBlockedPathsOnLargerShapes) {
  struct Case {
    std::vector<int64_t> shape, perm;
  } cases[] = {
      {{127, 131}, {1, 0}},                  // tiled 2-D, ragged tiles
      {{3, 64, 65}, {0, 2, 1}},              // tiled last-two with a batch dim
      {{2, 33, 40, 17}, {0, 2, 3, 1}},       // NCHW -> NHWC (innermost moves)
      {{2, 40, 17, 33}, {0, 3, 1, 2}},       // NHWC -> NCHW
      {{4, 5, 6, 32}, {2, 0, 1, 3}},         // innermost kept: blocked copies
      {{6, 1, 7, 1, 129}, {4, 2, 1, 0, 3}},  // size-1 dims dropped
      {{8, 9, 10, 11}, {3, 2, 1, 0}},        // full reversal
      {{3, 200, 130}, {0, 2, 1}},            // large enough for ParallelFor to split tiles
      {{16, 50, 64}, {1, 0, 2}},             // ... and blocked rows
  };
  for (const DataType dt :
       {DataType::kFloat32, DataType::kInt64, DataType::kBool, DataType::kFloat16}) {
    for (const Case& c : cases) {
      Tensor x = RandomBytes(dt, c.shape, 3);
      Node n = MakeNode("Transpose", 1, 1);
      n.attrs.Set("perm", IntsAttr(c.perm));
      auto out = RunKernel(n, {&x}, 2);
      ASSERT_TRUE(out.ok()) << out.status().message();
      EXPECT_TRUE(SameBytes((*out)[0], NaiveTranspose(x, c.perm)))
          << ShapeString(c.shape) << " perm " << ShapeString(c.perm);
    }
  }
}

TEST(TransposeTest, DefaultPermReverses) {
  Tensor x = testing::RandomTensor({2, 3, 4}, 1);
  auto out = RunKernel(MakeNode("Transpose", 1, 1), {&x});
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(SameBytes((*out)[0], NaiveTranspose(x, {2, 1, 0})));
}

TEST(TransposeTest, BadPermIsAnErrorNamingTheNode) {
  Tensor x = testing::RandomTensor({2, 3}, 1);
  for (std::vector<int64_t> perm : {std::vector<int64_t>{0, 0}, {0, 1, 2}, {0, 5}}) {
    Node n = MakeNode("Transpose", 1, 1);
    n.attrs.Set("perm", IntsAttr(perm));
    auto out = RunKernel(n, {&x});
    ASSERT_FALSE(out.ok());
    EXPECT_NE(out.status().message().find("Transpose_test"), std::string::npos);
  }
}

TEST(StridedCopyTest, NegativeAndZeroStrides) {
  // Reverse rows and broadcast columns of a 5x1 int32 column into 5x4.
  std::vector<int32_t> in = {10, 11, 12, 13, 14};
  std::vector<int32_t> out(20, -1);
  StridedCopy(in.data() + 4, {-1, 0}, out.data(), {5, 4}, 4);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(out[i * 4 + j], 14 - i);
}

// NCHW twin of DepthToSpace from the ONNX definition (DCR and CRD).
Tensor NaiveDepthToSpace(const Tensor& x, int64_t b, bool crd) {
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), oc = C / (b * b);
  Tensor y(DataType::kFloat32, {N, oc, H * b, W * b});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < oc; ++c)
      for (int64_t h = 0; h < H * b; ++h)
        for (int64_t w = 0; w < W * b; ++w) {
          const int64_t bh = h % b, bw = w % b;
          const int64_t ic = crd ? c * b * b + bh * b + bw : (bh * b + bw) * oc + c;
          y.data<float>()[((n * oc + c) * H * b + h) * W * b + w] =
              x.data<float>()[((n * C + ic) * H + h / b) * W + w / b];
        }
  return y;
}

TEST(DepthToSpaceTest, DcrCrdAndInverseSpaceToDepth) {
  for (bool crd : {false, true}) {
    Tensor x = testing::RandomTensor({2, 12, 7, 5}, 9);
    Node n = MakeNode("DepthToSpace", 1, 1);
    n.attrs.Set("blocksize", IntAttr(2));
    n.attrs.Set("mode", StringAttr(crd ? "CRD" : "DCR"));
    auto out = RunKernel(n, {&x});
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ(testing::CompareFloat((*out)[0], NaiveDepthToSpace(x, 2, crd), 0, 0), "");
    if (!crd) {  // SpaceToDepth is the inverse of DCR DepthToSpace
      Node s = MakeNode("SpaceToDepth", 1, 1);
      s.attrs.Set("blocksize", IntAttr(2));
      auto back = RunKernel(s, {&(*out)[0]});
      ASSERT_TRUE(back.ok());
      EXPECT_EQ(testing::CompareFloat((*back)[0], x, 0, 0), "");
    }
  }
}

TEST(DepthToSpaceTest, BadInput) {
  Tensor x = testing::RandomTensor({1, 6, 2, 2}, 1);
  Node n = MakeNode("DepthToSpace", 1, 1);
  n.attrs.Set("blocksize", IntAttr(2));
  EXPECT_FALSE(RunKernel(n, {&x}).ok());  // 6 not divisible by 4
  Tensor y = testing::RandomTensor({1, 4, 3, 3}, 1);
  Node s = MakeNode("SpaceToDepth", 1, 1);
  s.attrs.Set("blocksize", IntAttr(2));
  EXPECT_FALSE(RunKernel(s, {&y}).ok());  // 3 not divisible by 2
  Node m = MakeNode("DepthToSpace", 1, 1);
  EXPECT_FALSE(RunKernel(m, {&x}).ok());  // missing blocksize
}

TEST(TransposeTest, CostIsCompulsoryBytesOnly) {
  Node n = MakeNode("Transpose", 1, 1);
  auto k = FindKernel("", "Transpose")(n);
  ASSERT_TRUE(k.ok());
  TensorDesc d{DataType::kFloat32, {2, 3, 4}};
  Cost c = (*k)->EstimateCost({d}, {d});
  EXPECT_EQ(c.flops, 0);
  EXPECT_EQ(c.bytes, 2 * 24 * 4);
}

}  // namespace
}  // namespace opscope::engine

namespace opscope::engine {
namespace {

// Garbage in, Status out: every tensor-family operator on random inputs of random types, ranks
// and contents with random attributes must return (ok or an error), never crash or hang. Run
// under the asan preset this also checks memory safety of the error paths.
TEST(TensorFamilyRobustnessTest, RandomInputsNeverCrash) {
  const char* ops[] = {
      "Reshape",  "Flatten",   "Squeeze",         "Unsqueeze",    "Transpose",
      "Concat",   "Split",     "Slice",           "Gather",       "GatherElements",
      "GatherND", "ScatterND", "ScatterElements", "Scatter",      "Expand",
      "Tile",     "Pad",       "Shape",           "Size",         "ConstantOfShape",
      "Range",    "NonZero",   "DepthToSpace",    "SpaceToDepth", "Resize",
      "Upsample", "GridSample"};
  const DataType types[] = {DataType::kFloat32, DataType::kInt64, DataType::kInt32,
                            DataType::kBool};
  std::mt19937 rng(99);
  int ok = 0, errors = 0;
  for (const char* op : ops) {
    for (int iter = 0; iter < 150; ++iter) {
      const int nin = static_cast<int>(rng() % 5);
      std::vector<Tensor> ins;
      for (int i = 0; i < nin; ++i) {
        std::vector<int64_t> shape(rng() % 5);
        for (int64_t& d : shape) d = rng() % 4;
        Tensor t(types[rng() % 4], shape);
        for (int64_t e = 0; e < t.numel(); ++e) {
          const int v = static_cast<int>(rng() % 11) - 5;
          switch (t.dtype()) {
            case DataType::kFloat32:
              t.data<float>()[e] = v * 0.5f;
              break;
            case DataType::kInt64:
              t.data<int64_t>()[e] = v;
              break;
            case DataType::kInt32:
              t.data<int32_t>()[e] = v;
              break;
            default:
              t.data<uint8_t>()[e] = v & 1;
              break;
          }
        }
        ins.push_back(std::move(t));
      }
      std::vector<const Tensor*> ptrs;
      for (const Tensor& t : ins) ptrs.push_back(rng() % 8 ? &t : nullptr);
      const int opset = 7 + static_cast<int>(rng() % 11);
      Node n = MakeNode(op, nin, 1 + static_cast<int>(rng() % 3), opset);
      auto rint = [&] { return static_cast<int64_t>(rng() % 9) - 4; };
      if (rng() % 2) n.attrs.Set("axis", IntAttr(rint()));
      if (rng() % 2) n.attrs.Set("axes", IntsAttr({rint(), rint()}));
      if (rng() % 3 == 0) n.attrs.Set("perm", IntsAttr({rint(), rint(), rint()}));
      if (rng() % 3 == 0) n.attrs.Set("split", IntsAttr({rint(), rint()}));
      if (rng() % 3 == 0) n.attrs.Set("starts", IntsAttr({rint()}));
      if (rng() % 3 == 0) n.attrs.Set("ends", IntsAttr({rint()}));
      if (rng() % 3 == 0) n.attrs.Set("pads", IntsAttr({rint(), rint(), rint(), rint()}));
      if (rng() % 3 == 0) n.attrs.Set("shape", IntsAttr({rint(), rint()}));
      if (rng() % 3 == 0) n.attrs.Set("scales", testing::FloatsAttr({0.5f, 2.f, 1.f, 3.f}));
      if (rng() % 3 == 0) n.attrs.Set("blocksize", IntAttr(rint()));
      if (rng() % 3 == 0) n.attrs.Set("batch_dims", IntAttr(rint()));
      const char* modes[] = {"constant", "reflect", "edge", "nearest", "linear", "cubic",
                             "bilinear", "bicubic", "DCR",  "CRD",     "bogus"};
      if (rng() % 2) n.attrs.Set("mode", StringAttr(modes[rng() % 11]));
      const char* coords[] = {"half_pixel", "align_corners", "tf_crop_and_resize", "asymmetric"};
      if (rng() % 2) n.attrs.Set("coordinate_transformation_mode", StringAttr(coords[rng() % 4]));
      if (rng() % 3 == 0) n.attrs.Set("reduction", StringAttr(rng() % 2 ? "add" : "mul"));
      auto r = RunKernel(n, ptrs);
      (r.ok() ? ok : errors)++;
    }
  }
  // Both outcomes must occur; mostly errors is expected for garbage.
  EXPECT_GT(ok, 0);
  EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace opscope::engine
