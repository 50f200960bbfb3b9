// Control flow: If, Loop and Scan (opsets 1-21 as exporters write them).
//
// The session builds each graph attribute (then_branch/else_branch, body) as a subgraph whose
// nodes are steps of their own (named "<parent>/<attribute>/<node>"); these kernels decide what
// runs and move tensors in and out through KernelContext::RunSubgraph. Signatures are checked
// when the kernel is created (counts and declared element types); values at run time (a trip
// count, a condition, a carried value of another type) are checked before each use.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "engine/memory_limit.h"
#include "engine/ops/common.h"

namespace opscope::engine {
namespace {

// How a user changes the limit, at the end of both limit errors (Loop and Scan).
constexpr char kLoopLimitHint[] =
    " (opscope profile --max-loop-iterations N raises it, 0 removes it)";

constexpr int kOnnxBool = 9;   // onnx::TensorProto::BOOL
constexpr int kOnnxInt64 = 7;  // onnx::TensorProto::INT64

const char* OnnxTypeName(int t) {
  switch (t) {
    case 1:
      return "float32";
    case 2:
      return "uint8";
    case 3:
      return "int8";
    case 6:
      return "int32";
    case 7:
      return "int64";
    case 9:
      return "bool";
    case 10:
      return "float16";
    case 11:
      return "float64";
    default:
      return "another type";
  }
}

int ToOnnxType(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return 1;
    case DataType::kUint8:
      return 2;
    case DataType::kInt8:
      return 3;
    case DataType::kInt32:
      return 6;
    case DataType::kInt64:
      return 7;
    case DataType::kBool:
      return 9;
    case DataType::kFloat16:
      return 10;
    case DataType::kFloat64:
      return 11;
  }
  return 0;
}

StatusOr<const AttrValue*> NeedGraph(const Node& n, const std::string& name) {
  const AttrValue* g = n.attrs.Graph(name);
  if (!g) return NodeError(n, "needs the graph attribute '" + name + "'");
  return g;
}

// A one-element condition or count: shape [] or [1] (exporters write both).
Status CheckScalar(const Node& n, const Tensor& t, const std::string& what, DataType want) {
  if (t.numel() != 1)
    return NodeError(
        n, what + " must be a single value (shape [] or [1]), got shape " + ShapeString(t.shape()));
  if (t.dtype() != want)
    return NodeError(n,
                     what + " must be " + DataTypeName(want) + ", got " + DataTypeName(t.dtype()));
  return Status::Ok();
}

// A value passed into a subgraph input must have the type the subgraph declares.
Status CheckBound(const Node& n, const AttrValue& g, size_t i, const Tensor& t,
                  const std::string& what) {
  if (i >= g.graph_input_types.size() || g.graph_input_types[i] == 0) return Status::Ok();
  if (g.graph_input_types[i] != ToOnnxType(t.dtype()))
    return NodeError(n, what + " is " + DataTypeName(t.dtype()) + " but the body's input '" +
                            g.graph_input_names[i] + "' is declared " +
                            OnnxTypeName(g.graph_input_types[i]));
  return Status::Ok();
}

Status CopyOut(KernelContext& ctx, int i, const Tensor& t) {
  if (!ctx.output_wanted(i)) return Status::Ok();
  OPSCOPE_ASSIGN_OR_RETURN(Tensor * out, ctx.Output(i, t.dtype(), t.shape()));
  CopyTensorData(t, out);
  return Status::Ok();
}

// Stacks equally shaped tensors along a new axis `axis` of the result (0 <= axis <= rank).
// `reverse`: the last tensor comes first.
StatusOr<Tensor> Stack(const Node& n, const std::vector<Tensor>& parts, int64_t axis, bool reverse,
                       DataType empty_type, const std::string& what) {
  std::vector<int64_t> per = parts.empty() ? std::vector<int64_t>{} : parts[0].shape();
  const DataType dt = parts.empty() ? empty_type : parts[0].dtype();
  for (const Tensor& p : parts)
    if (p.shape() != per || p.dtype() != dt)
      return NodeError(n, what + " changes between iterations (" + ShapeString(per) + " " +
                              DataTypeName(dt) + ", then " + ShapeString(p.shape()) + " " +
                              DataTypeName(p.dtype()) + "); scan outputs must keep their shape");
  if (axis < 0 || axis > static_cast<int64_t>(per.size()))
    return NodeError(n, what + ": axis " + std::to_string(axis) + " is out of range for rank " +
                            std::to_string(per.size() + 1));
  std::vector<int64_t> shape = per;
  const int64_t L = static_cast<int64_t>(parts.size());
  shape.insert(shape.begin() + axis, L);
  Tensor out(dt, shape);
  // Nothing to copy; the loop below would still walk `outer`, which an empty part with huge
  // leading dimensions ([2^32, 0, 3]) makes billions long (found by model_struct_fuzz).
  if (L == 0 || out.numel() == 0) return out;
  int64_t outer = 1, inner = static_cast<int64_t>(DataTypeSize(dt));
  for (int64_t d = 0; d < axis; ++d) outer *= per[d];
  for (size_t d = axis; d < per.size(); ++d) inner *= per[d];
  char* dst = static_cast<char*>(out.raw());
  for (int64_t t = 0; t < L; ++t) {
    const int64_t pos = reverse ? L - 1 - t : t;
    const char* src = static_cast<const char*>(parts[t].raw());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + (o * L + pos) * inner, src + o * inner, static_cast<size_t>(inner));
  }
  return out;
}

Status StackOut(KernelContext& ctx, const Node& n, int i, const std::vector<Tensor>& parts,
                int64_t axis, bool reverse, DataType empty_type, const std::string& what) {
  if (!ctx.output_wanted(i)) return Status::Ok();
  OPSCOPE_ASSIGN_OR_RETURN(Tensor t, Stack(n, parts, axis, reverse, empty_type, what));
  return CopyOut(ctx, i, t);
}

// Slice `index` of `x` along `axis`, the axis removed.
Tensor SliceAxis(const Tensor& x, int64_t axis, int64_t index) {
  std::vector<int64_t> shape = x.shape();
  const int64_t L = shape[axis];
  shape.erase(shape.begin() + axis);
  Tensor out(x.dtype(), shape);
  if (out.numel() == 0) return out;  // as in Stack: no walk over empty outer dimensions
  int64_t outer = 1, inner = static_cast<int64_t>(DataTypeSize(x.dtype()));
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(static_cast<int>(d));
  for (int d = static_cast<int>(axis) + 1; d < x.rank(); ++d) inner *= x.dim(d);
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + o * inner, src + (o * L + index) * inner, static_cast<size_t>(inner));
  return out;
}

// ---------------------------------------------------------------------------------------- If
class IfKernel : public Kernel {
 public:
  IfKernel(const Node& n, const AttrValue* then_g, const AttrValue* else_g)
      : node_(n), then_(then_g->graph), else_(else_g->graph) {}

  Status Run(KernelContext& ctx) override {
    const Tensor* cond = ctx.input(0);
    if (!cond) return NodeError(node_, "needs its condition input");
    OPSCOPE_RETURN_IF_ERROR(CheckScalar(node_, *cond, "the condition", DataType::kBool));
    const bool taken = cond->data<uint8_t>()[0] != 0;
    std::vector<Tensor> outs;
    OPSCOPE_RETURN_IF_ERROR(ctx.RunSubgraph(taken ? then_ : else_, {}, &outs));
    if (static_cast<int>(outs.size()) < ctx.num_outputs())
      return NodeError(node_, "the branch returned " + std::to_string(outs.size()) + " values");
    for (int i = 0; i < ctx.num_outputs(); ++i) OPSCOPE_RETURN_IF_ERROR(CopyOut(ctx, i, outs[i]));
    return Status::Ok();
  }

 private:
  Node node_;
  int then_, else_;
};

// -------------------------------------------------------------------------------------- Loop
std::atomic<int64_t> g_loop_iteration_limit{0};

// Inputs: M (trip count, optional), cond (optional), v_initial x N. Body: (iteration, cond,
// v x N) -> (cond, v x N, scan x K). Outputs: v_final x N, scans x K stacked on a new axis 0.
class LoopKernel : public Kernel {
 public:
  LoopKernel(const Node& n, const AttrValue* body, int carried, int scans)
      : node_(n), body_(*body), n_(carried), k_(scans) {}

  Status Run(KernelContext& ctx) override {
    int64_t trips = std::numeric_limits<int64_t>::max();
    if (const Tensor* m = ctx.input(0)) {
      OPSCOPE_RETURN_IF_ERROR(CheckScalar(node_, *m, "the trip count M", DataType::kInt64));
      trips = m->data<int64_t>()[0];
      if (trips < 0)
        return NodeError(node_,
                         "the trip count M is " + std::to_string(trips) + "; it must be 0 or more");
    }
    bool go = true;
    if (const Tensor* c = ctx.input(1)) {
      OPSCOPE_RETURN_IF_ERROR(CheckScalar(node_, *c, "the condition", DataType::kBool));
      go = c->data<uint8_t>()[0] != 0;
    }
    if (!ctx.input(0) && !ctx.input(1))
      return NodeError(node_, "has neither a trip count nor a condition: it would never end");
    std::vector<Tensor> carried(n_);
    for (int j = 0; j < n_; ++j) {
      const Tensor* v = ctx.input(2 + j);
      if (!v) return NodeError(node_, "loop-carried input " + std::to_string(j) + " is missing");
      OPSCOPE_RETURN_IF_ERROR(CheckBound(node_, body_, 2 + j, *v,
                                         "loop-carried input '" + node_.input_names[2 + j] + "'"));
      carried[j] = Tensor::Borrow(v->dtype(), v->shape(), const_cast<void*>(v->raw()));
    }
    std::vector<std::vector<Tensor>> scans(k_);
    Tensor iter(DataType::kInt64, {}), cond(DataType::kBool, {});
    std::vector<Tensor> outs;
    int64_t i = 0;
    const int64_t limit = LoopIterationLimit();
    for (; i < trips && go; ++i) {
      if (limit > 0 && i == limit)
        return NodeError(node_, "stopped after " + std::to_string(limit) +
                                    " iterations, the loop iteration limit" + kLoopLimitHint);
      iter.data<int64_t>()[0] = i;
      cond.data<uint8_t>()[0] = 1;
      std::vector<const Tensor*> in = {&iter, &cond};
      for (const Tensor& t : carried) in.push_back(&t);
      OPSCOPE_RETURN_IF_ERROR(ctx.RunSubgraph(body_.graph, in, &outs));
      if (static_cast<int>(outs.size()) != 1 + n_ + k_)
        return NodeError(node_, "the body returned " + std::to_string(outs.size()) + " values");
      OPSCOPE_RETURN_IF_ERROR(
          CheckScalar(node_, outs[0], "the body's condition output", DataType::kBool));
      go = outs[0].data<uint8_t>()[0] != 0;
      for (int j = 0; j < n_; ++j) {
        if (outs[1 + j].dtype() != carried[j].dtype())
          return NodeError(node_, "loop-carried value " + std::to_string(j) + " changes type (" +
                                      DataTypeName(carried[j].dtype()) + " to " +
                                      DataTypeName(outs[1 + j].dtype()) + ") in iteration " +
                                      std::to_string(i));
        carried[j] = std::move(outs[1 + j]);
      }
      for (int k = 0; k < k_; ++k) scans[k].push_back(std::move(outs[1 + n_ + k]));
    }
    iterations_ = i;
    for (int j = 0; j < n_ && j < ctx.num_outputs(); ++j)
      OPSCOPE_RETURN_IF_ERROR(CopyOut(ctx, j, carried[j]));
    for (int k = 0; k < k_ && n_ + k < ctx.num_outputs(); ++k) {
      const size_t bo = static_cast<size_t>(1 + n_ + k);
      int t = bo < body_.graph_output_types.size() ? body_.graph_output_types[bo] : 0;
      DataType empty = DataType::kFloat32;
      for (DataType d : {DataType::kFloat32, DataType::kInt64, DataType::kInt32, DataType::kBool,
                         DataType::kUint8, DataType::kInt8, DataType::kFloat64, DataType::kFloat16})
        if (ToOnnxType(d) == t) empty = d;
      if (scans[k].empty() && bo < body_.graph_output_ranked.size() &&
          body_.graph_output_ranked[bo]) {
        // Zero iterations: the stacked output is [0, per-iteration dims...] with the rank the
        // body declares (symbolic dims become 0), as ONNX Runtime gives it; without a declared
        // shape it stays [0].
        if (!ctx.output_wanted(n_ + k)) continue;
        std::vector<int64_t> shape = {0};
        for (int64_t d : body_.graph_output_shapes[bo]) shape.push_back(d < 0 ? 0 : d);
        OPSCOPE_RETURN_IF_ERROR(ctx.Output(n_ + k, empty, shape).status());
        continue;
      }
      OPSCOPE_RETURN_IF_ERROR(StackOut(ctx, node_, n_ + k, scans[k], 0, false, empty,
                                       "scan output " + std::to_string(k)));
    }
    return Status::Ok();
  }

 private:
  Node node_;
  AttrValue body_;
  int n_, k_;
  int64_t iterations_ = 0;
};

// -------------------------------------------------------------------------------------- Scan
// Opset 9+: inputs are N states then M scan inputs; body (state x N, slice x M) -> (state x N,
// scan x K); outputs states x N, scan outputs x K. Axes and directions per input/output.
// Scan-8 (batched): input 0 is sequence_lens (optional), then states [batch, ...] and scan
// inputs [batch, sequence, ...]; each batch entry is scanned on its own along axis 1, in the
// direction `directions` gives, and outputs are stacked back along axis 0.
class ScanKernel : public Kernel {
 public:
  ScanKernel(const Node& n, const AttrValue* body, int states, int m, int k)
      : node_(n), body_(*body), n_(states), m_(m), k_(k), batched_(n.opset < 9) {
    in_axes_ = n.attrs.Ints("scan_input_axes", std::vector<int64_t>(m, 0));
    in_dirs_ =
        n.attrs.Ints(batched_ ? "directions" : "scan_input_directions", std::vector<int64_t>(m, 0));
    out_axes_ = n.attrs.Ints("scan_output_axes", std::vector<int64_t>(k, 0));
    out_dirs_ = n.attrs.Ints("scan_output_directions", std::vector<int64_t>(k, 0));
    if (batched_) {  // per batch entry: sequence axis 0 in, 0 out, forward out
      in_axes_.assign(m, 0);
      out_axes_.assign(k, 0);
      out_dirs_.assign(k, 0);
    }
  }

  Status Check() const {
    auto len = [&](const std::vector<int64_t>& v, int want, const char* name) -> Status {
      if (static_cast<int>(v.size()) != want)
        return NodeError(node_, std::string(name) + " has " + std::to_string(v.size()) +
                                    " values, " + std::to_string(want) + " expected");
      return Status::Ok();
    };
    OPSCOPE_RETURN_IF_ERROR(len(in_axes_, m_, "scan_input_axes"));
    OPSCOPE_RETURN_IF_ERROR(len(in_dirs_, m_, batched_ ? "directions" : "scan_input_directions"));
    OPSCOPE_RETURN_IF_ERROR(len(out_axes_, k_, "scan_output_axes"));
    OPSCOPE_RETURN_IF_ERROR(len(out_dirs_, k_, "scan_output_directions"));
    for (int64_t d : in_dirs_)
      if (d != 0 && d != 1) return NodeError(node_, "scan input directions must be 0 or 1");
    for (int64_t d : out_dirs_)
      if (d != 0 && d != 1) return NodeError(node_, "scan_output_directions must be 0 or 1");
    return Status::Ok();
  }

  Status Run(KernelContext& ctx) override {
    const int first = batched_ ? 1 : 0;
    for (int j = 0; j < n_ + m_; ++j)
      if (!ctx.input(first + j))
        return NodeError(node_, (j < n_ ? "state input " + std::to_string(j)
                                        : "scan input " + std::to_string(j - n_)) +
                                    " is missing");
    std::vector<Tensor> states;
    std::vector<std::vector<Tensor>> scans;
    if (!batched_) {
      std::vector<const Tensor*> st, sc;
      for (int j = 0; j < n_; ++j) st.push_back(ctx.input(j));
      for (int j = 0; j < m_; ++j) sc.push_back(ctx.input(n_ + j));
      OPSCOPE_RETURN_IF_ERROR(Scan(ctx, st, sc, &states, &scans));
      for (int j = 0; j < n_ && j < ctx.num_outputs(); ++j)
        OPSCOPE_RETURN_IF_ERROR(CopyOut(ctx, j, states[j]));
      for (int k = 0; k < k_ && n_ + k < ctx.num_outputs(); ++k) {
        int64_t axis = out_axes_[k];
        const int64_t rank = scans[k].empty() ? 1 : scans[k][0].rank() + 1;
        if (!NormalizeAxis(&axis, rank))
          return NodeError(node_, "scan_output_axes[" + std::to_string(k) +
                                      "] = " + std::to_string(out_axes_[k]) +
                                      " is out of range for rank " + std::to_string(rank));
        OPSCOPE_RETURN_IF_ERROR(StackOut(ctx, node_, n_ + k, scans[k], axis, out_dirs_[k] != 0,
                                         DataType::kFloat32, "scan output " + std::to_string(k)));
      }
      return Status::Ok();
    }
    // Scan-8: one scan per batch entry.
    int64_t batch = -1, seq = -1;
    for (int j = 0; j < n_ + m_; ++j) {
      const Tensor& t = *ctx.input(1 + j);
      if (t.rank() < (j < n_ ? 1 : 2) || (batch >= 0 && t.dim(0) != batch))
        return NodeError(node_,
                         "every state and scan input needs the batch axis first, of one "
                         "size; input '" +
                             node_.input_names[1 + j] + "' has shape " + ShapeString(t.shape()));
      batch = t.dim(0);
      if (j >= n_) seq = t.dim(1);
    }
    if (const Tensor* lens = ctx.input(0)) {
      for (int64_t l : ReadInts(*lens))
        if (l != seq)
          return Unsupported("node '" + node_.name + "' (Scan): sequence_lens value " +
                             std::to_string(l) + " is shorter than the sequence (" +
                             std::to_string(seq) + "); only full-length sequences are supported");
    }
    std::vector<std::vector<Tensor>> per_state(n_), per_scan(k_);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Tensor> held;
      held.reserve(n_ + m_);
      for (int j = 0; j < n_ + m_; ++j) held.push_back(SliceAxis(*ctx.input(1 + j), 0, b));
      std::vector<const Tensor*> st, sc;
      for (int j = 0; j < n_; ++j) st.push_back(&held[j]);
      for (int j = 0; j < m_; ++j) sc.push_back(&held[n_ + j]);
      OPSCOPE_RETURN_IF_ERROR(Scan(ctx, st, sc, &states, &scans));
      for (int j = 0; j < n_; ++j) per_state[j].push_back(std::move(states[j]));
      for (int k = 0; k < k_; ++k) {
        OPSCOPE_ASSIGN_OR_RETURN(Tensor t, Stack(node_, scans[k], 0, false, DataType::kFloat32,
                                                 "scan output " + std::to_string(k)));
        per_scan[k].push_back(std::move(t));
      }
    }
    for (int j = 0; j < n_ && j < ctx.num_outputs(); ++j)
      OPSCOPE_RETURN_IF_ERROR(StackOut(ctx, node_, j, per_state[j], 0, false, DataType::kFloat32,
                                       "state " + std::to_string(j)));
    for (int k = 0; k < k_ && n_ + k < ctx.num_outputs(); ++k)
      OPSCOPE_RETURN_IF_ERROR(StackOut(ctx, node_, n_ + k, per_scan[k], 0, false,
                                       DataType::kFloat32, "scan output " + std::to_string(k)));
    return Status::Ok();
  }

 private:
  // One scan: states in, scan inputs along in_axes_/in_dirs_; final states and, per scan
  // output, its per-iteration values in iteration order.
  Status Scan(KernelContext& ctx, const std::vector<const Tensor*>& state_in,
              const std::vector<const Tensor*>& scan_in, std::vector<Tensor>* states_out,
              std::vector<std::vector<Tensor>>* scans) {
    const int first = batched_ ? 1 : 0;
    std::vector<Tensor> states(n_);
    for (int j = 0; j < n_; ++j) {
      const Tensor* v = state_in[j];
      OPSCOPE_RETURN_IF_ERROR(
          CheckBound(node_, body_, j, *v, "state input '" + node_.input_names[first + j] + "'"));
      states[j] = Tensor::Borrow(v->dtype(), v->shape(), const_cast<void*>(v->raw()));
    }
    int64_t L = -1;
    std::vector<int64_t> axes(m_);
    for (int j = 0; j < m_; ++j) {
      const Tensor* x = scan_in[j];
      axes[j] = in_axes_[j];
      if (!NormalizeAxis(&axes[j], x->rank()))
        return NodeError(node_, "scan_input_axes[" + std::to_string(j) +
                                    "] = " + std::to_string(in_axes_[j]) +
                                    " is out of range for rank " + std::to_string(x->rank()));
      const int64_t len = x->dim(static_cast<int>(axes[j]));
      if (L >= 0 && len != L)
        return NodeError(node_, "scan inputs have different lengths along their scan axes (" +
                                    std::to_string(L) + " and " + std::to_string(len) + ")");
      L = len;
    }
    scans->assign(k_, {});
    std::vector<Tensor> slices(m_), outs;
    // The scan length comes from the inputs' shapes: an empty [2^32, 0] input scans 2^32 times.
    const int64_t limit = LoopIterationLimit();
    if (limit > 0 && L > limit)
      return NodeError(node_, "would run " + std::to_string(L) +
                                  " iterations, more than the loop iteration limit " +
                                  std::to_string(limit) + kLoopLimitHint);
    for (int64_t t = 0; t < L; ++t) {
      for (int j = 0; j < m_; ++j) {
        slices[j] = SliceAxis(*scan_in[j], axes[j], in_dirs_[j] ? L - 1 - t : t);
        OPSCOPE_RETURN_IF_ERROR(
            CheckBound(node_, body_, n_ + j, slices[j],
                       "scan input '" + node_.input_names[first + n_ + j] + "'"));
      }
      std::vector<const Tensor*> in;
      for (const Tensor& s : states) in.push_back(&s);
      for (const Tensor& s : slices) in.push_back(&s);
      OPSCOPE_RETURN_IF_ERROR(ctx.RunSubgraph(body_.graph, in, &outs));
      if (static_cast<int>(outs.size()) != n_ + k_)
        return NodeError(node_, "the body returned " + std::to_string(outs.size()) + " values");
      for (int j = 0; j < n_; ++j) states[j] = std::move(outs[j]);
      for (int k = 0; k < k_; ++k) (*scans)[k].push_back(std::move(outs[n_ + k]));
    }
    // States still borrowed from the inputs (no iteration) are copied: the caller keeps them.
    states_out->clear();
    for (int j = 0; j < n_; ++j) {
      if (L > 0) {
        states_out->push_back(std::move(states[j]));
        continue;
      }
      Tensor c(state_in[j]->dtype(), state_in[j]->shape());
      CopyTensorData(*state_in[j], &c);
      states_out->push_back(std::move(c));
    }
    return Status::Ok();
  }

  Node node_;
  AttrValue body_;
  int n_, m_, k_;
  bool batched_;
  std::vector<int64_t> in_axes_, in_dirs_, out_axes_, out_dirs_;
};

std::string Count(size_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> Create_If(const Node& node) {
  OPSCOPE_ASSIGN_OR_RETURN(const AttrValue* t, NeedGraph(node, "then_branch"));
  OPSCOPE_ASSIGN_OR_RETURN(const AttrValue* e, NeedGraph(node, "else_branch"));
  if (node.inputs.empty() || node.inputs[0] < 0)
    return NodeError(node, "needs its condition input");
  if (!t->graph_input_types.empty() || !e->graph_input_types.empty())
    return NodeError(node, "If branches take no inputs (then_branch has " +
                               Count(t->graph_input_types.size(), "input") + ", else_branch " +
                               std::to_string(e->graph_input_types.size()) + ")");
  const size_t nt = t->graph_output_types.size(), ne = e->graph_output_types.size();
  if (nt != ne)
    return NodeError(node, "then_branch has " + Count(nt, "output") + " but else_branch has " +
                               std::to_string(ne) +
                               "; both must return one value per output of the If");
  if (node.outputs.size() != nt)
    return NodeError(node, "has " + Count(node.outputs.size(), "output") +
                               " but its branches return " + std::to_string(nt));
  for (size_t i = 0; i < nt; ++i) {
    const int a = t->graph_output_types[i], b = e->graph_output_types[i];
    if (a != 0 && b != 0 && a != b)
      return NodeError(node, "output " + std::to_string(i) + " is " + OnnxTypeName(a) +
                                 " in then_branch but " + OnnxTypeName(b) + " in else_branch");
  }
  return std::unique_ptr<Kernel>(new IfKernel(node, t, e));
}

StatusOr<std::unique_ptr<Kernel>> Create_Loop(const Node& node) {
  OPSCOPE_ASSIGN_OR_RETURN(const AttrValue* b, NeedGraph(node, "body"));
  if (node.inputs.size() < 2)
    return NodeError(node, "needs the inputs M and cond (either may be empty, \"\")");
  const int n = static_cast<int>(node.inputs.size()) - 2;
  const size_t bi = b->graph_input_types.size(), bo = b->graph_output_types.size();
  if (bi != static_cast<size_t>(2 + n))
    return NodeError(node, "the body has " + Count(bi, "input") + "; a Loop with " +
                               Count(n, "loop-carried value") + " needs " + std::to_string(2 + n) +
                               " (iteration number, condition, then the carried values)");
  if (bo < static_cast<size_t>(1 + n))
    return NodeError(node, "the body has " + Count(bo, "output") + "; a Loop with " +
                               Count(n, "loop-carried value") + " needs at least " +
                               std::to_string(1 + n) + " (condition, then the carried values)");
  const int k = static_cast<int>(bo) - 1 - n;
  if (node.outputs.size() > static_cast<size_t>(n + k))
    return NodeError(node, "has " + Count(node.outputs.size(), "output") + " but its body gives " +
                               std::to_string(n) + " carried values and " +
                               Count(k, "scan output"));
  if (b->graph_input_types[0] != 0 && b->graph_input_types[0] != kOnnxInt64)
    return NodeError(node, "the body's first input (the iteration number) must be int64, it is " +
                               std::string(OnnxTypeName(b->graph_input_types[0])));
  if (b->graph_input_types[1] != 0 && b->graph_input_types[1] != kOnnxBool)
    return NodeError(node, "the body's second input (the condition) must be bool, it is " +
                               std::string(OnnxTypeName(b->graph_input_types[1])));
  if (b->graph_output_types[0] != 0 && b->graph_output_types[0] != kOnnxBool)
    return NodeError(node, "the body's first output (the condition) must be bool, it is " +
                               std::string(OnnxTypeName(b->graph_output_types[0])));
  for (int j = 0; j < n; ++j) {
    const int in = b->graph_input_types[2 + j], out = b->graph_output_types[1 + j];
    if (in != 0 && out != 0 && in != out)
      return NodeError(node, "loop-carried value " + std::to_string(j) + " enters the body as " +
                                 OnnxTypeName(in) + " but leaves it as " + OnnxTypeName(out));
  }
  return std::unique_ptr<Kernel>(new LoopKernel(node, b, n, k));
}

StatusOr<std::unique_ptr<Kernel>> Create_Scan(const Node& node) {
  OPSCOPE_ASSIGN_OR_RETURN(const AttrValue* b, NeedGraph(node, "body"));
  const AttrValue* ms = node.attrs.Find("num_scan_inputs");
  if (!ms) return NodeError(node, "needs the attribute num_scan_inputs");
  const int64_t m = ms->i;
  const bool batched = node.opset < 9;  // Scan-8: input 0 is sequence_lens
  const int total = static_cast<int>(node.inputs.size()) - (batched ? 1 : 0);
  if (m < 1 || m > total)
    return NodeError(node, "num_scan_inputs = " + std::to_string(m) + " but the node has " +
                               Count(std::max(total, 0), "state or scan input"));
  const int n = total - static_cast<int>(m);
  const size_t bi = b->graph_input_types.size(), bo = b->graph_output_types.size();
  if (bi != static_cast<size_t>(total))
    return NodeError(node, "the body has " + Count(bi, "input") + " but the Scan has " +
                               std::to_string(total) + " (" + Count(n, "state") + " and " +
                               Count(m, "scan input") + ")");
  if (bo < static_cast<size_t>(n))
    return NodeError(
        node, "the body has " + Count(bo, "output") + ", fewer than its " + Count(n, "state"));
  const int k = static_cast<int>(bo) - n;
  if (node.outputs.size() > bo)
    return NodeError(node, "has " + Count(node.outputs.size(), "output") + " but its body gives " +
                               std::to_string(bo));
  auto kernel = std::make_unique<ScanKernel>(node, b, n, static_cast<int>(m), k);
  OPSCOPE_RETURN_IF_ERROR(kernel->Check());
  return std::unique_ptr<Kernel>(std::move(kernel));
}

void SetLoopIterationLimit(int64_t iterations) {
  g_loop_iteration_limit.store(iterations > 0 ? iterations : 0, std::memory_order_relaxed);
}
int64_t LoopIterationLimit() { return g_loop_iteration_limit.load(std::memory_order_relaxed); }

}  // namespace opscope::engine
