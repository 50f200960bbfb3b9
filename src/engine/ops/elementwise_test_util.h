// Naive reference helpers for the elementwise/reduce/softmax/misc kernel tests: index
// arithmetic done the obvious way (a division per dimension per element), so the optimized
// kernels are checked against code that is slow but plainly right.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "engine/testing/kernel_runner.h"
#include "opscope/tensor.h"

namespace opscope::engine::testing {

inline std::vector<int64_t> Unravel(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

inline int64_t Ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
  return flat;
}

// Flat index into `in_shape` of the element that broadcasts to output index `out_idx`.
inline int64_t BroadcastSource(const std::vector<int64_t>& out_idx,
                               const std::vector<int64_t>& in_shape) {
  const size_t off = out_idx.size() - in_shape.size();
  int64_t flat = 0;
  for (size_t d = 0; d < in_shape.size(); ++d)
    flat = flat * in_shape[d] + (in_shape[d] == 1 ? 0 : out_idx[off + d]);
  return flat;
}

inline std::vector<int64_t> NaiveBroadcastShape(std::vector<std::vector<int64_t>> shapes) {
  size_t r = 0;
  for (auto& s : shapes) r = std::max(r, s.size());
  std::vector<int64_t> out(r, 1);
  for (auto& s : shapes)
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t& o = out[r - s.size() + d];
      if (s[d] != 1) o = s[d];
    }
  return out;
}

template <typename T>
Tensor MakeTyped(DataType dt, std::vector<int64_t> shape, const std::vector<T>& values) {
  Tensor t(dt, std::move(shape));
  std::memcpy(t.raw(), values.data(), std::min(values.size() * sizeof(T), t.nbytes()));
  return t;
}

template <typename T>
Tensor RandomTyped(DataType dt, std::vector<int64_t> shape, uint32_t seed, double lo, double hi) {
  Tensor t(dt, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  T* p = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if constexpr (std::is_integral_v<T>)
      p[i] = static_cast<T>(std::floor(d(rng)));
    else
      p[i] = static_cast<T>(d(rng));
  }
  return t;
}

inline Tensor RandomBool(std::vector<int64_t> shape, uint32_t seed) {
  Tensor t(DataType::kBool, std::move(shape));
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<uint8_t>()[i] = rng() & 1;
  return t;
}

// Exact comparison for non-float types, CompareFloat-like for float32/float64.
inline std::string CompareTensors(const Tensor& got, const Tensor& want, double atol = 1e-5,
                                  double rtol = 1e-5) {
  if (got.dtype() != want.dtype())
    return std::string("dtype ") + DataTypeName(got.dtype()) + " vs " + DataTypeName(want.dtype());
  if (got.shape() != want.shape()) return "shape mismatch";
  auto at = [](const Tensor& t, int64_t i) -> double {
    switch (t.dtype()) {
      case DataType::kFloat32:
        return t.data<float>()[i];
      case DataType::kFloat64:
        return t.data<double>()[i];
      case DataType::kInt64:
        return static_cast<double>(t.data<int64_t>()[i]);
      case DataType::kInt32:
        return t.data<int32_t>()[i];
      case DataType::kInt8:
        return t.data<int8_t>()[i];
      case DataType::kFloat16:
        return t.data<uint16_t>()[i];
      default:
        return t.data<uint8_t>()[i];
    }
  };
  const bool exact = got.dtype() != DataType::kFloat32 && got.dtype() != DataType::kFloat64;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double a = at(got, i), e = at(want, i);
    if (std::isnan(a) && std::isnan(e)) continue;
    bool ok = exact ? a == e : (a == e || std::fabs(a - e) <= atol + rtol * std::fabs(e));
    if (!ok)
      return "element " + std::to_string(i) + ": got " + std::to_string(a) + ", expected " +
             std::to_string(e);
  }
  return "";
}

// Runs a node and returns its outputs, failing the test on error.
inline std::vector<Tensor> MustRun(const Node& n, const std::vector<const Tensor*>& in,
                                   int repeat = 1) {
  auto r = RunKernel(n, in, repeat);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  return std::move(r).value();
}

// Expects the node to fail with a message naming it.
inline void ExpectNodeError(const Node& n, const std::vector<const Tensor*>& in,
                            const std::string& fragment = "") {
  auto r = RunKernel(n, in);
  ASSERT_FALSE(r.ok()) << n.op_type << " should have failed";
  EXPECT_NE(r.status().message().find("'" + n.name + "'"), std::string::npos)
      << r.status().message();
  if (!fragment.empty()) {
    EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
  }
}

}  // namespace opscope::engine::testing
