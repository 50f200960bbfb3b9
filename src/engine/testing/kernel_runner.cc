#include "engine/testing/kernel_runner.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "engine/ops/common.h"

namespace opscope::engine::testing {

Node MakeNode(const std::string& op_type, int num_inputs, int num_outputs, int opset) {
  Node n;
  n.name = op_type + "_test";
  n.op_type = op_type;
  n.opset = opset;
  for (int i = 0; i < num_inputs; ++i) {
    n.inputs.push_back(i);
    n.input_names.push_back("in" + std::to_string(i));
  }
  for (int i = 0; i < num_outputs; ++i) {
    n.outputs.push_back(num_inputs + i);
    n.output_names.push_back("out" + std::to_string(i));
  }
  return n;
}

AttrValue IntAttr(int64_t v) {
  AttrValue a;
  a.kind = AttrValue::Kind::kInt;
  a.i = v;
  return a;
}
AttrValue FloatAttr(float v) {
  AttrValue a;
  a.kind = AttrValue::Kind::kFloat;
  a.f = v;
  return a;
}
AttrValue StringAttr(const std::string& v) {
  AttrValue a;
  a.kind = AttrValue::Kind::kString;
  a.s = v;
  return a;
}
AttrValue IntsAttr(std::vector<int64_t> v) {
  AttrValue a;
  a.kind = AttrValue::Kind::kInts;
  a.ints = std::move(v);
  return a;
}
AttrValue FloatsAttr(std::vector<float> v) {
  AttrValue a;
  a.kind = AttrValue::Kind::kFloats;
  a.floats = std::move(v);
  return a;
}

namespace {
class TestContext : public KernelContext {
 public:
  TestContext(const std::vector<const Tensor*>& in, int nout) : in_(in), out_(nout) {}
  int num_inputs() const override { return static_cast<int>(in_.size()); }
  const Tensor* input(int i) const override {
    return i >= 0 && i < num_inputs() ? in_[i] : nullptr;
  }
  int num_outputs() const override { return static_cast<int>(out_.size()); }
  bool output_wanted(int i) const override { return i >= 0 && i < num_outputs(); }
  StatusOr<Tensor*> Output(int i, DataType dtype, const std::vector<int64_t>& shape) override {
    if (i < 0 || i >= num_outputs()) return Internal("output index out of range");
    for (int64_t d : shape)
      if (d < 0) return InvalidArgument("negative output dimension");
    out_[i] = Tensor(dtype, shape);
    return &out_[i];
  }
  int threads() const override { return omp_get_max_threads(); }
  std::vector<Tensor> Take() { return std::move(out_); }

 private:
  std::vector<const Tensor*> in_;
  std::vector<Tensor> out_;
};
}  // namespace

StatusOr<std::vector<Tensor>> RunKernel(const Node& node, const std::vector<const Tensor*>& inputs,
                                        int repeat) {
  KernelFactory f = FindKernel(node.domain, node.op_type);
  if (!f) return Unsupported("no kernel for " + node.op_type);
  OPSCOPE_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> k, f(node));
  std::vector<Tensor> out;
  for (int r = 0; r < repeat; ++r) {
    TestContext ctx(inputs, static_cast<int>(node.outputs.size()));
    OPSCOPE_RETURN_IF_ERROR(k->Run(ctx));
    out = ctx.Take();
  }
  return out;
}

Tensor RandomTensor(std::vector<int64_t> shape, uint32_t seed, float lo, float hi) {
  Tensor t(DataType::kFloat32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(rng);
  return t;
}

Tensor IntTensor(std::vector<int64_t> shape, std::vector<int64_t> values) {
  Tensor t(DataType::kInt64, std::move(shape));
  if (!values.empty()) std::memcpy(t.raw(), values.data(), std::min(values.size() * 8, t.nbytes()));
  return t;
}

Tensor FloatTensor(std::vector<int64_t> shape, std::vector<float> values) {
  Tensor t(DataType::kFloat32, std::move(shape));
  if (!values.empty()) std::memcpy(t.raw(), values.data(), std::min(values.size() * 4, t.nbytes()));
  return t;
}

std::string CompareFloat(const Tensor& a, const Tensor& e, float atol, float rtol) {
  std::ostringstream os;
  if (a.shape() != e.shape()) {
    os << "shape mismatch";
    return os.str();
  }
  const float* pa = a.data<float>();
  const float* pe = e.data<float>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    float diff = std::fabs(pa[i] - pe[i]);
    bool both_nan = std::isnan(pa[i]) && std::isnan(pe[i]);
    if (!both_nan && !(diff <= atol + rtol * std::fabs(pe[i]))) {
      os << "element " << i << ": got " << pa[i] << ", expected " << pe[i];
      return os.str();
    }
  }
  return "";
}

}  // namespace opscope::engine::testing
