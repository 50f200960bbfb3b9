// Softmax and LogSoftmax.
//
// Opset < 13 coerces the input to 2-D at `axis` (default 1) and normalizes each row of
// prod(shape[axis:]) elements; opset >= 13 normalizes along the single axis (default -1). Both
// become an [outer, axis, inner] view. With inner == 1 each row is contiguous: max, then
// exp(x - max) with its sum, then a scale. With inner > 1 the same three passes run over whole
// rows of `inner` elements (vectorized across the inner dimension) into per-column max and sum.
//
// float32 uses ExpNonPositive, a vectorizable exp for x <= 0 (softmax only ever exponentiates
// x - max <= 0): Cody-Waite range reduction x = n ln2 + r, |r| <= ln2/2, then a degree-7 Taylor
// polynomial (truncation error < 6e-9 relative, below float's half ulp) and 2^n built in the
// exponent bits. Measured against std::exp in softmax_test.cc.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/ops/common.h"
#include "engine/ops/elementwise_common.h"

namespace opscope::engine {

// Exposed for the test (declared there); accurate to ~2 ulp for x in [-87, 0], 0 below -87.
float ExpNonPositive(float x);

inline float ExpNonPositiveInline(float x_in) {
  const float x = std::max(x_in, -87.0f);
  const float kLog2e = 1.44269504088896341f;
  const float kLn2Hi = 0.693145751953125f;
  const float kLn2Lo = 1.428606765330187045e-06f;
  const float kShifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  float t = x * kLog2e + kShifter;
  float n = t - kShifter;
  float r = x - n * kLn2Hi;  // exact: n has few significant bits, kLn2Hi has 16
  r = r - n * kLn2Lo;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t ni = static_cast<int32_t>(n);
  float scale = std::bit_cast<float>(static_cast<int32_t>((ni + 127) << 23));
  return x_in < -87.0f ? 0.0f : p * scale;
}

float ExpNonPositive(float x) { return ExpNonPositiveInline(x); }

namespace {

template <typename T>
inline T ExpShifted(T v) {
  if constexpr (std::is_same_v<T, float>) return ExpNonPositiveInline(v);
  else return std::exp(v);
}

template <typename T, bool kLog>
void SoftmaxRows(const AxisView& v, const T* x, T* y) {
  const int64_t R = v.axis;
  ParallelFor(v.outer, R * 8, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      const T* xr = x + o * R;
      T* yr = y + o * R;
      T m = -std::numeric_limits<T>::infinity();
      for (int64_t r = 0; r < R; ++r) m = std::max(m, xr[r]);
      if (!std::isfinite(m)) {
        // All -inf (or a +inf/NaN present): fall back to the definition with std::exp.
        T s = 0;
        for (int64_t r = 0; r < R; ++r) s += std::exp(xr[r] - m);
        for (int64_t r = 0; r < R; ++r)
          yr[r] = kLog ? xr[r] - m - std::log(s) : std::exp(xr[r] - m) / s;
        continue;
      }
      T s = 0;
      if constexpr (kLog) {
        for (int64_t r = 0; r < R; ++r) s += ExpShifted<T>(xr[r] - m);
        // (x - m) - log(s), not x - (m + log(s)): near the maximum the result is tiny and
        // folding m into the shift would cancel away its low bits.
        const T ls = std::log(s);
        for (int64_t r = 0; r < R; ++r) yr[r] = (xr[r] - m) - ls;
      } else {
        for (int64_t r = 0; r < R; ++r) {
          T ev = ExpShifted<T>(xr[r] - m);
          yr[r] = ev;
          s += ev;
        }
        const T inv = T(1) / s;
        for (int64_t r = 0; r < R; ++r) yr[r] *= inv;
      }
    }
  });
}

template <typename T, bool kLog>
void SoftmaxStrided(const AxisView& v, const T* x, T* y) {
  const int64_t R = v.axis, I = v.inner;
  const int64_t blk = 256;
  const int64_t nb = (I + blk - 1) / blk;
  ParallelFor(v.outer * nb, R * std::min(I, blk) * 8, [&](int64_t b, int64_t e) {
    std::vector<T> m(blk), s(blk);
    for (int64_t w = b; w < e; ++w) {
      const int64_t o = w / nb, i0 = (w % nb) * blk, n = std::min(I, i0 + blk) - i0;
      const T* xb = x + o * R * I + i0;
      T* yb = y + o * R * I + i0;
      std::fill(m.begin(), m.end(), -std::numeric_limits<T>::infinity());
      std::fill(s.begin(), s.end(), T(0));
      for (int64_t r = 0; r < R; ++r)
        for (int64_t i = 0; i < n; ++i) m[i] = std::max(m[i], xb[r * I + i]);
      bool finite = true;
      for (int64_t i = 0; i < n; ++i) finite &= std::isfinite(m[i]);
      for (int64_t r = 0; r < R; ++r) {
        const T* xr = xb + r * I;
        T* yr = yb + r * I;
        if (finite) {
          for (int64_t i = 0; i < n; ++i) {
            T ev = ExpShifted<T>(xr[i] - m[i]);
            if (!kLog) yr[i] = ev;
            s[i] += ev;
          }
        } else {  // a column of -inf, +inf or NaN: the definition, NaN where it is undefined
          for (int64_t i = 0; i < n; ++i) {
            T ev = std::exp(xr[i] - m[i]);
            if (!kLog) yr[i] = ev;
            s[i] += ev;
          }
        }
      }
      for (int64_t i = 0; i < n; ++i) {
        if (kLog) s[i] = std::log(s[i]);
        else s[i] = T(1) / s[i];
      }
      for (int64_t r = 0; r < R; ++r) {
        const T* xr = xb + r * I;
        T* yr = yb + r * I;
        for (int64_t i = 0; i < n; ++i) yr[i] = kLog ? (xr[i] - m[i]) - s[i] : yr[i] * s[i];
      }
    }
  });
}

class SoftmaxKernel : public Kernel {
 public:
  SoftmaxKernel(const Node& node, bool log) : node_(node), log_(log) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "input 0 is missing");
    const DataType dt = x->dtype();
    if (!IsFloatType(dt) && dt != DataType::kFloat16)
      return NodeError(node_, std::string("expects a floating-point input, got ") + DataTypeName(dt));
    const int64_t rank = x->rank();
    const bool coerce = node_.opset < 13;
    int64_t axis = node_.attrs.Int("axis", coerce ? 1 : -1);
    if (rank == 0) return NodeError(node_, "input must have rank >= 1");
    if (!NormalizeAxis(&axis, rank))
      return NodeError(node_, "axis " + std::to_string(node_.attrs.Int("axis", 0)) +
                                  " is out of range for rank " + std::to_string(rank));
    AxisView v;
    if (coerce) {
      for (int64_t d = 0; d < rank; ++d) (d < axis ? v.outer : v.axis) *= x->dim(static_cast<int>(d));
    } else {
      v = MakeAxisView(x->shape(), axis);
    }
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, dt, x->shape()));
    if (x->numel() == 0) return Status::Ok();
    if (dt == DataType::kFloat16) {
      Tensor xf = HalfTensorToFloat(*x);
      Tensor yf(DataType::kFloat32, x->shape());
      Compute<float>(v, xf.data<float>(), yf.data<float>());
      FloatToHalfInto(yf, out);
      return Status::Ok();
    }
    VisitFloat(dt, [&](auto tag) {
      using T = decltype(tag);
      Compute<T>(v, x->data<T>(), out->data<T>());
    });
    return Status::Ok();
  }

  // Per element: max (1), subtract (1), exp (1), sum (1), scale or subtract (1).
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    return {in.empty() ? 0 : 5.0 * static_cast<double>(in[0].numel()), CompulsoryBytes(in, out)};
  }

 private:
  template <typename T>
  void Compute(const AxisView& v, const T* x, T* y) {
    if (v.inner == 1) {
      if (log_) SoftmaxRows<T, true>(v, x, y);
      else SoftmaxRows<T, false>(v, x, y);
    } else {
      if (log_) SoftmaxStrided<T, true>(v, x, y);
      else SoftmaxStrided<T, false>(v, x, y);
    }
  }

  Node node_;
  bool log_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_Softmax(const Node& n) {
  return std::unique_ptr<Kernel>(std::make_unique<SoftmaxKernel>(n, false));
}
StatusOr<std::unique_ptr<Kernel>> Create_LogSoftmax(const Node& n) {
  return std::unique_ptr<Kernel>(std::make_unique<SoftmaxKernel>(n, true));
}

}  // namespace opscope::engine
