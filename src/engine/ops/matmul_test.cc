// MatMul / Gemm against naive twins: broadcasting, 1-D operands, transposes, C broadcasts,
// alpha/beta, fused bias and activations, costs and bad input.
#include <gtest/gtest.h>

#include "engine/ops/dnnl_testing.h"

namespace opscope::engine::testing {
namespace {

// numpy.matmul, written out.
Tensor NaiveMatMul(const Tensor& a, const Tensor& b) {
  std::vector<int64_t> as = a.shape(), bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  std::vector<int64_t> ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2), batch;
  EXPECT_TRUE(BroadcastShapes(ab, bb, &batch));
  std::vector<int64_t> astr = BroadcastStrides(ab, batch), bstr = BroadcastStrides(bb, batch);
  std::vector<int64_t> out = batch;
  if (a.rank() > 1) out.push_back(M);
  if (b.rank() > 1) out.push_back(N);
  Tensor y(DataType::kFloat32, out);
  int64_t nb = Numel(batch);
  for (int64_t bi = 0; bi < nb; ++bi) {
    int64_t rem = bi, ao = 0, bo = 0;
    for (int d = static_cast<int>(batch.size()) - 1; d >= 0; --d) {
      int64_t idx = rem % batch[d];
      rem /= batch[d];
      ao += idx * astr[d];
      bo += idx * bstr[d];
    }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += double(a.data<float>()[ao * M * K + i * K + k]) *
                 b.data<float>()[bo * K * N + k * N + j];
        y.data<float>()[(bi * M + i) * N + j] = float(acc);
      }
  }
  return y;
}

TEST(MatMul, MatchesNaiveTwinWithBroadcastAnd1D) {
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{7, 13}, {13, 1}},
      {{1, 1}, {1, 1}},
      {{127, 7}, {7, 13}},
      {{3, 7, 13}, {13, 5}},
      {{7, 13}, {2, 13, 5}},
      {{2, 1, 7, 13}, {3, 13, 4}},
      {{2, 3, 7, 13}, {1, 3, 13, 4}},
      {{13}, {13, 7}},
      {{2, 7, 13}, {13}},
      {{13}, {13}},
      {{2, 3, 4, 5, 6}, {6, 2}},
  };
  uint32_t seed = 1;
  for (auto& [as, bs] : cases) {
    Tensor a = RandomTensor(as, seed++), b = RandomTensor(bs, seed++);
    auto out = RunPoisoned(MakeNode("MatMul", 2, 1), {&a, &b}, 2);
    ASSERT_TRUE(out.ok()) << out.status().message();
    Tensor ref = NaiveMatMul(a, b);
    EXPECT_EQ((*out)[0].shape(), ref.shape());
    EXPECT_EQ(CompareFloat((*out)[0], ref), "") << as.size() << "x" << bs.size();
  }
}

TEST(MatMul, FusedBiasAndActivationsEqualSeparateOps) {
  Tensor a = RandomTensor({2, 7, 13}, 11, -2, 2), b = RandomTensor({13, 5}, 12);
  Tensor bias = RandomTensor({5}, 13);
  Tensor plain = NaiveMatMul(a, b);
  Tensor with_bias = plain;
  with_bias = Tensor(DataType::kFloat32, plain.shape());
  for (int64_t i = 0; i < plain.numel(); ++i)
    with_bias.data<float>()[i] = plain.data<float>()[i] + bias.data<float>()[i % 5];
  Node n = MakeNode("MatMul", 2, 1);
  PostOp bias_op{PostOpKind::kBiasAdd};
  bias_op.bias = &bias;
  auto ob = RunWithPostOps(n, {&a, &b}, {bias_op});
  ASSERT_TRUE(ob.ok()) << ob.status().message();
  EXPECT_EQ(CompareFloat((*ob)[0], with_bias), "");
  for (const PostOp& op : AllActivations()) {
    auto out = RunWithPostOps(n, {&a, &b}, {bias_op, op});
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ(CompareFloat((*out)[0], ApplyRef(with_bias, op)), "") << static_cast<int>(op.kind);
    auto out2 = RunWithPostOps(n, {&a, &b}, {op});
    ASSERT_TRUE(out2.ok());
    EXPECT_EQ(CompareFloat((*out2)[0], ApplyRef(plain, op)), "") << static_cast<int>(op.kind);
  }
  // [1, N] is accepted as well; [2, N] is not a bias over the last dim.
  Tensor bias_row = bias;
  bias_row.Reshape({1, 5});
  PostOp row_op{PostOpKind::kBiasAdd};
  row_op.bias = &bias_row;
  auto orow = RunWithPostOps(n, {&a, &b}, {row_op});
  ASSERT_TRUE(orow.ok()) << orow.status().message();
  EXPECT_EQ(CompareFloat((*orow)[0], with_bias), "");
  Tensor bias2 = RandomTensor({2, 5}, 15);
  PostOp two_rows{PostOpKind::kBiasAdd};
  two_rows.bias = &bias2;
  EXPECT_FALSE(RunWithPostOps(n, {&a, &b}, {two_rows}).ok());
  // A bias after an activation would change the meaning: refused.
  auto k = FindKernel("", "MatMul")(n);
  ASSERT_TRUE(k.ok());
  EXPECT_TRUE((*k)->AddPostOp({PostOpKind::kRelu}));
  EXPECT_FALSE((*k)->AddPostOp(bias_op));
  // Bias of the wrong length is an error at run time.
  Tensor bad_bias = RandomTensor({4}, 14);
  PostOp bad{PostOpKind::kBiasAdd};
  bad.bias = &bad_bias;
  EXPECT_FALSE(RunWithPostOps(n, {&a, &b}, {bad}).ok());
}

TEST(MatMul, BadInputCostAndEmpty) {
  Node n = MakeNode("MatMul", 2, 1);
  Tensor a = RandomTensor({3, 4}, 1), b = RandomTensor({5, 6}, 2);
  auto r = RunPoisoned(n, {&a, &b});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("MatMul_test"), std::string::npos);
  Tensor a3 = RandomTensor({2, 3, 4}, 3), b3 = RandomTensor({3, 4, 6}, 4);
  EXPECT_FALSE(RunPoisoned(n, {&a3, &b3}).ok());  // batch 2 vs 3
  Tensor k0a(DataType::kFloat32, {3, 0}), k0b(DataType::kFloat32, {0, 2});
  auto z = RunPoisoned(n, {&k0a, &k0b});
  ASSERT_TRUE(z.ok());
  EXPECT_EQ((*z)[0].shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ((*z)[0].data<float>()[5], 0.f);
  auto k = FindKernel("", "MatMul")(n);
  ASSERT_TRUE(k.ok());
  // batch 2, M=3, K=4, N=6: 2*2*3*6*4 = 288 flops; bytes 4*(24+24+36).
  Cost c = (*k)->EstimateCost({{DataType::kFloat32, {2, 3, 4}}, {DataType::kFloat32, {4, 6}}},
                              {{DataType::kFloat32, {2, 3, 6}}});
  EXPECT_DOUBLE_EQ(c.flops, 288);
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (24 + 24 + 36));
}

Tensor NaiveGemm(const Tensor& a, const Tensor& b, const Tensor* c, bool ta, bool tb, float alpha,
                 float beta) {
  int64_t M = ta ? a.dim(1) : a.dim(0), K = ta ? a.dim(0) : a.dim(1);
  int64_t N = tb ? b.dim(0) : b.dim(1);
  Tensor y(DataType::kFloat32, {M, N});
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += double(a.data<float>()[ta ? k * M + i : i * K + k]) *
               b.data<float>()[tb ? j * K + k : k * N + j];
      double cv = 0;
      if (c) {
        int64_t cm = c->rank() == 2 ? c->dim(0) : 1, cn = c->rank() >= 1 ? c->dim(-1) : 1;
        cv = c->data<float>()[(cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j)];
      }
      y.data<float>()[i * N + j] = float(alpha * acc + beta * cv);
    }
  return y;
}

TEST(Gemm, MatchesNaiveTwinAllTransposesAndCShapes) {
  const int64_t M = 7, K = 13, N = 5;
  std::vector<std::vector<int64_t>> c_shapes = {{}, {N}, {1, N}, {M, 1}, {M, N}, {1}, {1, 1}};
  uint32_t seed = 30;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (size_t ci = 0; ci <= c_shapes.size(); ++ci)
        for (auto [alpha, beta] :
             {std::pair{1.f, 1.f}, std::pair{0.5f, -2.f}, std::pair{2.f, 0.f}}) {
          Tensor a =
              RandomTensor(ta ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}, seed++);
          Tensor b =
              RandomTensor(tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, seed++);
          bool has_c = ci < c_shapes.size();
          Tensor c = has_c ? RandomTensor(c_shapes[ci], seed++) : Tensor();
          Node n = MakeNode("Gemm", has_c ? 3 : 2, 1);
          n.attrs.Set("transA", IntAttr(ta));
          n.attrs.Set("transB", IntAttr(tb));
          n.attrs.Set("alpha", FloatAttr(alpha));
          n.attrs.Set("beta", FloatAttr(beta));
          auto out = RunPoisoned(
              n,
              has_c ? std::vector<const Tensor*>{&a, &b, &c} : std::vector<const Tensor*>{&a, &b},
              2);
          ASSERT_TRUE(out.ok()) << out.status().message();
          Tensor ref = NaiveGemm(a, b, has_c ? &c : nullptr, ta, tb, alpha, beta);
          EXPECT_EQ(CompareFloat((*out)[0], ref), "")
              << "ta=" << ta << " tb=" << tb << " c=" << ci << " alpha=" << alpha;
        }
}

TEST(Gemm, FusedActivationsEqualSeparateOps) {
  Tensor a = RandomTensor({13, 7}, 41, -2, 2), b = RandomTensor({7, 127}, 42);
  Tensor c = RandomTensor({127}, 43);
  Node n = MakeNode("Gemm", 3, 1);
  n.attrs.Set("alpha", FloatAttr(1.5f));
  n.attrs.Set("beta", FloatAttr(0.5f));
  Tensor plain = NaiveGemm(a, b, &c, false, false, 1.5f, 0.5f);
  for (const PostOp& op : AllActivations()) {
    auto out = RunWithPostOps(n, {&a, &b, &c}, {op});
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ(CompareFloat((*out)[0], ApplyRef(plain, op)), "") << static_cast<int>(op.kind);
  }
  auto k = FindKernel("", "Gemm")(n);
  ASSERT_TRUE(k.ok());
  EXPECT_FALSE((*k)->AddPostOp({PostOpKind::kBiasAdd}));
}

// oneDNN 2.6 gives every eltwise post-op of one algorithm the first one's alpha/beta: Clip then
// HardSigmoid (whose second half is a clip(0, 1)) computed clip(-0.5, 0.5) twice. Such a chain
// is refused (the activation stays a step of its own); one that repeats an algorithm with the
// same parameters, or chains different ones, is kept and computes the reference.
TEST(MatMul, PostOpChainsThatOneDnnWouldGetWrongAreRefused) {
  PostOp clip{PostOpKind::kClip, -0.5f, 0.5f};
  PostOp hard_sigmoid{PostOpKind::kHardSigmoid, 0.25f, 0.5f};
  PostOp leaky{PostOpKind::kLeakyRelu, 0.1f};
  PostOp relu{PostOpKind::kRelu};
  PostOp tanh_op{PostOpKind::kTanh};
  for (const char* op : {"MatMul", "Gemm"}) {
    Node n = MakeNode(op, 2, 1);
    auto k = FindKernel("", op)(n);
    ASSERT_TRUE(k.ok());
    ASSERT_TRUE((*k)->AddPostOp(clip));
    EXPECT_FALSE((*k)->AddPostOp(hard_sigmoid)) << op;
    EXPECT_TRUE((*k)->AddPostOp(clip)) << op;  // same parameters: fine
    auto k2 = FindKernel("", op)(n);
    ASSERT_TRUE(k2.ok());
    ASSERT_TRUE((*k2)->AddPostOp(leaky));
    ASSERT_TRUE((*k2)->AddPostOp(tanh_op));
    EXPECT_FALSE((*k2)->AddPostOp(relu)) << op;  // Relu is eltwise_relu with alpha 0
  }
  for (const char* op : {"Conv", "ConvTranspose"}) {
    auto k = FindKernel("", op)(MakeNode(op, 2, 1));
    ASSERT_TRUE(k.ok());
    ASSERT_TRUE((*k)->AddPostOp(clip));
    EXPECT_FALSE((*k)->AddPostOp(hard_sigmoid)) << op;
  }
  // The kept chain Clip, Tanh, Clip computes what the reference does.
  Tensor a = RandomTensor({5, 7}, 61, -3, 3), b = RandomTensor({7, 9}, 62);
  Node n = MakeNode("MatMul", 2, 1);
  auto out = RunWithPostOps(n, {&a, &b}, {clip, tanh_op, clip});
  ASSERT_TRUE(out.ok()) << out.status().message();
  Tensor want = ApplyRef(ApplyRef(ApplyRef(NaiveMatMul(a, b), clip), tanh_op), clip);
  EXPECT_EQ(CompareFloat((*out)[0], want, 1e-5f, 1e-5f), "");
}

TEST(Gemm, BadInputAndCost) {
  Node n = MakeNode("Gemm", 3, 1);
  Tensor a = RandomTensor({3, 4}, 1), b = RandomTensor({4, 5}, 2), c = RandomTensor({2, 5}, 3);
  auto r = RunPoisoned(n, {&a, &b, &c});
  ASSERT_FALSE(r.ok());  // C [2,5] does not broadcast to [3,5]
  EXPECT_NE(r.status().message().find("Gemm_test"), std::string::npos);
  Tensor b2 = RandomTensor({3, 5}, 4);
  EXPECT_FALSE(RunPoisoned(n, {&a, &b2}).ok());
  Tensor a3 = RandomTensor({1, 3, 4}, 5);
  EXPECT_FALSE(RunPoisoned(n, {&a3, &b}).ok());
  auto k = FindKernel("", "Gemm")(n);
  ASSERT_TRUE(k.ok());
  // M=3, K=4, N=5: 2*60 = 120, + 15 for C (alpha = beta = 1).
  Cost cost = (*k)->EstimateCost(
      {{DataType::kFloat32, {3, 4}}, {DataType::kFloat32, {4, 5}}, {DataType::kFloat32, {5}}},
      {{DataType::kFloat32, {3, 5}}});
  EXPECT_DOUBLE_EQ(cost.flops, 135);
  EXPECT_DOUBLE_EQ(cost.bytes, 4.0 * (12 + 20 + 5 + 15));
}

}  // namespace
}  // namespace opscope::engine::testing
