// Conv and ConvTranspose on oneDNN (convolution_forward / deconvolution_forward, inference).
//
// Geometry (auto_pad, pads, output_shape, output_padding) is resolved here in ONNX terms and
// handed to oneDNN as explicit left/right padding. Weights are created with format_tag::any so
// oneDNN picks its preferred blocked layout; the reorder is cached (DnnlWeightCache). Activations
// stay plain NC[D]HW at the operator boundary; for convolutions with enough channels the
// primitive is created with `any` activations too (blocked direct kernels beat the plain-layout
// GEMM path there) and src/dst are reordered in and out. Keeping blocked layouts between
// consecutive convolutions would remove those reorders; that is a graph-level optimisation the
// engine does not do yet.
//
// Depthwise 1-D and 2-D convolutions (group == C == OC, kernel up to 7x7, stride 1 or 2, no
// dilation; a 1-D one is a plane of one row)
// bypass oneDNN: its depthwise kernels need nhwc/blocked activations, and the two reorders
// around every call cost more than the convolution itself. A direct NCHW stencil per (n, c)
// plane runs instead, in two variants: row by row (out-of-range rows read a zero row, only the
// border columns check bounds), or, for narrow unit-stride planes, one flat loop over a padded
// copy of the plane, which keeps the 14x14 and 7x7 planes of late MobileNet stages in full
// vectors (see DwPlaneGeo::Flat).
//
// Primitives are rebuilt when the input/weight shapes change and reused otherwise.
//
// ConvTranspose output rows past the end of the "full" transposed output (output_padding, or an
// output_shape larger than the natural size) receive no input contribution: the primitive then
// writes a temporary of the covered size and the kernel copies it into place and fills the tail
// with post_ops(bias).
#include <algorithm>
#include <cstring>

#include "base/strings.h"
#include "engine/ops/activation.h"
#include "engine/ops/common.h"
#include "engine/ops/conv_geometry.h"
#include "engine/ops/dnnl_common.h"

namespace opscope::engine {
Status ReadConvAttrs(const Node& n, bool transpose, ConvAttrs* a) {
  a->auto_pad = n.attrs.String("auto_pad", "NOTSET");
  if (a->auto_pad != "NOTSET" && a->auto_pad != "SAME_UPPER" && a->auto_pad != "SAME_LOWER" &&
      a->auto_pad != "VALID")
    return NodeError(
        n, "auto_pad '" + a->auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  a->kernel_shape = n.attrs.Ints("kernel_shape");
  a->strides = n.attrs.Ints("strides");
  a->dilations = n.attrs.Ints("dilations");
  a->pads = n.attrs.Ints("pads");
  a->group = n.attrs.Int("group", 1);
  if (a->group < 1) return NodeError(n, "group must be >= 1, got " + std::to_string(a->group));
  for (int64_t s : a->strides)
    if (s < 1) return NodeError(n, "strides must be >= 1");
  for (int64_t d : a->dilations)
    if (d < 1) return NodeError(n, "dilations must be >= 1");
  for (int64_t p : a->pads)
    if (p < 0) return NodeError(n, "pads must be >= 0");
  for (int64_t k : a->kernel_shape)
    if (k < 1) return NodeError(n, "kernel_shape entries must be >= 1");
  if (transpose) {
    a->output_padding = n.attrs.Ints("output_padding");
    a->output_shape = n.attrs.Ints("output_shape");
    for (int64_t p : a->output_padding)
      if (p < 0) return NodeError(n, "output_padding must be >= 0");
  }
  return Status();
}

namespace {
Status SpatialParams(const Node& n, const ConvAttrs& a, const std::vector<int64_t>& kernel,
                     Geometry* g) {
  size_t sp = kernel.size();
  if (!a.kernel_shape.empty() && a.kernel_shape != kernel)
    return NodeError(n, "kernel_shape attribute does not match the weight's spatial dims");
  g->k = kernel;
  g->s = a.strides;
  if (g->s.empty()) g->s.assign(sp, 1);
  g->d = a.dilations;
  if (g->d.empty()) g->d.assign(sp, 1);
  if (g->s.size() != sp)
    return NodeError(n, "strides has " + std::to_string(g->s.size()) + " entries, expected " +
                            std::to_string(sp));
  if (g->d.size() != sp)
    return NodeError(n, "dilations has " + std::to_string(g->d.size()) + " entries, expected " +
                            std::to_string(sp));
  if (!a.pads.empty() && a.pads.size() != 2 * sp)
    return NodeError(n, "pads has " + std::to_string(a.pads.size()) + " entries, expected " +
                            std::to_string(2 * sp));
  return Status();
}

}  // namespace

Status ConvGeometry(const Node& n, const ConvAttrs& a, const std::vector<int64_t>& in,
                    const std::vector<int64_t>& kernel, Geometry* g) {
  OPSCOPE_RETURN_IF_ERROR(SpatialParams(n, a, kernel, g));
  size_t sp = kernel.size();
  g->pb.assign(sp, 0);
  g->pe.assign(sp, 0);
  g->out.assign(sp, 0);
  for (size_t i = 0; i < sp; ++i) {
    // An empty tensor may carry any other dim (a [0, 2^62] weight holds no data): bound the
    // sizes before the arithmetic below, which would overflow.
    constexpr int64_t kHuge = int64_t{1} << 40;
    if (in[i] > kHuge || g->k[i] > kHuge || g->d[i] > kHuge)
      return NodeError(n, "spatial dim " + std::to_string(i) + ": input " + std::to_string(in[i]) +
                              ", kernel " + std::to_string(g->k[i]) + ", dilation " +
                              std::to_string(g->d[i]) + " out of range");
    int64_t dk = (g->k[i] - 1) * g->d[i] + 1;
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      int64_t o = (in[i] + g->s[i] - 1) / g->s[i];
      int64_t total = std::max<int64_t>(0, (o - 1) * g->s[i] + dk - in[i]);
      int64_t small = total / 2;
      g->pb[i] = a.auto_pad == "SAME_UPPER" ? small : total - small;
      g->pe[i] = total - g->pb[i];
    } else if (a.auto_pad == "NOTSET" && !a.pads.empty()) {
      g->pb[i] = a.pads[i];
      g->pe[i] = a.pads[i + sp];
    }
    int64_t span = in[i] + g->pb[i] + g->pe[i] - dk;
    if (span < 0)
      return NodeError(n, "spatial dim " + std::to_string(i) + " of size " + std::to_string(in[i]) +
                              " (padded " + std::to_string(in[i] + g->pb[i] + g->pe[i]) +
                              ") is smaller than the dilated kernel " + std::to_string(dk));
    g->out[i] = span / g->s[i] + 1;
  }
  return Status();
}

namespace {

// Transposed geometry. `full[i]` is the unpadded transposed extent; `core[i]` the part of the
// output the primitive produces (the rest is the bias-only tail).
Status ConvTransposeGeometry(const Node& n, const ConvAttrs& a, const std::vector<int64_t>& in,
                             const std::vector<int64_t>& kernel, Geometry* g,
                             std::vector<int64_t>* core) {
  OPSCOPE_RETURN_IF_ERROR(SpatialParams(n, a, kernel, g));
  size_t sp = kernel.size();
  std::vector<int64_t> op = a.output_padding;
  if (op.empty()) op.assign(sp, 0);
  if (op.size() != sp) return NodeError(n, "output_padding has the wrong number of entries");
  std::vector<int64_t> target;
  if (!a.output_shape.empty()) {
    if (a.output_shape.size() < sp) return NodeError(n, "output_shape has too few entries");
    target.assign(a.output_shape.end() - static_cast<long>(sp), a.output_shape.end());
  } else if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
    target.resize(sp);
    for (size_t i = 0; i < sp; ++i) target[i] = in[i] * g->s[i];
  }
  g->pb.assign(sp, 0);
  g->pe.assign(sp, 0);
  g->out.assign(sp, 0);
  core->assign(sp, 0);
  for (size_t i = 0; i < sp; ++i) {
    if (op[i] >= std::max(g->s[i], g->d[i]))
      return NodeError(n, "output_padding must be smaller than the stride or the dilation");
    int64_t dk = (g->k[i] - 1) * g->d[i] + 1;
    int64_t full = g->s[i] * (in[i] - 1) + dk;
    if (!target.empty()) {
      int64_t total = std::max<int64_t>(0, full + op[i] - target[i]);
      if (a.auto_pad == "SAME_UPPER") {
        g->pb[i] = total / 2;
      } else {
        g->pb[i] = total - total / 2;
      }
      g->pe[i] = total - g->pb[i];
      g->out[i] = target[i];
    } else {
      if (a.auto_pad == "NOTSET" && !a.pads.empty()) {
        g->pb[i] = a.pads[i];
        g->pe[i] = a.pads[i + sp];
      }
      g->out[i] = full + op[i] - g->pb[i] - g->pe[i];
    }
    if (g->out[i] < 0)
      return NodeError(
          n, "pads exceed the transposed output size in spatial dim " + std::to_string(i));
    (*core)[i] = std::max<int64_t>(0, std::min(g->out[i], full - g->pb[i]));
  }
  return Status();
}

void AppendPostOps(const std::vector<PostOp>& post_ops, dnnl::primitive_attr* attr) {
  if (post_ops.empty()) return;
  dnnl::post_ops ops;
  for (const PostOp& op : post_ops) AppendEltwisePostOp(op, &ops);
  attr->set_post_ops(ops);
}

// State shared by both kernels: a primitive built for one set of shapes plus the memory objects
// around it.
struct ConvPrimitive {
  std::vector<int64_t> key;
  dnnl::primitive prim;
  std::string impl;  // oneDNN's implementation name, e.g. "brgconv:avx512_core"
  // src_plain / dst_plain: the layouts X and Y have in the engine (NCHW, or NHWC when the
  // session keeps them channels-last).
  dnnl::memory::desc src_plain, dst_plain, w_plain, w_prim, bias_md;
  dnnl::memory src_user, dst_user, src_prim, dst_prim, bias_mem;
  bool src_reorder = false, dst_reorder = false;
  dnnl::reorder src_to_prim, dst_from_prim;
  DnnlWeightCache weights;
  // Pointwise path: a stride-1, ungrouped 1x1 convolution on NCHW is, per image, the GEMM
  // Y[OC,S] = W[OC,IC] * X[IC,S] (+ bias per row). oneDNN's matmul runs it 3-5x faster than its
  // im2col convolution for plain activations (measured on MobileNet-style expand/project convs),
  // with no reorders at all.
  bool gemm = false;
  dnnl::matmul gemm_prim;
  dnnl::memory gemm_w, gemm_x, gemm_y;
  int64_t gemm_x_stride = 0, gemm_y_stride = 0;  // floats per image
  // Depthwise path (see the top of the file): geometry of one plane plus a zero row of width W.
  bool depthwise = false;
  int64_t dw_kh = 0, dw_kw = 0, dw_sh = 1, dw_sw = 1, dw_pt = 0, dw_pl = 0;
  std::vector<float> dw_zeros;
};

constexpr int64_t kMaxDepthwiseKernel = 7;

// Geometry of one depthwise plane: input H x W, output OH x OW, kernel KH x KW, strides, top and
// left pads (the bottom/right pads only show in OH/OW).
struct DwPlaneGeo {
  int64_t H, W, OH, OW, KH, KW, SH, SW, pt, pl;

  // Unit-stride planes up to this output width take the flat path (DepthwisePlaneFlat); wider
  // ones and strided ones go row by row (DepthwisePlaneRows). On the MobileNet-style benchmark
  // model the flat path is 1.3-1.4x faster on 7x7 to 56x56 planes and 1.2x slower on 112x112.
  static constexpr int64_t kFlatMaxWidth = 64;
  bool Flat() const { return SH == 1 && SW == 1 && OW <= kFlatMaxWidth; }
  // Flat path: the plane with its padding made explicit is Hp x Wp; the stencil computes
  // FlatOutputs() outputs (a multiple of 8, so no vector remainder loop runs with 4 or 8
  // lanes), reading at most 8 floats past the padded plane.
  int64_t Hp() const { return OH + KH - 1; }
  int64_t Wp() const { return OW + KW - 1; }
  int64_t FlatOutputs() const { return ((OH - 1) * Wp() + OW + 7) / 8 * 8; }
  int64_t StageFloats() const { return Flat() ? Hp() * Wp() + 8 : 0; }
  int64_t OutFloats() const { return Flat() ? FlatOutputs() : 0; }
};

// Row-by-row path: one output plane y = bias + stencil(x, w). Out-of-range input rows point at
// a shared zero row, so the interior columns are one branch-free loop the compiler vectorizes
// and only the few border columns check bounds. K and S fix a square kernel and equal strides
// at compile time (0 = take them from `g` at run time, for the less common shapes).
template <int K, int S>
[[gnu::always_inline]] inline void DepthwisePlaneRows(const float* x, const float* w, float bias,
                                                      const float* zeros, const DwPlaneGeo& g,
                                                      float* y) {
  const int64_t KH = K ? K : g.KH, KW = K ? K : g.KW;
  const int64_t SH = S ? S : g.SH, SW = S ? S : g.SW;
  const int64_t W = g.W, OW = g.OW, pl = g.pl;
  // Interior columns: every tap column ow*SW - pl + kw lies in [0, W).
  int64_t lo = std::min<int64_t>((pl + SW - 1) / SW, OW);
  int64_t hi = W - KW + pl >= 0 ? (W - KW + pl) / SW + 1 : 0;
  hi = std::max(lo, std::min(hi, OW));
  // Local copy of the taps: stores to y cannot alias it, so the interior loop needs no
  // run-time alias checks against w.
  float wl[kMaxDepthwiseKernel * kMaxDepthwiseKernel];
  for (int64_t i = 0; i < KH * KW; ++i) wl[i] = w[i];
  const float* rows[kMaxDepthwiseKernel];
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const int64_t ih0 = oh * SH - g.pt;
    for (int64_t kh = 0; kh < KH; ++kh) {
      const int64_t ih = ih0 + kh;
      rows[kh] = ih >= 0 && ih < g.H ? x + ih * W : zeros;
    }
    float* yr = y + oh * OW;
    auto border = [&](int64_t ow) {
      float acc = bias;
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw) {
          const int64_t iw = ow * SW - pl + kw;
          if (iw >= 0 && iw < W) acc += wl[kh * KW + kw] * rows[kh][iw];
        }
      yr[ow] = acc;
    };
    for (int64_t ow = 0; ow < lo; ++ow) border(ow);
    for (int64_t ow = lo; ow < hi; ++ow) {
      const int64_t base = ow * SW - pl;
      float acc = bias;
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw) acc += wl[kh * KW + kw] * rows[kh][base + kw];
      yr[ow] = acc;
    }
    for (int64_t ow = hi; ow < OW; ++ow) border(ow);
  }
}

// Flat path (unit strides, narrow planes): the plane is copied into `stage` with its padding
// made explicit (the caller zeroes `stage` once per call; only input positions are written, so
// the padding stays zero from plane to plane), then the stencil runs as one loop over the whole
// plane with the padded width Wp as the row pitch: output (oh, ow) lands at obuf[oh * Wp + ow]
// and the KW - 1 columns in between are computed and dropped. A 7x7 plane is then 8 full
// vectors instead of 7 rows of 5 interior columns plus borders. The copies are plain loops (no
// memcpy calls: the rows are often 7 or 14 floats).
template <int KK>
[[gnu::always_inline]] inline void DepthwisePlaneFlat(const float* x, const float* w, float bias,
                                                      const DwPlaneGeo& g, float* stage,
                                                      float* obuf, float* y) {
  const int64_t Hp = g.Hp(), Wp = g.Wp();
  const int64_t r0 = std::min(g.pt, Hp), r1 = std::max(r0, std::min(Hp, g.pt + g.H));
  const int64_t c0 = std::min(g.pl, Wp), c1 = std::max(c0, std::min(Wp, g.pl + g.W));
  for (int64_t r = r0; r < r1; ++r) {
    const float* __restrict xr = x + (r - g.pt) * g.W - g.pl;
    float* __restrict dst = stage + r * Wp;
    for (int64_t c = c0; c < c1; ++c) dst[c] = xr[c];
  }
  const int64_t taps = KK ? KK : g.KH * g.KW, n = g.FlatOutputs();
  float wl[kMaxDepthwiseKernel * kMaxDepthwiseKernel];
  const float* tap[kMaxDepthwiseKernel * kMaxDepthwiseKernel];
  for (int64_t kh = 0; kh < g.KH; ++kh)
    for (int64_t kw = 0; kw < g.KW; ++kw) {
      wl[kh * g.KW + kw] = w[kh * g.KW + kw];
      tap[kh * g.KW + kw] = stage + kh * Wp + kw;
    }
  if constexpr (KK > 0) {
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) {
      float acc = bias;
      for (int t = 0; t < KK; ++t) acc += wl[t] * tap[t][i];
      obuf[i] = acc;
    }
  } else {
    std::fill(obuf, obuf + n, bias);
    for (int64_t t = 0; t < taps; ++t) {
      const float* __restrict in = tap[t];
      const float wt = wl[t];
#pragma GCC ivdep
      for (int64_t i = 0; i < n; ++i) obuf[i] += wt * in[i];
    }
  }
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const float* __restrict src = obuf + oh * Wp;
    float* __restrict dst = y + oh * g.OW;
    for (int64_t ow = 0; ow < g.OW; ++ow) dst[ow] = src[ow];
  }
}

// Picks the path and the compile-time specialisation for the common 3x3 and 5x5 shapes.
[[gnu::always_inline]] inline void DepthwisePlaneAny(const float* x, const float* w, float bias,
                                                     const float* zeros, const DwPlaneGeo& g,
                                                     float* stage, float* obuf, float* y) {
  const int64_t s = g.SH == g.SW ? g.SH : 0;
  if (g.Flat()) {
    if (g.KH == 3 && g.KW == 3) {
      DepthwisePlaneFlat<9>(x, w, bias, g, stage, obuf, y);
    } else if (g.KH == 5 && g.KW == 5) {
      DepthwisePlaneFlat<25>(x, w, bias, g, stage, obuf, y);
    } else {
      DepthwisePlaneFlat<0>(x, w, bias, g, stage, obuf, y);
    }
  } else if (g.KH == 3 && g.KW == 3 && s == 1) {
    DepthwisePlaneRows<3, 1>(x, w, bias, zeros, g, y);
  } else if (g.KH == 3 && g.KW == 3 && s == 2) {
    DepthwisePlaneRows<3, 2>(x, w, bias, zeros, g, y);
  } else if (g.KH == 5 && g.KW == 5 && s == 1) {
    DepthwisePlaneRows<5, 1>(x, w, bias, zeros, g, y);
  } else if (g.KH == 5 && g.KW == 5 && s == 2) {
    DepthwisePlaneRows<5, 2>(x, w, bias, zeros, g, y);
  } else {
    DepthwisePlaneRows<0, 0>(x, w, bias, zeros, g, y);
  }
}

// The engine is built for baseline x86-64 (SSE2); the stencils are compiled again for AVX2+FMA
// and for AVX-512 and picked at run time. The row-by-row path gains from 16 lanes (1.2x on
// 112x112 and 56x56 planes); the flat path's planes are too small for them (7x7 and 14x14 got
// 1.15-1.35x slower with AVX-512 than with AVX2), so it stays on AVX2.
#if defined(__x86_64__) && defined(__GNUC__)
[[gnu::target("avx2,fma")]] void DepthwisePlaneAvx2(const float* x, const float* w, float bias,
                                                    const float* zeros, const DwPlaneGeo& g,
                                                    float* stage, float* obuf, float* y) {
  DepthwisePlaneAny(x, w, bias, zeros, g, stage, obuf, y);
}
[[gnu::target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]] void DepthwisePlaneAvx512(
    const float* x, const float* w, float bias, const float* zeros, const DwPlaneGeo& g,
    float* stage, float* obuf, float* y) {
  DepthwisePlaneAny(x, w, bias, zeros, g, stage, obuf, y);
}
#endif

void DepthwisePlaneBaseline(const float* x, const float* w, float bias, const float* zeros,
                            const DwPlaneGeo& g, float* stage, float* obuf, float* y) {
  DepthwisePlaneAny(x, w, bias, zeros, g, stage, obuf, y);
}

using DepthwisePlaneFn = void (*)(const float*, const float*, float, const float*,
                                  const DwPlaneGeo&, float*, float*, float*);

DepthwisePlaneFn SelectDepthwisePlane(bool flat) {
#if defined(__x86_64__) && defined(__GNUC__)
  const Isa isa = BestIsa();
  if (isa == Isa::kAvx512 && !flat) return DepthwisePlaneAvx512;
  if (isa != Isa::kBaseline) return DepthwisePlaneAvx2;
#endif
  return DepthwisePlaneBaseline;
}

// Shape checks common to both ops; returns N, C, spatial input dims, kernel dims.
Status CheckInputs(const Node& n, const Tensor* x, const Tensor* w, const Tensor* b) {
  if (!x || !w) return NodeError(n, "inputs X and W are required");
  if (x->dtype() != DataType::kFloat32 || w->dtype() != DataType::kFloat32)
    return NodeError(n, std::string("only float32 is supported, got ") + DataTypeName(x->dtype()) +
                            " input and " + DataTypeName(w->dtype()) + " weights");
  if (x->rank() < 3 || x->rank() > 5)
    return NodeError(n, "input X has rank " + std::to_string(x->rank()) +
                            "; 1-D, 2-D and 3-D convolutions (rank 3-5) are supported");
  if (w->rank() != x->rank())
    return NodeError(n, "weight W has rank " + std::to_string(w->rank()) + ", expected " +
                            std::to_string(x->rank()) + " like X");
  if (b && (b->dtype() != DataType::kFloat32 || b->rank() != 1))
    return NodeError(n, "bias B must be a 1-D float32 tensor");
  return Status();
}

class ConvKernel : public Kernel {
 public:
  ConvKernel(const Node& node, ConvAttrs a) : node_(node), a_(std::move(a)) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    const Tensor* w = ctx.input(1);
    const Tensor* b = ctx.input(2);
    OPSCOPE_RETURN_IF_ERROR(CheckInputs(node_, x, w, b));
    const int64_t N = x->dim(0), C = x->dim(1), OC = w->dim(0), g = a_.group;
    if (C != w->dim(1) * g)
      return NodeError(node_, "input has " + std::to_string(C) + " channels but W expects " +
                                  std::to_string(w->dim(1)) + " x group " + std::to_string(g));
    if (OC % g != 0)
      return NodeError(node_, "output channels " + std::to_string(OC) + " not divisible by group " +
                                  std::to_string(g));
    if (b && b->numel() != OC)
      return NodeError(node_, "bias has " + std::to_string(b->numel()) + " elements, expected " +
                                  std::to_string(OC));
    std::vector<int64_t> in(x->shape().begin() + 2, x->shape().end());
    std::vector<int64_t> kernel(w->shape().begin() + 2, w->shape().end());
    Geometry geo;
    OPSCOPE_RETURN_IF_ERROR(ConvGeometry(node_, a_, in, kernel, &geo));
    std::vector<int64_t> out_shape = {N, OC};
    out_shape.insert(out_shape.end(), geo.out.begin(), geo.out.end());
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DataType::kFloat32, out_shape));
    if (y->numel() == 0) return Status();
    if (x->numel() == 0 || w->numel() == 0) return FillBiasOnly(b, y);

    if ((cl_in_ || cl_out_) && x->rank() != 4)
      return NodeError(node_, "channels-last activations are only planned for 2-D convolutions");
    std::vector<int64_t> key = x->shape();
    key.insert(key.end(), w->shape().begin(), w->shape().end());
    key.push_back(b ? 1 : 0);
    if (key != p_.key) OPSCOPE_RETURN_IF_ERROR(Build(x->shape(), w->shape(), out_shape, geo, b));
    p_.key = key;

    if (p_.depthwise) {
      RunDepthwise(x->data<float>(), w->data<float>(), b ? b->data<float>() : nullptr, N, C, in,
                   geo.out, y->data<float>());
      return Status();
    }
    if (p_.gemm) {
      return DnnlCall(node_, "run the pointwise convolution", [&] {
        dnnl::stream& s = DnnlStream();
        p_.gemm_w.set_data_handle(const_cast<float*>(w->data<float>()));
        std::unordered_map<int, dnnl::memory> args = {
            {DNNL_ARG_SRC, p_.gemm_w}, {DNNL_ARG_WEIGHTS, p_.gemm_x}, {DNNL_ARG_DST, p_.gemm_y}};
        for (int64_t n = 0; n < N; ++n) {
          p_.gemm_x.set_data_handle(const_cast<float*>(x->data<float>()) + n * p_.gemm_x_stride);
          p_.gemm_y.set_data_handle(y->data<float>() + n * p_.gemm_y_stride);
          p_.gemm_prim.execute(s, args);
        }
        s.wait();
        if (b)
          BiasAndPostOpsRows(y->data<float>(), N * OC, p_.gemm_y_stride / OC, b->data<float>(), OC);
      });
    }
    OPSCOPE_ASSIGN_OR_RETURN(
        dnnl::memory wmem,
        p_.weights.Get(node_, w->data<float>(), p_.w_plain, p_.w_prim, ctx.input_is_constant(1)));
    return DnnlCall(node_, "run the convolution", [&] {
      dnnl::stream& s = DnnlStream();
      p_.src_user.set_data_handle(const_cast<float*>(x->data<float>()));
      p_.dst_user.set_data_handle(y->data<float>());
      if (p_.src_reorder) p_.src_to_prim.execute(s, p_.src_user, p_.src_prim);
      std::unordered_map<int, dnnl::memory> args = {
          {DNNL_ARG_SRC, p_.src_reorder ? p_.src_prim : p_.src_user},
          {DNNL_ARG_WEIGHTS, wmem},
          {DNNL_ARG_DST, p_.dst_reorder ? p_.dst_prim : p_.dst_user}};
      if (b) {
        p_.bias_mem.set_data_handle(const_cast<float*>(b->data<float>()));
        args[DNNL_ARG_BIAS] = p_.bias_mem;
      }
      p_.prim.execute(s, args);
      if (p_.dst_reorder) p_.dst_from_prim.execute(s, p_.dst_prim, p_.dst_user);
      s.wait();
    });
  }

  // FLOPs: 2 * N * OC * prod(out spatial) * (IC/group) * prod(kernel) (one multiply-add = 2),
  // plus one add per output element for the bias and one op per output element per fused
  // activation. Bytes: inputs (X, W, B) + output.
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    Cost c{0, CompulsoryBytes(in, out)};
    if (in.size() < 2 || out.empty() || in[1].shape.empty()) return c;
    double out_elems = static_cast<double>(out[0].numel());
    double per_out = static_cast<double>(in[1].numel()) / std::max<int64_t>(in[1].shape[0], 1);
    c.flops = 2 * out_elems * per_out;
    if (in.size() > 2 && !in[2].shape.empty()) c.flops += out_elems;
    c.flops += out_elems * static_cast<double>(post_ops_.size());
    return c;
  }

  bool AddPostOp(const PostOp& op) override {
    if (!DnnlPostOpFits(post_ops_, op)) return false;
    post_ops_.push_back(op);
    p_.key.clear();
    return true;
  }

 private:
  // y[r, :] = post_ops(y[r, :] + bias[r % OC]) over `rows` rows of `cols` floats, threaded by
  // rows; the common activations run as tight loops, the rest through ApplyPostOpScalar.
  void BiasAndPostOpsRows(float* y, int64_t rows, int64_t cols, const float* bias,
                          int64_t OC) const {
    ParallelFor(rows, cols * static_cast<int64_t>(1 + post_ops_.size()),
                [&](int64_t r0, int64_t r1) {
                  for (int64_t r = r0; r < r1; ++r) {
                    float* row = y + r * cols;
                    const float bb = bias[r % OC];
                    // The usual cases in one pass: bias alone, bias + Relu, bias + Clip (Relu6).
                    if (post_ops_.size() == 1 && post_ops_[0].kind == PostOpKind::kRelu) {
                      for (int64_t i = 0; i < cols; ++i) row[i] = std::max(row[i] + bb, 0.f);
                    } else if (post_ops_.size() == 1 && post_ops_[0].kind == PostOpKind::kClip) {
                      const float lo = post_ops_[0].alpha, hi = post_ops_[0].beta;
                      for (int64_t i = 0; i < cols; ++i)
                        row[i] = std::min(std::max(row[i] + bb, lo), hi);
                    } else {
                      for (int64_t i = 0; i < cols; ++i) row[i] += bb;
                      PostOpsRow(row, cols);
                    }
                  }
                });
  }

  // row[:] = post_ops(row[:]); the common activations run as tight loops.
  void PostOpsRow(float* row, int64_t cols) const {
    for (const PostOp& op : post_ops_) {
      if (op.kind == PostOpKind::kRelu) {
        for (int64_t i = 0; i < cols; ++i) row[i] = row[i] > 0.f ? row[i] : 0.f;
      } else if (op.kind == PostOpKind::kClip) {
        const float lo = op.alpha, hi = op.beta;
        for (int64_t i = 0; i < cols; ++i) row[i] = std::min(std::max(row[i], lo), hi);
      } else if (op.kind == PostOpKind::kLeakyRelu) {
        const float a = op.alpha;
        for (int64_t i = 0; i < cols; ++i) row[i] = row[i] >= 0.f ? row[i] : row[i] * a;
      } else {
        ApplyActivationInPlace(op.kind, row, cols, op.alpha, op.beta);
      }
    }
  }

  // Depthwise path: one plane per (n, c), bias folded into the accumulator, post-ops applied to
  // the plane while it is still in cache.
  void RunDepthwise(const float* x, const float* w, const float* b, int64_t N, int64_t C,
                    const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                    float* y) const {
    const bool one_d = in.size() == 1;  // a 1-D conv is one row of a 2-D plane
    const DwPlaneGeo g{one_d ? 1 : in[0], in.back(), one_d ? 1 : out[0], out.back(), p_.dw_kh,
                       p_.dw_kw,          p_.dw_sh,  p_.dw_sw,           p_.dw_pt,   p_.dw_pl};
    const int64_t in_plane = g.H * g.W, out_plane = g.OH * g.OW, taps = g.KH * g.KW;
    static const DepthwisePlaneFn flat_fn = SelectDepthwisePlane(true);
    static const DepthwisePlaneFn rows_fn = SelectDepthwisePlane(false);
    const DepthwisePlaneFn plane_fn = g.Flat() ? flat_fn : rows_fn;
    const int64_t stage_floats = g.StageFloats(), scratch = stage_floats + g.OutFloats();
    const int64_t cost = out_plane * (2 * taps + static_cast<int64_t>(post_ops_.size())) + scratch;
    ParallelFor(N * C, cost, [&](int64_t p0, int64_t p1) {
      // Per-thread staging buffers, reused across calls; the input stage is zeroed once per call
      // and its padding stays zero across planes (DepthwisePlaneFlat writes only input there).
      thread_local std::vector<float> buf;
      if (static_cast<int64_t>(buf.size()) < scratch) buf.resize(static_cast<size_t>(scratch));
      std::fill(buf.begin(), buf.begin() + stage_floats, 0.f);
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t c = p % C;
        float* yp = y + p * out_plane;
        plane_fn(x + p * in_plane, w + c * taps, b ? b[c] : 0.f, p_.dw_zeros.data(), g, buf.data(),
                 buf.data() + stage_floats, yp);
        if (!post_ops_.empty()) PostOpsRow(yp, out_plane);
      }
    });
  }

  // The session keeps the activations between consecutive convolutions channels-last (NHWC in
  // memory under the logical NCHW shape; SessionImpl::AssignChannelsLast): `input` / `output`
  // say which of X and Y are stored that way. The convolution then runs on oneDNN with those
  // layouts, so no reorders run between such convolutions.
  bool SetChannelsLast(bool input, bool output) override {
    cl_in_ = input;
    cl_out_ = output;
    p_.key.clear();
    return true;
  }

  Status FillBiasOnly(const Tensor* b, Tensor* y) {
    int64_t OC = y->dim(1), plane = y->numel() / (y->dim(0) * OC);
    float* py = y->data<float>();
    if (cl_out_) {
      for (int64_t i = 0; i < y->numel(); ++i)
        py[i] = ApplyPostOpsScalar(post_ops_, b ? b->data<float>()[i % OC] : 0.f);
      return Status();
    }
    for (int64_t n = 0; n < y->dim(0); ++n)
      for (int64_t c = 0; c < OC; ++c) {
        float v = ApplyPostOpsScalar(post_ops_, b ? b->data<float>()[c] : 0.f);
        std::fill(py + (n * OC + c) * plane, py + (n * OC + c + 1) * plane, v);
      }
    return Status();
  }

  Status Build(const std::vector<int64_t>& xs, const std::vector<int64_t>& ws,
               const std::vector<int64_t>& ys, const Geometry& geo, const Tensor* b) {
    using dnnl::memory;
    const int64_t g = a_.group, OC = ws[0];
    p_ = ConvPrimitive();
    auto nhwc = [](const std::vector<int64_t>& d) {
      return memory::desc(DnnlDims(d), memory::data_type::f32, memory::format_tag::nhwc);
    };
    p_.src_plain = cl_in_ ? nhwc(xs) : DnnlPlainDesc(xs);
    p_.dst_plain = cl_out_ ? nhwc(ys) : DnnlPlainDesc(ys);
    std::vector<int64_t> wdims = ws;
    if (g > 1) {
      wdims = {g, OC / g, ws[1]};
      wdims.insert(wdims.end(), ws.begin() + 2, ws.end());
    }
    p_.w_plain = DnnlPlainDesc(wdims);
    // Measured (docs/ops-nn.md): with plain NCHW activations oneDNN 2.6 falls back to its
    // im2col+GEMM kernel, which the blocked direct kernels beat by 1.2-5x even after reordering
    // src and dst (grouped and depthwise convs most), except for pointwise convolutions (1x1,
    // no padding, any stride), where NCHW already is a GEMM and the reorders cost more than
    // they save. So: blocked activations unless pointwise.
    bool pointwise = true;
    for (size_t i = 0; i < geo.k.size(); ++i)
      pointwise &= geo.k[i] == 1 && geo.pb[i] == 0 && geo.pe[i] == 0;
    memory::desc w_any(DnnlDims(wdims), memory::data_type::f32, memory::format_tag::any);
    p_.bias_md = b ? DnnlPlainDesc({OC}) : memory::desc();
    memory::dims strides = DnnlDims(geo.s), pl = DnnlDims(geo.pb), pr = DnnlDims(geo.pe);
    memory::dims dil(geo.d.size());
    for (size_t i = 0; i < dil.size(); ++i) dil[i] = geo.d[i] - 1;
    auto create = [&](bool blocked) {
      memory::desc src_md =
          blocked ? memory::desc(DnnlDims(xs), memory::data_type::f32, memory::format_tag::any)
                  : p_.src_plain;
      memory::desc dst_md =
          blocked ? memory::desc(DnnlDims(ys), memory::data_type::f32, memory::format_tag::any)
                  : p_.dst_plain;
      return DnnlCall(node_, "create the convolution primitive", [&] {
        dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                          dnnl::algorithm::convolution_direct, src_md, w_any,
                                          p_.bias_md, dst_md, strides, dil, pl, pr);
        dnnl::primitive_attr attr;
        AppendPostOps(post_ops_, &attr);
        dnnl::convolution_forward::primitive_desc pd(d, attr, DnnlEngine());
        p_.prim = dnnl::convolution_forward(pd);
        p_.impl = pd.impl_info_str();
        p_.w_prim = pd.weights_desc();
        p_.src_user = memory(p_.src_plain, DnnlEngine(), nullptr);
        p_.dst_user = memory(p_.dst_plain, DnnlEngine(), nullptr);
        if (b) p_.bias_mem = memory(p_.bias_md, DnnlEngine(), nullptr);
        p_.src_reorder = pd.src_desc() != p_.src_plain;
        p_.dst_reorder = pd.dst_desc() != p_.dst_plain;
        if (p_.src_reorder) {
          p_.src_prim = memory(pd.src_desc(), DnnlEngine());
          p_.src_to_prim = dnnl::reorder(p_.src_user, p_.src_prim);
        }
        if (p_.dst_reorder) {
          p_.dst_prim = memory(pd.dst_desc(), DnnlEngine());
          p_.dst_from_prim = dnnl::reorder(p_.dst_prim, p_.dst_user);
        }
      });
    };
    p_.gemm = false;
    if (cl_in_ || cl_out_) {
      // Channels-last: oneDNN's direct kernels (brgconv, brgconv_1x1, brdgmm_dw) take NHWC
      // as it is, bias and post-ops included. When they refuse the exact layouts (oneDNN then
      // offers its reference or im2col kernel), let oneDNN pick and reorder around it.
      Status st = create(false);
      if (!st.ok() || StartsWith(p_.impl, "ref") || p_.impl.find("gemm") != std::string::npos)
        st = create(true);
      return st;
    }
    // 1-D depthwise convolutions (audio models: Silero VAD, wake-word front ends) run as 2-D
    // planes of one row: oneDNN's plain-layout 1-D grouped convolution took 45 us for a
    // 258-channel, 8-sample, k=5 node that the stencil does in about 1.
    const bool dw_shape = (xs.size() == 4 || xs.size() == 3) && g == xs[1] && g == OC && ws[1] == 1;
    bool dw_ok = dw_shape;
    for (size_t i = 0; dw_ok && i < geo.k.size(); ++i)
      dw_ok = geo.k[i] <= kMaxDepthwiseKernel && geo.s[i] <= 2 && geo.d[i] == 1;
    if (dw_ok) {
      const bool one_d = xs.size() == 3;
      p_.depthwise = true;
      p_.dw_kh = one_d ? 1 : geo.k[0];
      p_.dw_kw = geo.k.back();
      p_.dw_sh = one_d ? 1 : geo.s[0];
      p_.dw_sw = geo.s.back();
      p_.dw_pt = one_d ? 0 : geo.pb[0];
      p_.dw_pl = geo.pb.back();
      p_.dw_zeros.assign(static_cast<size_t>(xs.back()), 0.f);
      return Status();
    }
    bool unit_stride = true;
    for (int64_t st : geo.s) unit_stride &= st == 1;
    if (pointwise && unit_stride && g == 1) {
      const int64_t IC = ws[1];
      int64_t S = 1;
      for (size_t i = 2; i < ys.size(); ++i) S *= ys[i];
      Status gs = DnnlCall(node_, "create the pointwise GEMM", [&] {
        memory::desc wd({OC, IC}, memory::data_type::f32, memory::format_tag::ab);
        memory::desc xd({IC, S}, memory::data_type::f32, memory::format_tag::ab);
        memory::desc yd({OC, S}, memory::data_type::f32, memory::format_tag::ab);
        // oneDNN 2.6's fast matmul kernels take a bias over columns only, not rows (a [OC,1]
        // bias falls back to its reference kernel, ~100x slower): with a bias, the bias and the
        // activations are applied in one pass over Y after the GEMM instead.
        dnnl::matmul::desc d(wd, xd, yd);
        dnnl::primitive_attr attr;
        if (!b) AppendPostOps(post_ops_, &attr);
        dnnl::matmul::primitive_desc pd(d, attr, DnnlEngine());
        p_.gemm_prim = dnnl::matmul(pd);
        p_.gemm_w = memory(wd, DnnlEngine(), nullptr);
        p_.gemm_x = memory(xd, DnnlEngine(), nullptr);
        p_.gemm_y = memory(yd, DnnlEngine(), nullptr);
        p_.gemm_x_stride = IC * S;
        p_.gemm_y_stride = OC * S;
      });
      if (gs.ok()) {
        p_.gemm = true;
        return gs;
      }
    }
    // Plain activations are the fallback for any configuration the blocked kernels refuse.
    Status st = create(!pointwise);
    if (!st.ok() && !pointwise) st = create(false);
    return st;
  }

  Node node_;
  ConvAttrs a_;
  bool cl_in_ = false, cl_out_ = false;  // X / Y stored channels-last (SetChannelsLast)
  std::vector<PostOp> post_ops_;
  ConvPrimitive p_;
};

class ConvTransposeKernel : public Kernel {
 public:
  ConvTransposeKernel(const Node& node, ConvAttrs a) : node_(node), a_(std::move(a)) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    const Tensor* w = ctx.input(1);
    const Tensor* b = ctx.input(2);
    OPSCOPE_RETURN_IF_ERROR(CheckInputs(node_, x, w, b));
    const int64_t N = x->dim(0), C = x->dim(1), g = a_.group;
    if (C != w->dim(0))
      return NodeError(node_, "input has " + std::to_string(C) + " channels but W has " +
                                  std::to_string(w->dim(0)) + " input channels");
    if (C % g != 0)
      return NodeError(node_, "input channels " + std::to_string(C) + " not divisible by group " +
                                  std::to_string(g));
    const int64_t OC = w->dim(1) * g;
    if (b && b->numel() != OC)
      return NodeError(node_, "bias has " + std::to_string(b->numel()) + " elements, expected " +
                                  std::to_string(OC));
    std::vector<int64_t> in(x->shape().begin() + 2, x->shape().end());
    std::vector<int64_t> kernel(w->shape().begin() + 2, w->shape().end());
    Geometry geo;
    std::vector<int64_t> core;
    OPSCOPE_RETURN_IF_ERROR(ConvTransposeGeometry(node_, a_, in, kernel, &geo, &core));
    std::vector<int64_t> out_shape = {N, OC};
    out_shape.insert(out_shape.end(), geo.out.begin(), geo.out.end());
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DataType::kFloat32, out_shape));
    if (y->numel() == 0) return Status();
    std::vector<int64_t> core_shape = {N, OC};
    core_shape.insert(core_shape.end(), core.begin(), core.end());
    bool has_tail = core != geo.out;
    if (x->numel() == 0 || w->numel() == 0 || Numel(core_shape) == 0) {
      FillWithBias(b, y);
      return Status();
    }
    if (!has_tail && x->rank() == 4 && KernelEqualsStride(geo, in)) {
      RunKernelEqualsStride(*x, *w, b, y);
      return Status();
    }
    // Padding on the right as the primitive sees it: the part of `full` beyond the core.
    Geometry prim_geo = geo;
    for (size_t i = 0; i < core.size(); ++i) {
      int64_t full = geo.s[i] * (in[i] - 1) + (geo.k[i] - 1) * geo.d[i] + 1;
      prim_geo.pe[i] = full - geo.pb[i] - core[i];
    }

    std::vector<int64_t> key = x->shape();
    key.insert(key.end(), w->shape().begin(), w->shape().end());
    key.insert(key.end(), core.begin(), core.end());
    key.push_back(b ? 1 : 0);
    if (key != p_.key)
      OPSCOPE_RETURN_IF_ERROR(Build(x->shape(), w->shape(), core_shape, prim_geo, b));
    p_.key = key;
    if (has_tail) tmp_.resize(static_cast<size_t>(Numel(core_shape)));
    float* dst = has_tail ? tmp_.data() : y->data<float>();

    OPSCOPE_ASSIGN_OR_RETURN(
        dnnl::memory wmem,
        p_.weights.Get(node_, w->data<float>(), p_.w_plain, p_.w_prim, ctx.input_is_constant(1)));
    OPSCOPE_RETURN_IF_ERROR(DnnlCall(node_, "run the transposed convolution", [&] {
      dnnl::stream& s = DnnlStream();
      p_.src_user.set_data_handle(const_cast<float*>(x->data<float>()));
      p_.dst_user.set_data_handle(dst);
      std::unordered_map<int, dnnl::memory> args = {
          {DNNL_ARG_SRC, p_.src_user}, {DNNL_ARG_WEIGHTS, wmem}, {DNNL_ARG_DST, p_.dst_user}};
      if (b) {
        p_.bias_mem.set_data_handle(const_cast<float*>(b->data<float>()));
        args[DNNL_ARG_BIAS] = p_.bias_mem;
      }
      p_.prim.execute(s, args);
      s.wait();
    }));
    if (has_tail) {
      FillWithBias(b, y);
      CopyCore(core_shape, y);
    }
    return Status();
  }

  // FLOPs: 2 * N * IC * prod(in spatial) * (OC/group) * prod(kernel): every input element
  // scatters a multiply-add into each kernel tap of each output channel of its group; plus one
  // add per output element for the bias and one per fused activation.
  Cost EstimateCost(const std::vector<TensorDesc>& in,
                    const std::vector<TensorDesc>& out) const override {
    Cost c{0, CompulsoryBytes(in, out)};
    if (in.size() < 2 || out.empty() || in[1].shape.empty()) return c;
    double per_in = static_cast<double>(in[1].numel()) / std::max<int64_t>(in[1].shape[0], 1);
    c.flops = 2 * static_cast<double>(in[0].numel()) * per_in;
    double out_elems = static_cast<double>(out[0].numel());
    if (in.size() > 2 && !in[2].shape.empty()) c.flops += out_elems;
    c.flops += out_elems * static_cast<double>(post_ops_.size());
    return c;
  }

  bool AddPostOp(const PostOp& op) override {
    if (!DnnlPostOpFits(post_ops_, op)) return false;
    post_ops_.push_back(op);
    p_.key.clear();
    return true;
  }

 private:
  // Kernel equal to stride (the 2x2 s2 upsampling of DBNet/UNet heads), no padding, dilation or
  // groups: the output windows never overlap, so the whole op is one GEMM and a pixel shuffle.
  // oneDNN's plain-layout deconvolution takes a GEMM + col2im path instead (6.5 GFLOP/s on
  // the OCR detector's 2x2 s2 node).
  bool KernelEqualsStride(const Geometry& geo, const std::vector<int64_t>& in) const {
    if (a_.group != 1 || geo.k.size() != 2) return false;
    for (size_t i = 0; i < 2; ++i)
      if (geo.k[i] != geo.s[i] || geo.d[i] != 1 || geo.pb[i] != 0 || geo.pe[i] != 0 ||
          geo.out[i] != in[i] * geo.s[i])
        return false;
    return true;
  }

  // Z[(oc, kh, kw), (h, w)] = sum_ic W[ic, (oc, kh, kw)] * X[ic, (h, w)] per image (ONNX's W is
  // already the [IC, OC*KH*KW] matrix, used transposed), then
  // Y[oc, h*KH + kh, w*KW + kw] = post_ops(Z[(oc, kh, kw), (h, w)] + bias[oc]).
  void RunKernelEqualsStride(const Tensor& x, const Tensor& w, const Tensor* b, Tensor* y) {
    const int64_t N = x.dim(0), IC = x.dim(1), H = x.dim(2), W = x.dim(3);
    const int64_t OC = y->dim(1), KH = w.dim(2), KW = w.dim(3);
    const int64_t M = OC * KH * KW, S = H * W, OW = W * KW;
    tmp_.resize(static_cast<size_t>(M * S));
    const float* bias = b ? b->data<float>() : nullptr;
    for (int64_t n = 0; n < N; ++n) {
      dnnl_sgemm('T', 'N', M, S, IC, 1.f, w.data<float>(), M, x.data<float>() + n * IC * S, S, 0.f,
                 tmp_.data(), S);
      float* yn = y->data<float>() + n * OC * H * KH * OW;
      ParallelFor(OC * H, KH * OW, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t oc = r / H, h = r % H;
          const float bv = bias ? bias[oc] : 0.f;
          for (int64_t kh = 0; kh < KH; ++kh) {
            float* row = yn + (oc * H * KH + h * KH + kh) * OW;
            for (int64_t kw = 0; kw < KW; ++kw) {
              const float* z = tmp_.data() + ((oc * KH + kh) * KW + kw) * S + h * W;
              for (int64_t i = 0; i < W; ++i) row[i * KW + kw] = z[i] + bv;
            }
            for (const PostOp& op : post_ops_)
              ApplyActivationInPlace(op.kind, row, OW, op.alpha, op.beta);
          }
        }
      });
    }
  }

  // Fills the whole output with post_ops(bias[c]); the core is copied over afterwards.
  void FillWithBias(const Tensor* b, Tensor* y) {
    int64_t N = y->dim(0), OC = y->dim(1), plane = y->numel() / (N * OC);
    float* py = y->data<float>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < OC; ++c) {
        float v = ApplyPostOpsScalar(post_ops_, b ? b->data<float>()[c] : 0.f);
        std::fill(py + (n * OC + c) * plane, py + (n * OC + c + 1) * plane, v);
      }
  }

  // Copies the primitive's output (shape core_shape) into the leading corner of y.
  void CopyCore(const std::vector<int64_t>& core_shape, Tensor* y) {
    const int rank = static_cast<int>(core_shape.size());
    const int64_t inner = core_shape[rank - 1];
    const int64_t rows = Numel(core_shape) / std::max<int64_t>(inner, 1);
    std::vector<int64_t> ystr = DnnlStrides(y->shape());
    float* py = y->data<float>();
    const float* src = tmp_.data();
    ParallelFor(rows, inner, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        int64_t rem = r, off = 0;
        for (int d = rank - 2; d >= 0; --d) {
          off += (rem % core_shape[d]) * ystr[d];
          rem /= core_shape[d];
        }
        std::memcpy(py + off, src + r * inner, static_cast<size_t>(inner) * sizeof(float));
      }
    });
  }

  Status Build(const std::vector<int64_t>& xs, const std::vector<int64_t>& ws,
               const std::vector<int64_t>& ys, const Geometry& geo, const Tensor* b) {
    using dnnl::memory;
    const int64_t g = a_.group, IC = xs[1], OC = ys[1];
    const int64_t icg = IC / g, ocg = OC / g;
    p_ = ConvPrimitive();
    p_.src_plain = DnnlPlainDesc(xs);
    p_.dst_plain = DnnlPlainDesc(ys);
    std::vector<int64_t> ksp(ws.begin() + 2, ws.end());
    int64_t K = Numel(ksp);
    memory::dims kstr = DnnlStrides(ksp);
    // ONNX stores [IC][OC/g][k...]; oneDNN wants dims [g][OC/g][IC/g][k...] (or [OC][IC][k...]).
    memory::dims wd, wst;
    if (g > 1) {
      wd = {g, ocg, icg};
      wst = {icg * ocg * K, K, ocg * K};
    } else {
      wd = {OC, IC};
      wst = {K, OC * K};
    }
    wd.insert(wd.end(), ksp.begin(), ksp.end());
    wst.insert(wst.end(), kstr.begin(), kstr.end());
    p_.w_plain = memory::desc(wd, memory::data_type::f32, wst);
    memory::desc w_any(wd, memory::data_type::f32, memory::format_tag::any);
    p_.bias_md = b ? DnnlPlainDesc({OC}) : memory::desc();
    memory::dims strides = DnnlDims(geo.s), pl = DnnlDims(geo.pb), pr = DnnlDims(geo.pe);
    memory::dims dil(geo.d.size());
    for (size_t i = 0; i < dil.size(); ++i) dil[i] = geo.d[i] - 1;
    return DnnlCall(node_, "create the transposed convolution primitive", [&] {
      dnnl::deconvolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                          dnnl::algorithm::deconvolution_direct, p_.src_plain,
                                          w_any, p_.bias_md, p_.dst_plain, strides, dil, pl, pr);
      dnnl::primitive_attr attr;
      AppendPostOps(post_ops_, &attr);
      dnnl::deconvolution_forward::primitive_desc pd(d, attr, DnnlEngine());
      p_.prim = dnnl::deconvolution_forward(pd);
      p_.w_prim = pd.weights_desc();
      p_.src_user = memory(p_.src_plain, DnnlEngine(), nullptr);
      p_.dst_user = memory(p_.dst_plain, DnnlEngine(), nullptr);
      if (b) p_.bias_mem = memory(p_.bias_md, DnnlEngine(), nullptr);
    });
  }

  Node node_;
  ConvAttrs a_;
  std::vector<PostOp> post_ops_;
  ConvPrimitive p_;
  std::vector<float> tmp_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_Conv(const Node& node) {
  ConvAttrs a;
  OPSCOPE_RETURN_IF_ERROR(ReadConvAttrs(node, false, &a));
  return std::unique_ptr<Kernel>(new ConvKernel(node, std::move(a)));
}

StatusOr<std::unique_ptr<Kernel>> Create_ConvTranspose(const Node& node) {
  ConvAttrs a;
  OPSCOPE_RETURN_IF_ERROR(ReadConvAttrs(node, true, &a));
  return std::unique_ptr<Kernel>(new ConvTransposeKernel(node, std::move(a)));
}

}  // namespace opscope::engine
