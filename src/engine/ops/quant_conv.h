// Integer convolutions and matmuls (ConvInteger, QLinearConv, MatMulInteger, QLinearMatMul) and
// the QDQ-fused kernels the session builds for DequantizeLinear -> Conv / MatMul / Gemm
// [-> Relu] [-> QuantizeLinear] chains (SessionImpl::FuseQdq): the convolution runs on the
// quantized input and weights with the exact int32 accumulator (quant_common.h) and the
// dequantize / bias / activation / requantize steps become its epilogue, so the float tensors
// between the source nodes are never materialized.
#pragma once

#include <memory>
#include <vector>

#include "base/status.h"
#include "engine/graph.h"
#include "engine/kernel.h"

namespace opscope::engine {

struct QdqFusion {
  // The quantized activation (the input DequantizeLinear's parameters; per tensor).
  float x_scale = 1;
  int32_t x_zero_point = 0;
  // The quantized constant weights (uint8 or int8) with per-tensor or per-output-channel
  // (Conv: along W's dim 0; MatMul/Gemm: along the output column) scales and zero points.
  Tensor w;
  std::vector<float> w_scale;
  std::vector<int32_t> w_zero_point;
  std::vector<float> bias;  // float per output channel, or empty
  bool relu = false;
  // A trailing QuantizeLinear (per tensor); without one the step writes float32.
  bool quantize_output = false;
  float y_scale = 1;
  int32_t y_zero_point = 0;
  DataType y_type = DataType::kUint8;
};

// `node` is the Conv (MatMul, Gemm) node; its input 0 becomes the quantized activation, the
// other inputs are ignored (the fusion holds the constants). Gemm requires alpha = beta = 1 and
// transA = 0 (the session checks).
StatusOr<std::unique_ptr<Kernel>> CreateQdqConv(const Node& node, QdqFusion fusion);
StatusOr<std::unique_ptr<Kernel>> CreateQdqMatMul(const Node& node, QdqFusion fusion);

// ConvInteger -> Cast(float) -> Mul(scale) [-> Add(bias)] [-> Relu] as ONNX Runtime's dynamic
// quantizer writes it after DynamicQuantizeLinear (SessionImpl::FuseConvIntegerToFloat): the
// ConvInteger node's four inputs, then the float scale as input 4 (a scalar at run time:
// x_scale * w_scale); `bias` per output channel (or one value, or empty). The int32 accumulator
// goes straight to float, so the int32 and the two float intermediates are never written.
StatusOr<std::unique_ptr<Kernel>> CreateConvIntegerToFloat(const Node& node,
                                                           std::vector<float> bias, bool relu);

}  // namespace opscope::engine
