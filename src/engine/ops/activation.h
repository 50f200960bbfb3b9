// Scalar activation functions shared by the elementwise kernels and by fused post-ops.
//
// A producer kernel (Conv, Gemm, Add, ...) that accepted a PostOp through Kernel::AddPostOp but
// cannot express it natively (oneDNN 2.6 has no HardSwish with ONNX's constants, for example)
// applies it to its output with ApplyActivationInPlace. Sigmoid and Tanh use the branch-free
// FastSigmoid/FastTanh of the standalone kernels (elementwise_common.h), so a fused activation
// computes what the unfused node would; in place they run the standalone kernels' loops compiled
// for AVX2/AVX-512 (unary.cc: the baseline build's loop was scalar, 3.7 ns per element against
// 0.27 for the standalone Sigmoid), the other in-place loops vectorise as they are. Parameters
// follow PostOp: alpha is LeakyRelu's slope, Clip's min and HardSigmoid's and Linear's alpha; beta
// is Clip's max and HardSigmoid's and Linear's beta (Linear: alpha * x + beta). HardSwish uses
// ONNX's fixed constants (alpha 1/6, beta 0.5) and ignores both. kBiasAdd is not an activation:
// ApplyActivation returns x unchanged for it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "engine/kernel.h"
#include "engine/ops/elementwise_common.h"

namespace opscope::engine {

// n floats in place, on the calling thread, with the fastest loop this CPU has (unary.cc).
void SigmoidInPlace(float* p, int64_t n);
void TanhInPlace(float* p, int64_t n);

inline float ApplyActivation(PostOpKind kind, float x, float alpha, float beta) {
  switch (kind) {
    case PostOpKind::kRelu:
      return x > 0 ? x : 0.0f;
    case PostOpKind::kLeakyRelu:
      return x >= 0 ? x : alpha * x;
    case PostOpKind::kClip:
      return std::min(std::max(x, alpha), beta);
    case PostOpKind::kSigmoid:
      return FastSigmoid(x);
    case PostOpKind::kTanh:
      return FastTanh(x);
    case PostOpKind::kHardSigmoid:
      return std::max(0.0f, std::min(1.0f, alpha * x + beta));
    case PostOpKind::kHardSwish:
      return x * std::max(0.0f, std::min(1.0f, x * (1.0f / 6.0f) + 0.5f));
    case PostOpKind::kLinear:
      return alpha * x + beta;
    case PostOpKind::kBiasAdd:
      return x;
  }
  return x;
}

// The same functions for other element types (float64, integers), evaluated in double and
// converted back; for kernels whose output is not float32.
inline double ApplyActivationDouble(PostOpKind kind, double x, double alpha, double beta) {
  switch (kind) {
    case PostOpKind::kRelu:
      return x > 0 ? x : 0.0;
    case PostOpKind::kLeakyRelu:
      return x >= 0 ? x : alpha * x;
    case PostOpKind::kClip:
      return std::min(std::max(x, alpha), beta);
    case PostOpKind::kSigmoid:
      return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x));
    case PostOpKind::kTanh:
      return std::tanh(x);
    case PostOpKind::kHardSigmoid:
      return std::max(0.0, std::min(1.0, alpha * x + beta));
    case PostOpKind::kHardSwish:
      return x * std::max(0.0, std::min(1.0, x / 6 + 0.5));
    case PostOpKind::kLinear:
      return alpha * x + beta;
    case PostOpKind::kBiasAdd:
      return x;
  }
  return x;
}

// Applies the activation to n contiguous floats. The switch is hoisted out of the loop so each
// case's loop vectorizes.
inline void ApplyActivationInPlace(PostOpKind kind, float* p, int64_t n, float alpha, float beta) {
  auto apply = [&](auto f) {
    for (int64_t i = 0; i < n; ++i) p[i] = f(p[i]);
  };
  switch (kind) {
    case PostOpKind::kRelu:
      apply([](float x) { return x > 0 ? x : 0.0f; });
      break;
    case PostOpKind::kLeakyRelu:
      apply([alpha](float x) { return x >= 0 ? x : alpha * x; });
      break;
    case PostOpKind::kClip:
      apply([alpha, beta](float x) { return std::min(std::max(x, alpha), beta); });
      break;
    case PostOpKind::kSigmoid:
      SigmoidInPlace(p, n);
      break;
    case PostOpKind::kTanh:
      TanhInPlace(p, n);
      break;
    case PostOpKind::kHardSigmoid:
      apply([alpha, beta](float x) { return std::max(0.0f, std::min(1.0f, alpha * x + beta)); });
      break;
    case PostOpKind::kHardSwish:
      apply([](float x) { return x * std::max(0.0f, std::min(1.0f, x * (1.0f / 6.0f) + 0.5f)); });
      break;
    case PostOpKind::kLinear:
      apply([alpha, beta](float x) { return alpha * x + beta; });
      break;
    case PostOpKind::kBiasAdd:
      break;
  }
}

}  // namespace opscope::engine
