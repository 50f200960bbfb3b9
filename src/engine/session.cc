// The session's lifecycle (session_impl.h): Init runs the load phases in order; LoadGraph is
// everything up to the engine graph: parse, the ONNX checker and the engine's own load checks,
// unsupported operators (all listed at once), input shapes, shape inference, BuildGraph.
#include <omp.h>
#include <onnx/checker.h>
#include <onnx/common/version.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <set>

#include "base/files.h"
#include "base/strings.h"
#include "engine/load_checks.h"
#include "engine/onnx_io.h"
#include "engine/session_impl.h"
#include "opscope/node_name.h"

namespace opscope::engine {
namespace {

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
    std::string name = NodeName(n.name(), n.op_type(), index);
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
  OPSCOPE_RETURN_IF_ERROR(LoadGraph(path, options));
  OPSCOPE_RETURN_IF_ERROR(FoldConstantsAtLoad());
  MakeSteps();
  fuse_ = options.fuse;
  if (options.fuse) Fuse();
  IndexSteps();
  return CheckPlan();
}

Status SessionImpl::LoadGraph(const std::string& path, const SessionOptions& options) {
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
  OPSCOPE_RETURN_IF_ERROR(CheckNodeAttributes(model.graph(), path, opset));
  OPSCOPE_RETURN_IF_ERROR(ResolveInputs(model, options));
  if (onnx_checks) OPSCOPE_RETURN_IF_ERROR(InferShapesChecked(model, path));
  return BuildGraph(model);
}

void SessionImpl::MakeSteps() {
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
}

void SessionImpl::IndexSteps() {
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
          std::string name = prefix + NodeName(n.name(), n.op_type(), static_cast<long>(i));
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
