// LSTM, GRU and RNN against a naive twin (the ONNX equations written out per element, with
// dot products instead of GEMMs): every direction, sequence_lens, initial states, layout 0/1,
// peepholes, clip, GRU's linear_before_reset, non-default activations; bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/testing/kernel_runner.h"

namespace opscope::engine {
namespace {

using testing::MakeNode;
using testing::RandomTensor;

float Sig(float x) { return 1.f / (1.f + std::exp(-x)); }

struct Case {
  std::string op = "LSTM";
  std::string direction = "forward";
  int64_t T = 5, B = 3, I = 4, H = 6;
  bool bias = true, lens = false, init = false, peep = false, layout1 = false, lbr = false;
  float clip = 0;
  bool relu_g = false;  // activations: g = Relu (LSTM/GRU) or f = Relu (RNN)
};

struct Result {
  std::vector<float> y, yh, yc;
};

// The twin: [T, D, B, H] / [D, B, H] outputs (layout 0), converted for layout 1 by the caller.
Result Naive(const Case& c, const float* X, const float* W, const float* R, const float* Bs,
             const std::vector<int64_t>& len, const float* h0, const float* c0, const float* P) {
  const int64_t G = c.op == "LSTM" ? 4 : c.op == "GRU" ? 3 : 1;
  const int64_t D = c.direction == "bidirectional" ? 2 : 1, T = c.T, B = c.B, I = c.I, H = c.H;
  Result r;
  r.y.assign(T * D * B * H, 0.f);
  r.yh.assign(D * B * H, 0.f);
  r.yc.assign(D * B * H, 0.f);
  auto clip = [&](float v) { return c.clip > 0 ? std::max(-c.clip, std::min(c.clip, v)) : v; };
  auto g_act = [&](float v) { return c.relu_g ? std::max(v, 0.f) : std::tanh(v); };
  for (int64_t d = 0; d < D; ++d) {
    const bool rev = c.direction == "reverse" || d == 1;
    for (int64_t b = 0; b < B; ++b) {
      std::vector<float> h(H), cs(H);
      for (int64_t k = 0; k < H; ++k) {
        h[k] = h0 ? h0[(d * B + b) * H + k] : 0.f;
        cs[k] = c0 ? c0[(d * B + b) * H + k] : 0.f;
      }
      for (int64_t s = 0; s < len[b]; ++s) {
        const int64_t t = rev ? len[b] - 1 - s : s;
        const float* x = X + (c.layout1 ? b * T + t : t * B + b) * I;
        // gate pre-activation for gate row j: x.W_j + h.R_j + Wb_j + Rb_j
        auto xw = [&](int64_t j) {
          float a = 0;
          for (int64_t i = 0; i < I; ++i) a += x[i] * W[(d * G * H + j) * I + i];
          return a + (Bs ? Bs[d * 2 * G * H + j] : 0.f);
        };
        auto hr = [&](const std::vector<float>& hv, int64_t j) {
          float a = 0;
          for (int64_t i = 0; i < H; ++i) a += hv[i] * R[(d * G * H + j) * H + i];
          return a + (Bs ? Bs[d * 2 * G * H + G * H + j] : 0.f);
        };
        std::vector<float> nh(H), nc(H);
        if (c.op == "LSTM") {
          for (int64_t k = 0; k < H; ++k) {
            const float* p = P ? P + d * 3 * H : nullptr;
            float i_ = Sig(clip(xw(k) + hr(h, k) + (p ? p[k] * cs[k] : 0)));
            float f_ = Sig(clip(xw(2 * H + k) + hr(h, 2 * H + k) + (p ? p[2 * H + k] * cs[k] : 0)));
            float g_ = g_act(clip(xw(3 * H + k) + hr(h, 3 * H + k)));
            nc[k] = f_ * cs[k] + i_ * g_;
            float o_ = Sig(clip(xw(H + k) + hr(h, H + k) + (p ? p[H + k] * nc[k] : 0)));
            nh[k] = o_ * std::tanh(nc[k]);
          }
        } else if (c.op == "GRU") {
          std::vector<float> z(H), rr(H), rh(H);
          for (int64_t k = 0; k < H; ++k) {
            z[k] = Sig(clip(xw(k) + hr(h, k)));
            rr[k] = Sig(clip(xw(H + k) + hr(h, H + k)));
            rh[k] = rr[k] * h[k];
          }
          for (int64_t k = 0; k < H; ++k) {
            float pre = c.lbr ? xw(2 * H + k) + rr[k] * hr(h, 2 * H + k)
                              : xw(2 * H + k) + hr(rh, 2 * H + k);
            float hh = g_act(clip(pre));
            nh[k] = (1 - z[k]) * hh + z[k] * h[k];
          }
        } else {
          for (int64_t k = 0; k < H; ++k) {
            float v = clip(xw(k) + hr(h, k));
            nh[k] = c.relu_g ? std::max(v, 0.f) : std::tanh(v);
          }
        }
        h = nh;
        if (c.op == "LSTM") cs = nc;
        for (int64_t k = 0; k < H; ++k) r.y[((t * D + d) * B + b) * H + k] = h[k];
      }
      for (int64_t k = 0; k < H; ++k) {
        r.yh[(d * B + b) * H + k] = h[k];
        r.yc[(d * B + b) * H + k] = cs[k];
      }
    }
  }
  return r;
}

void Check(const Case& c) {
  SCOPED_TRACE(c.op + " " + c.direction + (c.lens ? " lens" : "") + (c.init ? " init" : "") +
               (c.peep ? " peep" : "") + (c.layout1 ? " layout1" : "") + (c.lbr ? " lbr" : "") +
               (c.clip > 0 ? " clip" : "") + (c.relu_g ? " relu" : ""));
  const int64_t G = c.op == "LSTM" ? 4 : c.op == "GRU" ? 3 : 1;
  const int64_t D = c.direction == "bidirectional" ? 2 : 1;
  const int64_t T = c.T, B = c.B, I = c.I, H = c.H;
  Tensor X = c.layout1 ? RandomTensor({B, T, I}, 1) : RandomTensor({T, B, I}, 1);
  Tensor W = RandomTensor({D, G * H, I}, 2, -0.7f, 0.7f);
  Tensor R = RandomTensor({D, G * H, H}, 3, -0.7f, 0.7f);
  Tensor Bs = RandomTensor({D, 2 * G * H}, 4);
  std::vector<int64_t> len(B, T);
  if (c.lens)
    for (int64_t b = 0; b < B; ++b) len[b] = (b * 2 + 1) % (T + 1);
  Tensor L(DataType::kInt32, {B});
  for (int64_t b = 0; b < B; ++b) L.data<int32_t>()[b] = static_cast<int32_t>(len[b]);
  // Twin states in [D, B, H]; the kernel's in [B, D, H] with layout 1.
  Tensor h0 = RandomTensor({D, B, H}, 5), c0 = RandomTensor({D, B, H}, 6);
  auto to_layout1 = [&](const Tensor& s) {
    Tensor o(DataType::kFloat32, {B, D, H});
    for (int64_t d = 0; d < D; ++d)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t k = 0; k < H; ++k)
          o.data<float>()[(b * D + d) * H + k] = s.data<float>()[(d * B + b) * H + k];
    return o;
  };
  Tensor h0k = c.layout1 ? to_layout1(h0) : h0, c0k = c.layout1 ? to_layout1(c0) : c0;
  Tensor P = RandomTensor({D, 3 * H}, 7);
  const int nin = c.op == "LSTM" ? 8 : 6;
  Node n = MakeNode(c.op, nin, c.op == "LSTM" ? 3 : 2);
  n.attrs.Set("hidden_size", testing::IntAttr(H));
  n.attrs.Set("direction", testing::StringAttr(c.direction));
  if (c.layout1) n.attrs.Set("layout", testing::IntAttr(1));
  if (c.lbr) n.attrs.Set("linear_before_reset", testing::IntAttr(1));
  if (c.clip > 0) n.attrs.Set("clip", testing::FloatAttr(c.clip));
  if (c.relu_g) {
    AttrValue a;
    a.kind = AttrValue::Kind::kStrings;
    for (int64_t d = 0; d < D; ++d) {
      if (c.op == "LSTM")
        a.strings.insert(a.strings.end(), {"Sigmoid", "Relu", "Tanh"});
      else if (c.op == "GRU")
        a.strings.insert(a.strings.end(), {"Sigmoid", "Relu"});
      else
        a.strings.push_back("Relu");
    }
    n.attrs.Set("activations", a);
  }
  std::vector<const Tensor*> in = {
      &X, &W, &R, c.bias ? &Bs : nullptr, c.lens ? &L : nullptr, c.init ? &h0k : nullptr};
  if (c.op == "LSTM") {
    in.push_back(c.init ? &c0k : nullptr);
    in.push_back(c.peep ? &P : nullptr);
  }
  auto out = testing::RunKernel(n, in, /*repeat=*/2);
  ASSERT_TRUE(out.ok()) << out.status().message();
  Result want = Naive(c, X.data<float>(), W.data<float>(), R.data<float>(),
                      c.bias ? Bs.data<float>() : nullptr, len, c.init ? h0.data<float>() : nullptr,
                      c.init ? c0.data<float>() : nullptr, c.peep ? P.data<float>() : nullptr);
  // Y: [T, D, B, H] or, layout 1, [B, T, D, H].
  Tensor y = c.layout1 ? Tensor(DataType::kFloat32, {B, T, D, H})
                       : Tensor(DataType::kFloat32, {T, D, B, H});
  for (int64_t t = 0; t < T; ++t)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t k = 0; k < H; ++k)
          y.data<float>()[c.layout1 ? ((b * T + t) * D + d) * H + k
                                    : ((t * D + d) * B + b) * H + k] =
              want.y[((t * D + d) * B + b) * H + k];
  Tensor yh = testing::FloatTensor({D, B, H}, want.yh),
         yc = testing::FloatTensor({D, B, H}, want.yc);
  EXPECT_EQ(testing::CompareFloat((*out)[0], y, 1e-5f, 1e-4f), "");
  EXPECT_EQ(testing::CompareFloat((*out)[1], c.layout1 ? to_layout1(yh) : yh, 1e-5f, 1e-4f), "");
  if (c.op == "LSTM") {
    EXPECT_EQ(testing::CompareFloat((*out)[2], c.layout1 ? to_layout1(yc) : yc, 1e-5f, 1e-4f), "");
  }
}

TEST(Rnn, EveryCellDirectionAndOptionMatchesNaiveTwin) {
  for (std::string op : {"LSTM", "GRU", "RNN"})
    for (std::string dir : {"forward", "reverse", "bidirectional"})
      for (int variant = 0; variant < 6; ++variant) {
        Case c;
        c.op = op;
        c.direction = dir;
        c.lens = variant == 1 || variant == 4;
        c.init = variant >= 2;
        c.layout1 = variant == 3 || variant == 4;
        c.peep = op == "LSTM" && variant == 5;
        c.lbr = op == "GRU" && (variant == 2 || variant == 4);
        c.clip = variant == 5 ? 0.8f : 0;
        c.bias = variant != 0;
        c.relu_g = variant == 3;
        Check(c);
      }
}

TEST(Rnn, OddSizesMatchNaiveTwin) {
  for (std::string op : {"LSTM", "GRU", "RNN"}) {
    Case c;
    c.op = op;
    c.T = 13, c.B = 1, c.I = 7, c.H = 1;
    Check(c);
    c.T = 1, c.B = 7, c.I = 1, c.H = 13;
    c.init = true;
    c.lens = true;
    Check(c);
  }
}

TEST(Rnn, BadInputIsOneLineNamingTheNode) {
  Node n = MakeNode("LSTM", 3, 3);
  n.attrs.Set("hidden_size", testing::IntAttr(4));
  Tensor X = RandomTensor({2, 1, 3}, 1), W = RandomTensor({1, 16, 5}, 2),
         R = RandomTensor({1, 16, 4}, 3);
  auto out = testing::RunKernel(n, {&X, &W, &R});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(),
            "node 'LSTM_test' (LSTM): W has shape [1,16,5], [1,16,3] expected (hidden_size 4, 1 "
            "direction, input size 3)");
  n.attrs.Set("activations", [] {
    AttrValue a;
    a.kind = AttrValue::Kind::kStrings;
    a.strings = {"Sigmoid", "Gelu", "Tanh"};
    return a;
  }());
  out = testing::RunKernel(n, {&X, &W, &R});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("activation 'Gelu' is not one ONNX defines"),
            std::string::npos);
  Node g = MakeNode("GRU", 3, 2);
  g.attrs.Set("direction", testing::StringAttr("sideways"));
  out = testing::RunKernel(g, {&X, &W, &R});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("direction 'sideways'"), std::string::npos);
}

TEST(Rnn, CostCountsBothGemmsPerDirection) {
  Node n = MakeNode("LSTM", 3, 3);
  n.attrs.Set("hidden_size", testing::IntAttr(8));
  n.attrs.Set("direction", testing::StringAttr("bidirectional"));
  auto k = FindKernel("", "LSTM")(n);
  ASSERT_TRUE(k.ok());
  Cost c = (*k)->EstimateCost({{DataType::kFloat32, {10, 2, 16}},
                               {DataType::kFloat32, {2, 32, 16}},
                               {DataType::kFloat32, {2, 32, 8}}},
                              {{DataType::kFloat32, {10, 2, 2, 8}}});
  // 2 directions x (2*T*B*I*4H + 2*T*B*H*4H + 8*T*B*4H)
  EXPECT_DOUBLE_EQ(c.flops,
                   2 * (2.0 * 10 * 2 * 16 * 32 + 2.0 * 10 * 2 * 8 * 32 + 8.0 * 10 * 2 * 32));
}

}  // namespace
}  // namespace opscope::engine
