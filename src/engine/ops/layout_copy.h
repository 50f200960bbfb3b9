// Data-movement primitives shared by the tensor-family kernels (Transpose, Slice, Expand, Tile,
// DepthToSpace, Pad, Gather, ...).
//
// Every routine works on raw bytes and dispatches on the element size (1, 2, 4 or 8 bytes), so one
// code path moves float32, int64, bool, float16, ... alike. The routines first simplify the
// problem (drop size-1 dimensions, merge dimensions that stay adjacent) so a 6-D permutation that
// really only swaps two blocks runs as a 2-D one, then pick a fast path:
//   - StridedCopy: contiguous output, arbitrary input strides (negative and zero allowed). Rows
//     whose input stride is 1 become memcpy, stride 0 becomes a fill; rows are split across
//     the OpenMP pool with ParallelFor.
//   - PermuteCopy: a transpose. When the innermost input dimension stays innermost it is a
//     blocked StridedCopy; otherwise a cache-tiled 2-D transpose between the input's innermost
//     dimension and the output's innermost dimension, repeated over all other dimensions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "engine/ops/common.h"
#include "opscope/tensor.h"

namespace opscope::engine {

// Calls fn(T{}) with T an unsigned integer type of `elem_size` bytes (1, 2, 4 or 8).
template <typename F>
void DispatchBySize(size_t elem_size, F&& fn) {
  switch (elem_size) {
    case 1:
      fn(uint8_t{});
      break;
    case 2:
      fn(uint16_t{});
      break;
    case 4:
      fn(uint32_t{});
      break;
    default:
      fn(uint64_t{});
      break;
  }
}

// Row-major contiguous strides (in elements) of `shape`.
std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& shape);

// out[i0..ik] = in[sum_d i_d * in_strides[d]] for every index of out_shape; `in` points at the
// element of index (0, ..., 0). Strides are in elements and may be zero or negative.
void StridedCopy(const void* in, const std::vector<int64_t>& in_strides, void* out,
                 const std::vector<int64_t>& out_shape, size_t elem_size);

// out = transpose(in, perm): out.shape[i] = in_shape[perm[i]]. `perm` must be a permutation.
void PermuteCopy(const void* in, const std::vector<int64_t>& in_shape,
                 const std::vector<int64_t>& perm, void* out, size_t elem_size);

// Numpy broadcast of `in` (in_shape, right-aligned) to out_shape (must be compatible).
void BroadcastCopy(const void* in, const std::vector<int64_t>& in_shape, void* out,
                   const std::vector<int64_t>& out_shape, size_t elem_size);

// Fills `n` elements of `elem_size` bytes with the bit pattern in `value` (little-endian low
// bytes).
void FillElements(void* out, int64_t n, size_t elem_size, uint64_t value);

// The bit pattern of the number `v` stored as `dtype` (float16 rounded to nearest even), for
// fills such as Pad's constant value given as a float attribute.
uint64_t EncodeScalar(DataType dtype, double v);

// The bit pattern of element 0 of `t` (for scalar tensor inputs of any dtype); 0 if empty.
uint64_t ScalarBits(const Tensor& t);

}  // namespace opscope::engine
