// Type and identity operators: Cast, Identity, Dropout (inference), Where.
//
// Cast converts between float32, float64, float16, int64, int32, uint8, int8 and bool. Float to
// integer truncates toward zero; NaN becomes 0 and out-of-range values saturate to int64 and then
// wrap to narrower types (numpy's behaviour on x86 for in-range values; ONNX leaves overflow
// undefined). Anything to bool is "!= 0"; float16 rounds to nearest even directly from the source
// (so double -> float16 rounds once, as numpy does).
//
// Dropout is the inference form: the output is the input, the optional mask is all true. A
// training-mode Dropout with a non-zero ratio is random by definition and is refused with an error.
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

#include "engine/ops/common.h"
#include "engine/ops/elementwise_common.h"

namespace opscope::engine {
namespace {

struct HalfTag {};
struct BoolTag {};

template <typename F>
auto VisitAnyType(DataType t, F&& f) {
  if (t == DataType::kFloat16) return f(HalfTag{});
  if (t == DataType::kBool) return f(BoolTag{});
  return VisitNumeric(t, f);
}

template <typename Tag>
using StorageOf = std::conditional_t<std::is_same_v<Tag, HalfTag>, uint16_t,
                                     std::conditional_t<std::is_same_v<Tag, BoolTag>, uint8_t, Tag>>;

template <typename Tag>
auto LoadValue(StorageOf<Tag> v) {
  if constexpr (std::is_same_v<Tag, HalfTag>) return HalfToFloat(v);
  else return v;  // bool loads as uint8 0/1
}

template <typename Tag, typename V>
StorageOf<Tag> StoreValue(V v) {
  if constexpr (std::is_same_v<Tag, HalfTag>) return DoubleToHalf(static_cast<double>(v));
  else if constexpr (std::is_same_v<Tag, BoolTag>) return v != V(0) || v != v ? 1 : 0;
  else return SafeCast<Tag>(v);
}

StatusOr<DataType> OnnxTypeToDataType(int64_t onnx_type) {
  switch (onnx_type) {
    case 1: return DataType::kFloat32;
    case 2: return DataType::kUint8;
    case 3: return DataType::kInt8;
    case 6: return DataType::kInt32;
    case 7: return DataType::kInt64;
    case 9: return DataType::kBool;
    case 10: return DataType::kFloat16;
    case 11: return DataType::kFloat64;
    default: return Unsupported("unsupported element type " + std::to_string(onnx_type));
  }
}

class CastKernel : public Kernel {
 public:
  CastKernel(const Node& node, DataType to) : node_(node), to_(to) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "input 0 is missing");
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, to_, x->shape()));
    if (x->dtype() == to_) {
      CopyTensorData(*x, out);
      return Status::Ok();
    }
    const int64_t n = x->numel();
    VisitAnyType(x->dtype(), [&](auto from_tag) {
      using From = decltype(from_tag);
      VisitAnyType(to_, [&](auto to_tag) {
        using To = decltype(to_tag);
        const StorageOf<From>* src = x->data<StorageOf<From>>();
        StorageOf<To>* dst = out->data<StorageOf<To>>();
        ParallelFor(n, 2, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) dst[i] = StoreValue<To>(LoadValue<From>(src[i]));
        });
      });
    });
    return Status::Ok();
  }

 private:
  Node node_;
  DataType to_;
};

class IdentityKernel : public Kernel {
 public:
  IdentityKernel(const Node& node, bool dropout, float ratio)
      : node_(node), dropout_(dropout), ratio_(ratio) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "input 0 is missing");
    if (dropout_) {
      float ratio = ratio_;
      if (const Tensor* r = ctx.input(1)) {
        if (r->numel() != 1) return NodeError(node_, "ratio must be a scalar");
        ratio = static_cast<float>(r->dtype() == DataType::kFloat16
                                       ? HalfToFloat(r->data<uint16_t>()[0])
                                       : ReadScalar(*r));
      }
      const Tensor* t = ctx.input(2);
      bool training = t && t->numel() > 0 && ReadScalar(*t) != 0;
      if (training && (ratio < 0 || ratio >= 1)) return NodeError(node_, "ratio must be in [0, 1)");
      if (training && ratio > 0)
        return Unsupported("node '" + node_.name +
                           "' (Dropout): training_mode=true with a non-zero ratio is random; "
                           "opscope runs inference only (export the model in eval mode)");
    }
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, x->dtype(), x->shape()));
    CopyTensorData(*x, out);
    if (dropout_ && ctx.num_outputs() > 1 && ctx.output_wanted(1)) {
      // Opset 10 made the mask bool; before that it had the input's type.
      DataType mdt = node_.opset >= 10 ? DataType::kBool : x->dtype();
      OPSCOPE_ASSIGN_OR_RETURN(Tensor * mask, ctx.Output(1, mdt, x->shape()));
      VisitAnyType(mdt, [&](auto tag) {
        using Tag = decltype(tag);
        auto* m = mask->data<StorageOf<Tag>>();
        const auto one = StoreValue<Tag>(1);
        for (int64_t i = 0; i < mask->numel(); ++i) m[i] = one;
      });
    }
    return Status::Ok();
  }

  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    // Only the data tensor moves (ratio/training_mode are scalars); an aliased Identity moves
    // nothing, but the estimate assumes a copy.
    return {0, CompulsoryBytes(in, out)};
  }

 private:
  Node node_;
  bool dropout_;
  float ratio_;
};

template <typename T>
void WhereLoop(const BroadcastPlan& p, const uint8_t* c, const T* x, const T* y, T* o) {
  const int64_t sc = p.strides[0].back(), sx = p.strides[1].back(), sy = p.strides[2].back();
  ForEachRow<3>(p, 1, [&](int64_t oo, const std::array<int64_t, 3>& off, int64_t n) {
    const uint8_t* pc = c + off[0];
    const T* px = x + off[1];
    const T* py = y + off[2];
    T* po = o + oo;
    if (sc && sx && sy) {
      for (int64_t i = 0; i < n; ++i) po[i] = pc[i] ? px[i] : py[i];
    } else {
      for (int64_t i = 0; i < n; ++i) po[i] = pc[i * sc] ? px[i * sx] : py[i * sy];
    }
  });
}

class WhereKernel : public Kernel {
 public:
  explicit WhereKernel(const Node& node) : node_(node) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* c = ctx.input(0);
    const Tensor* x = ctx.input(1);
    const Tensor* y = ctx.input(2);
    if (!c || !x || !y) return NodeError(node_, "expects 3 inputs (condition, X, Y)");
    if (c->dtype() != DataType::kBool)
      return NodeError(node_, std::string("condition must be bool, got ") + DataTypeName(c->dtype()));
    if (x->dtype() != y->dtype())
      return NodeError(node_, std::string("X and Y types differ (") + DataTypeName(x->dtype()) +
                                  " and " + DataTypeName(y->dtype()) + ")");
    BroadcastPlan plan;
    if (!MakeBroadcastPlan({&c->shape(), &x->shape(), &y->shape()}, &plan))
      return NodeError(node_, "input shapes do not broadcast " + ShapeString(c->shape()) + " " +
                                  ShapeString(x->shape()) + " " + ShapeString(y->shape()));
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, x->dtype(), plan.out_shape));
    const uint8_t* pc = c->data<uint8_t>();
    switch (DataTypeSize(x->dtype())) {
      case 1: WhereLoop(plan, pc, x->data<uint8_t>(), y->data<uint8_t>(), out->data<uint8_t>()); break;
      case 2: WhereLoop(plan, pc, x->data<uint16_t>(), y->data<uint16_t>(), out->data<uint16_t>()); break;
      case 4: WhereLoop(plan, pc, x->data<uint32_t>(), y->data<uint32_t>(), out->data<uint32_t>()); break;
      default: WhereLoop(plan, pc, x->data<uint64_t>(), y->data<uint64_t>(), out->data<uint64_t>()); break;
    }
    return Status::Ok();
  }

  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    return {0, CompulsoryBytes(in, out)};  // a selection, no arithmetic
  }

 private:
  Node node_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_Cast(const Node& n) {
  if (!n.attrs.Has("to")) return NodeError(n, "attribute 'to' is required");
  auto to = OnnxTypeToDataType(n.attrs.Int("to", 0));
  if (!to.ok()) return NodeError(n, "cannot cast to " + to.status().message());
  return std::unique_ptr<Kernel>(std::make_unique<CastKernel>(n, *to));
}

StatusOr<std::unique_ptr<Kernel>> Create_Identity(const Node& n) {
  return std::unique_ptr<Kernel>(std::make_unique<IdentityKernel>(n, false, 0.0f));
}

StatusOr<std::unique_ptr<Kernel>> Create_Dropout(const Node& n) {
  float ratio = n.opset < 12 ? n.attrs.Float("ratio", 0.5f) : 0.5f;
  return std::unique_ptr<Kernel>(std::make_unique<IdentityKernel>(n, true, ratio));
}

StatusOr<std::unique_ptr<Kernel>> Create_Where(const Node& n) {
  return std::unique_ptr<Kernel>(std::make_unique<WhereKernel>(n));
}

}  // namespace opscope::engine
