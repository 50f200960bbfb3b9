// A dense, row-major tensor owning (or borrowing) 64-byte-aligned memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace opscope::engine {

enum class DataType : uint8_t {
  kFloat32,
  kInt64,
  kInt32,
  kBool,
  kUint8,
  kInt8,
  kFloat64,
  kFloat16
};

const char* DataTypeName(DataType t);
size_t DataTypeSize(DataType t);

// The element count of `shape` into *numel; false (and *numel untouched) when a dimension is
// negative or the running product, left to right, overflows int64.
bool CheckedNumel(const std::vector<int64_t>& shape, int64_t* numel);

class Tensor {
 public:
  Tensor() = default;
  // Allocates, zero-filled; throws std::bad_alloc when the shape has a negative dimension or
  // its size overflows (callers check shapes from files first, see CheckedNumel).
  Tensor(DataType dtype, std::vector<int64_t> shape);
  static Tensor Borrow(DataType dtype, std::vector<int64_t> shape, void* data);

  DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_[i < 0 ? i + rank() : i]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * DataTypeSize(dtype_); }
  bool empty_data() const { return data_ == nullptr; }
  // True when this tensor allocated its memory and no other Tensor shares it (copies share).
  bool owns_unshared() const { return owner_ && owner_.use_count() == 1; }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <typename T>
  T* data() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }

  // Changes the shape without touching data (numel must match).
  void Reshape(std::vector<int64_t> shape);

 private:
  DataType dtype_ = DataType::kFloat32;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
};

}  // namespace opscope::engine
