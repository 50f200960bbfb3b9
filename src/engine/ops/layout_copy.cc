#include "engine/ops/layout_copy.h"

#include <algorithm>
#include <cmath>

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#ifndef OPSCOPE_TILE_I
#define OPSCOPE_TILE_I 64
#endif
#ifndef OPSCOPE_TILE_J
#define OPSCOPE_TILE_J 16
#endif

#include "engine/ops/common.h"

namespace opscope::engine {

std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

void FillElements(void* out, int64_t n, size_t elem_size, uint64_t value) {
  DispatchBySize(elem_size, [&](auto t) {
    using T = decltype(t);
    T v;
    std::memcpy(&v, &value, sizeof(T));
    std::fill_n(static_cast<T*>(out), n, v);
  });
}

namespace {

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mant = x & 0x7fffffu;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff);
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  int32_t e = exp - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t h = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

template <typename T>
uint64_t Bits(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}

}  // namespace

uint64_t EncodeScalar(DataType dtype, double v) {
  switch (dtype) {
    case DataType::kFloat32:
      return Bits(static_cast<float>(v));
    case DataType::kFloat64:
      return Bits(v);
    case DataType::kInt64:
      return Bits(static_cast<int64_t>(v));
    case DataType::kInt32:
      return Bits(static_cast<int32_t>(v));
    case DataType::kBool:
      return Bits(static_cast<uint8_t>(v != 0));
    case DataType::kUint8:
      return Bits(static_cast<uint8_t>(v));
    case DataType::kInt8:
      return Bits(static_cast<int8_t>(v));
    case DataType::kFloat16:
      return Bits(FloatToHalf(static_cast<float>(v)));
  }
  return 0;
}

uint64_t ScalarBits(const Tensor& t) {
  uint64_t b = 0;
  if (t.numel() > 0) std::memcpy(&b, t.raw(), DataTypeSize(t.dtype()));
  return b;
}

namespace {

// Drops size-1 dims and merges dim i into i+1 where the input strides are contiguous across them.
void SimplifyStrided(std::vector<int64_t>* shape, std::vector<int64_t>* strides) {
  std::vector<int64_t> s, st;
  for (size_t i = 0; i < shape->size(); ++i) {
    if ((*shape)[i] == 1) continue;
    if (!s.empty() && st.back() == (*strides)[i] * (*shape)[i]) {
      s.back() *= (*shape)[i];
      st.back() = (*strides)[i];
    } else {
      s.push_back((*shape)[i]);
      st.push_back((*strides)[i]);
    }
  }
  *shape = std::move(s);
  *strides = std::move(st);
}

template <typename T>
void StridedCopyTyped(const T* in, const std::vector<int64_t>& strides, T* out,
                      const std::vector<int64_t>& shape) {
  const int r = static_cast<int>(shape.size());
  if (r == 0) {
    out[0] = in[0];
    return;
  }
  const int64_t inner = shape[r - 1], inner_stride = strides[r - 1];
  int64_t rows = 1;
  for (int i = 0; i < r - 1; ++i) rows *= shape[i];
  ParallelFor(rows, inner, [&](int64_t begin, int64_t end) {
    // Odometer over the outer dims, initialised once per chunk.
    std::vector<int64_t> idx(static_cast<size_t>(std::max(r - 1, 1)), 0);
    int64_t off = 0, rem = begin;
    for (int d = r - 2; d >= 0; --d) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
      off += idx[d] * strides[d];
    }
    T* o = out + begin * inner;
    for (int64_t row = begin; row < end; ++row, o += inner) {
      const T* src = in + off;
      if (inner_stride == 1) {
        std::memcpy(o, src, static_cast<size_t>(inner) * sizeof(T));
      } else if (inner_stride == 0) {
        std::fill_n(o, inner, *src);
      } else {
        for (int64_t j = 0; j < inner; ++j) o[j] = src[j * inner_stride];
      }
      for (int d = r - 2; d >= 0; --d) {
        off += strides[d];
        if (++idx[d] < shape[d]) break;
        off -= idx[d] * strides[d];
        idx[d] = 0;
      }
    }
  });
}

// Transposes the rows x cols block src[j*ss + i] -> dst[i*ds + j] (scalar).
template <typename T>
inline void ScalarBlock(const T* src, int64_t ss, T* dst, int64_t ds, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) {
    T* d = dst + i * ds;
    for (int64_t j = 0; j < cols; ++j) d[j] = src[j * ss + i];
  }
}

// One tile: 4x4 SSE register transposes for 4-byte elements where the tile is whole, the
// scalar loop for the ragged edges and other element sizes.
template <typename T>
inline void TransposeTile(const T* src, int64_t ss, T* dst, int64_t ds, int64_t rows,
                          int64_t cols) {
#if defined(__SSE2__)
  if constexpr (sizeof(T) == 4) {
    const int64_t r4 = rows & ~int64_t{3}, c4 = cols & ~int64_t{3};
    for (int64_t i = 0; i < r4; i += 4) {
      for (int64_t j = 0; j < c4; j += 4) {
        const float* s = reinterpret_cast<const float*>(src + j * ss + i);
        __m128 a = _mm_loadu_ps(s), b = _mm_loadu_ps(s + ss), c = _mm_loadu_ps(s + 2 * ss),
               d = _mm_loadu_ps(s + 3 * ss);
        _MM_TRANSPOSE4_PS(a, b, c, d);
        float* o = reinterpret_cast<float*>(dst + i * ds + j);
        _mm_storeu_ps(o, a);
        _mm_storeu_ps(o + ds, b);
        _mm_storeu_ps(o + 2 * ds, c);
        _mm_storeu_ps(o + 3 * ds, d);
      }
      if (c4 < cols) ScalarBlock(src + c4 * ss + i, ss, dst + i * ds + c4, ds, 4, cols - c4);
    }
    if (r4 < rows) ScalarBlock(src + r4, ss, dst + r4 * ds, ds, rows - r4, cols);
    return;
  }
#endif
  ScalarBlock(src, ss, dst, ds, rows, cols);
}

// The tiled 2-D transpose core: for every outer index, out[ob + i*os_b + j] = in[ib + j*s_a + i]
// for i < rows (the input's innermost dim) and j < cols (the output's innermost dim). Tiles are
// small enough that the tile's input and output lines stay in L1 even when power-of-two strides
// map them to few cache sets.
template <typename T>
void TiledTranspose(const T* in, T* out, int64_t rows, int64_t cols, int64_t in_stride_a,
                    int64_t out_stride_b, const std::vector<int64_t>& outer_shape,
                    const std::vector<int64_t>& outer_in_strides,
                    const std::vector<int64_t>& outer_out_strides) {
  constexpr int64_t kTi = OPSCOPE_TILE_I, kTj = OPSCOPE_TILE_J;
  const int64_t ti = (rows + kTi - 1) / kTi, tj = (cols + kTj - 1) / kTj;
  int64_t outer = 1;
  for (int64_t d : outer_shape) outer *= d;
  const int64_t items = outer * ti * tj;
  const int no = static_cast<int>(outer_shape.size());
  ParallelFor(items, kTi * kTj, [&](int64_t begin, int64_t end) {
    for (int64_t it = begin; it < end; ++it) {
      int64_t rem = it;
      const int64_t bj = rem % tj;
      rem /= tj;
      const int64_t bi = rem % ti;
      rem /= ti;
      int64_t ioff = 0, ooff = 0;
      for (int d = no - 1; d >= 0; --d) {
        int64_t x = rem % outer_shape[d];
        rem /= outer_shape[d];
        ioff += x * outer_in_strides[d];
        ooff += x * outer_out_strides[d];
      }
      const int64_t i0 = bi * kTi, j0 = bj * kTj;
      TransposeTile(in + ioff + j0 * in_stride_a + i0, in_stride_a,
                    out + ooff + i0 * out_stride_b + j0, out_stride_b, std::min(kTi, rows - i0),
                    std::min(kTj, cols - j0));
    }
  });
}

}  // namespace

void StridedCopy(const void* in, const std::vector<int64_t>& in_strides, void* out,
                 const std::vector<int64_t>& out_shape, size_t elem_size) {
  for (int64_t d : out_shape)
    if (d == 0) return;
  std::vector<int64_t> shape = out_shape, strides = in_strides;
  SimplifyStrided(&shape, &strides);
  DispatchBySize(elem_size, [&](auto t) {
    using T = decltype(t);
    StridedCopyTyped(static_cast<const T*>(in), strides, static_cast<T*>(out), shape);
  });
}

void PermuteCopy(const void* in, const std::vector<int64_t>& in_shape,
                 const std::vector<int64_t>& perm, void* out, size_t elem_size) {
  const int r0 = static_cast<int>(in_shape.size());
  int64_t n = 1;
  for (int64_t d : in_shape) n *= d;
  if (n == 0) return;
  // Drop size-1 input dims, then merge input dims that stay adjacent and in order in perm.
  std::vector<int> keep_id(r0, -1);
  std::vector<int64_t> shape1;
  for (int i = 0; i < r0; ++i)
    if (in_shape[i] != 1) {
      keep_id[i] = static_cast<int>(shape1.size());
      shape1.push_back(in_shape[i]);
    }
  std::vector<int> perm1;
  for (int i = 0; i < r0; ++i)
    if (keep_id[perm[i]] >= 0) perm1.push_back(keep_id[perm[i]]);
  // Groups: a run perm1[k], perm1[k]+1, ... is one merged dim.
  const int r1 = static_cast<int>(perm1.size());
  std::vector<int> group_of(r1, -1);  // input dim -> group id (ordered by output position)
  std::vector<std::vector<int>> groups;
  for (int k = 0; k < r1; ++k) {
    if (k > 0 && perm1[k] == perm1[k - 1] + 1) {
      groups.back().push_back(perm1[k]);
    } else {
      groups.push_back({perm1[k]});
    }
  }
  // Merged input order: groups sorted by their first input dim.
  std::vector<int> order(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) order[g] = static_cast<int>(g);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return groups[a][0] < groups[b][0]; });
  const int r = static_cast<int>(groups.size());
  std::vector<int64_t> shape(r), perm_m(r);
  std::vector<int> in_pos_of_group(r);
  for (int k = 0; k < r; ++k) {
    int64_t s = 1;
    for (int d : groups[order[k]]) s *= shape1[d];
    shape[k] = s;
    in_pos_of_group[order[k]] = k;
  }
  for (int g = 0; g < r; ++g) perm_m[g] = in_pos_of_group[g];
  bool identity = true;
  for (int k = 0; k < r; ++k) identity = identity && perm_m[k] == k;
  if (identity) {
    std::memcpy(out, in, static_cast<size_t>(n) * elem_size);
    return;
  }
  const std::vector<int64_t> in_strides = ContiguousStrides(shape);
  std::vector<int64_t> out_shape(r), permuted_strides(r);
  for (int k = 0; k < r; ++k) {
    out_shape[k] = shape[perm_m[k]];
    permuted_strides[k] = in_strides[perm_m[k]];
  }
  const int64_t rows = shape[r - 1];  // input innermost dim
  const int64_t a = perm_m[r - 1];    // input dim that becomes output innermost
  const int64_t cols = shape[a];
  // The innermost dim moves (it cannot stay: merging would have fused it). Tiles pay off
  // when both the input and output rows are long enough; otherwise use the strided path.
  if (perm_m[r - 1] == r - 1 || rows < 4 || cols < 4) {
    StridedCopy(in, permuted_strides, out, out_shape, elem_size);
    return;
  }
  const std::vector<int64_t> out_strides = ContiguousStrides(out_shape);
  int b = 0;
  while (perm_m[b] != r - 1) ++b;
  std::vector<int64_t> outer_shape, outer_in, outer_out;
  for (int k = 0; k < r - 1; ++k) {
    if (k == b) continue;
    outer_shape.push_back(out_shape[k]);
    outer_in.push_back(permuted_strides[k]);
    outer_out.push_back(out_strides[k]);
  }
  DispatchBySize(elem_size, [&](auto t) {
    using T = decltype(t);
    TiledTranspose(static_cast<const T*>(in), static_cast<T*>(out), rows, cols, in_strides[a],
                   out_strides[b], outer_shape, outer_in, outer_out);
  });
}

void BroadcastCopy(const void* in, const std::vector<int64_t>& in_shape, void* out,
                   const std::vector<int64_t>& out_shape, size_t elem_size) {
  StridedCopy(in, BroadcastStrides(in_shape, out_shape), out, out_shape, elem_size);
}

}  // namespace opscope::engine
