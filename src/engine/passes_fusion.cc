// The post-op fusion pass (SessionImpl::Fuse). After the pattern fusions (passes_patterns.cc),
// each step whose anchor accepts post-ops (a convolution, MatMul, Gemm or an elementwise
// arithmetic kernel) absorbs the chain of its sole consumers while they fit: a
// BatchNormalization or a scalar/per-channel Mul/Add/Sub/Div folded into a Conv's weights and
// bias, an activation (Relu, LeakyRelu, Clip, Sigmoid, Tanh, HardSigmoid, HardSwish, a one-sided
// Clip written as Max/Min with a constant) or MatMul's constant bias Add as a post-op of its
// kernel. A fused step keeps the list of its source nodes.
#include <cmath>
#include <optional>

#include "engine/op_traits.h"
#include "engine/session_impl.h"

namespace opscope::engine {

int SessionImpl::SoleConsumer(int value) const {
  const Value& v = values_[value];
  if (v.is_output || v.consumers.size() != 1) return -1;
  return v.consumers[0];
}

void SessionImpl::FuseBatchNorm(int conv, int bn) {
  // W'[oc] = W[oc] * s,  B'[oc] = (B[oc] - mean) * s + beta,  s = gamma / sqrt(var + eps)
  const Node& b = nodes_[bn];
  const Tensor& gamma = values_[b.inputs[1]].tensor;
  const Tensor& beta = values_[b.inputs[2]].tensor;
  const Tensor& mean = values_[b.inputs[3]].tensor;
  const Tensor& var = values_[b.inputs[4]].tensor;
  const float eps = b.attrs.Float("epsilon", 1e-5f);
  const int64_t oc = FoldableOutChannels(conv);
  std::vector<float> scale(static_cast<size_t>(oc)), shift(static_cast<size_t>(oc));
  for (int64_t o = 0; o < oc; ++o) {
    scale[o] = gamma.data<float>()[o] / std::sqrt(var.data<float>()[o] + eps);
    shift[o] = beta.data<float>()[o] - mean.data<float>()[o] * scale[o];
  }
  FoldConvScaleShift(conv, scale, shift, "bn_folded");
}

// The output channel count of a Conv, or of a ConvTranspose with group 1 (its W is
// [IC, OC, k...]), whose constant float weights and bias may absorb a per-channel scale and
// shift; -1 for anything else, a bias that is not a constant float32 [OC] included (the kernel
// refuses a wrong bias when it runs; folding it read past its end, a model_struct_fuzz finding).
int64_t SessionImpl::FoldableOutChannels(int node) const {
  const Node& n = nodes_[node];
  const bool conv = n.op_type == "Conv";
  if ((!conv && (n.op_type != "ConvTranspose" || n.attrs.Int("group", 1) != 1)) ||
      n.inputs.size() < 2 || n.inputs[1] < 0)
    return -1;
  const Value& wv = values_[n.inputs[1]];
  // An empty weight is not folded: there is nothing to scale, OC (2^31 in a fuzzed
  // [2^31, 0, 3] weight) no longer bounds the scale and bias vectors by the weight's size, and
  // FoldConvScaleShift would divide by an OC or IC of 0 (undefined behaviour).
  if (!wv.is_const || wv.tensor.dtype() != DataType::kFloat32 || wv.tensor.rank() < 3 ||
      wv.tensor.numel() == 0)
    return -1;
  const int64_t oc = wv.tensor.dim(conv ? 0 : 1);
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    const Value& bv = values_[n.inputs[2]];
    if (!bv.is_const || bv.tensor.dtype() != DataType::kFloat32 || bv.tensor.rank() != 1 ||
        bv.tensor.dim(0) != oc)
      return -1;
  }
  return oc;
}

// W'[oc] = W[oc] * scale[oc],  B'[oc] = B[oc] * scale[oc] + shift[oc], as new constants (the old
// ones may be shared with other nodes). W is [OC, IC/g, k...] for a Conv, [IC, OC, k...] for a
// ConvTranspose (FoldableOutChannels).
void SessionImpl::FoldConvScaleShift(int conv, const std::vector<float>& scale,
                                     const std::vector<float>& shift, const std::string& tag) {
  Node& c = nodes_[conv];
  const Tensor& w = values_[c.inputs[1]].tensor;
  const int64_t oc = FoldableOutChannels(conv);
  // W as [outer, OC, inner]: outer 1 for a Conv, IC for a ConvTranspose.
  const int64_t outer = c.op_type == "Conv" ? 1 : w.dim(0), inner = w.numel() / (outer * oc);
  Tensor nw(DataType::kFloat32, w.shape());
  Tensor nb(DataType::kFloat32, {oc});
  const Tensor* old_bias =
      c.inputs.size() > 2 && c.inputs[2] >= 0 ? &values_[c.inputs[2]].tensor : nullptr;
  for (int64_t i = 0; i < outer; ++i)
    for (int64_t o = 0; o < oc; ++o) {
      const int64_t at = (i * oc + o) * inner;
      for (int64_t k = 0; k < inner; ++k)
        nw.data<float>()[at + k] = w.data<float>()[at + k] * scale[o];
    }
  for (int64_t o = 0; o < oc; ++o) {
    const float b0 = old_bias ? old_bias->data<float>()[o] : 0.f;
    nb.data<float>()[o] = b0 * scale[o] + shift[o];
  }
  auto add_const = [&](const std::string& name, Tensor t) {
    int id = static_cast<int>(values_.size());
    values_.push_back(Value{});
    values_.back().name = name;
    values_.back().is_const = true;
    values_.back().shape_static = true;
    values_.back().tensor = std::move(t);
    values_.back().consumers = {conv};
    return id;
  };
  c.inputs[1] = add_const(c.name + "/W_" + tag, std::move(nw));
  if (c.inputs.size() < 3) c.inputs.resize(3, -1);
  c.inputs[2] = add_const(c.name + "/B_" + tag, std::move(nb));
}

// True while every node fused after step s's anchor was folded into its weights (a
// BatchNormalization or an affine constant): only then may it fold more.
bool SessionImpl::OnlyWeightFolds(int s) const {
  for (size_t k = 1; k < steps_[s].nodes.size(); ++k)
    if (!folded_into_weights_[steps_[s].nodes[k]]) return false;
  return true;
}

// Mul/Add/Sub/Div of a Conv's output by a constant that is a scalar or one value per output
// channel ([C,1,1], [1,C,1,1]): PaddleOCR's learnable affine blocks, decomposed BatchNorms and
// hand-written scale/shift layers. Folded into the Conv's weights and bias when nothing but
// weight folds happened to the step yet (never after an activation). Returns true if folded.
bool SessionImpl::TryFoldConvAffine(int s, int consumer) {
  const Node& an = nodes_[steps_[s].nodes[0]];
  const int64_t oc = FoldableOutChannels(steps_[s].nodes[0]);
  if (oc < 0) return false;
  if (!OnlyWeightFolds(s)) return false;
  const Value& wv = values_[an.inputs[1]];
  const Node& n = nodes_[consumer];
  const std::string& t = n.op_type;
  if (!TraitsOf(t).arithmetic || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
  const int x = steps_[s].outputs[0];
  if (n.inputs[0] == n.inputs[1]) return false;
  const int k_at = n.inputs[0] == x ? 1 : n.inputs[1] == x ? 0 : -1;
  if (k_at < 0 || ((t == "Sub" || t == "Div") && k_at != 1)) return false;  // c - x, c / x: no
  const int kv = n.inputs[k_at];
  if (kv < 0 || !values_[kv].is_const) return false;
  const Tensor& k = values_[kv].tensor;
  const int64_t rank = wv.tensor.rank();
  if (k.dtype() != DataType::kFloat32 || k.rank() > rank) return false;
  bool per_channel = false;
  if (k.numel() != 1) {
    // Right-aligned against the [N, C, spatial...] output: only the channel dim may be > 1.
    for (int d = 0; d < k.rank(); ++d) {
      const int64_t out_dim = rank - k.rank() + d;
      if (k.dim(d) != 1 && (out_dim != 1 || k.dim(d) != oc)) return false;
    }
    per_channel = true;
  }
  std::vector<float> scale(static_cast<size_t>(oc), 1.f), shift(static_cast<size_t>(oc), 0.f);
  for (int64_t o = 0; o < oc; ++o) {
    const float v = k.data<float>()[per_channel ? o : 0];
    if (t == "Mul")
      scale[o] = v;
    else if (t == "Div")
      scale[o] = 1.f / v;
    else if (t == "Add")
      shift[o] = v;
    else
      shift[o] = -v;
  }
  if (t == "Div")
    for (float v : scale)
      if (!std::isfinite(v)) return false;
  FoldConvScaleShift(steps_[s].nodes[0], scale, shift, "affine_folded");
  return true;
}

// The constant operand of a two-input consumer of the step's output when it is one float32
// value that cannot widen the output: rank <= 1, or, after a convolution, no more than its
// weight's rank (the rank of its output; other shapes are not known before the planning run).
// -1 otherwise.
int SessionImpl::ScalarOperand(int producer_step, int consumer) const {
  const Node& n = nodes_[consumer];
  const int prod_out = steps_[producer_step].outputs[0];
  if (n.inputs.size() != 2 || n.inputs[0] == n.inputs[1]) return -1;
  if (n.inputs[0] != prod_out && n.inputs[1] != prod_out) return -1;
  const int other = n.inputs[0] == prod_out ? n.inputs[1] : n.inputs[0];
  if (other < 0 || !values_[other].is_const) return -1;
  const Tensor& k = values_[other].tensor;
  if (k.dtype() != DataType::kFloat32 || k.numel() != 1) return -1;
  if (k.rank() > 1) {
    const Node& an = nodes_[steps_[producer_step].nodes[0]];
    if ((an.op_type != "Conv" && an.op_type != "ConvTranspose") || an.inputs.size() < 2 ||
        an.inputs[1] < 0 || !values_[an.inputs[1]].is_const ||
        k.rank() > values_[an.inputs[1]].tensor.rank())
      return -1;
  }
  return other;
}

// Mul/Add/Sub/Div of the step's output by one constant value (ScalarOperand) is the linear
// post-op alpha * x + beta: x * c, x + c, x - c, c - x, x / c (as x * (1 / c) when 1 / c is a
// finite normal number; c / x is not linear). PP-LCNet's learnable affine blocks (a scalar scale
// and bias after each HardSwish) are two full passes over an activation otherwise. Conv anchors
// fold such constants into their weights first when nothing but weight folds came before
// (TryFoldConvAffine); this is for what follows an activation, and for the other anchors.
std::optional<PostOp> SessionImpl::ScalarAffine(int producer_step, int consumer) const {
  const std::string& t = nodes_[consumer].op_type;
  if (t != "Mul" && t != "Add" && t != "Sub" && t != "Div") return std::nullopt;
  const int other = ScalarOperand(producer_step, consumer);
  if (other < 0) return std::nullopt;
  const float c = values_[other].tensor.data<float>()[0];
  const bool x_first = nodes_[consumer].inputs[0] == steps_[producer_step].outputs[0];
  PostOp op{PostOpKind::kLinear, 1.f, 0.f};
  if (t == "Mul") {
    op.alpha = c;
  } else if (t == "Add") {
    op.beta = c;
  } else if (t == "Sub") {
    op.alpha = x_first ? 1.f : -1.f;
    op.beta = x_first ? -c : c;
  } else {
    if (!x_first || !std::isnormal(1.f / c)) return std::nullopt;
    op.alpha = 1.f / c;
  }
  if (!std::isfinite(op.alpha) || !std::isfinite(op.beta)) return std::nullopt;
  return op;
}

// An activation of the op list (ops/*.def) as a post-op: its parameters are the node's
// attributes (with ONNX's defaults) or, for Clip from opset 11, its constant min/max inputs.
// nullopt for other ops and for a Clip whose bounds are not constants.
std::optional<PostOp> SessionImpl::ActivationPostOp(int node) const {
  const Node& n = nodes_[node];
  const std::optional<PostOpKind> activation = TraitsOf(n.op_type).activation;
  if (!activation) return std::nullopt;
  PostOp op{*activation};
  switch (op.kind) {
    case PostOpKind::kLeakyRelu:
      op.alpha = n.attrs.Float("alpha", 0.01f);
      break;
    case PostOpKind::kHardSigmoid:
      op.alpha = n.attrs.Float("alpha", 0.2f);
      op.beta = n.attrs.Float("beta", 0.5f);
      break;
    case PostOpKind::kClip:
      op.alpha = -INFINITY;
      op.beta = INFINITY;
      if (n.opset < 11) {
        op.alpha = n.attrs.Float("min", -3.4028234663852886e38f);
        op.beta = n.attrs.Float("max", 3.4028234663852886e38f);
      } else {
        for (int k = 1; k <= 2; ++k) {
          if (k >= static_cast<int>(n.inputs.size()) || n.inputs[k] < 0) continue;
          const Value& v = values_[n.inputs[k]];
          if (!v.is_const || v.tensor.dtype() != DataType::kFloat32 || v.tensor.numel() != 1)
            return std::nullopt;
          (k == 1 ? op.alpha : op.beta) = v.tensor.data<float>()[0];
        }
      }
      break;
    default:  // Relu, Sigmoid, Tanh, HardSwish: no parameters
      break;
  }
  return op;
}

bool SessionImpl::TryPostOp(int producer_step, int consumer) {
  const Node& n = nodes_[consumer];
  PostOp op{PostOpKind::kRelu};
  const std::string& t = n.op_type;
  if (TraitsOf(t).activation) {
    const std::optional<PostOp> activation = ActivationPostOp(consumer);
    if (!activation) return false;
    op = *activation;
  } else if ((t == "Max" || t == "Min") && n.inputs.size() == 2) {
    // Max/Min with one scalar constant is a one-sided Clip (tf2onnx writes a clamped LeakyRelu
    // that way: Max(LeakyRelu(conv), [1,1,1,1] constant)).
    const int other = ScalarOperand(producer_step, consumer);
    if (other < 0) return false;
    const float k = values_[other].tensor.data<float>()[0];
    op.kind = PostOpKind::kClip;
    op.alpha = t == "Max" ? k : -INFINITY;
    op.beta = t == "Max" ? INFINITY : k;
  } else if (const std::optional<PostOp> linear = ScalarAffine(producer_step, consumer)) {
    op = *linear;
  } else if (t == "Add") {
    // MatMul + Add(bias): the bias must be a constant vector over the last dimension.
    if (n.inputs.size() != 2) return false;  // a malformed Add is refused by its own kernel
    if (nodes_[steps_[producer_step].nodes[0]].op_type != "MatMul" ||
        steps_[producer_step].nodes.size() != 1)
      return false;
    int prod_out = steps_[producer_step].outputs[0];
    int other = n.inputs[0] == prod_out ? n.inputs[1] : n.inputs[0];
    if (other < 0 || !values_[other].is_const) return false;
    const Tensor& b = values_[other].tensor;
    if (b.dtype() != DataType::kFloat32) return false;
    for (int i = 0; i + 1 < b.rank(); ++i)
      if (b.dim(i) != 1) return false;
    // Only a bias over the whole last dimension: MatMul's B must be constant and its last
    // dimension must equal the bias length (an Add that broadcasts further is not a bias).
    const Node& mm = nodes_[steps_[producer_step].nodes[0]];
    if (mm.inputs.size() < 2 || mm.inputs[1] < 0 || !values_[mm.inputs[1]].is_const) return false;
    const Tensor& w = values_[mm.inputs[1]].tensor;
    if (w.rank() < 2 || b.numel() != w.dim(-1)) return false;
    // The MatMul's output has rank >= rank(B) - 1 (rank(B) - 1 when A is a vector): a bias of
    // higher rank would add leading dims that the fused step could not produce.
    if (b.rank() > w.rank() - 1) return false;
    op.kind = PostOpKind::kBiasAdd;
    op.bias = &values_[other].tensor;
  } else {
    return false;
  }
  return steps_[producer_step].kernel->AddPostOp(op);
}

// Each step whose anchor accepts post-ops absorbs the chain of its sole consumers while they
// fit; `reserved` nodes (a pattern fused later) are left alone.
void SessionImpl::FusePostOpChains(const std::vector<char>& reserved) {
  for (size_t s = 0; s < steps_.size(); ++s) {
    // A step already absorbed into an earlier one (inactive, no nodes) anchors nothing.
    if (!steps_[s].active || steps_[s].nodes.empty() || steps_[s].sub >= 0) continue;
    int anchor = steps_[s].nodes[0];
    if (reserved[anchor]) continue;
    if (!TraitsOf(nodes_[anchor].op_type).post_op_anchor || steps_[s].outputs.empty() ||
        steps_[s].outputs[0] < 0)
      continue;
    while (true) {
      int out = steps_[s].outputs[0];
      int c = SoleConsumer(out);
      if (c < 0) break;
      // Only a live single-node step later in the plan can be absorbed.
      int cstep = node_step_[c];
      if (cstep <= static_cast<int>(s) || !steps_[cstep].active || steps_[cstep].sub >= 0 ||
          steps_[cstep].nodes.size() != 1 || steps_[cstep].nodes[0] != c)
        break;
      if (reserved[c]) break;
      const Node& cn = nodes_[c];
      bool ok = false;
      const int64_t oc = FoldableOutChannels(anchor);
      if (cn.op_type == "BatchNormalization" && oc >= 0 && cn.inputs.size() >= 5 &&
          cn.outputs.size() >= 1 && OnlyWeightFolds(static_cast<int>(s))) {
        bool consts = true;
        for (int k = 1; k <= 4; ++k)
          consts = consts && cn.inputs[k] >= 0 && values_[cn.inputs[k]].is_const &&
                   values_[cn.inputs[k]].tensor.dtype() == DataType::kFloat32 &&
                   values_[cn.inputs[k]].tensor.numel() == oc;
        bool extra_outputs = false;
        for (size_t k = 1; k < cn.outputs.size(); ++k) extra_outputs |= cn.outputs[k] >= 0;
        if (consts && !extra_outputs) {
          FuseBatchNorm(anchor, c);
          steps_[s].inputs = nodes_[anchor].inputs;
          folded_into_weights_[c] = 1;
          ok = true;
        }
      } else if (cn.outputs.size() >= 1) {
        ok = TryFoldConvAffine(static_cast<int>(s), c);
        if (ok) {
          steps_[s].inputs = nodes_[anchor].inputs;
          folded_into_weights_[c] = 1;
        } else {
          ok = TryPostOp(static_cast<int>(s), c);
        }
      }
      if (!ok) break;
      int cs = node_step_[c];
      steps_[cs].active = false;
      steps_[cs].nodes.clear();
      steps_[s].nodes.push_back(c);
      steps_[s].outputs = {cn.outputs[0]};
      node_step_[c] = static_cast<int>(s);
      node_infos_[c].status = "fused";
    }
  }
}

void SessionImpl::Fuse() {
  FuseQdq();
  FuseConvIntegerToFloat();
  FuseGelu();
  folded_into_weights_.assign(nodes_.size(), 0);
  // Producers that accept post-ops (op trait kPostOpAnchor): the oneDNN ops, and the
  // elementwise arithmetic kernels (a residual Add followed by Relu becomes one pass).
  // HardSwish patterns are found first and fused after the post-op pass (which must not take
  // their Add+Clip apart, and which makes a Conv+BatchNormalization the producer of their x).
  const std::vector<UnaryPattern> hardswish = FindHardSwish();
  std::vector<char> reserved(nodes_.size(), 0);
  // Their consumers wait for the second pass too, so that they can join the producer's step
  // after the HardSwish instead of anchoring a chain of their own now.
  for (const UnaryPattern& hp : hardswish) {
    for (int n : hp.chain) reserved[n] = 1;
    for (int n : values_[hp.out].consumers) reserved[n] = 1;
  }
  FusePostOpChains(reserved);
  FuseHardSwish(hardswish);
  // Again, now that the HardSwish chains are part of their producers' steps: what follows them
  // (a learnable affine block's scalar Mul and Add) joins those steps too.
  FusePostOpChains(std::vector<char>(nodes_.size(), 0));
  // Drop emptied steps, renumber.
  std::vector<Step> kept;
  for (Step& st : steps_)
    if (!st.nodes.empty()) kept.push_back(std::move(st));
  steps_ = std::move(kept);
}

// Residual Adds into their convolution (after the planning run, when shapes and layouts are
// known): an Add step (with activations fused after it) of two float activations of the
// output's shape, one of them a Conv step's output that nothing else reads and the other
// computed before that Conv runs, both stored in the output's layout, becomes part of the Conv's
// step: the convolution adds the other input before the Add's activations (a oneDNN binary
// post-op inside channels-last regions, else one pass over the output while it is in cache).
// ResNet's `Conv -> BatchNormalization -> Add(shortcut) -> Relu`. When both inputs qualify the
// later Conv takes it (the earlier one's output is then ready). The Add's step stops running.
void SessionImpl::FuseResidualAdds() {
  const int ns = static_cast<int>(steps_.size());
  auto cl = [&](int v) {
    return v < static_cast<int>(value_channels_last_.size()) && value_channels_last_[v];
  };
  for (int a = 0; a < ns; ++a) {
    Step& as = steps_[a];
    if (!as.active || as.sub >= 0 || as.view || as.nodes.empty() || as.outputs.size() != 1 ||
        as.outputs[0] < 0)
      continue;
    const Node& add = nodes_[as.nodes[0]];
    if (add.op_type != "Add" || add.inputs.size() != 2 || add.inputs[0] < 0 || add.inputs[1] < 0 ||
        add.inputs[0] == add.inputs[1])
      continue;
    std::vector<PostOp> after;
    bool ok = true;
    for (size_t k = 1; k < as.nodes.size() && ok; ++k) {
      const std::optional<PostOp> op = ActivationPostOp(as.nodes[k]);
      ok = op.has_value();
      if (ok) after.push_back(*op);
    }
    const Value& out = values_[as.outputs[0]];
    if (!ok || out.dtype != DataType::kFloat32 || out.shape.size() < 3) continue;
    int best = -1, residual = -1;
    for (int k = 0; k < 2; ++k) {
      const int v = add.inputs[k], r = add.inputs[1 - k];
      const Value& vv = values_[v];
      const Value& rv = values_[r];
      if (vv.is_const || rv.is_const || vv.is_output || vv.is_input || vv.alias_root >= 0 ||
          vv.subgraph >= 0 || rv.subgraph >= 0 || vv.consumers.size() != 1 || vv.producer < 0 ||
          vv.shape != out.shape || rv.shape != out.shape || vv.dtype != DataType::kFloat32 ||
          rv.dtype != DataType::kFloat32 || cl(v) != cl(r) || cl(v) != cl(as.outputs[0]))
        continue;
      const int p = node_step_[vv.producer];
      if (p < 0 || p >= a || p <= best || !steps_[p].active || steps_[p].sub >= 0 ||
          steps_[p].outputs.size() != 1 || steps_[p].outputs[0] != v ||
          nodes_[steps_[p].nodes[0]].op_type != "Conv")
        continue;
      const int rp = rv.producer >= 0 ? node_step_[rv.producer] : -1;
      if (!rv.is_input && (rp < 0 || rp >= p)) continue;  // not computed before the Conv
      best = p;
      residual = r;
    }
    if (best < 0) continue;
    Step& ps = steps_[best];
    std::vector<int> inputs = ps.inputs;
    if (inputs.size() < 3) inputs.resize(3, -1);  // X, W, B (absent), then the residual
    inputs.push_back(residual);
    if (!ps.kernel->AddResidual(static_cast<int>(inputs.size()) - 1, after)) continue;
    ps.inputs = std::move(inputs);
    ps.outputs = as.outputs;
    StepInfo& info = step_infos_[best];
    for (int n : as.nodes) {
      ps.nodes.push_back(n);
      node_step_[n] = best;
      node_infos_[n].step = best;
      node_infos_[n].status = "fused";
      info.nodes.push_back(n);
      info.op_type += "+" + nodes_[n].op_type;
    }
    as.active = false;
    step_infos_[a] = StepInfo{step_infos_[a].name, step_infos_[a].op_type};  // no nodes now
  }
}

}  // namespace opscope::engine
