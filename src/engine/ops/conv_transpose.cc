// ConvTranspose on oneDNN (deconvolution_forward, inference), with its geometry from
// conv_geometry.cc (output_shape, output_padding, auto_pad).
//
// ConvTranspose output rows past the end of the "full" transposed output (output_padding, or an
// output_shape larger than the natural size) receive no input contribution: the primitive then
// writes a temporary of the covered size and the kernel copies it into place and fills the tail
// with post_ops(bias). A kernel equal to the stride with no padding, groups or dilation (2x2 s2
// upsampling) runs as GEMMs over blocks of input rows, each followed by its pixel shuffle.
#include <algorithm>
#include <cstring>

#include "engine/ops/activation.h"
#include "engine/ops/common.h"
#include "engine/ops/conv_common.h"
#include "engine/ops/conv_geometry.h"
#include "engine/ops/dnnl_common.h"

namespace opscope::engine {
namespace {

class ConvTransposeKernel : public Kernel {
 public:
  ConvTransposeKernel(const Node& node, ConvAttrs a) : node_(node), a_(std::move(a)) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* x = ctx.input(0);
    const Tensor* w = ctx.input(1);
    const Tensor* b = ctx.input(2);
    OPSCOPE_RETURN_IF_ERROR(CheckConvInputs(node_, x, w, b));
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
    post_ops_ = WithPostOp(post_ops_, op);
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
  // Blocks of input rows at a time, so each block's Z (at most kZBlockFloats) is shuffled while it
  // is still in cache instead of going to memory and back; the blocks are spread over the pool,
  // each GEMM single-threaded inside it (oneDNN does not nest OpenMP regions).
  static constexpr int64_t kZBlockFloats = 64 * 1024;  // 256 KB per thread
  void RunKernelEqualsStride(const Tensor& x, const Tensor& w, const Tensor* b, Tensor* y) const {
    const int64_t N = x.dim(0), IC = x.dim(1), H = x.dim(2), W = x.dim(3);
    const int64_t OC = y->dim(1), KH = w.dim(2), KW = w.dim(3);
    const int64_t M = OC * KH * KW, S = H * W, OW = W * KW;
    const int64_t rows_per = std::clamp<int64_t>(kZBlockFloats / std::max<int64_t>(M * W, 1), 1, H);
    const int64_t blocks = (H + rows_per - 1) / rows_per;
    const float* bias = b ? b->data<float>() : nullptr;
    for (int64_t n = 0; n < N; ++n) {
      const float* xn = x.data<float>() + n * IC * S;
      float* yn = y->data<float>() + n * OC * H * KH * OW;
      ParallelFor(blocks, rows_per * W * M * (2 * IC + 2), [&](int64_t b0, int64_t b1) {
        thread_local std::vector<float> z;
        for (int64_t blk = b0; blk < b1; ++blk) {
          const int64_t h0 = blk * rows_per, hr = std::min(rows_per, H - h0), cols = hr * W;
          if (static_cast<int64_t>(z.size()) < M * cols) z.resize(static_cast<size_t>(M * cols));
          dnnl_sgemm('T', 'N', M, cols, IC, 1.f, w.data<float>(), M, xn + h0 * W, S, 0.f, z.data(),
                     cols);
          for (int64_t oc = 0; oc < OC; ++oc) {
            const float bv = bias ? bias[oc] : 0.f;
            for (int64_t h = h0; h < h0 + hr; ++h)
              for (int64_t kh = 0; kh < KH; ++kh) {
                float* row = yn + (oc * H * KH + h * KH + kh) * OW;
                const float* zr = z.data() + (oc * KH + kh) * KW * cols + (h - h0) * W;
                if (KW == 2) {  // the common 2x2: both taps interleaved in one vectorised pass
                  const float* z1 = zr + cols;
                  for (int64_t i = 0; i < W; ++i) {
                    row[2 * i] = zr[i] + bv;
                    row[2 * i + 1] = z1[i] + bv;
                  }
                } else {
                  for (int64_t kw = 0; kw < KW; ++kw, zr += cols)
                    for (int64_t i = 0; i < W; ++i) row[i * KW + kw] = zr[i] + bv;
                }
                for (const PostOp& op : post_ops_)
                  ApplyActivationInPlace(op.kind, row, OW, op.alpha, op.beta);
              }
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

StatusOr<std::unique_ptr<Kernel>> Create_ConvTranspose(const Node& node) {
  ConvAttrs a;
  OPSCOPE_RETURN_IF_ERROR(ReadConvAttrs(node, true, &a));
  return std::unique_ptr<Kernel>(new ConvTransposeKernel(node, std::move(a)));
}

}  // namespace opscope::engine
