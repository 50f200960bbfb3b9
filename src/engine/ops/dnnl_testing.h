// Test-only helpers for the nn kernel tests: run a kernel with fused post-ops, the scalar
// activations the fused result is compared against, and ONNX conformance data run through a
// kernel directly.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <vector>

#include "engine/kernel.h"
#include "engine/onnx_io.h"
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
    // Poisoned (all bytes 0xFF: NaN for floats, -1 for integers) rather than zeroed, like an
    // arena slot that held another tensor: a kernel that leaves an element unwritten fails.
    out_[i] = Tensor(dtype, shape);
    if (out_[i].nbytes()) std::memset(out_[i].raw(), 0xFF, out_[i].nbytes());
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

// RunKernel with poisoned outputs (see NnTestContext).
inline StatusOr<std::vector<Tensor>> RunPoisoned(const Node& node,
                                                 const std::vector<const Tensor*>& inputs,
                                                 int repeat = 1) {
  return RunWithPostOps(node, inputs, {}, repeat);
}

// The activations as the separate ONNX operators define them.
inline float RefActivation(const PostOp& op, float x) {
  switch (op.kind) {
    case PostOpKind::kRelu:
      return std::max(x, 0.f);
    case PostOpKind::kLeakyRelu:
      return x >= 0 ? x : op.alpha * x;
    case PostOpKind::kClip:
      return std::min(std::max(x, op.alpha), op.beta);
    case PostOpKind::kSigmoid:
      return 1.f / (1.f + std::exp(-x));
    case PostOpKind::kTanh:
      return std::tanh(x);
    case PostOpKind::kHardSigmoid:
      return std::max(0.f, std::min(1.f, op.alpha * x + op.beta));
    case PostOpKind::kHardSwish:
      return x * std::max(0.f, std::min(1.f, x / 6.f + 0.5f));
    case PostOpKind::kLinear:
      return op.alpha * x + op.beta;
    case PostOpKind::kBiasAdd:
      return x;
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
  for (int64_t i = 0; i < t.numel(); ++i)
    r.data<float>()[i] = RefActivation(op, t.data<float>()[i]);
  return r;
}

// Runs `node` on ONNX's conformance data set test_data_set_0 of `test` (libonnx-testdata) and
// compares every output with ONNX's tolerances (rtol 1e-3, atol 1e-7). Used for the node tests
// whose model opset (< 7) the session loader refuses, so the kernels are still checked against
// the ONNX oracle. Returns "" on success, "skip" when the data is not installed.
inline std::string RunOnnxNodeData(const Node& node, const std::string& test, int num_inputs) {
  std::string dir = "/usr/share/libonnx-testdata/data/node/" + test + "/test_data_set_0/";
  if (!std::filesystem::exists(dir)) return "skip";
  std::vector<Tensor> ins;
  for (int i = 0; i < num_inputs; ++i) {
    auto t = ReadTensorFile(dir + "input_" + std::to_string(i) + ".pb");
    if (!t.ok()) return t.status().message();
    ins.push_back(std::move(*t));
  }
  std::vector<const Tensor*> ptrs;
  for (auto& t : ins) ptrs.push_back(&t);
  auto out = RunPoisoned(node, ptrs);
  if (!out.ok()) return out.status().message();
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    auto want = ReadTensorFile(dir + "output_" + std::to_string(i) + ".pb");
    if (!want.ok()) return want.status().message();
    std::string d = CompareFloat((*out)[i], *want, 1e-7f, 1e-3f);
    if (!d.empty()) return "output " + std::to_string(i) + ": " + d;
  }
  return "";
}

}  // namespace opscope::engine::testing
