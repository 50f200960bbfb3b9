// The end of the planning run (SessionImpl::FinishPlanning). The first Run keeps every value;
// from what it computed this records each value's shape and type and each node's FLOPs and
// bytes, runs the folding (passes_fold.cc), turns Reshape-like steps into views, assigns the
// channels-last regions (passes_layout.cc), fuses residual Adds into their convolutions
// (passes_fusion.cc), and plans the activation arena: every runtime,
// static-shaped, non-output value gets an offset in one 64-byte-aligned block, and values whose
// lifetimes (first producer step to last reader step) overlap never share memory
// (memory_plan.h). Later runs take their outputs from the arena.
#include <algorithm>
#include <cstdlib>
#include <set>

#include "engine/int_cost.h"
#include "engine/op_traits.h"
#include "engine/session_impl.h"

namespace opscope::engine {

void SessionImpl::FinishPlanning() {
  RecordShapesAndCosts();
  FoldAfterPlanningRun();
  MakeViews();
  if (channels_last_) AssignChannelsLast();
  if (fuse_) FuseResidualAdds();
  PlanMemory();
  planned_ = true;
}

// Shapes and types of every value the planning run produced (and of the intermediates inside
// fused steps, which it never materialized), then each node's FLOPs and bytes from its
// kernel's cost function and those shapes.
void SessionImpl::RecordShapesAndCosts() {
  for (size_t s = 0; s < steps_.size(); ++s) {
    if (!steps_[s].active) continue;
    for (int o : steps_[s].outputs)
      if (o >= 0) values_[o].seen = true;
  }
  for (Value& v : values_) {
    if (v.shape_recorded) {  // bound or handed over by RunSubgraph: its tensor is not kept
      v.seen = true;
      continue;
    }
    if (!v.seen && !v.is_const && !v.is_input) continue;
    v.shape = v.tensor.shape();
    v.dtype = v.tensor.dtype();
    v.seen = true;
  }
  // Intermediate values inside a fused step are never materialized; every op that can be fused
  // after an anchor preserves its shape, so they take the step output's shape and type.
  // In a QDQ step the DequantizeLinear output has its input's shape, and every value before
  // the final QuantizeLinear is float.
  for (const Step& st : steps_) {
    if (st.nodes.size() < 2 || st.outputs.empty() || st.outputs[0] < 0) continue;
    const Value& out = values_[st.outputs[0]];
    const bool ends_in_q = nodes_[st.nodes.back()].op_type == "QuantizeLinear";
    for (int n : st.nodes)
      for (int o : nodes_[n].outputs)
        if (o >= 0 && !values_[o].seen) {
          const Node& nd = nodes_[n];
          const bool dq =
              nd.op_type == "DequantizeLinear" && !nd.inputs.empty() && nd.inputs[0] >= 0;
          values_[o].shape = dq ? values_[nd.inputs[0]].shape : out.shape;
          values_[o].dtype = dq || ends_in_q ? DataType::kFloat32 : out.dtype;
        }
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (node_infos_[i].status == "folded") continue;
    const Node& n = nodes_[i];
    NodeInfo& info = node_infos_[i];
    info.input_shapes.clear();
    info.output_shapes.clear();
    std::vector<TensorDesc> in_d, out_d;
    for (int in : n.inputs) {
      if (in < 0) {
        info.input_shapes.push_back({});
        continue;
      }
      info.input_shapes.push_back(values_[in].shape);
      in_d.push_back({values_[in].dtype, values_[in].shape});
    }
    for (int out : n.outputs) {
      if (out < 0) continue;
      info.output_shapes.push_back(values_[out].shape);
      out_d.push_back({values_[out].dtype, values_[out].shape});
    }
    // A fused node's inputs were rewired (BN folding): cost uses its original op's kernel
    // when it still exists, else a generic estimate.
    Kernel* k = kernels_[i].get();
    Cost c = k ? k->EstimateCost(in_d, out_d) : Cost{0, CompulsoryBytes(in_d, out_d)};
    if (!k && n.op_type != "Add")
      c.flops = out_d.empty() ? 0 : static_cast<double>(out_d[0].numel()) * 2;
    // A subgraph node costs what all its executions in the planning run cost (a loop body's
    // node runs once per iteration, a branch not taken not at all).
    if (node_sub_[i] >= 0 && node_step_[i] >= 0) {
      c.flops *= steps_[node_step_[i]].plan_runs;
      c.bytes *= steps_[node_step_[i]].plan_runs;
    }
    info.flops = c.flops;
    info.bytes = c.bytes;
    info.int_ops = k ? IntegerOpsOf(k, in_d, out_d) : 0;
  }
}

// Views: single-node Reshape-like steps whose output is not a graph output share their input's
// memory from now on; the shared buffer lives as long as its last view is read.
void SessionImpl::MakeViews() {
  for (Step& st : steps_) {
    if (!st.active || st.sub >= 0 || st.nodes.size() != 1 ||
        !TraitsOf(nodes_[st.nodes[0]].op_type).view)
      continue;
    if (st.inputs.empty() || st.outputs.empty() || st.inputs[0] < 0 || st.outputs[0] < 0) continue;
    Value& in = values_[st.inputs[0]];
    Value& out = values_[st.outputs[0]];
    if (out.is_output || !out.shape_static || out.tensor.nbytes() != in.tensor.nbytes()) continue;
    st.view = true;
    out.alias_root = in.alias_root >= 0 ? in.alias_root : st.inputs[0];
    node_infos_[st.nodes[0]].bytes = 0;  // a view moves no data
  }
}

// Lifetimes over active steps; plans the arena for runtime, static-shaped, non-output values
// and allocates it (a planned value then takes its memory from the arena in later runs).
void SessionImpl::Lifetimes(std::vector<int>* first, std::vector<int>* last) const {
  first->assign(values_.size(), -1);
  last->assign(values_.size(), -1);
  for (size_t s = 0; s < steps_.size(); ++s) {
    if (!steps_[s].active || steps_[s].sub >= 0) continue;
    for (int in : StepReads(steps_[s]))
      if (in >= 0) (*last)[in] = static_cast<int>(s);
    for (int out : steps_[s].outputs)
      if (out >= 0 && (*first)[out] < 0)
        (*first)[out] = static_cast<int>(s),
        (*last)[out] = std::max((*last)[out], static_cast<int>(s));
  }
  for (size_t v = 0; v < values_.size(); ++v)
    if (values_[v].alias_root >= 0)
      (*last)[values_[v].alias_root] = std::max((*last)[values_[v].alias_root], (*last)[v]);
}

void SessionImpl::PlanMemory() {
  std::vector<PlannedBuffer> bufs;
  std::vector<int> buf_value;
  std::vector<int> first, last;
  Lifetimes(&first, &last);
  for (size_t v = 0; v < values_.size(); ++v) {
    Value& val = values_[v];
    val.last_step = last[v];
    if (val.is_const || val.is_input || val.is_output || first[v] < 0 || !val.shape_static ||
        val.alias_root >= 0 || val.subgraph >= 0)
      continue;
    size_t bytes = val.tensor.nbytes();
    if (bytes == 0) continue;
    bufs.push_back({bytes, first[v], last[v], 0});
    buf_value.push_back(static_cast<int>(v));
  }
  memory_ = PlanArena(bufs);
  arena_size_ = memory_.arena_bytes;
  if (arena_size_ > 0) {
    void* p = std::aligned_alloc(64, (arena_size_ + 63) / 64 * 64);
    if (p) {
      arena_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
      for (size_t b = 0; b < bufs.size(); ++b) {
        values_[buf_value[b]].arena_offset = static_cast<int64_t>(bufs[b].offset);
        values_[buf_value[b]].arena_bytes = bufs[b].bytes;
        if (!values_[buf_value[b]].is_output) values_[buf_value[b]].tensor = Tensor();
      }
    }
  }
}

MemoryMap SessionImpl::Memory() const {
  MemoryMap m;
  if (!planned_) return m;
  m.arena_bytes = memory_.arena_bytes;
  m.naive_bytes = memory_.naive_bytes;
  std::vector<int> first, last;
  Lifetimes(&first, &last);
  int first_active = -1, last_active = -1;
  std::set<int> all_consts;
  m.steps.resize(steps_.size());
  m.step_active.assign(steps_.size(), false);
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& st = steps_[s];
    if (!st.active || st.sub >= 0) continue;
    m.step_active[s] = true;
    if (first_active < 0) first_active = static_cast<int>(s);
    last_active = static_cast<int>(s);
    std::set<int> consts;
    for (int in : StepReads(st))
      if (in >= 0 && values_[in].is_const) consts.insert(in);
    for (int c : consts) m.steps[s].weight_bytes += values_[c].tensor.nbytes();
    all_consts.insert(consts.begin(), consts.end());
    if (st.kernel) {
      const Kernel::MemoryUse use = st.kernel->Memory();
      m.steps[s].workspace_bytes = use.workspace_bytes;
      m.steps[s].packed_weight_bytes = use.packed_weight_bytes;
    }
  }
  for (int c : all_consts) m.weight_bytes += values_[c].tensor.nbytes();
  if (first_active < 0) return m;
  // The node of step `s` that reads value `v` last (a fused chain's member, or the anchor).
  auto reader = [&](int s, int v) {
    const Step& st = steps_[s];
    for (auto it = st.nodes.rbegin(); it != st.nodes.rend(); ++it) {
      const auto& ins = nodes_[*it].inputs;
      if (std::find(ins.begin(), ins.end(), v) != ins.end()) return *it;
      const auto& caps = node_captures_[*it];
      if (std::find(caps.begin(), caps.end(), v) != caps.end()) return *it;
    }
    return st.nodes.empty() ? -1 : st.nodes[0];
  };
  for (size_t v = 0; v < values_.size(); ++v) {
    const Value& val = values_[v];
    if (val.is_const || val.alias_root >= 0 || val.subgraph >= 0) continue;
    if (!val.is_input && first[v] < 0) continue;  // never produced by a main step
    if (val.is_input && last[v] < 0) continue;    // an input nothing reads
    TensorLifetime t;
    t.name = val.name;
    t.dtype = val.dtype;
    t.shape = val.shape;
    if (val.arena_offset >= 0) {
      t.place = TensorLifetime::Place::kArena;
      t.bytes = val.arena_bytes;
      t.arena_offset = val.arena_offset;
    } else {
      t.place = val.is_input    ? TensorLifetime::Place::kInput
                : val.is_output ? TensorLifetime::Place::kOutput
                                : TensorLifetime::Place::kHeap;
      t.bytes = val.tensor.nbytes();
      if (!val.tensor.shape().empty() || val.tensor.nbytes()) t.shape = val.tensor.shape();
      t.dtype = val.tensor.nbytes() ? val.tensor.dtype() : val.dtype;
    }
    if (t.bytes == 0) continue;
    t.first_step = val.is_input ? first_active : first[v];
    t.last_step = val.is_output ? last_active : std::max(last[v], t.first_step);
    t.producer = val.producer;
    if (last[v] >= 0) t.last_consumer = reader(last[v], static_cast<int>(v));
    m.tensors.push_back(std::move(t));
  }
  std::stable_sort(
      m.tensors.begin(), m.tensors.end(),
      [](const TensorLifetime& a, const TensorLifetime& b) { return a.first_step < b.first_step; });
  return m;
}

}  // namespace opscope::engine
