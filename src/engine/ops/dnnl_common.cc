#include "engine/ops/dnnl_common.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <exception>

#include "engine/ops/activation.h"
#include "engine/ops/common.h"

namespace opscope::engine {

dnnl::engine& DnnlEngine() {
  static dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

dnnl::stream& DnnlStream() {
  thread_local dnnl::stream stream(DnnlEngine());
  return stream;
}

Status DnnlCall(const Node& node, const char* what, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const dnnl::error& e) {
    return NodeError(node, std::string("oneDNN failed to ") + what + ": " + e.what() + " (status " +
                               std::to_string(static_cast<int>(e.status)) + ")");
  } catch (const std::exception& e) {
    return NodeError(node, std::string("failed to ") + what + ": " + e.what());
  }
  return Status();
}

dnnl::memory::dims DnnlDims(const std::vector<int64_t>& shape) {
  return dnnl::memory::dims(shape.begin(), shape.end());
}

dnnl::memory::dims DnnlStrides(const std::vector<int64_t>& shape) {
  dnnl::memory::dims s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= std::max<int64_t>(shape[i], 1);
  }
  return s;
}

dnnl::memory::desc DnnlPlainDesc(const std::vector<int64_t>& shape) {
  return dnnl::memory::desc(DnnlDims(shape), dnnl::memory::data_type::f32, DnnlStrides(shape));
}

bool IsEltwisePostOp(PostOpKind kind) { return kind != PostOpKind::kBiasAdd; }

void AppendEltwisePostOp(const PostOp& op, dnnl::post_ops* ops) {
  using dnnl::algorithm;
  switch (op.kind) {
    case PostOpKind::kRelu:
      ops->append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
      break;
    case PostOpKind::kLeakyRelu:
      ops->append_eltwise(1.f, algorithm::eltwise_relu, op.alpha, 0.f);
      break;
    case PostOpKind::kClip: {
      float lo = std::max(op.alpha, -FLT_MAX), hi = std::min(op.beta, FLT_MAX);
      ops->append_eltwise(1.f, algorithm::eltwise_clip, lo, hi);
      break;
    }
    case PostOpKind::kSigmoid:
      ops->append_eltwise(1.f, algorithm::eltwise_logistic, 0.f, 0.f);
      break;
    case PostOpKind::kTanh:
      ops->append_eltwise(1.f, algorithm::eltwise_tanh, 0.f, 0.f);
      break;
    case PostOpKind::kHardSigmoid:
      ops->append_eltwise(1.f, algorithm::eltwise_linear, op.alpha, op.beta);
      ops->append_eltwise(1.f, algorithm::eltwise_clip, 0.f, 1.f);
      break;
    case PostOpKind::kHardSwish:
      ops->append_eltwise(1.f, algorithm::eltwise_hardswish, 0.f, 0.f);
      break;
    case PostOpKind::kLinear:
      ops->append_eltwise(1.f, algorithm::eltwise_linear, op.alpha, op.beta);
      break;
    case PostOpKind::kBiasAdd:
      break;
  }
}

bool DnnlEltwiseConsistent(const dnnl::post_ops& ops) {
  struct Eltwise {
    dnnl::algorithm alg;
    float alpha, beta;
  };
  std::vector<Eltwise> seen;
  for (int i = 0; i < ops.len(); ++i) {
    if (ops.kind(i) != dnnl::primitive::kind::eltwise) continue;
    float scale, alpha, beta;
    dnnl::algorithm alg;
    ops.get_params_eltwise(i, scale, alg, alpha, beta);
    for (const Eltwise& e : seen)
      if (e.alg == alg && (e.alpha != alpha || e.beta != beta)) return false;
    seen.push_back({alg, alpha, beta});
  }
  return true;
}

bool DnnlPostOpFits(const std::vector<PostOp>& chain, const PostOp& next) {
  if (!IsEltwisePostOp(next.kind)) return false;
  dnnl::post_ops ops;
  for (const PostOp& op : WithPostOp(chain, next)) AppendEltwisePostOp(op, &ops);
  return DnnlEltwiseConsistent(ops);
}

float ApplyPostOpScalar(const PostOp& op, float x) {
  return ApplyActivation(op.kind, x, op.alpha, op.beta);
}

float ApplyPostOpsScalar(const std::vector<PostOp>& ops, float x) {
  for (const PostOp& op : ops) x = ApplyPostOpScalar(op, x);
  return x;
}

StatusOr<dnnl::memory> DnnlWeightCache::Get(const Node& node, const float* src,
                                            const dnnl::memory::desc& plain,
                                            const dnnl::memory::desc& target, bool constant) {
  dnnl::memory out;
  if (plain == target) {
    OPSCOPE_RETURN_IF_ERROR(DnnlCall(node, "wrap weights", [&] {
      out = dnnl::memory(plain, DnnlEngine(), const_cast<float*>(src));
    }));
    return out;
  }
  size_t n = plain.get_size() / sizeof(float);
  if (valid_ && target_ == target && constant && constant_src_ == src) return reordered_;
  if (valid_ && target_ == target && !constant && plain_copy_.size() == n &&
      std::memcmp(plain_copy_.data(), src, n * sizeof(float)) == 0) {
    return reordered_;
  }
  valid_ = false;
  constant_src_ = nullptr;
  OPSCOPE_RETURN_IF_ERROR(DnnlCall(node, "reorder weights", [&] {
    dnnl::memory user(plain, DnnlEngine(), const_cast<float*>(src));
    reordered_ = dnnl::memory(target, DnnlEngine());
    dnnl::reorder(user, reordered_).execute(DnnlStream(), user, reordered_);
    DnnlStream().wait();
  }));
  // A constant needs no copy to compare against; anything else keeps one.
  if (constant) {
    plain_copy_.clear();
    plain_copy_.shrink_to_fit();
    constant_src_ = src;
  } else {
    plain_copy_.assign(src, src + n);
  }
  target_ = target;
  valid_ = true;
  return reordered_;
}

size_t DnnlWeightCache::Bytes() const {
  size_t n = plain_copy_.size() * sizeof(float);
  if (valid_ && reordered_) n += reordered_.get_desc().get_size();
  return n;
}

void DnnlWeightCache::Clear() {
  valid_ = false;
  plain_copy_.clear();
  reordered_ = dnnl::memory();
}

}  // namespace opscope::engine
