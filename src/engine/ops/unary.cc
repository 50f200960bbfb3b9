// Elementwise unary operators: activations (Relu LeakyRelu Sigmoid Tanh HardSigmoid HardSwish
// Elu Selu Softplus Mish Gelu), math (Erf Exp Log Sqrt Reciprocal Neg Abs Sign Floor Ceil Round
// Sin Cos), Clip and Not.
//
// float32 Exp, Sigmoid, Tanh and Erf use the vectorizable FastExp family (elementwise_common.h,
// ~2 ulp), compiled also for AVX2+FMA and AVX-512 and picked at run time (FastMap: in the
// baseline build the polynomial and the divide are 4 SSE lanes, 5 ns per element for Erf, 0.9
// with AVX-512). float64 uses libm. Float-only functions run on float32/float64 (float16 is upcast
// to float32 and rounded back); Relu, Neg, Abs, Sign and Clip also run on the integer types, Not on
// bool. Each op is one ParallelFor over the flat tensor with the function inlined into the loop.
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>

#include "engine/ops/activation.h"
#include "engine/ops/common.h"
#include "engine/ops/elementwise_common.h"

namespace opscope::engine {
namespace {

enum class UnOp {
  kRelu,
  kLeakyRelu,
  kSigmoid,
  kTanh,
  kHardSigmoid,
  kHardSwish,
  kErf,
  kExp,
  kLog,
  kSqrt,
  kReciprocal,
  kNeg,
  kAbs,
  kSign,
  kFloor,
  kCeil,
  kClip,
  kNot,
  kRound,
  kSin,
  kCos,
  kSoftplus,
  kMish,
  kElu,
  kSelu,
  kGelu,
  kGeluTanh,
};

bool FloatOnly(UnOp op) {
  switch (op) {
    case UnOp::kRelu:
    case UnOp::kNeg:
    case UnOp::kAbs:
    case UnOp::kSign:
    case UnOp::kClip:
    case UnOp::kNot:
      return false;
    default:
      return true;
  }
}

// FLOPs per element (a transcendental function counts 1).
double FlopsPerElement(UnOp op) {
  switch (op) {
    case UnOp::kSigmoid:
      return 3;  // exp, add, divide
    case UnOp::kHardSigmoid:
      return 3;  // multiply-add, clamp
    case UnOp::kHardSwish:
      return 4;  // multiply-add, clamp, multiply
    case UnOp::kClip:
      return 2;  // max, min
    case UnOp::kNot:
      return 0;
    case UnOp::kSoftplus:
      return 3;  // exp, add, log
    case UnOp::kMish:
      return 5;  // softplus (3), tanh, multiply
    case UnOp::kElu:
      return 3;  // exp, subtract, multiply
    case UnOp::kSelu:
      return 4;  // exp, subtract, multiply, multiply
    case UnOp::kGelu:
      return 5;  // multiply, erf, add, multiply, multiply
    case UnOp::kGeluTanh:
      return 9;  // cube (2), multiply-add (2), multiply, tanh, add, 2 mul
    default:
      return 1;
  }
}

// float32 transcendental maps, one loop per instruction set (see BestIsa).
enum class FastFn { kErf, kExp, kSigmoid, kTanh, kGelu, kGeluTanh };

template <FastFn K>
[[gnu::always_inline]] inline float ApplyFast(float v) {
  if constexpr (K == FastFn::kErf)
    return FastErf(v);
  else if constexpr (K == FastFn::kExp)
    return FastExp(v);
  else if constexpr (K == FastFn::kSigmoid)
    return FastSigmoid(v);
  else if constexpr (K == FastFn::kGelu)
    return 0.5f * v * (1.0f + FastErf(v * 0.70710678118654752f));
  else if constexpr (K == FastFn::kGeluTanh)
    return 0.5f * v * (1.0f + FastTanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
  else
    return FastTanh(v);
}

// kInPlace: y is also the input (x is ignored), so the loop has no aliasing for the compiler to
// guard against (ApplyActivationInPlace's fused Sigmoid/Tanh).
template <FastFn K, bool kInPlace>
[[gnu::always_inline]] inline void FastLoop(const float* x, float* y, int64_t n) {
  if constexpr (kInPlace)
    for (int64_t i = 0; i < n; ++i) y[i] = ApplyFast<K>(y[i]);
  else
    for (int64_t i = 0; i < n; ++i) y[i] = ApplyFast<K>(x[i]);
}
template <FastFn K, bool kInPlace>
void FastMapBaseline(const float* x, float* y, int64_t n) {
  FastLoop<K, kInPlace>(x, y, n);
}
#if defined(__x86_64__) && defined(__GNUC__)
template <FastFn K, bool kInPlace>
[[gnu::target("avx2,fma")]] void FastMapAvx2(const float* x, float* y, int64_t n) {
  FastLoop<K, kInPlace>(x, y, n);
}
template <FastFn K, bool kInPlace>
[[gnu::target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]] void FastMapAvx512(const float* x,
                                                                                  float* y,
                                                                                  int64_t n) {
  FastLoop<K, kInPlace>(x, y, n);
}
#endif

// The loop for the best instruction set of this CPU, chosen once.
template <FastFn K, bool kInPlace = false>
void (*FastMapFn())(const float*, float*, int64_t) {
  using Fn = void (*)(const float*, float*, int64_t);
  static const Fn fn = [] {
#if defined(__x86_64__) && defined(__GNUC__)
    if (BestIsa() == Isa::kAvx512) return Fn(FastMapAvx512<K, kInPlace>);
    if (BestIsa() == Isa::kAvx2) return Fn(FastMapAvx2<K, kInPlace>);
#endif
    return Fn(FastMapBaseline<K, kInPlace>);
  }();
  return fn;
}

template <FastFn K>
void FastMap(const float* x, float* y, int64_t n) {
  const auto fn = FastMapFn<K>();
  ParallelFor(n, 4, [&](int64_t b, int64_t e) { fn(x + b, y + b, e - b); });
}

// log(1 + e^x) without overflow: x + log1p(e^-x) for x > 0.
template <typename T>
inline T Softplus(T v) {
  return v > T(0) ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
}

template <typename T, typename F>
void MapLoop(const T* x, T* y, int64_t n, int64_t cost, F f) {
  ParallelFor(n, cost, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = f(x[i]);
  });
}

class UnaryKernel : public Kernel {
 public:
  UnaryKernel(const Node& node, UnOp op, float alpha, float beta)
      : node_(node), op_(op), alpha_(alpha), beta_(beta) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "input 0 is missing");
    const DataType dt = x->dtype();
    if (op_ == UnOp::kNot) {
      if (dt != DataType::kBool)
        return NodeError(node_, std::string("expects a bool input, got ") + DataTypeName(dt));
    } else if (dt == DataType::kFloat16) {
      // handled below
    } else if (FloatOnly(op_) ? !IsFloatType(dt) : !IsNumericType(dt)) {
      return NodeError(node_, std::string("unsupported input type ") + DataTypeName(dt));
    }

    double lo = -std::numeric_limits<double>::infinity();
    double hi = std::numeric_limits<double>::infinity();
    bool has_lo = false, has_hi = false;
    if (op_ == UnOp::kClip) {
      if (node_.opset < 11) {
        lo = alpha_;
        hi = beta_;
        has_lo = has_hi = true;
      } else {
        for (int i : {1, 2}) {
          const Tensor* b = ctx.input(i);
          if (!b) continue;
          if (b->numel() != 1)
            return NodeError(node_, std::string(i == 1 ? "min" : "max") +
                                        " must be a scalar, got shape " + ShapeString(b->shape()));
          if (b->dtype() != dt)
            return NodeError(node_, std::string(i == 1 ? "min" : "max") + " has type " +
                                        DataTypeName(b->dtype()) + ", input has " +
                                        DataTypeName(dt));
          double v = b->dtype() == DataType::kFloat16 ? HalfToFloat(b->data<uint16_t>()[0])
                                                      : ReadScalar(*b);
          (i == 1 ? lo : hi) = v;
          (i == 1 ? has_lo : has_hi) = true;
        }
      }
    }

    OPSCOPE_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, dt, x->shape()));
    if (dt == DataType::kFloat16) {
      Tensor xf = HalfTensorToFloat(*x);
      Tensor yf(DataType::kFloat32, x->shape());
      Compute<float>(xf, &yf, lo, hi, has_lo, has_hi);
      FloatToHalfInto(yf, out);
      return Status::Ok();
    }
    if (op_ == UnOp::kNot) {
      MapLoop(x->data<uint8_t>(), out->data<uint8_t>(), x->numel(), 1,
              [](uint8_t v) -> uint8_t { return v ? 0 : 1; });
      return Status::Ok();
    }
    VisitNumeric(dt, [&](auto tag) {
      using T = decltype(tag);
      Compute<T>(*x, out, lo, hi, has_lo, has_hi);
    });
    return Status::Ok();
  }

  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    double n = in.empty() ? 0 : static_cast<double>(in[0].numel());
    return {n * FlopsPerElement(op_), CompulsoryBytes(in, out)};
  }

 private:
  template <typename T>
  void Compute(const Tensor& xt, Tensor* yt, double lo, double hi, bool has_lo, bool has_hi) {
    const T* x = xt.data<T>();
    T* y = yt->data<T>();
    const int64_t n = xt.numel();
    if constexpr (std::is_floating_point_v<T>) {
      const T a = static_cast<T>(alpha_), b = static_cast<T>(beta_);
      switch (op_) {
        case UnOp::kLeakyRelu:
          MapLoop(x, y, n, 1, [a](T v) { return v >= 0 ? v : a * v; });
          return;
        case UnOp::kSigmoid:
          if constexpr (std::is_same_v<T, float>) {
            FastMap<FastFn::kSigmoid>(x, y, n);
          } else {
            MapLoop(x, y, n, 16, [](T v) {
              if (v >= 0) return T(1) / (T(1) + std::exp(-v));
              T e = std::exp(v);
              return e / (T(1) + e);
            });
          }
          return;
        case UnOp::kTanh:
          if constexpr (std::is_same_v<T, float>)
            FastMap<FastFn::kTanh>(x, y, n);
          else
            MapLoop(x, y, n, 16, [](T v) { return std::tanh(v); });
          return;
        case UnOp::kHardSigmoid:
          MapLoop(x, y, n, 1, [a, b](T v) { return std::max(T(0), std::min(T(1), a * v + b)); });
          return;
        case UnOp::kHardSwish:
          MapLoop(x, y, n, 1, [](T v) {
            return v * std::max(T(0), std::min(T(1), v * T(1.0 / 6.0) + T(0.5)));
          });
          return;
        case UnOp::kErf:
          if constexpr (std::is_same_v<T, float>)
            FastMap<FastFn::kErf>(x, y, n);
          else
            MapLoop(x, y, n, 16, [](T v) { return std::erf(v); });
          return;
        case UnOp::kExp:
          if constexpr (std::is_same_v<T, float>)
            FastMap<FastFn::kExp>(x, y, n);
          else
            MapLoop(x, y, n, 16, [](T v) { return std::exp(v); });
          return;
        case UnOp::kLog:
          MapLoop(x, y, n, 16, [](T v) { return std::log(v); });
          return;
        case UnOp::kSqrt:
          MapLoop(x, y, n, 2, [](T v) { return std::sqrt(v); });
          return;
        case UnOp::kReciprocal:
          MapLoop(x, y, n, 1, [](T v) { return T(1) / v; });
          return;
        case UnOp::kFloor:
          MapLoop(x, y, n, 1, [](T v) { return std::floor(v); });
          return;
        case UnOp::kCeil:
          MapLoop(x, y, n, 1, [](T v) { return std::ceil(v); });
          return;
        // Half to even, as ONNX (and numpy.round) define it; nearbyint uses the current rounding
        // mode, which the engine never changes from round-to-nearest-even.
        case UnOp::kRound:
          MapLoop(x, y, n, 1, [](T v) { return std::nearbyint(v); });
          return;
        case UnOp::kSin:
          MapLoop(x, y, n, 16, [](T v) { return std::sin(v); });
          return;
        case UnOp::kCos:
          MapLoop(x, y, n, 16, [](T v) { return std::cos(v); });
          return;
        case UnOp::kSoftplus:
          MapLoop(x, y, n, 32, [](T v) { return Softplus(v); });
          return;
        case UnOp::kMish:
          MapLoop(x, y, n, 48, [](T v) { return v * std::tanh(Softplus(v)); });
          return;
        case UnOp::kElu:
          MapLoop(x, y, n, 16, [a](T v) { return v >= T(0) ? v : a * std::expm1(v); });
          return;
        case UnOp::kSelu:  // alpha_ is alpha, beta_ is gamma
          MapLoop(x, y, n, 16,
                  [a, b](T v) { return v > T(0) ? b * v : b * (a * std::exp(v) - a); });
          return;
        case UnOp::kGelu:
          if constexpr (std::is_same_v<T, float>) {
            FastMap<FastFn::kGelu>(x, y, n);
          } else {
            MapLoop(x, y, n, 16,
                    [](T v) { return T(0.5) * v * (T(1) + std::erf(v * T(0.70710678118654752))); });
          }
          return;
        case UnOp::kGeluTanh:
          if constexpr (std::is_same_v<T, float>) {
            FastMap<FastFn::kGeluTanh>(x, y, n);
          } else {
            MapLoop(x, y, n, 16, [](T v) {
              return T(0.5) * v *
                     (T(1) + std::tanh(T(0.79788456080286536) * (v + T(0.044715) * v * v * v)));
            });
          }
          return;
        default:
          break;
      }
    }
    switch (op_) {
      case UnOp::kRelu:
        MapLoop(x, y, n, 1, [](T v) { return v > T(0) ? v : T(0); });
        return;
      case UnOp::kNeg:
        MapLoop(x, y, n, 1, [](T v) { return WrapSub(T(0), v); });
        return;
      case UnOp::kAbs:
        if constexpr (std::is_unsigned_v<T>) {
          MapLoop(x, y, n, 1, [](T v) { return v; });
        } else {
          MapLoop(x, y, n, 1, [](T v) { return v < T(0) ? WrapSub(T(0), v) : v; });
        }
        return;
      case UnOp::kSign:
        MapLoop(x, y, n, 1, [](T v) { return v > T(0) ? T(1) : (v < T(0) ? T(-1) : T(0)); });
        return;
      case UnOp::kClip: {
        // Bounds outside T's range saturate to it, so comparisons stay in T.
        T tlo = std::numeric_limits<T>::lowest(), thi = std::numeric_limits<T>::max();
        if (has_lo && lo > static_cast<double>(tlo)) tlo = static_cast<T>(lo);
        if (has_hi && hi < static_cast<double>(thi)) thi = static_cast<T>(hi);
        // min(max(v, lo), hi) as numpy's clip: with lo > hi every element becomes hi.
        MapLoop(x, y, n, 2, [tlo, thi](T v) {
          T t = v < tlo ? tlo : v;
          return t > thi ? thi : t;
        });
        return;
      }
      default:
        return;
    }
  }

  Node node_;
  UnOp op_;
  float alpha_, beta_;
};

StatusOr<std::unique_ptr<Kernel>> MakeUnary(const Node& node, UnOp op, float alpha = 0,
                                            float beta = 0) {
  return std::unique_ptr<Kernel>(std::make_unique<UnaryKernel>(node, op, alpha, beta));
}

}  // namespace

// Fused activations (activation.h): the same vectorised loops, in place, on the caller's thread.
void SigmoidInPlace(float* p, int64_t n) { FastMapFn<FastFn::kSigmoid, true>()(p, p, n); }
void TanhInPlace(float* p, int64_t n) { FastMapFn<FastFn::kTanh, true>()(p, p, n); }

StatusOr<std::unique_ptr<Kernel>> Create_Relu(const Node& n) { return MakeUnary(n, UnOp::kRelu); }
StatusOr<std::unique_ptr<Kernel>> Create_LeakyRelu(const Node& n) {
  return MakeUnary(n, UnOp::kLeakyRelu, n.attrs.Float("alpha", 0.01f));
}
StatusOr<std::unique_ptr<Kernel>> Create_Sigmoid(const Node& n) {
  return MakeUnary(n, UnOp::kSigmoid);
}
StatusOr<std::unique_ptr<Kernel>> Create_Tanh(const Node& n) { return MakeUnary(n, UnOp::kTanh); }
StatusOr<std::unique_ptr<Kernel>> Create_HardSigmoid(const Node& n) {
  return MakeUnary(n, UnOp::kHardSigmoid, n.attrs.Float("alpha", 0.2f),
                   n.attrs.Float("beta", 0.5f));
}
StatusOr<std::unique_ptr<Kernel>> Create_HardSwish(const Node& n) {
  return MakeUnary(n, UnOp::kHardSwish);
}
StatusOr<std::unique_ptr<Kernel>> Create_Erf(const Node& n) { return MakeUnary(n, UnOp::kErf); }
StatusOr<std::unique_ptr<Kernel>> Create_Exp(const Node& n) { return MakeUnary(n, UnOp::kExp); }
StatusOr<std::unique_ptr<Kernel>> Create_Log(const Node& n) { return MakeUnary(n, UnOp::kLog); }
StatusOr<std::unique_ptr<Kernel>> Create_Sqrt(const Node& n) { return MakeUnary(n, UnOp::kSqrt); }
StatusOr<std::unique_ptr<Kernel>> Create_Reciprocal(const Node& n) {
  return MakeUnary(n, UnOp::kReciprocal);
}
StatusOr<std::unique_ptr<Kernel>> Create_Neg(const Node& n) { return MakeUnary(n, UnOp::kNeg); }
StatusOr<std::unique_ptr<Kernel>> Create_Abs(const Node& n) { return MakeUnary(n, UnOp::kAbs); }
StatusOr<std::unique_ptr<Kernel>> Create_Sign(const Node& n) { return MakeUnary(n, UnOp::kSign); }
StatusOr<std::unique_ptr<Kernel>> Create_Floor(const Node& n) { return MakeUnary(n, UnOp::kFloor); }
StatusOr<std::unique_ptr<Kernel>> Create_Ceil(const Node& n) { return MakeUnary(n, UnOp::kCeil); }
StatusOr<std::unique_ptr<Kernel>> Create_Not(const Node& n) { return MakeUnary(n, UnOp::kNot); }
StatusOr<std::unique_ptr<Kernel>> Create_Round(const Node& n) { return MakeUnary(n, UnOp::kRound); }
StatusOr<std::unique_ptr<Kernel>> Create_Sin(const Node& n) { return MakeUnary(n, UnOp::kSin); }
StatusOr<std::unique_ptr<Kernel>> Create_Cos(const Node& n) { return MakeUnary(n, UnOp::kCos); }
StatusOr<std::unique_ptr<Kernel>> Create_Softplus(const Node& n) {
  return MakeUnary(n, UnOp::kSoftplus);
}
StatusOr<std::unique_ptr<Kernel>> Create_Mish(const Node& n) { return MakeUnary(n, UnOp::kMish); }
StatusOr<std::unique_ptr<Kernel>> Create_Elu(const Node& n) {
  return MakeUnary(n, UnOp::kElu, n.attrs.Float("alpha", 1.0f));
}
StatusOr<std::unique_ptr<Kernel>> Create_Selu(const Node& n) {
  return MakeUnary(n, UnOp::kSelu, n.attrs.Float("alpha", 1.67326319217681884765625f),
                   n.attrs.Float("gamma", 1.05070102214813232421875f));
}
StatusOr<std::unique_ptr<Kernel>> Create_Gelu(const Node& n) {
  const std::string approx = n.attrs.String("approximate", "none");
  if (approx == "none") return MakeUnary(n, UnOp::kGelu);
  if (approx == "tanh") return MakeUnary(n, UnOp::kGeluTanh);
  return NodeError(n, "attribute approximate is '" + approx + "', expected 'none' or 'tanh'");
}
StatusOr<std::unique_ptr<Kernel>> Create_Clip(const Node& n) {
  float lo = n.attrs.Float("min", std::numeric_limits<float>::lowest());
  float hi = n.attrs.Float("max", std::numeric_limits<float>::max());
  if (n.opset < 11 && lo > hi) return NodeError(n, "attribute min is greater than max");
  return MakeUnary(n, UnOp::kClip, lo, hi);
}

}  // namespace opscope::engine
