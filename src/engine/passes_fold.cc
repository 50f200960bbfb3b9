// Constant folding. At load (FoldConstantsAtLoad): a node whose inputs are all constants
// (initializers, Constant nodes, earlier folded nodes) runs once and its outputs become
// constants (`status: folded`). After the planning run (FoldAfterPlanningRun): shapes that
// follow from static shapes alone are marked static, and Shape/Size of static tensors and every
// node whose inputs are now all constant are folded with the values the planning run computed,
// so the Shape -> Gather -> Concat -> Reshape chains of exported models stop running.
#include "engine/int_cost.h"
#include "engine/op_traits.h"
#include "engine/session_impl.h"

namespace opscope::engine {

Status SessionImpl::FoldConstantsAtLoad() {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    // Control-flow nodes are never folded (their subgraphs have no steps yet, and they read
    // values that are not their inputs).
    if (!node_graphs_[i].empty()) continue;
    bool all_const = true;
    for (int in : n.inputs)
      if (in >= 0 && !values_[in].is_const) all_const = false;
    if (!all_const) continue;
    Step tmp;
    tmp.nodes = {static_cast<int>(i)};
    tmp.inputs = n.inputs;
    tmp.outputs = n.outputs;
    StepContext ctx(this, tmp, /*use_arena=*/false);
    Status st = RunKernelChecked(*kernels_[i], ctx);
    // A subgraph node may sit in a branch that never runs on this model's data: one that
    // fails on its constants stays a step, to fail (or not) when its branch runs.
    if (!st.ok() && node_sub_[i] >= 0) {
      for (int out : n.outputs)
        if (out >= 0) values_[out].tensor = Tensor();
      continue;
    }
    if (!st.ok()) return st.WithPrefix(path_);
    std::vector<TensorDesc> in_d, out_d;
    for (int in : n.inputs)
      if (in >= 0) {
        in_d.push_back({values_[in].tensor.dtype(), values_[in].tensor.shape()});
        node_infos_[i].input_shapes.push_back(values_[in].tensor.shape());
      } else {
        node_infos_[i].input_shapes.push_back({});
      }
    for (int out : n.outputs) {
      if (out < 0) continue;
      values_[out].is_const = true;
      values_[out].shape_static = true;
      values_[out].seen = true;
      out_d.push_back({values_[out].tensor.dtype(), values_[out].tensor.shape()});
      node_infos_[i].output_shapes.push_back(values_[out].tensor.shape());
    }
    Cost c = kernels_[i]->EstimateCost(in_d, out_d);
    node_infos_[i].flops = c.flops;
    node_infos_[i].bytes = c.bytes;
    node_infos_[i].int_ops = IntegerOpsOf(kernels_[i].get(), in_d, out_d);
    node_infos_[i].status = "folded";
    kernels_[i].reset();
  }
  return Status::Ok();
}

// Static shapes, then fold nodes whose inputs are all constant now (Shape of static tensors and
// what follows from it), using the values the planning run computed.
void SessionImpl::FoldAfterPlanningRun() {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (node_infos_[i].status == "folded") continue;
    const Node& n = nodes_[i];
    bool inputs_static = true, params_const = true;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      int in = n.inputs[k];
      if (in < 0) continue;
      inputs_static &= values_[in].shape_static;
      if (k > 0) params_const &= values_[in].is_const;
    }
    // Data-dependent shapes (NonZero, NonMaxSuppression), and whatever a subgraph returns.
    const OpTraits& traits = TraitsOf(n.op_type);
    bool stat = inputs_static && !traits.data_dependent_shape && node_graphs_[i].empty() &&
                (traits.shape_from_shapes || params_const);
    for (int out : n.outputs)
      if (out >= 0) values_[out].shape_static = stat;
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (node_infos_[i].status != "executed") continue;
    // Subgraph nodes run on per-iteration values; control-flow nodes read captured values.
    if (node_sub_[i] >= 0 || !node_graphs_[i].empty()) continue;
    const Node& n = nodes_[i];
    int s = node_step_[i];
    if (s < 0 || steps_[s].nodes.size() != 1) continue;
    bool foldable;
    if (TraitsOf(n.op_type).shape_only) {
      foldable = n.inputs.size() >= 1 && n.inputs[0] >= 0 && values_[n.inputs[0]].shape_static;
    } else {
      foldable = true;
      for (int in : n.inputs)
        if (in >= 0 && !values_[in].is_const) foldable = false;
    }
    if (!foldable) continue;
    for (int out : n.outputs) {
      if (out < 0) continue;
      values_[out].is_const = true;
      values_[out].shape_static = true;
    }
    steps_[s].active = false;
    node_infos_[i].status = "folded";
    node_infos_[i].step = -1;
  }
}

}  // namespace opscope::engine
