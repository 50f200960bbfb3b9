#include "importers/model_join.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "base/files.h"
#include "base/strings.h"
#include "importers/model_join_graph.h"
#include "importers/tensorrt/layer_names.h"
#include "opscope/engine.h"
#include "opscope/node_name.h"
#include "profile/fused_split.h"
#include "sections/memory/memory_section.h"

namespace opscope::importers {
namespace {

using join::AbsorbFusedNeighbours;
using join::GraphNode;
using join::Group;
using join::MatchByStructure;
using join::ModelGraph;
using join::RegionKindOf;

StatusOr<ModelGraph> ReadGraph(const std::string& path) {
  OPSCOPE_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes))
    return DataLoss("--model " + path + ": not an ONNX model (protobuf parse failed)");
  ModelGraph g;
  // Every node, with the nodes of If branches and Loop/Scan bodies after their parent, named as
  // the engine names them ("<parent>/<attribute>/<node>"); a body node is also found by its own
  // name, which is what runtimes (ONNX Runtime) report for it, unless a node outside has it.
  std::function<void(const onnx::GraphProto&, const std::string&)> add =
      [&](const onnx::GraphProto& graph, const std::string& prefix) {
        for (const auto& init : graph.initializer()) g.weights.insert(init.name());
        for (int i = 0; i < graph.node_size(); ++i) {
          const auto& n = graph.node(i);
          const int at = static_cast<int>(g.nodes.size());
          GraphNode gn;
          gn.name = prefix + engine::NodeName(n.name(), n.op_type(), static_cast<long>(i));
          gn.op_type = n.op_type();
          for (const auto& s : n.input()) gn.inputs.push_back(s);
          for (const auto& s : n.output()) gn.outputs.push_back(s);
          g.by_name.emplace(gn.name, at);
          for (const auto& o : gn.outputs)
            if (!o.empty()) g.producer.emplace(o, at);
          const std::string name = gn.name;
          g.nodes.push_back(std::move(gn));
          for (const auto& a : n.attribute())
            if (a.type() == onnx::AttributeProto::GRAPH) add(a.g(), name + "/" + a.name() + "/");
        }
        if (!prefix.empty())
          for (int i = 0; i < graph.node_size(); ++i)
            if (!graph.node(i).name().empty())
              g.by_name.emplace(graph.node(i).name(),
                                g.by_name.at(prefix + engine::NodeName(graph.node(i).name(),
                                                                       graph.node(i).op_type(),
                                                                       static_cast<long>(i))));
      };
  add(model.graph(), "");
  if (g.nodes.empty()) return DataLoss("--model " + path + ": the model's graph has no nodes");
  for (const auto& o : model.graph().output()) g.outputs.insert(o.name());
  for (const auto& gn : g.nodes)
    if (gn.op_type == "Constant")
      for (const auto& o : gn.outputs) g.weights.insert(o);
  g.constants = g.weights;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    GraphNode& gn = g.nodes[n];
    for (const auto& in : gn.inputs)
      if (!in.empty()) g.consumers[in].push_back(static_cast<int>(n));
    // Nodes come in a topological order (a body after its parent), so a constant's inputs are
    // known to be constants by the time it is reached. A node without inputs is one only when it
    // is a Constant (RandomNormal is not); a control-flow node never is.
    bool all = gn.op_type == "Constant" || !gn.inputs.empty();
    for (const auto& in : gn.inputs) all = all && (in.empty() || g.constants.count(in) > 0);
    if (gn.op_type == "If" || gn.op_type == "Loop" || gn.op_type == "Scan") all = false;
    gn.constant = all;
    if (all)
      for (const auto& o : gn.outputs)
        if (!o.empty()) g.constants.insert(o);
  }
  return g;
}

// "conv1_token_4" -> "conv1"; the name unchanged when it has no such suffix.
std::string WithoutToken(const std::string& name) {
  const size_t at = name.rfind("_token_");
  if (at == std::string::npos || at == 0 || at + 7 >= name.size()) return name;
  for (size_t i = at + 7; i < name.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return name;
  return name.substr(0, at);
}

// The model node a runtime's row name stands for, undoing ONNX Runtime's renamings (as its
// graph transformers write them, 1.x):
//   "<node>_nchwc"                 the NCHWc transformer's converted node;
//   "<node>/<Kind>Fusion" and "<node>/<Kind>Fusion/"  a fusion named after its anchor node
//                                  (MatMulAddFusion, GatherSliceToSplitFusion; LayerNormFusion,
//                                  QuickGeluFusion, MatmulTransposeFusion, MatMulScaleFusion end
//                                  in '/');
//   "fused <node>"                 GemmActivationFusion's FusedGemm;
//   "<node>_new_reshape"           ReshapeFusion's merge of two contiguous Reshapes, named after
//                                  the first;
//   "<node>_token_<N>"             a copy made by the layout transformer (NHWC QLinearConv,
//                                  NhwcMaxPool) or a second node of the same generated name.
// Each step is tried only when the name as it stands is not a node (or a tensor) of the model.
// UNDONE, when given, receives the renamings taken off ("nchwc", "MatMulAddFusion", "fused",
// "new_reshape", "token"), also when no node is found in the end.
int Resolve(const ModelGraph& g, std::string name, std::vector<std::string>* undone = nullptr) {
  auto note = [&](const std::string& what) {
    if (undone) undone->push_back(what);
  };
  for (int attempt = 0; attempt < 8; ++attempt) {
    if (auto it = g.by_name.find(name); it != g.by_name.end()) return it->second;
    if (auto it = g.producer.find(name); it != g.producer.end()) return it->second;
    if (EndsWith(name, "_nchwc")) {
      name = name.substr(0, name.size() - 6);
      note("nchwc");
      continue;
    }
    if (EndsWith(name, "_new_reshape") && name.size() > 12) {
      name = name.substr(0, name.size() - 12);
      note("new_reshape");
      continue;
    }
    std::string trimmed = EndsWith(name, "/") ? name.substr(0, name.size() - 1) : name;
    if (size_t slash = trimmed.rfind('/');
        slash != std::string::npos && slash > 0 && EndsWith(trimmed, "Fusion")) {
      note(trimmed.substr(slash + 1));
      name = trimmed.substr(0, slash);
      continue;
    }
    if (StartsWith(name, "fused ") && name.size() > 6) {
      name = name.substr(6);
      note("fused");
      continue;
    }
    if (std::string base = WithoutToken(name); base != name) {
      name = base;
      note("token");
      continue;
    }
    break;
  }
  return -1;
}

// Rows the runtime inserted for itself (layout and device copies): no ONNX node, not unmatched.
bool InsertedByRuntime(const profile::OpRecord& op) {
  static const std::set<std::string> kTypes = {
      "Reformat",     "ReorderInput",   "ReorderOutput", "MemcpyFromHost",
      "MemcpyToHost", "CopyMemGeneric", "Copy"};
  return kTypes.count(op.op_type) > 0;
}

// A runtime's quantized kernel (ONNX Runtime's QDQ fusions make QLinearConv, QLinearMatMul,
// QGemm, NhwcMaxPool ... out of DequantizeLinear -> op -> QuantizeLinear).
bool QuantizedKernel(const std::string& op_type) {
  for (const char* prefix : {"QLinear", "Nhwc", "QGemm", "QAttention", "QOrdered"})
    if (StartsWith(op_type, prefix)) return true;
  return op_type == "MatMulInteger" || op_type == "ConvInteger" || op_type == "MatMulNBits" ||
         op_type == "DynamicQuantizeMatMul";
}

// A quantized kernel's row also ran the DequantizeLinear nodes feeding its nodes and the
// QuantizeLinear after them (through a Relu or Clip) when those have no row of their own: they
// join its group, after its nodes (post-ops in the cost split).
void AbsorbQdqNeighbours(const ModelGraph& g, const std::vector<profile::OpRecord>& rows,
                         std::vector<Group>* groups, std::vector<char>* claimed_nodes) {
  std::vector<char>& claimed = *claimed_nodes;
  const auto& consumers = g.consumers;
  auto take = [&](Group& grp, int n) {
    claimed[static_cast<size_t>(n)] = 1;
    grp.nodes.push_back(n);
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    Group& grp = (*groups)[i];
    if (grp.nodes.empty() || !QuantizedKernel(rows[i].op_type)) continue;
    const std::vector<int> own = grp.nodes;
    for (int n : own) {
      for (const auto& in : g.nodes[static_cast<size_t>(n)].inputs) {
        auto p = g.producer.find(in);
        if (p != g.producer.end() && !claimed[static_cast<size_t>(p->second)] &&
            g.nodes[static_cast<size_t>(p->second)].op_type == "DequantizeLinear")
          take(grp, p->second);
      }
      int cur = n;
      for (int step = 0; step < 3; ++step) {
        const auto& outs = g.nodes[static_cast<size_t>(cur)].outputs;
        if (outs.empty()) break;
        auto c = consumers.find(outs[0]);
        if (c == consumers.end() || c->second.size() != 1) break;
        const int next = c->second[0];
        const std::string& type = g.nodes[static_cast<size_t>(next)].op_type;
        if (claimed[static_cast<size_t>(next)]) break;
        if (type == "QuantizeLinear") {
          take(grp, next);
          break;
        }
        if (type != "Relu" && type != "Clip") break;
        take(grp, next);
        cur = next;
      }
    }
  }
}

// MatMulAddFusion's Reshapes around a Gemm made of a MatMul of more than two dimensions
// ("gemm_input_reshape_token_8", "gemm_output_reshape").
bool GemmReshape(const profile::OpRecord& op) {
  const std::string base = WithoutToken(op.name);
  return op.op_type == "Reshape" && (base == "gemm_input_reshape" || base == "gemm_output_reshape");
}

// A layout node ONNX Runtime inserted and named after its op type (GenerateNodeName:
// "Transpose", "Reshape_token_34"; the NHWC and NCHWc transformers; "Squeeze_token_52" after
// GatherSliceToSplitFusion's Split), or one of MatMulAddFusion's Reshapes, which no model node is.
bool InsertedLayout(const profile::OpRecord& op) {
  return ((op.op_type == "Transpose" || op.op_type == "Reshape" || op.op_type == "Squeeze" ||
           op.op_type == "Unsqueeze") &&
          WithoutToken(op.name) == op.op_type) ||
         GemmReshape(op);
}

// The model node an inserted row serves: the anchor of a matched row. One that prepares an input
// (ReorderInput, a copy from the host, a transpose or reshape whose output the next matched row
// reads) serves the nearest following matched row that reads its output shape; the others
// (ReorderOutput restoring a tensor's layout, ...) the nearest preceding one that wrote its input
// shape. Without a row of that shape, the nearest matched one within a few rows;
// -1 when there is none.
int ServedNode(const std::vector<profile::OpRecord>& rows, const std::vector<Group>& groups,
               const std::vector<char>& inserted, size_t i) {
  constexpr size_t kReach = 12;
  const profile::OpRecord& row = rows[i];
  auto has = [](const std::vector<std::vector<int64_t>>& shapes,
                const std::vector<std::vector<int64_t>>& of) {
    if (of.empty() || of[0].empty()) return false;
    return std::find(shapes.begin(), shapes.end(), of[0]) != shapes.end();
  };
  // The nearest matched row in direction `dir` (with the shape test when `shaped`).
  auto find = [&](int dir, bool shaped) -> int {
    // By shape, as far as it takes (ORT drains many NCHWc tensors in one place); by position, a
    // few rows only.
    const size_t reach = shaped ? rows.size() : kReach;
    for (size_t k = 1; k <= reach; ++k) {
      if (dir < 0 && k > i) break;
      const size_t j = dir < 0 ? i - k : i + k;
      if (j >= rows.size()) break;
      if (inserted[j] || groups[j].nodes.empty()) continue;
      if (!shaped || (dir > 0 ? has(rows[j].input_shapes, row.output_shapes)
                              : has(rows[j].output_shapes, row.input_shapes)))
        return static_cast<int>(j);
    }
    return -1;
  };
  // MatMulAddFusion's Reshapes serve their Gemm, the one next to them (before or after: rows
  // come in ORT's node order or in execution order) that reads what the input Reshape writes or
  // writes what the output Reshape reads; the Squeezes after a Split (GatherSliceToSplitFusion)
  // the nearest row that wrote what they read. At equal distance, the following row.
  const bool gemm_in = GemmReshape(row) && StartsWith(row.name, "gemm_input");
  const bool gemm_out = GemmReshape(row) && !gemm_in;
  if (gemm_in || gemm_out || row.op_type == "Squeeze" || row.op_type == "Unsqueeze") {
    auto serves = [&](size_t j) {
      if (inserted[j] || groups[j].nodes.empty()) return false;
      const bool gemm = rows[j].op_type == "Gemm" || rows[j].op_type == "FusedGemm";
      if (gemm_in) return gemm && has(rows[j].input_shapes, row.output_shapes);
      if (gemm_out) return gemm && has(rows[j].output_shapes, row.input_shapes);
      return has(rows[j].output_shapes, row.input_shapes);
    };
    for (size_t k = 1; k <= kReach; ++k) {
      if (i + k < rows.size() && serves(i + k)) return groups[i + k].nodes.front();
      if (k <= i && serves(i - k)) return groups[i - k].nodes.front();
    }
  }
  const bool input_side = row.op_type == "ReorderInput" || row.op_type == "MemcpyFromHost";
  const bool output_side = row.op_type == "ReorderOutput" || row.op_type == "MemcpyToHost";
  int j = -1;
  if (!output_side) j = find(+1, true);
  if (j < 0 && !input_side) j = find(-1, true);
  if (j < 0) j = input_side ? find(+1, false) : find(-1, false);
  if (j < 0) j = input_side ? find(-1, false) : find(+1, false);
  if (j < 0) return -1;
  // The row's anchor (its first node: the Conv of Conv+BatchNormalization+Relu).
  return groups[static_cast<size_t>(j)].nodes.front();
}

Group MatchRow(const ModelGraph& g, const profile::OpRecord& row,
               const std::vector<std::string>* sources) {
  Group grp;
  auto add = [&](int n) {
    if (n >= 0 && std::find(grp.nodes.begin(), grp.nodes.end(), n) == grp.nodes.end())
      grp.nodes.push_back(n);
  };
  if (sources && !sources->empty()) {
    for (const auto& s : *sources) add(Resolve(g, s));
    // A region compiled as one unit (Myelin, DLA) rather than a chain of post-ops.
    grp.region = trt::ParseLayerName(row.name).kind == trt::LayerName::Kind::kRegion ||
                 row.op_type == "Myelin" || row.op_type == "ForeignNode";
    if (!grp.nodes.empty()) return grp;
    grp.region = false;
  }
  int direct = Resolve(g, row.name, &grp.undone);
  if (direct >= 0) {
    add(direct);
    // ONNX Runtime names a fused node after its last node and reports the first one's op type:
    // walk back the chain feeding it to a node of that type. (Not for a "<node>/<Kind>Fusion"
    // name or a fused kernel of its own type, a Gemm or a Gelu: AbsorbFusedNeighbours and
    // MatchByStructure know what those hold.)
    const std::string& want = row.op_type;
    const bool named_fusion = std::any_of(grp.undone.begin(), grp.undone.end(), [](auto& u) {
      return EndsWith(u, "Fusion") || u == "fused" || u == "new_reshape";
    });
    if (!want.empty() && want != g.nodes[direct].op_type && !named_fusion &&
        RegionKindOf(want) == nullptr) {
      std::vector<int> chain = {direct};
      int cur = direct;
      for (int step = 0; step < 8; ++step) {
        const GraphNode& n = g.nodes[cur];
        if (n.inputs.empty()) break;
        auto it = g.producer.find(n.inputs[0]);
        if (it == g.producer.end()) break;
        cur = it->second;
        chain.insert(chain.begin(), cur);
        if (g.nodes[cur].op_type == want) {
          grp.nodes = chain;
          break;
        }
      }
    }
    return grp;
  }
  trt::LayerName ln = trt::ParseLayerName(row.name);
  for (const auto& part : ln.parts) add(Resolve(g, part));
  for (const auto& [first, last] : ln.ranges) {
    int a = Resolve(g, first), b = Resolve(g, last);
    if (a < 0 || b < 0) {
      add(a);
      add(b);
      continue;
    }
    if (a > b) std::swap(a, b);
    for (int k = a; k <= b; ++k) add(k);
    grp.region = true;
  }
  return grp;
}

double MeanOf(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

}  // namespace

StatusOr<JoinSummary> JoinModel(profile::Profile* p, const ModelJoinOptions& opt) {
  OPSCOPE_ASSIGN_OR_RETURN(ModelGraph g, ReadGraph(opt.model_path));
  JoinSummary sum;
  sum.rows = p->ops.size();
  sum.model_nodes = g.nodes.size();

  // Costs and shapes: the engine at the given shapes, unfused so every node has its own.
  std::unordered_map<std::string, engine::NodeInfo> info;
  {
    engine::SessionOptions so;
    so.fuse = false;
    so.threads = 1;
    so.shapes = opt.shapes;
    // The planning run records shapes and costs. Random integer inputs (0..7) can be out of
    // range for the model (a BERT's token types index a table of 2 rows): then once more with
    // zeros for them, as tools/ort_profile.js feeds ONNX Runtime.
    bool loaded = false;
    auto plan = [&](bool integer_zeros) -> Status {
      auto session = engine::Session::Load(opt.model_path, so);
      if (!session.ok()) return session.status();
      loaded = true;
      if (integer_zeros)
        for (const auto& in : (*session)->Inputs()) {
          if (in.dtype == engine::DataType::kFloat32 || in.dtype == engine::DataType::kFloat64 ||
              in.dtype == engine::DataType::kFloat16)
            continue;
          try {
            OPSCOPE_RETURN_IF_ERROR(
                (*session)->SetInput(in.name, engine::Tensor(in.dtype, in.shape)));
          } catch (const std::bad_alloc&) {
            return ResourceExhausted("cannot allocate input '" + in.name + "'");
          }
        }
      OPSCOPE_RETURN_IF_ERROR((*session)->FillRandomInputs(1));
      OPSCOPE_RETURN_IF_ERROR((*session)->Run());
      for (const auto& n : (*session)->Nodes()) info.emplace(n.name, n);
      return Status::Ok();
    };
    Status st = plan(false);
    if (!st.ok() && loaded && plan(true).ok()) st = Status::Ok();
    if (st.ok())
      sum.costs = true;
    else
      sum.engine_note = st.message();
  }

  double total = 0;
  for (const auto& op : p->ops) total += MeanOf(op.runs_ms);
  size_t runs = 0;
  for (const auto& op : p->ops) runs = std::max(runs, op.runs_ms.size());

  struct Claim {
    std::vector<double> runs_ms;
    std::vector<std::string> rows;  // rows that gave this node time
    std::vector<std::string> fused_with;
    std::string attribution;
    bool fused = false;
    const profile::OpRecord* only = nullptr;  // the row, for a 1:1 match
  };
  std::map<int, Claim> claims;
  std::vector<profile::OpRecord> leftover;
  double matched = 0;
  // Every row's match first: an inserted row is charged to the node of a neighbouring row.
  std::vector<Group> groups;
  std::vector<char> inserted;
  for (const auto& row : p->ops) {
    const std::vector<std::string>* src = nullptr;
    if (auto it = opt.sources.find(row.name); it != opt.sources.end()) src = &it->second;
    const bool ins = InsertedByRuntime(row);
    groups.push_back(ins ? Group{} : MatchRow(g, row, src));
    inserted.push_back(ins || (groups.back().nodes.empty() && InsertedLayout(row)));
  }
  std::vector<char> claimed(g.nodes.size(), 0);
  for (const Group& grp : groups)
    for (int n : grp.nodes) claimed[static_cast<size_t>(n)] = 1;
  AbsorbQdqNeighbours(g, p->ops, &groups, &claimed);
  AbsorbFusedNeighbours(g, p->ops, &groups, &claimed);
  {
    // Every tensor's shape at the given shapes, from the engine's planning run.
    std::unordered_map<std::string, std::vector<int64_t>> shapes;
    for (const auto& gn : g.nodes) {
      auto it = info.find(gn.name);
      if (it == info.end()) continue;
      for (size_t k = 0; k < gn.inputs.size() && k < it->second.input_shapes.size(); ++k)
        if (!gn.inputs[k].empty()) shapes.emplace(gn.inputs[k], it->second.input_shapes[k]);
      size_t k = 0;
      for (const auto& o : gn.outputs)
        if (!o.empty() && k < it->second.output_shapes.size())
          shapes[o] = it->second.output_shapes[k++];
    }
    MatchByStructure(g, shapes, p->ops, inserted, &groups, &claimed);
  }
  for (size_t i = 0; i < p->ops.size(); ++i) {
    const profile::OpRecord& row = p->ops[i];
    Group grp = groups[i];
    const double row_ms = MeanOf(row.runs_ms);
    if (inserted[i]) {
      if (const int n = ServedNode(p->ops, groups, inserted, i); n >= 0) {
        ++sum.matched_rows;
        matched += row_ms;
        Claim& c = claims[n];
        if (c.runs_ms.empty()) c.runs_ms.assign(runs, 0.0);
        for (size_t r = 0; r < row.runs_ms.size() && r < runs; ++r) c.runs_ms[r] += row.runs_ms[r];
        c.rows.push_back(row.name);
        c.only = nullptr;
        if (!c.attribution.empty()) c.attribution += "; ";
        c.attribution +=
            fmt::format("plus '{}' ({}, {:.2f}% of the time), inserted by {} for it", row.name,
                        row.op_type, total > 0 ? row_ms / total * 100 : 0, opt.runtime);
        continue;
      }
    }
    if (grp.nodes.empty()) {
      profile::OpRecord r = row;
      if (inserted[i]) {
        r.attribution = "inserted by " + opt.runtime + " (layout/device copy): no ONNX node";
      } else {
        r.attribution = "unmatched: no node of the model is named after this row";
        sum.unmatched.push_back({row.name, total > 0 ? row_ms / total : 0});
      }
      leftover.push_back(std::move(r));
      continue;
    }
    ++sum.matched_rows;
    matched += row_ms;
    std::vector<profile::FusedPart> parts;
    for (int n : grp.nodes) {
      auto it = info.find(g.nodes[n].name);
      parts.push_back({g.nodes[n].op_type, it == info.end() ? 0 : it->second.flops,
                       it == info.end() ? 0 : it->second.bytes});
    }
    std::vector<double> w = profile::FusedCostShares(
        parts, grp.region ? profile::FusedKind::kRegion : profile::FusedKind::kChain);
    for (size_t k = 0; k < grp.nodes.size(); ++k) {
      Claim& c = claims[grp.nodes[k]];
      if (c.runs_ms.empty()) c.runs_ms.assign(runs, 0.0);
      for (size_t r = 0; r < row.runs_ms.size() && r < runs; ++r)
        c.runs_ms[r] += row.runs_ms[r] * w[k];
      c.rows.push_back(row.name);
      if (grp.nodes.size() > 1) {
        c.fused = true;
        for (int other : grp.nodes)
          if (other != grp.nodes[k]) c.fused_with.push_back(g.nodes[other].name);
        if (!c.attribution.empty()) c.attribution += "; ";
        c.attribution +=
            fmt::format("{:.1f}% of {} layer '{}' ({} nodes{}), split by estimated cost",
                        w[k] * 100, opt.runtime, row.name, grp.nodes.size(),
                        grp.by_structure ? ", matched by structure" : "");
        c.only = nullptr;
      } else {
        if (!c.attribution.empty()) c.attribution += "; ";
        c.attribution += "measured by " + opt.runtime + " as '" + row.name + "'";
        c.only = c.rows.size() == 1 ? &row : nullptr;
      }
    }
  }
  if (sum.matched_rows == 0) {
    std::vector<std::string> rows, nodes;
    for (size_t i = 0; i < p->ops.size() && rows.size() < 3; ++i)
      rows.push_back("'" + p->ops[i].name + "'");
    for (size_t i = 0; i < g.nodes.size() && nodes.size() < 3; ++i)
      nodes.push_back("'" + g.nodes[i].name + "'");
    return InvalidArgument("--model " + opt.model_path + ": none of the profile's " +
                           std::to_string(p->ops.size()) + " rows (" + Join(rows, ", ") +
                           ", ...) matches a node of the model (" + Join(nodes, ", ") +
                           ", ...): is this the model the profile was taken of?");
  }

  std::vector<profile::OpRecord> ops;
  for (auto& [n, c] : claims) {
    const GraphNode& gn = g.nodes[n];
    profile::OpRecord op;
    op.name = gn.name;
    op.op_type = gn.op_type;
    op.index = static_cast<int>(ops.size());
    if (auto it = info.find(gn.name); it != info.end()) {
      op.input_shapes = it->second.input_shapes;
      op.output_shapes = it->second.output_shapes;
      op.flops = it->second.flops;
      op.bytes = it->second.bytes;
      op.domain = it->second.domain;
    } else if (c.only) {
      op.input_shapes = c.only->input_shapes;
      op.output_shapes = c.only->output_shapes;
    }
    // The model's shapes (from the engine) are the node's; a runtime's own shapes describe its
    // rewritten graph (a Conv with a folded BatchNormalization has a bias input the model's
    // lacks), so they are used only when the engine could not load the model.
    if (c.only && !c.only->layout.empty()) op.layout = c.only->layout;
    op.runs_ms = std::move(c.runs_ms);
    op.status = c.fused ? profile::OpStatus::kFused : profile::OpStatus::kExecuted;
    op.step = c.rows.size() == 1 ? c.rows[0] : Join(c.rows, " | ");
    std::sort(c.fused_with.begin(), c.fused_with.end());
    c.fused_with.erase(std::unique(c.fused_with.begin(), c.fused_with.end()), c.fused_with.end());
    op.fused_with = std::move(c.fused_with);
    op.attribution = c.fused ? "estimated: " + c.attribution : c.attribution;
    ops.push_back(std::move(op));
  }
  sum.nodes_matched = ops.size();
  std::set<std::string> names;
  for (const auto& op : ops) names.insert(op.name);
  for (auto& r : leftover) {
    while (names.count(r.name)) r.name += " (layer)";
    names.insert(r.name);
    r.index = static_cast<int>(ops.size());
    ops.push_back(std::move(r));
  }
  p->ops = std::move(ops);
  p->op_events.clear();  // row indices changed; imported timelines are not kept per node
  // The memory section's steps name the rows they were: point them at the op of that name now,
  // or at the first op the row became (its `step`), else at none.
  if (auto* mem = p->sections.Find<memory::MemorySection>()) {
    std::map<std::string, int> by_name, by_step;
    for (size_t i = 0; i < p->ops.size(); ++i) {
      by_name.emplace(p->ops[i].name, static_cast<int>(i));
      if (!p->ops[i].step.empty()) by_step.emplace(p->ops[i].step, static_cast<int>(i));
    }
    for (memory::MemStep& st : mem->steps) {
      st.op = -1;
      if (auto a = by_name.find(st.name); a != by_name.end())
        st.op = a->second;
      else if (auto b = by_step.find(st.name); b != by_step.end())
        st.op = b->second;
    }
  }
  sum.matched_share = total > 0 ? matched / total : 1;

  if (!p->meta.import) p->meta.import.emplace();
  profile::ImportProvenance& prov = *p->meta.import;
  prov.model = opt.model_path;
  // A joined profile is a profile of the model (so `diff` of two runtimes' imports of the same
  // model compares like with like); the file it came from stays in import.file.
  p->meta.source = opt.model_path;
  prov.rows = sum.rows;
  prov.matched_rows = sum.matched_rows;
  prov.matched_share = sum.matched_share;
  prov.model_nodes = sum.model_nodes;
  prov.model_nodes_timed = sum.nodes_matched;
  if (!sum.unmatched.empty()) {
    std::vector<std::string> list;
    double share = 0;
    for (const auto& [name, s] : sum.unmatched) {
      share += s;
      if (list.size() < 12) list.push_back(fmt::format("'{}' {:.1f}%", name, s * 100));
    }
    if (sum.unmatched.size() > list.size())
      list.push_back("and " + std::to_string(sum.unmatched.size() - list.size()) + " more");
    prov.unmatched = list;
    p->meta.degradations.push_back(
        fmt::format("{} of {} rows ({:.1f}% of the time) match no node of {}: {}",
                    sum.unmatched.size(), sum.rows, share * 100, opt.model_path, Join(list, ", ")));
  }
  if (!sum.costs)
    p->meta.degradations.push_back("--model " + opt.model_path +
                                   ": the engine could not load it, so there are no FLOPs or "
                                   "bytes (no roofline): " +
                                   sum.engine_note);
  return sum;
}

}  // namespace opscope::importers
