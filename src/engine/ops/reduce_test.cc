// Differential tests of the reductions and ArgMax/ArgMin against naive twins that visit every
// input element and compute its output index by division.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "engine/ops/elementwise_common.h"
#include "engine/ops/elementwise_test_util.h"
#include "engine/testing/kernel_runner.h"

namespace opscope::engine::testing {
namespace {

using Shape = std::vector<int64_t>;

struct RedDef {
  const char* op;
  std::function<double(const std::vector<double>&)> f;
};

const std::vector<RedDef> kReductions = {
    {"ReduceSum",
     [](const std::vector<double>& v) {
       double s = 0;
       for (double x : v) s += x;
       return s;
     }},
    {"ReduceMean",
     [](const std::vector<double>& v) {
       double s = 0;
       for (double x : v) s += x;
       return s / v.size();
     }},
    {"ReduceMax",
     [](const std::vector<double>& v) {
       double m = -INFINITY;
       for (double x : v) m = std::max(m, x);
       return m;
     }},
    {"ReduceMin",
     [](const std::vector<double>& v) {
       double m = INFINITY;
       for (double x : v) m = std::min(m, x);
       return m;
     }},
    {"ReduceProd",
     [](const std::vector<double>& v) {
       double p = 1;
       for (double x : v) p *= x;
       return p;
     }},
    {"ReduceL1",
     [](const std::vector<double>& v) {
       double s = 0;
       for (double x : v) s += std::fabs(x);
       return s;
     }},
    {"ReduceL2",
     [](const std::vector<double>& v) {
       double s = 0;
       for (double x : v) s += x * x;
       return std::sqrt(s);
     }},
    {"ReduceSumSquare",
     [](const std::vector<double>& v) {
       double s = 0;
       for (double x : v) s += x * x;
       return s;
     }},
    {"ReduceLogSum",
     [](const std::vector<double>& v) {
       double s = 0;
       for (double x : v) s += x;
       return std::log(s);
     }},
    {"ReduceLogSumExp",
     [](const std::vector<double>& v) {
       double s = 0;
       for (double x : v) s += std::exp(x);
       return std::log(s);
     }},
};

// Naive reduction: groups input elements by output index.
Tensor NaiveReduce(const Tensor& x, const std::vector<int64_t>& axes_in, bool keepdims,
                   const std::function<double(const std::vector<double>&)>& f) {
  const int64_t rank = x.rank();
  std::vector<bool> red(rank, axes_in.empty());
  for (int64_t a : axes_in) red[a < 0 ? a + rank : a] = true;
  Shape full, out;
  for (int64_t d = 0; d < rank; ++d) {
    full.push_back(red[d] ? 1 : x.shape()[d]);
    if (!red[d] || keepdims) out.push_back(red[d] ? 1 : x.shape()[d]);
  }
  int64_t n_out = Numel(full);
  std::vector<std::vector<double>> groups(n_out);
  for (int64_t i = 0; i < x.numel(); ++i) {
    Shape idx = Unravel(i, x.shape());
    for (int64_t d = 0; d < rank; ++d)
      if (red[d]) idx[d] = 0;
    groups[Ravel(idx, full)].push_back(x.data<float>()[i]);
  }
  Tensor t(DataType::kFloat32, out);
  for (int64_t k = 0; k < n_out; ++k) t.data<float>()[k] = static_cast<float>(f(groups[k]));
  return t;
}

struct AxesCase {
  Shape shape;
  std::vector<int64_t> axes;
};

const std::vector<AxesCase> kAxesCases = {
    {{7}, {0}},
    {{13, 7}, {1}},        // last axis
    {{13, 7}, {0}},        // leading axis (inner > 1)
    {{13, 7}, {}},         // everything
    {{2, 13, 7}, {1}},     // middle axis
    {{2, 13, 7}, {-1}},    // negative axis
    {{2, 13, 7}, {0, 2}},  // non-adjacent: general path
    {{3, 5, 1, 7, 2}, {1, 3}},
    {{3, 1, 5}, {1}},  // reducing a size-1 axis
    {{127, 13}, {0, 1}},
    {{4, 70000}, {1}},    // few long rows: split across threads
    {{1, 131072}, {}},    // global reduction split across threads
    {{64, 3, 700}, {1}},  // blocked inner path with several blocks
};

TEST(ReduceTest, AllReductionsMatchNaive) {
  uint32_t seed = 1;
  for (const RedDef& r : kReductions) {
    const std::string op = r.op;
    const bool positive = op == "ReduceLogSum";
    for (const AxesCase& c : kAxesCases) {
      if (op == "ReduceProd" && Numel(c.shape) > 5000) continue;  // under/overflows
      for (bool keep : {true, false}) {
        Tensor x = RandomTensor(c.shape, seed++, positive ? 0.1f : -2, 2);
        if (op == "ReduceProd")  // keep products in range
          for (int64_t i = 0; i < x.numel(); ++i)
            x.data<float>()[i] = 0.8f + 0.3f * x.data<float>()[i] / 2;
        Node n = MakeNode(r.op, 1, 1, 11);
        if (!c.axes.empty()) n.attrs.Set("axes", IntsAttr(c.axes));
        n.attrs.Set("keepdims", IntAttr(keep));
        auto out = MustRun(n, {&x});
        ASSERT_EQ(out.size(), 1u);
        Tensor want = NaiveReduce(x, c.axes, keep, r.f);
        EXPECT_EQ(CompareTensors(out[0], want, 1e-4, 1e-4), "")
            << op << " " << ShapeString(c.shape) << " axes " << ShapeString(c.axes) << " keep "
            << keep;
      }
    }
  }
}

TEST(ReduceTest, LogSumExpIsStable) {
  Tensor x = FloatTensor({2, 3}, {1000, 1000, 1000, -1000, -1000, -1000});
  Node n = MakeNode("ReduceLogSumExp", 1, 1, 13);
  n.attrs.Set("axes", IntsAttr({1}));
  auto out = MustRun(n, {&x});
  EXPECT_NEAR(out[0].data<float>()[0], 1000 + std::log(3.0), 1e-3);
  EXPECT_NEAR(out[0].data<float>()[1], -1000 + std::log(3.0), 1e-3);
}

TEST(ReduceTest, ReduceSumAxesInputAndNoop) {
  Tensor x = RandomTensor({3, 4, 5}, 3);
  Tensor axes = IntTensor({1}, {-2});
  auto out = MustRun(MakeNode("ReduceSum", 2, 1, 13), {&x, &axes});
  EXPECT_EQ(CompareTensors(out[0], NaiveReduce(x, {1}, true, kReductions[0].f), 1e-5, 1e-5), "");
  // Omitted axes: reduce everything; empty axes with noop_with_empty_axes=1: identity.
  out = MustRun(MakeNode("ReduceSum", 2, 1, 13), {&x, nullptr});
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 1}));
  Tensor empty_axes(DataType::kInt64, {0});
  Node noop = MakeNode("ReduceSum", 2, 1, 13);
  noop.attrs.Set("noop_with_empty_axes", IntAttr(1));
  out = MustRun(noop, {&x, &empty_axes});
  EXPECT_EQ(CompareTensors(out[0], x, 0, 0), "");
}

TEST(ReduceTest, IntegerTypes) {
  Tensor x = IntTensor({2, 3}, {1, 2, 3, 4, 5, 6});
  Node n = MakeNode("ReduceSum", 1, 1, 11);
  n.attrs.Set("axes", IntsAttr({1}));
  n.attrs.Set("keepdims", IntAttr(0));
  auto out = MustRun(n, {&x});
  EXPECT_EQ(CompareTensors(out[0], IntTensor({2}, {6, 15})), "");
  n.op_type = "ReduceProd";
  out = MustRun(n, {&x});
  EXPECT_EQ(CompareTensors(out[0], IntTensor({2}, {6, 120})), "");
  n.op_type = "ReduceMax";
  Tensor x32 = MakeTyped<int32_t>(DataType::kInt32, {2, 3}, {1, -2, 3, -4, 5, -6});
  out = MustRun(n, {&x32});
  EXPECT_EQ(CompareTensors(out[0], MakeTyped<int32_t>(DataType::kInt32, {2}, {3, 5})), "");
}

TEST(ReduceTest, EmptyReducedAxis) {
  Tensor x(DataType::kFloat32, {2, 0});
  Node n = MakeNode("ReduceSum", 1, 1, 11);
  n.attrs.Set("axes", IntsAttr({1}));
  auto out = MustRun(n, {&x});
  EXPECT_EQ(CompareTensors(out[0], FloatTensor({2, 1}, {0, 0})), "");
  n.op_type = "ReduceMax";
  out = MustRun(n, {&x});
  EXPECT_EQ(out[0].data<float>()[0], -std::numeric_limits<float>::infinity());
  Tensor xi(DataType::kInt64, {2, 0});
  ExpectNodeError(n, {&xi}, "empty");
}

TEST(ReduceTest, BadAxes) {
  Tensor x = RandomTensor({3, 4}, 1);
  Node n = MakeNode("ReduceMean", 1, 1, 11);
  n.attrs.Set("axes", IntsAttr({2}));
  ExpectNodeError(n, {&x}, "out of range");
  n.attrs.Set("axes", IntsAttr({1, -1}));
  ExpectNodeError(n, {&x}, "repeated");
  Tensor fa = FloatTensor({1}, {0});
  ExpectNodeError(MakeNode("ReduceSum", 2, 1, 13), {&x, &fa}, "int64");
  Tensor b = RandomBool({3}, 1);
  ExpectNodeError(MakeNode("ReduceSum", 1, 1, 13), {&b}, "unsupported");
}

TEST(ReduceTest, ThreadCountDoesNotChangeResults) {
  Tensor x = RandomTensor({3, 131072}, 9);
  Node n = MakeNode("ReduceMax", 1, 1, 11);
  n.attrs.Set("axes", IntsAttr({1}));
  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  auto one = MustRun(n, {&x});
  omp_set_num_threads(4);
  auto four = MustRun(n, {&x});
  omp_set_num_threads(saved);
  EXPECT_EQ(CompareTensors(one[0], four[0], 0, 0), "");
}

// ---- ArgMax / ArgMin ----

Tensor NaiveArg(const Tensor& x, int64_t axis, bool keep, bool is_max, bool last) {
  const int64_t rank = x.rank();
  if (axis < 0) axis += rank;
  Shape out, full = x.shape();
  full[axis] = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis || keep) out.push_back(d == axis ? 1 : x.shape()[d]);
  Tensor t(DataType::kInt64, out);
  std::vector<double> best(Numel(full), is_max ? -INFINITY : INFINITY);
  std::vector<int64_t> bi(Numel(full), -1);
  for (int64_t i = 0; i < x.numel(); ++i) {
    Shape idx = Unravel(i, x.shape());
    int64_t r = idx[axis];
    idx[axis] = 0;
    int64_t k = Ravel(idx, full);
    double v = x.data<float>()[i];
    bool better = bi[k] < 0 || (is_max ? v > best[k] : v < best[k]) || (last && v == best[k]);
    if (better) {
      best[k] = v;
      bi[k] = r;
    }
  }
  for (int64_t k = 0; k < t.numel(); ++k) t.data<int64_t>()[k] = bi[k];
  return t;
}

TEST(ArgTest, MatchesNaiveWithTies) {
  uint32_t seed = 50;
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (Shape s : {Shape{7}, Shape{13, 7}, Shape{2, 13, 7}, Shape{3, 127, 1}, Shape{300, 257}}) {
      for (int64_t axis = -static_cast<int64_t>(s.size()); axis < static_cast<int64_t>(s.size());
           ++axis) {
        for (bool keep : {true, false}) {
          for (bool last : {false, true}) {
            Tensor x = RandomTensor(s, seed++, -4, 4);
            for (int64_t i = 0; i < x.numel(); ++i)
              x.data<float>()[i] = std::round(x.data<float>()[i]);
            Node n = MakeNode(op, 1, 1, 13);
            n.attrs.Set("axis", IntAttr(axis));
            n.attrs.Set("keepdims", IntAttr(keep));
            n.attrs.Set("select_last_index", IntAttr(last));
            auto out = MustRun(n, {&x});
            Tensor want = NaiveArg(x, axis, keep, std::string(op) == "ArgMax", last);
            EXPECT_EQ(CompareTensors(out[0], want), "")
                << op << " " << ShapeString(s) << " axis " << axis << " keep " << keep << " last "
                << last;
          }
        }
      }
    }
  }
}

TEST(ArgTest, BadInput) {
  Tensor x = RandomTensor({3, 4}, 1);
  Node n = MakeNode("ArgMax", 1, 1, 13);
  n.attrs.Set("axis", IntAttr(2));
  ExpectNodeError(n, {&x}, "out of range");
  Tensor e(DataType::kFloat32, {3, 0});
  n.attrs.Set("axis", IntAttr(1));
  ExpectNodeError(n, {&e}, "empty");
}

TEST(ReduceTest, Cost) {
  auto k = FindKernel("", "ReduceSum")(MakeNode("ReduceSum", 1, 1, 11));
  Cost c = (*k)->EstimateCost({{DataType::kFloat32, {4, 8}}}, {{DataType::kFloat32, {4, 1}}});
  EXPECT_EQ(c.flops, 32 + 4);
  EXPECT_EQ(c.bytes, (32 + 4) * 4);
  auto l2 = FindKernel("", "ReduceL2")(MakeNode("ReduceL2", 1, 1, 11));
  c = (*l2)->EstimateCost({{DataType::kFloat32, {4, 8}}}, {{DataType::kFloat32, {4, 1}}});
  EXPECT_EQ(c.flops, 64 + 4);
}

// ReduceMax/ReduceMin-20 on bool: any / all along the axes, against a naive twin.
TEST(Reduce, MaxAndMinOfBoolAreAnyAndAll) {
  Tensor x(DataType::kBool, {3, 4});
  const int v[12] = {0, 0, 0, 0, 1, 0, 1, 0, 1, 1, 1, 1};
  for (int i = 0; i < 12; ++i) x.data<uint8_t>()[i] = static_cast<uint8_t>(v[i]);
  Tensor axes = IntTensor({1}, {1});
  for (const char* op : {"ReduceMax", "ReduceMin"}) {
    Node n = MakeNode(op, 2, 1, 20);
    n.attrs.Set("keepdims", IntAttr(0));
    auto out = RunKernel(n, {&x, &axes});
    ASSERT_TRUE(out.ok()) << out.status().message();
    ASSERT_EQ((*out)[0].dtype(), DataType::kBool);
    ASSERT_EQ((*out)[0].shape(), (std::vector<int64_t>{3}));
    for (int r = 0; r < 3; ++r) {
      bool any = false, all = true;
      for (int c = 0; c < 4; ++c) any |= v[r * 4 + c] != 0, all &= v[r * 4 + c] != 0;
      EXPECT_EQ((*out)[0].data<uint8_t>()[r], std::string(op) == "ReduceMax" ? any : all)
          << op << r;
    }
  }
  Node sum = MakeNode("ReduceSum", 2, 1, 20);
  EXPECT_FALSE(RunKernel(sum, {&x, &axes}).ok());  // only max/min take bool
}

}  // namespace
}  // namespace opscope::engine::testing
