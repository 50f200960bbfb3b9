// What the float convolution kernels share (conv.cc: Conv, conv_transpose.cc: ConvTranspose):
// the oneDNN primitive state, built for one set of shapes and reused until they change, the
// oneDNN post-op chain, and the input checks.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "engine/graph.h"
#include "engine/kernel.h"
#include "engine/ops/dnnl_common.h"

namespace opscope::engine {

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
  // Conv with a fused residual Add: the index of its binary post-op in the chain (-1: none, or
  // the residual is added after the primitive) and the memory object for the residual.
  int residual_post_op = -1;
  dnnl::memory residual_mem;
  // Pointwise path: a stride-1, ungrouped 1x1 convolution on NCHW is, per image, the GEMM
  // Y[OC,S] = W[OC,IC] * X[IC,S] (+ bias per row). oneDNN's matmul runs it 3-5x faster than its
  // im2col convolution for plain activations (measured on MobileNet-style expand/project convs),
  // with no reorders at all.
  // A strided 1x1 convolution (ResNet's downsampling shortcut) takes the same GEMM on X
  // subsampled into a scratch [IC, S] first (gemm_sh/gemm_sw > 1): one pass over a quarter of X
  // instead of oneDNN's im2col convolution.
  bool gemm = false;
  dnnl::matmul gemm_prim;
  dnnl::memory gemm_w, gemm_x, gemm_y;
  int64_t gemm_x_stride = 0, gemm_y_stride = 0;  // floats per image
  int64_t gemm_sh = 1, gemm_sw = 1;              // strides of a subsampled X (1: X as it is)
  int64_t gemm_ih = 1, gemm_iw = 1, gemm_oh = 1, gemm_ow = 1;
  // Depthwise path (see the top of the file): geometry of one plane plus a zero row of width W.
  bool depthwise = false;
  int64_t dw_kh = 0, dw_kw = 0, dw_sh = 1, dw_sw = 1, dw_pt = 0, dw_pl = 0;
  std::vector<float> dw_zeros;
};

// The fused activations as a oneDNN post-op chain on `attr` (nothing when there are none).
void AppendPostOps(const std::vector<PostOp>& post_ops, dnnl::primitive_attr* attr);

// oneDNN 2.6's brgconv:avx512_core (it takes channels-last activations, and `any` picks it on
// AVX-512 CPUs) spends memory and time on every column of the output row, both when its
// primitive descriptor is made and when the primitive is created: a 1-D convolution padded to a
// 1 M-column row (a model_struct_fuzz finding) took up to 3.8 GB and 16 s before it could run,
// where jit:avx512_core on the blocked nCw16c layout is made in under a millisecond and runs such
// rows about as fast (AMD EPYC, AVX-512; docs/ops-nn.md). Up to this width the cost stays under
// about 250 MB and brgconv's speed (1.1-1.3x jit's on few channels) is kept; wider rows are given
// an explicit blocked layout (BlockedActivationTag), which brgconv does not take.
constexpr int64_t kMaxBrgconvRow = 65536;

// The blocked activation layout of oneDNN's direct convolution kernels on this CPU for a tensor
// of `rank` 3-5: nC[d|h]w16c where oneDNN's ISA is AVX-512, nC[d|h]w8c below.
dnnl::memory::format_tag BlockedActivationTag(size_t rank);

// Shape checks common to both ops: X and W float32 of the same rank 3-5, B a 1-D float32.
Status CheckConvInputs(const Node& n, const Tensor* x, const Tensor* w, const Tensor* b);

}  // namespace opscope::engine
