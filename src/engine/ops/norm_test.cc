// BatchNormalization / InstanceNormalization / LayerNormalization / GroupNormalization against
// naive twins.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cmath>

#include "engine/ops/dnnl_testing.h"

namespace opscope::engine::testing {
namespace {

Tensor Positive(std::vector<int64_t> shape, uint32_t seed) {
  return RandomTensor(shape, seed, 0.1f, 2);
}

TEST(BatchNormalization, InferenceMatchesFormula) {
  for (auto shape : {std::vector<int64_t>{2, 3, 7, 13}, std::vector<int64_t>{1, 7},
                     std::vector<int64_t>{3, 13, 127}, std::vector<int64_t>{1, 1, 1, 1, 1},
                     std::vector<int64_t>{2, 16, 32, 33}}) {
    int64_t C = shape[1];
    Tensor x = RandomTensor(shape, 1), s = RandomTensor({C}, 2), b = RandomTensor({C}, 3);
    Tensor m = RandomTensor({C}, 4), v = Positive({C}, 5);
    Node n = MakeNode("BatchNormalization", 5, 1, 15);
    n.attrs.Set("epsilon", FloatAttr(1e-2f));
    auto out = RunPoisoned(n, {&x, &s, &b, &m, &v}, 2);
    ASSERT_TRUE(out.ok()) << out.status().message();
    Tensor ref(DataType::kFloat32, shape);
    int64_t S = x.numel() / (shape[0] * C);
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t c = (i / S) % C;
      ref.data<float>()[i] = s.data<float>()[c] * (x.data<float>()[i] - m.data<float>()[c]) /
                                 std::sqrt(v.data<float>()[c] + 1e-2f) +
                             b.data<float>()[c];
    }
    EXPECT_EQ(CompareFloat((*out)[0], ref, 1e-5f, 1e-5f), "");
  }
}

TEST(BatchNormalization, Opset7SpatialZeroUsesPerElementParameters) {
  Tensor x = RandomTensor({2, 3, 4}, 1), s = RandomTensor({3, 4}, 2), b = RandomTensor({3, 4}, 3);
  Tensor m = RandomTensor({3, 4}, 4), v = Positive({3, 4}, 5);
  Node n = MakeNode("BatchNormalization", 5, 1, 7);
  n.attrs.Set("spatial", IntAttr(0));
  auto out = RunPoisoned(n, {&x, &s, &b, &m, &v});
  ASSERT_TRUE(out.ok()) << out.status().message();
  Tensor ref(DataType::kFloat32, {2, 3, 4});
  for (int64_t i = 0; i < 24; ++i) {
    int64_t p = i % 12;
    ref.data<float>()[i] = s.data<float>()[p] * (x.data<float>()[i] - m.data<float>()[p]) /
                               std::sqrt(v.data<float>()[p] + 1e-5f) +
                           b.data<float>()[p];
  }
  EXPECT_EQ(CompareFloat((*out)[0], ref, 1e-5f, 1e-5f), "");
}

TEST(BatchNormalization, TrainingModeUsesBatchStatistics) {
  Tensor x = RandomTensor({2, 3, 5}, 11), s = RandomTensor({3}, 12), b = RandomTensor({3}, 13);
  Tensor m = RandomTensor({3}, 14), v = Positive({3}, 15);
  Node n = MakeNode("BatchNormalization", 5, 3, 15);
  n.attrs.Set("training_mode", IntAttr(1));
  n.attrs.Set("momentum", FloatAttr(0.8f));
  auto out = RunPoisoned(n, {&x, &s, &b, &m, &v});
  ASSERT_TRUE(out.ok()) << out.status().message();
  Tensor ref(DataType::kFloat32, {2, 3, 5}), rm(DataType::kFloat32, {3}),
      rv(DataType::kFloat32, {3});
  for (int c = 0; c < 3; ++c) {
    double sum = 0, sq = 0;
    for (int nn = 0; nn < 2; ++nn)
      for (int i = 0; i < 5; ++i) sum += x.data<float>()[(nn * 3 + c) * 5 + i];
    double mean = sum / 10;
    for (int nn = 0; nn < 2; ++nn)
      for (int i = 0; i < 5; ++i) sq += std::pow(x.data<float>()[(nn * 3 + c) * 5 + i] - mean, 2);
    double var = sq / 10;
    for (int nn = 0; nn < 2; ++nn)
      for (int i = 0; i < 5; ++i) {
        int64_t k = (nn * 3 + c) * 5 + i;
        ref.data<float>()[k] =
            float(s.data<float>()[c] * (x.data<float>()[k] - mean) / std::sqrt(var + 1e-5) +
                  b.data<float>()[c]);
      }
    rm.data<float>()[c] = float(m.data<float>()[c] * 0.8 + mean * 0.2);
    rv.data<float>()[c] = float(v.data<float>()[c] * 0.8 + var * 0.2);
  }
  EXPECT_EQ(CompareFloat((*out)[0], ref, 1e-5f, 1e-4f), "");
  EXPECT_EQ(CompareFloat((*out)[1], rm, 1e-6f, 1e-5f), "");
  EXPECT_EQ(CompareFloat((*out)[2], rv, 1e-6f, 1e-5f), "");
}

// model_struct_fuzz's 131-second unit: an empty X whose outer dimensions hold 8.6e9 (n, c)
// planes. Here 2^42 of them: the kernel would run for hours if it walked them.
TEST(BatchNormalization, EmptyInputWithHugeOuterDimensionsWalksNothing) {
  const int64_t huge = int64_t{1} << 42;
  Tensor x(DataType::kFloat32, {huge, 3, 0, 0});
  Tensor s = RandomTensor({3}, 21), b = RandomTensor({3}, 22), m = RandomTensor({3}, 23);
  Tensor v = Positive({3}, 24);
  auto out = RunPoisoned(MakeNode("BatchNormalization", 5, 1, 15), {&x, &s, &b, &m, &v});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0].shape(), x.shape());
  // Training mode: the batch statistics of no elements are zero, so the running ones decay.
  Node n = MakeNode("BatchNormalization", 5, 3, 15);
  n.attrs.Set("training_mode", IntAttr(1));
  n.attrs.Set("momentum", FloatAttr(0.8f));
  auto train = RunPoisoned(n, {&x, &s, &b, &m, &v});
  ASSERT_TRUE(train.ok()) << train.status().message();
  Tensor rm(DataType::kFloat32, {3}), rv(DataType::kFloat32, {3});
  for (int c = 0; c < 3; ++c) {
    rm.data<float>()[c] = m.data<float>()[c] * 0.8f;
    rv.data<float>()[c] = v.data<float>()[c] * 0.8f;
  }
  EXPECT_EQ(CompareFloat((*train)[1], rm, 1e-6f, 1e-5f), "");
  EXPECT_EQ(CompareFloat((*train)[2], rv, 1e-6f, 1e-5f), "");
}

TEST(BatchNormalization, BadInput) {
  Tensor x = RandomTensor({2, 3, 4}, 1), s = RandomTensor({4}, 2);
  Node n = MakeNode("BatchNormalization", 5, 1, 15);
  auto r = RunPoisoned(n, {&x, &s, &s, &s, &s});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("BatchNormalization_test"), std::string::npos);
  Tensor c = RandomTensor({3}, 3);
  EXPECT_FALSE(RunPoisoned(n, {&x, &c, &c, &c}).ok());  // missing var
  Tensor x1 = RandomTensor({3}, 4);
  EXPECT_FALSE(RunPoisoned(n, {&x1, &c, &c, &c, &c}).ok());
  auto k = FindKernel("", "BatchNormalization")(n);
  ASSERT_TRUE(k.ok());
  EXPECT_DOUBLE_EQ((*k)->EstimateCost({{DataType::kFloat32, {2, 3, 4}}}, {}).flops, 48);
}

TEST(InstanceNormalization, MatchesNaive) {
  for (auto shape : {std::vector<int64_t>{2, 3, 7, 13}, std::vector<int64_t>{1, 5, 127},
                     std::vector<int64_t>{1, 1, 1}, std::vector<int64_t>{2, 16, 32, 33}}) {
    int64_t C = shape[1];
    Tensor x = RandomTensor(shape, 21, 3, 5), s = RandomTensor({C}, 22), b = RandomTensor({C}, 23);
    Node n = MakeNode("InstanceNormalization", 3, 1);
    n.attrs.Set("epsilon", FloatAttr(1e-3f));
    auto out = RunPoisoned(n, {&x, &s, &b});
    ASSERT_TRUE(out.ok()) << out.status().message();
    int64_t S = x.numel() / (shape[0] * C);
    Tensor ref(DataType::kFloat32, shape);
    for (int64_t q = 0; q < shape[0] * C; ++q) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < S; ++i) mean += x.data<float>()[q * S + i];
      mean /= S;
      for (int64_t i = 0; i < S; ++i) var += std::pow(x.data<float>()[q * S + i] - mean, 2);
      var /= S;
      for (int64_t i = 0; i < S; ++i)
        ref.data<float>()[q * S + i] = float(
            s.data<float>()[q % C] * (x.data<float>()[q * S + i] - mean) / std::sqrt(var + 1e-3) +
            b.data<float>()[q % C]);
    }
    EXPECT_EQ(CompareFloat((*out)[0], ref, 1e-4f, 1e-4f), "");
  }
  Tensor x = RandomTensor({1, 3, 4}, 1), s = RandomTensor({2}, 2);
  EXPECT_FALSE(RunPoisoned(MakeNode("InstanceNormalization", 3, 1), {&x, &s, &s}).ok());
}

TEST(LayerNormalization, MatchesNaiveForEveryAxisWithStatistics) {
  std::vector<int64_t> shape = {2, 3, 7, 13};
  for (int64_t axis = -4; axis < 4; ++axis) {
    int64_t a = axis < 0 ? axis + 4 : axis;
    std::vector<int64_t> norm(shape.begin() + a, shape.end());
    Tensor x = RandomTensor(shape, 31, -3, 5), s = RandomTensor(norm, 32),
           b = RandomTensor(norm, 33);
    Node n = MakeNode("LayerNormalization", 3, 3);
    n.attrs.Set("axis", IntAttr(axis));
    n.attrs.Set("epsilon", FloatAttr(1e-4f));
    auto out = RunPoisoned(n, {&x, &s, &b}, 2);
    ASSERT_TRUE(out.ok()) << out.status().message();
    int64_t inner = Numel(norm), rows = x.numel() / inner;
    Tensor ref(DataType::kFloat32, shape);
    std::vector<int64_t> ss(shape.begin(), shape.begin() + a);
    ss.resize(4, 1);
    Tensor rm(DataType::kFloat32, ss), ri(DataType::kFloat32, ss);
    for (int64_t r = 0; r < rows; ++r) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < inner; ++i) mean += x.data<float>()[r * inner + i];
      mean /= inner;
      for (int64_t i = 0; i < inner; ++i) var += std::pow(x.data<float>()[r * inner + i] - mean, 2);
      var /= inner;
      double inv = 1 / std::sqrt(var + 1e-4);
      rm.data<float>()[r] = float(mean);
      ri.data<float>()[r] = float(inv);
      for (int64_t i = 0; i < inner; ++i)
        ref.data<float>()[r * inner + i] =
            float((x.data<float>()[r * inner + i] - mean) * inv * s.data<float>()[i] +
                  b.data<float>()[i]);
    }
    EXPECT_EQ(CompareFloat((*out)[0], ref, 1e-4f, 1e-4f), "") << axis;
    EXPECT_EQ(CompareFloat((*out)[1], rm, 1e-5f, 1e-5f), "") << axis;
    EXPECT_EQ(CompareFloat((*out)[2], ri, 1e-5f, 1e-4f), "") << axis;
  }
}

// Found by the model fuzzer: an empty X whose normalised shape is huge ([0, 0, 2^32], Scale a
// scalar) made the kernel expand Scale to 2^32 floats (16 GiB) before noticing there was nothing
// to normalise. Now nothing is allocated; a B that does not broadcast is still an error.
TEST(LayerNormalization, EmptyInputWithAHugeNormalisedShapeAllocatesNothing) {
  Tensor x(DataType::kFloat32, {0, 0, int64_t{1} << 32});
  Tensor s = RandomTensor({}, 61), bad_b = RandomTensor({6}, 62);
  auto max_rss_kb = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
  };
  const long before = max_rss_kb();
  auto out = RunPoisoned(MakeNode("LayerNormalization", 2, 1), {&x, &s});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0].shape(), x.shape());
  EXPECT_LT(max_rss_kb() - before, 256 * 1024) << "the peak memory grew by over 256 MB";
  auto bad = RunPoisoned(MakeNode("LayerNormalization", 3, 1), {&x, &s, &bad_b});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("B does not broadcast"), std::string::npos)
      << bad.status().message();
}

TEST(LayerNormalization, LargeRowsSplitOverThreads) {
  Tensor x = RandomTensor({64, 1031}, 51, -2, 3), s = RandomTensor({1031}, 52);
  Tensor b = RandomTensor({1031}, 53);
  auto out = RunPoisoned(MakeNode("LayerNormalization", 3, 1), {&x, &s, &b});
  ASSERT_TRUE(out.ok()) << out.status().message();
  Tensor ref(DataType::kFloat32, {64, 1031});
  for (int64_t r = 0; r < 64; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < 1031; ++i) mean += x.data<float>()[r * 1031 + i];
    mean /= 1031;
    for (int64_t i = 0; i < 1031; ++i) var += std::pow(x.data<float>()[r * 1031 + i] - mean, 2);
    var /= 1031;
    for (int64_t i = 0; i < 1031; ++i)
      ref.data<float>()[r * 1031 + i] = float((x.data<float>()[r * 1031 + i] - mean) /
                                                  std::sqrt(var + 1e-5) * s.data<float>()[i] +
                                              b.data<float>()[i]);
  }
  EXPECT_EQ(CompareFloat((*out)[0], ref, 1e-4f, 1e-4f), "");
}

TEST(LayerNormalization, BroadcastScaleNoBiasAndBadInput) {
  Tensor x = RandomTensor({3, 7, 13}, 41), s = RandomTensor({13}, 42);
  Node n = MakeNode("LayerNormalization", 2, 1);
  n.attrs.Set("axis", IntAttr(1));
  auto out = RunPoisoned(n, {&x, &s});
  ASSERT_TRUE(out.ok()) << out.status().message();
  for (int64_t r = 0; r < 3; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < 91; ++i) mean += x.data<float>()[r * 91 + i];
    mean /= 91;
    for (int64_t i = 0; i < 91; ++i) var += std::pow(x.data<float>()[r * 91 + i] - mean, 2);
    var /= 91;
    for (int64_t i = 0; i < 91; ++i) {
      float want = float((x.data<float>()[r * 91 + i] - mean) / std::sqrt(var + 1e-5) *
                         s.data<float>()[i % 13]);
      ASSERT_NEAR((*out)[0].data<float>()[r * 91 + i], want, 1e-4) << i;
    }
  }
  n.attrs.Set("axis", IntAttr(3));
  auto bad = RunPoisoned(n, {&x, &s});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("LayerNormalization_test"), std::string::npos);
  n.attrs.Set("axis", IntAttr(-1));
  Tensor s2 = RandomTensor({7}, 43);
  EXPECT_FALSE(RunPoisoned(n, {&x, &s2}).ok());
  auto k = FindKernel("", "LayerNormalization")(n);
  ASSERT_TRUE(k.ok());
  EXPECT_DOUBLE_EQ((*k)->EstimateCost({{DataType::kFloat32, {3, 7, 13}}}, {}).flops, 7.0 * 273);
}

// ONNX's InstanceNormalization node tests are opset-6 models, which the session loader refuses;
// run their data through the kernel directly.
// numpy's definition: statistics over [C / G channels, spatial] per (n, g), then per-channel
// (or, opset 18, per-group) scale and bias.
Tensor NaiveGroupNorm(const Tensor& x, const Tensor& s, const Tensor& b, int64_t G, double eps) {
  const int64_t N = x.dim(0), C = x.dim(1), S = x.numel() / std::max<int64_t>(1, N * C);
  const int64_t cpg = C / G;
  Tensor y(DataType::kFloat32, x.shape());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g) {
      double mean = 0, var = 0;
      const int64_t base = (n * C + g * cpg) * S;
      for (int64_t i = 0; i < cpg * S; ++i) mean += x.data<float>()[base + i];
      mean /= static_cast<double>(cpg * S);
      for (int64_t i = 0; i < cpg * S; ++i) var += std::pow(x.data<float>()[base + i] - mean, 2);
      var /= static_cast<double>(cpg * S);
      for (int64_t i = 0; i < cpg * S; ++i) {
        const int64_t c = g * cpg + i / S;
        const int64_t p = s.numel() == C ? c : g;
        y.data<float>()[base + i] = static_cast<float>(
            s.data<float>()[p] * (x.data<float>()[base + i] - mean) / std::sqrt(var + eps) +
            b.data<float>()[p]);
      }
    }
  return y;
}

TEST(GroupNormalization, MatchesNaiveForOpsets18And21) {
  struct Case {
    std::vector<int64_t> shape;
    int64_t groups;
  };
  for (const Case& c : {Case{{2, 6, 7, 13}, 3}, Case{{1, 4, 127}, 2}, Case{{3, 5, 1}, 5},
                        Case{{2, 8, 4, 4, 3}, 1}, Case{{1, 16, 33, 32}, 4}}) {
    const int64_t C = c.shape[1];
    Tensor x = RandomTensor(c.shape, 31, 3, 5);
    for (int opset : {18, 21}) {
      for (int64_t params : {C, c.groups}) {
        if (opset == 21 && params != C) continue;
        Tensor s = RandomTensor({params}, 32), b = RandomTensor({params}, 33);
        Node n = MakeNode("GroupNormalization", 3, 1, opset);
        n.attrs.Set("num_groups", IntAttr(c.groups));
        n.attrs.Set("epsilon", FloatAttr(1e-3f));
        auto out = RunPoisoned(n, {&x, &s, &b});
        ASSERT_TRUE(out.ok()) << out.status().message();
        EXPECT_EQ(CompareFloat((*out)[0], NaiveGroupNorm(x, s, b, c.groups, 1e-3f), 1e-4f, 1e-4f),
                  "")
            << ShapeString(c.shape) << " G=" << c.groups << " opset " << opset << " params "
            << params;
      }
    }
  }
  // Opset 21 wants per-channel parameters; channels must split into groups.
  Tensor x = RandomTensor({1, 4, 3}, 1), g2 = RandomTensor({2}, 2), c4 = RandomTensor({4}, 3);
  Node n21 = MakeNode("GroupNormalization", 3, 1, 21);
  n21.attrs.Set("num_groups", IntAttr(2));
  EXPECT_FALSE(RunPoisoned(n21, {&x, &g2, &g2}).ok());
  Node n3 = MakeNode("GroupNormalization", 3, 1, 21);
  n3.attrs.Set("num_groups", IntAttr(3));
  auto r = RunPoisoned(n3, {&x, &c4, &c4});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not divide"), std::string::npos);
  EXPECT_FALSE(FindKernel("", "GroupNormalization")(MakeNode("GroupNormalization", 3, 1, 18)).ok());
  auto k = FindKernel("", "GroupNormalization")(n3);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ((*k)->EstimateCost({{DataType::kFloat32, {1, 4, 3}}}, {{DataType::kFloat32, {1, 4, 3}}})
                .flops,
            84);
}

TEST(InstanceNormalization, OnnxConformanceData) {
  Node ex = MakeNode("InstanceNormalization", 3, 1, 6);
  Node eps = ex;
  eps.attrs.Set("epsilon", FloatAttr(1e-2f));
  for (auto [node, test] :
       {std::pair{ex, "test_instancenorm_example"}, std::pair{eps, "test_instancenorm_epsilon"}}) {
    std::string r = RunOnnxNodeData(node, test, 3);
    if (r == "skip") GTEST_SKIP() << "libonnx-testdata is not installed";
    EXPECT_EQ(r, "") << test;
  }
}

}  // namespace
}  // namespace opscope::engine::testing
