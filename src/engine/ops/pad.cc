// Pad (opset 2-10: pads/value attributes; 11+: pads and constant_value inputs; 18's axes input is
// accepted too). Modes constant, reflect, edge and wrap, negative pads crop. Each dimension gets
// an index map output -> input (-1 = constant); rows whose outer coordinates all map inside copy
// their interior with one memcpy and fill only the borders element by element.
#include <cstring>

#include "engine/ops/common.h"
#include "engine/ops/layout_copy.h"

namespace opscope::engine {
namespace {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

class PadKernel : public Kernel {
 public:
  PadKernel(const Node& n, PadMode mode) : node_(n), mode_(mode) {}
  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "missing required input 'data'");
    const int r = x->rank();
    std::vector<int64_t> pads;
    uint64_t value_bits = 0;
    if (node_.opset < 11) {
      pads = node_.attrs.Ints("pads");
      value_bits = EncodeScalar(x->dtype(), node_.attrs.Float("value", 0.f));
    } else {
      const Tensor* p = ctx.input(1);
      if (!p) return NodeError(node_, "missing required input 'pads'");
      if (p->dtype() != DataType::kInt64) return NodeError(node_, "input 'pads' must be int64");
      pads = ReadInts(*p);
      if (const Tensor* cv = ctx.input(2); cv && cv->numel() > 0) {
        if (cv->dtype() != x->dtype())
          return NodeError(node_, "constant_value type differs from data type");
        value_bits = ScalarBits(*cv);
      }
      if (const Tensor* ax = ctx.input(3)) {
        std::vector<int64_t> axes = ReadInts(*ax);
        if (pads.size() != 2 * axes.size())
          return NodeError(node_, "'pads' needs 2 values per axis in 'axes'");
        std::vector<int64_t> full(2 * static_cast<size_t>(r), 0);
        for (size_t i = 0; i < axes.size(); ++i) {
          int64_t a = axes[i];
          if (!NormalizeAxis(&a, r))
            return NodeError(node_, "axis " + std::to_string(axes[i]) + " out of range");
          full[a] = pads[i];
          full[a + r] = pads[i + axes.size()];
        }
        pads = full;
      }
    }
    if (static_cast<int>(pads.size()) != 2 * r)
      return NodeError(node_, "'pads' has " + std::to_string(pads.size()) + " values, expected " +
                                  std::to_string(2 * r) + " for rank " + std::to_string(r));
    for (int64_t v : pads)
      if (v > kMaxGeometrySize || v < -kMaxGeometrySize)
        return NodeError(node_, "pad " + std::to_string(v) + " is out of any sensible range");
    std::vector<int64_t> out_shape(r);
    for (int d = 0; d < r; ++d) {
      const int64_t in = x->dim(d);
      // An empty input may carry any other dim: [2^63-1, 0] plus a pad would overflow.
      if (in > (int64_t{1} << 62))
        return NodeError(node_, "axis " + std::to_string(d) + " of size " + std::to_string(in) +
                                    " is out of any sensible range");
      const int64_t o = in + pads[d] + pads[d + r];
      if (o < 0)
        return NodeError(node_, "pads crop axis " + std::to_string(d) + " of size " +
                                    std::to_string(in) + " below zero");
      if (mode_ != PadMode::kConstant && in == 0 && o > 0)
        return NodeError(
            node_, "cannot pad the empty axis " + std::to_string(d) + " in non-constant mode");
      out_shape[d] = o;
    }
    int64_t total;
    if (!CheckedNumel(out_shape, &total)) return NodeError(node_, "output size overflows");
    // The output first: Output() refuses one larger than the tensor memory limit, and the index
    // maps below are as long as the output's axes (an empty output may have a 2^40 axis).
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, x->dtype(), out_shape));
    if (total == 0) return Status::Ok();
    // Index maps per dimension.
    std::vector<std::vector<int64_t>> maps(r);
    for (int d = 0; d < r; ++d) {
      const int64_t in = x->dim(d);
      maps[d].resize(static_cast<size_t>(out_shape[d]));
      for (int64_t o = 0; o < out_shape[d]; ++o) {
        int64_t i = o - pads[d];
        if (i < 0 || i >= in) {
          switch (mode_) {
            case PadMode::kConstant:
              i = -1;
              break;
            case PadMode::kEdge:
              i = i < 0 ? 0 : in - 1;
              break;
            case PadMode::kWrap:
              i = ((i % in) + in) % in;
              break;
            case PadMode::kReflect: {
              if (in == 1) {
                i = 0;
                break;
              }
              const int64_t period = 2 * (in - 1);
              i = ((i % period) + period) % period;
              if (i >= in) i = period - i;
              break;
            }
          }
        }
        maps[d][o] = i;
      }
    }
    const size_t es = DataTypeSize(x->dtype());
    if (r == 0) {
      CopyTensorData(*x, y);
      return Status::Ok();
    }
    const std::vector<int64_t> ds = ContiguousStrides(x->shape());
    const int64_t inner = out_shape[r - 1], rows = total / inner;
    const std::vector<int64_t>& lm = maps[r - 1];
    // Interior run of the last dim: lm[j] == j - pad_begin.
    int64_t lo = 0, hi = 0;
    for (int64_t j = 0; j < inner; ++j)
      if (lm[j] >= 0 && lm[j] == j - pads[r - 1]) {
        if (hi == lo) lo = j;
        hi = j + 1;
      }
    DispatchBySize(es, [&](auto tag) {
      using T = decltype(tag);
      T cval;
      std::memcpy(&cval, &value_bits, sizeof(T));
      const T* src = static_cast<const T*>(x->raw());
      T* dst = static_cast<T*>(y->raw());
      ParallelFor(rows, inner, [&](int64_t b, int64_t e) {
        std::vector<int64_t> c(static_cast<size_t>(r), 0);
        int64_t rem = b;
        for (int d = r - 2; d >= 0; --d) {
          c[d] = rem % out_shape[d];
          rem /= out_shape[d];
        }
        for (int64_t row = b; row < e; ++row) {
          T* o = dst + row * inner;
          int64_t base = 0;
          bool outside = false;
          for (int d = 0; d < r - 1; ++d) {
            const int64_t i = maps[d][c[d]];
            if (i < 0) {
              outside = true;
              break;
            }
            base += i * ds[d];
          }
          if (outside) {
            std::fill_n(o, inner, cval);
          } else {
            const T* s = src + base;
            for (int64_t j = 0; j < lo; ++j) o[j] = lm[j] < 0 ? cval : s[lm[j]];
            if (hi > lo) std::memcpy(o + lo, s + lm[lo], static_cast<size_t>(hi - lo) * sizeof(T));
            for (int64_t j = hi; j < inner; ++j) o[j] = lm[j] < 0 ? cval : s[lm[j]];
          }
          for (int d = r - 2; d >= 0; --d) {
            if (++c[d] < out_shape[d]) break;
            c[d] = 0;
          }
        }
      });
    });
    return Status::Ok();
  }

 private:
  Node node_;
  PadMode mode_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_Pad(const Node& node) {
  const std::string m = node.attrs.String("mode", "constant");
  PadMode mode;
  if (m == "constant")
    mode = PadMode::kConstant;
  else if (m == "reflect")
    mode = PadMode::kReflect;
  else if (m == "edge")
    mode = PadMode::kEdge;
  else if (m == "wrap")
    mode = PadMode::kWrap;
  else
    return NodeError(node, "unknown mode '" + m + "' (constant, reflect, edge, wrap)");
  if (node.opset < 11 && !node.attrs.Has("pads"))
    return NodeError(node, "missing 'pads' attribute");
  return std::unique_ptr<Kernel>(new PadKernel(node, mode));
}

}  // namespace opscope::engine
