// Index-pattern operators: OneHot and Trilu. Both write every output element from a comparison
// of indices (no arithmetic), so their cost is traffic only. They move elements by width (1, 2, 4
// or 8 bytes), so every engine data type runs.
//
// OneHot(indices, depth, values): output rank is rank(indices) + 1 with `depth` inserted at
// `axis`; element [.., d, ..] is values[1] where indices[..] == d (a negative index counts from
// the end: d + depth) and values[0] elsewhere. Float indices are truncated to integers, as ONNX's
// cast to int64 does; an index outside [-depth, depth) gives an all-off row.
//
// Trilu(input, k): keeps the upper (upper=1, j - i >= k) or lower (upper=0, j - i <= k) triangle
// of each matrix in the last two dimensions and zeroes the rest.
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "engine/ops/common.h"
#include "engine/ops/elementwise_common.h"

namespace opscope::engine {
namespace {

// Calls f(uintN_t{}) with the unsigned type of the given element width.
template <typename F>
void VisitWidth(size_t width, F&& f) {
  switch (width) {
    case 1:
      f(uint8_t{});
      break;
    case 2:
      f(uint16_t{});
      break;
    case 4:
      f(uint32_t{});
      break;
    default:
      f(uint64_t{});
      break;
  }
}

// Reads any numeric tensor as int64 (floats truncated; NaN becomes 0 and never matches).
StatusOr<std::vector<int64_t>> ReadIndices(const Node& node, const Tensor& t) {
  if (t.dtype() == DataType::kBool || t.dtype() == DataType::kFloat16)
    return NodeError(
        node, std::string("indices of type ") + DataTypeName(t.dtype()) + " are not supported");
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  VisitNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = SafeCast<int64_t>(p[i]);
  });
  return v;
}

class OneHotKernel : public Kernel {
 public:
  OneHotKernel(const Node& node, int64_t axis) : node_(node), axis_(axis) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* ind = ctx.input(0);
    const Tensor* depth_t = ctx.input(1);
    const Tensor* values = ctx.input(2);
    if (!ind || !depth_t || !values)
      return NodeError(node_, "expects 3 inputs (indices, depth, values)");
    if (depth_t->numel() != 1)
      return NodeError(node_,
                       "depth must hold one value, got shape " + ShapeString(depth_t->shape()));
    if (values->numel() != 2)
      return NodeError(node_, "values must hold 2 elements [off, on], got shape " +
                                  ShapeString(values->shape()));
    const double dd = depth_t->dtype() == DataType::kFloat16
                          ? HalfToFloat(depth_t->data<uint16_t>()[0])
                          : ReadScalar(*depth_t);
    if (!(dd >= 1) || dd > 1e12)
      return NodeError(node_, "depth must be a positive number, got " + std::to_string(dd));
    const int64_t depth = static_cast<int64_t>(dd);
    const int64_t rank = ind->rank() + 1;
    int64_t axis = axis_;
    if (!NormalizeAxis(&axis, rank))
      return NodeError(node_, "axis " + std::to_string(axis_) +
                                  " is out of range for output rank " + std::to_string(rank));
    OPSCOPE_ASSIGN_OR_RETURN(std::vector<int64_t> idx, ReadIndices(node_, *ind));
    std::vector<int64_t> shape = ind->shape();
    shape.insert(shape.begin() + axis, depth);
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, values->dtype(), shape));
    if (out->numel() == 0) return Status::Ok();  // no walk over empty outer dimensions
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < ind->rank(); ++d) (d < axis ? outer : inner) *= ind->shape()[d];
    VisitWidth(DataTypeSize(values->dtype()), [&](auto tag) {
      using T = decltype(tag);
      const T off = values->data<T>()[0], on = values->data<T>()[1];
      T* y = out->data<T>();
      ParallelFor(outer, depth * inner, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          T* yo = y + o * depth * inner;
          for (int64_t i = 0; i < depth * inner; ++i) yo[i] = off;
          for (int64_t i = 0; i < inner; ++i) {
            int64_t d = idx[o * inner + i];
            if (d < 0) d += depth;
            if (d >= 0 && d < depth) yo[d * inner + i] = on;
          }
        }
      });
    });
    return Status::Ok();
  }

  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    return {0, CompulsoryBytes(in, out)};
  }

 private:
  Node node_;
  int64_t axis_;
};

class TriluKernel : public Kernel {
 public:
  TriluKernel(const Node& node, bool upper) : node_(node), upper_(upper) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "input 0 is missing");
    if (x->rank() < 2)
      return NodeError(node_, "input must have rank >= 2, got shape " + ShapeString(x->shape()));
    int64_t k = 0;
    if (const Tensor* kt = ctx.input(1)) {
      if (kt->numel() != 1 || (kt->dtype() != DataType::kInt64 && kt->dtype() != DataType::kInt32))
        return NodeError(node_, "k must be one int64 value, got " +
                                    std::string(DataTypeName(kt->dtype())) + " of shape " +
                                    ShapeString(kt->shape()));
      k = ReadInts(*kt)[0];
    }
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, x->dtype(), x->shape()));
    const int64_t rows = x->shape()[x->rank() - 2], cols = x->shape()[x->rank() - 1];
    const int64_t mats = rows * cols == 0 ? 0 : x->numel() / (rows * cols);
    VisitWidth(DataTypeSize(x->dtype()), [&](auto tag) {
      using T = decltype(tag);
      const T* src = x->data<T>();
      T* dst = out->data<T>();
      ParallelFor(mats * rows, cols, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const int64_t i = r % rows;
          // Kept columns: j >= i + k (upper) or j <= i + k (lower), clamped to [0, cols].
          const int64_t lo = upper_ ? std::clamp<int64_t>(i + k, 0, cols) : 0;
          const int64_t hi = upper_ ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
          const T* s = src + r * cols;
          T* d = dst + r * cols;
          for (int64_t j = 0; j < cols; ++j) d[j] = j >= lo && j < hi ? s[j] : T(0);
        }
      });
    });
    return Status::Ok();
  }

  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    return {0, CompulsoryBytes(in, out)};
  }

 private:
  Node node_;
  bool upper_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_OneHot(const Node& n) {
  return std::unique_ptr<Kernel>(std::make_unique<OneHotKernel>(n, n.attrs.Int("axis", -1)));
}

StatusOr<std::unique_ptr<Kernel>> Create_Trilu(const Node& n) {
  const int64_t upper = n.attrs.Int("upper", 1);
  if (upper != 0 && upper != 1)
    return NodeError(n, "attribute upper must be 0 or 1, got " + std::to_string(upper));
  return std::unique_ptr<Kernel>(std::make_unique<TriluKernel>(n, upper == 1));
}

}  // namespace opscope::engine
