// Reductions: ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2
// ReduceSumSquare ReduceLogSum ReduceLogSumExp, and ArgMax ArgMin.
//
// Axes come from the `axes` attribute, or from the optional second input (ReduceSum from opset 13;
// accepted for every Reduce* when present, as opset 18 does). Empty axes reduce everything unless
// noop_with_empty_axes=1, which makes the op an identity.
//
// Layout. The input's dimensions are grouped into runs of kept and reduced dimensions (size-1
// dimensions dropped, adjacent dimensions of the same kind merged). The common cases are one
// reduced run, viewed as [outer, reduced, inner]:
//   inner == 1  (last-axis reductions, global reductions): each output reduces a contiguous row
//               with 16 independent accumulators, which the compiler vectorizes and which also
//               tames float rounding; a row that is much longer than the number of outputs is
//               split across threads into partial results.
//   inner > 1   (reduce a leading or middle axis): each reduced row is combined elementwise into
//               a block of accumulators, so memory is read contiguously.
// Any other pattern (e.g. axes {0, 2} of a 3-D tensor with no size-1 dims) walks the input once
// with an odometer that tracks the output offset.
//
// ReduceLogSumExp is computed stably as max + log(sum(exp(x - max))): a ReduceMax pass produces
// per-output shifts that the second pass subtracts.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/ops/common.h"
#include "engine/ops/elementwise_common.h"

namespace opscope::engine {
namespace {

enum class RedOp { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

// Reduction policies: Map(x, shift) feeds Combine; Final(acc, count, shift) produces the output.
template <typename T, RedOp Op>
struct Policy {
  static T Init() {
    if constexpr (Op == RedOp::kMax) {
      if constexpr (std::is_floating_point_v<T>)
        return -std::numeric_limits<T>::infinity();
      else
        return std::numeric_limits<T>::lowest();
    } else if constexpr (Op == RedOp::kMin) {
      if constexpr (std::is_floating_point_v<T>)
        return std::numeric_limits<T>::infinity();
      else
        return std::numeric_limits<T>::max();
    } else if constexpr (Op == RedOp::kProd) {
      return T(1);
    } else {
      return T(0);
    }
  }
  static T Map(T x, T shift) {
    if constexpr (Op == RedOp::kL1)
      return x < T(0) ? WrapSub(T(0), x) : x;
    else if constexpr (Op == RedOp::kL2 || Op == RedOp::kSumSquare)
      return WrapMul(x, x);
    else if constexpr (Op == RedOp::kLogSumExp)
      return std::exp(x - shift);
    else
      return x;
  }
  static T Combine(T a, T b) {
    if constexpr (Op == RedOp::kMax)
      return MaxPropagateNan(a, b);
    else if constexpr (Op == RedOp::kMin)
      return MinPropagateNan(a, b);
    else if constexpr (Op == RedOp::kProd)
      return WrapMul(a, b);
    else
      return WrapAdd(a, b);
  }
  static T Final(T acc, int64_t count, T shift) {
    if constexpr (Op == RedOp::kMean) {
      if constexpr (std::is_floating_point_v<T>)
        return acc / static_cast<T>(count);
      else
        return count ? static_cast<T>(static_cast<int64_t>(acc) / count) : T(0);
    } else if constexpr (Op == RedOp::kL2) {
      if constexpr (std::is_floating_point_v<T>)
        return std::sqrt(acc);
      else
        return SafeCast<T>(std::sqrt(static_cast<double>(acc)));
    } else if constexpr (Op == RedOp::kLogSum) {
      return std::log(acc);
    } else if constexpr (Op == RedOp::kLogSumExp) {
      return shift + std::log(acc);
    } else {
      return acc;
    }
  }
};

constexpr int kLanes = 16;

// Reduces n contiguous values.
template <typename T, RedOp Op>
T ReduceRow(const T* x, int64_t n, T shift) {
  using P = Policy<T, Op>;
  T lanes[kLanes];
  for (int j = 0; j < kLanes; ++j) lanes[j] = P::Init();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lanes[j] = P::Combine(lanes[j], P::Map(x[i + j], shift));
  for (int j = 0; i < n; ++i, ++j) lanes[j] = P::Combine(lanes[j], P::Map(x[i], shift));
  T acc = lanes[0];
  for (int j = 1; j < kLanes; ++j) acc = P::Combine(acc, lanes[j]);
  return acc;
}

// Output shape and the grouping of the input's dims into kept/reduced runs.
struct ReducePlan {
  std::vector<int64_t> out_shape;
  std::vector<int64_t> run_size;  // collapsed runs, outermost first
  std::vector<bool> run_reduced;
  int64_t reduced_count = 1;  // elements reduced into each output
  int64_t out_numel = 1;
};

ReducePlan MakeReducePlan(const std::vector<int64_t>& shape, const std::vector<bool>& reduce,
                          bool keepdims) {
  ReducePlan p;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reduce[d]) {
      p.reduced_count *= shape[d];
      if (keepdims) p.out_shape.push_back(1);
    } else {
      p.out_shape.push_back(shape[d]);
      p.out_numel *= shape[d];
    }
    if (shape[d] == 1) continue;
    if (!p.run_size.empty() && p.run_reduced.back() == reduce[d]) {
      p.run_size.back() *= shape[d];
    } else {
      p.run_size.push_back(shape[d]);
      p.run_reduced.push_back(reduce[d]);
    }
  }
  return p;
}

// out[k] = Final(reduce of its elements); `shift` (nullable) is indexed like out.
template <typename T, RedOp Op>
void ReduceInto(const ReducePlan& p, const T* x, T* out, const T* shift) {
  using P = Policy<T, Op>;
  const int64_t count = p.reduced_count;
  auto sh = [shift](int64_t k) { return shift ? shift[k] : T(0); };
  if (p.out_numel == 0) return;
  if (count == 0) {
    for (int64_t k = 0; k < p.out_numel; ++k) out[k] = P::Final(P::Init(), 0, sh(k));
    return;
  }
  // Classify into [O, R, I].
  const size_t nr = p.run_size.size();
  int64_t O = 1, R = 1, I = 1;
  bool simple = true;
  int seen_reduced = 0;
  for (size_t r = 0; r < nr; ++r) {
    if (p.run_reduced[r]) {
      ++seen_reduced;
      R = p.run_size[r];
    } else if (seen_reduced == 0) {
      O *= p.run_size[r];
    } else {
      I *= p.run_size[r];
    }
  }
  if (seen_reduced > 1) simple = false;

  if (simple && I == 1) {
    const int threads = omp_get_max_threads();
    if (O < threads && R >= 65536) {
      // Few long rows: split each row into chunks and combine the partial results.
      const int64_t chunks = threads;
      std::vector<T> partial(static_cast<size_t>(O * chunks));
      ParallelFor(O * chunks, R / chunks, [&](int64_t b, int64_t e) {
        for (int64_t w = b; w < e; ++w) {
          int64_t o = w / chunks, c = w % chunks;
          int64_t r0 = R * c / chunks, r1 = R * (c + 1) / chunks;
          partial[w] = ReduceRow<T, Op>(x + o * R + r0, r1 - r0, sh(o));
        }
      });
      for (int64_t o = 0; o < O; ++o) {
        T acc = partial[o * chunks];
        for (int64_t c = 1; c < chunks; ++c) acc = P::Combine(acc, partial[o * chunks + c]);
        out[o] = P::Final(acc, count, sh(o));
      }
      return;
    }
    ParallelFor(O, R, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o)
        out[o] = P::Final(ReduceRow<T, Op>(x + o * R, R, sh(o)), count, sh(o));
    });
    return;
  }
  if (simple) {
    // Blocks of the inner dimension: each work item owns out[o, i0:i1].
    const int64_t blk = 512;
    const int64_t nb = (I + blk - 1) / blk;
    ParallelFor(O * nb, R * std::min(I, blk), [&](int64_t b, int64_t e) {
      for (int64_t w = b; w < e; ++w) {
        const int64_t o = w / nb, i0 = (w % nb) * blk, i1 = std::min(I, i0 + blk);
        T* acc = out + o * I;
        const T* s = shift ? shift + o * I : nullptr;
        for (int64_t i = i0; i < i1; ++i) acc[i] = P::Init();
        for (int64_t r = 0; r < R; ++r) {
          const T* row = x + (o * R + r) * I;
          if (s) {
            for (int64_t i = i0; i < i1; ++i) acc[i] = P::Combine(acc[i], P::Map(row[i], s[i]));
          } else {
            for (int64_t i = i0; i < i1; ++i) acc[i] = P::Combine(acc[i], P::Map(row[i], T(0)));
          }
        }
        for (int64_t i = i0; i < i1; ++i) acc[i] = P::Final(acc[i], count, s ? s[i] : T(0));
      }
    });
    return;
  }
  // General pattern: one pass over the input with an odometer tracking the output offset.
  std::vector<int64_t> ostride(nr, 0);
  int64_t s = 1;
  for (size_t r = nr; r-- > 0;) {
    if (!p.run_reduced[r]) {
      ostride[r] = s;
      s *= p.run_size[r];
    }
  }
  for (int64_t k = 0; k < p.out_numel; ++k) out[k] = P::Init();
  std::vector<int64_t> idx(nr, 0);
  const int64_t inner = p.run_size[nr - 1];
  const int64_t inner_os = ostride[nr - 1];
  int64_t ooff = 0;
  const int64_t total = count * p.out_numel;
  for (int64_t base = 0; base < total; base += inner) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t k = ooff + i * inner_os;
      out[k] = P::Combine(out[k], P::Map(x[base + i], sh(k)));
    }
    for (size_t r = nr - 1; r-- > 0;) {
      ooff += ostride[r];
      if (++idx[r] < p.run_size[r]) break;
      ooff -= ostride[r] * p.run_size[r];
      idx[r] = 0;
    }
  }
  for (int64_t k = 0; k < p.out_numel; ++k) out[k] = P::Final(out[k], count, sh(k));
}

template <typename T>
void Reduce(RedOp op, const ReducePlan& p, const T* x, T* out) {
  switch (op) {
    case RedOp::kSum:
      ReduceInto<T, RedOp::kSum>(p, x, out, nullptr);
      break;
    case RedOp::kMean:
      ReduceInto<T, RedOp::kMean>(p, x, out, nullptr);
      break;
    case RedOp::kMax:
      ReduceInto<T, RedOp::kMax>(p, x, out, nullptr);
      break;
    case RedOp::kMin:
      ReduceInto<T, RedOp::kMin>(p, x, out, nullptr);
      break;
    case RedOp::kProd:
      ReduceInto<T, RedOp::kProd>(p, x, out, nullptr);
      break;
    case RedOp::kL1:
      ReduceInto<T, RedOp::kL1>(p, x, out, nullptr);
      break;
    case RedOp::kL2:
      ReduceInto<T, RedOp::kL2>(p, x, out, nullptr);
      break;
    case RedOp::kSumSquare:
      ReduceInto<T, RedOp::kSumSquare>(p, x, out, nullptr);
      break;
    case RedOp::kLogSum:
      if constexpr (std::is_floating_point_v<T>) ReduceInto<T, RedOp::kLogSum>(p, x, out, nullptr);
      break;
    case RedOp::kLogSumExp:
      if constexpr (std::is_floating_point_v<T>) {
        std::vector<T> shift(static_cast<size_t>(p.out_numel));
        ReduceInto<T, RedOp::kMax>(p, x, shift.data(), nullptr);
        for (T& v : shift)
          if (!std::isfinite(v)) v = 0;
        ReduceInto<T, RedOp::kLogSumExp>(p, x, out, shift.data());
      }
      break;
  }
}

class ReduceKernel : public Kernel {
 public:
  ReduceKernel(const Node& node, RedOp op) : node_(node), op_(op) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "input 0 is missing");
    const DataType dt = x->dtype();
    const bool float_only = op_ == RedOp::kLogSum || op_ == RedOp::kLogSumExp;
    // ReduceMax/ReduceMin-20 take bool (any / all): bytes 0/1, reduced as uint8.
    const bool bool_minmax = dt == DataType::kBool && (op_ == RedOp::kMax || op_ == RedOp::kMin);
    if (!bool_minmax &&
        !(dt == DataType::kFloat16 || (float_only ? IsFloatType(dt) : IsNumericType(dt))))
      return NodeError(node_, std::string("unsupported input type ") + DataTypeName(dt));

    std::vector<int64_t> axes = node_.attrs.Ints("axes");
    if (const Tensor* a = ctx.input(1)) {
      if (a->dtype() != DataType::kInt64 && a->dtype() != DataType::kInt32)
        return NodeError(node_, "axes input must be int64");
      axes = ReadInts(*a);
    }
    const int64_t rank = x->rank();
    const bool keepdims = node_.attrs.Int("keepdims", 1) != 0;
    const bool noop = node_.attrs.Int("noop_with_empty_axes", 0) != 0;
    std::vector<bool> reduce(static_cast<size_t>(rank), axes.empty());
    for (int64_t a : axes) {
      int64_t n = a;
      if (!NormalizeAxis(&n, rank))
        return NodeError(node_, "axis " + std::to_string(a) + " is out of range for rank " +
                                    std::to_string(rank));
      if (reduce[n]) return NodeError(node_, "axis " + std::to_string(a) + " is repeated");
      reduce[n] = true;
    }
    if (axes.empty() && noop) {
      OPSCOPE_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, dt, x->shape()));
      CopyTensorData(*x, out);
      return Status::Ok();
    }
    ReducePlan plan = MakeReducePlan(x->shape(), reduce, keepdims);
    if ((op_ == RedOp::kMax || op_ == RedOp::kMin) && plan.reduced_count == 0 &&
        plan.out_numel > 0 && !IsFloatType(dt) && dt != DataType::kFloat16)
      return NodeError(node_, "cannot take the max/min of an empty set of integers");
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, dt, plan.out_shape));
    if (dt == DataType::kFloat16) {
      Tensor xf = HalfTensorToFloat(*x);
      Tensor of(DataType::kFloat32, plan.out_shape);
      Reduce<float>(op_, plan, xf.data<float>(), of.data<float>());
      FloatToHalfInto(of, out);
      return Status::Ok();
    }
    if (bool_minmax) {
      Reduce<uint8_t>(op_, plan, x->data<uint8_t>(), out->data<uint8_t>());
      return Status::Ok();
    }
    VisitNumeric(dt, [&](auto tag) {
      using T = decltype(tag);
      Reduce<T>(op_, plan, x->data<T>(), out->data<T>());
    });
    return Status::Ok();
  }

  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    double n = in.empty() ? 0 : static_cast<double>(in[0].numel());
    double per = 1;  // one combine per input element
    if (op_ == RedOp::kL1 || op_ == RedOp::kL2 || op_ == RedOp::kSumSquare) per = 2;
    if (op_ == RedOp::kLogSumExp) per = 4;  // max pass, subtract, exp, add
    double outs = out.empty() ? 0 : static_cast<double>(out[0].numel());
    return {n * per + outs, CompulsoryBytes({in.empty() ? TensorDesc{} : in[0]}, out)};
  }

 private:
  Node node_;
  RedOp op_;
};

// ArgMax / ArgMin over one axis; ties go to the first index unless select_last_index=1.
template <typename T, bool kMax>
void ArgReduce(const AxisView& v, const T* x, int64_t* out, bool last) {
  auto better = [last](T cand, T best) {
    if constexpr (kMax)
      return last ? cand >= best : cand > best;
    else
      return last ? cand <= best : cand < best;
  };
  if (v.inner == 1) {
    ParallelFor(v.outer, v.axis, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* row = x + o * v.axis;
        T best = row[0];
        int64_t bi = 0;
        for (int64_t r = 1; r < v.axis; ++r)
          if (better(row[r], best)) {
            best = row[r];
            bi = r;
          }
        out[o] = bi;
      }
    });
    return;
  }
  ParallelFor(v.outer, v.axis * v.inner, [&](int64_t b, int64_t e) {
    std::vector<T> best(static_cast<size_t>(v.inner));
    for (int64_t o = b; o < e; ++o) {
      const T* base = x + o * v.axis * v.inner;
      int64_t* oi = out + o * v.inner;
      for (int64_t i = 0; i < v.inner; ++i) {
        best[i] = base[i];
        oi[i] = 0;
      }
      for (int64_t r = 1; r < v.axis; ++r) {
        const T* row = base + r * v.inner;
        for (int64_t i = 0; i < v.inner; ++i)
          if (better(row[i], best[i])) {
            best[i] = row[i];
            oi[i] = r;
          }
      }
    }
  });
}

class ArgKernel : public Kernel {
 public:
  ArgKernel(const Node& node, bool is_max) : node_(node), is_max_(is_max) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "input 0 is missing");
    const DataType dt = x->dtype();
    if (!IsNumericType(dt) && dt != DataType::kFloat16)
      return NodeError(node_, std::string("unsupported input type ") + DataTypeName(dt));
    int64_t axis = node_.attrs.Int("axis", 0);
    const int64_t rank = x->rank();
    if (!NormalizeAxis(&axis, std::max<int64_t>(rank, 1)) || rank == 0)
      return NodeError(node_, "axis " + std::to_string(node_.attrs.Int("axis", 0)) +
                                  " is out of range for rank " + std::to_string(rank));
    if (x->dim(static_cast<int>(axis)) == 0)
      return NodeError(node_, "cannot take the arg" + std::string(is_max_ ? "max" : "min") +
                                  " of an empty axis");
    const bool keepdims = node_.attrs.Int("keepdims", 1) != 0;
    const bool last = node_.attrs.Int("select_last_index", 0) != 0;
    std::vector<int64_t> oshape;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis)
        oshape.push_back(x->dim(static_cast<int>(d)));
      else if (keepdims)
        oshape.push_back(1);
    }
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, DataType::kInt64, oshape));
    if (x->numel() == 0) return Status::Ok();
    AxisView v = MakeAxisView(x->shape(), axis);
    Tensor xf;
    const Tensor* src = x;
    if (dt == DataType::kFloat16) src = &(xf = HalfTensorToFloat(*x));
    VisitNumeric(src->dtype(), [&](auto tag) {
      using T = decltype(tag);
      if (is_max_)
        ArgReduce<T, true>(v, src->data<T>(), out->data<int64_t>(), last);
      else
        ArgReduce<T, false>(v, src->data<T>(), out->data<int64_t>(), last);
    });
    return Status::Ok();
  }

  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    return {in.empty() ? 0 : static_cast<double>(in[0].numel()), CompulsoryBytes(in, out)};
  }

 private:
  Node node_;
  bool is_max_;
};

StatusOr<std::unique_ptr<Kernel>> MakeReduce(const Node& n, RedOp op) {
  return std::unique_ptr<Kernel>(std::make_unique<ReduceKernel>(n, op));
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_ReduceSum(const Node& n) {
  return MakeReduce(n, RedOp::kSum);
}
StatusOr<std::unique_ptr<Kernel>> Create_ReduceMean(const Node& n) {
  return MakeReduce(n, RedOp::kMean);
}
StatusOr<std::unique_ptr<Kernel>> Create_ReduceMax(const Node& n) {
  return MakeReduce(n, RedOp::kMax);
}
StatusOr<std::unique_ptr<Kernel>> Create_ReduceMin(const Node& n) {
  return MakeReduce(n, RedOp::kMin);
}
StatusOr<std::unique_ptr<Kernel>> Create_ReduceProd(const Node& n) {
  return MakeReduce(n, RedOp::kProd);
}
StatusOr<std::unique_ptr<Kernel>> Create_ReduceL1(const Node& n) {
  return MakeReduce(n, RedOp::kL1);
}
StatusOr<std::unique_ptr<Kernel>> Create_ReduceL2(const Node& n) {
  return MakeReduce(n, RedOp::kL2);
}
StatusOr<std::unique_ptr<Kernel>> Create_ReduceSumSquare(const Node& n) {
  return MakeReduce(n, RedOp::kSumSquare);
}
StatusOr<std::unique_ptr<Kernel>> Create_ReduceLogSum(const Node& n) {
  return MakeReduce(n, RedOp::kLogSum);
}
StatusOr<std::unique_ptr<Kernel>> Create_ReduceLogSumExp(const Node& n) {
  return MakeReduce(n, RedOp::kLogSumExp);
}
StatusOr<std::unique_ptr<Kernel>> Create_ArgMax(const Node& n) {
  return std::unique_ptr<Kernel>(std::make_unique<ArgKernel>(n, true));
}
StatusOr<std::unique_ptr<Kernel>> Create_ArgMin(const Node& n) {
  return std::unique_ptr<Kernel>(std::make_unique<ArgKernel>(n, false));
}

}  // namespace opscope::engine
