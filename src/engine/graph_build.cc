// Graph building (SessionImpl::BuildGraph): the ONNX graph becomes the engine's values (value
// ids; initializers as constants), nodes with typed attributes, and, for If/Loop/Scan, subgraphs
// built recursively in scopes of their own (ONNX's outer-scope rule: a subgraph sees its own
// names first, then its enclosing graphs'; an outer value it reads is a capture of its owner).
// Kernels are created here too, one per node, each validating its attributes.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <set>

#include "engine/onnx_io.h"
#include "engine/session_impl.h"
#include "opscope/node_name.h"

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

}  // namespace

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
    node.name = prefix + NodeName(n.name(), n.op_type(), static_cast<long>(idx));
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

}  // namespace opscope::engine
