// Shared pieces of the quantized kernels (quant.cc, quant_conv.cc): reading and checking
// scale / zero-point inputs, ONNX rounding and saturation, and the exact integer GEMM that the
// integer convolutions and matmuls run on.
//
// Exactness. ConvInteger, MatMulInteger and the QLinear ops define an int32 accumulator
// sum (x - x_zero_point) * (w - w_zero_point). oneDNN 2.6's int8 primitives are exact only on
// CPUs with VNNI: on AVX2 and plain AVX-512 they multiply u8 by s8 with vpmaddubsw, whose int16
// pair sums saturate, and they pre-scale s8 weights by 0.5 to avoid that (docs/ops-nn.md). The
// engine instead subtracts the zero points while packing, keeps both operands as int16 (every
// value fits in [-255, 255]) and multiplies pairs with vpmaddwd into int32: two products of at
// most 255 * 255 never overflow, so the result is the exact integer the ONNX reference computes,
// on every CPU, and uint8 weights (what ORT's dynamic quantization writes) need no conversion.
//
// Packed layouts (K2 = ceil(K / 2), the pair count; an odd K gets a zero pair partner):
//   A (the M side, rows):    int32 a2[m * K2 + kp] = a[m][2kp] | a[m][2kp + 1] << 16
//   B (the N side, columns): int16 strips of 16 columns, each contiguous over K:
//                            b2[((n / 16) * K2 + kp) * 32 + (n % 16) * 2 + j] = b[2kp + j][n]
//                            (BPairIndex), nb % 16 == 0
// Int16GemmPanel multiplies them into int32 c[m * ldc + n] for n < nb.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/ops/common.h"

namespace opscope::engine {

constexpr int64_t kGemmNr = 16;  // columns per micro-tile (two AVX2 vectors of int32)

// c = A(M x 2*K2) * B(2*K2 x nb); nb a multiple of kGemmNr. Single-threaded (callers split work).
void Int16GemmPanel(int64_t M, int64_t nb, int64_t K2, const int32_t* a2, const int16_t* b2,
                    int32_t* c, int64_t ldc);

// Index in the packed B of element (k, n) of a B with K2 pairs (see the layout above).
inline int64_t BPairIndex(int64_t k, int64_t n, int64_t K2) {
  return ((n / kGemmNr) * K2 + (k >> 1)) * 2 * kGemmNr + (n % kGemmNr) * 2 + (k & 1);
}

// Quantization parameters of one tensor: scales and zero points, either one (per tensor), one
// per index along `axis`, or (opset 21 block quantization) one per `block` indices along it.
struct QuantParams {
  std::vector<float> scale;
  std::vector<int32_t> zero_point;  // same length as scale (zeros when the input is omitted)
  int64_t axis = -1;                // -1: per tensor
  int64_t block = 0;                // > 0: block quantization along axis
  DataType zp_type = DataType::kUint8;
  bool per_tensor() const { return axis < 0; }
};

// Integer types the quantized kernels read and write.
inline bool IsQuantType(DataType t) { return t == DataType::kUint8 || t == DataType::kInt8; }
inline int32_t QMin(DataType t) { return t == DataType::kInt8 ? -128 : 0; }
inline int32_t QMax(DataType t) { return t == DataType::kInt8 ? 127 : 255; }

// Reads a scale tensor (float32) and an optional zero-point tensor into `q`, checking what the
// ONNX spec requires: the scale is a scalar / 1-element tensor (per tensor), a 1-D tensor of
// the length of `data_shape[axis]` (per axis), or for block > 0 the data shape with
// ceil(dim/block) along the axis; every scale is finite and > 0; the zero point has the scale's
// shape and the type `expect_zp` (kInt32 accepts any of int8/uint8/int32 and requires 0).
// `what` names the tensor in errors ("x", "w", "y").
Status ReadQuantParams(const Node& n, const std::string& what, const Tensor* scale,
                       const Tensor* zero_point, const std::vector<int64_t>& data_shape,
                       int64_t axis, int64_t block, bool allow_per_axis, QuantParams* q);

// A zero-point input of an integer op (ConvInteger, MatMulInteger) that has no scale: a scalar,
// or (when `per_len` > 0) a 1-D tensor of that length. Its type must equal `data_type`.
Status ReadZeroPoints(const Node& n, const std::string& what, const Tensor* zp, DataType data_type,
                      int64_t per_len, std::vector<int32_t>* out);

// Reads element i of a uint8 / int8 / int32 tensor as int32.
inline int32_t ReadInt(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kUint8:
      return t.data<uint8_t>()[i];
    case DataType::kInt8:
      return t.data<int8_t>()[i];
    case DataType::kInt32:
      return t.data<int32_t>()[i];
    default:
      return 0;
  }
}

// round-half-to-even(v) + zp, saturated to the type's range (ONNX QuantizeLinear). NaN gives zp
// as ONNX Runtime does.
inline int32_t Saturate(float v, int32_t zp, int32_t lo, int32_t hi) {
  float r = std::nearbyint(v);
  if (!(r == r)) return std::min(std::max(zp, lo), hi);
  float s = r + static_cast<float>(zp);
  if (s <= static_cast<float>(lo)) return lo;
  if (s >= static_cast<float>(hi)) return hi;
  return static_cast<int32_t>(s);
}

// Packs `rows` rows of K int32 values (already zero-point corrected, |v| <= 255) into a2 form.
void PackRowsA(const int32_t* a, int64_t rows, int64_t K, int64_t lda, int32_t* a2);

}  // namespace opscope::engine
