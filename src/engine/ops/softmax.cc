// Softmax and LogSoftmax.
//
// Opset < 13 coerces the input to 2-D at `axis` (default 1) and normalizes each row of
// prod(shape[axis:]) elements; opset >= 13 normalizes along the single axis (default -1). Both
// become an [outer, axis, inner] view. With inner == 1 each row is contiguous: max, then
// exp(x - max) with its sum, then a scale. With inner > 1 the same three passes run over whole
// rows of `inner` elements (vectorized across the inner dimension) into per-column max and sum.
//
// Rows are reduced with 16 independent lanes and float32 exponentials use FastExp
// (elementwise_common.h), so every pass vectorizes without -ffast-math; contiguous float32 rows
// also run as AVX2 or AVX-512 code where the CPU has it (BestIsa). Rows whose maximum is not
// finite (all -inf, +inf or NaN present) take the textbook path with std::exp and give what the
// definition gives (NaN where it is undefined).
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

namespace {

template <typename T>
[[gnu::always_inline]] inline T ExpShifted(T v) {
  if constexpr (std::is_same_v<T, float>)
    return FastExp(v);
  else
    return std::exp(v);
}

constexpr int kLanes = 16;

// Max and sum of a row with independent lanes, so the loops vectorize without -ffast-math.
// NaN propagates through LaneMax (then the caller takes the slow path).
template <typename T>
[[gnu::always_inline]] inline T LaneMax(const T* x, int64_t n) {
  T lanes[kLanes];
  for (int j = 0; j < kLanes; ++j) lanes[j] = -std::numeric_limits<T>::infinity();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lanes[j] = MaxPropagateNan(lanes[j], x[i + j]);
  for (int j = 0; i < n; ++i, ++j) lanes[j] = MaxPropagateNan(lanes[j], x[i]);
  T m = lanes[0];
  for (int j = 1; j < kLanes; ++j) m = MaxPropagateNan(m, lanes[j]);
  return m;
}

template <typename T>
[[gnu::always_inline]] inline T LaneSum(const T* x, int64_t n) {
  T lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lanes[j] += x[i + j];
  for (int j = 0; i < n; ++i, ++j) lanes[j] += x[i];
  T s = 0;
  for (int j = 0; j < kLanes; ++j) s += lanes[j];
  return s;
}

template <typename T>
[[gnu::always_inline]] inline T LaneSumExp(const T* x, int64_t n, T m) {
  T lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lanes[j] += ExpShifted<T>(x[i + j] - m);
  for (int j = 0; i < n; ++i, ++j) lanes[j] += ExpShifted<T>(x[i] - m);
  T s = 0;
  for (int j = 0; j < kLanes; ++j) s += lanes[j];
  return s;
}

// Rows [b, e) of R contiguous elements, one row at a time (also the path for rows whose maximum
// is not finite).
template <typename T, bool kLog>
[[gnu::always_inline]] inline void SoftmaxRowsOneByOne(const T* x, T* y, int64_t R, int64_t b,
                                                       int64_t e) {
  for (int64_t o = b; o < e; ++o) {
    const T* xr = x + o * R;
    T* yr = y + o * R;
    const T m = LaneMax(xr, R);
    if (!std::isfinite(m)) {
      // All -inf (or a +inf/NaN present): fall back to the definition with std::exp.
      T s = 0;
      for (int64_t r = 0; r < R; ++r) s += std::exp(xr[r] - m);
      for (int64_t r = 0; r < R; ++r)
        yr[r] = kLog ? xr[r] - m - std::log(s) : std::exp(xr[r] - m) / s;
      continue;
    }
    if constexpr (kLog) {
      // Nothing is written before the last pass, so x and y may alias. (x - m) - log(s), not
      // x - (m + log(s)): near the maximum the result is tiny and folding m into the shift
      // would cancel away its low bits.
      const T ls = std::log(LaneSumExp(xr, R, m));
      for (int64_t r = 0; r < R; ++r) yr[r] = (xr[r] - m) - ls;
    } else {
      // exp into the output (vectorized), the sum with independent lanes, then the scale.
      for (int64_t r = 0; r < R; ++r) yr[r] = ExpShifted<T>(xr[r] - m);
      const T inv = T(1) / LaneSum(yr, R);
      for (int64_t r = 0; r < R; ++r) yr[r] *= inv;
    }
  }
}

template <typename T>
[[gnu::always_inline]] inline T RowMax(const T* x, int64_t R) {
  if (R >= 2 * kLanes) return LaneMax(x, R);
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t r = 0; r < R; ++r) m = MaxPropagateNan(m, x[r]);
  return m;
}

template <typename T>
[[gnu::always_inline]] inline T RowSum(const T* x, int64_t R) {
  if (R >= 2 * kLanes) return LaneSum(x, R);
  T s = 0;
  for (int64_t r = 0; r < R; ++r) s += x[r];
  return s;
}

// Rows [b, e) of R contiguous elements in blocks of about kBlock elements: the maxima of the
// block's rows, then x - max for the whole block, then one exponential pass over the block (a
// single loop across rows, so short rows - 7, 25, 49 classes or keys - vectorise as well as long
// ones), then per-row sums and the scale (LogSoftmax: the log of the sums is subtracted). A block
// with a non-finite row maximum runs row by row on the definition instead. x and y may alias.
template <typename T, bool kLog>
[[gnu::always_inline]] inline void SoftmaxRowRange(const T* x, T* y, int64_t R, int64_t b,
                                                   int64_t e) {
  constexpr int64_t kBlock = 4096;
  const int64_t rows_per = std::max<int64_t>(1, kBlock / std::max<int64_t>(R, 1));
  thread_local std::vector<T> mx, ex;
  if (static_cast<int64_t>(mx.size()) < rows_per) mx.resize(static_cast<size_t>(rows_per));
  if (kLog && static_cast<int64_t>(ex.size()) < rows_per * R)
    ex.resize(static_cast<size_t>(rows_per * R));
  for (int64_t o0 = b; o0 < e; o0 += rows_per) {
    const int64_t o1 = std::min(e, o0 + rows_per), n = (o1 - o0) * R;
    bool finite = true;
    for (int64_t o = o0; o < o1; ++o) {
      mx[o - o0] = RowMax(x + o * R, R);
      finite &= std::isfinite(mx[o - o0]);
    }
    if (!finite) {
      SoftmaxRowsOneByOne<T, kLog>(x, y, R, o0, o1);
      continue;
    }
    const T* xb = x + o0 * R;
    T* yb = y + o0 * R;
    for (int64_t o = 0; o < o1 - o0; ++o) {
      const T m = mx[o];
      for (int64_t r = 0; r < R; ++r) yb[o * R + r] = xb[o * R + r] - m;
    }
    T* eb = kLog ? ex.data() : yb;  // LogSoftmax keeps x - max in y and the exponentials aside
    for (int64_t i = 0; i < n; ++i) eb[i] = ExpShifted<T>(yb[i]);
    for (int64_t o = 0; o < o1 - o0; ++o) {
      const T sum = RowSum(eb + o * R, R);
      T* yr = yb + o * R;
      if constexpr (kLog) {
        const T ls = std::log(sum);
        for (int64_t r = 0; r < R; ++r) yr[r] -= ls;
      } else {
        const T inv = T(1) / sum;
        for (int64_t r = 0; r < R; ++r) yr[r] *= inv;
      }
    }
  }
}

template <typename T, bool kLog>
void RowRangeBaseline(const T* x, T* y, int64_t R, int64_t b, int64_t e) {
  SoftmaxRowRange<T, kLog>(x, y, R, b, e);
}
#if defined(__x86_64__) && defined(__GNUC__)
// float32 rows are compiled again for AVX2+FMA and AVX-512 (BestIsa): FastExp's polynomial is
// 4 SSE lanes in the baseline build.
template <bool kLog>
[[gnu::target("avx2,fma")]] void RowRangeAvx2(const float* x, float* y, int64_t R, int64_t b,
                                              int64_t e) {
  SoftmaxRowRange<float, kLog>(x, y, R, b, e);
}
template <bool kLog>
[[gnu::target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]] void RowRangeAvx512(
    const float* x, float* y, int64_t R, int64_t b, int64_t e) {
  SoftmaxRowRange<float, kLog>(x, y, R, b, e);
}
#endif

template <typename T, bool kLog>
void SoftmaxRows(const AxisView& v, const T* x, T* y) {
  using Fn = void (*)(const T*, T*, int64_t, int64_t, int64_t);
  static const Fn fn = [] {
#if defined(__x86_64__) && defined(__GNUC__)
    if constexpr (std::is_same_v<T, float>) {
      if (BestIsa() == Isa::kAvx512) return Fn(RowRangeAvx512<kLog>);
      if (BestIsa() == Isa::kAvx2) return Fn(RowRangeAvx2<kLog>);
    }
#endif
    return Fn(RowRangeBaseline<T, kLog>);
  }();
  const int64_t R = v.axis;
  ParallelFor(v.outer, R * 8, [&](int64_t b, int64_t e) { fn(x, y, R, b, e); });
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
        for (int64_t i = 0; i < n; ++i) m[i] = MaxPropagateNan(m[i], xb[r * I + i]);
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
        if (kLog)
          s[i] = std::log(s[i]);
        else
          s[i] = T(1) / s[i];
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
      return NodeError(node_,
                       std::string("expects a floating-point input, got ") + DataTypeName(dt));
    const int64_t rank = x->rank();
    const bool coerce = node_.opset < 13;
    int64_t axis = node_.attrs.Int("axis", coerce ? 1 : -1);
    if (rank == 0) return NodeError(node_, "input must have rank >= 1");
    if (!NormalizeAxis(&axis, rank))
      return NodeError(node_, "axis " + std::to_string(node_.attrs.Int("axis", 0)) +
                                  " is out of range for rank " + std::to_string(rank));
    AxisView v;
    if (coerce) {
      for (int64_t d = 0; d < rank; ++d)
        (d < axis ? v.outer : v.axis) *= x->dim(static_cast<int>(d));
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
      if (log_)
        SoftmaxRows<T, true>(v, x, y);
      else
        SoftmaxRows<T, false>(v, x, y);
    } else {
      if (log_)
        SoftmaxStrided<T, true>(v, x, y);
      else
        SoftmaxStrided<T, false>(v, x, y);
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
