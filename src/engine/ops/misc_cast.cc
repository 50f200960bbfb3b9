// Type and identity operators: Cast, CastLike, Identity, Dropout (inference), Where.
//
// CastLike is Cast with the target type taken from its second input's element type (read at run
// time; only the type of target_type matters, not its values).
//
// Cast converts between float32, float64, float16, int64, int32, uint8, int8 and bool. Float to
// integer truncates toward zero; NaN becomes 0 and out-of-range values saturate to int64 and then
// wrap to narrower types (numpy's behaviour on x86 for in-range values; ONNX leaves overflow
// undefined). Anything to bool is "!= 0"; float16 rounds to nearest even directly from the source
// (so double -> float16 rounds once, as numpy does).
//
// Dropout: in inference (the default, and training_mode=false) the output is the input and the
// optional mask is all true. training_mode=true with a non-zero ratio draws a real random mask
// (see RunTraining), so exported training graphs run too.
#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
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
using StorageOf =
    std::conditional_t<std::is_same_v<Tag, HalfTag>, uint16_t,
                       std::conditional_t<std::is_same_v<Tag, BoolTag>, uint8_t, Tag>>;

template <typename Tag>
auto LoadValue(StorageOf<Tag> v) {
  if constexpr (std::is_same_v<Tag, HalfTag>)
    return HalfToFloat(v);
  else
    return v;  // bool loads as uint8 0/1
}

template <typename Tag, typename V>
StorageOf<Tag> StoreValue(V v) {
  if constexpr (std::is_same_v<Tag, HalfTag>)
    return DoubleToHalf(static_cast<double>(v));
  else if constexpr (std::is_same_v<Tag, BoolTag>)
    return v != V(0) || v != v ? 1 : 0;
  else
    return SafeCast<Tag>(v);
}

StatusOr<DataType> OnnxTypeToDataType(int64_t onnx_type) {
  switch (onnx_type) {
    case 1:
      return DataType::kFloat32;
    case 2:
      return DataType::kUint8;
    case 3:
      return DataType::kInt8;
    case 6:
      return DataType::kInt32;
    case 7:
      return DataType::kInt64;
    case 9:
      return DataType::kBool;
    case 10:
      return DataType::kFloat16;
    case 11:
      return DataType::kFloat64;
    case 8:
      return Unsupported("the STRING");
    case 16:
      return Unsupported("the BFLOAT16");
    default:
      return Unsupported("ONNX element type " + std::to_string(onnx_type) + " as a");
  }
}

class CastKernel : public Kernel {
 public:
  // like: the target type is input 1's type (CastLike), `to` is ignored.
  CastKernel(const Node& node, DataType to, bool like = false)
      : node_(node), to_(to), like_(like) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "input 0 is missing");
    if (like_) {
      const Tensor* target = ctx.input(1);
      if (!target) return NodeError(node_, "input 1 (target_type) is missing");
      to_ = target->dtype();
    }
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

  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    // CastLike's target_type is only looked at for its type: its data is not traffic.
    std::vector<TensorDesc> data(in.begin(), in.begin() + std::min<size_t>(in.size(), 1));
    return {0, CompulsoryBytes(data, out)};
  }

 private:
  Node node_;
  DataType to_;
  bool like_;
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
      if (training && ratio > 0) return RunTraining(ctx, *x, ratio);
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

  // Training mode: keep an element when a uniform double in [0, 1) is >= ratio, scale the kept
  // ones by 1/(1-ratio). The uniforms come from MT19937 seeded with the `seed` attribute and
  // drawn 53 bits at a time (two 32-bit outputs), the same stream as numpy's legacy
  // np.random.seed(seed); np.random.uniform(), so a seeded model reproduces its reference output.
  Status RunTraining(KernelContext& ctx, const Tensor& x, float ratio) {
    if (!IsFloatType(x.dtype()))
      return NodeError(node_, std::string("training-mode Dropout supports float32/float64, got ") +
                                  DataTypeName(x.dtype()));
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, x.dtype(), x.shape()));
    Tensor* mask = nullptr;
    if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) {
      OPSCOPE_ASSIGN_OR_RETURN(mask, ctx.Output(1, DataType::kBool, x.shape()));
    }
    std::mt19937 rng(node_.attrs.Has("seed") ? static_cast<uint32_t>(node_.attrs.Int("seed", 0))
                                             : std::random_device{}());
    const double scale = 1.0 / (1.0 - static_cast<double>(ratio));
    VisitFloat(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* src = x.data<T>();
      T* dst = out->data<T>();
      const T s = static_cast<T>(scale);
      for (int64_t i = 0; i < x.numel(); ++i) {
        uint32_t a = rng() >> 5, b = rng() >> 6;
        double u = (a * 67108864.0 + b) / 9007199254740992.0;
        bool keep = u >= static_cast<double>(ratio);
        dst[i] = keep ? src[i] * s : T(0);
        if (mask) mask->data<uint8_t>()[i] = keep;
      }
    });
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
      return NodeError(node_,
                       std::string("condition must be bool, got ") + DataTypeName(c->dtype()));
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
      case 1:
        WhereLoop(plan, pc, x->data<uint8_t>(), y->data<uint8_t>(), out->data<uint8_t>());
        break;
      case 2:
        WhereLoop(plan, pc, x->data<uint16_t>(), y->data<uint16_t>(), out->data<uint16_t>());
        break;
      case 4:
        WhereLoop(plan, pc, x->data<uint32_t>(), y->data<uint32_t>(), out->data<uint32_t>());
        break;
      default:
        WhereLoop(plan, pc, x->data<uint64_t>(), y->data<uint64_t>(), out->data<uint64_t>());
        break;
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
  if (!to.ok())  // Unsupported, so callers can tell "type we lack" from a malformed node
    return Unsupported("node '" + n.name + "' (Cast): cannot cast to " + to.status().message() +
                       " data type (supported: float32, float64, float16, int64, int32, uint8, "
                       "int8, bool)");
  return std::unique_ptr<Kernel>(std::make_unique<CastKernel>(n, *to));
}

StatusOr<std::unique_ptr<Kernel>> Create_CastLike(const Node& n) {
  if (n.inputs.size() < 2) return NodeError(n, "expects 2 inputs (input, target_type)");
  return std::unique_ptr<Kernel>(std::make_unique<CastKernel>(n, DataType::kFloat32, true));
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
