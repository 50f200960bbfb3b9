// CumSum and TopK: scans and selections along one axis, on an [outer, axis, inner] view.
//
// CumSum keeps a running row of `inner` accumulators, so a scan along a leading axis reads and
// writes whole contiguous rows; exclusive and reverse change only the order and where the
// running value is stored. TopK selects per slice with std::partial_sort (k much smaller than
// the axis) or a full sort, ordering by value and then by lower index, as ONNX specifies for
// ties; NaN orders above every number so the comparison stays a strict weak order.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/ops/common.h"
#include "engine/ops/elementwise_common.h"

namespace opscope::engine {
namespace {

template <typename T>
void CumSumImpl(const AxisView& v, const T* x, T* y, bool exclusive, bool reverse) {
  const int64_t R = v.axis, I = v.inner;
  const int64_t blk = I == 1 ? 1 : 512;
  const int64_t nb = (I + blk - 1) / blk;
  ParallelFor(v.outer * nb, R * std::min(I, blk), [&](int64_t b, int64_t e) {
    std::vector<T> acc(static_cast<size_t>(blk));
    for (int64_t w = b; w < e; ++w) {
      const int64_t o = w / nb, i0 = (w % nb) * blk, n = std::min(I, i0 + blk) - i0;
      std::fill(acc.begin(), acc.begin() + n, T(0));
      for (int64_t step = 0; step < R; ++step) {
        const int64_t r = reverse ? R - 1 - step : step;
        const T* xr = x + (o * R + r) * I + i0;
        T* yr = y + (o * R + r) * I + i0;
        if (exclusive) {
          for (int64_t i = 0; i < n; ++i) {
            T cur = xr[i];
            yr[i] = acc[i];
            acc[i] = WrapAdd(acc[i], cur);
          }
        } else {
          for (int64_t i = 0; i < n; ++i) {
            acc[i] = WrapAdd(acc[i], xr[i]);
            yr[i] = acc[i];
          }
        }
      }
    }
  });
}

class CumSumKernel : public Kernel {
 public:
  explicit CumSumKernel(const Node& node) : node_(node) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    const Tensor* a = ctx.input(1);
    if (!x || !a) return NodeError(node_, "expects 2 inputs (x, axis)");
    const DataType dt = x->dtype();
    if (!IsNumericType(dt) && dt != DataType::kFloat16)
      return NodeError(node_, std::string("unsupported input type ") + DataTypeName(dt));
    if ((a->dtype() != DataType::kInt64 && a->dtype() != DataType::kInt32) || a->numel() != 1)
      return NodeError(node_, "axis must be an int32/int64 scalar");
    const int64_t rank = x->rank();
    int64_t axis = ReadInts(*a)[0];
    if (rank == 0 || !NormalizeAxis(&axis, rank))
      return NodeError(node_, "axis " + std::to_string(ReadInts(*a)[0]) +
                                  " is out of range for rank " + std::to_string(rank));
    const bool exclusive = node_.attrs.Int("exclusive", 0) != 0;
    const bool reverse = node_.attrs.Int("reverse", 0) != 0;
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(0, dt, x->shape()));
    if (x->numel() == 0) return Status::Ok();
    AxisView v = MakeAxisView(x->shape(), axis);
    if (dt == DataType::kFloat16) {
      Tensor xf = HalfTensorToFloat(*x);
      Tensor yf(DataType::kFloat32, x->shape());
      CumSumImpl<float>(v, xf.data<float>(), yf.data<float>(), exclusive, reverse);
      FloatToHalfInto(yf, out);
      return Status::Ok();
    }
    VisitNumeric(dt, [&](auto tag) {
      using T = decltype(tag);
      CumSumImpl<T>(v, x->data<T>(), out->data<T>(), exclusive, reverse);
    });
    return Status::Ok();
  }

  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    return {in.empty() ? 0 : static_cast<double>(in[0].numel()),
            CompulsoryBytes({in.empty() ? TensorDesc{} : in[0]}, out)};
  }

 private:
  Node node_;
};

// Strict weak orders with NaN above every number; ties broken by the lower index.
template <typename T>
struct LargestFirst {
  bool operator()(const std::pair<T, int64_t>& a, const std::pair<T, int64_t>& b) const {
    if constexpr (std::is_floating_point_v<T>) {
      bool na = std::isnan(a.first), nb = std::isnan(b.first);
      if (na || nb) return na && !nb ? true : (na && nb ? a.second < b.second : false);
    }
    if (a.first != b.first) return a.first > b.first;
    return a.second < b.second;
  }
};
template <typename T>
struct SmallestFirst {
  bool operator()(const std::pair<T, int64_t>& a, const std::pair<T, int64_t>& b) const {
    if constexpr (std::is_floating_point_v<T>) {
      bool na = std::isnan(a.first), nb = std::isnan(b.first);
      if (na || nb) return !na && nb ? true : (na && nb ? a.second < b.second : false);
    }
    if (a.first != b.first) return a.first < b.first;
    return a.second < b.second;
  }
};

template <typename T, typename Cmp>
void TopKImpl(const AxisView& v, int64_t k, const T* x, T* values, int64_t* indices) {
  const int64_t R = v.axis, I = v.inner;
  const int64_t slices = v.outer * I;
  ParallelFor(slices, R * 4, [&](int64_t b, int64_t e) {
    std::vector<std::pair<T, int64_t>> buf(static_cast<size_t>(R));
    Cmp cmp;
    for (int64_t s = b; s < e; ++s) {
      const int64_t o = s / I, i = s % I;
      const T* xs = x + o * R * I + i;
      for (int64_t r = 0; r < R; ++r) buf[r] = {xs[r * I], r};
      if (k * 4 < R) {
        std::partial_sort(buf.begin(), buf.begin() + k, buf.end(), cmp);
      } else {
        std::sort(buf.begin(), buf.end(), cmp);
      }
      T* vs = values + o * k * I + i;
      int64_t* is = indices + o * k * I + i;
      for (int64_t j = 0; j < k; ++j) {
        vs[j * I] = buf[j].first;
        is[j * I] = buf[j].second;
      }
    }
  });
}

class TopKKernel : public Kernel {
 public:
  TopKKernel(const Node& node) : node_(node) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "input 0 is missing");
    const DataType dt = x->dtype();
    if (!IsNumericType(dt) && dt != DataType::kFloat16)
      return NodeError(node_, std::string("unsupported input type ") + DataTypeName(dt));
    int64_t k;
    if (node_.opset < 10) {
      if (!node_.attrs.Has("k")) return NodeError(node_, "attribute k is required before opset 10");
      k = node_.attrs.Int("k", 0);
    } else {
      const Tensor* kt = ctx.input(1);
      if (!kt) return NodeError(node_, "input K is missing");
      if ((kt->dtype() != DataType::kInt64 && kt->dtype() != DataType::kInt32) || kt->numel() != 1)
        return NodeError(node_, "K must be a 1-element int64 tensor");
      k = ReadInts(*kt)[0];
    }
    const int64_t rank = x->rank();
    int64_t axis = node_.attrs.Int("axis", -1);
    if (rank == 0 || !NormalizeAxis(&axis, rank))
      return NodeError(node_, "axis " + std::to_string(node_.attrs.Int("axis", -1)) +
                                  " is out of range for rank " + std::to_string(rank));
    const int64_t n = x->dim(static_cast<int>(axis));
    if (k < 0 || k > n)
      return NodeError(node_, "k=" + std::to_string(k) + " is outside [0, " + std::to_string(n) +
                                  "] for axis " + std::to_string(axis));
    const bool largest = node_.attrs.Int("largest", 1) != 0;
    std::vector<int64_t> oshape = x->shape();
    oshape[axis] = k;
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * vals, ctx.Output(0, dt, oshape));
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * idx, ctx.Output(1, DataType::kInt64, oshape));
    if (vals->numel() == 0) return Status::Ok();
    AxisView v = MakeAxisView(x->shape(), axis);
    if (dt == DataType::kFloat16) {
      Tensor xf = HalfTensorToFloat(*x);
      Tensor vf(DataType::kFloat32, oshape);
      Select<float>(v, k, largest, xf.data<float>(), vf.data<float>(), idx->data<int64_t>());
      FloatToHalfInto(vf, vals);
      return Status::Ok();
    }
    VisitNumeric(dt, [&](auto tag) {
      using T = decltype(tag);
      Select<T>(v, k, largest, x->data<T>(), vals->data<T>(), idx->data<int64_t>());
    });
    return Status::Ok();
  }

  // ~log2(k) comparisons per input element (a heap of k), at least one.
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    if (in.empty() || out.empty() || in[0].shape.empty()) return {0, CompulsoryBytes(in, out)};
    double n = static_cast<double>(in[0].numel());
    double k = 1;
    int64_t axis = node_.attrs.Int("axis", -1);
    if (NormalizeAxis(&axis, static_cast<int64_t>(out[0].shape.size())))
      k = static_cast<double>(std::max<int64_t>(1, out[0].shape[axis]));
    return {n * std::max(1.0, std::log2(k)), CompulsoryBytes(in, out)};
  }

 private:
  template <typename T>
  void Select(const AxisView& v, int64_t k, bool largest, const T* x, T* vals, int64_t* idx) {
    if (largest)
      TopKImpl<T, LargestFirst<T>>(v, k, x, vals, idx);
    else
      TopKImpl<T, SmallestFirst<T>>(v, k, x, vals, idx);
  }

  Node node_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_CumSum(const Node& n) {
  return std::unique_ptr<Kernel>(std::make_unique<CumSumKernel>(n));
}
StatusOr<std::unique_ptr<Kernel>> Create_TopK(const Node& n) {
  return std::unique_ptr<Kernel>(std::make_unique<TopKKernel>(n));
}

}  // namespace opscope::engine
