// Einsum against a naive twin that enumerates every assignment of the labels.
#include <gtest/gtest.h>

#include <map>

#include "engine/memory_limit.h"
#include "engine/ops/dnnl_testing.h"

namespace opscope::engine::testing {
namespace {

// Explicit equations only, no "..." (the cases below spell out their broadcast dims).
Tensor NaiveEinsum(const std::string& eq, const std::vector<const Tensor*>& ins) {
  std::string lhs = eq.substr(0, eq.find("->")), rhs = eq.substr(eq.find("->") + 2);
  std::vector<std::string> terms;
  size_t s = 0;
  while (true) {
    size_t c = lhs.find(',', s);
    terms.push_back(lhs.substr(s, c - s));
    if (c == std::string::npos) break;
    s = c + 1;
  }
  std::map<char, int64_t> size;
  for (size_t i = 0; i < terms.size(); ++i)
    for (size_t d = 0; d < terms[i].size(); ++d)
      size[terms[i][d]] = std::max(size[terms[i][d]], ins[i]->dim(static_cast<int>(d)));
  std::vector<char> labels;
  for (auto& [c, n] : size) labels.push_back(c);
  std::vector<int64_t> out_shape;
  for (char c : rhs) out_shape.push_back(size[c]);
  Tensor y(DataType::kFloat32, out_shape);
  std::vector<double> acc(static_cast<size_t>(y.numel()), 0.0);
  std::map<char, int64_t> at;
  for (char c : labels) at[c] = 0;
  auto offset = [&](const std::string& term, const Tensor& t) {
    int64_t off = 0;
    for (size_t d = 0; d < term.size(); ++d)
      off = off * t.dim(static_cast<int>(d)) + (t.dim(static_cast<int>(d)) == 1 ? 0 : at[term[d]]);
    return off;
  };
  while (true) {
    double p = 1;
    for (size_t i = 0; i < terms.size(); ++i) p *= ins[i]->data<float>()[offset(terms[i], *ins[i])];
    int64_t o = 0;
    for (char c : rhs) o = o * size[c] + at[c];
    acc[o] += p;
    size_t k = labels.size();
    while (k > 0) {
      --k;
      if (++at[labels[k]] < size[labels[k]]) break;
      at[labels[k]] = 0;
      if (k == 0) {
        k = labels.size() + 1;
        break;
      }
    }
    if (k == labels.size() + 1 || labels.empty()) break;
  }
  for (int64_t i = 0; i < y.numel(); ++i) y.data<float>()[i] = float(acc[i]);
  return y;
}

struct Case {
  std::string eq;
  std::vector<std::vector<int64_t>> shapes;
};

TEST(Einsum, MatchesNaiveTwin) {
  std::vector<Case> cases = {
      {"bij,bjk->bik", {{2, 7, 13}, {2, 13, 5}}},
      {"bhqd,bhkd->bhqk", {{1, 2, 7, 13}, {1, 2, 5, 13}}},
      {"bhqk,bhkd->bhqd", {{2, 3, 7, 5}, {2, 3, 5, 13}}},
      {"ij->ji", {{7, 13}}},
      {"ij->i", {{7, 13}}},
      {"ij->", {{7, 13}}},
      {"i,j->ij", {{7}, {13}}},
      {"i,i->", {{127}, {127}}},
      {"ii->i", {{7, 7}}},
      {"ii->", {{13, 13}}},
      {"bii->bi", {{3, 5, 5}}},
      {"ijk->kji", {{2, 3, 4}}},
      {"ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 2}}},
      {"bij,jk->bk", {{2, 7, 13}, {13, 5}}},       // i summed out of A before the matmul
      {"ij,kj->ikj", {{7, 13}, {5, 13}}},          // j kept: batch label
      {"bij,bjk->bik", {{1, 7, 13}, {3, 13, 5}}},  // size-1 broadcast
      {"a,a->a", {{1}, {1}}},
      {"bqhd,bkhd->bhqk", {{2, 7, 3, 5}, {2, 13, 3, 5}}},  // batch labels not nested: gathered
      {"ik,jk->ij", {{7, 13}, {5, 13}}},                   // B read transposed, no copy
      {"ki,kj->ij", {{13, 7}, {13, 5}}},                   // A read transposed
      {"bik,bkj->bij", {{3, 1, 13}, {3, 13, 1}}},
      {"ijk->kji", {{16, 33, 64}}},  // large enough to split gathers and sums over threads
      {"ijk->ik", {{16, 64, 33}}},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    std::vector<Tensor> ts;
    for (auto& s : c.shapes) ts.push_back(RandomTensor(s, seed++));
    std::vector<const Tensor*> ptrs;
    for (auto& t : ts) ptrs.push_back(&t);
    Node n = MakeNode("Einsum", static_cast<int>(ts.size()), 1);
    n.attrs.Set("equation", StringAttr(c.eq));
    auto out = RunPoisoned(n, ptrs, 2);
    ASSERT_TRUE(out.ok()) << c.eq << ": " << out.status().message();
    EXPECT_EQ(CompareFloat((*out)[0], NaiveEinsum(c.eq, ptrs), 1e-4f, 1e-4f), "") << c.eq;
  }
}

TEST(Einsum, EllipsisImplicitOutputAndDouble) {
  Tensor a = RandomTensor({2, 3, 5, 5}, 1);
  Node n = MakeNode("Einsum", 1, 1);
  n.attrs.Set("equation", StringAttr("...ii ->...i"));
  auto out = RunPoisoned(n, {&a});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(CompareFloat((*out)[0], NaiveEinsum("bcii->bci", {&a})), "");
  // Implicit output: "ba" -> labels once each, sorted: "ab" (a transpose).
  Tensor b = RandomTensor({3, 4}, 2);
  Node t = MakeNode("Einsum", 1, 1);
  t.attrs.Set("equation", StringAttr("ba"));
  out = RunPoisoned(t, {&b});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(CompareFloat((*out)[0], NaiveEinsum("ba->ab", {&b})), "");
  // "...ij,...jk" broadcasts the leading dims and implicitly outputs "...ik".
  Tensor x = RandomTensor({2, 1, 3, 4}, 3), y = RandomTensor({5, 4, 2}, 4);
  Node bm = MakeNode("Einsum", 2, 1);
  bm.attrs.Set("equation", StringAttr("...ij,...jk"));
  out = RunPoisoned(bm, {&x, &y});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{2, 5, 3, 2}));
  EXPECT_EQ(CompareFloat((*out)[0], NaiveEinsum("pqij,qjk->pqik", {&x, &y}), 1e-5f, 1e-4f), "");
  // float64 inputs (ONNX's conformance data for Einsum is double).
  Tensor d(DataType::kFloat64, {2, 3}), e(DataType::kFloat64, {3, 2});
  for (int i = 0; i < 6; ++i) d.data<double>()[i] = i + 1, e.data<double>()[i] = 0.5 * i;
  Node dm = MakeNode("Einsum", 2, 1);
  dm.attrs.Set("equation", StringAttr("ij,jk->ik"));
  out = RunPoisoned(dm, {&d, &e});
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ((*out)[0].dtype(), DataType::kFloat64);
  // [1 2 3; 4 5 6] x [0 .5; 1 1.5; 2 2.5] = [8 11; 17 24.5]
  std::vector<double> want = {8, 11, 17, 24.5};
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ((*out)[0].data<double>()[i], want[i]);
}

TEST(Einsum, BadEquationsAreErrorsNamingTheEquation) {
  Tensor a = RandomTensor({3, 4}, 1), b = RandomTensor({5, 6}, 2);
  for (std::string eq : {"ij,jk->ik", "ij->ik", "i$->i", "ij->ii", "ijk->i"}) {
    Node n = MakeNode("Einsum", eq.find(',') != std::string::npos ? 2 : 1, 1);
    n.attrs.Set("equation", StringAttr(eq));
    auto kernel = FindKernel("", "Einsum")(n);
    Status st = kernel.ok() ? RunPoisoned(n, eq.find(',') != std::string::npos
                                                 ? std::vector<const Tensor*>{&a, &b}
                                                 : std::vector<const Tensor*>{&a})
                                  .status()
                            : kernel.status();
    ASSERT_FALSE(st.ok()) << eq;
    EXPECT_NE(st.message().find(eq), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("Einsum_test"), std::string::npos) << st.message();
  }
  Node two = MakeNode("Einsum", 1, 1);
  two.attrs.Set("equation", StringAttr("ij,jk->ik"));
  EXPECT_FALSE(FindKernel("", "Einsum")(two).ok());  // 2 operands, 1 input
}

// Four 1-D operands and a scalar output: the first pairwise product is i*j (4 MB here, both
// labels are needed later) although no input or output holds more than 4 KB. It is checked
// against the tensor memory limit before it is allocated.
TEST(Einsum, IntermediateProductsAreBoundedByTheTensorMemoryLimit) {
  Tensor a = RandomTensor({1024}, 1), b = RandomTensor({1024}, 2), c = RandomTensor({1024}, 3);
  Node n = MakeNode("Einsum", 4, 1);
  n.attrs.Set("equation", StringAttr("i,j,i,j->"));
  auto kernel = FindKernel("", "Einsum")(n);
  ASSERT_TRUE(kernel.ok()) << kernel.status().message();
  SetTensorMemoryLimit(size_t{1} << 20);
  Status st = RunPoisoned(n, {&a, &b, &c, &a}).status();
  SetTensorMemoryLimit(0);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("intermediate product of shape [1024,1024] would need 4.19 MB"),
            std::string::npos)
      << st.message();
  EXPECT_TRUE(RunPoisoned(n, {&a, &b, &c, &a}).ok());
}

TEST(Einsum, Cost) {
  Node n = MakeNode("Einsum", 2, 1);
  n.attrs.Set("equation", StringAttr("bij,bjk->bik"));
  auto k = FindKernel("", "Einsum")(n);
  ASSERT_TRUE(k.ok());
  Cost c = (*k)->EstimateCost({{DataType::kFloat32, {2, 3, 4}}, {DataType::kFloat32, {2, 4, 5}}},
                              {{DataType::kFloat32, {2, 3, 5}}});
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 2 * 3 * 4 * 5);
}

}  // namespace
}  // namespace opscope::engine::testing
