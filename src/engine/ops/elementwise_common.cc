#include "engine/ops/elementwise_common.h"

#include <bit>
#include <cmath>
#include <limits>
#include <string>

namespace opscope::engine {

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    float f = std::ldexp(static_cast<float>(mant), -24);  // zero or subnormal
    return sign ? -f : f;
  }
  uint32_t bits;
  if (exp == 31)
    bits = sign | 0x7f800000u | (mant << 13);
  else
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  return std::bit_cast<float>(bits);
}

uint16_t DoubleToHalf(double x) {
  if (std::isnan(x)) return 0x7e00;
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  double a = std::fabs(x);
  if (a >= 65520.0) return sign | 0x7c00;  // rounds to infinity
  if (a < 6.103515625e-05) {               // below the smallest normal, 2^-14
    // Subnormal: units of 2^-24; a result of 0x400 is exactly the smallest normal.
    double m = std::nearbyint(a * 16777216.0);
    return sign | static_cast<uint16_t>(m);
  }
  int e2;
  double f = std::frexp(a, &e2);  // a = f * 2^e2, f in [0.5, 1)
  int e = e2 - 1;                 // a = (2f) * 2^e, 2f in [1, 2)
  double m = std::nearbyint((2 * f - 1) * 1024.0);
  if (m >= 1024) {
    m = 0;
    ++e;
  }
  if (e > 15) return sign | 0x7c00;
  return sign | static_cast<uint16_t>(((e + 15) << 10) | static_cast<int>(m));
}

Tensor HalfTensorToFloat(const Tensor& t) {
  Tensor out(DataType::kFloat32, t.shape());
  const uint16_t* s = t.data<uint16_t>();
  float* d = out.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = HalfToFloat(s[i]);
  return out;
}

void FloatToHalfInto(const Tensor& src, Tensor* dst) {
  const float* s = src.data<float>();
  uint16_t* d = dst->data<uint16_t>();
  for (int64_t i = 0; i < src.numel(); ++i) d[i] = FloatToHalf(s[i]);
}

bool MakeBroadcastPlan(const std::vector<const std::vector<int64_t>*>& shapes, BroadcastPlan* p,
                       bool unidirectional) {
  const int k_in = static_cast<int>(shapes.size());
  p->num_inputs = k_in;
  p->out_shape = *shapes[0];
  for (int k = 1; k < k_in; ++k) {
    std::vector<int64_t> next;
    if (!BroadcastShapes(p->out_shape, *shapes[k], &next)) return false;
    p->out_shape = std::move(next);
  }
  if (unidirectional && p->out_shape != *shapes[0]) return false;
  p->out_numel = Numel(p->out_shape);
  if (p->out_numel == 0 || p->out_numel == std::numeric_limits<int64_t>::max()) {
    // Nothing to iterate: an empty output, or one whose element count saturated (the collapsed
    // dims below would overflow too), which KernelContext::Output refuses.
    p->dims.assign(1, 0);
    p->strides.assign(k_in, std::vector<int64_t>(1, 0));
    return true;
  }

  std::vector<std::vector<int64_t>> full(k_in);
  for (int k = 0; k < k_in; ++k) full[k] = BroadcastStrides(*shapes[k], p->out_shape);
  p->dims.clear();
  p->strides.assign(k_in, {});
  for (size_t d = 0; d < p->out_shape.size(); ++d) {
    const int64_t n = p->out_shape[d];
    if (n == 1) continue;
    bool merge = !p->dims.empty();
    for (int k = 0; k < k_in && merge; ++k) merge = p->strides[k].back() == full[k][d] * n;
    if (merge) {
      p->dims.back() *= n;
      for (int k = 0; k < k_in; ++k) p->strides[k].back() = full[k][d];
    } else {
      p->dims.push_back(n);
      for (int k = 0; k < k_in; ++k) p->strides[k].push_back(full[k][d]);
    }
  }
  if (p->dims.empty()) {
    p->dims.push_back(1);
    for (int k = 0; k < k_in; ++k) p->strides[k].push_back(0);
  }
  return true;
}

}  // namespace opscope::engine
