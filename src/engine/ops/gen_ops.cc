// Generators: Constant, ConstantOfShape, Range, NonZero (outputs whose content or size does not
// come from copying an input).
#include <cmath>
#include <cstring>

#include "engine/ops/common.h"
#include "engine/ops/layout_copy.h"

namespace opscope::engine {
namespace {

class ConstantKernel : public Kernel {
 public:
  ConstantKernel(Tensor value) : value_(std::move(value)) {}
  Status Run(KernelContext& ctx) override {
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, value_.dtype(), value_.shape()));
    CopyTensorData(value_, y);
    return Status::Ok();
  }
  Cost EstimateCost(const std::vector<TensorDesc>&,
                    const std::vector<TensorDesc>& out) const override {
    return {0, CompulsoryBytes({}, out)};
  }

 private:
  Tensor value_;
};

class ConstantOfShapeKernel : public Kernel {
 public:
  ConstantOfShapeKernel(const Node& n, DataType dtype, uint64_t bits)
      : node_(n), dtype_(dtype), bits_(bits) {}
  Status Run(KernelContext& ctx) override {
    const Tensor* s = ctx.input(0);
    if (!s) return NodeError(node_, "missing required input 'input'");
    if (s->dtype() != DataType::kInt64 || s->rank() > 1)
      return NodeError(node_, "input must be a 1-D int64 shape tensor");
    std::vector<int64_t> shape = ReadInts(*s);
    int64_t n;
    if (!CheckedNumel(shape, &n))
      return NodeError(node_, "invalid or overflowing shape " + ShapeString(shape));
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, dtype_, shape));
    FillElements(y->raw(), n, DataTypeSize(dtype_), bits_);
    return Status::Ok();
  }
  Cost EstimateCost(const std::vector<TensorDesc>&,
                    const std::vector<TensorDesc>& out) const override {
    return {0, CompulsoryBytes({}, out)};
  }

 private:
  Node node_;
  DataType dtype_;
  uint64_t bits_;
};

class RangeKernel : public Kernel {
 public:
  explicit RangeKernel(const Node& n) : node_(n) {}
  Status Run(KernelContext& ctx) override {
    for (int i = 0; i < 3; ++i) {
      const Tensor* t = ctx.input(i);
      if (!t) return NodeError(node_, "missing required input " + std::to_string(i));
      if (t->numel() != 1)
        return NodeError(node_, "start, limit and delta must be scalars, input " +
                                    std::to_string(i) + " has shape " + ShapeString(t->shape()));
      if (t->dtype() != ctx.input(0)->dtype())
        return NodeError(node_, "start, limit and delta must have the same type");
    }
    const DataType dt = ctx.input(0)->dtype();
    switch (dt) {
      case DataType::kFloat32:
        return Fill<float>(ctx);
      case DataType::kFloat64:
        return Fill<double>(ctx);
      case DataType::kInt32:
        return Fill<int32_t>(ctx);
      case DataType::kInt64:
        return Fill<int64_t>(ctx);
      default:
        return NodeError(node_, std::string("unsupported type ") + DataTypeName(dt));
    }
  }

 private:
  template <typename T>
  Status Fill(KernelContext& ctx) {
    const T start = ctx.input(0)->data<T>()[0], limit = ctx.input(1)->data<T>()[0],
            delta = ctx.input(2)->data<T>()[0];
    if (delta == T(0)) return NodeError(node_, "delta is zero");
    double count = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) /
                             static_cast<double>(delta));
    if (!(count >= 0)) count = 0;  // also catches NaN
    if (count > 1e12)
      return NodeError(node_, "range would have " + std::to_string(count) + " elements");
    const int64_t n = static_cast<int64_t>(count);
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, ctx.input(0)->dtype(), {n}));
    T* p = y->data<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(start + static_cast<T>(i) * delta);
    return Status::Ok();
  }
  Node node_;
};

class NonZeroKernel : public Kernel {
 public:
  explicit NonZeroKernel(const Node& n) : node_(n) {}
  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "missing required input 'X'");
    std::vector<int64_t> shape = x->shape();
    if (shape.empty()) shape = {1};  // a scalar counts as a 1-element vector
    const int r = static_cast<int>(shape.size());
    const int64_t n = x->numel();
    std::vector<uint8_t> nz(static_cast<size_t>(n));
    switch (x->dtype()) {
      case DataType::kFloat32:
        Mark(x->data<float>(), n, nz.data());
        break;
      case DataType::kFloat64:
        Mark(x->data<double>(), n, nz.data());
        break;
      case DataType::kFloat16: {
        const uint16_t* p = x->data<uint16_t>();
        for (int64_t i = 0; i < n; ++i) nz[i] = (p[i] & 0x7fff) != 0;  // -0 is zero
        break;
      }
      default:
        DispatchBySize(DataTypeSize(x->dtype()), [&](auto t) {
          Mark(static_cast<const decltype(t)*>(x->raw()), n, nz.data());
        });
    }
    int64_t count = 0;
    for (uint8_t v : nz) count += v;
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DataType::kInt64, {r, count}));
    int64_t* out = y->data<int64_t>();
    std::vector<int64_t> idx(r, 0);
    int64_t k = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (nz[i]) {
        for (int d = 0; d < r; ++d) out[d * count + k] = idx[d];
        ++k;
      }
      for (int d = r - 1; d >= 0; --d) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
    return Status::Ok();
  }

 private:
  template <typename T>
  static void Mark(const T* p, int64_t n, uint8_t* nz) {
    for (int64_t i = 0; i < n; ++i) nz[i] = p[i] != T(0);
  }
  Node node_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_Constant(const Node& node) {
  const Attributes& a = node.attrs;
  if (a.Has("sparse_value"))
    return NodeError(node,
                     "sparse_value constants are not supported; densify the initializer "
                     "(e.g. onnx-simplifier or a Constant with 'value')");
  if (a.Has("value_string") || a.Has("value_strings"))
    return NodeError(node, "string constants are not supported by the engine");
  Tensor t;
  if (const Tensor* v = a.TensorAttr("value")) {
    t = Tensor(v->dtype(), v->shape());
    CopyTensorData(*v, &t);
  } else if (a.Has("value_float")) {
    t = Tensor(DataType::kFloat32, {});
    t.data<float>()[0] = a.Float("value_float", 0);
  } else if (a.Has("value_floats")) {
    std::vector<float> f = a.Floats("value_floats");
    t = Tensor(DataType::kFloat32, {static_cast<int64_t>(f.size())});
    if (!f.empty()) std::memcpy(t.raw(), f.data(), f.size() * sizeof(float));
  } else if (a.Has("value_int")) {
    t = Tensor(DataType::kInt64, {});
    t.data<int64_t>()[0] = a.Int("value_int", 0);
  } else if (a.Has("value_ints")) {
    std::vector<int64_t> v = a.Ints("value_ints");
    t = Tensor(DataType::kInt64, {static_cast<int64_t>(v.size())});
    if (!v.empty()) std::memcpy(t.raw(), v.data(), v.size() * sizeof(int64_t));
  } else {
    return NodeError(node, "needs one of the attributes value, value_float(s), value_int(s)");
  }
  return std::unique_ptr<Kernel>(new ConstantKernel(std::move(t)));
}

StatusOr<std::unique_ptr<Kernel>> Create_ConstantOfShape(const Node& node) {
  DataType dt = DataType::kFloat32;
  uint64_t bits = 0;
  if (const Tensor* v = node.attrs.TensorAttr("value")) {
    if (v->numel() != 1)
      return NodeError(node,
                       "'value' must hold exactly one element, has " + std::to_string(v->numel()));
    dt = v->dtype();
    bits = ScalarBits(*v);
  }
  return std::unique_ptr<Kernel>(new ConstantOfShapeKernel(node, dt, bits));
}

StatusOr<std::unique_ptr<Kernel>> Create_Range(const Node& node) {
  return std::unique_ptr<Kernel>(new RangeKernel(node));
}

StatusOr<std::unique_ptr<Kernel>> Create_NonZero(const Node& node) {
  return std::unique_ptr<Kernel>(new NonZeroKernel(node));
}

}  // namespace opscope::engine
