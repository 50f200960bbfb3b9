// The executor: graph inputs (SetInput, FillRandomInputs), Run (the planning run first, then
// the planned runs), one step (RunStep, errors placed at the node), subgraphs run by their
// control-flow parent (RunSubgraph), and CheckPlan, the invariant every active step relies on.
// Observers see OnRunBegin, OnStepBegin/End per step (nested inside a parent's step for
// subgraph steps) and OnRunEnd; with no observer the cost is one branch per step.
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <set>

#include "engine/session_impl.h"

namespace opscope::engine {

Status SessionImpl::SetInput(const std::string& name, Tensor value) {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (input_specs_[i].name != name) continue;
    const ValueSpec& spec = input_specs_[i];
    if (value.dtype() != spec.dtype)
      return InvalidArgument(path_ + ": input '" + name + "' has type " +
                             DataTypeName(value.dtype()) + ", the model expects " +
                             DataTypeName(spec.dtype));
    if (value.shape() != spec.shape)
      return InvalidArgument(path_ + ": input '" + name + "' has shape " +
                             ShapeToString(value.shape()) + ", the model expects " +
                             ShapeToString(spec.shape) + " (use --shape " + name + "=" +
                             ShapeToString(value.shape()) + " if that dimension is symbolic)");
    values_[inputs_[i]].tensor = std::move(value);
    input_set_[i] = true;
    return Status::Ok();
  }
  std::vector<std::string> names;
  for (const auto& s : input_specs_) names.push_back(s.name);
  return InvalidArgument(path_ + ": the model has no input '" + name +
                         "' (inputs: " + Join(names, ", ") + ")");
}

namespace {

// The random inputs come from a SplitMix64 sequence (one add, two multiply-xorshift rounds per
// element): floats uniform in [-1, 1) on a 2^-23 grid from the top 24 bits, integers 0..7 from
// the top 3. std::uniform_real_distribution over mt19937_64 took 17 ms for a 3x640x640 image
// (2.3 ms this way, -O3, AMD EPYC), and in the fuzz build (sanitizers, comparison tracing in
// <random>) the fill was 40% of a model_struct_fuzz execution, more than loading and running it.
class FillRng {
 public:
  explicit FillRng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float Unit() {  // [-1, 1)
    return static_cast<float>(static_cast<int32_t>(Next() >> 40) - (1 << 23)) * (1.f / (1 << 23));
  }
  int Small() { return static_cast<int>(Next() >> 61); }  // 0..7

 private:
  uint64_t state_;
};

template <typename T, typename F>
void FillWith(Tensor& t, F next) {
  T* p = t.data<T>();
  for (int64_t k = 0, n = t.numel(); k < n; ++k) p[k] = static_cast<T>(next());
}

}  // namespace

Status SessionImpl::FillRandomInputs(uint64_t seed) {
  FillRng rng(seed);
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (input_set_[i]) continue;
    const ValueSpec& spec = input_specs_[i];
    Tensor t;
    try {
      t = Tensor(spec.dtype, spec.shape);
    } catch (const std::bad_alloc&) {
      return ResourceExhausted(path_ + ": cannot allocate input '" + spec.name + "' of shape " +
                               ShapeToString(spec.shape));
    }
    auto unit = [&] { return rng.Unit(); };
    auto small = [&] { return rng.Small(); };
    switch (spec.dtype) {
      case DataType::kFloat32:
        FillWith<float>(t, unit);
        break;
      case DataType::kFloat64:
        FillWith<double>(t, unit);
        break;
      case DataType::kInt64:
        FillWith<int64_t>(t, small);
        break;
      case DataType::kInt32:
        FillWith<int32_t>(t, small);
        break;
      case DataType::kBool:
        FillWith<uint8_t>(t, [&] { return rng.Small() & 1; });
        break;
      case DataType::kUint8:
        FillWith<uint8_t>(t, small);
        break;
      case DataType::kInt8:
        FillWith<int8_t>(t, small);
        break;
      case DataType::kFloat16:
        FillWith<uint16_t>(t, [] { return 0x3c00; });  // 1.0
        break;
    }
    values_[inputs_[i]].tensor = std::move(t);
    input_set_[i] = true;
  }
  return Status::Ok();
}

Status SessionImpl::RunStep(int s, bool planning) {
  Step& st = steps_[s];
  if (planning) ++st.plan_runs;
  StepContext ctx(this, st, /*use_arena=*/!planning);
  Status status = RunKernelChecked(*st.kernel, ctx);
  if (!status.ok()) {
    const std::string& msg = status.message();
    // Already placed (an error from inside a subgraph, passed up by its parent's kernel).
    if (StartsWith(msg, path_ + ": ")) return status;
    // Kernels prefix "node '...' (...)"; add the file. Others get the node too.
    if (StartsWith(msg, "node '")) return Status(status.code(), path_ + ": " + msg);
    return Status(status.code(), Where(st.nodes[0]) + ": " + msg);
  }
  if (const int i = ctx.UnproducedOutput(); i >= 0) {
    const Node& n = nodes_[st.nodes.back()];
    return Unsupported(Where(st.nodes.back()) + ": its output " + std::to_string(i) + " '" +
                       values_[st.outputs[i]].name + "' is read, but " + n.op_type +
                       " does not produce it (the node names " + std::to_string(st.outputs.size()) +
                       " outputs)");
  }
  return Status::Ok();
}

namespace {
// Work limits of the fuzzers (memory_limit.h); 0 is off. Negative and NaN values turn them off.
std::atomic<double> g_step_flop_limit{0}, g_run_work_limit{0};
void StoreLimit(std::atomic<double>& limit, double v) {
  limit.store(v > 0 ? v : 0, std::memory_order_relaxed);
}
}  // namespace

void SetStepFlopLimit(double flops) { StoreLimit(g_step_flop_limit, flops); }
double StepFlopLimit() { return g_step_flop_limit.load(std::memory_order_relaxed); }
void SetRunWorkLimit(double units) { StoreLimit(g_run_work_limit, units); }
double RunWorkLimit() { return g_run_work_limit.load(std::memory_order_relaxed); }

// Kernels ask for their outputs before they compute, so the output's shape and the inputs are
// what the cost function needs (the planner's convention: omitted inputs left out). A step with
// several outputs is checked when it asks for its first, with that output alone: no cost
// function reads more than out[0], and those that sum over the outputs then count less, never
// more (a ConvTranspose given a second output, found by model_struct_fuzz, used to pass
// unchecked and ran for minutes). A kernel that asks for a later output first is not checked.
//
// An empty tensor costs no FLOPs, yet kernels walk its outer dimensions: a BatchNormalization
// of a [2147483647, 4, 0, 0] input looped over 8.6e9 empty (n, c) planes for over two minutes
// instrumented, and Concat, OneHot and QuantizeLinear did the same before each got its own
// guard. So an empty input or output counts as many units of work as it has rows, the product
// of its dimensions with the zeros left out, and the step is refused past the same limit.
//
// Every step within the limit can still add up: a Loop of 10 k iterations (the fuzzers' loop
// limit) whose body adds a [2] accumulator to a [65535, 1] input ran 88 s instrumented, each
// step 1.3e5 FLOPs (model_struct_fuzz). So, under a run work limit, each step also adds its
// FLOPs, or the elements of its output where it computes fewer (a copy, an If handing its
// branch's result over), to the run's total, subgraph steps included, and the step that takes
// the total past the limit is refused.
std::string StepContext::WorkError(int i, DataType dtype, const std::vector<int64_t>& shape) const {
  const double limit = StepFlopLimit(), run_limit = RunWorkLimit();
  if ((limit <= 0 && run_limit <= 0) || i != 0 || !step_.kernel) return {};
  char buf[200];
  auto empty_rows = [](const std::vector<int64_t>& dims) {
    double rows = 1;
    bool empty = false;
    for (int64_t d : dims) {
      if (d == 0)
        empty = true;
      else
        rows *= static_cast<double>(d);
    }
    return empty ? rows : 0.0;
  };
  std::vector<TensorDesc> in;
  for (int k = 0; k < num_inputs(); ++k)
    if (const Tensor* t = input(k)) in.push_back({t->dtype(), t->shape()});
  std::vector<std::pair<const char*, const std::vector<int64_t>*>> walked = {{"output", &shape}};
  for (const TensorDesc& d : in) walked.push_back({"input", &d.shape});
  for (const auto& [what, dims] : walked)
    if (const double rows = empty_rows(*dims); limit > 0 && rows > limit) {
      std::snprintf(buf, sizeof buf,
                    "would walk the %.3g rows of an empty %s of shape %s, more than the step limit "
                    "of %.3g",
                    rows, what, ShapeToString(*dims).c_str(), limit);
      return buf;
    }
  const double flops = step_.kernel->EstimateCost(in, {{dtype, shape}}).flops;
  if (limit > 0 && flops > limit) {
    std::snprintf(buf, sizeof buf, "would do %.3g FLOPs, more than the step limit of %.3g", flops,
                  limit);
    return buf;
  }
  if (run_limit <= 0) return {};
  double elements = 1;
  for (int64_t d : shape) elements *= static_cast<double>(d);
  s_->run_work_ += std::max(flops, elements);
  if (!(s_->run_work_ > run_limit)) return {};
  std::snprintf(buf, sizeof buf,
                "would take the run's work to %.3g (FLOPs, or elements written by steps that "
                "compute fewer), more than the run limit of %.3g",
                s_->run_work_, run_limit);
  return buf;
}

std::vector<int> SessionImpl::StepReads(const Step& st) const {
  std::vector<int> reads = st.inputs;
  for (int n : st.nodes)
    reads.insert(reads.end(), node_captures_[n].begin(), node_captures_[n].end());
  return reads;
}

Status SessionImpl::RunSubgraph(int graph, const std::vector<const Tensor*>& inputs,
                                std::vector<Tensor>* outputs, bool planning) {
  if (graph < 0 || graph >= static_cast<int>(subgraphs_.size()))
    return Internal("no subgraph " + std::to_string(graph));
  const Subgraph& sg = subgraphs_[graph];
  if (inputs.size() != sg.inputs.size())
    return InvalidArgument("subgraph '" + sg.name + "' takes " + std::to_string(sg.inputs.size()) +
                           " inputs, " + std::to_string(inputs.size()) + " given");
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i])
      return InvalidArgument("subgraph '" + sg.name + "': input " + std::to_string(i) + " missing");
    const Tensor& t = *inputs[i];
    Value& v = values_[sg.inputs[i]];
    v.tensor = Tensor::Borrow(t.dtype(), t.shape(), const_cast<void*>(t.raw()));
    if (planning) v.shape = t.shape(), v.dtype = t.dtype(), v.shape_recorded = true;
  }
  for (int s : sg.steps) {
    if (!steps_[s].active) continue;
    if (observer_) observer_->OnStepBegin(s);
    Status status = RunStep(s, planning);
    if (observer_) observer_->OnStepEnd(s);
    if (!status.ok()) return status;
  }
  outputs->clear();
  std::vector<int> moved;
  for (int id : sg.outputs) {
    Value& v = values_[id];
    const bool own = v.subgraph == graph && v.producer >= 0 && !v.is_const &&
                     std::find(moved.begin(), moved.end(), id) == moved.end();
    if (own) {  // computed by this run of the subgraph: hand it over
      if (planning) v.shape = v.tensor.shape(), v.dtype = v.tensor.dtype(), v.shape_recorded = true;
      outputs->push_back(std::move(v.tensor));
      v.tensor = Tensor();
      moved.push_back(id);
      continue;
    }
    if (v.tensor.empty_data() && v.tensor.numel() > 0)
      return Internal("subgraph '" + sg.name + "': output '" + v.name + "' has no value");
    Tensor copy;
    try {
      copy = Tensor(v.tensor.dtype(), v.tensor.shape());
    } catch (const std::bad_alloc&) {
      return ResourceExhausted("cannot allocate a copy of subgraph output '" + v.name + "'");
    }
    if (v.tensor.nbytes() > 0) std::memcpy(copy.raw(), v.tensor.raw(), v.tensor.nbytes());
    outputs->push_back(std::move(copy));
  }
  return Status::Ok();
}

Status SessionImpl::Run() {
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (!input_set_[i])
      return InvalidArgument(path_ + ": input '" + input_specs_[i].name + "' was not set");
  OPSCOPE_RETURN_IF_ERROR(plan_status_);
  omp_set_num_threads(threads_);
  bool planning = !planned_;
  run_work_ = 0;
  if (observer_) observer_->OnRunBegin(run_count_);
  const int n = static_cast<int>(steps_.size());
  for (int s = 0; s < n; ++s) {
    Step& st = steps_[s];
    if (!st.active || st.sub >= 0) continue;
    if (observer_) observer_->OnStepBegin(s);
    Status status = RunStep(s, planning);
    if (observer_) observer_->OnStepEnd(s);
    if (!status.ok()) return status;
  }
  if (observer_) observer_->OnRunEnd(run_count_);
  ++run_count_;
  if (planning) {
    FinishPlanning();
    plan_status_ = CheckPlan();
    return plan_status_;
  }
  return Status::Ok();
}

// The executor's invariant, checked after fusion and again after the planning run's folding:
// every value an active step reads is a graph input, a constant, or an output of an earlier
// active step; the other inputs of a fused step's post-op nodes are constants; every graph
// output is computed. A plan that breaks it (a fusion or folding bug) would run a kernel on an
// empty tensor or return an empty output, so it is refused with an internal error instead.
Status SessionImpl::CheckPlan() const {
  std::vector<char> ready(values_.size(), 0);
  for (size_t v = 0; v < values_.size(); ++v) ready[v] = values_[v].is_const || values_[v].is_input;
  auto fail = [&](int node, const std::string& what) {
    return Internal(Where(node) + ": internal error in the execution plan: " + what +
                    "; please report it (--no-fuse may avoid it)");
  };
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& st = steps_[s];
    if (!st.active || st.sub >= 0) continue;
    if (st.nodes.empty() || !st.kernel)
      return Internal(path_ + ": internal error in the execution plan: active step " +
                      std::to_string(s) + " has no node or kernel; please report it");
    for (int in : StepReads(st))
      if (in >= 0 && !ready[in])
        return fail(st.nodes[0],
                    "it reads '" + values_[in].name + "', which no earlier step computes");
    for (int g : node_graphs_[st.nodes[0]]) OPSCOPE_RETURN_IF_ERROR(CheckSubgraphPlan(g, ready));
    // A fused node reads the previous node's output, constants, or a value of the step itself:
    // one of its inputs or another of its nodes' outputs (QDQ steps: {op, DQ(x), Relu, Q}).
    std::set<int> inside(st.inputs.begin(), st.inputs.end());
    for (int m : st.nodes)
      for (int o : nodes_[m].outputs) inside.insert(o);
    for (size_t k = 1; k < st.nodes.size(); ++k) {
      const Node& n = nodes_[st.nodes[k]];
      const Node& prev = nodes_[st.nodes[k - 1]];
      int chained = prev.outputs.empty() ? -1 : prev.outputs[0];
      for (int in : n.inputs)
        if (in >= 0 && in != chained && !values_[in].is_const && !inside.count(in))
          return fail(st.nodes[k], "fused after '" + nodes_[st.nodes[0]].name + "', it reads '" +
                                       values_[in].name + "', which is not a constant");
    }
    for (int out : st.outputs)
      if (out >= 0) ready[out] = 1;
  }
  for (int out : outputs_)
    if (!ready[out])
      return Internal(path_ + ": internal error in the execution plan: graph output '" +
                      values_[out].name + "' is not computed by any step" +
                      (values_[out].producer >= 0
                           ? " (it comes from node '" + nodes_[values_[out].producer].name + "')"
                           : std::string()) +
                      "; please report it (--no-fuse may avoid it)");
  return Status::Ok();
}

// CheckPlan for one subgraph, given what is ready where its parent runs: every value a step
// reads is a subgraph input, a constant, an output of an earlier step of the subgraph, or an
// outer value ready before the parent; every subgraph output is computed.
Status SessionImpl::CheckSubgraphPlan(int graph, std::vector<char> ready) const {
  const Subgraph& sg = subgraphs_[graph];
  for (int in : sg.inputs) ready[in] = 1;
  for (int s : sg.steps) {
    const Step& st = steps_[s];
    if (!st.active) continue;
    if (st.nodes.empty() || !st.kernel || st.sub != graph)
      return Internal(path_ + ": internal error in the execution plan: step " + std::to_string(s) +
                      " of subgraph '" + sg.name + "' is malformed; please report it");
    for (int in : StepReads(st))
      if (in >= 0 && !ready[in])
        return Internal(Where(st.nodes[0]) + ": internal error in the execution plan: it reads '" +
                        values_[in].name + "', which no earlier step of subgraph '" + sg.name +
                        "' or of its enclosing graphs computes; please report it");
    for (int g : node_graphs_[st.nodes[0]]) OPSCOPE_RETURN_IF_ERROR(CheckSubgraphPlan(g, ready));
    for (int out : st.outputs)
      if (out >= 0) ready[out] = 1;
  }
  for (int out : sg.outputs)
    if (!ready[out])
      return Internal(path_ + ": internal error in the execution plan: output '" +
                      values_[out].name + "' of subgraph '" + sg.name +
                      "' is not computed by any step; please report it");
  return Status::Ok();
}

const Tensor* SessionImpl::Output(const std::string& name) const {
  for (int id : outputs_)
    if (values_[id].name == name) return &values_[id].tensor;
  return nullptr;
}

std::vector<int> SessionImpl::WorkerThreadIds() {
  std::vector<int> tids(static_cast<size_t>(threads_) + 1, 0);
  tids[0] = static_cast<int>(syscall(SYS_gettid));
#pragma omp parallel num_threads(threads_)
  { tids[static_cast<size_t>(omp_get_thread_num()) + 1] = static_cast<int>(syscall(SYS_gettid)); }
  std::sort(tids.begin(), tids.end());
  tids.erase(std::unique(tids.begin(), tids.end()), tids.end());
  tids.erase(std::remove(tids.begin(), tids.end(), 0), tids.end());
  return tids;
}

}  // namespace opscope::engine
