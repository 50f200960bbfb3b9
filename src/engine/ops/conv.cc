// Conv on oneDNN (convolution_forward, inference).
//
// Geometry (auto_pad, pads) is resolved in ONNX terms (conv_geometry.cc) and handed to oneDNN as
// explicit left/right padding. Weights are created with format_tag::any so oneDNN picks its
// preferred blocked layout; the reorder is cached (DnnlWeightCache). Activations stay plain
// NC[D]HW at the operator boundary; for convolutions with enough channels the primitive is
// created with `any` activations too (blocked direct kernels beat the plain-layout GEMM path
// there) and src/dst are reordered in and out; for output rows wider than kMaxBrgconvRow that
// layout is named explicitly (conv_common.h: oneDNN's brgconv costs memory per column). Inside
// channels-last regions (SessionImpl::AssignChannelsLast) X and Y are NHWC or nChw8c
// (region_layout.h: per CPU and channel count) and oneDNN's kernels for that layout run without
// reorders. Pointwise convolutions run as a oneDNN matmul; depthwise 1-D and 2-D ones as a direct
// NCHW stencil (conv_depthwise.h). Primitives are rebuilt when the input/weight shapes change and
// reused otherwise (conv_common.h). ConvTranspose is in conv_transpose.cc.
#include <algorithm>
#include <cstring>

#include "base/strings.h"
#include "engine/ops/activation.h"
#include "engine/ops/common.h"
#include "engine/ops/conv_common.h"
#include "engine/ops/conv_depthwise.h"
#include "engine/ops/conv_geometry.h"
#include "engine/ops/dnnl_common.h"
#include "engine/ops/region_layout.h"

namespace opscope::engine {
namespace {

class ConvKernel : public Kernel {
 public:
  ConvKernel(const Node& node, ConvAttrs a) : node_(node), a_(std::move(a)) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    const Tensor* w = ctx.input(1);
    const Tensor* b = ctx.input(2);
    OPSCOPE_RETURN_IF_ERROR(CheckConvInputs(node_, x, w, b));
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
    const Tensor* r = residual_ >= 0 ? ctx.input(residual_) : nullptr;
    if (residual_ >= 0 && (!r || r->dtype() != DataType::kFloat32 || r->shape() != out_shape))
      return NodeError(node_, "internal error: the fused residual Add's other input is " +
                                  (r ? ShapeString(r->shape()) : std::string("missing")) +
                                  ", not the output's " + ShapeString(out_shape));
    OPSCOPE_ASSIGN_OR_RETURN(Tensor * y, ctx.Output(0, DataType::kFloat32, out_shape));
    if (y->numel() == 0) return Status();
    if (x->numel() == 0 || w->numel() == 0) {
      OPSCOPE_RETURN_IF_ERROR(FillBiasOnly(b, y));
      return ResidualPass(r, y);
    }

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
      return ResidualPass(r, y);
    }
    if (p_.gemm) {
      OPSCOPE_RETURN_IF_ERROR(DnnlCall(node_, "run the pointwise convolution", [&] {
        dnnl::stream& s = DnnlStream();
        p_.gemm_w.set_data_handle(const_cast<float*>(w->data<float>()));
        std::unordered_map<int, dnnl::memory> args = {
            {DNNL_ARG_SRC, p_.gemm_w}, {DNNL_ARG_WEIGHTS, p_.gemm_x}, {DNNL_ARG_DST, p_.gemm_y}};
        const bool sub = p_.gemm_sh > 1 || p_.gemm_sw > 1;
        // Kept between runs (a fresh buffer would be page-faulted on every run).
        if (sub && sub_scratch_.numel() != C * p_.gemm_oh * p_.gemm_ow)
          sub_scratch_ = Tensor(DataType::kFloat32, {C, p_.gemm_oh * p_.gemm_ow});
        for (int64_t n = 0; n < N; ++n) {
          const float* xn = x->data<float>() + n * p_.gemm_x_stride;
          if (sub) {
            SubsampleRows(x->data<float>() + n * C * p_.gemm_ih * p_.gemm_iw, C,
                          sub_scratch_.data<float>());
            xn = sub_scratch_.data<float>();
          }
          p_.gemm_x.set_data_handle(const_cast<float*>(xn));
          p_.gemm_y.set_data_handle(y->data<float>() + n * p_.gemm_y_stride);
          p_.gemm_prim.execute(s, args);
        }
        s.wait();
        if (b)
          BiasAndPostOpsRows(y->data<float>(), N * OC, p_.gemm_y_stride / OC, b->data<float>(), OC);
      }));
      return ResidualPass(r, y);
    }
    OPSCOPE_ASSIGN_OR_RETURN(
        dnnl::memory wmem,
        p_.weights.Get(node_, w->data<float>(), p_.w_plain, p_.w_prim, ctx.input_is_constant(1)));
    OPSCOPE_RETURN_IF_ERROR(DnnlCall(node_, "run the convolution", [&] {
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
      if (p_.residual_post_op >= 0) {
        p_.residual_mem.set_data_handle(const_cast<float*>(r->data<float>()));
        args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(p_.residual_post_op) | DNNL_ARG_SRC_1] =
            p_.residual_mem;
      }
      p_.prim.execute(s, args);
      if (p_.dst_reorder) p_.dst_from_prim.execute(s, p_.dst_prim, p_.dst_user);
      s.wait();
    }));
    return p_.residual_post_op >= 0 ? Status() : ResidualPass(r, y);
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
    if (residual_ >= 0 || !DnnlPostOpFits(post_ops_, op)) return false;
    post_ops_ = WithPostOp(post_ops_, op);
    p_.key.clear();
    return true;
  }

  bool AddResidual(int input, const std::vector<PostOp>& after) override {
    if (residual_ >= 0 || input < 0) return false;
    for (const PostOp& op : after)
      if (!IsEltwisePostOp(op.kind)) return false;
    dnnl::post_ops ops;
    AppendChain(dnnl::memory::desc({1}, dnnl::memory::data_type::f32, {1}), &ops, post_ops_, after);
    if (!DnnlEltwiseConsistent(ops)) return false;
    residual_ = input;
    after_ = after;
    p_.key.clear();
    return true;
  }

 private:
  // The oneDNN post-op chain: the fused activations, then (with `residual`, a non-empty
  // descriptor) the residual as a binary add and the activations after it. Returns the
  // binary post-op's index, -1 without one.
  static int AppendChain(const dnnl::memory::desc& residual, dnnl::post_ops* ops,
                         const std::vector<PostOp>& before, const std::vector<PostOp>& after) {
    for (const PostOp& op : before) AppendEltwisePostOp(op, ops);
    if (residual.is_zero()) return -1;
    const int at = ops->len();
    ops->append_binary(dnnl::algorithm::binary_add, residual);
    for (const PostOp& op : after) AppendEltwisePostOp(op, ops);
    return at;
  }

  // y = after(y + r) over the whole output (r and y in the same memory layout) when the
  // residual was not a oneDNN post-op of the primitive; nothing without a residual.
  Status ResidualPass(const Tensor* r, Tensor* y) const {
    if (!r) return Status();
    const float* pr = r->data<float>();
    float* py = y->data<float>();
    ParallelFor(y->numel(), static_cast<int64_t>(1 + after_.size()), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) py[i] += pr[i];
      for (const PostOp& op : after_)
        ApplyActivationInPlace(op.kind, py + b, e - b, op.alpha, op.beta);
    });
    return Status();
  }

  // x [C, IH, IW] -> dst [C, OH * OW], dst[c][oh][ow] = x[c][oh * SH][ow * SW] (the strided
  // pointwise path; 1x1 with no padding, so every tap is inside the input).
  void SubsampleRows(const float* x, int64_t C, float* dst) const {
    const int64_t IH = p_.gemm_ih, IW = p_.gemm_iw, OH = p_.gemm_oh, OW = p_.gemm_ow;
    const int64_t SH = p_.gemm_sh, SW = p_.gemm_sw;
    ParallelFor(C * OH, OW, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t c = r / OH, oh = r % OH;
        const float* src = x + (c * IH + oh * SH) * IW;
        float* out = dst + r * OW;
        for (int64_t ow = 0; ow < OW; ++ow) out[ow] = src[ow * SW];
      }
    });
  }

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
  MemoryUse Memory() const override {
    MemoryUse m;
    m.packed_weight_bytes = p_.weights.Bytes();
    if (p_.src_reorder && p_.src_prim) m.workspace_bytes += p_.src_prim.get_desc().get_size();
    if (p_.dst_reorder && p_.dst_prim) m.workspace_bytes += p_.dst_prim.get_desc().get_size();
    m.workspace_bytes += sub_scratch_.nbytes() + p_.dw_zeros.size() * sizeof(float);
    return m;
  }

  bool SetChannelsLast(bool input, bool output) override {
    // A fused residual is stored in the layout Y had when it was fused (it runs after the
    // layout pass): Y keeps it.
    if (residual_ >= 0 && (input != cl_in_ || output != cl_out_)) return false;
    cl_in_ = input;
    cl_out_ = output;
    p_.key.clear();
    return true;
  }

  Status FillBiasOnly(const Tensor* b, Tensor* y) {
    int64_t OC = y->dim(1), plane = y->numel() / (y->dim(0) * OC);
    float* py = y->data<float>();
    if (cl_out_) {
      const bool blocked = RegionLayoutFor(OC) == RegionLayout::kNChw8c;
      for (int64_t i = 0; i < y->numel(); ++i) {
        // NHWC: the channel is innermost; nChw8c: [N, OC/8, H, W, 8].
        const int64_t c = blocked ? (i / (plane * 8)) % (OC / 8) * 8 + i % 8 : i % OC;
        py[i] = ApplyPostOpsScalar(post_ops_, b ? b->data<float>()[c] : 0.f);
      }
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
    auto region = [](const std::vector<int64_t>& d) {  // NHWC or nChw8c (region_layout.h)
      return memory::desc(DnnlDims(d), memory::data_type::f32,
                          RegionLayoutFor(d[1]) == RegionLayout::kNChw8c
                              ? memory::format_tag::nChw8c
                              : memory::format_tag::nhwc);
    };
    p_.src_plain = cl_in_ ? region(xs) : DnnlPlainDesc(xs);
    p_.dst_plain = cl_out_ ? region(ys) : DnnlPlainDesc(ys);
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
    // The activations' layouts handed to oneDNN: as the engine stores them (plain NC[D]HW, or
    // the region's layout), oneDNN's choice (`any`), plain NC[D]HW, or for output rows wider
    // than kMaxBrgconvRow (whose brgconv kernel costs memory per column: conv_common.h) an
    // explicit blocked layout instead of `any`, for both tensors or, as oneDNN's first-layer
    // kernels want for few input channels, for Y alone.
    enum class Act { kStored, kChosen, kBlockedY, kPlain };
    const bool wide_row = ys.back() > kMaxBrgconvRow;
    auto act_md = [&](Act a, const std::vector<int64_t>& d, const memory::desc& stored, bool is_y) {
      if (a == Act::kStored) return stored;
      if (a == Act::kPlain || (a == Act::kBlockedY && !is_y)) return DnnlPlainDesc(d);
      return memory::desc(DnnlDims(d), memory::data_type::f32,
                          wide_row ? BlockedActivationTag(d.size()) : memory::format_tag::any);
    };
    // with_residual: the residual Add as a binary post-op on the engine's layout of Y (only
    // usable when the primitive writes that layout itself, see below).
    auto create = [&](Act act, bool with_residual = false) {
      memory::desc src_md = act_md(act, xs, p_.src_plain, false);
      memory::desc dst_md = act_md(act, ys, p_.dst_plain, true);
      return DnnlCall(node_, "create the convolution primitive", [&] {
        dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                          dnnl::algorithm::convolution_direct, src_md, w_any,
                                          p_.bias_md, dst_md, strides, dil, pl, pr);
        dnnl::primitive_attr attr;
        dnnl::post_ops ops;
        p_.residual_post_op =
            AppendChain(with_residual ? p_.dst_plain : memory::desc(), &ops, post_ops_, after_);
        if (ops.len() > 0) attr.set_post_ops(ops);
        dnnl::convolution_forward::primitive_desc pd(d, attr, DnnlEngine());
        p_.prim = dnnl::convolution_forward(pd);
        if (with_residual) p_.residual_mem = memory(p_.dst_plain, DnnlEngine(), nullptr);
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
    // The first of `acts` whose primitive oneDNN makes with a kernel `good` accepts (else the
    // last one's).
    auto first_good = [&](std::initializer_list<Act> acts, auto good) {
      Status st;
      for (Act a : acts)
        if (good(st = create(a))) break;
      return st;
    };
    p_.gemm = false;
    if (cl_in_ || cl_out_) {
      // Channels-last: oneDNN's direct kernels (brgconv, brgconv_1x1, brdgmm_dw) take NHWC
      // as it is, bias and post-ops included. When they refuse the exact layouts (oneDNN then
      // offers its reference or im2col kernel), let oneDNN pick and reorder around it.
      // A residual is a binary post-op when the fast kernel writes Y's layout itself (measured
      // with oneDNN 2.6: jit:avx2 and jit_1x1:avx2 take it in nChw8c and NHWC); otherwise, and
      // on every other path, it is added in one pass after the convolution (ResidualPass).
      auto fast = [&](const Status& st) {
        return st.ok() && !StartsWith(p_.impl, "ref") && p_.impl.find("gemm") == std::string::npos;
      };
      // Rows wider than kMaxBrgconvRow skip the NHWC kernels (brgconv) and reorder to a blocked
      // layout, or to plain NCHW where no blocked kernel takes the shape.
      if (wide_row) return first_good({Act::kChosen, Act::kBlockedY, Act::kPlain}, fast);
      if (residual_ >= 0) {
        Status sr = create(Act::kStored, true);
        if (fast(sr) && !p_.src_reorder && !p_.dst_reorder) return sr;
      }
      return first_good({Act::kStored, Act::kChosen}, fast);
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
    p_.gemm_sh = p_.gemm_sw = 1;
    if (pointwise && !unit_stride && (xs.size() == 3 || xs.size() == 4)) {
      const bool two_d = xs.size() == 4;
      p_.gemm_sh = two_d ? geo.s[0] : 1;
      p_.gemm_sw = geo.s.back();
      p_.gemm_ih = two_d ? xs[2] : 1;
      p_.gemm_iw = xs.back();
      p_.gemm_oh = two_d ? ys[2] : 1;
      p_.gemm_ow = ys.back();
      unit_stride = true;  // the GEMM below reads the subsampled X
    }
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
    p_.gemm_sh = p_.gemm_sw = 1;
    // Plain activations are the fallback for any configuration the blocked kernels refuse (an
    // explicit blocked layout, for wide rows, can leave only oneDNN's reference kernel).
    if (pointwise) return create(Act::kStored);
    auto not_ref = [&](const Status& st) { return st.ok() && !StartsWith(p_.impl, "ref"); };
    if (wide_row) return first_good({Act::kChosen, Act::kBlockedY, Act::kStored}, not_ref);
    return first_good({Act::kChosen, Act::kStored}, not_ref);
  }

  Node node_;
  ConvAttrs a_;
  Tensor sub_scratch_;                   // the subsampled X of the strided pointwise path
  bool cl_in_ = false, cl_out_ = false;  // X / Y stored channels-last (SetChannelsLast)
  std::vector<PostOp> post_ops_;
  int residual_ = -1;          // AddResidual: the input added to Y, then `after_`
  std::vector<PostOp> after_;  // the fused residual Add's activations
  ConvPrimitive p_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_Conv(const Node& node) {
  ConvAttrs a;
  OPSCOPE_RETURN_IF_ERROR(ReadConvAttrs(node, false, &a));
  return std::unique_ptr<Kernel>(new ConvKernel(node, std::move(a)));
}

}  // namespace opscope::engine
