// Pattern fusions: multi-node subgraphs that become one step (run from Fuse, passes_fusion.cc):
// QDQ groups into an integer kernel (FuseQdq), ONNX Runtime's dynamically quantized
// ConvInteger -> Cast -> Mul [-> Add] [-> Relu] into the integer convolution's float epilogue
// (FuseConvIntegerToFloat), the erf form of Gelu into the Gelu kernel
// (FuseGelu), HardSwish written out as x * Clip(x + 3, 0, 6) / 6 (FindHardSwish before the
// post-op pass, FuseHardSwish after it), with the pattern helpers they share.
#include <onnx/onnx_pb.h>

#include <cmath>

#include "engine/ops/quant_conv.h"
#include "engine/session_impl.h"

namespace opscope::engine {

// QDQ graphs: DequantizeLinear(x) -> Conv/MatMul/Gemm(DequantizeLinear(constant W)) [-> Relu]
// [-> QuantizeLinear] becomes one step running an integer kernel on the quantized x and W
// (ops/quant_conv.h); the weight's DequantizeLinear was folded at load, its quantized inputs are
// still constants. Step nodes: {op, DQ(x), [Relu], [Q]}; the step reads only DQ(x)'s input.
// Anything else (non-constant or non-scalar activation parameters, a DQ(x) with other readers,
// unsupported axes) keeps the float path, which computes the same result.
void SessionImpl::FuseQdq() {
  auto const_tensor = [&](const Node& n, size_t k) -> const Tensor* {
    if (k >= n.inputs.size() || n.inputs[k] < 0) return nullptr;
    const Value& v = values_[n.inputs[k]];
    return v.is_const ? &v.tensor : nullptr;
  };
  auto has_input = [](const Node& n, size_t k) { return k < n.inputs.size() && n.inputs[k] >= 0; };
  // Per-tensor parameters of a Q/DQ node: constant float scale > 0 and an optional constant zp.
  auto scalar_params = [&](const Node& n, float* s, int32_t* z, DataType* zt) {
    const Tensor* st = const_tensor(n, 1);
    if (!st || st->dtype() != DataType::kFloat32 || st->numel() != 1) return false;
    *s = st->data<float>()[0];
    if (!(*s > 0) || !std::isfinite(*s)) return false;
    *z = 0;
    *zt = DataType::kUint8;
    if (has_input(n, 2)) {
      const Tensor* zp = const_tensor(n, 2);
      if (!zp || zp->numel() != 1 ||
          (zp->dtype() != DataType::kUint8 && zp->dtype() != DataType::kInt8))
        return false;
      *zt = zp->dtype();
      *z = zp->dtype() == DataType::kUint8 ? zp->data<uint8_t>()[0] : zp->data<int8_t>()[0];
    }
    return true;
  };
  auto live_single = [&](int node) {
    int st = node_step_[node];
    return st >= 0 && steps_[st].active && steps_[st].nodes.size() == 1 &&
           steps_[st].nodes[0] == node;
  };
  for (size_t s = 0; s < steps_.size(); ++s) {
    if (!steps_[s].active || steps_[s].nodes.size() != 1) continue;
    const int a = steps_[s].nodes[0];
    const Node& an = nodes_[a];
    const bool conv = an.op_type == "Conv", gemm = an.op_type == "Gemm";
    if (!conv && !gemm && an.op_type != "MatMul") continue;
    if (an.inputs.size() < 2 || an.inputs[0] < 0 || an.inputs[1] < 0 || an.outputs.empty())
      continue;
    const int dqx = values_[an.inputs[0]].producer, dqw = values_[an.inputs[1]].producer;
    if (dqx < 0 || dqw < 0 || nodes_[dqx].op_type != "DequantizeLinear" ||
        nodes_[dqw].op_type != "DequantizeLinear" || !live_single(dqx) ||
        SoleConsumer(an.inputs[0]) != a || !values_[an.inputs[1]].is_const ||
        nodes_[dqx].inputs.empty() || nodes_[dqx].inputs[0] < 0)
      continue;
    QdqFusion f;
    DataType xzt;
    if (!scalar_params(nodes_[dqx], &f.x_scale, &f.x_zero_point, &xzt)) continue;
    // Weights: constant uint8/int8 with per-tensor or per-output-channel parameters.
    const Node& wn = nodes_[dqw];
    const Tensor* wq = const_tensor(wn, 0);
    const Tensor* ws = const_tensor(wn, 1);
    if (!wq || !ws || (wq->dtype() != DataType::kUint8 && wq->dtype() != DataType::kInt8) ||
        ws->dtype() != DataType::kFloat32 || wn.attrs.Int("block_size", 0) != 0)
      continue;
    if (has_input(wn, 2) && (!const_tensor(wn, 2) || const_tensor(wn, 2)->dtype() != wq->dtype()))
      continue;
    if (conv ? wq->rank() < 3 : wq->rank() != 2) continue;
    const bool trans_b = gemm && an.attrs.Int("transB", 0) != 0;
    if (gemm && (an.attrs.Int("transA", 0) != 0 || an.attrs.Float("alpha", 1.f) != 1.f ||
                 an.attrs.Float("beta", 1.f) != 1.f))
      continue;
    const int64_t channels = conv ? wq->dim(0) : (trans_b ? wq->dim(0) : wq->dim(1));
    const int64_t want_axis = conv ? 0 : (trans_b ? 0 : 1);
    if (ws->numel() != 1) {
      int64_t axis = wn.attrs.Int("axis", 1);
      if (axis < 0) axis += wq->rank();
      if (axis != want_axis || ws->rank() != 1 || ws->numel() != channels) continue;
    }
    f.w = *wq;
    f.w_scale.assign(ws->data<float>(), ws->data<float>() + ws->numel());
    bool scales_ok = true;
    for (float v : f.w_scale) scales_ok &= v > 0 && std::isfinite(v);
    if (!scales_ok) continue;
    f.w_zero_point.assign(f.w_scale.size(), 0);
    if (const Tensor* wz = const_tensor(wn, 2)) {
      if (wz->numel() != ws->numel()) continue;
      for (int64_t i = 0; i < wz->numel(); ++i)
        f.w_zero_point[i] =
            wz->dtype() == DataType::kUint8 ? wz->data<uint8_t>()[i] : wz->data<int8_t>()[i];
    }
    if (has_input(an, 2)) {  // bias: a constant float vector over the output channels
      const Tensor* b = const_tensor(an, 2);
      if (!b || b->dtype() != DataType::kFloat32 || b->numel() != channels ||
          (gemm && b->rank() == 2 && b->dim(0) != 1) || b->rank() > 2)
        continue;
      f.bias.assign(b->data<float>(), b->data<float>() + b->numel());
    }
    std::vector<int> chain = {a, dqx};
    int out = an.outputs[0];
    int c = SoleConsumer(out);
    if (c >= 0 && nodes_[c].op_type == "Relu" && live_single(c) &&
        node_step_[c] > static_cast<int>(s)) {
      f.relu = true;
      chain.push_back(c);
      out = nodes_[c].outputs[0];
      c = SoleConsumer(out);
    }
    if (c >= 0 && nodes_[c].op_type == "QuantizeLinear" && live_single(c) &&
        node_step_[c] > static_cast<int>(s) && !nodes_[c].attrs.Has("output_dtype") &&
        scalar_params(nodes_[c], &f.y_scale, &f.y_zero_point, &f.y_type)) {
      f.quantize_output = true;
      chain.push_back(c);
      out = nodes_[c].outputs[0];
    }
    auto k = conv ? CreateQdqConv(an, std::move(f)) : CreateQdqMatMul(an, std::move(f));
    if (!k.ok()) continue;
    kernels_[a] = std::move(k).value();
    steps_[s].kernel = kernels_[a].get();
    steps_[s].inputs = {nodes_[dqx].inputs[0]};
    steps_[s].outputs = {out};
    for (size_t i = 1; i < chain.size(); ++i) {
      Step& other = steps_[node_step_[chain[i]]];
      other.active = false;
      other.nodes.clear();
      node_step_[chain[i]] = static_cast<int>(s);
      node_infos_[chain[i]].status = "fused";
      steps_[s].nodes.push_back(chain[i]);
    }
  }
}

// ONNX Runtime's dynamic quantization writes every convolution as DynamicQuantizeLinear(x) ->
// ConvInteger -> Cast(to float) -> Mul(x_scale * w_scale) -> Add(bias) [-> Relu]: three full
// passes over the output after the convolution (int32 -> float, scale, bias). They become the
// convolution's epilogue when the scale is certainly one value at run time (a DynamicQuantize-
// Linear scale, a scalar constant, or a Mul of two such) and the bias is a constant per output
// channel ([C, 1, 1] or [1, C, 1, 1] for a 2-D convolution) or a scalar. Every intermediate must
// be read only by the next node. The step runs where the last node of the chain ran, after the
// scale is computed.
void SessionImpl::FuseConvIntegerToFloat() {
  auto live_single = [&](int node) { return LiveSingleStep(node); };
  auto const_float = [&](int v) -> const Tensor* {
    if (v < 0 || !values_[v].is_const) return nullptr;
    const Tensor& t = values_[v].tensor;
    return t.dtype() == DataType::kFloat32 ? &t : nullptr;
  };
  auto dql_scale = [&](int v) {
    const int p = v < 0 ? -1 : values_[v].producer;
    return p >= 0 && nodes_[p].op_type == "DynamicQuantizeLinear" && nodes_[p].outputs.size() > 1 &&
           nodes_[p].outputs[1] == v;
  };
  auto one_value = [&](int v) {
    const Tensor* c = const_float(v);
    return (c && c->numel() == 1) || dql_scale(v);
  };
  auto scalar_scale = [&](int v) {
    if (v < 0) return false;
    if (one_value(v)) return true;
    const int p = values_[v].producer;
    if (p < 0 || nodes_[p].op_type != "Mul" || nodes_[p].inputs.size() != 2) return false;
    return one_value(nodes_[p].inputs[0]) && one_value(nodes_[p].inputs[1]);
  };
  for (size_t a = 0; a < nodes_.size(); ++a) {
    const Node& conv = nodes_[a];
    if (conv.op_type != "ConvInteger" || !live_single(a) || conv.outputs.size() != 1 ||
        conv.inputs.size() < 2 || conv.inputs[0] < 0 || conv.inputs[1] < 0 ||
        !values_[conv.inputs[1]].is_const)
      continue;
    const Tensor& w = values_[conv.inputs[1]].tensor;
    if (w.rank() != 3 && w.rank() != 4) continue;
    const int64_t oc = w.dim(0);
    const int cast = SoleConsumer(conv.outputs[0]);
    if (cast < 0 || !live_single(cast) || nodes_[cast].op_type != "Cast" ||
        nodes_[cast].attrs.Int("to", 0) != onnx::TensorProto::FLOAT)
      continue;
    const int cv = nodes_[cast].outputs[0], mul = SoleConsumer(cv);
    if (mul < 0 || !live_single(mul)) continue;
    const int scale = OtherInput(mul, "Mul", cv);
    if (scale < 0 || !scalar_scale(scale)) continue;
    std::vector<int> chain = {static_cast<int>(a), cast, mul};
    int out = nodes_[mul].outputs[0];
    std::vector<float> bias;
    if (const int add = SoleConsumer(out); add >= 0 && live_single(add)) {
      const Tensor* b = const_float(OtherInput(add, "Add", out));
      bool per_channel = false;
      if (b && b->numel() == oc && b->rank() >= w.rank() - 1 && b->rank() <= w.rank()) {
        per_channel = b->dim(b->rank() - w.rank() + 1) == oc;  // [C,1,1] or [1,C,1,1]
        if (b->rank() == w.rank()) per_channel &= b->dim(0) == 1;
      }
      if (b && (b->numel() == 1 && b->rank() <= w.rank())) per_channel = true;
      if (per_channel) {
        bias.assign(b->data<float>(), b->data<float>() + b->numel());
        chain.push_back(add);
        out = nodes_[add].outputs[0];
      }
    }
    bool relu = false;
    if (const int r = SoleConsumer(out);
        r >= 0 && live_single(r) && nodes_[r].op_type == "Relu" && nodes_[r].inputs.size() == 1) {
      relu = true;
      chain.push_back(r);
      out = nodes_[r].outputs[0];
    }
    auto k = CreateConvIntegerToFloat(conv, std::move(bias), relu);
    if (!k.ok()) continue;
    fused_kernels_.push_back(std::move(k).value());
    const int s = node_step_[chain.back()];
    Step& st = steps_[s];
    st.kernel = fused_kernels_.back().get();
    st.inputs = conv.inputs;
    st.inputs.resize(4, -1);
    st.inputs.push_back(scale);
    st.outputs = {out};
    st.nodes = {static_cast<int>(a)};
    Step& conv_step = steps_[node_step_[a]];
    conv_step.active = false;
    conv_step.nodes.clear();
    node_step_[a] = s;
    AbsorbInto(s, chain, static_cast<int>(a));
  }
}

// Pattern helpers of the fusions below. A float scalar constant within `tol` of `want`:
bool SessionImpl::ScalarConstNear(int value, double want, double tol) const {
  if (value < 0 || !values_[value].is_const) return false;
  const Tensor& t = values_[value].tensor;
  if (t.dtype() != DataType::kFloat32 || t.numel() != 1 || t.rank() > 1) return false;
  return std::fabs(static_cast<double>(t.data<float>()[0]) - want) <= tol;
}

// The node is still a live main-graph step of its own.
bool SessionImpl::LiveSingleStep(int node) const {
  const int st = node < 0 ? -1 : node_step_[node];
  return st >= 0 && steps_[st].active && steps_[st].sub < 0 && steps_[st].nodes.size() == 1 &&
         steps_[st].nodes[0] == node;
}

// The binary node `n` of type `op` with `value` as one input: the other input, or -2.
int SessionImpl::OtherInput(int n, const char* op, int value) const {
  const Node& nd = nodes_[n];
  if (nd.op_type != op || nd.inputs.size() != 2 || nd.outputs.size() != 1) return -2;
  if (nd.inputs[0] == value && nd.inputs[1] != value) return nd.inputs[1];
  if (nd.inputs[1] == value && nd.inputs[0] != value) return nd.inputs[0];
  return -2;
}

// The erf form of Gelu as exporters write it, 0.5 * x * (1 + erf(x / sqrt(2))) in five nodes
// (PyTorch: Div(x, 1.4142) -> Erf -> Add(1) -> Mul(x) -> Mul(0.5); others multiply by 0.7071 or
// halve x or the sum first), becomes one step running the Gelu kernel on x: one pass instead of
// five over the activation. Every intermediate must be read only inside the pattern, each node
// must still be a live step of its own, and the constants must be float scalars with the
// pattern's values.
void SessionImpl::FuseGelu() {
  auto scalar = [&](int v, double want, double tol) { return ScalarConstNear(v, want, tol); };
  auto live_single = [&](int node) { return LiveSingleStep(node); };
  auto other_input = [&](int n, const char* op, int v) { return OtherInput(n, op, v); };
  for (size_t e = 0; e < nodes_.size(); ++e) {
    const Node& erf = nodes_[e];
    if (erf.op_type != "Erf" || erf.inputs.size() != 1 || erf.inputs[0] < 0 || !live_single(e))
      continue;
    const int u = erf.inputs[0], d = values_[u].producer;
    if (d < 0 || !live_single(d) || SoleConsumer(u) != static_cast<int>(e)) continue;
    const Node& dn = nodes_[d];
    if (dn.inputs.size() != 2 || dn.inputs[0] < 0) continue;
    const int x = dn.inputs[0];
    const bool scaled = (dn.op_type == "Div" && scalar(dn.inputs[1], M_SQRT2, 1e-4)) ||
                        (dn.op_type == "Mul" && scalar(dn.inputs[1], M_SQRT1_2, 1e-4));
    if (!scaled || values_[x].dtype != DataType::kFloat32) continue;
    // Add(erf, 1)
    const int ev = erf.outputs[0], a = SoleConsumer(ev);
    if (a < 0 || !live_single(a) || !scalar(other_input(a, "Add", ev), 1.0, 1e-6)) continue;
    const int av = nodes_[a].outputs[0], m = SoleConsumer(av);
    if (m < 0 || !live_single(m)) continue;
    std::vector<int> chain = {d, static_cast<int>(e), a, m};
    int out = -1;
    const int mo = other_input(m, "Mul", av);
    if (mo == x) {  // Mul(x, 1 + erf) then Mul(0.5)
      const int mv = nodes_[m].outputs[0], h = SoleConsumer(mv);
      if (h < 0 || !live_single(h) || !scalar(other_input(h, "Mul", mv), 0.5, 1e-6)) continue;
      chain.push_back(h);
      out = nodes_[h].outputs[0];
    } else if (scalar(mo, 0.5, 1e-6)) {  // Mul(1 + erf, 0.5) then Mul(x)
      const int mv = nodes_[m].outputs[0], h = SoleConsumer(mv);
      if (h < 0 || !live_single(h) || other_input(h, "Mul", mv) != x) continue;
      chain.push_back(h);
      out = nodes_[h].outputs[0];
    } else if (mo >= 0) {  // Mul(Mul(x, 0.5), 1 + erf)
      const int h = values_[mo].producer;
      if (h < 0 || !live_single(h) || SoleConsumer(mo) != m ||
          !scalar(other_input(h, "Mul", x), 0.5, 1e-6))
        continue;
      chain.push_back(h);
      out = nodes_[m].outputs[0];
    } else {
      continue;
    }
    ReplaceWithUnary(chain, x, out, "Gelu", 20);
  }
}

void SessionImpl::ReplaceWithUnary(const std::vector<int>& chain, int x, int out,
                                   const char* op_type, int opset) {
  // The step runs where the earliest node of the pattern ran (it needs only x).
  int first = chain[0];
  for (int n : chain)
    if (node_step_[n] < node_step_[first]) first = n;
  Node g;
  g.name = nodes_[first].name;
  g.op_type = op_type;
  g.opset = opset;
  g.inputs = {x};
  g.outputs = {out};
  KernelFactory factory = FindKernel("", op_type);
  if (!factory) return;
  auto k = factory(g);
  if (!k.ok()) return;
  fused_kernels_.push_back(std::move(k).value());
  const int s = node_step_[first];
  steps_[s].kernel = fused_kernels_.back().get();
  steps_[s].inputs = {x};
  steps_[s].outputs = {out};
  steps_[s].nodes = {first};
  AbsorbInto(s, chain, first);
}

// Moves the live single-node steps of `chain` (all but `skip`) into step s, in chain order.
void SessionImpl::AbsorbInto(int s, const std::vector<int>& chain, int skip) {
  for (int n : chain) {
    if (n == skip) continue;
    if (node_step_[n] != s) {  // the host step's own node (a chain fused where it ends) stays
      Step& other = steps_[node_step_[n]];
      other.active = false;
      other.nodes.clear();
      node_step_[n] = s;
    }
    node_infos_[n].status = "fused";
    steps_[s].nodes.push_back(n);
  }
}

// HardSwish as paddle2onnx and hand-built exports write it: x * Clip(x + 3, 0, 6) / 6 (the
// division by 6 last, or applied to the Clip first; a Mul by 1/6 instead of a Div). When the
// step producing x is read by nothing else and takes a HardSwish post-op (a Conv, Conv+BN, an
// elementwise Add), the four nodes join that step; otherwise they become one HardSwish step.
// Runs after the post-op pass, so x is already a fused Conv+BatchNormalization's output.
std::vector<SessionImpl::UnaryPattern> SessionImpl::FindHardSwish() {
  std::vector<UnaryPattern> found;
  auto scalar = [&](int v, double want, double tol) { return ScalarConstNear(v, want, tol); };
  auto live_single = [&](int node) { return LiveSingleStep(node); };
  auto other_input = [&](int n, const char* op, int v) { return OtherInput(n, op, v); };
  // Div(v, 6) or Mul(v, 1/6) with `v` the numerator.
  auto is_sixth = [&](int n, int v) {
    const Node& nd = nodes_[n];
    if (nd.op_type == "Div")
      return nd.inputs.size() == 2 && nd.inputs[0] == v && scalar(nd.inputs[1], 6.0, 1e-6);
    return scalar(other_input(n, "Mul", v), 1.0 / 6.0, 1e-6);
  };
  auto is_relu6 = [&](int n) {
    const Node& c = nodes_[n];
    if (c.op_type != "Clip" || c.outputs.size() != 1) return false;
    if (c.opset < 11) return c.attrs.Float("min", -1) == 0.f && c.attrs.Float("max", -1) == 6.f;
    return c.inputs.size() == 3 && scalar(c.inputs[1], 0.0, 0.0) && scalar(c.inputs[2], 6.0, 0.0);
  };
  for (size_t a0 = 0; a0 < nodes_.size(); ++a0) {
    const Node& an = nodes_[a0];
    if (an.op_type != "Add" || an.inputs.size() != 2 || !live_single(a0)) continue;
    int x = -1;
    for (int k = 0; k < 2; ++k)
      if (an.inputs[k] >= 0 && !values_[an.inputs[k]].is_const && scalar(an.inputs[1 - k], 3.0, 0))
        x = an.inputs[k];
    if (x < 0) continue;
    const int av = an.outputs[0], c = SoleConsumer(av);
    if (c < 0 || !live_single(c) || !is_relu6(c) || nodes_[c].inputs[0] != av) continue;
    const int cv = nodes_[c].outputs[0], m = SoleConsumer(cv);
    if (m < 0 || !live_single(m)) continue;
    const int mv = nodes_[m].outputs[0], l = SoleConsumer(mv);
    if (l < 0 || !live_single(l)) continue;
    const bool six_last = other_input(m, "Mul", cv) == x && is_sixth(l, mv);
    const bool six_first = is_sixth(m, cv) && other_input(l, "Mul", mv) == x;
    if (!six_last && !six_first) continue;
    found.push_back({{static_cast<int>(a0), c, m, l}, x, nodes_[l].outputs[0]});
  }
  return found;
}

void SessionImpl::FuseHardSwish(const std::vector<UnaryPattern>& found) {
  for (const UnaryPattern& hp : found) {
    const std::vector<int>& chain = hp.chain;
    const int x = hp.x, out = hp.out, a0 = chain[0];
    bool live = true;
    for (int n : chain) {
      const int st = node_step_[n];
      live &= st >= 0 && steps_[st].active && steps_[st].nodes.size() == 1;
    }
    if (!live) continue;
    // Into x's producer step as a post-op, when the pattern is all that reads x.
    const int p = values_[x].producer;
    const int ps = p >= 0 ? node_step_[p] : -1;
    bool only_pattern = !values_[x].is_output;
    for (int r : values_[x].consumers) only_pattern &= r == a0 || r == chain[2] || r == chain[3];
    if (ps >= 0 && steps_[ps].active && steps_[ps].sub < 0 && steps_[ps].outputs.size() == 1 &&
        steps_[ps].outputs[0] == x && only_pattern && ps < node_step_[a0] &&
        steps_[ps].kernel->AddPostOp(PostOp{PostOpKind::kHardSwish})) {
      steps_[ps].outputs = {out};
      AbsorbInto(ps, chain, -1);
      continue;
    }
    ReplaceWithUnary(chain, x, out, "HardSwish", 14);
  }
}

}  // namespace opscope::engine
