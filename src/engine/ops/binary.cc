// Broadcasting binary and variadic elementwise operators: arithmetic (Add Sub Mul Div Mod Max
// Min Sum Mean PRelu Pow), comparisons (Equal Greater Less GreaterOrEqual LessOrEqual) and
// logic (And Or Xor).
//
// Types: arithmetic and comparisons run on float32, float64, int64, int32, uint8 and int8;
// float16 inputs are upcast to float32, computed, and rounded back (Max/Min/Mean/Sum conformance
// uses float16). Integer arithmetic wraps like numpy; integer Div/Mod by zero is an error naming
// the node. Integer Div truncates toward zero (C and ONNX Runtime semantics; numpy's floor
// division differs only for operands of mixed sign).
//
// Variadic ops (Max Min Sum Mean) fold their inputs into the output: the first step broadcasts
// inputs 0 and 1 straight to the final output shape, each later input is folded in place.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/ops/activation.h"
#include "engine/ops/common.h"
#include "engine/ops/elementwise_common.h"
#include "engine/ops/region_layout.h"

namespace opscope::engine {
namespace {

enum class BinOp {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kFMod,
  kMax,
  kMin,
  kSum,
  kMean,
  kPRelu,
  kPow,
  kEqual,
  kGreater,
  kLess,
  kGreaterOrEqual,
  kLessOrEqual,
  kAnd,
  kOr,
  kXor,
};

bool IsCompare(BinOp op) {
  return op == BinOp::kEqual || op == BinOp::kGreater || op == BinOp::kLess ||
         op == BinOp::kGreaterOrEqual || op == BinOp::kLessOrEqual;
}
bool IsLogic(BinOp op) { return op == BinOp::kAnd || op == BinOp::kOr || op == BinOp::kXor; }
bool IsVariadic(BinOp op) {
  return op == BinOp::kMax || op == BinOp::kMin || op == BinOp::kSum || op == BinOp::kMean;
}

template <typename T>
T IntPow(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exp % 2) ? -1 : 1;
      return 0;  // |base| >= 2: the exact result truncates to 0 (base 0 would be infinite)
    }
  }
  T result = 1;
  while (exp) {
    if (exp & 1) result = WrapMul(result, base);
    exp = static_cast<T>(exp >> 1);
    if (exp) base = WrapMul(base, base);
  }
  return result;
}

template <typename T>
bool AnyZero(const Tensor& t) {
  const T* p = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i)
    if (p[i] == 0) return true;
  return false;
}

// One step of arithmetic: o = op(a, b) under plan p. `post` runs fused activations.
template <typename T, typename Post>
void ArithStep(BinOp op, const BroadcastPlan& p, const T* a, const T* b, T* o, Post post) {
  switch (op) {
    case BinOp::kAdd:
    case BinOp::kSum:
    case BinOp::kMean:
      BinaryBroadcastLoop(
          p, a, b, o, 1, [](T x, T y) { return WrapAdd(x, y); }, post);
      break;
    case BinOp::kSub:
      BinaryBroadcastLoop(
          p, a, b, o, 1, [](T x, T y) { return WrapSub(x, y); }, post);
      break;
    case BinOp::kMul:
      BinaryBroadcastLoop(
          p, a, b, o, 1, [](T x, T y) { return WrapMul(x, y); }, post);
      break;
    case BinOp::kDiv:
      if constexpr (std::is_integral_v<T>) {
        BinaryBroadcastLoop(
            p, a, b, o, 4,
            [](T x, T y) -> T {
              if constexpr (std::is_signed_v<T>) {
                if (y == -1) return WrapSub(T{0}, x);  // avoids INT_MIN / -1
              }
              return static_cast<T>(x / y);
            },
            post);
      } else {
        BinaryBroadcastLoop(
            p, a, b, o, 1, [](T x, T y) { return x / y; }, post);
      }
      break;
    case BinOp::kMod:  // integer Mod with fmod=0: the result takes the divisor's sign
      if constexpr (std::is_integral_v<T>) {
        BinaryBroadcastLoop(
            p, a, b, o, 4,
            [](T x, T y) -> T {
              if constexpr (std::is_signed_v<T>) {
                if (y == -1) return 0;
                T r = static_cast<T>(x % y);
                if (r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
                return r;
              } else {
                return static_cast<T>(x % y);
              }
            },
            post);
      }
      break;
    case BinOp::kFMod:  // C fmod: the result takes the dividend's sign
      if constexpr (std::is_integral_v<T>) {
        BinaryBroadcastLoop(
            p, a, b, o, 4,
            [](T x, T y) -> T {
              if constexpr (std::is_signed_v<T>) {
                if (y == -1) return 0;
              }
              return static_cast<T>(x % y);
            },
            post);
      } else {
        BinaryBroadcastLoop(
            p, a, b, o, 4, [](T x, T y) { return std::fmod(x, y); }, post);
      }
      break;
    case BinOp::kMax:
      BinaryBroadcastLoop(
          p, a, b, o, 1, [](T x, T y) { return MaxPropagateNan(x, y); }, post);
      break;
    case BinOp::kMin:
      BinaryBroadcastLoop(
          p, a, b, o, 1, [](T x, T y) { return MinPropagateNan(x, y); }, post);
      break;
    case BinOp::kPRelu:
      BinaryBroadcastLoop(
          p, a, b, o, 1, [](T x, T s) { return x < 0 ? WrapMul(x, s) : x; }, post);
      break;
    default:
      break;
  }
}

class BinaryKernel : public Kernel {
 public:
  BinaryKernel(const Node& node, BinOp op) : node_(node), op_(op) {}

  Status Run(KernelContext& ctx) override {
    const int n = ctx.num_inputs();
    std::vector<const Tensor*> ins;
    for (int i = 0; i < n; ++i) {
      const Tensor* t = ctx.input(i);
      if (!t) return NodeError(node_, "input " + std::to_string(i) + " is missing");
      ins.push_back(t);
    }
    if (IsVariadic(op_) ? n < 1 : n != 2)
      return NodeError(node_, "expected " + std::string(IsVariadic(op_) ? "at least 1" : "2") +
                                  " inputs, got " + std::to_string(n));
    if (op_ == BinOp::kPow) return RunPow(ctx, *ins[0], *ins[1]);

    const DataType dt = ins[0]->dtype();
    for (const Tensor* t : ins)
      if (t->dtype() != dt)
        return NodeError(node_, std::string("inputs have different types (") + DataTypeName(dt) +
                                    " and " + DataTypeName(t->dtype()) + ")");
    // A fused scalar Mul/Add/Sub/Div (kLinear) had a float32 constant: its input was float32,
    // or the model mixed types, which the unfused node would have refused.
    for (const PostOp& pop : post_ops_)
      if (pop.kind == PostOpKind::kLinear && dt != DataType::kFloat32)
        return NodeError(node_, std::string("a fused float32 scalar operation cannot follow a ") +
                                    DataTypeName(dt) + " result (the model mixes types)");
    if (IsLogic(op_)) {
      if (dt != DataType::kBool)
        return NodeError(node_, std::string("expects bool inputs, got ") + DataTypeName(dt));
    } else if (!(IsNumericType(dt) || dt == DataType::kFloat16 ||
                 (op_ == BinOp::kEqual && dt == DataType::kBool))) {
      return NodeError(node_, std::string("unsupported input type ") + DataTypeName(dt));
    }
    if (op_ == BinOp::kMean && !(IsFloatType(dt) || dt == DataType::kFloat16))
      return NodeError(node_, "Mean expects floating-point inputs");

    std::vector<const std::vector<int64_t>*> shapes;
    for (const Tensor* t : ins) shapes.push_back(&t->shape());
    if (channels_last_ && ins.size() == 2 && dt == DataType::kFloat32) {
      // Inside a channels-last region (SetChannelsLast): the 4-D operand is NHWC in memory and
      // the other one a per-channel [N|1, C, 1, 1] (same bytes in either order), so the op is
      // an ordinary broadcast over the NHWC shapes; the output keeps the logical NCHW shape.
      // nChw8c (region_layout.h): the shapes are [N, C/8, H, W, 8] in memory, the per-channel
      // operand [N|1, C/8, 1, 1, 8] (or all ones when it has one channel).
      std::vector<int64_t> phys[2];
      int64_t channels = 1;
      for (int k = 0; k < 2; ++k) {
        std::vector<int64_t> d = ins[k]->shape();
        if (d.size() > 4)
          return NodeError(
              node_, "channels-last broadcast of a rank-" + std::to_string(d.size()) + " input");
        d.insert(d.begin(), 4 - d.size(), 1);
        channels = std::max(channels, d[1]);
        phys[k] = d;
      }
      const bool blocked = RegionLayoutFor(channels) == RegionLayout::kNChw8c;
      for (std::vector<int64_t>& d : phys) {
        if (blocked && d[1] != 1 && d[1] != channels)
          return NodeError(node_, "channels-last broadcast of " + std::to_string(d[1]) +
                                      " channels against " + std::to_string(channels));
        if (blocked)
          d = {d[0], d[1] / (d[1] == 1 ? 1 : 8), d[2], d[3], d[1] == 1 ? 1 : 8};
        else
          d = {d[0], d[2], d[3], d[1]};
      }
      // A per-channel operand repeats every C (NHWC) or 8 (nChw8c) elements, so the broadcast's
      // contiguous runs would be that short; repeated along W once per run (wide_, kept between
      // runs), they are W times longer.
      std::vector<const Tensor*> args = ins;
      for (int k = 0; k < 2 && channels > 1; ++k) {
        const std::vector<int64_t>& full = phys[1 - k];
        if (full.size() != phys[k].size()) continue;
        const bool per_channel =
            blocked ? phys[k][4] == 8 && phys[k][2] == 1 && phys[k][3] == 1
                    : phys[k][3] == channels && phys[k][1] == 1 && phys[k][2] == 1 && full[2] > 1;
        if (!per_channel) continue;
        const int64_t n1 = phys[k][0], W = blocked ? full[3] : full[2];
        const int64_t blk = blocked ? 8 : channels, blocks = blocked ? channels / 8 : 1;
        std::vector<int64_t> wide_shape = blocked ? std::vector<int64_t>{n1, blocks, 1, W, 8}
                                                  : std::vector<int64_t>{n1, 1, W, channels};
        if (wide_.shape() != wide_shape) wide_ = Tensor(DataType::kFloat32, wide_shape);
        const float* src = ins[k]->data<float>();
        float* dst = wide_.data<float>();
        for (int64_t b = 0; b < n1 * blocks; ++b)
          for (int64_t w = 0; w < W; ++w, dst += blk)
            std::memcpy(dst, src + b * blk, static_cast<size_t>(blk) * sizeof(float));
        phys[k] = wide_shape;
        args[k] = &wide_;
        break;
      }
      BroadcastPlan plan;
      if (!MakeBroadcastPlan({&phys[0], &phys[1]}, &plan))
        return NodeError(node_, "input shapes do not broadcast " + ShapeString(ins[0]->shape()) +
                                    " " + ShapeString(ins[1]->shape()));
      const std::vector<int64_t>& o = plan.out_shape;
      OPSCOPE_ASSIGN_OR_RETURN(
          Tensor * out, ctx.Output(0, dt,
                                   blocked ? std::vector<int64_t>{o[0], o[1] * o[4], o[2], o[3]}
                                           : std::vector<int64_t>{o[0], o[3], o[1], o[2]}));
      return Compute(args, dt, plan, out);
    }
    BroadcastPlan plan;
    if (!MakeBroadcastPlan(shapes, &plan, op_ == BinOp::kPRelu)) {
      std::string msg = op_ == BinOp::kPRelu ? "slope shape cannot broadcast to input shape"
                                             : "input shapes do not broadcast";
      for (const Tensor* t : ins) msg += " " + ShapeString(t->shape());
      return NodeError(node_, msg);
    }

    if (dt == DataType::kFloat16) {  // upcast, compute in float32, round back
      std::vector<Tensor> up;
      up.reserve(ins.size());
      std::vector<const Tensor*> up_ptrs;
      for (const Tensor* t : ins) {
        up.push_back(HalfTensorToFloat(*t));
        up_ptrs.push_back(&up.back());
      }
      if (IsCompare(op_)) {
        OPSCOPE_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, DataType::kBool, plan.out_shape));
        return Compute(up_ptrs, DataType::kFloat32, plan, out);
      }
      Tensor tmp(DataType::kFloat32, plan.out_shape);
      OPSCOPE_RETURN_IF_ERROR(Compute(up_ptrs, DataType::kFloat32, plan, &tmp));
      OPSCOPE_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, DataType::kFloat16, plan.out_shape));
      FloatToHalfInto(tmp, out);
      return Status::Ok();
    }
    const DataType out_dt = (IsCompare(op_) || IsLogic(op_)) ? DataType::kBool : dt;
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, out_dt, plan.out_shape));
    return Compute(ins, dt, plan, out);
  }

  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    double numel = out.empty() ? 0 : static_cast<double>(out[0].numel());
    double steps = std::max<double>(1, static_cast<double>(in.size()) - 1);
    if (op_ == BinOp::kMean) steps += 1;  // the final division
    return {numel * (steps + static_cast<double>(post_ops_.size())), CompulsoryBytes(in, out)};
  }

  // Channels-last regions (SessionImpl::AssignChannelsLast) ask only Add/Sub/Mul/Div of an NHWC
  // activation and a per-channel operand, for input and output together.
  bool SetChannelsLast(bool input, bool output) override {
    if (input != output) return false;
    if (input && op_ != BinOp::kAdd && op_ != BinOp::kSub && op_ != BinOp::kMul &&
        op_ != BinOp::kDiv)
      return false;
    channels_last_ = input;
    return true;
  }

  bool AddPostOp(const PostOp& op) override {
    bool arith = op_ == BinOp::kAdd || op_ == BinOp::kSub || op_ == BinOp::kMul ||
                 op_ == BinOp::kDiv || op_ == BinOp::kSum || op_ == BinOp::kMax ||
                 op_ == BinOp::kMin || op_ == BinOp::kPRelu || op_ == BinOp::kMean;
    if (!arith || op.kind == PostOpKind::kBiasAdd) return false;
    post_ops_ = WithPostOp(post_ops_, op);
    return true;
  }

 private:
  Status Compute(const std::vector<const Tensor*>& ins, DataType dt, const BroadcastPlan& plan,
                 Tensor* out) {
    if (plan.out_numel == 0) return Status::Ok();
    if (IsLogic(op_)) {
      const uint8_t* a = ins[0]->data<uint8_t>();
      const uint8_t* b = ins[1]->data<uint8_t>();
      uint8_t* o = out->data<uint8_t>();
      if (op_ == BinOp::kAnd)
        BinaryBroadcastLoop(plan, a, b, o, 1,
                            [](uint8_t x, uint8_t y) -> uint8_t { return x & y; });
      else if (op_ == BinOp::kOr)
        BinaryBroadcastLoop(plan, a, b, o, 1,
                            [](uint8_t x, uint8_t y) -> uint8_t { return x | y; });
      else
        BinaryBroadcastLoop(plan, a, b, o, 1,
                            [](uint8_t x, uint8_t y) -> uint8_t { return x ^ y; });
      return Status::Ok();
    }
    if (IsCompare(op_)) {
      if (dt == DataType::kBool) {  // Equal on bools
        BinaryBroadcastLoop(plan, ins[0]->data<uint8_t>(), ins[1]->data<uint8_t>(),
                            out->data<uint8_t>(), 1,
                            [](uint8_t x, uint8_t y) -> uint8_t { return x == y; });
        return Status::Ok();
      }
      VisitNumeric(dt, [&](auto tag) {
        using T = decltype(tag);
        const T* a = ins[0]->data<T>();
        const T* b = ins[1]->data<T>();
        uint8_t* o = out->data<uint8_t>();
        switch (op_) {
          case BinOp::kEqual:
            BinaryBroadcastLoop(plan, a, b, o, 1, [](T x, T y) -> uint8_t { return x == y; });
            break;
          case BinOp::kGreater:
            BinaryBroadcastLoop(plan, a, b, o, 1, [](T x, T y) -> uint8_t { return x > y; });
            break;
          case BinOp::kLess:
            BinaryBroadcastLoop(plan, a, b, o, 1, [](T x, T y) -> uint8_t { return x < y; });
            break;
          case BinOp::kGreaterOrEqual:
            BinaryBroadcastLoop(plan, a, b, o, 1, [](T x, T y) -> uint8_t { return x >= y; });
            break;
          default:
            BinaryBroadcastLoop(plan, a, b, o, 1, [](T x, T y) -> uint8_t { return x <= y; });
            break;
        }
      });
      return Status::Ok();
    }
    return VisitNumeric(dt, [&](auto tag) -> Status {
      using T = decltype(tag);
      if constexpr (std::is_integral_v<T>) {
        if (op_ == BinOp::kDiv || op_ == BinOp::kMod || op_ == BinOp::kFMod) {
          if (AnyZero<T>(*ins[1])) return NodeError(node_, "integer division by zero");
        }
      }
      if ((op_ == BinOp::kMod) && std::is_floating_point_v<T>)
        return NodeError(node_, "floating-point Mod requires fmod=1");
      T* o = out->data<T>();
      auto post = [this](auto* po, int64_t cnt) {
        using TO = std::remove_pointer_t<decltype(po)>;
        for (const PostOp& pop : post_ops_) {
          if constexpr (std::is_same_v<TO, float>) {
            ApplyActivationInPlace(pop.kind, po, cnt, pop.alpha, pop.beta);
          } else {
            for (int64_t i = 0; i < cnt; ++i)
              po[i] = SafeCast<TO>(
                  ApplyActivationDouble(pop.kind, static_cast<double>(po[i]), pop.alpha, pop.beta));
          }
        }
      };
      const size_t n = ins.size();
      if (n == 1) {
        CopyTensorData(*ins[0], out);
      } else if (n == 2) {
        if (post_ops_.empty() || op_ == BinOp::kMean)
          ArithStep<T>(op_, plan, ins[0]->data<T>(), ins[1]->data<T>(), o, NoPost());
        else
          ArithStep<T>(op_, plan, ins[0]->data<T>(), ins[1]->data<T>(), o, post);
      } else {
        // Step 1 writes inputs 0 and 1 broadcast to the final shape (the output shape joins the
        // plan as a third operand); later inputs fold in place.
        BroadcastPlan p01;
        MakeBroadcastPlan({&ins[0]->shape(), &ins[1]->shape(), &plan.out_shape}, &p01);
        ArithStep<T>(op_, p01, ins[0]->data<T>(), ins[1]->data<T>(), o, NoPost());
        for (size_t k = 2; k < n; ++k) {
          BroadcastPlan pk;
          MakeBroadcastPlan({&plan.out_shape, &ins[k]->shape()}, &pk);
          if (k + 1 == n && !post_ops_.empty() && op_ != BinOp::kMean)
            ArithStep<T>(op_, pk, o, ins[k]->data<T>(), o, post);
          else
            ArithStep<T>(op_, pk, o, ins[k]->data<T>(), o, NoPost());
        }
      }
      if (op_ == BinOp::kMean) {
        if constexpr (std::is_floating_point_v<T>) {
          const T inv = T(1) / static_cast<T>(n);
          ParallelFor(plan.out_numel, 1, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) o[i] *= inv;
            post(o + b, e - b);
          });
        }
      } else if (n == 1 && !post_ops_.empty()) {
        post(o, plan.out_numel);
      }
      return Status::Ok();
    });
  }

  // Pow: the output has the base's type; the exponent may be of another numeric type.
  Status RunPow(KernelContext& ctx, const Tensor& x, const Tensor& y) {
    if (!(IsNumericType(x.dtype()) || x.dtype() == DataType::kFloat16) ||
        !(IsNumericType(y.dtype()) || y.dtype() == DataType::kFloat16))
      return NodeError(node_, std::string("unsupported types ") + DataTypeName(x.dtype()) + " ^ " +
                                  DataTypeName(y.dtype()));
    BroadcastPlan plan;
    if (!MakeBroadcastPlan({&x.shape(), &y.shape()}, &plan))
      return NodeError(node_, "input shapes do not broadcast " + ShapeString(x.shape()) + " " +
                                  ShapeString(y.shape()));
    Tensor xu, yu;
    const Tensor* px = &x;
    const Tensor* py = &y;
    if (x.dtype() == DataType::kFloat16) px = &(xu = HalfTensorToFloat(x));
    if (y.dtype() == DataType::kFloat16) py = &(yu = HalfTensorToFloat(y));
    Tensor tmp;
    Tensor* out;
    if (x.dtype() == DataType::kFloat16) {
      tmp = Tensor(DataType::kFloat32, plan.out_shape);
      out = &tmp;
    } else {
      OPSCOPE_ASSIGN_OR_RETURN(out, ctx.Output(0, x.dtype(), plan.out_shape));
    }
    if (plan.out_numel > 0) {
      VisitNumeric(px->dtype(), [&](auto xtag) {
        using TX = decltype(xtag);
        VisitNumeric(py->dtype(), [&](auto ytag) {
          using TY = decltype(ytag);
          const TX* a = px->data<TX>();
          const TY* b = py->data<TY>();
          TX* o = out->data<TX>();
          if constexpr (std::is_same_v<TX, float> && std::is_same_v<TY, float>) {
            if (py->numel() == 1 && b[0] == 2.0f) {
              BinaryBroadcastLoop(plan, a, b, o, 1, [](float u, float) { return u * u; });
            } else {
              BinaryBroadcastLoop(plan, a, b, o, 8,
                                  [](float u, float v) { return std::pow(u, v); });
            }
          } else if constexpr (std::is_integral_v<TX> && std::is_integral_v<TY>) {
            BinaryBroadcastLoop(plan, a, b, o, 8, [](TX u, TY v) {
              return IntPow<int64_t>(static_cast<int64_t>(u), static_cast<int64_t>(v));
            });
          } else {
            BinaryBroadcastLoop(plan, a, b, o, 8, [](TX u, TY v) {
              return SafeCast<TX>(std::pow(static_cast<double>(u), static_cast<double>(v)));
            });
          }
        });
      });
    }
    if (x.dtype() == DataType::kFloat16) {
      OPSCOPE_ASSIGN_OR_RETURN(Tensor * o16, ctx.Output(0, DataType::kFloat16, plan.out_shape));
      FloatToHalfInto(tmp, o16);
    }
    return Status::Ok();
  }

  Node node_;
  BinOp op_;
  std::vector<PostOp> post_ops_;
  bool channels_last_ = false;
  Tensor wide_;  // a per-channel operand repeated along W (the channels-last broadcast)
};

StatusOr<std::unique_ptr<Kernel>> MakeBinary(const Node& node, BinOp op) {
  return std::unique_ptr<Kernel>(std::make_unique<BinaryKernel>(node, op));
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_Add(const Node& n) { return MakeBinary(n, BinOp::kAdd); }
StatusOr<std::unique_ptr<Kernel>> Create_Sub(const Node& n) { return MakeBinary(n, BinOp::kSub); }
StatusOr<std::unique_ptr<Kernel>> Create_Mul(const Node& n) { return MakeBinary(n, BinOp::kMul); }
StatusOr<std::unique_ptr<Kernel>> Create_Div(const Node& n) { return MakeBinary(n, BinOp::kDiv); }
StatusOr<std::unique_ptr<Kernel>> Create_Mod(const Node& n) {
  int64_t fmod = n.attrs.Int("fmod", 0);
  if (fmod != 0 && fmod != 1) return NodeError(n, "attribute fmod must be 0 or 1");
  return MakeBinary(n, fmod ? BinOp::kFMod : BinOp::kMod);
}
StatusOr<std::unique_ptr<Kernel>> Create_Max(const Node& n) { return MakeBinary(n, BinOp::kMax); }
StatusOr<std::unique_ptr<Kernel>> Create_Min(const Node& n) { return MakeBinary(n, BinOp::kMin); }
StatusOr<std::unique_ptr<Kernel>> Create_Sum(const Node& n) { return MakeBinary(n, BinOp::kSum); }
StatusOr<std::unique_ptr<Kernel>> Create_Mean(const Node& n) { return MakeBinary(n, BinOp::kMean); }
StatusOr<std::unique_ptr<Kernel>> Create_PRelu(const Node& n) {
  return MakeBinary(n, BinOp::kPRelu);
}
StatusOr<std::unique_ptr<Kernel>> Create_Pow(const Node& n) { return MakeBinary(n, BinOp::kPow); }
StatusOr<std::unique_ptr<Kernel>> Create_Equal(const Node& n) {
  return MakeBinary(n, BinOp::kEqual);
}
StatusOr<std::unique_ptr<Kernel>> Create_Greater(const Node& n) {
  return MakeBinary(n, BinOp::kGreater);
}
StatusOr<std::unique_ptr<Kernel>> Create_Less(const Node& n) { return MakeBinary(n, BinOp::kLess); }
StatusOr<std::unique_ptr<Kernel>> Create_GreaterOrEqual(const Node& n) {
  return MakeBinary(n, BinOp::kGreaterOrEqual);
}
StatusOr<std::unique_ptr<Kernel>> Create_LessOrEqual(const Node& n) {
  return MakeBinary(n, BinOp::kLessOrEqual);
}
StatusOr<std::unique_ptr<Kernel>> Create_And(const Node& n) { return MakeBinary(n, BinOp::kAnd); }
StatusOr<std::unique_ptr<Kernel>> Create_Or(const Node& n) { return MakeBinary(n, BinOp::kOr); }
StatusOr<std::unique_ptr<Kernel>> Create_Xor(const Node& n) { return MakeBinary(n, BinOp::kXor); }

}  // namespace opscope::engine
