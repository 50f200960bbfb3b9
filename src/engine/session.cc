// The session: loading (libonnx → engine graph), constant folding, fusion, the planning run,
// the memory plan and the executor.
//
// Lifecycle:
//   Load   parse → checker → resolve input dims → ONNX shape inference → build graph → reject
//          unsupported nodes (all listed) → create kernels → fold constants → fuse.
//   Run #1 the planning run: every value is kept, shapes are recorded, nodes whose inputs turned
//          out constant (Shape of a static-shaped tensor and everything downstream of it) are
//          folded using the values just computed, and the arena plan is made.
//   Run #n executes active steps in order; outputs come from the arena when they fit.
// Steps() never changes after Load, so observers can keep step-indexed tables; a step folded
// after the planning run simply stops being executed (and observed).
#include <omp.h>
#include <onnx/checker.h>
#include <onnx/common/version.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <unordered_map>

#include "base/files.h"
#include "base/strings.h"
#include "engine/graph.h"
#include "engine/int_cost.h"
#include "engine/kernel.h"
#include "engine/load_checks.h"
#include "engine/memory_limit.h"
#include "engine/memory_plan.h"
#include "engine/onnx_io.h"
#include "engine/ops/quant_conv.h"
#include "opscope/engine.h"

namespace opscope::engine {
namespace {

// A subgraph value declared as a sequence, map or optional. A value with no type or an empty
// TypeProto (exporters leave branch outputs untyped, and shape inference does not run on
// subgraphs that hold a conv or pool: load_checks.h) is not refused: its kernel checks the
// tensor it gets.
bool NonTensorType(const onnx::ValueInfoProto& vi) {
  return vi.has_type() && vi.type().value_case() != onnx::TypeProto::VALUE_NOT_SET &&
         !vi.type().has_tensor_type();
}

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

// Ops whose output shapes follow from input shapes alone (values of non-data inputs do not
// matter); used to decide which shapes are static after the planning run.
const std::set<std::string> kShapeFromShapes = {
    "Abs", "Add", "And", "ArgMax", "ArgMin", "AveragePool", "BatchNormalization", "Cast", "Ceil",
    "Clip", "Concat", "Conv", "ConvTranspose", "CumSum", "DepthToSpace", "Div", "Dropout", "Einsum",
    "Equal", "Erf", "Exp", "Flatten", "Floor", "Gather", "GatherElements", "GatherND", "Gemm",
    "GlobalAveragePool", "GlobalMaxPool", "Greater", "GreaterOrEqual", "GridSample", "HardSigmoid",
    "HardSwish", "Identity", "InstanceNormalization", "LayerNormalization", "LeakyRelu", "Less",
    "LessOrEqual", "Log", "LogSoftmax", "MatMul", "Max", "MaxPool", "Min", "Mul", "Neg", "Not",
    "Or", "PRelu", "Pow", "Reciprocal", "Relu", "ScatterElements", "ScatterND", "Shape", "Sigmoid",
    "Size", "Softmax", "SpaceToDepth", "Sqrt", "Sub", "Tanh", "Transpose", "Where", "CastLike",
    "Cos", "Elu", "Gelu", "GroupNormalization", "Mish", "Round", "Selu", "Sin", "Softplus", "Trilu",
    // Quantized ops: zero points and scales are
    // values, never shapes.
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "ConvInteger", "MatMulInteger",
    "QLinearConv", "QLinearMatMul", "Sum", "Mean"};

// Ops whose output 0 is input 0's bytes under a new shape: after the planning run they become
// views (no copy); their kernels' copy is a no-op when output and input share memory.
const std::set<std::string> kViewOps = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"};

class StepContext;

class SessionImpl final : public Session {
 public:
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

 private:
  friend class StepContext;
  std::string Where(int node) const {
    return path_ + ": node '" + nodes_[node].name + "' (" + nodes_[node].op_type + ")";
  }
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
  bool TryPostOp(int producer_step, int consumer_node);
  Status RunStep(int s, bool planning);
  Status CheckPlan() const;
  void FinishPlanning();
  void AssignChannelsLast();
  int SoleConsumer(int value) const;

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
  int run_count_ = 0;
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
    size_t bytes = DataTypeSize(dtype);
    for (int64_t d : shape) {
      if (d < 0) return InvalidArgument("negative output dimension " + std::to_string(d));
      if (d > 0 && bytes > kMaxAllocBytes / static_cast<size_t>(d))
        return ResourceExhausted("output of shape " + ShapeToString(shape) +
                                 " is too large to allocate");
      bytes *= static_cast<size_t>(d);
    }
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

 private:
  SessionImpl* s_;
  const Step& step_;
  bool use_arena_;
  std::vector<Tensor> scratch_;
};

StatusOr<AttrValue> ConvertAttribute(const onnx::AttributeProto& a, const std::string& model_dir,
                                     const std::string& where) {
  AttrValue v;
  switch (a.type()) {
    case onnx::AttributeProto::INT:
      v.kind = AttrValue::Kind::kInt;
      v.i = a.i();
      break;
    case onnx::AttributeProto::FLOAT:
      v.kind = AttrValue::Kind::kFloat;
      v.f = a.f();
      break;
    case onnx::AttributeProto::STRING:
      v.kind = AttrValue::Kind::kString;
      v.s = a.s();
      break;
    case onnx::AttributeProto::INTS:
      v.kind = AttrValue::Kind::kInts;
      v.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case onnx::AttributeProto::FLOATS:
      v.kind = AttrValue::Kind::kFloats;
      v.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case onnx::AttributeProto::STRINGS:
      v.kind = AttrValue::Kind::kStrings;
      v.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case onnx::AttributeProto::TENSOR: {
      v.kind = AttrValue::Kind::kTensor;
      OPSCOPE_ASSIGN_OR_RETURN(
          v.t, TensorFromProto(a.t(), model_dir, where + " attribute '" + a.name() + "'"));
      break;
    }
    default:
      return Unsupported(where + ": attribute '" + a.name() +
                         "' has a type the engine does not support (subgraphs, sparse tensors)");
  }
  return v;
}

// The newest default-domain opset this libonnx has schemas for (17 for libonnx 1.12).
int OnnxKnownOpset() {
  const auto& m = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = m.find(onnx::ONNX_DOMAIN);
  return it == m.end() ? 17 : it->second.second;
}

bool HasExternalData(const onnx::GraphProto& g) {
  for (const auto& t : g.initializer())
    if (t.data_location() == onnx::TensorProto::EXTERNAL) return true;
  return false;
}

// Refuses, before anything reads them, external data locations that are absolute or lead out of
// the model's folder (libonnx 1.12's checker lets both through): initializers, tensor
// attributes (Constant) and subgraphs.
Status CheckExternalData(const onnx::GraphProto& g, const std::string& model_dir,
                         const std::string& path) {
  for (const auto& t : g.initializer())
    if (t.data_location() == onnx::TensorProto::EXTERNAL)
      OPSCOPE_RETURN_IF_ERROR(
          ResolveExternalData(t, model_dir, path + ": initializer '" + t.name() + "'").status());
  for (const auto& n : g.node()) {
    for (const auto& a : n.attribute()) {
      std::string what =
          path + ": node '" + n.name() + "' (" + n.op_type() + ") attribute '" + a.name() + "'";
      if (a.has_t() && a.t().data_location() == onnx::TensorProto::EXTERNAL)
        OPSCOPE_RETURN_IF_ERROR(ResolveExternalData(a.t(), model_dir, what).status());
      for (const auto& t : a.tensors())
        if (t.data_location() == onnx::TensorProto::EXTERNAL)
          OPSCOPE_RETURN_IF_ERROR(ResolveExternalData(t, model_dir, what).status());
      if (a.has_g()) OPSCOPE_RETURN_IF_ERROR(CheckExternalData(a.g(), model_dir, path));
      for (const auto& sub : a.graphs())
        OPSCOPE_RETURN_IF_ERROR(CheckExternalData(sub, model_dir, path));
    }
  }
  return Status::Ok();
}

// Checks every tensor in the graph (initializers, tensor attributes such as Constant's value,
// subgraphs) against its own dims before libonnx's shape inference reads payloads by their dims
// unchecked (libonnx 1.12: SEGV, heap overflow in ParseData). See CheckTensorPayload.
Status CheckTensorPayloads(const onnx::GraphProto& g, const std::string& path) {
  for (const auto& t : g.initializer())
    OPSCOPE_RETURN_IF_ERROR(
        CheckTensorPayload(t, path + ": initializer '" + t.name() + "'").status());
  int index = 0;
  for (const auto& n : g.node()) {
    std::string name = n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name();
    ++index;
    for (const auto& a : n.attribute()) {
      std::string what =
          path + ": node '" + name + "' (" + n.op_type() + ") attribute '" + a.name() + "'";
      if (a.has_t()) OPSCOPE_RETURN_IF_ERROR(CheckTensorPayload(a.t(), what).status());
      for (const auto& t : a.tensors())
        OPSCOPE_RETURN_IF_ERROR(CheckTensorPayload(t, what).status());
      if (a.has_g()) OPSCOPE_RETURN_IF_ERROR(CheckTensorPayloads(a.g(), path));
      for (const auto& sub : a.graphs()) OPSCOPE_RETURN_IF_ERROR(CheckTensorPayloads(sub, path));
    }
  }
  return Status::Ok();
}

}  // namespace

Status SessionImpl::Init(const std::string& path, const SessionOptions& options) {
  path_ = path;
  model_dir_ = std::filesystem::path(path).parent_path().string();
  const int cpus = UsableCpus();
  if (options.threads < 0 || options.threads > MaxThreads())
    return InvalidArgument("threads must be between 1 and " + std::to_string(MaxThreads()) + " (" +
                           std::to_string(kMaxThreadsPerCpu) + " per usable CPU, at most " +
                           std::to_string(kMaxThreads) + "), or 0 for one per usable CPU (got " +
                           std::to_string(options.threads) + ")");
  threads_ = options.threads > 0 ? options.threads : cpus;
  if (threads_ > cpus) warnings_.push_back(OversubscriptionWarning(threads_, cpus));
  channels_last_ = options.channels_last;
  omp_set_num_threads(threads_);

  OPSCOPE_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes))
    return DataLoss(path + ": not a valid ONNX model (truncated or corrupt protobuf)");
  bytes.clear();
  bytes.shrink_to_fit();
  if (!model.has_graph())
    return InvalidArgument(path + ": the model has no graph (not an ONNX model?)");

  int opset = 0;
  for (const auto& imp : model.opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx") opset = static_cast<int>(imp.version());
  if (opset == 0 && model.opset_import_size() == 0) opset = 1;
  if (opset != 0 && (opset < kMinOpset || opset > kMaxOpset))
    return Unsupported(path + ": model uses ONNX opset " + std::to_string(opset) +
                       "; the engine runs opsets up to " + std::to_string(kMaxOpset) +
                       " (convert it with onnx.version_converter)");

  // libonnx's checker and shape inference judge a node by the newest schema they know at or
  // below the model's opset, so past the last opset they know they apply stale signatures
  // (ReduceMean-13 for an opset-18 ReduceMean with an axes input) or find no schema at all
  // (Gelu-20). For such a model both are skipped; the graph checks of BuildGraph, each kernel's
  // attribute checks and the shapes computed by the kernels in the planning run still apply.
  const int onnx_known = OnnxKnownOpset();
  const std::string onnx_lib = std::string("libonnx ") + onnx::LAST_RELEASE_VERSION;
  const bool onnx_checks = opset <= onnx_known;
  const std::string skipped = "skipped: opset " + std::to_string(opset) + " > " +
                              std::to_string(onnx_known) + " known to " + onnx_lib;
  const std::string ran = onnx_lib + " (opset<=" + std::to_string(onnx_known) + ")";
  load_checks_["onnx_checker"] = onnx_checks ? ran : skipped;
  load_checks_["onnx_shape_inference"] = onnx_checks ? ran : skipped;
  OPSCOPE_RETURN_IF_ERROR(CheckExternalData(model.graph(), model_dir_, path));
  OPSCOPE_RETURN_IF_ERROR(CheckSparseTensors(model.graph(), path));
  if (onnx_checks) {
    try {
      if (HasExternalData(model.graph()))
        onnx::checker::check_model(path);
      else
        onnx::checker::check_model(model);
    } catch (const std::exception& e) {
      return InvalidArgument(path + ": fails the ONNX checker: " + OneLine(e.what()));
    }
  }
  OPSCOPE_RETURN_IF_ERROR(CheckSupported(model));
  OPSCOPE_RETURN_IF_ERROR(CheckTensorPayloads(model.graph(), path));
  OPSCOPE_RETURN_IF_ERROR(CheckNodeAttributes(model.graph(), path));
  OPSCOPE_RETURN_IF_ERROR(ResolveInputs(model, options));
  if (onnx_checks) OPSCOPE_RETURN_IF_ERROR(InferShapesChecked(model, path));
  OPSCOPE_RETURN_IF_ERROR(BuildGraph(model));
  OPSCOPE_RETURN_IF_ERROR(FoldConstantsAtLoad());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!kernels_[i]) continue;
    Step st;
    st.nodes = {static_cast<int>(i)};
    st.inputs = nodes_[i].inputs;
    st.outputs = nodes_[i].outputs;
    st.kernel = kernels_[i].get();
    st.sub = node_sub_[i];
    node_step_[i] = static_cast<int>(steps_.size());
    steps_.push_back(std::move(st));
  }
  if (options.fuse) Fuse();
  for (size_t s = 0; s < steps_.size(); ++s) {
    StepInfo info;
    const Node& anchor = nodes_[steps_[s].nodes[0]];
    info.name = anchor.name;
    info.op_type = anchor.op_type;
    for (size_t k = 0; k < steps_[s].nodes.size(); ++k) {
      int n = steps_[s].nodes[k];
      node_step_[n] = static_cast<int>(s);
      node_infos_[n].step = static_cast<int>(s);
      if (k > 0) info.op_type += "+" + nodes_[n].op_type;
      info.nodes.push_back(n);
    }
    step_infos_.push_back(std::move(info));
  }
  for (Subgraph& sg : subgraphs_)
    for (int n : sg.nodes)
      if (node_step_[n] >= 0 && kernels_[n]) sg.steps.push_back(node_step_[n]);
  for (size_t s = 0; s < steps_.size(); ++s)
    if (steps_[s].sub >= 0)
      step_infos_[s].parent_step = node_step_[subgraphs_[steps_[s].sub].owner];
  return CheckPlan();
}

// One line however many nodes are unsupported: grouped by operator (most frequent first) with
// counts and the first few node names, and the opset or domain the model asked for, e.g.
//   m.onnx: 238 unsupported nodes (ai.onnx opset 13): DynamicQuantizeLinear ×119 (first:
//   'q0', 'q1', 'q2', …), ConvInteger ×119 (first: …); run `opscope ops` ...
Status SessionImpl::CheckSupported(const onnx::ModelProto& model) {
  constexpr size_t kNamesShown = 3;
  struct Group {
    std::string domain, op_type;
    size_t count = 0;
    std::vector<std::string> names;
  };
  std::vector<Group> groups;
  size_t total = 0;
  // Subgraphs (If branches, Loop/Scan bodies) too, their nodes named as BuildNodes names them.
  std::function<void(const onnx::GraphProto&, const std::string&)> visit =
      [&](const onnx::GraphProto& graph, const std::string& prefix) {
        int idx = 0;
        for (const auto& n : graph.node()) {
          int i = idx++;
          std::string name =
              prefix + (n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name());
          for (const auto& a : n.attribute())
            if (a.type() == onnx::AttributeProto::GRAPH) visit(a.g(), name + "/" + a.name() + "/");
          if (FindKernel(n.domain(), n.op_type())) continue;
          ++total;
          std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
          auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) {
            return x.domain == domain && x.op_type == n.op_type();
          });
          if (g == groups.end()) g = groups.insert(groups.end(), Group{domain, n.op_type(), 0, {}});
          ++g->count;
          if (g->names.size() < kNamesShown) g->names.push_back("'" + name + "'");
        }
      };
  visit(model.graph(), "");
  if (total == 0) return Status::Ok();
  std::stable_sort(groups.begin(), groups.end(),
                   [](const Group& a, const Group& b) { return a.count > b.count; });
  // What the model asked for: the ai.onnx opset when a standard operator is missing, and each
  // other domain (with its opset version) that a missing operator belongs to.
  std::vector<std::string> asked;
  auto opset_of = [&](const std::string& domain) -> int64_t {
    for (const auto& imp : model.opset_import())
      if ((imp.domain() == "ai.onnx" ? "" : imp.domain()) == domain) return imp.version();
    return -1;
  };
  for (const Group& g : groups)
    if (g.domain.empty()) {
      int64_t v = opset_of("");
      asked.push_back("ai.onnx opset " + (v >= 0 ? std::to_string(v) : std::string("?")));
      break;
    }
  for (const Group& g : groups) {
    if (g.domain.empty()) continue;
    int64_t v = opset_of(g.domain);
    std::string what = g.domain + " domain" + (v >= 0 ? " opset " + std::to_string(v) : "");
    if (std::find(asked.begin(), asked.end(), what) == asked.end()) asked.push_back(what);
  }
  std::vector<std::string> parts;
  for (const Group& g : groups) {
    std::string op = (g.domain.empty() ? "" : g.domain + "::") + g.op_type;
    std::string names = Join(g.names, ", ");
    if (g.count > g.names.size()) names += ", …";
    parts.push_back(op + " ×" + std::to_string(g.count) + " (" +
                    (g.count > 1 ? "first: " : "node ") + names + ")");
  }
  std::string msg = path_ + ": " + std::to_string(total) + " unsupported node" +
                    (total > 1 ? "s" : "") + " (" + Join(asked, ", ") + "): " + Join(parts, ", ") +
                    "; run `opscope ops` for the supported operators";
  return Unsupported(msg);
}

Status SessionImpl::ResolveInputs(onnx::ModelProto& model, const SessionOptions& options) {
  std::set<std::string> inits;
  for (const auto& t : model.graph().initializer()) inits.insert(t.name());
  std::set<std::string> input_names;
  auto shape_origin = [&](const std::string& name) -> std::string {
    auto it = options.shape_origins.find(name);
    return it == options.shape_origins.end() ? "--shape" : it->second;
  };
  for (auto& in : *model.mutable_graph()->mutable_input()) {
    if (inits.count(in.name())) continue;
    input_names.insert(in.name());
    std::string where = path_ + ": input '" + in.name() + "'";
    if (!in.type().has_tensor_type())
      return Unsupported(where + " is not a tensor (sequences and maps are not supported)");
    OPSCOPE_ASSIGN_OR_RETURN(DataType dt, FromOnnxType(in.type().tensor_type().elem_type()));
    auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
    std::vector<int64_t> dims;
    auto given = options.shapes.find(in.name());
    if (given != options.shapes.end()) {
      std::string given_what =
          "shape " + ShapeToString(given->second) + " (from " + shape_origin(in.name()) + ")";
      if (in.type().tensor_type().has_shape() &&
          shape->dim_size() != static_cast<int>(given->second.size()))
        return InvalidArgument(where + ": " + given_what + " has rank " +
                               std::to_string(given->second.size()) + ", the model expects rank " +
                               std::to_string(shape->dim_size()));
      for (int i = 0; i < shape->dim_size(); ++i) {
        const auto& d = shape->dim(i);
        if (d.has_dim_value() && d.dim_value() != given->second[i])
          return InvalidArgument(where + ": " + given_what +
                                 " conflicts with the model's fixed dimension " +
                                 std::to_string(i) + " = " + std::to_string(d.dim_value()));
      }
      dims = given->second;
    } else {
      for (int i = 0; i < shape->dim_size(); ++i) {
        const auto& d = shape->dim(i);
        if (d.has_dim_value() && d.dim_value() >= 0) {
          dims.push_back(d.dim_value());
        } else {
          std::string sym = d.has_dim_param() ? "'" + d.dim_param() + "'" : "#" + std::to_string(i);
          warnings_.push_back("input '" + in.name() + "': symbolic dimension " + sym +
                              " set to 1 (give --shape " + in.name() + "=... to choose)");
          dims.push_back(1);
        }
      }
    }
    // The product of the non-zero dimensions must fit too: kernels compute strides from them
    // even when another dimension is 0.
    std::vector<int64_t> nonzero;
    for (int64_t d : dims) {
      if (d < 0)
        return InvalidArgument(where + ": shape " + ShapeToString(dims) +
                               " has a negative dimension");
      nonzero.push_back(d == 0 ? 1 : d);
    }
    int64_t numel = 0, bytes = 0;
    if (!CheckedNumel(nonzero, &numel) ||
        __builtin_mul_overflow(numel, static_cast<int64_t>(DataTypeSize(dt)), &bytes))
      return InvalidArgument(where + ": tensor too large: shape " + ShapeToString(dims) +
                             " overflows a 64-bit size (give --shape " + in.name() +
                             "=... with smaller dimensions)");
    shape->clear_dim();
    for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
    input_specs_.push_back({in.name(), dt, dims});
  }
  for (const auto& [name, s] : options.shapes)
    if (!input_names.count(name))
      return InvalidArgument(path_ + ": " + shape_origin(name) + " names '" + name +
                             "', which is not an input of the model (inputs: " +
                             [&] {
                               std::vector<std::string> v(input_names.begin(), input_names.end());
                               return Join(v, ", ");
                             }() +
                             ")");
  return Status::Ok();
}

Status SessionImpl::BuildGraph(onnx::ModelProto& model) {
  const onnx::GraphProto& g = model.graph();
  for (const auto& imp : model.opset_import()) {
    std::string d = imp.domain() == "ai.onnx" ? "" : imp.domain();
    opsets_[d] = static_cast<int>(imp.version());
  }
  Scope main_scope;
  auto value_id = [&](const std::string& name) {
    auto it = value_ids_.find(name);
    if (it != value_ids_.end()) return it->second;
    int id = static_cast<int>(values_.size());
    values_.push_back(Value{});
    values_.back().name = name;
    value_ids_[name] = id;
    main_scope.names[name] = id;
    return id;
  };
  for (const auto& t : g.initializer()) {
    int id = value_id(t.name());
    OPSCOPE_ASSIGN_OR_RETURN(
        values_[id].tensor,
        TensorFromProto(t, model_dir_, path_ + ": initializer '" + t.name() + "'"));
    values_[id].is_const = true;
    values_[id].shape_static = true;
  }
  for (const ValueSpec& spec : input_specs_) {
    int id = value_id(spec.name);
    values_[id].is_input = true;
    values_[id].is_const = false;
    values_[id].shape_static = true;
    inputs_.push_back(id);
  }
  input_set_.assign(inputs_.size(), false);
  OPSCOPE_RETURN_IF_ERROR(BuildNodes(g, &main_scope, "", -1));
  for (const auto& out : g.output()) {
    auto it = value_ids_.find(out.name());
    if (it == value_ids_.end())
      return InvalidArgument(path_ + ": graph output '" + out.name() +
                             "' is not produced by any node");
    values_[it->second].is_output = true;
    outputs_.push_back(it->second);
    ValueSpec spec;
    spec.name = out.name();
    if (out.type().has_tensor_type()) {
      auto dt = FromOnnxType(out.type().tensor_type().elem_type());
      if (dt.ok()) spec.dtype = *dt;
      for (const auto& d : out.type().tensor_type().shape().dim())
        spec.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
    }
    output_specs_.push_back(spec);
  }

  kernels_.resize(nodes_.size());
  node_step_.assign(nodes_.size(), -1);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    KernelFactory f = FindKernel(nodes_[i].domain, nodes_[i].op_type);
    auto k = f(nodes_[i]);
    if (!k.ok()) return k.status().WithPrefix(path_);
    kernels_[i] = std::move(k).value();
  }
  node_infos_.resize(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    node_infos_[i].name = nodes_[i].name;
    node_infos_[i].op_type = nodes_[i].op_type;
    node_infos_[i].domain = nodes_[i].domain;
    node_infos_[i].status = "executed";
  }
  return Status::Ok();
}

// A value name resolved in `scope` or one of its ancestors. A name found outside the
// subgraph(s) being built is a capture: an outer value read by a subgraph node; it is recorded
// for the owner node of every scope crossed (and as one of its readers), so lifetimes,
// fusion, folding and the plan check treat it as an input of that control-flow node.
int SessionImpl::Lookup(Scope* scope, const std::string& name) {
  for (Scope* cur = scope; cur; cur = cur->parent) {
    auto it = cur->names.find(name);
    if (it == cur->names.end()) continue;
    const int id = it->second;
    for (Scope* c = scope; c != cur; c = c->parent) {
      auto& caps = node_captures_[c->owner];
      if (std::find(caps.begin(), caps.end(), id) == caps.end()) {
        caps.push_back(id);
        values_[id].consumers.push_back(c->owner);
      }
    }
    return id;
  }
  return -1;
}

// The nodes of one graph (the main graph, or a subgraph with sub >= 0) into nodes_, in order.
// A subgraph's nodes are named "<parent>/<attribute>/<node>" (If_3/then_branch/Conv_5) and
// their subgraphs are built, recursively, before the parent node's outputs are defined.
Status SessionImpl::BuildNodes(const onnx::GraphProto& g, Scope* scope, const std::string& prefix,
                               int sub) {
  int idx = 0;
  for (const auto& n : g.node()) {
    const int me = static_cast<int>(nodes_.size());
    nodes_.emplace_back();
    node_sub_.push_back(sub);
    node_captures_.emplace_back();
    node_graphs_.emplace_back();
    Node node;
    node.op_type = n.op_type();
    node.domain = n.domain() == "ai.onnx" ? "" : n.domain();
    node.name = prefix + (n.name().empty() ? n.op_type() + "_" + std::to_string(idx) : n.name());
    if (used_names_.count(node.name)) node.name += "_" + std::to_string(me);
    used_names_.insert(node.name);
    node.opset = opsets_.count(node.domain) ? opsets_[node.domain] : kMaxOpset;
    std::string where = path_ + ": node '" + node.name + "' (" + node.op_type + ")";
    for (const auto& in : n.input()) {
      node.input_names.push_back(in);
      if (in.empty()) {
        node.inputs.push_back(-1);
        continue;
      }
      int id = Lookup(scope, in);
      if (id < 0)
        return InvalidArgument(where + ": input '" + in +
                               "' is not produced by any earlier node, initializer or graph input" +
                               (sub >= 0 ? " of this subgraph or an enclosing graph" : ""));
      node.inputs.push_back(id);
    }
    for (const auto& a : n.attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPH) {
        Scope child;
        child.parent = scope;
        child.owner = me;
        AttrValue v;
        v.kind = AttrValue::Kind::kGraph;
        OPSCOPE_RETURN_IF_ERROR(BuildSubgraph(a.g(), &child, node.name + "/" + a.name(), me, &v));
        node_graphs_[me].push_back(v.graph);
        node.attrs.Set(a.name(), std::move(v));
        continue;
      }
      OPSCOPE_ASSIGN_OR_RETURN(AttrValue v, ConvertAttribute(a, model_dir_, where));
      node.attrs.Set(a.name(), std::move(v));
    }
    for (const auto& out : n.output()) {
      node.output_names.push_back(out);
      if (out.empty()) {
        node.outputs.push_back(-1);
        continue;
      }
      if (scope->names.count(out))
        return InvalidArgument(where + ": output '" + out +
                               "' is already defined (the graph is not in SSA form)");
      int id = static_cast<int>(values_.size());
      values_.push_back(Value{});
      values_.back().name = out;
      values_.back().producer = me;
      values_.back().subgraph = sub;
      scope->names[out] = id;
      if (sub < 0) value_ids_[out] = id;
      node.outputs.push_back(id);
    }
    for (int in : node.inputs)
      if (in >= 0) values_[in].consumers.push_back(me);
    nodes_[me] = std::move(node);
    if (sub >= 0) subgraphs_[sub].nodes.push_back(me);
    ++idx;
  }
  return Status::Ok();
}

// One graph attribute (If's branches, Loop's and Scan's body): its inputs, initializers and
// nodes in a scope of its own, and its outputs (names of its own values, of its inputs, or of
// enclosing graphs' values).
Status SessionImpl::BuildSubgraph(const onnx::GraphProto& g, Scope* scope, const std::string& name,
                                  int owner, AttrValue* v) {
  const int sg = static_cast<int>(subgraphs_.size());
  subgraphs_.emplace_back();
  subgraphs_[sg].name = name;
  subgraphs_[sg].owner = owner;
  v->graph = sg;
  const std::string where = path_ + ": subgraph '" + name + "'";
  auto new_value = [&](const std::string& n) {
    int id = static_cast<int>(values_.size());
    values_.push_back(Value{});
    values_.back().name = n;
    values_.back().subgraph = sg;
    scope->names[n] = id;
    return id;
  };
  std::set<std::string> inits;
  for (const auto& t : g.initializer()) {
    if (scope->names.count(t.name()))
      return InvalidArgument(where + ": initializer '" + t.name() + "' is defined twice");
    int id = new_value(t.name());
    OPSCOPE_ASSIGN_OR_RETURN(
        values_[id].tensor,
        TensorFromProto(t, model_dir_, where + ": initializer '" + t.name() + "'"));
    values_[id].is_const = true;
    values_[id].shape_static = true;
    inits.insert(t.name());
  }
  auto elem_type = [](const onnx::ValueInfoProto& vi) {
    return vi.type().has_tensor_type() ? vi.type().tensor_type().elem_type() : 0;
  };
  for (const auto& in : g.input()) {
    if (inits.count(in.name())) continue;  // IR < 4: initializers listed as inputs
    if (NonTensorType(in))
      return Unsupported(where + ": input '" + in.name() +
                         "' is not a tensor (sequences, maps and optionals are not supported)");
    if (scope->names.count(in.name()))
      return InvalidArgument(where + ": input '" + in.name() + "' is defined twice");
    if (int t = elem_type(in); t != 0 && !FromOnnxType(t).ok())
      return Unsupported(where + ": input '" + in.name() +
                         "' has a data type the engine does not support");
    subgraphs_[sg].inputs.push_back(new_value(in.name()));
    v->graph_input_types.push_back(elem_type(in));
    v->graph_input_names.push_back(in.name());
  }
  OPSCOPE_RETURN_IF_ERROR(BuildNodes(g, scope, name + "/", sg));
  for (const auto& out : g.output()) {
    if (NonTensorType(out))
      return Unsupported(where + ": output '" + out.name() +
                         "' is not a tensor (sequences, maps and optionals are not supported)");
    int id = Lookup(scope, out.name());
    if (id < 0)
      return InvalidArgument(where + ": output '" + out.name() +
                             "' is not produced by any node, input or initializer of the subgraph "
                             "or an enclosing graph");
    subgraphs_[sg].outputs.push_back(id);
    v->graph_output_types.push_back(elem_type(out));
    v->graph_output_names.push_back(out.name());
    std::vector<int64_t> dims;
    const bool ranked = out.type().has_tensor_type() && out.type().tensor_type().has_shape();
    if (ranked)
      for (const auto& d : out.type().tensor_type().shape().dim())
        dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    v->graph_output_shapes.push_back(std::move(dims));
    v->graph_output_ranked.push_back(ranked);
  }
  return Status::Ok();
}

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
    Status st = kernels_[i]->Run(ctx);
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
  const int64_t oc = values_[nodes_[conv].inputs[1]].tensor.dim(0);
  std::vector<float> scale(static_cast<size_t>(oc)), shift(static_cast<size_t>(oc));
  for (int64_t o = 0; o < oc; ++o) {
    scale[o] = gamma.data<float>()[o] / std::sqrt(var.data<float>()[o] + eps);
    shift[o] = beta.data<float>()[o] - mean.data<float>()[o] * scale[o];
  }
  FoldConvScaleShift(conv, scale, shift, "bn_folded");
}

// W'[oc] = W[oc] * scale[oc],  B'[oc] = B[oc] * scale[oc] + shift[oc], as new constants (the old
// ones may be shared with other nodes).
void SessionImpl::FoldConvScaleShift(int conv, const std::vector<float>& scale,
                                     const std::vector<float>& shift, const std::string& tag) {
  Node& c = nodes_[conv];
  const Tensor& w = values_[c.inputs[1]].tensor;
  const int64_t oc = w.dim(0), per = w.numel() / oc;
  Tensor nw(DataType::kFloat32, w.shape());
  Tensor nb(DataType::kFloat32, {oc});
  const Tensor* old_bias =
      c.inputs.size() > 2 && c.inputs[2] >= 0 ? &values_[c.inputs[2]].tensor : nullptr;
  for (int64_t o = 0; o < oc; ++o) {
    for (int64_t k = 0; k < per; ++k)
      nw.data<float>()[o * per + k] = w.data<float>()[o * per + k] * scale[o];
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

// Mul/Add/Sub/Div of a Conv's output by a constant that is a scalar or one value per output
// channel ([C,1,1], [1,C,1,1]): PaddleOCR's learnable affine blocks, decomposed BatchNorms and
// hand-written scale/shift layers. Folded into the Conv's weights and bias when nothing but
// weight folds happened to the step yet (never after an activation). Returns true if folded.
bool SessionImpl::TryFoldConvAffine(int s, int consumer) {
  const Node& an = nodes_[steps_[s].nodes[0]];
  if (an.op_type != "Conv" || an.inputs.size() < 2 || an.inputs[1] < 0) return false;
  for (size_t k = 1; k < steps_[s].nodes.size(); ++k) {
    const std::string& t = nodes_[steps_[s].nodes[k]].op_type;
    if (t != "BatchNormalization" && t != "Mul" && t != "Add" && t != "Sub" && t != "Div")
      return false;
  }
  const Value& wv = values_[an.inputs[1]];
  if (!wv.is_const || wv.tensor.dtype() != DataType::kFloat32 || wv.tensor.rank() < 3) return false;
  if (an.inputs.size() > 2 && an.inputs[2] >= 0 &&
      (!values_[an.inputs[2]].is_const ||
       values_[an.inputs[2]].tensor.dtype() != DataType::kFloat32))
    return false;
  const Node& n = nodes_[consumer];
  const std::string& t = n.op_type;
  if ((t != "Mul" && t != "Add" && t != "Sub" && t != "Div") || n.inputs.size() != 2 ||
      n.outputs.size() != 1)
    return false;
  const int x = steps_[s].outputs[0];
  if (n.inputs[0] == n.inputs[1]) return false;
  const int k_at = n.inputs[0] == x ? 1 : n.inputs[1] == x ? 0 : -1;
  if (k_at < 0 || ((t == "Sub" || t == "Div") && k_at != 1)) return false;  // c - x, c / x: no
  const int kv = n.inputs[k_at];
  if (kv < 0 || !values_[kv].is_const) return false;
  const Tensor& k = values_[kv].tensor;
  const int64_t oc = wv.tensor.dim(0), rank = wv.tensor.rank();
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

bool SessionImpl::TryPostOp(int producer_step, int consumer) {
  const Node& n = nodes_[consumer];
  PostOp op{PostOpKind::kRelu};
  const std::string& t = n.op_type;
  if (t == "Relu")
    op.kind = PostOpKind::kRelu;
  else if (t == "LeakyRelu") {
    op.kind = PostOpKind::kLeakyRelu;
    op.alpha = n.attrs.Float("alpha", 0.01f);
  } else if (t == "Sigmoid")
    op.kind = PostOpKind::kSigmoid;
  else if (t == "Tanh")
    op.kind = PostOpKind::kTanh;
  else if (t == "HardSigmoid") {
    op.kind = PostOpKind::kHardSigmoid;
    op.alpha = n.attrs.Float("alpha", 0.2f);
    op.beta = n.attrs.Float("beta", 0.5f);
  } else if (t == "HardSwish")
    op.kind = PostOpKind::kHardSwish;
  else if (t == "Clip") {
    op.kind = PostOpKind::kClip;
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
          return false;
        (k == 1 ? op.alpha : op.beta) = v.tensor.data<float>()[0];
      }
    }
  } else if ((t == "Max" || t == "Min") && n.inputs.size() == 2) {
    // Max/Min with one scalar constant is a one-sided Clip (tf2onnx writes a clamped LeakyRelu
    // that way: Max(LeakyRelu(conv), [1,1,1,1] constant)). The constant must not widen the
    // output: rank <= 1, or, after a convolution, no more than its weight's rank (the rank of
    // its output; other shapes are not known before the planning run).
    int prod_out = steps_[producer_step].outputs[0];
    if (n.inputs[0] != prod_out && n.inputs[1] != prod_out) return false;
    if (n.inputs[0] == n.inputs[1]) return false;
    int other = n.inputs[0] == prod_out ? n.inputs[1] : n.inputs[0];
    if (other < 0 || !values_[other].is_const) return false;
    const Tensor& k = values_[other].tensor;
    if (k.dtype() != DataType::kFloat32 || k.numel() != 1) return false;
    if (k.rank() > 1) {
      const Node& an = nodes_[steps_[producer_step].nodes[0]];
      if ((an.op_type != "Conv" && an.op_type != "ConvTranspose") || an.inputs.size() < 2 ||
          an.inputs[1] < 0 || !values_[an.inputs[1]].is_const ||
          k.rank() > values_[an.inputs[1]].tensor.rank())
        return false;
    }
    op.kind = PostOpKind::kClip;
    op.alpha = t == "Max" ? k.data<float>()[0] : -INFINITY;
    op.beta = t == "Max" ? INFINITY : k.data<float>()[0];
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
    for (size_t i = 1; i < chain.size(); ++i) {  // the host step's own node included
      const int n = chain[i];
      if (node_step_[n] != s) {
        steps_[node_step_[n]].active = false;
        steps_[node_step_[n]].nodes.clear();
        node_step_[n] = s;
      }
      node_infos_[n].status = "fused";
      st.nodes.push_back(n);
    }
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
    Step& other = steps_[node_step_[n]];
    other.active = false;
    other.nodes.clear();
    node_step_[n] = s;
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

void SessionImpl::Fuse() {
  FuseQdq();
  FuseConvIntegerToFloat();
  FuseGelu();
  // Producers that accept post-ops: the oneDNN ops, and the elementwise arithmetic kernels
  // (a residual Add followed by Relu becomes one pass).
  static const std::set<std::string> kAnchors = {"Conv", "ConvTranspose", "MatMul", "Gemm", "Add",
                                                 "Sub",  "Mul",           "Div",    "Sum",  "Mean",
                                                 "Max",  "Min",           "PRelu"};
  // HardSwish patterns are found first and fused after the post-op pass (which must not take
  // their Add+Clip apart, and which makes a Conv+BatchNormalization the producer of their x).
  const std::vector<UnaryPattern> hardswish = FindHardSwish();
  std::vector<char> reserved(nodes_.size(), 0);
  for (const UnaryPattern& hp : hardswish)
    for (int n : hp.chain) reserved[n] = 1;
  for (size_t s = 0; s < steps_.size(); ++s) {
    // A step already absorbed into an earlier one (inactive, no nodes) anchors nothing.
    if (!steps_[s].active || steps_[s].nodes.empty() || steps_[s].sub >= 0) continue;
    int anchor = steps_[s].nodes[0];
    if (reserved[anchor]) continue;
    if (!kAnchors.count(nodes_[anchor].op_type) || steps_[s].outputs.empty() ||
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
      if (cn.op_type == "BatchNormalization" && nodes_[anchor].op_type == "Conv" &&
          steps_[s].nodes.size() == 1 && cn.inputs.size() >= 5 && cn.outputs.size() >= 1) {
        const Node& an = nodes_[anchor];
        bool consts = an.inputs.size() >= 2 && values_[an.inputs[1]].is_const &&
                      values_[an.inputs[1]].tensor.dtype() == DataType::kFloat32 &&
                      (an.inputs.size() < 3 || an.inputs[2] < 0 || values_[an.inputs[2]].is_const);
        for (int k = 1; k <= 4; ++k)
          consts = consts && cn.inputs[k] >= 0 && values_[cn.inputs[k]].is_const &&
                   values_[cn.inputs[k]].tensor.numel() == values_[an.inputs[1]].tensor.dim(0);
        bool extra_outputs = false;
        for (size_t k = 1; k < cn.outputs.size(); ++k) extra_outputs |= cn.outputs[k] >= 0;
        if (consts && !extra_outputs) {
          FuseBatchNorm(anchor, c);
          steps_[s].inputs = nodes_[anchor].inputs;
          ok = true;
        }
      } else if (cn.outputs.size() >= 1) {
        ok = TryFoldConvAffine(static_cast<int>(s), c);
        if (ok)
          steps_[s].inputs = nodes_[anchor].inputs;
        else
          ok = TryPostOp(static_cast<int>(s), c);
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
  FuseHardSwish(hardswish);
  // Drop emptied steps, renumber.
  std::vector<Step> kept;
  for (Step& st : steps_)
    if (!st.nodes.empty()) kept.push_back(std::move(st));
  steps_ = std::move(kept);
}

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

Status SessionImpl::FillRandomInputs(uint64_t seed) {
  std::mt19937_64 rng(seed);
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
    std::uniform_real_distribution<float> uf(-1.f, 1.f);
    std::uniform_int_distribution<int> ui(0, 7);
    for (int64_t k = 0; k < t.numel(); ++k) {
      switch (spec.dtype) {
        case DataType::kFloat32:
          t.data<float>()[k] = uf(rng);
          break;
        case DataType::kFloat64:
          t.data<double>()[k] = uf(rng);
          break;
        case DataType::kInt64:
          t.data<int64_t>()[k] = ui(rng);
          break;
        case DataType::kInt32:
          t.data<int32_t>()[k] = ui(rng);
          break;
        case DataType::kBool:
          t.data<uint8_t>()[k] = ui(rng) & 1;
          break;
        case DataType::kUint8:
          t.data<uint8_t>()[k] = static_cast<uint8_t>(ui(rng));
          break;
        case DataType::kInt8:
          t.data<int8_t>()[k] = static_cast<int8_t>(ui(rng));
          break;
        case DataType::kFloat16:
          t.data<uint16_t>()[k] = 0x3c00;
          break;  // 1.0
      }
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
  Status status = st.kernel->Run(ctx);
  if (!status.ok()) {
    const std::string& msg = status.message();
    // Already placed (an error from inside a subgraph, passed up by its parent's kernel).
    if (StartsWith(msg, path_ + ": ")) return status;
    // Kernels prefix "node '...' (...)"; add the file. Others get the node too.
    if (StartsWith(msg, "node '")) return Status(status.code(), path_ + ": " + msg);
    return Status(status.code(), Where(st.nodes[0]) + ": " + msg);
  }
  return Status::Ok();
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

void SessionImpl::FinishPlanning() {
  // 1. Record shapes and costs.
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
  // 2. Static shapes, then fold nodes whose inputs are all constant now (Shape of static tensors
  //    and what follows from it), using the values the planning run computed.
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
    // Data-dependent shapes: NonZero, NonMaxSuppression, and whatever a subgraph returns.
    bool stat = inputs_static && n.op_type != "NonZero" && n.op_type != "NonMaxSuppression" &&
                node_graphs_[i].empty() && (kShapeFromShapes.count(n.op_type) > 0 || params_const);
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
    if (n.op_type == "Shape" || n.op_type == "Size") {
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
  // 3. Views: single-node Reshape-like steps whose output is not a graph output share their
  //    input's memory from now on; the shared buffer lives as long as its last view is read.
  for (Step& st : steps_) {
    if (!st.active || st.sub >= 0 || st.nodes.size() != 1 ||
        !kViewOps.count(nodes_[st.nodes[0]].op_type))
      continue;
    if (st.inputs.empty() || st.outputs.empty() || st.inputs[0] < 0 || st.outputs[0] < 0) continue;
    Value& in = values_[st.inputs[0]];
    Value& out = values_[st.outputs[0]];
    if (out.is_output || !out.shape_static || out.tensor.nbytes() != in.tensor.nbytes()) continue;
    st.view = true;
    out.alias_root = in.alias_root >= 0 ? in.alias_root : st.inputs[0];
    node_infos_[st.nodes[0]].bytes = 0;  // a view moves no data
  }
  // 4. Lifetimes over active steps; plan the arena for runtime, static-shaped, non-output values.
  std::vector<PlannedBuffer> bufs;
  std::vector<int> buf_value;
  std::vector<int> first(values_.size(), -1), last(values_.size(), -1);
  for (size_t s = 0; s < steps_.size(); ++s) {
    if (!steps_[s].active || steps_[s].sub >= 0) continue;
    for (int in : StepReads(steps_[s]))
      if (in >= 0) last[in] = static_cast<int>(s);
    for (int out : steps_[s].outputs)
      if (out >= 0 && first[out] < 0)
        first[out] = static_cast<int>(s), last[out] = std::max(last[out], static_cast<int>(s));
  }
  for (size_t v = 0; v < values_.size(); ++v)
    if (values_[v].alias_root >= 0)
      last[values_[v].alias_root] = std::max(last[values_[v].alias_root], last[v]);
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
  if (channels_last_) AssignChannelsLast();
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
  planned_ = true;
}

// Channels-last regions. oneDNN's fast convolution kernels want NHWC (or blocked) activations;
// at NCHW op boundaries every convolution pays a reorder in and out (or takes a slower path).
// After the planning run, an activation is stored NHWC (under its logical NCHW shape) when it
// is produced by a 2-D Conv, or by an elementwise step whose data inputs are all NHWC, and every
// step that reads it is a Conv reading it as X, or an elementwise step whose output is NHWC
// too. Elementwise steps qualify when their non-constant inputs all have the output's shape and
// their constants are scalars, so memory order does not matter to them (a residual Add, a Clip).
// Graph inputs and outputs, views and constants stay NCHW. The assignment is the largest
// consistent one: start from every candidate and drop values that break a rule until none does.
void SessionImpl::AssignChannelsLast() {
  static const std::set<std::string> kElementwise = {
      "Add",         "Sub",       "Mul",   "Div",       "Max",   "Min",     "Sum",
      "Mean",        "Pow",       "Relu",  "LeakyRelu", "Clip",  "Sigmoid", "Tanh",
      "HardSigmoid", "HardSwish", "Erf",   "Exp",       "Log",   "Sqrt",    "Reciprocal",
      "Neg",         "Abs",       "Floor", "Ceil",      "Round", "Sin",     "Cos",
      "Softplus",    "Mish",      "Elu",   "Selu",      "Gelu"};
  const int nv = static_cast<int>(values_.size()), ns = static_cast<int>(steps_.size());
  std::vector<int> producer(nv, -1);
  std::vector<std::vector<int>> consumers(nv);
  // is_pool: a 2-D float MaxPool/AveragePool step without the Indices output, which follows
  // its input's layout (channels-last in, channels-last out) like an elementwise step.
  // is_gap: a GlobalAveragePool/GlobalMaxPool that may read an NHWC input (its [N, C, 1, 1]
  // output stays NCHW, the same bytes). is_bcast: Add/Sub/Mul/Div (post-ops fused or not) of a
  // 4-D activation (bcast_full) and a per-channel [N|1, C, 1, 1] operand, the squeeze-excitation
  // scale: it follows the activation's layout.
  std::vector<char> is_conv(ns, 0), is_elementwise(ns, 0), is_pool(ns, 0), is_gap(ns, 0),
      is_bcast(ns, 0);
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
    if (anchor == "Conv") {
      // A 2-D Conv whose kernel takes channels-last activations (asked, then reset to NCHW
      // until the assignment below is final).
      is_conv[s] = !st.inputs.empty() && st.inputs[0] >= 0 &&
                   values_[st.inputs[0]].shape.size() == 4 && out.shape.size() == 4 &&
                   st.kernel->SetChannelsLast(true, true) &&
                   st.kernel->SetChannelsLast(false, false);
      continue;
    }
    if ((anchor == "GlobalAveragePool" || anchor == "GlobalMaxPool") && st.nodes.size() == 1 &&
        !st.inputs.empty() && st.inputs[0] >= 0 && values_[st.inputs[0]].shape.size() == 4 &&
        values_[st.inputs[0]].dtype == DataType::kFloat32) {
      is_gap[s] =
          st.kernel->SetChannelsLast(true, false) && st.kernel->SetChannelsLast(false, false);
      continue;
    }
    if ((anchor == "Add" || anchor == "Sub" || anchor == "Mul" || anchor == "Div") &&
        out.shape.size() == 4 && out.dtype == DataType::kFloat32) {
      const Node& n0 = nodes_[st.nodes[0]];
      bool post_only = true;  // fused nodes are activations without data inputs of their own
      for (size_t k = 1; k < st.nodes.size(); ++k)
        post_only &= kElementwise.count(nodes_[st.nodes[k]].op_type) > 0 &&
                     nodes_[st.nodes[k]].op_type != "Add" && nodes_[st.nodes[k]].op_type != "Sub" &&
                     nodes_[st.nodes[k]].op_type != "Mul" && nodes_[st.nodes[k]].op_type != "Div";
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
    if ((anchor == "MaxPool" || anchor == "AveragePool") && st.nodes.size() == 1) {
      const Node& pn = nodes_[st.nodes[0]];
      bool indices = false;
      for (size_t k = 1; k < pn.outputs.size(); ++k) indices |= pn.outputs[k] >= 0;
      is_pool[s] = !indices && !st.inputs.empty() && st.inputs[0] >= 0 &&
                   values_[st.inputs[0]].shape.size() == 4 && out.shape.size() == 4 &&
                   st.kernel->SetChannelsLast(true, true) &&
                   st.kernel->SetChannelsLast(false, false);
      continue;
    }
    bool ew = true;
    for (int n : st.nodes) ew &= kElementwise.count(nodes_[n].op_type) > 0;
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
            is_bcast[producer[v]];
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
      if (is_pool[producer[v]]) ok &= cl[p.inputs[0]];
      if (is_bcast[producer[v]]) ok &= cl[bcast_full[producer[v]]];
      for (int c : consumers[v]) {
        const Step& cs = steps_[c];
        if (is_conv[c]) {
          for (size_t k = 1; k < cs.inputs.size(); ++k) ok &= cs.inputs[k] != v;
        } else if (is_pool[c]) {
          ok &= cs.inputs[0] == v && cl[cs.outputs[0]];
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

int UsableCpus() { return std::max(1, omp_get_num_procs()); }

int MaxThreads() { return std::min(kMaxThreads, kMaxThreadsPerCpu * UsableCpus()); }

std::string OversubscriptionWarning(int threads, int cpus) {
  return std::to_string(threads) + " threads on " + std::to_string(cpus) +
         " usable CPUs: oversubscribed, threads wait for each other and every time measured "
         "includes that waiting (use --threads " +
         std::to_string(cpus) + " or fewer)";
}

StatusOr<std::unique_ptr<Session>> Session::Load(const std::string& path,
                                                 const SessionOptions& options) {
  auto s = std::make_unique<SessionImpl>();
  try {
    OPSCOPE_RETURN_IF_ERROR(s->Init(path, options));
  } catch (const std::bad_alloc&) {
    return ResourceExhausted(path + ": out of memory while loading the model");
  }
  return std::unique_ptr<Session>(std::move(s));
}

}  // namespace opscope::engine
