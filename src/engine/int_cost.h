// Integer operation counts of quantized kernels, beside Kernel::EstimateCost's FLOPs and bytes.
//
// A kernel whose arithmetic is integer (ConvInteger, MatMulInteger, QLinearConv, QLinearMatMul,
// the QDQ-fused Conv/MatMul/Gemm; ops/quant_conv.cc) also derives from IntegerOpsCost; the
// session asks it for the node's integer operations (NodeInfo::int_ops, the profile's `ops`),
// which the roofline places against the int8 ceiling. Its EstimateCost then reports 0 FLOPs.
#pragma once

#include <vector>

#include "engine/kernel.h"

namespace opscope::engine {

class IntegerOpsCost {
 public:
  virtual ~IntegerOpsCost() = default;
  // Integer operations per run (a multiply-add counts 2), from the node's real shapes.
  virtual double IntegerOps(const std::vector<TensorDesc>& in,
                            const std::vector<TensorDesc>& out) const = 0;
};

// The integer ops of `k` when it is an IntegerOpsCost, else 0.
inline double IntegerOpsOf(const Kernel* k, const std::vector<TensorDesc>& in,
                           const std::vector<TensorDesc>& out) {
  const auto* ic = dynamic_cast<const IntegerOpsCost*>(k);
  return ic ? ic->IntegerOps(in, out) : 0;
}

}  // namespace opscope::engine
