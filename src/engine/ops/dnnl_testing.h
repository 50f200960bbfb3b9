// Test-only helpers for the nn kernel tests: run a kernel with fused post-ops, and the scalar
// activations the fused result is compared against.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/kernel.h"
#include "engine/ops/common.h"
#include "engine/testing/kernel_runner.h"

namespace opscope::engine::testing {

class NnTestContext : public KernelContext {
 public:
  NnTestContext(std::vector<const Tensor*> in, int nout, std::vector<bool> wanted = {})
      : in_(std::move(in)), out_(nout), wanted_(std::move(wanted)) {}
  int num_inputs() const override { return static_cast<int>(in_.size()); }
  const Tensor* input(int i) const override {
    return i >= 0 && i < num_inputs() ? in_[i] : nullptr;
  }
  int num_outputs() const override { return static_cast<int>(out_.size()); }
  bool output_wanted(int i) const override {
    if (i < 0 || i >= num_outputs()) return false;
    return wanted_.empty() || wanted_[i];
  }
  StatusOr<Tensor*> Output(int i, DataType dtype, const std::vector<int64_t>& shape) override {
    if (i < 0 || i >= num_outputs()) return Internal("output index out of range");
    out_[i] = Tensor(dtype, shape);
    return &out_[i];
  }
  int threads() const override { return omp_get_max_threads(); }
  std::vector<Tensor>& outputs() { return out_; }

 private:
  std::vector<const Tensor*> in_;
  std::vector<Tensor> out_;
  std::vector<bool> wanted_;
};

// Creates the kernel through the registry, offers each post-op (all must be accepted), runs
// it `repeat` times.
inline StatusOr<std::vector<Tensor>> RunWithPostOps(const Node& node,
                                                    const std::vector<const Tensor*>& inputs,
                                                    const std::vector<PostOp>& post_ops,
                                                    int repeat = 2) {
  KernelFactory f = FindKernel(node.domain, node.op_type);
  if (!f) return Unsupported("no kernel for " + node.op_type);
  OPSCOPE_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> k, f(node));
  for (const PostOp& op : post_ops)
    if (!k->AddPostOp(op)) return Unsupported("post-op refused");
  std::vector<Tensor> out;
  for (int r = 0; r < repeat; ++r) {
    NnTestContext ctx(inputs, static_cast<int>(node.outputs.size()));
    OPSCOPE_RETURN_IF_ERROR(k->Run(ctx));
    out = std::move(ctx.outputs());
  }
  return out;
}

// The activations as the separate ONNX operators define them.
inline float RefActivation(const PostOp& op, float x) {
  switch (op.kind) {
    case PostOpKind::kRelu: return std::max(x, 0.f);
    case PostOpKind::kLeakyRelu: return x >= 0 ? x : op.alpha * x;
    case PostOpKind::kClip: return std::min(std::max(x, op.alpha), op.beta);
    case PostOpKind::kSigmoid: return 1.f / (1.f + std::exp(-x));
    case PostOpKind::kTanh: return std::tanh(x);
    case PostOpKind::kHardSigmoid: return std::max(0.f, std::min(1.f, op.alpha * x + op.beta));
    case PostOpKind::kHardSwish: return x * std::max(0.f, std::min(1.f, x / 6.f + 0.5f));
    case PostOpKind::kBiasAdd: return x;
  }
  return x;
}

inline std::vector<PostOp> AllActivations() {
  return {{PostOpKind::kRelu},
          {PostOpKind::kLeakyRelu, 0.1f},
          {PostOpKind::kClip, -0.3f, 0.4f},
          {PostOpKind::kSigmoid},
          {PostOpKind::kTanh},
          {PostOpKind::kHardSigmoid, 0.2f, 0.5f},
          {PostOpKind::kHardSwish}};
}

inline Tensor ApplyRef(const Tensor& t, const PostOp& op) {
  Tensor r(DataType::kFloat32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) r.data<float>()[i] = RefActivation(op, t.data<float>()[i]);
  return r;
}

}  // namespace opscope::engine::testing
