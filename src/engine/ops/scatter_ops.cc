// ScatterND, ScatterElements and the deprecated Scatter (opset 9-10, = ScatterElements without
// reduction). The output starts as a copy of data; updates are applied in index order so that
// duplicate indices behave as ONNX's reference (last write wins for reduction none). Indices are
// validated up front. Reductions add/mul (opset 16) and min/max (opset 18) are typed per dtype.
#include <algorithm>
#include <cstring>

#include "engine/ops/common.h"
#include "engine/ops/layout_copy.h"

namespace opscope::engine {
namespace {

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

StatusOr<Reduction> ParseReduction(const Node& n) {
  std::string r = n.attrs.String("reduction", "none");
  if (r == "none") return Reduction::kNone;
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max") return Reduction::kMax;
  if (r == "min") return Reduction::kMin;
  return NodeError(n, "unknown reduction '" + r + "' (none, add, mul, max, min)");
}

template <typename T>
inline void Apply(Reduction red, T* dst, const T* src, int64_t n) {
  switch (red) {
    case Reduction::kNone:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(T));
      break;
    case Reduction::kAdd:
      for (int64_t i = 0; i < n; ++i) dst[i] = dst[i] + src[i];
      break;
    case Reduction::kMul:
      for (int64_t i = 0; i < n; ++i) dst[i] = dst[i] * src[i];
      break;
    case Reduction::kMax:
      for (int64_t i = 0; i < n; ++i) dst[i] = std::max(dst[i], src[i]);
      break;
    case Reduction::kMin:
      for (int64_t i = 0; i < n; ++i) dst[i] = std::min(dst[i], src[i]);
      break;
  }
}

// Calls fn(T{}) with the arithmetic type of `dt` (reductions need real arithmetic, not bytes).
template <typename F>
bool DispatchArith(DataType dt, F&& fn) {
  switch (dt) {
    case DataType::kFloat32:
      fn(float{});
      return true;
    case DataType::kFloat64:
      fn(double{});
      return true;
    case DataType::kInt64:
      fn(int64_t{});
      return true;
    case DataType::kInt32:
      fn(int32_t{});
      return true;
    case DataType::kInt8:
      fn(int8_t{});
      return true;
    case DataType::kUint8:
      fn(uint8_t{});
      return true;
    case DataType::kBool:
      fn(uint8_t{});
      return true;
    default:
      return false;
  }
}

Status CheckCommon(const Node& n, const KernelContext& ctx, std::vector<int64_t>* idx) {
  for (int i = 0; i < 3; ++i)
    if (!ctx.input(i)) return NodeError(n, "missing required input " + std::to_string(i));
  const Tensor& it = *ctx.input(1);
  if (it.dtype() != DataType::kInt64 && it.dtype() != DataType::kInt32)
    return NodeError(n, "indices must be int32 or int64");
  if (ctx.input(2)->dtype() != ctx.input(0)->dtype())
    return NodeError(n, "updates and data have different types");
  *idx = ReadInts(it);
  return Status::Ok();
}

class ScatterNDKernel : public Kernel {
 public:
  ScatterNDKernel(const Node& n, Reduction red) : node_(n), red_(red) {}
  Status Run(KernelContext& ctx) override {
    std::vector<int64_t> idx;
    OPSCOPE_RETURN_IF_ERROR(CheckCommon(node_, ctx, &idx));
    const Tensor &x = *ctx.input(0), &it = *ctx.input(1), &up = *ctx.input(2);
    const int64_t r = x.rank(), q = it.rank();
    if (q < 1) return NodeError(node_, "indices must have rank >= 1");
    const int64_t k = it.dim(-1);
    if (k < 1 || k > r)
      return NodeError(node_, "indices last dim " + std::to_string(k) + " must be in [1, " +
                                  std::to_string(r) + "]");
    std::vector<int64_t> want(it.shape().begin(), it.shape().end() - 1);
    want.insert(want.end(), x.shape().begin() + k, x.shape().end());
    if (up.shape() != want)
      return NodeError(
          node_, "updates shape " + ShapeString(up.shape()) + " must be " + ShapeString(want));
    int64_t slice = 1;
    for (int64_t d = k; d < r; ++d) slice *= x.dim(static_cast<int>(d));
    const std::vector<int64_t> ds = ContiguousStrides(x.shape());
    const int64_t tuples = static_cast<int64_t>(idx.size()) / k;
    std::vector<int64_t> offs(static_cast<size_t>(tuples));
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = 0;
      for (int64_t j = 0; j < k; ++j) {
        int64_t v = idx[t * k + j];
        const int64_t dim = x.dim(static_cast<int>(j));
        if (v < 0) v += dim;
        if (v < 0 || v >= dim)
          return NodeError(node_, "index " + std::to_string(idx[t * k + j]) +
                                      " out of range for axis " + std::to_string(j) + " of size " +
                                      std::to_string(dim));
        off += v * ds[j];
      }
      offs[t] = off;
    }
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
    CopyTensorData(x, y);
    auto run = [&](auto tag) {
      using T = decltype(tag);
      T* dst = static_cast<T*>(y->raw());
      const T* src = static_cast<const T*>(up.raw());
      for (int64_t t = 0; t < tuples; ++t) Apply(red_, dst + offs[t], src + t * slice, slice);
    };
    if (red_ == Reduction::kNone) {
      DispatchBySize(DataTypeSize(x.dtype()), run);
    } else if (!DispatchArith(x.dtype(), run)) {
      return NodeError(node_,
                       std::string("reduction not supported for ") + DataTypeName(x.dtype()));
    }
    return Status::Ok();
  }

 private:
  Node node_;
  Reduction red_;
};

class ScatterElementsKernel : public Kernel {
 public:
  ScatterElementsKernel(const Node& n, Reduction red)
      : node_(n), red_(red), axis_(n.attrs.Int("axis", 0)) {}
  Status Run(KernelContext& ctx) override {
    std::vector<int64_t> idx;
    OPSCOPE_RETURN_IF_ERROR(CheckCommon(node_, ctx, &idx));
    const Tensor &x = *ctx.input(0), &it = *ctx.input(1), &up = *ctx.input(2);
    const int r = x.rank();
    if (it.rank() != r || up.shape() != it.shape())
      return NodeError(
          node_, "indices " + ShapeString(it.shape()) + " and updates " + ShapeString(up.shape()) +
                     " must have the same shape and the rank of data " + ShapeString(x.shape()));
    int64_t axis = axis_;
    if (!NormalizeAxis(&axis, r))
      return NodeError(
          node_, "axis " + std::to_string(axis_) + " out of range for rank " + std::to_string(r));
    for (int d = 0; d < r; ++d)
      if (d != axis && it.dim(d) > x.dim(d))
        return NodeError(node_, "indices shape " + ShapeString(it.shape()) +
                                    " exceeds data shape " + ShapeString(x.shape()));
    const int64_t dim = x.dim(static_cast<int>(axis));
    const std::vector<int64_t> ds = ContiguousStrides(x.shape());
    // Destination offset of every update element.
    std::vector<int64_t> offs(idx.size());
    std::vector<int64_t> c(static_cast<size_t>(r), 0);
    for (size_t e = 0; e < idx.size(); ++e) {
      int64_t v = idx[e];
      if (v < 0) v += dim;
      if (v < 0 || v >= dim)
        return NodeError(node_, "index " + std::to_string(idx[e]) + " out of range [" +
                                    std::to_string(-dim) + ", " + std::to_string(dim - 1) +
                                    "] on axis " + std::to_string(axis));
      int64_t off = 0;
      for (int d = 0; d < r; ++d) off += (d == axis ? v : c[d]) * ds[d];
      offs[e] = off;
      for (int d = r - 1; d >= 0; --d) {
        if (++c[d] < it.dim(d)) break;
        c[d] = 0;
      }
    }
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
    CopyTensorData(x, y);
    auto run = [&](auto tag) {
      using T = decltype(tag);
      T* dst = static_cast<T*>(y->raw());
      const T* src = static_cast<const T*>(up.raw());
      for (size_t e = 0; e < offs.size(); ++e) Apply(red_, dst + offs[e], src + e, 1);
    };
    if (red_ == Reduction::kNone) {
      DispatchBySize(DataTypeSize(x.dtype()), run);
    } else if (!DispatchArith(x.dtype(), run)) {
      return NodeError(node_,
                       std::string("reduction not supported for ") + DataTypeName(x.dtype()));
    }
    return Status::Ok();
  }

 private:
  Node node_;
  Reduction red_;
  int64_t axis_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_ScatterND(const Node& node) {
  OPSCOPE_ASSIGN_OR_RETURN(Reduction red, ParseReduction(node));
  return std::unique_ptr<Kernel>(new ScatterNDKernel(node, red));
}

StatusOr<std::unique_ptr<Kernel>> Create_ScatterElements(const Node& node) {
  OPSCOPE_ASSIGN_OR_RETURN(Reduction red, ParseReduction(node));
  return std::unique_ptr<Kernel>(new ScatterElementsKernel(node, red));
}

StatusOr<std::unique_ptr<Kernel>> Create_Scatter(const Node& node) {
  return std::unique_ptr<Kernel>(new ScatterElementsKernel(node, Reduction::kNone));
}

}  // namespace opscope::engine
