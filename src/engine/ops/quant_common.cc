// The exact int16 x int16 -> int32 GEMM panel and the scale / zero-point readers (see
// quant_common.h).
#include "engine/ops/quant_common.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>

namespace opscope::engine {
namespace {

// Portable tile: MR rows x 16 columns over kc pairs of a contiguous B strip (32 int16 per pair
// row); `add` accumulates into c (K blocks after the first).
template <int MR>
void TileBaseline(int64_t kc, const int32_t* a2, int64_t lda, const int16_t* b, int32_t* c,
                  int64_t ldc, bool add) {
  int32_t acc[MR][kGemmNr] = {};
  if (add)
    for (int r = 0; r < MR; ++r) std::memcpy(acc[r], c + r * ldc, sizeof(acc[r]));
  for (int64_t kp = 0; kp < kc; ++kp, b += 2 * kGemmNr) {
    for (int r = 0; r < MR; ++r) {
      const int32_t av = a2[r * lda + kp];
      const int32_t a0 = static_cast<int16_t>(av & 0xffff), a1 = static_cast<int16_t>(av >> 16);
      for (int j = 0; j < kGemmNr; ++j) acc[r][j] += a0 * b[2 * j] + a1 * b[2 * j + 1];
    }
  }
  for (int r = 0; r < MR; ++r) std::memcpy(c + r * ldc, acc[r], sizeof(acc[r]));
}

#if defined(__x86_64__)
// Accumulators as named registers (an array of __m256i indexed in loops was kept on the stack
// by GCC 12: a spill and a reload per multiply-add).
#define OPSCOPE_TILE_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
template <int MR>
[[gnu::target("avx2")]] void TileAvx2(int64_t kc, const int32_t* a2, int64_t lda, const int16_t* b,
                                      int32_t* c, int64_t ldc, bool add) {
  static_assert(MR >= 1 && MR <= 6);
#define OPSCOPE_DECL(r) __m256i c##r##0 = _mm256_setzero_si256(), c##r##1 = _mm256_setzero_si256();
  OPSCOPE_TILE_ROWS(OPSCOPE_DECL)
#undef OPSCOPE_DECL
  if (add) {
#define OPSCOPE_LOAD(r)                                                              \
  if constexpr (r < MR) {                                                            \
    c##r##0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + r * ldc));     \
    c##r##1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + r * ldc + 8)); \
  }
    OPSCOPE_TILE_ROWS(OPSCOPE_LOAD)
#undef OPSCOPE_LOAD
  }
  const int32_t* a[6];
  for (int r = 0; r < 6; ++r) a[r] = a2 + (r < MR ? r : 0) * lda;
  for (int64_t kp = 0; kp < kc; ++kp, b += 2 * kGemmNr) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16));
#define OPSCOPE_MADD(r)                                             \
  if constexpr (r < MR) {                                           \
    const __m256i av = _mm256_set1_epi32(a[r][kp]);                 \
    c##r##0 = _mm256_add_epi32(c##r##0, _mm256_madd_epi16(av, b0)); \
    c##r##1 = _mm256_add_epi32(c##r##1, _mm256_madd_epi16(av, b1)); \
  }
    OPSCOPE_TILE_ROWS(OPSCOPE_MADD)
#undef OPSCOPE_MADD
  }
#define OPSCOPE_STORE(r)                                                       \
  if constexpr (r < MR) {                                                      \
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc), c##r##0);     \
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc + 8), c##r##1); \
  }
  OPSCOPE_TILE_ROWS(OPSCOPE_STORE)
#undef OPSCOPE_STORE
}
#undef OPSCOPE_TILE_ROWS
#endif

using TileFn = void (*)(int64_t, const int32_t*, int64_t, const int16_t*, int32_t*, int64_t, bool);

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
constexpr int64_t kKc = 256;  // pairs per K block: 16 KiB of a B strip

std::string LenString(const Tensor& t) { return ShapeString(t.shape()); }

}  // namespace

void Int16GemmPanel(int64_t M, int64_t nb, int64_t K2, const int32_t* a2, const int16_t* b2,
                    int32_t* c, int64_t ldc) {
  static const Tiles tiles = MakeTiles();
  if (K2 == 0) {
    for (int64_t m = 0; m < M; ++m) std::fill(c + m * ldc, c + m * ldc + nb, 0);
    return;
  }
  // K in blocks of kKc pairs: one block of a 16-column strip (kKc * 64 bytes) stays in L1 while
  // every row block of A streams past it; the next K block accumulates into c.
  for (int64_t k0 = 0; k0 < K2; k0 += kKc) {
    const int64_t kc = std::min(kKc, K2 - k0);
    for (int64_t n = 0; n < nb; n += kGemmNr) {
      const int16_t* strip = b2 + (n / kGemmNr * K2 + k0) * 2 * kGemmNr;
      for (int64_t m = 0; m < M; m += kMr) {
        const int mr = static_cast<int>(std::min<int64_t>(kMr, M - m));
        tiles.fn[mr](kc, a2 + m * K2 + k0, K2, strip, c + m * ldc + n, ldc, k0 > 0);
      }
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
