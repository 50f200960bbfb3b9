// SessionImpl, the engine's Session, and StepContext, the KernelContext its steps run in.
// Private to engine/: the session's work is spread over one file per job, all members of
// SessionImpl, in the order a model goes through them:
//   session.cc         Init (the lifecycle below), the load checks, input shapes, Session::Load
//   graph_build.cc     ONNX graph -> values, nodes (typed attributes), subgraphs and scopes
//   passes_fold.cc     constant folding at load and after the planning run
//   passes_fusion.cc   the post-op chain pass: Conv+BN, Conv affine folds, activations, bias
//   passes_patterns.cc multi-node patterns: QDQ groups, ConvInteger epilogues, erf Gelu, HardSwish
//   passes_layout.cc   channels-last regions
//   planner.cc         the end of the planning run: shapes and costs, views, lifetimes, arena
//   executor.cc        inputs, Run, steps, subgraphs, the plan check
// Which operator is elementwise, a view, a post-op anchor or an activation is not written in
// these files but read from the op list (ops/op_traits.h).
//
// Lifecycle:
//   Load   parse → checker → resolve input dims → ONNX shape inference → build graph → reject
//          unsupported nodes (all listed) → create kernels → fold constants → fuse.
//   Run #1 the planning run: every value is kept, shapes are recorded, nodes whose inputs turned
//          out constant (Shape of a static-shaped tensor and everything downstream of it) are
//          folded using the values just computed, and the arena plan is made.
//   Run #n executes active steps in order; outputs come from the arena when they fit.
// Steps() keeps its size after Load, so observers can keep step-indexed tables; a step folded
// after the planning run simply stops being executed (and observed), and the step of a residual
// Add that joined its convolution (FuseResidualAdds) is left with no nodes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "base/strings.h"
#include "engine/graph.h"
#include "engine/kernel.h"
#include "engine/memory_limit.h"
#include "engine/memory_plan.h"
#include "opscope/engine.h"

namespace onnx {
class GraphProto;
class ModelProto;
}  // namespace onnx

namespace opscope::engine {

constexpr int kMinOpset = 1;  // 7-21 is the supported range; older models run where kernels allow
constexpr int kMaxOpset = 21;
constexpr size_t kMaxAllocBytes = size_t{1} << 36;

struct Value {
  std::string name;
  bool is_const = false;
  bool is_input = false;
  bool is_output = false;
  Tensor tensor;      // constant, or the current run's value
  int producer = -1;  // node index
  std::vector<int> consumers;
  bool shape_static = false;
  bool seen = false;  // produced in the planning run
  std::vector<int64_t> shape;
  DataType dtype = DataType::kFloat32;
  // Memory plan
  int64_t arena_offset = -1;
  size_t arena_bytes = 0;
  int last_step = -1;           // last step that reads it (for releasing when not planned)
  int alias_root = -1;          // a view (Reshape, ...): the value whose memory it shares
  int subgraph = -1;            // the subgraph whose scope defines it (-1: the main graph)
  bool shape_recorded = false;  // a subgraph input/output: shape noted by the planning run
};

struct Step {
  std::vector<int> nodes;    // nodes[0] is the anchor whose kernel runs
  std::vector<int> inputs;   // value ids
  std::vector<int> outputs;  // value ids (outputs of the last node of a fused chain)
  Kernel* kernel = nullptr;
  bool active = true;
  bool view = false;  // output 0 shares input 0's memory (after the planning run)
  int sub = -1;       // >= 0: a subgraph's step, run by its parent's kernel only
  int plan_runs = 0;  // executions in the planning run (a loop body's run many times)
};

// A graph attribute of a control-flow node (If's branches, Loop's and Scan's body). Its nodes
// are nodes of the session (named "<parent>/<attribute>/<node>"), each with a step of its own
// that the main loop skips: the parent's kernel runs them through KernelContext::RunSubgraph.
// Subgraph values are never constant-folded after load, planned in the arena, fused, viewed or
// stored channels-last; nodes whose inputs are all true constants are folded at load.
struct Subgraph {
  std::string name;                  // "If_3/then_branch"
  int owner = -1;                    // the control-flow node
  std::vector<int> inputs, outputs;  // value ids
  std::vector<int> nodes;            // in the graph's (topological) order
  std::vector<int> steps;            // their steps, same order (folded nodes have none)
};

// Name resolution while building: a subgraph sees its own names, then its enclosing graphs'.
struct Scope {
  Scope* parent = nullptr;
  int owner = -1;  // the node whose attribute this scope is
  std::unordered_map<std::string, int> names;
};

class StepContext;

class SessionImpl final : public Session {
 public:
  // Load: LoadGraph, FoldConstantsAtLoad, MakeSteps, Fuse (when asked), IndexSteps, CheckPlan.
  Status Init(const std::string& path, const SessionOptions& options);

  const std::vector<ValueSpec>& Inputs() const override { return input_specs_; }
  const std::vector<ValueSpec>& Outputs() const override { return output_specs_; }
  const std::vector<NodeInfo>& Nodes() const override { return node_infos_; }
  const std::vector<StepInfo>& Steps() const override { return step_infos_; }
  int Threads() const override { return threads_; }
  Status SetInput(const std::string& name, Tensor value) override;
  Status FillRandomInputs(uint64_t seed) override;
  Status Run() override;
  const Tensor* Output(const std::string& name) const override;
  void SetObserver(OpObserver* observer) override { observer_ = observer; }
  std::vector<int> WorkerThreadIds() override;
  const std::vector<std::string>& Warnings() const override { return warnings_; }
  const std::map<std::string, std::string>& LoadChecks() const override { return load_checks_; }
  size_t ArenaBytes() const override { return memory_.arena_bytes; }
  size_t NaiveActivationBytes() const override { return memory_.naive_bytes; }
  MemoryMap Memory() const override;  // planner.cc

 private:
  friend class StepContext;
  friend struct SessionImplPeer;  // testing/session_peer.h: runs one pass at a time in tests
  std::string Where(int node) const {
    return path_ + ": node '" + nodes_[node].name + "' (" + nodes_[node].op_type + ")";
  }
  // session.cc: everything up to the graph (parse, checks, input shapes, BuildGraph).
  Status LoadGraph(const std::string& path, const SessionOptions& options);
  // One step per node that still has a kernel (folded nodes have none).
  void MakeSteps();
  // After fusion: step_infos_, node_infos_[].step, each subgraph's steps and parent steps.
  void IndexSteps();
  Status BuildGraph(onnx::ModelProto& model);
  Status BuildNodes(const onnx::GraphProto& g, Scope* scope, const std::string& prefix, int sub);
  Status BuildSubgraph(const onnx::GraphProto& g, Scope* scope, const std::string& name, int owner,
                       AttrValue* v);
  int Lookup(Scope* scope, const std::string& name);
  Status RunSubgraph(int graph, const std::vector<const Tensor*>& inputs,
                     std::vector<Tensor>* outputs, bool planning);
  Status CheckSubgraphPlan(int graph, std::vector<char> ready) const;
  // Values a step reads: its inputs and, for a control-flow node, what its subgraphs capture.
  std::vector<int> StepReads(const Step& st) const;
  Status CheckSupported(const onnx::ModelProto& model);
  Status ResolveInputs(onnx::ModelProto& model, const SessionOptions& options);
  Status FoldConstantsAtLoad();
  void Fuse();
  void FuseQdq();
  void FuseConvIntegerToFloat();
  void FuseGelu();
  bool ScalarConstNear(int value, double want, double tol) const;
  bool LiveSingleStep(int node) const;
  int OtherInput(int n, const char* op, int value) const;
  struct UnaryPattern {
    std::vector<int> chain;  // nodes, the first reading x
    int x, out;
  };
  std::vector<UnaryPattern> FindHardSwish();
  void FuseHardSwish(const std::vector<UnaryPattern>& found);
  void ReplaceWithUnary(const std::vector<int>& chain, int x, int out, const char* op_type,
                        int opset);
  void AbsorbInto(int s, const std::vector<int>& chain, int skip);
  void FuseBatchNorm(int conv, int bn);
  void FoldConvScaleShift(int conv, const std::vector<float>& scale,
                          const std::vector<float>& shift, const std::string& tag);
  bool TryFoldConvAffine(int s, int consumer);
  int64_t FoldableOutChannels(int node) const;
  bool OnlyWeightFolds(int s) const;
  bool TryPostOp(int producer_step, int consumer_node);
  int ScalarOperand(int producer_step, int consumer) const;
  std::optional<PostOp> ScalarAffine(int producer_step, int consumer) const;
  std::optional<PostOp> ActivationPostOp(int node) const;
  void FuseResidualAdds();
  void FusePostOpChains(const std::vector<char>& reserved);
  Status RunStep(int s, bool planning);
  Status CheckPlan() const;
  // The end of the planning run (planner.cc): RecordShapesAndCosts, FoldAfterPlanningRun,
  // MakeViews, AssignChannelsLast (when on), FuseResidualAdds (when fusing), PlanMemory.
  void FinishPlanning();
  void RecordShapesAndCosts();
  void FoldAfterPlanningRun();
  void MakeViews();
  void PlanMemory();
  // First and last step (active main steps) of each value: the step that writes it and the last
  // that reads it, a view's reads counted as its root's.
  void Lifetimes(std::vector<int>* first, std::vector<int>* last) const;
  void AssignChannelsLast();
  int SoleConsumer(int value) const;

  // Fusion: nodes folded into a Conv's weights and bias (BatchNormalization, affine constants);
  // a step may fold more only while every node after its anchor is one of them.
  std::vector<char> folded_into_weights_;
  std::string path_, model_dir_;
  int threads_ = 1;
  std::vector<Value> values_;
  std::unordered_map<std::string, int> value_ids_;
  std::vector<Node> nodes_;
  std::vector<std::unique_ptr<Kernel>> kernels_;
  // Kernels of steps that replace several nodes by one computation (FuseGelu); the nodes keep
  // their own kernels in kernels_ for their cost estimates.
  std::vector<std::unique_ptr<Kernel>> fused_kernels_;
  std::vector<int> node_step_;
  std::vector<int> node_sub_;                    // subgraph of each node, -1: main graph
  std::vector<std::vector<int>> node_captures_;  // outer values its subgraphs read
  std::vector<std::vector<int>> node_graphs_;    // subgraphs it owns
  std::vector<Subgraph> subgraphs_;
  std::unordered_map<std::string, int> opsets_;
  std::set<std::string> used_names_;
  std::vector<Step> steps_;
  std::vector<StepInfo> step_infos_;
  std::vector<NodeInfo> node_infos_;
  std::vector<int> inputs_, outputs_;  // value ids
  std::vector<ValueSpec> input_specs_, output_specs_;
  std::vector<bool> input_set_;
  std::vector<std::string> warnings_;
  std::map<std::string, std::string> load_checks_;
  OpObserver* observer_ = nullptr;
  bool planned_ = false;
  Status plan_status_;  // CheckPlan() after the planning run; a failed plan never runs again
  bool channels_last_ = true;
  bool fuse_ = true;
  // Per value, after AssignChannelsLast: stored channels-last (empty when it did not run).
  std::vector<char> value_channels_last_;
  int run_count_ = 0;
  double run_work_ = 0;  // this Run's work so far, counted under a run work limit (memory_limit.h)
  std::shared_ptr<void> arena_;
  size_t arena_size_ = 0;
  MemoryStats memory_;
};

class StepContext final : public KernelContext {
 public:
  StepContext(SessionImpl* s, const Step& step, bool use_arena)
      : s_(s), step_(step), use_arena_(use_arena) {}
  int num_inputs() const override { return static_cast<int>(step_.inputs.size()); }
  const Tensor* input(int i) const override {
    if (i < 0 || i >= num_inputs() || step_.inputs[i] < 0) return nullptr;
    return &s_->values_[step_.inputs[i]].tensor;
  }
  int num_outputs() const override { return static_cast<int>(step_.outputs.size()); }
  bool output_wanted(int i) const override {
    return i >= 0 && i < num_outputs() && step_.outputs[i] >= 0;
  }
  StatusOr<Tensor*> Output(int i, DataType dtype, const std::vector<int64_t>& shape) override {
    if (i < 0) return Internal("negative output index");
    MarkObtained(i);
    size_t bytes = DataTypeSize(dtype);
    for (int64_t d : shape) {
      if (d < 0) return InvalidArgument("negative output dimension " + std::to_string(d));
      if (d > 0 && bytes > kMaxAllocBytes / static_cast<size_t>(d))
        return ResourceExhausted("output of shape " + ShapeToString(shape) +
                                 " is too large to allocate");
      bytes *= static_cast<size_t>(d);
    }
    if (std::string why = WorkError(i, dtype, shape); !why.empty()) return ResourceExhausted(why);
    Tensor* slot;
    if (i >= num_outputs() || step_.outputs[i] < 0) {
      scratch_.emplace_back();
      slot = &scratch_.back();
    } else {
      Value& v = s_->values_[step_.outputs[i]];
      slot = &v.tensor;
      if (use_arena_ && step_.view && i == 0) {
        const Tensor* in = input(0);
        if (in && in->nbytes() == bytes && in->dtype() == dtype) {
          *slot = Tensor::Borrow(dtype, shape, const_cast<void*>(in->raw()));
          return slot;
        }
      }
      if (use_arena_ && v.arena_offset >= 0 && bytes <= v.arena_bytes) {
        *slot = Tensor::Borrow(dtype, shape, static_cast<char*>(s_->arena_.get()) + v.arena_offset);
        return slot;
      }
      // Outside the arena (graph outputs, dynamic shapes): the previous run's buffer when its
      // size and type match and nothing else holds it. A fresh one is zero-filled and, past
      // malloc's mmap threshold, page-faulted on every run (1.3 ms for PP-OCR's 1x1x640x640
      // output); kernels write every element of their outputs, as they must for the arena.
      if (use_arena_ && slot->dtype() == dtype && slot->nbytes() == bytes &&
          slot->owns_unshared()) {
        slot->Reshape(shape);
        return slot;
      }
    }
    // Checked before allocating: zero-filling a tensor larger than memory ends in the kernel's
    // out-of-memory killer, not in bad_alloc.
    if (std::string why = TensorMemoryError(bytes); !why.empty())
      return ResourceExhausted("output " + std::to_string(i) + " of shape " + ShapeToString(shape) +
                               " " + why +
                               "; give smaller input shapes (--shape) or a model with "
                               "smaller dimensions");
    try {
      *slot = Tensor(dtype, shape);
    } catch (const std::bad_alloc&) {
      return ResourceExhausted("cannot allocate " + HumanBytes(static_cast<double>(bytes)) +
                               " for an output of shape " + ShapeToString(shape));
    }
    return slot;
  }
  int threads() const override { return s_->threads_; }
  bool input_is_constant(int i) const override {
    return i >= 0 && i < num_inputs() && step_.inputs[i] >= 0 &&
           s_->values_[step_.inputs[i]].is_const;
  }
  Status RunSubgraph(int graph, const std::vector<const Tensor*>& inputs,
                     std::vector<Tensor>* outputs) override {
    return s_->RunSubgraph(graph, inputs, outputs, /*planning=*/!use_arena_);
  }

  // The first output the step's node names and something reads (a later node, a subgraph, the
  // graph's outputs) that the kernel did not ask Output() for in this run, or -1. Its tensor
  // would be left empty, without data, for the reader: a Transpose given three outputs (opset
  // 21, libonnx's checker skipped), whose second fed a Mul, was a null read in the Mul
  // (model_struct_fuzz).
  int UnproducedOutput() const {
    for (int i = 0; i < num_outputs(); ++i) {
      const int o = step_.outputs[i];
      if (o < 0 || Obtained(i)) continue;
      const Value& v = s_->values_[o];
      if (v.is_output || !v.consumers.empty()) return i;
      if (v.subgraph >= 0) {  // a subgraph's output, read by its control-flow node
        const std::vector<int>& outs = s_->subgraphs_[v.subgraph].outputs;
        if (std::find(outs.begin(), outs.end(), o) != outs.end()) return i;
      }
    }
    return -1;
  }

 private:
  void MarkObtained(int i) {
    if (i < 64) {
      obtained_ |= uint64_t{1} << i;
    } else {
      if (obtained_more_.size() <= static_cast<size_t>(i - 64)) obtained_more_.resize(i - 63, 0);
      obtained_more_[i - 64] = 1;
    }
  }
  bool Obtained(int i) const {
    if (i < 64) return obtained_ >> i & 1;
    return static_cast<size_t>(i - 64) < obtained_more_.size() && obtained_more_[i - 64];
  }

  // Empty unless a step FLOP limit or a run work limit is set (memory_limit.h), `i` is the
  // step's first output, and the step's cost with `shape` as that output (the only one given),
  // or the rows of an empty input or of that output, are over the step limit, or the run's
  // total with this step is over the run limit.
  std::string WorkError(int i, DataType dtype, const std::vector<int64_t>& shape) const;

  SessionImpl* s_;
  const Step& step_;
  bool use_arena_;
  std::vector<Tensor> scratch_;
  uint64_t obtained_ = 0;            // outputs 0-63 the kernel asked for
  std::vector<char> obtained_more_;  // outputs 64 and on (a Split into many)
};

// A kernel's Run, with an allocation failure inside it (a working buffer: a converted copy, an
// im2col panel, ...) turned into the one-line error that outputs get, instead of an uncaught
// std::bad_alloc (the Tensor constructor throws it past the tensor memory limit).
inline Status RunKernelChecked(Kernel& kernel, KernelContext& ctx) {
  try {
    return kernel.Run(ctx);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted(
        "a working buffer of the kernel does not fit: the live tensors would exceed the " +
        HumanBytes(static_cast<double>(TensorMemoryLimit())) +
        " tensor memory limit; give smaller input shapes (--shape) or a model with smaller "
        "dimensions");
  }
}

}  // namespace opscope::engine
