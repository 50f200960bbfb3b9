// The exact int16 x int16 -> int32 GEMM panel and the scale / zero-point readers (see
// quant_common.h).
#include "engine/ops/quant_common.h"

#include <immintrin.h>

#include <cstring>

namespace opscope::engine {
namespace {

// Portable tile: MR rows x 16 columns.
template <int MR>
void TileBaseline(int64_t K2, const int32_t* a2, int64_t lda, const int16_t* b2, int64_t nb,
                  int32_t* c, int64_t ldc) {
  int32_t acc[MR][kGemmNr] = {};
  for (int64_t kp = 0; kp < K2; ++kp) {
    const int16_t* b = b2 + kp * nb * 2;
    for (int r = 0; r < MR; ++r) {
      const int32_t av = a2[r * lda + kp];
      const int32_t a0 = static_cast<int16_t>(av & 0xffff), a1 = static_cast<int16_t>(av >> 16);
      for (int j = 0; j < kGemmNr; ++j) acc[r][j] += a0 * b[2 * j] + a1 * b[2 * j + 1];
    }
  }
  for (int r = 0; r < MR; ++r) std::memcpy(c + r * ldc, acc[r], sizeof(acc[r]));
}

#if defined(__x86_64__)
template <int MR>
[[gnu::target("avx2")]] void TileAvx2(int64_t K2, const int32_t* a2, int64_t lda, const int16_t* b2,
                                      int64_t nb, int32_t* c, int64_t ldc) {
  __m256i acc[MR][2];
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  const int64_t bstride = nb * 2;
  for (int64_t kp = 0; kp < K2; ++kp) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b2));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b2 + 16));
    b2 += bstride;
    for (int r = 0; r < MR; ++r) {
      const __m256i av = _mm256_set1_epi32(a2[r * lda + kp]);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(av, b0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(av, b1));
    }
  }
  for (int r = 0; r < MR; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc), acc[r][0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc + 8), acc[r][1]);
  }
}
#endif

using TileFn = void (*)(int64_t, const int32_t*, int64_t, const int16_t*, int64_t, int32_t*,
                        int64_t);

struct Tiles {
  TileFn fn[7];
};

Tiles MakeTiles() {
  Tiles t;
#if defined(__x86_64__)
  if (BestIsa() != Isa::kBaseline) {
    t.fn[1] = TileAvx2<1>;
    t.fn[2] = TileAvx2<2>;
    t.fn[3] = TileAvx2<3>;
    t.fn[4] = TileAvx2<4>;
    t.fn[5] = TileAvx2<5>;
    t.fn[6] = TileAvx2<6>;
    return t;
  }
#endif
  t.fn[1] = TileBaseline<1>;
  t.fn[2] = TileBaseline<2>;
  t.fn[3] = TileBaseline<3>;
  t.fn[4] = TileBaseline<4>;
  t.fn[5] = TileBaseline<5>;
  t.fn[6] = TileBaseline<6>;
  return t;
}

constexpr int kMr = 6;

std::string LenString(const Tensor& t) { return ShapeString(t.shape()); }

}  // namespace

void Int16GemmPanel(int64_t M, int64_t nb, int64_t K2, const int32_t* a2, const int16_t* b2,
                    int64_t ldb, int32_t* c, int64_t ldc) {
  static const Tiles tiles = MakeTiles();
  // Column blocks outside, rows inside: one 16-column strip of B (K2 * 64 bytes) stays in L1/L2
  // while every row block of A streams past it.
  for (int64_t n = 0; n < nb; n += kGemmNr) {
    for (int64_t m = 0; m < M; m += kMr) {
      const int mr = static_cast<int>(std::min<int64_t>(kMr, M - m));
      tiles.fn[mr](K2, a2 + m * K2, K2, b2 + n * 2, ldb, c + m * ldc + n, ldc);
    }
  }
}

void PackRowsA(const int32_t* a, int64_t rows, int64_t K, int64_t lda, int32_t* a2) {
  const int64_t K2 = (K + 1) / 2;
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t* src = a + r * lda;
    int32_t* dst = a2 + r * K2;
    for (int64_t kp = 0; kp < K2; ++kp) {
      const int32_t lo = src[2 * kp];
      const int32_t hi = 2 * kp + 1 < K ? src[2 * kp + 1] : 0;
      dst[kp] = static_cast<int32_t>((static_cast<uint32_t>(lo) & 0xffffu) |
                                     (static_cast<uint32_t>(hi) << 16));
    }
  }
}

Status ReadQuantParams(const Node& n, const std::string& what, const Tensor* scale,
                       const Tensor* zero_point, const std::vector<int64_t>& data_shape,
                       int64_t axis, int64_t block, bool allow_per_axis, QuantParams* q) {
  if (!scale) return NodeError(n, "missing required input '" + what + "_scale'");
  if (scale->dtype() != DataType::kFloat32)
    return NodeError(n,
                     "'" + what + "_scale' must be float32, got " + DataTypeName(scale->dtype()));
  const int64_t rank = static_cast<int64_t>(data_shape.size());
  const bool scalar = scale->numel() == 1 && scale->rank() <= 1 && block == 0;
  q->axis = -1;
  q->block = 0;
  if (!scalar) {
    if (!allow_per_axis)
      return NodeError(
          n, "'" + what + "_scale' must be a scalar (per-tensor), has shape " + LenString(*scale));
    int64_t ax = axis;
    if (!NormalizeAxis(&ax, rank))
      return NodeError(n, "axis " + std::to_string(axis) + " is out of range for '" + what +
                              "' of rank " + std::to_string(rank));
    if (block > 0) {
      std::vector<int64_t> want = data_shape;
      want[ax] = (data_shape[ax] + block - 1) / block;
      if (scale->shape() != want)
        return NodeError(n, "'" + what + "_scale' has shape " + LenString(*scale) + ", expected " +
                                ShapeString(want) + " for block_size " + std::to_string(block) +
                                " along axis " + std::to_string(ax));
      q->block = block;
    } else {
      if (scale->rank() != 1 || scale->dim(0) != data_shape[ax])
        return NodeError(n, "per-axis '" + what + "_scale' has shape " + LenString(*scale) +
                                ", expected [" + std::to_string(data_shape[ax]) + "] (dimension " +
                                std::to_string(ax) + " of '" + what + "' " +
                                ShapeString(data_shape) + ")");
    }
    q->axis = ax;
  }
  const int64_t ns = scale->numel();
  q->scale.assign(scale->data<float>(), scale->data<float>() + ns);
  for (int64_t i = 0; i < ns; ++i) {
    const float s = q->scale[i];
    if (!(s > 0) || !std::isfinite(s))
      return NodeError(n, "'" + what + "_scale'[" + std::to_string(i) + "] is " +
                              std::to_string(s) +
                              "; scales must be finite and > 0 (re-run the quantizer)");
  }
  q->zero_point.assign(ns, 0);
  if (zero_point) {
    if (zero_point->shape() != scale->shape() && !(zero_point->numel() == 1 && ns == 1))
      return NodeError(n, "'" + what + "_zero_point' has shape " + LenString(*zero_point) +
                              ", but '" + what + "_scale' has shape " + LenString(*scale));
    const DataType zt = zero_point->dtype();
    if (zt != DataType::kUint8 && zt != DataType::kInt8 && zt != DataType::kInt32)
      return NodeError(n, "'" + what + "_zero_point' has unsupported type " + DataTypeName(zt) +
                              " (supported: uint8, int8; int32 for DequantizeLinear)");
    q->zp_type = zt;
    for (int64_t i = 0; i < ns; ++i) q->zero_point[i] = ReadInt(*zero_point, i);
  }
  return Status::Ok();
}

Status ReadZeroPoints(const Node& n, const std::string& what, const Tensor* zp, DataType data_type,
                      int64_t per_len, std::vector<int32_t>* out) {
  out->assign(1, 0);
  if (!zp) return Status::Ok();
  if (zp->dtype() != data_type)
    return NodeError(n, "'" + what + "_zero_point' is " + DataTypeName(zp->dtype()) + " but '" +
                            what + "' is " + DataTypeName(data_type) +
                            "; the zero point must have the data's type");
  if (zp->numel() == 1 && zp->rank() <= 1) {
    (*out)[0] = ReadInt(*zp, 0);
    return Status::Ok();
  }
  if (per_len <= 0 || zp->rank() != 1 || zp->dim(0) != per_len)
    return NodeError(n,
                     "'" + what + "_zero_point' has shape " + ShapeString(zp->shape()) +
                         (per_len > 0 ? ", expected a scalar or [" + std::to_string(per_len) + "]"
                                      : ", expected a scalar"));
  out->resize(per_len);
  for (int64_t i = 0; i < per_len; ++i) (*out)[i] = ReadInt(*zp, i);
  return Status::Ok();
}

}  // namespace opscope::engine
