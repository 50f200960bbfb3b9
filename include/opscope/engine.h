// The opscope ONNX CPU engine's public API.
//
//   auto session = opscope::engine::Session::Load("model.onnx", options);   // StatusOr
//   session->FillRandomInputs(/*seed=*/1);      // or SetInput(name, tensor)
//   session->SetObserver(&observer);             // optional: per-step callbacks
//   session->Run();                              // Status
//   const opscope::engine::Tensor* y = session->Output("y");
//
// Load() parses the model with libonnx, runs the checker and shape inference, resolves symbolic
// dimensions (from SessionOptions::shapes or the inputs), rejects every unsupported node before
// anything runs, folds constants, fuses (Conv+BatchNorm, Conv+activation, MatMul+Add) and plans
// memory. Every step keeps the list of source nodes it came from.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "opscope/observer.h"
#include "opscope/status.h"
#include "opscope/tensor.h"

namespace opscope::engine {

// Threads: Session::Load refuses more than MaxThreads() (libgomp crashes on ~100000, and
// thousands only measure the scheduler), and warns (Warnings()) when there are more threads
// than usable CPUs, as every time measured then includes waiting for a CPU.
inline constexpr int kMaxThreads = 1024;
inline constexpr int kMaxThreadsPerCpu = 4;
// CPUs this process may run on (its affinity mask), at least 1.
int UsableCpus();
// min(kMaxThreads, kMaxThreadsPerCpu * UsableCpus()).
int MaxThreads();
// The warning for `threads` > `cpus` (Warnings() and the CLI's stderr line say the same).
std::string OversubscriptionWarning(int threads, int cpus);

struct SessionOptions {
  int threads = 0;  // 0: one per usable CPU; at most MaxThreads()
  bool fold_constants = true;
  bool fuse = true;
  // Keep the activations between consecutive 2-D convolutions (and the elementwise ops between
  // them) channels-last (NHWC) from the second run on, so oneDNN's NHWC kernels run them with no
  // reorders; logical shapes stay NCHW. See docs/engine.md.
  bool channels_last = true;
  // Values for symbolic or unknown input dimensions: input name -> full shape.
  std::map<std::string, std::vector<int64_t>> shapes;
  // Where an entry of `shapes` came from ("--input x=a.pb"), named in errors; "--shape" if absent.
  std::map<std::string, std::string> shape_origins;
};

// A graph input or output.
struct ValueSpec {
  std::string name;
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;  // concrete after Load
};

// How an ONNX node is executed.
struct NodeInfo {
  std::string name;  // node name (generated "<op_type>_<index>" when empty)
  std::string op_type, domain;
  int step = -1;       // step that runs it, -1 if folded away
  std::string status;  // "executed", "fused", "folded"
  std::vector<std::vector<int64_t>> input_shapes, output_shapes;
  double flops = 0, bytes = 0;  // per run, from the operator's cost function
  double int_ops = 0;           // integer operations per run (quantized kernels)
};

// One unit of execution: a node, or a fused group of nodes (nodes[0] is the anchor).
struct StepInfo {
  std::string name;        // anchor node's name
  std::string op_type;     // anchor's op type, "+Relu" etc. appended when fused
  std::vector<int> nodes;  // indices into nodes()
  // Channels-last input 0 / output 0, from the second run on, and the region layout each is
  // stored in ("NHWC" or "nChw8c", per CPU and channel count; empty when NCHW).
  bool channels_last_in = false, channels_last_out = false;
  std::string layout_in, layout_out;
  // A step of a control-flow subgraph (If branch, Loop/Scan body): the step of the If/Loop/Scan
  // node that runs it, -1 for the main graph. Its OnStepBegin/End nest inside the parent's
  // (once per iteration for a loop body); the profile reports the parent exclusive of them.
  int parent_step = -1;
};

// One activation tensor of the main graph (a view, which shares its source's memory, is not one;
// its reads extend its source's lifetime). Subgraph values (If/Loop/Scan bodies) are not listed.
struct TensorLifetime {
  enum class Place { kArena, kHeap, kInput, kOutput };
  std::string name;
  std::vector<int64_t> shape;
  DataType dtype = DataType::kFloat32;
  size_t bytes = 0;
  Place place = Place::kHeap;  // arena: planned; heap: dynamic shape, allocated per run
  int first_step = -1;         // step that writes it (0 for a graph input), index into Steps()
  int last_step = -1;          // last step that reads it (the last step for a graph output)
  int producer = -1;           // node that writes it, -1 for a graph input
  int last_consumer = -1;      // node of last_step that reads it, -1 when none does
  int64_t arena_offset = -1;   // kArena: where the planner put it
};

// A step's own memory, beside its activations.
struct StepMemory {
  size_t weight_bytes = 0;         // the model's constants it reads (initializers, folded values)
  size_t packed_weight_bytes = 0;  // copies of them its kernel keeps (oneDNN's blocked weights)
  size_t workspace_bytes = 0;      // its kernel's own buffers (reorders, scratch)
};

struct MemoryMap {
  std::vector<TensorLifetime> tensors;  // in order of first_step
  std::vector<StepMemory> steps;        // one per Steps() entry (zero for inactive ones)
  std::vector<bool> step_active;        // the steps a run executes in the main loop
  size_t arena_bytes = 0;               // the planned arena
  size_t naive_bytes = 0;               // its buffers without reuse
  size_t weight_bytes = 0;              // the constants the steps read, each counted once
};

class Session {
 public:
  static StatusOr<std::unique_ptr<Session>> Load(const std::string& path,
                                                 const SessionOptions& options);
  virtual ~Session() = default;

  virtual const std::vector<ValueSpec>& Inputs() const = 0;
  virtual const std::vector<ValueSpec>& Outputs() const = 0;
  virtual const std::vector<NodeInfo>& Nodes() const = 0;
  virtual const std::vector<StepInfo>& Steps() const = 0;
  virtual int Threads() const = 0;

  // Checks dtype and shape against the model's input.
  virtual Status SetInput(const std::string& name, Tensor value) = 0;
  // Fills every input not set yet: floats uniform in [-1, 1), integers in [0, 8), bools random.
  virtual Status FillRandomInputs(uint64_t seed) = 0;
  virtual Status Run() = 0;
  virtual const Tensor* Output(const std::string& name) const = 0;

  // Notes from loading (symbolic dimensions defaulted, ...), for the user.
  virtual const std::vector<std::string>& Warnings() const = 0;
  // Which of libonnx's model checks ran at load, for the profile's metadata: "onnx_checker" and
  // "onnx_shape_inference" map to e.g. "libonnx 1.12.0 (opset<=17)", or to "skipped: opset 18 >
  // 17 known to libonnx 1.12.0" for a model newer than libonnx (loaded on the engine's own
  // graph, attribute and shape checks).
  virtual const std::map<std::string, std::string>& LoadChecks() const = 0;
  // Activation arena after the planning run (the first Run): planned size and the size without
  // reuse. Both 0 before the first Run.
  virtual size_t ArenaBytes() const = 0;
  virtual size_t NaiveActivationBytes() const = 0;
  // Where the memory goes, after the planning run (empty before the first Run): every activation
  // tensor of the main graph with its lifetime over the steps, and each step's own memory.
  virtual MemoryMap Memory() const = 0;

  virtual void SetObserver(OpObserver* observer) = 0;
  // OS thread ids of every thread that executes kernels (the driving thread and the pool).
  virtual std::vector<int> WorkerThreadIds() = 0;
};

}  // namespace opscope::engine
