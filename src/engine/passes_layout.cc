// The layout pass: channels-last regions (SessionImpl::AssignChannelsLast, after the planning
// run, when SessionOptions::channels_last is on).
#include "engine/op_traits.h"
#include "engine/ops/region_layout.h"
#include "engine/session_impl.h"

namespace opscope::engine {

// Channels-last regions. oneDNN's fast convolution kernels want NHWC (or blocked) activations;
// at NCHW op boundaries every convolution pays a reorder in and out (or takes a slower path).
// After the planning run, an activation is stored channels-last (under its logical NCHW shape:
// NHWC, or nChw8c where the CPU's convolutions want that and C is a multiple of 8, see
// region_layout.h) when it is produced by a 2-D Conv, or by a step that follows its inputs'
// layout (elementwise, pools, resizes, per-channel broadcasts, channel concatenations) whose
// data inputs are all channels-last, and every step that reads it is a Conv reading it as X, or
// such a step whose output is channels-last too. Elementwise steps qualify when their
// non-constant inputs all have the output's shape and their constants are scalars, so memory
// order does not matter to them (a residual Add, a Clip). Graph inputs and outputs, views and
// constants stay NCHW. The assignment is the largest consistent one: start from every candidate
// and drop values that break a rule until none does.
void SessionImpl::AssignChannelsLast() {
  // Which ops are elementwise (layout-agnostic), arithmetic, layout-following pools or global
  // pools is their op traits (ops/*.def); only Conv is named.
  auto elementwise = [&](int node) { return TraitsOf(nodes_[node].op_type).elementwise; };
  const int nv = static_cast<int>(values_.size()), ns = static_cast<int>(steps_.size());
  std::vector<int> producer(nv, -1);
  std::vector<std::vector<int>> consumers(nv);
  // is_pool: a 2-D float MaxPool/AveragePool step without the Indices output, or a 4-D
  // Resize/Upsample (the FPN's upsampling between convolutions), which follows its input's
  // layout (channels-last in, channels-last out) like an elementwise step.
  // is_gap: a GlobalAveragePool/GlobalMaxPool that may read an NHWC input (its [N, C, 1, 1]
  // output stays NCHW, the same bytes). is_bcast: Add/Sub/Mul/Div (post-ops fused or not) of a
  // 4-D activation (bcast_full) and a per-channel [N|1, C, 1, 1] operand, the squeeze-excitation
  // scale: it follows the activation's layout.
  // is_concat: a Concat over the channels of 4-D float activations whose channel counts all get
  // the output's region layout (the FPN's merge of upsampled maps); it follows its inputs.
  std::vector<char> is_conv(ns, 0), is_elementwise(ns, 0), is_pool(ns, 0), is_gap(ns, 0),
      is_bcast(ns, 0), is_concat(ns, 0);
  std::vector<int> bcast_full(ns, -1);
  auto dims_of = [&](int v) -> const std::vector<int64_t>& {
    return values_[v].is_const ? values_[v].tensor.shape() : values_[v].shape;
  };
  for (int s = 0; s < ns; ++s) {
    const Step& st = steps_[s];
    if (!st.active || st.sub >= 0) continue;
    for (int o : st.outputs)
      if (o >= 0) producer[o] = s;
    for (int i : StepReads(st))  // a value a subgraph captures stays NCHW (its parent reads it)
      if (i >= 0) consumers[i].push_back(s);
    if (st.view || st.outputs.size() != 1 || st.outputs[0] < 0) continue;
    const Value& out = values_[st.outputs[0]];
    const std::string& anchor = nodes_[st.nodes[0]].op_type;
    const OpTraits& anchor_traits = TraitsOf(anchor);
    if (anchor == "Conv") {
      // A 2-D Conv whose kernel takes channels-last activations (asked, then reset to NCHW
      // until the assignment below is final).
      is_conv[s] = !st.inputs.empty() && st.inputs[0] >= 0 &&
                   values_[st.inputs[0]].shape.size() == 4 && out.shape.size() == 4 &&
                   st.kernel->SetChannelsLast(true, true) &&
                   st.kernel->SetChannelsLast(false, false);
      continue;
    }
    if (anchor_traits.reads_any_layout && st.nodes.size() == 1 && !st.inputs.empty() &&
        st.inputs[0] >= 0 && values_[st.inputs[0]].shape.size() == 4 &&
        values_[st.inputs[0]].dtype == DataType::kFloat32) {
      is_gap[s] =
          st.kernel->SetChannelsLast(true, false) && st.kernel->SetChannelsLast(false, false);
      continue;
    }
    if (anchor_traits.arithmetic && out.shape.size() == 4 && out.dtype == DataType::kFloat32) {
      const Node& n0 = nodes_[st.nodes[0]];
      bool post_only = true;  // fused nodes are activations without data inputs of their own
      for (size_t k = 1; k < st.nodes.size(); ++k)
        post_only &= elementwise(st.nodes[k]) && !TraitsOf(nodes_[st.nodes[k]].op_type).arithmetic;
      int full = -1, small = -1;
      if (post_only && n0.inputs.size() == 2 && n0.inputs[0] >= 0 && n0.inputs[1] >= 0 &&
          n0.inputs[0] != n0.inputs[1]) {
        for (int k = 0; k < 2; ++k) {
          const int v = n0.inputs[k];
          std::vector<int64_t> d = dims_of(v);
          if (!values_[v].is_const && d == out.shape) {
            full = v;
          } else if (d.size() <= 4 && (values_[v].is_const || values_[v].shape_static)) {
            d.insert(d.begin(), 4 - d.size(), 1);
            if (d[2] == 1 && d[3] == 1 && (d[1] == out.shape[1] || d[1] == 1) &&
                (d[0] == out.shape[0] || d[0] == 1) && !(d[1] == out.shape[1] && d[1] == 1))
              small = v;
          }
        }
      }
      if (full >= 0 && small >= 0 && st.kernel->SetChannelsLast(true, true) &&
          st.kernel->SetChannelsLast(false, false)) {
        is_bcast[s] = 1;
        bcast_full[s] = full;
        continue;
      }
    }
    if (anchor_traits.follows_layout && st.nodes.size() == 1) {
      const Node& pn = nodes_[st.nodes[0]];
      bool indices = false;
      for (size_t k = 1; k < pn.outputs.size(); ++k) indices |= pn.outputs[k] >= 0;
      // N and C kept (a resize may change any axis; nChw8c data needs C unchanged).
      is_pool[s] = !indices && !st.inputs.empty() && st.inputs[0] >= 0 &&
                   values_[st.inputs[0]].shape.size() == 4 && out.shape.size() == 4 &&
                   values_[st.inputs[0]].shape[0] == out.shape[0] &&
                   values_[st.inputs[0]].shape[1] == out.shape[1] &&
                   st.kernel->SetChannelsLast(true, true) &&
                   st.kernel->SetChannelsLast(false, false);
      continue;
    }
    if (anchor == "Concat") {
      int64_t axis = nodes_[st.nodes[0]].attrs.Int("axis", 0);
      bool ok = st.nodes.size() == 1 && out.shape.size() == 4 && out.dtype == DataType::kFloat32 &&
                (axis == 1 || axis == -3);
      for (int i : st.inputs)
        ok = ok && i >= 0 && !values_[i].is_const && values_[i].shape.size() == 4 &&
             RegionLayoutFor(values_[i].shape[1]) == RegionLayoutFor(out.shape[1]);
      is_concat[s] =
          ok && st.kernel->SetChannelsLast(true, true) && st.kernel->SetChannelsLast(false, false);
      continue;
    }
    bool ew = true;
    for (int n : st.nodes) ew &= elementwise(n);
    for (int n : st.nodes)
      for (int i : nodes_[n].inputs) {
        if (i < 0) continue;
        const Value& v = values_[i];
        if (v.is_const)
          ew &= v.tensor.numel() == 1;
        else
          ew &= v.shape == out.shape;
      }
    is_elementwise[s] = ew;
  }
  std::vector<char> cl(nv, 0);
  for (int v = 0; v < nv; ++v) {
    const Value& val = values_[v];
    if (val.is_const || val.is_input || val.is_output || !val.shape_static || val.alias_root >= 0 ||
        val.shape.size() != 4 || val.dtype != DataType::kFloat32 || producer[v] < 0)
      continue;
    cl[v] = is_conv[producer[v]] || is_elementwise[producer[v]] || is_pool[producer[v]] ||
            is_bcast[producer[v]] || is_concat[producer[v]];
  }
  for (int v = 0; v < nv; ++v)  // a value with views keeps NCHW: the views read its bytes
    if (values_[v].alias_root >= 0) cl[values_[v].alias_root] = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (int v = 0; v < nv; ++v) {
      if (!cl[v]) continue;
      bool ok = true;
      const Step& p = steps_[producer[v]];
      if (is_elementwise[producer[v]])
        for (int i : p.inputs) ok &= i < 0 || values_[i].is_const || cl[i];
      if (is_concat[producer[v]])
        for (int i : p.inputs) ok &= cl[i];
      if (is_pool[producer[v]]) ok &= cl[p.inputs[0]];
      if (is_bcast[producer[v]]) ok &= cl[bcast_full[producer[v]]];
      for (int c : consumers[v]) {
        const Step& cs = steps_[c];
        if (is_conv[c]) {
          for (size_t k = 1; k < cs.inputs.size(); ++k) ok &= cs.inputs[k] != v;
        } else if (is_pool[c]) {
          ok &= cs.inputs[0] == v && cl[cs.outputs[0]];
        } else if (is_concat[c]) {
          ok &= cl[cs.outputs[0]];
        } else if (is_gap[c]) {
          ok &= cs.inputs[0] == v;
        } else if (is_bcast[c]) {
          ok &= v != bcast_full[c] || cl[cs.outputs[0]];
        } else {
          ok &= is_elementwise[c] && cl[cs.outputs[0]];
        }
      }
      if (!ok) cl[v] = 0, changed = true;
    }
  }
  for (int s = 0; s < ns; ++s) {
    if (is_gap[s] && cl[steps_[s].inputs[0]]) {
      steps_[s].kernel->SetChannelsLast(true, false);
      step_infos_[s].channels_last_in = true;
    }
    if (is_bcast[s] && cl[bcast_full[s]]) {
      steps_[s].kernel->SetChannelsLast(true, true);
      step_infos_[s].channels_last_in = step_infos_[s].channels_last_out = true;
    }
    if (is_concat[s] && cl[steps_[s].outputs[0]]) {
      steps_[s].kernel->SetChannelsLast(true, true);
      step_infos_[s].channels_last_in = step_infos_[s].channels_last_out = true;
    }
    if (is_pool[s] && cl[steps_[s].inputs[0]]) {
      steps_[s].kernel->SetChannelsLast(true, true);
      step_infos_[s].channels_last_in = step_infos_[s].channels_last_out = true;
    }
    if (!is_conv[s]) continue;
    const Step& st = steps_[s];
    bool in = cl[st.inputs[0]], out = cl[st.outputs[0]];
    if (!in && !out) continue;
    st.kernel->SetChannelsLast(in, out);  // accepted (true, true) above, so it accepts any pair
    step_infos_[s].channels_last_in = in;
    step_infos_[s].channels_last_out = out;
  }
  value_channels_last_ = cl;
  // The layout a channels-last value is stored in follows from its channel count
  // (region_layout.h); the profile names it.
  auto name_of = [&](int v) {
    return std::string(RegionLayoutName(RegionLayoutFor(values_[v].shape[1])));
  };
  for (int s = 0; s < ns; ++s) {
    StepInfo& info = step_infos_[s];
    const Step& st = steps_[s];
    info.layout_in =
        info.channels_last_in ? name_of(is_bcast[s] ? bcast_full[s] : st.inputs[0]) : "";
    info.layout_out = info.channels_last_out ? name_of(st.outputs[0]) : "";
  }
}

}  // namespace opscope::engine
