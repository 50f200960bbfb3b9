// Recurrent layers: LSTM, GRU and RNN (ONNX opsets 7-22 semantics; layout from opset 14).
//
// One kernel serves the three: per direction the input projection of every time step is one
// GEMM (X [T*B, I] x W^T [I, G*H] plus both biases, oneDNN's dnnl_sgemm), then each step
// multiplies the previous hidden state by R^T (one [B, H] x [H, G*H] GEMM; GRU without
// linear_before_reset multiplies r (.) H by R_h^T separately) and applies the cell's gate
// equations. sequence_lens: a batch entry stops after its length (reverse starts at its last
// valid step); Y is zero past it and Y_h / Y_c hold its last valid state. Activations: every
// function ONNX lists for RNNs (Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu,
// ScaledTanh, HardSigmoid, Elu, Softsign, Softplus), alpha/beta consumed in order by the
// functions that take them. Float32 only.
#include <dnnl.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/ops/common.h"

namespace opscope::engine {
namespace {

enum class Cell { kLstm, kGru, kRnn };

struct Activation {
  enum Kind {
    kRelu,
    kTanh,
    kSigmoid,
    kAffine,
    kLeakyRelu,
    kThresholdedRelu,
    kScaledTanh,
    kHardSigmoid,
    kElu,
    kSoftsign,
    kSoftplus
  } kind = kSigmoid;
  float alpha = 0, beta = 0;
  float operator()(float x) const {
    switch (kind) {
      case kRelu:
        return x > 0 ? x : 0;
      case kTanh:
        return std::tanh(x);
      case kSigmoid:
        return 1.f / (1.f + std::exp(-x));
      case kAffine:
        return alpha * x + beta;
      case kLeakyRelu:
        return x >= 0 ? x : alpha * x;
      case kThresholdedRelu:
        return x > alpha ? x : 0;
      case kScaledTanh:
        return alpha * std::tanh(beta * x);
      case kHardSigmoid:
        return std::max(0.f, std::min(1.f, alpha * x + beta));
      case kElu:
        return x >= 0 ? x : alpha * (std::exp(x) - 1);
      case kSoftsign:
        return x / (1 + std::fabs(x));
      case kSoftplus:
        return std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.f);
    }
    return x;
  }
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Parses `names` with the alpha/beta lists; each function that takes alpha (beta) consumes
// the next value, else gets its operator's default.
StatusOr<std::vector<Activation>> ParseActivations(const Node& n,
                                                   const std::vector<std::string>& names) {
  std::vector<float> alphas = n.attrs.Floats("activation_alpha"),
                     betas = n.attrs.Floats("activation_beta");
  size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (const std::string& name : names) {
    Activation a;
    const std::string l = Lower(name);
    float da = 0, db = 0;
    bool uses_a = false, uses_b = false;
    if (l == "relu")
      a.kind = Activation::kRelu;
    else if (l == "tanh")
      a.kind = Activation::kTanh;
    else if (l == "sigmoid")
      a.kind = Activation::kSigmoid;
    else if (l == "affine")
      a.kind = Activation::kAffine, da = 1, db = 0, uses_a = uses_b = true;
    else if (l == "leakyrelu")
      a.kind = Activation::kLeakyRelu, da = 0.01f, uses_a = true;
    else if (l == "thresholdedrelu")
      a.kind = Activation::kThresholdedRelu, da = 1, uses_a = true;
    else if (l == "scaledtanh")
      a.kind = Activation::kScaledTanh, da = 1, db = 1, uses_a = uses_b = true;
    else if (l == "hardsigmoid")
      a.kind = Activation::kHardSigmoid, da = 0.2f, db = 0.5f, uses_a = uses_b = true;
    else if (l == "elu")
      a.kind = Activation::kElu, da = 1, uses_a = true;
    else if (l == "softsign")
      a.kind = Activation::kSoftsign;
    else if (l == "softplus")
      a.kind = Activation::kSoftplus;
    else
      return NodeError(n,
                       "activation '" + name +
                           "' is not one ONNX defines for recurrent layers "
                           "(Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, "
                           "HardSigmoid, Elu, Softsign, Softplus)");
    a.alpha = uses_a && ai < alphas.size() ? alphas[ai++] : da;
    a.beta = uses_b && bi < betas.size() ? betas[bi++] : db;
    out.push_back(a);
  }
  return out;
}

void Gemm(bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    if (beta == 0)
      for (int64_t m = 0; m < M; ++m) std::fill(C + m * ldc, C + m * ldc + N, 0.f);
    return;
  }
  dnnl_sgemm('N', trans_b ? 'T' : 'N', M, N, K, 1.f, A, lda, B, ldb, beta, C, ldc);
}

class RnnKernel : public Kernel {
 public:
  RnnKernel(const Node& n, Cell cell, std::vector<Activation> acts, int dirs, bool reverse)
      : node_(n), cell_(cell), acts_(std::move(acts)), dirs_(dirs), reverse_(reverse) {
    gates_ = cell == Cell::kLstm ? 4 : cell == Cell::kGru ? 3 : 1;
    hidden_ = n.attrs.Int("hidden_size", 0);
    layout_ = n.attrs.Int("layout", 0);
    clip_ = n.attrs.Float("clip", 0);
    has_clip_ = n.attrs.Has("clip");
    input_forget_ = n.attrs.Int("input_forget", 0) != 0;
    lbr_ = n.attrs.Int("linear_before_reset", 0) != 0;
  }

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    const Tensor* w = ctx.input(1);
    const Tensor* r = ctx.input(2);
    if (!x || !w || !r) return NodeError(node_, "needs the inputs X, W and R");
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor* t = ctx.input(i);
      if (t && i != 4 && t->dtype() != DataType::kFloat32)
        return NodeError(node_, std::string("input ") + std::to_string(i) + " is " +
                                    DataTypeName(t->dtype()) + "; only float32 is supported");
    }
    if (x->rank() != 3)
      return NodeError(node_, "X must have rank 3, got " + ShapeString(x->shape()));
    const int64_t T = layout_ ? x->dim(1) : x->dim(0), B = layout_ ? x->dim(0) : x->dim(1);
    const int64_t I = x->dim(2), G = gates_;
    int64_t H = hidden_;
    if (H <= 0 && w->rank() == 3) H = w->dim(1) / G;
    const int64_t D = dirs_;
    auto expect = [&](const Tensor* t, std::vector<int64_t> shape, const char* name) -> Status {
      if (t && t->shape() != shape)
        return NodeError(node_, std::string(name) + " has shape " + ShapeString(t->shape()) + ", " +
                                    ShapeString(shape) + " expected (hidden_size " +
                                    std::to_string(H) + ", " + std::to_string(D) + " direction" +
                                    (D > 1 ? "s" : "") + ", input size " + std::to_string(I) + ")");
      return Status::Ok();
    };
    if (H <= 0) return NodeError(node_, "hidden_size must be positive");
    OPSCOPE_RETURN_IF_ERROR(expect(w, {D, G * H, I}, "W"));
    OPSCOPE_RETURN_IF_ERROR(expect(r, {D, G * H, H}, "R"));
    const Tensor* bias = ctx.input(3);
    const Tensor* lens = ctx.input(4);
    const Tensor* h0 = ctx.input(5);
    const Tensor* c0 = cell_ == Cell::kLstm ? ctx.input(6) : nullptr;
    const Tensor* peep = cell_ == Cell::kLstm ? ctx.input(7) : nullptr;
    OPSCOPE_RETURN_IF_ERROR(expect(bias, {D, 2 * G * H}, "B"));
    const std::vector<int64_t> state_shape =
        layout_ ? std::vector<int64_t>{B, D, H} : std::vector<int64_t>{D, B, H};
    OPSCOPE_RETURN_IF_ERROR(expect(h0, state_shape, "initial_h"));
    OPSCOPE_RETURN_IF_ERROR(expect(c0, state_shape, "initial_c"));
    OPSCOPE_RETURN_IF_ERROR(expect(peep, {D, 3 * H}, "P"));
    std::vector<int64_t> len(static_cast<size_t>(B), T);
    if (lens) {
      if (lens->dtype() != DataType::kInt32 && lens->dtype() != DataType::kInt64)
        return NodeError(node_, "sequence_lens must be int32");
      if (lens->shape() != std::vector<int64_t>{B})
        return NodeError(node_, "sequence_lens has shape " + ShapeString(lens->shape()) + ", [" +
                                    std::to_string(B) + "] expected");
      len = ReadInts(*lens);
      for (int64_t l : len)
        if (l < 0 || l > T)
          return NodeError(node_, "sequence_lens value " + std::to_string(l) + " is outside [0, " +
                                      std::to_string(T) + "]");
    }
    const std::vector<int64_t> y_shape =
        layout_ ? std::vector<int64_t>{B, T, D, H} : std::vector<int64_t>{T, D, B, H};
    float* y = nullptr;
    float* yh = nullptr;
    float* yc = nullptr;
    if (ctx.output_wanted(0)) {
      OPSCOPE_ASSIGN_OR_RETURN(Tensor * t, ctx.Output(0, DataType::kFloat32, y_shape));
      y = t->data<float>();
      std::fill(y, y + t->numel(), 0.f);
    }
    if (ctx.output_wanted(1)) {
      OPSCOPE_ASSIGN_OR_RETURN(Tensor * t, ctx.Output(1, DataType::kFloat32, state_shape));
      yh = t->data<float>();
    }
    if (cell_ == Cell::kLstm && ctx.output_wanted(2)) {
      OPSCOPE_ASSIGN_OR_RETURN(Tensor * t, ctx.Output(2, DataType::kFloat32, state_shape));
      yc = t->data<float>();
    }
    auto state_at = [&](int64_t d, int64_t b) {
      return layout_ ? (b * D + d) * H : (d * B + b) * H;
    };
    auto y_at = [&](int64_t t, int64_t d, int64_t b) {
      return layout_ ? ((b * T + t) * D + d) * H : ((t * D + d) * B + b) * H;
    };
    const int per_dir = cell_ == Cell::kLstm ? 3 : cell_ == Cell::kGru ? 2 : 1;
    std::vector<float> xw(static_cast<size_t>(T * B * G * H)), hr(static_cast<size_t>(B * G * H));
    std::vector<float> h(static_cast<size_t>(B * H)), c(static_cast<size_t>(B * H));
    std::vector<float> rh(static_cast<size_t>(B * H)), hnext(static_cast<size_t>(B * H));
    for (int64_t d = 0; d < D; ++d) {
      const bool rev = D == 2 ? d == 1 : reverse_;
      const Activation* act = acts_.data() + (D == 2 ? d * per_dir : 0);
      const float* W = w->data<float>() + d * G * H * I;
      const float* R = r->data<float>() + d * G * H * H;
      const float* Wb = bias ? bias->data<float>() + d * 2 * G * H : nullptr;
      const float* Rb = Wb ? Wb + G * H : nullptr;
      const float* P = peep ? peep->data<float>() + d * 3 * H : nullptr;
      // Every step's input projection at once; row (t, b) is row t*B+b (layout 0) or b*T+t.
      Gemm(true, T * B, G * H, I, x->data<float>(), I, W, I, 0.f, xw.data(), G * H);
      for (int64_t row = 0; row < T * B; ++row) {
        float* o = xw.data() + row * G * H;
        for (int64_t j = 0; j < G * H; ++j) {
          float add = Wb ? Wb[j] : 0.f;
          // GRU with linear_before_reset keeps R_bh for inside r (.) (...): not added here.
          const bool keep_rbh = cell_ == Cell::kGru && lbr_ && j >= 2 * H;
          if (Rb && !keep_rbh) add += Rb[j];
          o[j] += add;
        }
      }
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t k = 0; k < H; ++k) {
          h[b * H + k] = h0 ? h0->data<float>()[state_at(d, b) + k] : 0.f;
          c[b * H + k] = c0 ? c0->data<float>()[state_at(d, b) + k] : 0.f;
        }
      }
      const int64_t steps = len.empty() ? 0 : *std::max_element(len.begin(), len.end());
      for (int64_t s = 0; s < steps; ++s) {
        // H_{t-1} R^T for all gates (GRU without linear_before_reset: z and r only).
        const int64_t rg = cell_ == Cell::kGru && !lbr_ ? 2 : G;
        Gemm(true, B, rg * H, H, h.data(), H, R, H, 0.f, hr.data(), G * H);
        for (int64_t b = 0; b < B; ++b) {
          if (s >= len[b]) continue;
          const int64_t t = rev ? len[b] - 1 - s : s;
          const float* xr = xw.data() + (layout_ ? b * T + t : t * B + b) * G * H;
          const float* hrb = hr.data() + b * G * H;
          float* hb = h.data() + b * H;
          float* cb = c.data() + b * H;
          auto pre = [&](float v) { return has_clip_ ? std::max(-clip_, std::min(clip_, v)) : v; };
          if (cell_ == Cell::kLstm) {
            for (int64_t k = 0; k < H; ++k) {
              // Gate order i, o, f, c.
              float gi = xr[k] + hrb[k], go = xr[H + k] + hrb[H + k];
              float gf = xr[2 * H + k] + hrb[2 * H + k], gc = xr[3 * H + k] + hrb[3 * H + k];
              if (P) gi += P[k] * cb[k], gf += P[2 * H + k] * cb[k];
              const float it = act[0](pre(gi));
              const float ft = input_forget_ ? 1.f - it : act[0](pre(gf));
              const float ct = act[1](pre(gc));
              const float cnew = ft * cb[k] + it * ct;
              if (P) go += P[H + k] * cnew;
              const float ot = act[0](pre(go));
              cb[k] = cnew;
              hb[k] = ot * act[2](cnew);
            }
          } else if (cell_ == Cell::kRnn) {
            for (int64_t k = 0; k < H; ++k) hb[k] = act[0](pre(xr[k] + hrb[k]));
          } else {
            float* rb = rh.data() + b * H;
            float* zb = hnext.data() + b * H;
            for (int64_t k = 0; k < H; ++k) {
              zb[k] = act[0](pre(xr[k] + hrb[k]));
              const float rt = act[0](pre(xr[H + k] + hrb[H + k]));
              // linear_before_reset: r (.) (H R_h^T + R_bh); else (r (.) H) R_h^T below.
              rb[k] = lbr_ ? rt * (hrb[2 * H + k] + (Rb ? Rb[2 * H + k] : 0.f)) : rt * hb[k];
            }
          }
        }
        if (cell_ == Cell::kGru) {
          std::vector<float>& lin = rh;  // per batch: the h gate's recurrent term
          if (!lbr_) {
            // (r (.) H) R_h^T, for all rows at once (rows past their length are unused).
            Gemm(true, B, H, H, rh.data(), H, R + 2 * H * H, H, 0.f, hr.data() + 2 * H, G * H);
          }
          for (int64_t b = 0; b < B; ++b) {
            if (s >= len[b]) continue;
            const int64_t t = rev ? len[b] - 1 - s : s;
            const float* xr = xw.data() + (layout_ ? b * T + t : t * B + b) * G * H;
            float* hb = h.data() + b * H;
            const float* zb = hnext.data() + b * H;
            for (int64_t k = 0; k < H; ++k) {
              const float rec = lbr_ ? lin[b * H + k] : hr[b * G * H + 2 * H + k];
              float g = xr[2 * H + k] + rec;
              if (has_clip_) g = std::max(-clip_, std::min(clip_, g));
              const float ht = act[1](g);
              hb[k] = (1.f - zb[k]) * ht + zb[k] * hb[k];
            }
          }
        }
        if (y)
          for (int64_t b = 0; b < B; ++b) {
            if (s >= len[b]) continue;
            const int64_t t = rev ? len[b] - 1 - s : s;
            std::memcpy(y + y_at(t, d, b), h.data() + b * H, sizeof(float) * H);
          }
      }
      for (int64_t b = 0; b < B; ++b) {
        if (yh) std::memcpy(yh + state_at(d, b), h.data() + b * H, sizeof(float) * H);
        if (yc) std::memcpy(yc + state_at(d, b), c.data() + b * H, sizeof(float) * H);
      }
    }
    return Status::Ok();
  }

  // Two GEMMs per direction (input projection over all steps, recurrence per step) plus the
  // cell's elementwise work (~ 8 operations per gate element, one transcendental each).
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    Cost c{0, CompulsoryBytes(in, out)};
    if (in.size() < 3 || in[0].shape.size() != 3 || in[1].shape.size() != 3) return c;
    const double T = static_cast<double>(layout_ ? in[0].shape[1] : in[0].shape[0]);
    const double B = static_cast<double>(layout_ ? in[0].shape[0] : in[0].shape[1]);
    const double I = static_cast<double>(in[0].shape[2]);
    const double D = static_cast<double>(in[1].shape[0]), GH = static_cast<double>(in[1].shape[1]);
    const double H = GH / gates_;
    c.flops = D * (2 * T * B * I * GH + 2 * T * B * H * GH + 8 * T * B * GH);
    return c;
  }

 private:
  Node node_;
  Cell cell_;
  std::vector<Activation> acts_;
  int dirs_;
  bool reverse_;
  int gates_ = 1;
  int64_t hidden_ = 0, layout_ = 0;
  float clip_ = 0;
  bool has_clip_ = false, input_forget_ = false, lbr_ = false;
};

StatusOr<std::unique_ptr<Kernel>> CreateRnn(const Node& node, Cell cell) {
  const std::string dir = node.attrs.String("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    return NodeError(node, "direction '" + dir + "' must be forward, reverse or bidirectional");
  const int dirs = dir == "bidirectional" ? 2 : 1;
  if (node.inputs.size() < 3) return NodeError(node, "needs the inputs X, W and R");
  const int64_t layout = node.attrs.Int("layout", 0);
  if (layout != 0 && layout != 1) return NodeError(node, "layout must be 0 or 1");
  if (node.attrs.Has("hidden_size") && node.attrs.Int("hidden_size", 0) <= 0)
    return NodeError(node, "hidden_size must be positive");
  if (node.attrs.Has("clip") && !(node.attrs.Float("clip", 0) > 0))
    return NodeError(node, "clip must be positive");
  std::vector<std::string> defaults;
  if (cell == Cell::kLstm)
    defaults = {"Sigmoid", "Tanh", "Tanh"};
  else if (cell == Cell::kGru)
    defaults = {"Sigmoid", "Tanh"};
  else
    defaults = {"Tanh"};
  std::vector<std::string> names;
  if (const AttrValue* a = node.attrs.Find("activations")) names = a->strings;
  if (names.empty())
    for (int d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() != defaults.size() * dirs)
    return NodeError(node, "activations lists " + std::to_string(names.size()) + " functions, " +
                               std::to_string(defaults.size() * dirs) + " expected (" +
                               std::to_string(defaults.size()) + " per direction)");
  OPSCOPE_ASSIGN_OR_RETURN(std::vector<Activation> acts, ParseActivations(node, names));
  return std::unique_ptr<Kernel>(
      new RnnKernel(node, cell, std::move(acts), dirs, dir == "reverse"));
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_LSTM(const Node& node) {
  return CreateRnn(node, Cell::kLstm);
}
StatusOr<std::unique_ptr<Kernel>> Create_GRU(const Node& node) {
  return CreateRnn(node, Cell::kGru);
}
StatusOr<std::unique_ptr<Kernel>> Create_RNN(const Node& node) {
  return CreateRnn(node, Cell::kRnn);
}

}  // namespace opscope::engine
