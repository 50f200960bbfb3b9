// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear (default domain, opsets 10-21).
//
//   QuantizeLinear:   y = saturate(round_half_even(x / y_scale) + y_zero_point)
//   DequantizeLinear: y = (x - x_zero_point) * x_scale
//   DynamicQuantizeLinear: y_scale = (max(x, 0) - min(x, 0)) / 255 (1 when that range is 0, as
//     ONNX Runtime does), y_zero_point = saturate(round(-min(x, 0) / y_scale)), y as Quantize.
//
// Scales are per tensor, per axis (opset 13: a 1-D scale along `axis`) or, from opset 21, per
// block of `block_size` elements along the axis. Quantized types: uint8 and int8 (DequantizeLinear
// also reads int32 with a zero zero point). The float8, int4/uint4 and int16/uint16 types of
// opsets 19 and 21 are refused with a message (the engine has no tensor type for them), and so is
// a `saturate` attribute, which only concerns float8 outputs. Division by the scale (not
// multiplication by its inverse) matches the ONNX reference and ONNX Runtime bit for bit.
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <cmath>
#include <cstring>
#include <type_traits>

#include "engine/ops/common.h"
#include "engine/ops/quant_common.h"

namespace opscope::engine {
namespace {

// Data shape viewed as [outer, D, inner] around the quantization axis, and the scale index of
// element (o, d, i).
struct AxisView {
  int64_t outer = 1, dim = 1, inner = 1;
};

AxisView ViewAround(const std::vector<int64_t>& shape, int64_t axis) {
  AxisView v;
  if (axis < 0) {
    v.inner = Numel(shape);
    return v;
  }
  for (int64_t i = 0; i < axis; ++i) v.outer *= shape[i];
  v.dim = shape[axis];
  for (size_t i = axis + 1; i < shape.size(); ++i) v.inner *= shape[i];
  return v;
}

// Calls fn(begin, end, scale_index) over runs of elements that share one scale.
template <typename F>
void ForEachScaleRun(const std::vector<int64_t>& shape, const QuantParams& q, F&& fn) {
  const AxisView v = ViewAround(shape, q.axis);
  if (q.per_tensor()) {
    fn(int64_t{0}, v.inner, int64_t{0});
    return;
  }
  // An empty tensor has no runs; the row loop would still walk outer * dim rows of nothing
  // ([2^40, 7, 0] per axis 1).
  if (v.outer == 0 || v.dim == 0 || v.inner == 0) return;
  const int64_t rows = v.outer * v.dim;
  const int64_t db = q.block > 0 ? (v.dim + q.block - 1) / q.block : v.dim;
  ParallelFor(rows, v.inner * 4, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t o = r / v.dim, d = r % v.dim;
      if (q.block > 0) {
        // One scale per (o, d / block, i): a run is a single element.
        const int64_t base = (o * db + d / q.block) * v.inner;
        for (int64_t i = 0; i < v.inner; ++i) fn(r * v.inner + i, r * v.inner + i + 1, base + i);
      } else {
        fn(r * v.inner, (r + 1) * v.inner, d);
      }
    }
  });
}

Status CheckOpsetAttrs(const Node& n, int64_t* block) {
  *block = n.attrs.Int("block_size", 0);
  if (*block < 0) return NodeError(n, "block_size must be >= 0, got " + std::to_string(*block));
  if (n.attrs.Has("saturate"))
    return NodeError(n,
                     "the 'saturate' attribute applies to float8 types, which the engine "
                     "does not support; quantize to uint8 or int8");
  return Status::Ok();
}

#if defined(__x86_64__)
// AVX2 twin of the scalar loop, 8 elements at a time: divide, NaN -> 0 (Saturate gives zp),
// clamp to [lo - zp, hi - zp] in float, round half to even (cvtps under the default MXCSR
// rounding mode), add zp. Same result as Saturate() element for element.
template <typename Q>
[[gnu::target("avx2")]] int64_t QuantizeAvx2(const float* x, Q* y, int64_t b, int64_t e, float s,
                                             int32_t zp, int32_t lo, int32_t hi) {
  const __m256 sv = _mm256_set1_ps(s), lov = _mm256_set1_ps(static_cast<float>(lo - zp)),
               hiv = _mm256_set1_ps(static_cast<float>(hi - zp));
  const __m256i zv = _mm256_set1_epi32(zp);
  int64_t i = b;
  alignas(32) int32_t tmp[8];
  for (; i + 8 <= e; i += 8) {
    __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + i), sv);
    v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
    v = _mm256_min_ps(_mm256_max_ps(v, lov), hiv);
    __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(v), zv);
    _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), q);
    for (int k = 0; k < 8; ++k) y[i + k] = static_cast<Q>(tmp[k]);
  }
  return i;
}
#endif

template <typename Q>
void QuantizeRun(const float* x, Q* y, int64_t b, int64_t e, float s, int32_t zp) {
  constexpr int32_t lo = std::is_signed_v<Q> ? -128 : 0, hi = std::is_signed_v<Q> ? 127 : 255;
  int64_t i = b;
#if defined(__x86_64__)
  static const bool avx2 = BestIsa() != Isa::kBaseline;
  if (avx2) i = QuantizeAvx2(x, y, b, e, s, zp, lo, hi);
#endif
  for (; i < e; ++i) y[i] = static_cast<Q>(Saturate(x[i] / s, zp, lo, hi));
}

class QuantizeLinearKernel : public Kernel {
 public:
  QuantizeLinearKernel(const Node& n, int64_t axis, int64_t block, DataType out_type)
      : node_(n), axis_(axis), block_(block), out_type_(out_type) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "missing required input 'x'");
    if (x->dtype() != DataType::kFloat32)
      return NodeError(node_,
                       std::string("input 'x' must be float32, got ") + DataTypeName(x->dtype()));
    const Tensor* zp = ctx.input(2);
    QuantParams q;
    OPSCOPE_RETURN_IF_ERROR(ReadQuantParams(node_, "y", ctx.input(1), zp, x->shape(), axis_, block_,
                                            node_.opset >= 13, &q));
    DataType out = out_type_;
    if (zp) {
      if (!IsQuantType(zp->dtype()))
        return NodeError(node_, std::string("'y_zero_point' has type ") +
                                    DataTypeName(zp->dtype()) +
                                    "; QuantizeLinear supports uint8 and int8 outputs");
      if (node_.attrs.Has("output_dtype") && zp->dtype() != out_type_)
        return NodeError(node_, "output_dtype and the type of 'y_zero_point' differ");
      out = zp->dtype();
    }
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, out, x->shape()));
    const float* xd = x->data<float>();
    auto run = [&](auto* yd) {
      ForEachScaleRun(x->shape(), q, [&](int64_t b, int64_t e, int64_t si) {
        if (q.per_tensor())
          ParallelFor(e - b, 4, [&](int64_t b2, int64_t e2) {
            QuantizeRun(xd, yd, b + b2, b + e2, q.scale[0], q.zero_point[0]);
          });
        else
          QuantizeRun(xd, yd, b, e, q.scale[si], q.zero_point[si]);
      });
    };
    if (out == DataType::kUint8)
      run(y->data<uint8_t>());
    else
      run(y->data<int8_t>());
    return Status::Ok();
  }
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    Cost c{0, CompulsoryBytes(in, out)};
    if (!in.empty()) c.flops = 2.0 * in[0].numel();  // a divide and an add per element
    return c;
  }

 private:
  Node node_;
  int64_t axis_, block_;
  DataType out_type_;
};

class DequantizeLinearKernel : public Kernel {
 public:
  DequantizeLinearKernel(const Node& n, int64_t axis, int64_t block)
      : node_(n), axis_(axis), block_(block) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "missing required input 'x'");
    const DataType xt = x->dtype();
    if (!IsQuantType(xt) && xt != DataType::kInt32)
      return NodeError(node_, std::string("input 'x' has unsupported type ") + DataTypeName(xt) +
                                  " (supported: uint8, int8, int32)");
    const Tensor* zp = ctx.input(2);
    if (zp && zp->dtype() != xt)
      return NodeError(node_, std::string("'x_zero_point' is ") + DataTypeName(zp->dtype()) +
                                  " but 'x' is " + DataTypeName(xt) +
                                  "; the zero point must have the data's type");
    QuantParams q;
    OPSCOPE_RETURN_IF_ERROR(ReadQuantParams(node_, "x", ctx.input(1), zp, x->shape(), axis_, block_,
                                            node_.opset >= 13, &q));
    if (xt == DataType::kInt32)
      for (size_t i = 0; i < q.zero_point.size(); ++i)
        if (q.zero_point[i] != 0)
          return NodeError(node_, "int32 input needs a zero 'x_zero_point', got " +
                                      std::to_string(q.zero_point[i]) + " at index " +
                                      std::to_string(i));
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DataType::kFloat32, x->shape()));
    float* yd = y->data<float>();
    auto run = [&](const auto* xd) {
      ForEachScaleRun(x->shape(), q, [&](int64_t b, int64_t e, int64_t si) {
        const float s = q.scale[si];
        const int32_t z = q.zero_point[si];
        auto body = [&](int64_t b2, int64_t e2) {
          for (int64_t i = b2; i < e2; ++i)
            yd[i] = static_cast<float>(static_cast<int32_t>(xd[i]) - z) * s;
        };
        if (q.per_tensor())
          ParallelFor(e - b, 2, [&](int64_t b2, int64_t e2) { body(b + b2, b + e2); });
        else
          body(b, e);
      });
    };
    if (xt == DataType::kUint8)
      run(x->data<uint8_t>());
    else if (xt == DataType::kInt8)
      run(x->data<int8_t>());
    else
      run(x->data<int32_t>());
    return Status::Ok();
  }
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    Cost c{0, CompulsoryBytes(in, out)};
    if (!in.empty()) c.flops = 2.0 * in[0].numel();
    return c;
  }

 private:
  Node node_;
  int64_t axis_, block_;
};

class DynamicQuantizeLinearKernel : public Kernel {
 public:
  explicit DynamicQuantizeLinearKernel(const Node& n) : node_(n) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    if (!x) return NodeError(node_, "missing required input 'x'");
    if (x->dtype() != DataType::kFloat32)
      return NodeError(node_,
                       std::string("input 'x' must be float32, got ") + DataTypeName(x->dtype()));
    const float* xd = x->data<float>();
    const int64_t n = x->numel();
    // Range, including 0 (so 0 is exactly representable).
    int threads = omp_get_max_threads();
    std::vector<float> mins(threads, 0.f), maxs(threads, 0.f);
    ParallelFor(n, 1, [&](int64_t b, int64_t e) {
      float lo = 0, hi = 0;
      for (int64_t i = b; i < e; ++i) {
        lo = std::min(lo, xd[i]);
        hi = std::max(hi, xd[i]);
      }
      int t = omp_get_thread_num();
      mins[t] = std::min(mins[t], lo);
      maxs[t] = std::max(maxs[t], hi);
    });
    float lo = 0, hi = 0;
    for (int t = 0; t < threads; ++t) {
      lo = std::min(lo, mins[t]);
      hi = std::max(hi, maxs[t]);
    }
    if (!std::isfinite(lo) || !std::isfinite(hi))
      return NodeError(node_,
                       "input 'x' contains an infinite value; no uint8 scale can "
                       "represent it");
    const float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    const int32_t zp = Saturate(-lo / scale, 0, 0, 255);
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DataType::kUint8, x->shape()));
    uint8_t* yd = y->data<uint8_t>();
    ParallelFor(n, 4, [&](int64_t b, int64_t e) { QuantizeRun(xd, yd, b, e, scale, zp); });
    if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) {
      OPSCOPE_ASSIGN_OR_RETURN(Tensor * s, ctx.Output(1, DataType::kFloat32, {}));
      s->data<float>()[0] = scale;
    }
    if (ctx.num_outputs() > 2 && ctx.output_wanted(2)) {
      OPSCOPE_ASSIGN_OR_RETURN(Tensor * z, ctx.Output(2, DataType::kUint8, {}));
      z->data<uint8_t>()[0] = static_cast<uint8_t>(zp);
    }
    return Status::Ok();
  }
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    Cost c{0, CompulsoryBytes(in, out)};
    // The data is read twice (range, then quantize); a min, a max, a divide and an add each.
    if (!in.empty()) {
      c.flops = 4.0 * in[0].numel();
      c.bytes += in[0].nbytes();
    }
    return c;
  }

 private:
  Node node_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_QuantizeLinear(const Node& node) {
  int64_t block = 0;
  OPSCOPE_RETURN_IF_ERROR(CheckOpsetAttrs(node, &block));
  DataType out = DataType::kUint8;
  if (node.attrs.Has("output_dtype")) {
    const int64_t t = node.attrs.Int("output_dtype", 0);
    if (t == 2)
      out = DataType::kUint8;  // TensorProto.UINT8
    else if (t == 3)
      out = DataType::kInt8;  // TensorProto.INT8
    else if (t != 0)
      return NodeError(node, "output_dtype " + std::to_string(t) +
                                 " is not supported (supported: 2 = uint8, 3 = int8)");
  }
  return std::unique_ptr<Kernel>(
      new QuantizeLinearKernel(node, node.attrs.Int("axis", 1), block, out));
}

StatusOr<std::unique_ptr<Kernel>> Create_DequantizeLinear(const Node& node) {
  int64_t block = 0;
  OPSCOPE_RETURN_IF_ERROR(CheckOpsetAttrs(node, &block));
  return std::unique_ptr<Kernel>(
      new DequantizeLinearKernel(node, node.attrs.Int("axis", 1), block));
}

StatusOr<std::unique_ptr<Kernel>> Create_DynamicQuantizeLinear(const Node& node) {
  return std::unique_ptr<Kernel>(new DynamicQuantizeLinearKernel(node));
}

}  // namespace opscope::engine
