// Gather, GatherElements, GatherND. Indices are validated (negative values wrap once, anything
// else out of range is an error naming the offending index) before any data moves; the copies
// then run by element size over the pool.
#include <cstring>

#include "engine/ops/common.h"
#include "engine/ops/layout_copy.h"

namespace opscope::engine {
namespace {

Status ReadIndices(const Node& n, const Tensor* t, std::vector<int64_t>* out) {
  if (!t) return NodeError(n, "missing required input 'indices'");
  if (t->dtype() != DataType::kInt64 && t->dtype() != DataType::kInt32)
    return NodeError(
        n, std::string("indices must be int32 or int64, got ") + DataTypeName(t->dtype()));
  *out = ReadInts(*t);
  return Status::Ok();
}

// Wraps a negative index once and checks [0, dim).
inline bool FixIndex(int64_t* i, int64_t dim) {
  if (*i < 0) *i += dim;
  return *i >= 0 && *i < dim;
}

Status IndexError(const Node& n, int64_t value, int64_t dim, int64_t axis) {
  return NodeError(n, "index " + std::to_string(value) + " out of range [" + std::to_string(-dim) +
                          ", " + std::to_string(dim - 1) + "] on axis " + std::to_string(axis));
}

class GatherKernel : public Kernel {
 public:
  explicit GatherKernel(const Node& n) : node_(n), axis_(n.attrs.Int("axis", 0)) {}
  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "missing required input 'data'");
    std::vector<int64_t> idx;
    OPSCOPE_RETURN_IF_ERROR(ReadIndices(node_, ctx.input(1), &idx));
    const Tensor& it = *ctx.input(1);
    int64_t axis = axis_;
    if (!NormalizeAxis(&axis, x->rank()))
      return NodeError(node_, "axis " + std::to_string(axis_) + " out of range for rank " +
                                  std::to_string(x->rank()));
    const int64_t dim = x->dim(static_cast<int>(axis));
    for (int64_t& i : idx) {
      int64_t v = i;
      if (!FixIndex(&i, dim)) return IndexError(node_, v, dim, axis);
    }
    std::vector<int64_t> out_shape(x->shape().begin(), x->shape().begin() + axis);
    out_shape.insert(out_shape.end(), it.shape().begin(), it.shape().end());
    out_shape.insert(out_shape.end(), x->shape().begin() + axis + 1, x->shape().end());
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x->dtype(), out_shape));
    if (y->numel() == 0) return Status::Ok();
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x->dim(static_cast<int>(d));
    for (int64_t d = axis + 1; d < x->rank(); ++d) inner *= x->dim(static_cast<int>(d));
    const int64_t n = static_cast<int64_t>(idx.size());
    DispatchBySize(DataTypeSize(x->dtype()), [&](auto tag) {
      using T = decltype(tag);
      const T* src = static_cast<const T*>(x->raw());
      T* dst = static_cast<T*>(y->raw());
      ParallelFor(outer * n, inner, [&](int64_t b, int64_t e) {
        int64_t o = b / n, j = b - o * n;
        for (int64_t k = b; k < e; ++k) {
          const T* s = src + (o * dim + idx[j]) * inner;
          T* d = dst + k * inner;
          if (inner == 1)
            *d = *s;
          else
            std::memcpy(d, s, static_cast<size_t>(inner) * sizeof(T));
          if (++j == n) {
            j = 0;
            ++o;
          }
        }
      });
    });
    return Status::Ok();
  }
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    double b = 0;
    for (const TensorDesc& d : out) b += 2 * d.nbytes();  // gathered rows read + written
    if (in.size() > 1) b += in[1].nbytes();
    return {0, b};
  }

 private:
  Node node_;
  int64_t axis_;
};

class GatherElementsKernel : public Kernel {
 public:
  explicit GatherElementsKernel(const Node& n) : node_(n), axis_(n.attrs.Int("axis", 0)) {}
  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "missing required input 'data'");
    std::vector<int64_t> idx;
    OPSCOPE_RETURN_IF_ERROR(ReadIndices(node_, ctx.input(1), &idx));
    const Tensor& it = *ctx.input(1);
    const int r = x->rank();
    if (it.rank() != r)
      return NodeError(node_, "indices rank " + std::to_string(it.rank()) +
                                  " differs from data rank " + std::to_string(r));
    int64_t axis = axis_;
    if (!NormalizeAxis(&axis, r))
      return NodeError(
          node_, "axis " + std::to_string(axis_) + " out of range for rank " + std::to_string(r));
    for (int d = 0; d < r; ++d)
      if (d != axis && it.dim(d) > x->dim(d))
        return NodeError(node_, "indices shape " + ShapeString(it.shape()) +
                                    " exceeds data shape " + ShapeString(x->shape()) +
                                    " outside axis " + std::to_string(axis));
    const int64_t dim = x->dim(static_cast<int>(axis));
    for (int64_t& i : idx) {
      int64_t v = i;
      if (!FixIndex(&i, dim)) return IndexError(node_, v, dim, axis);
    }
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x->dtype(), it.shape()));
    if (y->numel() == 0) return Status::Ok();
    const std::vector<int64_t> ds = ContiguousStrides(x->shape());
    const std::vector<int64_t>& os = it.shape();
    const int64_t inner = os[r - 1], rows = it.numel() / inner;
    const int64_t s_axis = ds[axis], s_last = ds[r - 1];
    const bool axis_last = axis == r - 1;
    DispatchBySize(DataTypeSize(x->dtype()), [&](auto tag) {
      using T = decltype(tag);
      const T* src = static_cast<const T*>(x->raw());
      T* dst = static_cast<T*>(y->raw());
      ParallelFor(rows, inner, [&](int64_t b, int64_t e) {
        for (int64_t row = b; row < e; ++row) {
          // Offset of this row in data, with the axis coordinate left out.
          int64_t rem = row, base = 0;
          for (int d = r - 2; d >= 0; --d) {
            const int64_t c = rem % os[d];
            rem /= os[d];
            if (d != axis) base += c * ds[d];
          }
          const int64_t* ir = idx.data() + row * inner;
          T* o = dst + row * inner;
          if (axis_last) {
            for (int64_t j = 0; j < inner; ++j) o[j] = src[base + ir[j]];
          } else {
            for (int64_t j = 0; j < inner; ++j) o[j] = src[base + j * s_last + ir[j] * s_axis];
          }
        }
      });
    });
    return Status::Ok();
  }

 private:
  Node node_;
  int64_t axis_;
};

class GatherNDKernel : public Kernel {
 public:
  explicit GatherNDKernel(const Node& n) : node_(n), batch_dims_(n.attrs.Int("batch_dims", 0)) {}
  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "missing required input 'data'");
    std::vector<int64_t> idx;
    OPSCOPE_RETURN_IF_ERROR(ReadIndices(node_, ctx.input(1), &idx));
    const Tensor& it = *ctx.input(1);
    const int64_t r = x->rank(), q = it.rank(), b = batch_dims_;
    if (r < 1 || q < 1) return NodeError(node_, "data and indices must have rank >= 1");
    if (b < 0 || b >= std::min(r, q))
      return NodeError(
          node_, "batch_dims " + std::to_string(b) + " must be < min(rank(data), rank(indices))");
    for (int64_t d = 0; d < b; ++d)
      if (x->dim(static_cast<int>(d)) != it.dim(static_cast<int>(d)))
        return NodeError(node_, "batch dims of data " + ShapeString(x->shape()) + " and indices " +
                                    ShapeString(it.shape()) + " differ");
    const int64_t k = it.dim(-1);
    if (k < 1 || k > r - b)
      return NodeError(node_, "indices last dim " + std::to_string(k) + " must be in [1, " +
                                  std::to_string(r - b) + "]");
    std::vector<int64_t> out_shape(it.shape().begin(), it.shape().end() - 1);
    out_shape.insert(out_shape.end(), x->shape().begin() + b + k, x->shape().end());
    int64_t batch = 1, slice = 1;
    for (int64_t d = 0; d < b; ++d) batch *= x->dim(static_cast<int>(d));
    for (int64_t d = b + k; d < r; ++d) slice *= x->dim(static_cast<int>(d));
    const std::vector<int64_t> ds = ContiguousStrides(x->shape());
    const int64_t batch_stride = b > 0 ? ds[b - 1] : 0;
    const int64_t tuples = batch > 0 ? static_cast<int64_t>(idx.size()) / k : 0;
    const int64_t per_batch = batch > 0 ? tuples / batch : 0;
    std::vector<int64_t> offs(static_cast<size_t>(tuples));
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = (t / std::max<int64_t>(per_batch, 1)) * batch_stride;
      for (int64_t j = 0; j < k; ++j) {
        int64_t v = idx[t * k + j];
        const int64_t dim = x->dim(static_cast<int>(b + j));
        if (!FixIndex(&v, dim)) return IndexError(node_, idx[t * k + j], dim, b + j);
        off += v * ds[b + j];
      }
      offs[t] = off;
    }
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x->dtype(), out_shape));
    if (y->numel() == 0) return Status::Ok();
    DispatchBySize(DataTypeSize(x->dtype()), [&](auto tag) {
      using T = decltype(tag);
      const T* src = static_cast<const T*>(x->raw());
      T* dst = static_cast<T*>(y->raw());
      ParallelFor(tuples, slice, [&](int64_t bg, int64_t e) {
        for (int64_t t = bg; t < e; ++t) {
          if (slice == 1)
            dst[t] = src[offs[t]];
          else
            std::memcpy(dst + t * slice, src + offs[t], static_cast<size_t>(slice) * sizeof(T));
        }
      });
    });
    return Status::Ok();
  }

 private:
  Node node_;
  int64_t batch_dims_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_Gather(const Node& node) {
  return std::unique_ptr<Kernel>(new GatherKernel(node));
}

StatusOr<std::unique_ptr<Kernel>> Create_GatherElements(const Node& node) {
  return std::unique_ptr<Kernel>(new GatherElementsKernel(node));
}

StatusOr<std::unique_ptr<Kernel>> Create_GatherND(const Node& node) {
  return std::unique_ptr<Kernel>(new GatherNDKernel(node));
}

}  // namespace opscope::engine
