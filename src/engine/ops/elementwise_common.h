// Machinery shared by the elementwise, reduction, softmax and misc kernels: dtype dispatch,
// float16 conversion, and the broadcast plan that turns numpy broadcasting into contiguous inner
// loops.
//
// Broadcasting. MakeBroadcastPlan computes the output shape of up to three inputs, drops size-1
// dimensions and merges adjacent dimensions that every input walks the same way (both contiguous
// or both broadcast), so that [N,C,H,W] + [1,C,1,1] becomes dims [N, C, H*W] with input strides
// [C*H*W, H*W, 1] and [0, 1, 0]. The innermost collapsed dimension has stride 1 or 0 for every
// input, so a kernel's inner loop is either elementwise over contiguous memory or against one
// repeated scalar: both vectorize. ForEachRow walks the outer dimensions with an odometer (no
// division per row) and splits rows across the OpenMP pool; with a single collapsed dimension
// (same shapes, or scalar against tensor) it splits the elements themselves.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "engine/ops/common.h"

namespace opscope::engine {

// ---- dtype dispatch: f is a generic lambda receiving a value of the C++ element type. ----

inline bool IsFloatType(DataType t) { return t == DataType::kFloat32 || t == DataType::kFloat64; }
inline bool IsNumericType(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat64 || t == DataType::kInt64 ||
         t == DataType::kInt32 || t == DataType::kUint8 || t == DataType::kInt8;
}

template <typename F>
auto VisitNumeric(DataType t, F&& f) {
  switch (t) {
    case DataType::kFloat64:
      return f(double{});
    case DataType::kInt64:
      return f(int64_t{});
    case DataType::kInt32:
      return f(int32_t{});
    case DataType::kUint8:
      return f(uint8_t{});
    case DataType::kInt8:
      return f(int8_t{});
    default:
      return f(float{});
  }
}

template <typename F>
auto VisitFloat(DataType t, F&& f) {
  if (t == DataType::kFloat64) return f(double{});
  return f(float{});
}

// Integer arithmetic that wraps instead of invoking signed-overflow UB (numpy also wraps).
template <typename T>
inline T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <typename T>
inline T WrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return a - b;
  }
}
template <typename T>
inline T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    // uint8 * uint8 promotes to int, which cannot overflow; larger types multiply unsigned.
    if constexpr (sizeof(T) < sizeof(int)) {
      return static_cast<T>(static_cast<U>(static_cast<unsigned>(a) * static_cast<unsigned>(b)));
    } else {
      return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    }
  } else {
    return a * b;
  }
}

// Float to integer conversion without UB: NaN becomes 0, out-of-range values saturate to the
// int64 range, and narrower types then wrap as numpy's astype does on x86.
template <typename To, typename From>
inline To SafeCast(From v) {
  if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (std::isnan(v)) return To{0};
    if constexpr (std::is_same_v<To, bool>) return v != 0;
    double d = static_cast<double>(v);
    int64_t i;
    if (d >= 9.2233720368547758e18)
      i = INT64_MAX;
    else if (d <= -9.2233720368547758e18)
      i = INT64_MIN;
    else
      i = static_cast<int64_t>(d);
    if constexpr (std::is_same_v<To, int64_t>)
      return i;
    else
      return static_cast<To>(static_cast<std::make_unsigned_t<To>>(static_cast<uint64_t>(i)));
  } else if constexpr (std::is_integral_v<From> && std::is_integral_v<To> &&
                       !std::is_same_v<To, bool>) {
    using U = std::make_unsigned_t<To>;
    return static_cast<To>(static_cast<U>(static_cast<uint64_t>(static_cast<int64_t>(v))));
  } else {
    return static_cast<To>(v);
  }
}

// ---- NaN-propagating max/min with ordered comparisons only (vectorizable) ----
// If neither x >= y nor y > x holds, one of them is NaN and x + y is NaN.
template <typename T>
inline T MaxPropagateNan(T x, T y) {
  if constexpr (std::is_floating_point_v<T>)
    return x >= y ? x : (y > x ? y : x + y);
  else
    return x >= y ? x : y;
}
template <typename T>
inline T MinPropagateNan(T x, T y) {
  if constexpr (std::is_floating_point_v<T>)
    return x <= y ? x : (y < x ? y : x + y);
  else
    return x <= y ? x : y;
}

// ---- vectorizable exp ----

// exp for float32 written so that loops over it vectorize (no libm call, no branch): Cody-Waite
// range reduction x = n ln2 + r with |r| <= ln2/2, a degree-7 Taylor polynomial for e^r
// (truncation error < 6e-9 relative, under float's half ulp), and 2^n assembled in the exponent
// bits as 2^(n/2) * 2^(n - n/2) so that both overflow (x > 88.72 -> inf) and gradual underflow
// (subnormal results, 0 below about -103.3) come out right. About 2 ulp; NaN propagates.
// There is no unordered comparison (x != x) in it: under GCC's default -ftrapping-math such a
// comparison stops if-conversion and with it vectorization.
// Accuracy is measured in softmax_test.cc.
inline float FastExp(float x) {
  const float xc = std::min(std::max(x, -104.0f), 89.0f);
  const float kLog2e = 1.44269504088896341f;
  const float kLn2Hi = 0.693145751953125f;  // 16 significant bits: n * kLn2Hi is exact
  const float kLn2Lo = 1.428606765330187045e-06f;
  const float kShifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float n = (xc * kLog2e + kShifter) - kShifter;  // round(xc / ln2)
  float r = xc - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // n read from the shifter's mantissa bits rather than converted: a NaN x then gives garbage
  // scale bits but no undefined conversion, and NaN still propagates through p.
  const int32_t ni =
      std::bit_cast<int32_t>(xc * kLog2e + kShifter) - std::bit_cast<int32_t>(kShifter);
  const int32_t n1 = ni >> 1, n2 = ni - n1;
  // The exponent field is filled with an unsigned shift: for NaN's garbage n a signed multiply
  // would overflow (undefined; UBSan flagged it); for every real n the bits are the same.
  const float s1 = std::bit_cast<float>(static_cast<uint32_t>(n1 + 127) << 23);
  const float s2 = std::bit_cast<float>(static_cast<uint32_t>(n2 + 127) << 23);
  return p * s1 * s2;
}

// Sigmoid through FastExp of a non-positive argument: e = exp(-|x|) never overflows, and the
// negative side is e / (1 + e) rather than 1 - 1/(1 + e), which would cancel.
inline float FastSigmoid(float x) {
  const float e = FastExp(-std::fabs(x));
  return (x >= 0 ? 1.0f : e) / (1.0f + e);
}

// tanh(|x|) = (1 - e) / (1 + e) with e = exp(-2|x|); below |x| = 1/16 that form cancels, so
// the odd Taylor polynomial x - x^3/3 + 2x^5/15 - 17x^7/315 (error < 1e-13 relative) is used.
inline float FastTanh(float x) {
  const float a = std::fabs(x);
  const float e = FastExp(-2.0f * a);
  const float big = (1.0f - e) / (1.0f + e);
  const float x2 = a * a;
  const float small = a * (1.0f + x2 * (-1.0f / 3 + x2 * (2.0f / 15 + x2 * (-17.0f / 315))));
  const float t = a < 0.0625f ? small : big;  // NaN: big is NaN
  return std::copysign(t, x);
}

// erf: the Maclaurin series (8 terms) below |x| = 0.5, where 1 - erfc would cancel; above, 1 -
// erfc(|x|) with Numerical Recipes' Chebyshev-fitted erfc (fractional error < 1.2e-7) around
// FastExp. Measured max relative error 2.9e-7 on [-6, 6] (softmax_test.cc).
// Beyond |x| = 4, erf(x) rounds to +-1 in float (1 - erf(4) = 1.5e-8 is below half an ulp of 1),
// so the erfc branch works on min(|x|, 4): its exp(-z^2) then never produces subnormals (x86
// handles those with slow microcode assists) and the result is the same.
inline float FastErf(float x) {
  const float z = std::fabs(x);
  const float zc = std::min(z, 4.0f);  // NaN: std::min returns the NaN (first argument)
  const float z2 = zc * zc;
  float s = -1.0f / 75600.0f;  // (-1)^n / (n! (2n+1)) for n = 7 .. 0
  s = s * z2 + 1.0f / 9360.0f;
  s = s * z2 - 1.0f / 1320.0f;
  s = s * z2 + 1.0f / 216.0f;
  s = s * z2 - 1.0f / 42.0f;
  s = s * z2 + 1.0f / 10.0f;
  s = s * z2 - 1.0f / 3.0f;
  s = s * z2 + 1.0f;
  const float small = 1.1283791670955126f * z * s;  // 2/sqrt(pi)
  const float t = 1.0f / (1.0f + 0.5f * zc);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  const float large = 1.0f - t * FastExp(p - z2);
  return std::copysign(z < 0.5f ? small : large, x);
}

// ---- IEEE half precision ----

float HalfToFloat(uint16_t h);
// Rounds to nearest, ties to even, directly from double (one rounding, as numpy does).
uint16_t DoubleToHalf(double x);
inline uint16_t FloatToHalf(float x) { return DoubleToHalf(static_cast<double>(x)); }
// float16 tensor <-> float32 tensor copies (the float16 path of arithmetic kernels upcasts).
Tensor HalfTensorToFloat(const Tensor& t);
void FloatToHalfInto(const Tensor& src, Tensor* dst);

// ---- broadcasting ----

struct BroadcastPlan {
  std::vector<int64_t> out_shape;
  int64_t out_numel = 0;
  std::vector<int64_t> dims;                  // collapsed dims, at least one; {0}: none to walk
  std::vector<std::vector<int64_t>> strides;  // per input, per collapsed dim (0 = broadcast)
  int num_inputs = 0;
};

// False if the shapes do not broadcast. With `unidirectional`, every input must broadcast to the
// first input's shape (PRelu's slope).
bool MakeBroadcastPlan(const std::vector<const std::vector<int64_t>*>& shapes, BroadcastPlan* p,
                       bool unidirectional = false);

// Calls fn(out_offset, in_offsets, n) over runs of n output elements whose inputs are either
// contiguous (inner stride 1) or a repeated element (inner stride 0). `cost` is the work per
// element for ParallelFor's split decision.
template <int K, typename Fn>
void ForEachRow(const BroadcastPlan& p, int64_t cost, Fn&& fn) {
  if (p.dims.back() == 0) return;  // MakeBroadcastPlan's mark of nothing to iterate
  const int nd = static_cast<int>(p.dims.size());
  const int64_t inner = p.dims.back();
  if (nd == 1) {
    ParallelFor(inner, cost, [&](int64_t b, int64_t e) {
      std::array<int64_t, K> off;
      for (int k = 0; k < K; ++k) off[k] = b * p.strides[k][0];
      fn(b, off, e - b);
    });
    return;
  }
  const int64_t rows = p.out_numel / inner;
  ParallelFor(rows, inner * cost, [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> idx(nd - 1, 0);
    std::array<int64_t, K> off{};
    int64_t rem = r0;
    for (int d = nd - 2; d >= 0; --d) {
      idx[d] = rem % p.dims[d];
      rem /= p.dims[d];
      for (int k = 0; k < K; ++k) off[k] += idx[d] * p.strides[k][d];
    }
    for (int64_t r = r0; r < r1; ++r) {
      fn(r * inner, off, inner);
      for (int d = nd - 2; d >= 0; --d) {
        for (int k = 0; k < K; ++k) off[k] += p.strides[k][d];
        if (++idx[d] < p.dims[d]) break;
        for (int k = 0; k < K; ++k) off[k] -= p.strides[k][d] * p.dims[d];
        idx[d] = 0;
      }
    }
  });
}

// out[i] = f(a[i], b[i]) under broadcasting, with the inner loop specialised for
// contiguous/contiguous, contiguous/scalar and scalar/contiguous.
// `post(po, n)` runs on each finished run of outputs while it is still in cache (fused
// activations).
struct NoPost {
  template <typename T>
  void operator()(T*, int64_t) const {}
};
template <typename TA, typename TB, typename TO, typename F, typename Post = NoPost>
void BinaryBroadcastLoop(const BroadcastPlan& p, const TA* a, const TB* b, TO* o, int64_t cost, F f,
                         Post post = Post()) {
  const int64_t sa = p.strides[0].back(), sb = p.strides[1].back();
  ForEachRow<2>(p, cost, [&](int64_t oo, const std::array<int64_t, 2>& off, int64_t n) {
    const TA* pa = a + off[0];
    const TB* pb = b + off[1];
    TO* po = o + oo;
    if (sa && sb) {
      for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
    } else if (sa) {
      const TB vb = pb[0];
      for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], vb);
    } else if (sb) {
      const TA va = pa[0];
      for (int64_t i = 0; i < n; ++i) po[i] = f(va, pb[i]);
    } else {
      const TO v = f(pa[0], pb[0]);
      for (int64_t i = 0; i < n; ++i) po[i] = v;
    }
    post(po, n);
  });
}

// Canonical [outer, axis, inner] view of a tensor around one axis (softmax, argmax, cumsum, topk).
struct AxisView {
  int64_t outer = 1, axis = 1, inner = 1;
};
inline AxisView MakeAxisView(const std::vector<int64_t>& shape, int64_t axis) {
  AxisView v;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    if (i < axis)
      v.outer *= shape[i];
    else if (i == axis)
      v.axis = shape[i];
    else
      v.inner *= shape[i];
  }
  return v;
}

}  // namespace opscope::engine
