// ConvInteger, QLinearConv, MatMulInteger, QLinearMatMul and the QDQ-fused Conv / MatMul / Gemm
// (quant_conv.h), all on the exact int16 pair GEMM of quant_common.h.
//
// Convolution: per image and group, output pixels are processed in chunks of kChunk columns;
// each chunk is im2col-packed (zero point subtracted, padding = 0 after the subtraction, as the
// ONNX reference pads x - x_zero_point with zeros) into the pair layout, multiplied by the
// packed weights (w - w_zero_point[oc], packed once for constant weights) and handed to the
// epilogue. Chunks run in parallel on the engine's pool. 1-D and 2-D convolutions are
// supported (a 1-D one is a 2-D one with height 1); 3-D ones are refused with a message.
//
// Epilogues: int32 out (ConvInteger, MatMulInteger); requantize (QLinear*): y = saturate(
// round((acc + bias) * x_scale * w_scale / y_scale) + y_zero_point) with the multiplier in float
// as ONNX Runtime computes it; fused QDQ: f = acc * x_scale * w_scale + bias, optional Relu, then
// float32 out or QuantizeLinear(f) with the trailing Q's parameters.
#include "engine/ops/quant_conv.h"

#include <algorithm>
#include <cstring>

#include "engine/int_cost.h"
#include "engine/ops/common.h"
#include "engine/ops/conv_geometry.h"
#include "engine/ops/quant_common.h"

namespace opscope::engine {
namespace {

constexpr int64_t kChunk = 128;  // output columns per packed panel (multiple of kGemmNr)

int64_t RoundUp16(int64_t n) { return (n + kGemmNr - 1) / kGemmNr * kGemmNr; }

// What happens to an int32 accumulator. Parameters are per channel (size 1 = per tensor);
// channel of element j of a stored run = ch + j * ch_step.
struct Epilogue {
  enum Kind { kInt32, kRequant, kFloat, kFloatQuant } kind = kInt32;
  DataType q_type = DataType::kUint8;
  std::vector<float> mult;     // kRequant: x*w/y; kFloat*: x*w
  std::vector<int32_t> ibias;  // kRequant: int32 bias (empty = none)
  std::vector<float> fbias;    // kFloat*: float bias (empty = none)
  bool relu = false;
  float y_scale = 1;
  int32_t y_zp = 0;

  size_t OutSize() const { return kind == kInt32 ? 4 : kind == kFloat ? 4 : 1; }
  DataType OutType() const {
    return kind == kInt32 ? DataType::kInt32 : kind == kFloat ? DataType::kFloat32 : q_type;
  }

  template <typename Q>
  void StoreQ(const int32_t* acc, int64_t count, int64_t ch, int64_t step, Q* y) const {
    const int32_t lo = QMin(q_type), hi = QMax(q_type);
    const bool pm = mult.size() > 1;
    if (kind == kRequant) {
      const bool pb = ibias.size() > 1;
      for (int64_t j = 0; j < count; ++j) {
        const int64_t c = ch + j * step;
        const int32_t b = ibias.empty() ? 0 : ibias[pb ? c : 0];
        // The bias joins the int32 accumulator in int32 arithmetic, wrapping as ONNX Runtime's
        // and the reference's int32 adds do (an int32 bias near INT32_MIN, found by model_fuzz,
        // was a signed overflow here).
        const int32_t sum = static_cast<int32_t>(static_cast<uint32_t>(acc[j]) + uint32_t(b));
        y[j] = static_cast<Q>(Saturate(static_cast<float>(sum) * mult[pm ? c : 0], y_zp, lo, hi));
      }
    } else {
      const bool pb = fbias.size() > 1;
      for (int64_t j = 0; j < count; ++j) {
        const int64_t c = ch + j * step;
        float f = static_cast<float>(acc[j]) * mult[pm ? c : 0];
        if (!fbias.empty()) f += fbias[pb ? c : 0];
        if (relu) f = std::max(f, 0.f);
        y[j] = static_cast<Q>(Saturate(f / y_scale, y_zp, lo, hi));
      }
    }
  }

  // Writes `count` results to `out` (typed by OutType()), element offset `at`.
  void Store(const int32_t* acc, int64_t count, int64_t ch, int64_t step, void* out,
             int64_t at) const {
    switch (kind) {
      case kInt32:
        std::memcpy(static_cast<int32_t*>(out) + at, acc, count * 4);
        return;
      case kFloat: {
        float* y = static_cast<float*>(out) + at;
        const bool pm = mult.size() > 1, pb = fbias.size() > 1;
        for (int64_t j = 0; j < count; ++j) {
          const int64_t c = ch + j * step;
          float f = static_cast<float>(acc[j]) * mult[pm ? c : 0];
          if (!fbias.empty()) f += fbias[pb ? c : 0];
          y[j] = relu ? std::max(f, 0.f) : f;
        }
        return;
      }
      default:
        if (q_type == DataType::kUint8)
          StoreQ(acc, count, ch, step, static_cast<uint8_t*>(out) + at);
        else
          StoreQ(acc, count, ch, step, static_cast<int8_t*>(out) + at);
    }
  }
};

// Weights (or any "A side" matrix of rows) packed as pairs with their zero points subtracted.
struct PackedRows {
  std::vector<int32_t> a2;
  int64_t rows = 0, K = 0, K2 = 0;
  const void* src = nullptr;
  std::vector<int64_t> shape;
  bool valid = false;
};

// Packs the `rows` rows of uint8/int8 elements of `t` (all of the same length K; row r starts at
// element r * K) with the zero point zp[r] (or zp[0]) subtracted. No rows, or rows of no elements
// (a weight [0, C, kh, kw] or [2^31, 0, 3]), pack nothing, without a walk over the empty rows.
void PackQuantRows(const Tensor& t, int64_t rows, const std::vector<int32_t>& zp, PackedRows* p) {
  const int64_t K = rows > 0 ? t.numel() / rows : 0;
  p->rows = rows;
  p->K = K;
  p->K2 = (K + 1) / 2;
  p->a2.assign(rows * p->K2, 0);
  std::vector<int32_t> row(K);
  if (K > 0) {
    for (int64_t r = 0; r < rows; ++r) {
      const int32_t z = zp.size() > 1 ? zp[r] : zp[0];
      for (int64_t k = 0; k < K; ++k) row[k] = ReadInt(t, r * K + k) - z;
      PackRowsA(row.data(), 1, K, K, p->a2.data() + r * p->K2);
    }
  }
  p->src = t.raw();
  p->shape = t.shape();
  p->valid = true;
}

// im2col of one group of one image for output pixels [p0, p0 + cnt) into the pair layout with
// row stride nb (>= cnt; columns cnt..nb are zero).
struct ConvShape {
  int64_t C = 0, H = 1, W = 1, KH = 1, KW = 1, SH = 1, SW = 1, DH = 1, DW = 1, PT = 0, PL = 0;
  int64_t OH = 1, OW = 1;
};

// One im2col row (k = (c, kh, kw)) for pixels [p0, p0 + cnt) into row[0, nb), contiguous int16,
// zero outside the input and past cnt.
template <typename T>
void Im2colRow(const T* x, const ConvShape& s, int32_t xz, int64_t k, int64_t p0, int64_t cnt,
               int64_t nb, int16_t* __restrict row) {
  const int64_t c = k / (s.KH * s.KW), kh = (k / s.KW) % s.KH, kw = k % s.KW;
  const T* xc = x + c * s.H * s.W;
  int64_t j = 0;
  while (j < cnt) {
    const int64_t p = p0 + j, oh = p / s.OW, ow = p % s.OW;
    const int64_t seg = std::min(cnt - j, s.OW - ow);
    int16_t* __restrict dst = row + j;
    const int64_t ih = oh * s.SH - s.PT + kh * s.DH;
    if (ih < 0 || ih >= s.H) {
      for (int64_t t = 0; t < seg; ++t) dst[t] = 0;
    } else {
      const T* xr = xc + ih * s.W;
      const int64_t iw0 = ow * s.SW - s.PL + kw * s.DW;
      // Valid t: 0 <= iw0 + t*SW < W.
      int64_t lo = iw0 >= 0 ? 0 : (-iw0 + s.SW - 1) / s.SW;
      int64_t hi = s.W - iw0 > 0 ? (s.W - iw0 + s.SW - 1) / s.SW : 0;
      lo = std::min(lo, seg);
      hi = std::max(lo, std::min(hi, seg));
      for (int64_t t = 0; t < lo; ++t) dst[t] = 0;
      if (s.SW == 1) {
        const T* __restrict src = xr + iw0;
        for (int64_t t = lo; t < hi; ++t) dst[t] = static_cast<int16_t>(src[t] - xz);
      } else {
        for (int64_t t = lo; t < hi; ++t) dst[t] = static_cast<int16_t>(xr[iw0 + t * s.SW] - xz);
      }
      for (int64_t t = hi; t < seg; ++t) dst[t] = 0;
    }
    j += seg;
  }
  for (int64_t t = cnt; t < nb; ++t) row[t] = 0;
}

// im2col of one group of one image for output pixels [p0, p0 + cnt) into the packed B layout
// (quant_common.h: 16-column strips, nb >= cnt columns, columns cnt..nb zero): two contiguous
// rows, then one interleave into each strip (both loops vectorize; writing the pair layout
// directly would be a strided scalar store).
template <typename T>
void PackIm2col(const T* x, const ConvShape& s, int32_t xz, int64_t p0, int64_t cnt, int64_t nb,
                int16_t* b2, int16_t* tmp) {
  const int64_t K = s.C * s.KH * s.KW, K2 = (K + 1) / 2;
  int16_t* __restrict r0 = tmp;
  int16_t* __restrict r1 = tmp + nb;
  for (int64_t k = 0; k < K; k += 2) {
    Im2colRow(x, s, xz, k, p0, cnt, nb, r0);
    if (k + 1 < K)
      Im2colRow(x, s, xz, k + 1, p0, cnt, nb, r1);
    else
      std::fill(r1, r1 + nb, int16_t{0});
    for (int64_t n0 = 0; n0 < nb; n0 += kGemmNr) {
      int16_t* __restrict out = b2 + (n0 / kGemmNr * K2 + (k >> 1)) * 2 * kGemmNr;
      for (int64_t t = 0; t < kGemmNr; ++t) {
        out[2 * t] = r0[n0 + t];
        out[2 * t + 1] = r1[n0 + t];
      }
    }
  }
}

// The shared convolution driver: x (uint8/int8, NCHW or NCW), packed weights, epilogue.
Status RunIntConv(const Node& node, const ConvAttrs& attrs, const Tensor& x, int32_t xz,
                  const std::vector<int64_t>& w_shape, const PackedRows& w, const Epilogue& ep,
                  KernelContext& ctx) {
  if (x.rank() != 3 && x.rank() != 4)
    return NodeError(node, "input 'x' has shape " + ShapeString(x.shape()) +
                               "; integer convolutions support 1-D and 2-D (rank 3 or 4) inputs");
  if (static_cast<int64_t>(w_shape.size()) != x.rank())
    return NodeError(node, "weight shape " + ShapeString(w_shape) + " does not match input " +
                               ShapeString(x.shape()));
  const int64_t N = x.dim(0), C = x.dim(1), OC = w_shape[0], G = attrs.group;
  if (C % G || OC % G || w_shape[1] * G != C)
    return NodeError(node, "input channels " + std::to_string(C) + ", weight " +
                               ShapeString(w_shape) + " and group " + std::to_string(G) +
                               " do not match");
  std::vector<int64_t> in_sp(x.shape().begin() + 2, x.shape().end());
  std::vector<int64_t> k_sp(w_shape.begin() + 2, w_shape.end());
  Geometry g;
  OPSCOPE_RETURN_IF_ERROR(ConvGeometry(node, attrs, in_sp, k_sp, &g));
  ConvShape s;
  s.C = C / G;
  const bool two_d = x.rank() == 4;
  s.H = two_d ? in_sp[0] : 1;
  s.W = in_sp.back();
  s.KH = two_d ? k_sp[0] : 1;
  s.KW = k_sp.back();
  s.SH = two_d ? g.s[0] : 1;
  s.SW = g.s.back();
  s.DH = two_d ? g.d[0] : 1;
  s.DW = g.d.back();
  s.PT = two_d ? g.pb[0] : 0;
  s.PL = g.pb.back();
  s.OH = two_d ? g.out[0] : 1;
  s.OW = g.out.back();
  std::vector<int64_t> out_shape = {N, OC};
  out_shape.insert(out_shape.end(), g.out.begin(), g.out.end());
  OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, ep.OutType(), out_shape));
  const int64_t P = s.OH * s.OW, OCg = OC / G, K = s.C * s.KH * s.KW, K2 = (K + 1) / 2;
  if (P == 0 || N == 0 || OC == 0) return Status::Ok();
  const int64_t chunks = (P + kChunk - 1) / kChunk, tasks = N * G * chunks;
  void* yd = y->raw();
  const int64_t xplane = s.H * s.W;
  auto body = [&](auto* xd) {
    ParallelFor(tasks, OCg * K * kChunk / 8, [&](int64_t b, int64_t e) {
      std::vector<int16_t> b2(K2 * kChunk * 2), tmp(2 * kChunk);
      std::vector<int32_t> cb(OCg * kChunk);
      for (int64_t t = b; t < e; ++t) {
        const int64_t ch = t % chunks, ng = t / chunks, gi = ng % G, n = ng / G;
        const int64_t p0 = ch * kChunk, cnt = std::min(kChunk, P - p0), nb = RoundUp16(cnt);
        PackIm2col(xd + (n * C + gi * s.C) * xplane, s, xz, p0, cnt, nb, b2.data(), tmp.data());
        Int16GemmPanel(OCg, nb, K2, w.a2.data() + gi * OCg * K2, b2.data(), cb.data(), kChunk);
        for (int64_t r = 0; r < OCg; ++r) {
          const int64_t oc = gi * OCg + r;
          ep.Store(cb.data() + r * kChunk, cnt, oc, 0, yd, (n * OC + oc) * P + p0);
        }
      }
    });
  };
  if (x.dtype() == DataType::kUint8)
    body(x.data<uint8_t>());
  else
    body(x.data<int8_t>());
  return Status::Ok();
}

Status CheckQuantInput(const Node& n, const char* what, const Tensor* t) {
  if (!t) return NodeError(n, std::string("missing required input '") + what + "'");
  if (!IsQuantType(t->dtype()))
    return NodeError(n, std::string("input '") + what + "' has type " + DataTypeName(t->dtype()) +
                            "; supported: uint8, int8");
  return Status::Ok();
}

// A per-tensor scale + zero point pair of a QLinear op, checked.
Status ScalarQuant(const Node& n, const std::string& what, const Tensor* scale, const Tensor* zp,
                   DataType data_type, float* s, int32_t* z) {
  QuantParams q;
  OPSCOPE_RETURN_IF_ERROR(ReadQuantParams(n, what, scale, zp, {}, -1, 0, false, &q));
  if (zp && zp->dtype() != data_type)
    return NodeError(n, "'" + what + "_zero_point' is " + DataTypeName(zp->dtype()) + " but '" +
                            what + "' is " + DataTypeName(data_type) +
                            "; the zero point must have the data's type");
  *s = q.scale[0];
  *z = q.zero_point[0];
  return Status::Ok();
}

// Conv-family integer ops: 2 per multiply-add.
double IntConvOps(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
                  int w_index) {
  if (static_cast<int>(in.size()) <= w_index || out.empty() || in[w_index].shape.empty()) return 0;
  const double per_out =
      static_cast<double>(in[w_index].numel()) / std::max<int64_t>(in[w_index].shape[0], 1);
  return 2 * static_cast<double>(out[0].numel()) * per_out;
}

class IntConvKernel : public Kernel, public IntegerOpsCost {
 public:
  enum Mode { kConvInteger, kQLinearConv, kFused, kToFloat };
  IntConvKernel(const Node& n, ConvAttrs a, Mode mode) : node_(n), a_(std::move(a)), mode_(mode) {}

  Status InitFused(QdqFusion f) {
    fusion_ = std::move(f);
    OPSCOPE_RETURN_IF_ERROR(CheckQuantInput(node_, "W", &fusion_.w));
    if (fusion_.w.rank() < 3) return NodeError(node_, "weight must have rank >= 3");
    const int64_t OC = fusion_.w.dim(0);
    if (fusion_.w_zero_point.size() != 1 && static_cast<int64_t>(fusion_.w_zero_point.size()) != OC)
      return NodeError(
          node_, "per-channel weight zero points must have " + std::to_string(OC) + " entries");
    PackQuantRows(fusion_.w, OC, fusion_.w_zero_point, &w_);
    ep_.kind = fusion_.quantize_output ? Epilogue::kFloatQuant : Epilogue::kFloat;
    ep_.q_type = fusion_.y_type;
    ep_.mult.clear();
    for (float ws : fusion_.w_scale) ep_.mult.push_back(fusion_.x_scale * ws);
    ep_.fbias = fusion_.bias;
    ep_.relu = fusion_.relu;
    ep_.y_scale = fusion_.y_scale;
    ep_.y_zp = fusion_.y_zero_point;
    return Status::Ok();
  }

  // kToFloat: ConvInteger's int32 result times the runtime scale (input 4), plus the bias.
  void InitToFloat(std::vector<float> bias, bool relu) {
    ep_.kind = Epilogue::kFloat;
    ep_.fbias = std::move(bias);
    ep_.relu = relu;
  }

  Status Run(KernelContext& ctx) override {
    if (mode_ == kFused) {
      const Tensor* x = ctx.input(0);
      OPSCOPE_RETURN_IF_ERROR(CheckQuantInput(node_, "x", x));
      return RunIntConv(node_, a_, *x, fusion_.x_zero_point, fusion_.w.shape(), w_, ep_, ctx);
    }
    const bool ql = mode_ == kQLinearConv;
    const Tensor* x = ctx.input(0);
    const Tensor* w = ctx.input(ql ? 3 : 1);
    Epilogue ep;
    if (mode_ == kToFloat) {
      const Tensor* sc = ctx.input(4);
      if (!sc || sc->dtype() != DataType::kFloat32 || sc->numel() != 1)
        return NodeError(
            node_, "the fused output scale must be one float32 value, got " +
                       (sc ? std::string(DataTypeName(sc->dtype())) + " " + ShapeString(sc->shape())
                           : std::string("nothing")));
      ep = ep_;
      ep.mult = {sc->data<float>()[0]};
    }
    OPSCOPE_RETURN_IF_ERROR(CheckQuantInput(node_, "x", x));
    OPSCOPE_RETURN_IF_ERROR(CheckQuantInput(node_, "w", w));
    if (w->rank() < 3)
      return NodeError(node_, "weight 'w' has shape " + ShapeString(w->shape()) +
                                  "; expected [M, C/group, k...]");
    const int64_t OC = w->dim(0);
    if (mode_ == kToFloat && ep.fbias.size() > 1 && static_cast<int64_t>(ep.fbias.size()) != OC)
      return NodeError(node_, "the fused bias has " + std::to_string(ep.fbias.size()) +
                                  " values for " + std::to_string(OC) + " output channels");
    std::vector<int32_t> xz, wz;
    if (!ql) {
      OPSCOPE_RETURN_IF_ERROR(ReadZeroPoints(node_, "x", ctx.input(2), x->dtype(), 0, &xz));
      OPSCOPE_RETURN_IF_ERROR(ReadZeroPoints(node_, "w", ctx.input(3), w->dtype(), OC, &wz));
    } else {
      float xs, ys;
      int32_t xzz, yz;
      OPSCOPE_RETURN_IF_ERROR(
          ScalarQuant(node_, "x", ctx.input(1), ctx.input(2), x->dtype(), &xs, &xzz));
      xz = {xzz};
      QuantParams wq;
      OPSCOPE_RETURN_IF_ERROR(
          ReadQuantParams(node_, "w", ctx.input(4), ctx.input(5), w->shape(), 0, 0, true, &wq));
      if (ctx.input(5) && ctx.input(5)->dtype() != w->dtype())
        return NodeError(node_, std::string("'w_zero_point' is ") +
                                    DataTypeName(ctx.input(5)->dtype()) + " but 'w' is " +
                                    DataTypeName(w->dtype()) +
                                    "; the zero point must have the data's type");
      wz = wq.zero_point;
      const Tensor* yzt = ctx.input(7);
      DataType yt = yzt ? yzt->dtype() : x->dtype();
      if (!IsQuantType(yt))
        return NodeError(node_, std::string("'y_zero_point' has type ") + DataTypeName(yt) +
                                    "; supported: uint8, int8");
      OPSCOPE_RETURN_IF_ERROR(ScalarQuant(node_, "y", ctx.input(6), yzt, yt, &ys, &yz));
      ep.kind = Epilogue::kRequant;
      ep.q_type = yt;
      ep.y_zp = yz;
      for (float s : wq.scale) ep.mult.push_back(xs * s / ys);
      if (const Tensor* b = ctx.input(8)) {
        if (b->dtype() != DataType::kInt32 || b->rank() != 1 || b->dim(0) != OC)
          return NodeError(node_, "bias 'B' must be int32 of shape [" + std::to_string(OC) +
                                      "], got " + DataTypeName(b->dtype()) + " " +
                                      ShapeString(b->shape()));
        ep.ibias.assign(b->data<int32_t>(), b->data<int32_t>() + OC);
      }
    }
    const int w_index = ql ? 3 : 1;
    const bool cached = w_.valid && ctx.input_is_constant(w_index) && w_.src == w->raw() &&
                        w_.shape == w->shape() && wz == w_zp_;
    if (!cached) {
      PackQuantRows(*w, OC, wz, &w_);
      w_zp_ = wz;
    }
    return RunIntConv(node_, a_, *x, xz[0], w->shape(), w_, ep, ctx);
  }

  // Bytes at the tensors' real widths; the fused step reads the quantized x and W (not the
  // float tensors of the Conv node's inputs) and writes int8 (or float) y.
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    if (mode_ != kFused) return {0, CompulsoryBytes(in, out)};
    Cost c;
    if (in.empty() || out.empty()) return c;
    c.bytes = static_cast<double>(in[0].numel()) + static_cast<double>(fusion_.w.numel()) +
              4.0 * fusion_.bias.size() +
              static_cast<double>(out[0].numel()) * (fusion_.quantize_output ? 1 : 4);
    return c;
  }
  double IntegerOps(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    if (mode_ == kToFloat) return IntConvOps(in, out, 1);
    if (mode_ != kFused) return IntConvOps(in, out, mode_ == kQLinearConv ? 3 : 1);
    if (out.empty()) return 0;
    const double w_per_out =
        static_cast<double>(fusion_.w.numel()) / std::max<int64_t>(fusion_.w.dim(0), 1);
    return 2 * static_cast<double>(out[0].numel()) * w_per_out;
  }

 private:
  Node node_;
  ConvAttrs a_;
  Mode mode_;
  QdqFusion fusion_;
  PackedRows w_;
  std::vector<int32_t> w_zp_;
  Epilogue ep_;
};

// ---- matmul ------------------------------------------------------------------------------

// A [.., M, K] x B [.., K, N] with numpy batch broadcasting. B elements are read through strides
// (sk, sn) so that Gemm's transposed B needs no copy.
struct IntMatMulShape {
  std::vector<int64_t> a_shape, b_shape, out_shape, batch;
  int64_t M = 0, K = 0, N = 0;
  bool a_vec = false, b_vec = false;
};

Status MatMulShapes(const Node& n, const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                    IntMatMulShape* s) {
  if (a.empty() || b.empty()) return NodeError(n, "scalar operands are not allowed");
  s->a_shape = a;
  s->b_shape = b;
  s->a_vec = a.size() == 1;
  s->b_vec = b.size() == 1;
  if (s->a_vec) s->a_shape.insert(s->a_shape.begin(), 1);
  if (s->b_vec) s->b_shape.push_back(1);
  s->M = s->a_shape[s->a_shape.size() - 2];
  s->K = s->a_shape.back();
  s->N = s->b_shape.back();
  if (s->b_shape[s->b_shape.size() - 2] != s->K)
    return NodeError(n, "inner dimensions differ: A " + ShapeString(a) + ", B " + ShapeString(b));
  std::vector<int64_t> ab(s->a_shape.begin(), s->a_shape.end() - 2),
      bb(s->b_shape.begin(), s->b_shape.end() - 2);
  if (!BroadcastShapes(ab, bb, &s->batch))
    return NodeError(
        n, "batch dimensions do not broadcast: A " + ShapeString(a) + ", B " + ShapeString(b));
  s->out_shape = s->batch;
  if (!s->a_vec) s->out_shape.push_back(s->M);
  if (!s->b_vec) s->out_shape.push_back(s->N);
  return Status::Ok();
}

// A and B both in pair layouts, run for every batch and column chunk.
template <typename TA, typename TB>
void RunIntMatMul(const IntMatMulShape& s, const TA* a, const std::vector<int32_t>& az, const TB* b,
                  int64_t sk, int64_t sn, const std::vector<int32_t>& bz, const Epilogue& ep,
                  void* y) {
  const int64_t M = s.M, K = s.K, N = s.N, K2 = (K + 1) / 2;
  const std::vector<int64_t> ab(s.a_shape.begin(), s.a_shape.end() - 2),
      bb(s.b_shape.begin(), s.b_shape.end() - 2);
  const std::vector<int64_t> astr = BroadcastStrides(ab, s.batch),
                             bstr = BroadcastStrides(bb, s.batch);
  const int64_t nbatch = Numel(s.batch), chunks = (N + kChunk - 1) / kChunk;
  auto offsets = [&](int64_t bi, int64_t* ao, int64_t* bo) {
    int64_t rem = bi;
    *ao = *bo = 0;
    for (int d = static_cast<int>(s.batch.size()) - 1; d >= 0; --d) {
      const int64_t idx = rem % s.batch[d];
      rem /= s.batch[d];
      *ao += idx * astr[d];
      *bo += idx * bstr[d];
    }
  };
  // A packed for every batch (a_zero_point per row or per tensor).
  const int64_t a_batches = Numel(ab);
  std::vector<int32_t> a2(a_batches * M * K2);
  ParallelFor(a_batches * M, K, [&](int64_t b0, int64_t e0) {
    std::vector<int32_t> row(K);
    for (int64_t r = b0; r < e0; ++r) {
      const int32_t z = az.size() > 1 ? az[r % M] : az[0];
      for (int64_t k = 0; k < K; ++k) row[k] = static_cast<int32_t>(a[r * K + k]) - z;
      PackRowsA(row.data(), 1, K, K, a2.data() + r * K2);
    }
  });
  const int64_t b_mat = K * N;
  ParallelFor(nbatch * chunks, M * K * kChunk / 8, [&](int64_t b0, int64_t e0) {
    std::vector<int16_t> b2(K2 * kChunk * 2);
    std::vector<int32_t> cb(M * kChunk);
    for (int64_t t = b0; t < e0; ++t) {
      const int64_t bi = t / chunks, ch = t % chunks;
      int64_t ao, bo;
      offsets(bi, &ao, &bo);
      const int64_t n0 = ch * kChunk, cnt = std::min(kChunk, N - n0), nb = RoundUp16(cnt);
      const TB* bm = b + bo * b_mat;
      int16_t* pb = b2.data();
      for (int64_t k = 0; k < 2 * K2; ++k) {
        if (k >= K) {
          for (int64_t j = 0; j < nb; ++j) pb[BPairIndex(k, j, K2)] = 0;
          continue;
        }
        const TB* src = bm + k * sk + n0 * sn;
        if (bz.size() > 1) {
          for (int64_t j = 0; j < cnt; ++j)
            pb[BPairIndex(k, j, K2)] =
                static_cast<int16_t>(static_cast<int32_t>(src[j * sn]) - bz[n0 + j]);
        } else {
          const int32_t z = bz[0];
          for (int64_t j = 0; j < cnt; ++j)
            pb[BPairIndex(k, j, K2)] = static_cast<int16_t>(static_cast<int32_t>(src[j * sn]) - z);
        }
        for (int64_t j = cnt; j < nb; ++j) pb[BPairIndex(k, j, K2)] = 0;
      }
      Int16GemmPanel(M, nb, K2, a2.data() + ao * M * K2, b2.data(), cb.data(), kChunk);
      for (int64_t m = 0; m < M; ++m)
        ep.Store(cb.data() + m * kChunk, cnt, n0, 1, y, (bi * M + m) * N + n0);
    }
  });
}

class IntMatMulKernel : public Kernel, public IntegerOpsCost {
 public:
  enum Mode { kMatMulInteger, kQLinearMatMul, kFusedMatMul, kFusedGemm };
  IntMatMulKernel(const Node& n, Mode mode) : node_(n), mode_(mode) {}

  Status InitFused(QdqFusion f) {
    fusion_ = std::move(f);
    OPSCOPE_RETURN_IF_ERROR(CheckQuantInput(node_, "B", &fusion_.w));
    if (fusion_.w.rank() != 2) return NodeError(node_, "fused weight must be 2-D");
    ep_.kind = fusion_.quantize_output ? Epilogue::kFloatQuant : Epilogue::kFloat;
    ep_.q_type = fusion_.y_type;
    for (float ws : fusion_.w_scale) ep_.mult.push_back(fusion_.x_scale * ws);
    ep_.fbias = fusion_.bias;
    ep_.relu = fusion_.relu;
    ep_.y_scale = fusion_.y_scale;
    ep_.y_zp = fusion_.y_zero_point;
    trans_b_ = mode_ == kFusedGemm && node_.attrs.Int("transB", 0) != 0;
    return Status::Ok();
  }

  Status Run(KernelContext& ctx) override {
    const bool ql = mode_ == kQLinearMatMul, fused = mode_ == kFusedMatMul || mode_ == kFusedGemm;
    const Tensor* a = ctx.input(0);
    const Tensor* b = fused ? &fusion_.w : ctx.input(ql ? 3 : 1);
    OPSCOPE_RETURN_IF_ERROR(CheckQuantInput(node_, "A", a));
    OPSCOPE_RETURN_IF_ERROR(CheckQuantInput(node_, "B", b));
    std::vector<int64_t> bshape = b->shape();
    if (trans_b_) std::swap(bshape[0], bshape[1]);
    IntMatMulShape s;
    OPSCOPE_RETURN_IF_ERROR(MatMulShapes(node_, a->shape(), bshape, &s));
    if (mode_ == kFusedGemm && a->rank() != 2)
      return NodeError(node_, "Gemm input A must be 2-D, got " + ShapeString(a->shape()));
    std::vector<int32_t> az, bz;
    Epilogue local;
    const Epilogue* ep = &ep_;
    if (fused) {
      az = {fusion_.x_zero_point};
      bz = fusion_.w_zero_point;
      if (bz.size() != 1 && static_cast<int64_t>(bz.size()) != s.N)
        return NodeError(
            node_, "per-column weight zero points must have " + std::to_string(s.N) + " entries");
    } else if (!ql) {
      OPSCOPE_RETURN_IF_ERROR(ReadZeroPoints(node_, "a", ctx.input(2), a->dtype(), s.M, &az));
      OPSCOPE_RETURN_IF_ERROR(ReadZeroPoints(node_, "b", ctx.input(3), b->dtype(), s.N, &bz));
      ep = &local;
    } else {
      float as, ys;
      int32_t azz, yz;
      OPSCOPE_RETURN_IF_ERROR(
          ScalarQuant(node_, "a", ctx.input(1), ctx.input(2), a->dtype(), &as, &azz));
      az = {azz};
      QuantParams bq;
      const Tensor* bs = ctx.input(4);
      // b's scale: per tensor, or per output column (1-D of length N).
      OPSCOPE_RETURN_IF_ERROR(
          ReadQuantParams(node_, "b", bs, ctx.input(5), {s.K, s.N}, 1, 0, b->rank() == 2, &bq));
      if (ctx.input(5) && ctx.input(5)->dtype() != b->dtype())
        return NodeError(node_, std::string("'b_zero_point' is ") +
                                    DataTypeName(ctx.input(5)->dtype()) + " but 'b' is " +
                                    DataTypeName(b->dtype()) +
                                    "; the zero point must have the data's type");
      bz = bq.zero_point;
      const Tensor* yzt = ctx.input(7);
      DataType yt = yzt ? yzt->dtype() : a->dtype();
      if (!IsQuantType(yt))
        return NodeError(node_, std::string("'y_zero_point' has type ") + DataTypeName(yt) +
                                    "; supported: uint8, int8");
      OPSCOPE_RETURN_IF_ERROR(ScalarQuant(node_, "y", ctx.input(6), yzt, yt, &ys, &yz));
      local.kind = Epilogue::kRequant;
      local.q_type = yt;
      local.y_zp = yz;
      for (float v : bq.scale) local.mult.push_back(as * v / ys);
      ep = &local;
    }
    if (fused && !ep_.fbias.empty() && ep_.fbias.size() != 1 &&
        static_cast<int64_t>(ep_.fbias.size()) != s.N)
      return NodeError(node_, "bias length " + std::to_string(ep_.fbias.size()) +
                                  " does not match N = " + std::to_string(s.N));
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, ep->OutType(), s.out_shape));
    if (y->numel() == 0) return Status::Ok();
    const int64_t sk = trans_b_ ? 1 : s.N, sn = trans_b_ ? s.K : 1;
    auto go = [&](const auto* ad) {
      if (b->dtype() == DataType::kUint8)
        RunIntMatMul(s, ad, az, b->data<uint8_t>(), sk, sn, bz, *ep, y->raw());
      else
        RunIntMatMul(s, ad, az, b->data<int8_t>(), sk, sn, bz, *ep, y->raw());
    };
    if (a->dtype() == DataType::kUint8)
      go(a->data<uint8_t>());
    else
      go(a->data<int8_t>());
    return Status::Ok();
  }

  double IntegerOps(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    if (in.empty() || out.empty()) return 0;
    const auto& as = in[0].shape;
    const int64_t K = as.empty() ? 0 : as.back();
    return 2.0 * static_cast<double>(out[0].numel()) * static_cast<double>(K);
  }
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    Cost c{0, CompulsoryBytes(in, out)};
    if (in.empty() || out.empty()) return c;
    if (mode_ == kFusedMatMul || mode_ == kFusedGemm)
      c.bytes = static_cast<double>(in[0].numel()) + static_cast<double>(fusion_.w.numel()) +
                4.0 * fusion_.bias.size() +
                static_cast<double>(out[0].numel()) * (fusion_.quantize_output ? 1 : 4);
    return c;
  }

 private:
  Node node_;
  Mode mode_;
  QdqFusion fusion_;
  Epilogue ep_;
  bool trans_b_ = false;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_ConvInteger(const Node& node) {
  ConvAttrs a;
  OPSCOPE_RETURN_IF_ERROR(ReadConvAttrs(node, false, &a));
  return std::unique_ptr<Kernel>(
      new IntConvKernel(node, std::move(a), IntConvKernel::kConvInteger));
}

StatusOr<std::unique_ptr<Kernel>> Create_QLinearConv(const Node& node) {
  ConvAttrs a;
  OPSCOPE_RETURN_IF_ERROR(ReadConvAttrs(node, false, &a));
  return std::unique_ptr<Kernel>(
      new IntConvKernel(node, std::move(a), IntConvKernel::kQLinearConv));
}

StatusOr<std::unique_ptr<Kernel>> Create_MatMulInteger(const Node& node) {
  return std::unique_ptr<Kernel>(new IntMatMulKernel(node, IntMatMulKernel::kMatMulInteger));
}

StatusOr<std::unique_ptr<Kernel>> Create_QLinearMatMul(const Node& node) {
  return std::unique_ptr<Kernel>(new IntMatMulKernel(node, IntMatMulKernel::kQLinearMatMul));
}

StatusOr<std::unique_ptr<Kernel>> CreateQdqConv(const Node& node, QdqFusion fusion) {
  ConvAttrs a;
  OPSCOPE_RETURN_IF_ERROR(ReadConvAttrs(node, false, &a));
  auto k = std::make_unique<IntConvKernel>(node, std::move(a), IntConvKernel::kFused);
  OPSCOPE_RETURN_IF_ERROR(k->InitFused(std::move(fusion)));
  return std::unique_ptr<Kernel>(std::move(k));
}

StatusOr<std::unique_ptr<Kernel>> CreateConvIntegerToFloat(const Node& node,
                                                           std::vector<float> bias, bool relu) {
  ConvAttrs a;
  OPSCOPE_RETURN_IF_ERROR(ReadConvAttrs(node, false, &a));
  auto k = std::make_unique<IntConvKernel>(node, std::move(a), IntConvKernel::kToFloat);
  k->InitToFloat(std::move(bias), relu);
  return std::unique_ptr<Kernel>(std::move(k));
}

StatusOr<std::unique_ptr<Kernel>> CreateQdqMatMul(const Node& node, QdqFusion fusion) {
  auto k = std::make_unique<IntMatMulKernel>(
      node, node.op_type == "Gemm" ? IntMatMulKernel::kFusedGemm : IntMatMulKernel::kFusedMatMul);
  OPSCOPE_RETURN_IF_ERROR(k->InitFused(std::move(fusion)));
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace opscope::engine
