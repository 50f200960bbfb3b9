// Helpers shared by the kernels: node-scoped errors, broadcasting, axes, integer inputs, and a
// parallel-for on the engine's OpenMP pool (the same pool oneDNN uses).
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/graph.h"
#include "engine/kernel.h"

namespace opscope::engine {

// "node 'Conv_12' (Conv): <msg>"
// The largest spatial size, kernel extent, dilation or pad that the geometry arithmetic of
// convolutions, pools, Col2Im and Pad accepts. An empty tensor may carry any other dim (a
// [N, N, 2^63-1, 0] input holds no data), and sums and products of such sizes overflow int64;
// larger ones fail with one line naming the node.
constexpr int64_t kMaxGeometrySize = int64_t{1} << 40;

inline Status NodeError(const Node& n, const std::string& msg) {
  return InvalidArgument("node '" + n.name + "' (" + n.op_type + "): " + msg);
}

// "[1,3,224,224]" for error messages.
inline std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// The element count of a shape: 0 when any dimension is 0 (an empty tensor may carry any other
// dims, and their running product can overflow: [7, 2^31-1, 2^31-1, 0] out of a broadcast, found
// by model_struct_fuzz), and INT64_MAX when a non-empty shape's count overflows int64 (no such
// tensor can be allocated: KernelContext::Output refuses its shape).
inline int64_t Numel(const std::vector<int64_t>& s) {
  if (std::find(s.begin(), s.end(), int64_t{0}) != s.end()) return 0;
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  return n;
}

// Normalizes a possibly negative axis for a tensor of rank `rank`; false if out of range.
inline bool NormalizeAxis(int64_t* axis, int64_t rank) {
  if (*axis < -rank || *axis >= rank) return false;
  if (*axis < 0) *axis += rank;
  return true;
}

// Numpy-style broadcast of two shapes; false if incompatible.
bool BroadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                     std::vector<int64_t>* out);
// Strides of `in` (right-aligned into rank of `out`) with 0 where broadcast.
std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& in,
                                      const std::vector<int64_t>& out);

// Reads an int64 or int32 tensor as int64 values.
std::vector<int64_t> ReadInts(const Tensor& t);
// Reads a float/double/int tensor's first element as double (for scalar inputs like Clip min).
double ReadScalar(const Tensor& t);

// Runs fn(begin, end) over [0, n) split across the pool when n * cost_per_item is large enough
// to pay for the fork (~20k elementary operations per thread).
template <typename F>
void ParallelFor(int64_t n, int64_t cost_per_item, F&& fn) {
  int threads = omp_get_max_threads();
  if (threads <= 1 || n * std::max<int64_t>(cost_per_item, 1) < 32768 || n < 2) {
    fn(int64_t{0}, n);
    return;
  }
  int64_t chunks = std::min<int64_t>(threads, n);
#pragma omp parallel for num_threads(chunks) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t b = n * c / chunks, e = n * (c + 1) / chunks;
    if (b < e) fn(b, e);
  }
}

// Instruction sets that the engine's hottest loops are compiled for a second and third time
// ([[gnu::target]]; the engine itself is built for baseline x86-64). BestIsa() is the best one
// this CPU has, capped by the environment variable OPSCOPE_MAX_ISA=avx2 or =baseline (read once;
// the tests use it to run every variant on one machine). kBaseline on other architectures.
enum class Isa { kBaseline, kAvx2, kAvx512 };
Isa BestIsa();

// Copies a tensor's data into an output of the same dtype (Identity-like ops).
void CopyTensorData(const Tensor& src, Tensor* dst);

}  // namespace opscope::engine
