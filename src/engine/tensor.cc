#include "opscope/tensor.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "engine/kernel.h"

namespace opscope::engine {

const char* DataTypeName(DataType t) {
  switch (t) {
    case DataType::kFloat32: return "float32";
    case DataType::kInt64: return "int64";
    case DataType::kInt32: return "int32";
    case DataType::kBool: return "bool";
    case DataType::kUint8: return "uint8";
    case DataType::kInt8: return "int8";
    case DataType::kFloat64: return "float64";
    case DataType::kFloat16: return "float16";
  }
  return "?";
}

size_t DataTypeSize(DataType t) {
  switch (t) {
    case DataType::kFloat32: case DataType::kInt32: return 4;
    case DataType::kInt64: case DataType::kFloat64: return 8;
    case DataType::kBool: case DataType::kUint8: case DataType::kInt8: return 1;
    case DataType::kFloat16: return 2;
  }
  return 1;
}

bool CheckedNumel(const std::vector<int64_t>& shape, int64_t* numel) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return false;
    if (__builtin_mul_overflow(n, d, &n)) return false;
  }
  *numel = n;
  return true;
}

// For shapes of memory that exists (borrowed, reshaped, described): they cannot overflow, so an
// impossible shape saturates rather than wrapping around.
static int64_t NumelOf(const std::vector<int64_t>& s) {
  int64_t n = 0;
  return CheckedNumel(s, &n) ? n : INT64_MAX;
}

Tensor::Tensor(DataType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
  size_t bytes = 0;
  if (!CheckedNumel(shape_, &numel_) ||
      __builtin_mul_overflow(static_cast<size_t>(numel_), DataTypeSize(dtype_), &bytes) ||
      bytes > SIZE_MAX - 64)
    throw std::bad_alloc();
  size_t alloc = ((bytes + 63) / 64) * 64;
  if (alloc == 0) alloc = 64;
  void* p = std::aligned_alloc(64, alloc);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, alloc);
  owner_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  data_ = p;
}

Tensor Tensor::Borrow(DataType dtype, std::vector<int64_t> shape, void* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = NumelOf(t.shape_);
  t.data_ = data;
  return t;
}

void Tensor::Reshape(std::vector<int64_t> shape) {
  shape_ = std::move(shape);
  numel_ = NumelOf(shape_);
}

int64_t TensorDesc::numel() const { return NumelOf(shape); }
double TensorDesc::nbytes() const { return static_cast<double>(numel()) * DataTypeSize(dtype); }

double CompulsoryBytes(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out) {
  double b = 0;
  for (const auto& d : in) b += d.nbytes();
  for (const auto& d : out) b += d.nbytes();
  return b;
}

}  // namespace opscope::engine
