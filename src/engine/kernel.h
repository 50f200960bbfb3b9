// The operator kernel interface and registry.
//
// Adding an operator is one row in ops/*.def (name, traits, activation: op_traits.h) plus its
// code in an ops/ file:   StatusOr<std::unique_ptr<Kernel>> Create_<OpType>(const Node& node);
// Create_ validates attributes (an error names the node) and returns the kernel. Run() receives
// the input tensors, computes output shapes itself, obtains outputs with ctx.Output() (which hands
// out memory from the planner's arena when the planned size fits) and fills them. Kernels may
// cache state (oneDNN primitives, packed weights) keyed by input shapes. Every kernel is also
// the home of its operator's cost function (FLOPs and compulsory bytes), so counting and running
// stay side by side.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/graph.h"
#include "opscope/tensor.h"

namespace opscope::engine {

struct TensorDesc {
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;
  int64_t numel() const;
  double nbytes() const;
};

struct Cost {
  double flops = 0;  // floating-point operations (a multiply-add counts 2)
  double bytes = 0;  // compulsory traffic: every input read once, every output written once
};

// Sum of input and output sizes: the default compulsory traffic.
double CompulsoryBytes(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out);

class KernelContext {
 public:
  virtual ~KernelContext() = default;
  virtual int num_inputs() const = 0;
  // nullptr for an omitted optional input (or an index past the node's inputs).
  virtual const Tensor* input(int i) const = 0;
  virtual int num_outputs() const = 0;
  virtual bool output_wanted(int i) const = 0;
  // Allocates (or reuses) output i with the given type and shape. Never returns null; fails
  // with ResourceExhausted for a tensor too large to allocate.
  virtual StatusOr<Tensor*> Output(int i, DataType dtype, const std::vector<int64_t>& shape) = 0;
  virtual int threads() const = 0;
  // True when input i is a constant of the model (an initializer or a folded value): its data
  // never changes between runs and its address is stable, so kernels may cache what they derive
  // from it (reordered weights) without re-checking the bytes.
  virtual bool input_is_constant(int i) const { return false; }
  // Control flow (If, Loop, Scan): runs the subgraph `graph` (AttrValue::graph of one of the
  // node's graph attributes) with `inputs` bound to its inputs, in order, and returns its
  // outputs. The subgraph's nodes run as steps of their own, observed (OnStepBegin/End) inside
  // the parent's step. Inputs are borrowed for the call only.
  virtual Status RunSubgraph(int graph, const std::vector<const Tensor*>& inputs,
                             std::vector<Tensor>* outputs) {
    return Unsupported("subgraphs cannot run in this context");
  }
};

// Activation or bias folded into the producing op (oneDNN post-ops). The fusion pass offers
// one to the producer when the consumer is its only user.
enum class PostOpKind {
  kRelu,
  kLeakyRelu,
  kClip,
  kSigmoid,
  kTanh,
  kHardSigmoid,
  kHardSwish,
  kLinear,  // alpha * x + beta: a Mul/Add/Sub/Div by one constant value (ScalarAffine)
  kBiasAdd
};
struct PostOp {
  PostOpKind kind;
  float alpha = 0, beta = 0;     // LeakyRelu alpha; Clip min/max; HardSigmoid and Linear alpha/beta
  const Tensor* bias = nullptr;  // kBiasAdd: constant 1-D tensor over the last output dim
};

// `chain` followed by `op`; a linear op right after a linear op is composed into it
// (a2 * (a1 * x + b1) + b2), so a scale and a shift stay one pass (and one oneDNN post-op).
inline std::vector<PostOp> WithPostOp(std::vector<PostOp> chain, const PostOp& op) {
  if (op.kind == PostOpKind::kLinear && !chain.empty() &&
      chain.back().kind == PostOpKind::kLinear) {
    PostOp& last = chain.back();
    last.beta = op.alpha * last.beta + op.beta;
    last.alpha = op.alpha * last.alpha;
  } else {
    chain.push_back(op);
  }
  return chain;
}

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual Status Run(KernelContext& ctx) = 0;
  virtual Cost EstimateCost(const std::vector<TensorDesc>& in,
                            const std::vector<TensorDesc>& out) const {
    return {0, CompulsoryBytes(in, out)};
  }
  // Returns true if the kernel applies `op` to its output from now on.
  virtual bool AddPostOp(const PostOp& op) { return false; }
  // Residual fusion (SessionImpl::FuseResidualAdds, after the planning run): from now on the
  // output is after(y + input(`input`)), y being what the kernel computed with its post-ops and
  // the input a float tensor of the output's shape stored in the output's layout. Returns false
  // if the kernel cannot (convolutions can, unless `after` cannot follow their post-ops).
  virtual bool AddResidual(int input, const std::vector<PostOp>& after) { return false; }
  // Channels-last activations: from now on input 0 (`input`) and output 0 (`output`) of a 4-D
  // NCHW tensor are stored as NHWC in memory (the logical shape stays NCHW). Returns false if
  // the kernel cannot; convolutions can (SessionImpl::AssignChannelsLast), 2-D pools and
  // per-channel Add/Sub/Mul/Div for (true, true) only, global pools for (true, false). A
  // convolution that accepts (true, true) must accept every pair.
  virtual bool SetChannelsLast(bool input, bool output) { return !input && !output; }
  // The memory the kernel holds beyond its inputs and outputs, as of now (after a run): buffers
  // it keeps between runs (reorders, scratch) and its copies of constant inputs (prepacked
  // weights). Kernels that keep none return zeros. Per-call temporaries are not counted.
  struct MemoryUse {
    size_t workspace_bytes = 0;
    size_t packed_weight_bytes = 0;
  };
  virtual MemoryUse Memory() const { return {}; }
};

using KernelFactory = StatusOr<std::unique_ptr<Kernel>> (*)(const Node& node);

// nullptr if the operator is not supported.
KernelFactory FindKernel(const std::string& domain, const std::string& op_type);
std::vector<std::string> SupportedOperators();

}  // namespace opscope::engine
