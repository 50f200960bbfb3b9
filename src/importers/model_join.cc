#include "importers/model_join.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <unordered_map>

#include "base/files.h"
#include "base/strings.h"
#include "importers/tensorrt/layer_names.h"
#include "opscope/engine.h"
#include "opscope/node_name.h"
#include "profile/fused_split.h"
#include "sections/memory/memory_section.h"

namespace opscope::importers {
namespace {

struct GraphNode {
  std::string name, op_type;
  std::vector<std::string> inputs, outputs;
};

struct ModelGraph {
  std::vector<GraphNode> nodes;
  std::unordered_map<std::string, int> by_name, producer;
};

StatusOr<ModelGraph> ReadGraph(const std::string& path) {
  OPSCOPE_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes))
    return DataLoss("--model " + path + ": not an ONNX model (protobuf parse failed)");
  ModelGraph g;
  const auto& graph = model.graph();
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& n = graph.node(i);
    GraphNode gn;
    gn.name = engine::NodeName(n.name(), n.op_type(), static_cast<long>(i));
    gn.op_type = n.op_type();
    for (const auto& s : n.input()) gn.inputs.push_back(s);
    for (const auto& s : n.output()) gn.outputs.push_back(s);
    g.by_name.emplace(gn.name, i);
    for (const auto& o : gn.outputs)
      if (!o.empty()) g.producer.emplace(o, i);
    g.nodes.push_back(std::move(gn));
  }
  if (g.nodes.empty()) return DataLoss("--model " + path + ": the model's graph has no nodes");
  return g;
}

int Resolve(const ModelGraph& g, std::string name) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (auto it = g.by_name.find(name); it != g.by_name.end()) return it->second;
    if (auto it = g.producer.find(name); it != g.producer.end()) return it->second;
    // ONNX Runtime's NCHWc transformer renames the nodes it converts; its fusions name the
    // fused node "<node>/<Kind>Fusion" (MatMulAddFusion, ...).
    if (EndsWith(name, "_nchwc")) {
      name = name.substr(0, name.size() - 6);
      continue;
    }
    if (size_t slash = name.rfind('/');
        slash != std::string::npos && slash > 0 && EndsWith(name, "Fusion")) {
      name = name.substr(0, slash);
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

struct Group {
  std::vector<int> nodes;
  bool region = false;
};

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
  int direct = Resolve(g, row.name);
  if (direct >= 0) {
    add(direct);
    // ONNX Runtime names a fused node after its last node and reports the first one's op type:
    // walk back the chain feeding it to a node of that type.
    const std::string& want = row.op_type;
    if (!want.empty() && want != g.nodes[direct].op_type) {
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
    auto session = engine::Session::Load(opt.model_path, so);
    Status st = session.ok() ? Status::Ok() : session.status();
    if (st.ok()) st = (*session)->FillRandomInputs(1);
    if (st.ok()) st = (*session)->Run();  // the planning run records shapes and costs
    if (st.ok()) {
      for (const auto& n : (*session)->Nodes()) info.emplace(n.name, n);
      sum.costs = true;
    } else {
      sum.engine_note = st.message();
    }
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
  for (const auto& row : p->ops) {
    const std::vector<std::string>* src = nullptr;
    if (auto it = opt.sources.find(row.name); it != opt.sources.end()) src = &it->second;
    Group grp = InsertedByRuntime(row) ? Group{} : MatchRow(g, row, src);
    const double row_ms = MeanOf(row.runs_ms);
    if (grp.nodes.empty()) {
      profile::OpRecord r = row;
      if (InsertedByRuntime(row)) {
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
        c.attribution += fmt::format("{:.1f}% of {} layer '{}' ({} nodes), split by estimated cost",
                                     w[k] * 100, opt.runtime, row.name, grp.nodes.size());
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

  p->meta.extra["import.model"] = opt.model_path;
  // A joined profile is a profile of the model (so `diff` of two runtimes' imports of the same
  // model compares like with like); the file it came from stays in import.file.
  p->meta.source = opt.model_path;
  p->meta.extra["import.matched_rows"] =
      std::to_string(sum.matched_rows) + " of " + std::to_string(sum.rows);
  p->meta.extra["import.matched_share"] = fmt::format("{:.1f}%", sum.matched_share * 100);
  p->meta.extra["import.model_nodes_timed"] =
      std::to_string(sum.nodes_matched) + " of " + std::to_string(sum.model_nodes);
  if (!sum.unmatched.empty()) {
    std::vector<std::string> list;
    double share = 0;
    for (const auto& [name, s] : sum.unmatched) {
      share += s;
      if (list.size() < 12) list.push_back(fmt::format("'{}' {:.1f}%", name, s * 100));
    }
    if (sum.unmatched.size() > list.size())
      list.push_back("and " + std::to_string(sum.unmatched.size() - list.size()) + " more");
    p->meta.extra["import.unmatched"] = Join(list, ", ");
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
