// Shared oneDNN plumbing for the nn kernels (Conv, ConvTranspose, MatMul, Gemm, Einsum).
//
// One process-wide CPU engine; one stream per thread (a dnnl::stream is not meant to be shared
// by concurrently executing threads). oneDNN is built with the OpenMP runtime, so primitives run
// on the same pool as ParallelFor and honour omp_set_num_threads (--threads).
//
// oneDNN reports errors by throwing dnnl::error; every call into it from a kernel goes through
// DnnlCall(), which turns an exception into a Status naming the node, so nothing escapes the
// engine layer.
//
// Fused activations (kernel.h PostOp) map to oneDNN eltwise post-ops. oneDNN 2.6 has no
// eltwise_hardsigmoid, so HardSigmoid is appended as eltwise_linear(alpha, beta) followed by
// eltwise_clip(0, 1). ApplyPostOpsScalar() is the scalar twin used where a kernel writes output
// elements outside a oneDNN primitive (ConvTranspose output tails) and by the tests.
#pragma once

#include <dnnl.hpp>
#include <functional>
#include <vector>

#include "base/status.h"
#include "engine/graph.h"
#include "engine/kernel.h"

namespace opscope::engine {

dnnl::engine& DnnlEngine();
dnnl::stream& DnnlStream();

// Runs fn(); a thrown dnnl::error (or std::exception) becomes an error naming the node and what
// was being done.
Status DnnlCall(const Node& node, const char* what, const std::function<void()>& fn);

dnnl::memory::dims DnnlDims(const std::vector<int64_t>& shape);
// Plain row-major (abc...) descriptor of an f32 tensor.
dnnl::memory::desc DnnlPlainDesc(const std::vector<int64_t>& shape);
// Row-major strides of `shape`.
dnnl::memory::dims DnnlStrides(const std::vector<int64_t>& shape);

// True for the activations a oneDNN eltwise post-op chain can express (everything but kBiasAdd).
bool IsEltwisePostOp(PostOpKind kind);
void AppendEltwisePostOp(const PostOp& op, dnnl::post_ops* ops);
// Whether `next` can follow `chain` in one oneDNN post-op chain. oneDNN 2.6's JIT injector gives
// every eltwise post-op of one algorithm the alpha/beta of the first one (Clip(-0.5, 0.5) then
// HardSigmoid's clip(0, 1) clips to ±0.5 again; LeakyRelu then Relu leaks): an algorithm may
// repeat only with the same parameters. A refused activation stays a step of its own.
bool DnnlPostOpFits(const std::vector<PostOp>& chain, const PostOp& next);
// The same rule over a whole chain (binary post-ops between the eltwise ones are skipped).
bool DnnlEltwiseConsistent(const dnnl::post_ops& ops);
float ApplyPostOpScalar(const PostOp& op, float x);
float ApplyPostOpsScalar(const std::vector<PostOp>& ops, float x);

// Reordered constant weights, reused across runs while the plain source bytes are unchanged.
// The kernel cannot know whether an input is an initializer, so the cache keeps a copy of the
// plain weights and compares it (memcmp, ~2 reads of the weights per run: far below the cost of
// the convolution that uses them) before trusting the reordered copy. A weight tensor that
// changes every run (computed weights) is simply reordered every run.
class DnnlWeightCache {
 public:
  // Returns memory in `target` layout holding `src` (plain layout `plain`). When the layouts
  // are equal, wraps the source pointer without copying.
  // `constant`: src is a model constant (KernelContext::input_is_constant), so a cache made from
  // the same address is reused without comparing bytes; otherwise the bytes are compared.
  StatusOr<dnnl::memory> Get(const Node& node, const float* src, const dnnl::memory::desc& plain,
                             const dnnl::memory::desc& target, bool constant = false);
  void Clear();
  // Bytes the cache holds: the reordered weights, and the plain copy it compares against.
  size_t Bytes() const;

 private:
  std::vector<float> plain_copy_;
  dnnl::memory::desc target_;
  dnnl::memory reordered_;
  bool valid_ = false;
  const float* constant_src_ = nullptr;  // address the cache was made from, when constant
};

}  // namespace opscope::engine
