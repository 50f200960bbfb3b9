// ONNX Runtime's fusions matched to the nodes they ran: neighbours absorbed by a row named after
// one node of its fusion, and kernels that replace a subgraph matched by structure
// (model_join_graph.h says what each function does).
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "base/strings.h"
#include "importers/model_join_graph.h"

namespace opscope::importers::join {

const RegionKind* RegionKindOf(const std::string& op_type) {
  static const std::vector<std::string> kNorm = {
      "ReduceMean", "Sub", "Pow",  "Add",        "Sqrt",
      "Div",        "Mul", "Cast", "Reciprocal", "LayerNormalization"};
  static const std::vector<std::string> kRms = {"Pow",
                                                "ReduceMean",
                                                "Add",
                                                "Sqrt",
                                                "Div",
                                                "Mul",
                                                "Cast",
                                                "Reciprocal",
                                                "SimplifiedLayerNormalization",
                                                "RMSNormalization"};
  static const std::vector<std::string> kMean = {"ReduceMean", "LayerNormalization"};
  static const std::vector<std::string> kRmsMean = {"ReduceMean", "RMSNormalization",
                                                    "SimplifiedLayerNormalization"};
  static const std::vector<std::string> kGelu = {"Div", "Erf", "Add", "Mul", "Gelu"};
  static const std::vector<std::string> kFastGelu = {"Pow", "Mul", "Add", "Tanh",
                                                     "Div", "Erf", "Gelu"};
  static const std::vector<std::string> kAttention = {
      "MatMul", "Add",       "Reshape", "Transpose",      "Div",   "Mul",    "Softmax", "Sub",
      "Cast",   "Unsqueeze", "Squeeze", "Gather",         "Slice", "Concat", "Split",   "Shape",
      "Where",  "Equal",     "Expand",  "ConstantOfShape"};
  auto with = [](std::vector<std::string> a, std::initializer_list<const char*> more) {
    for (const char* m : more) a.push_back(m);
    return a;
  };
  static const std::vector<RegionKind> kKinds = {
      {"LayerNormalization", kNorm, {kMean}},
      {"SimplifiedLayerNormalization", kRms, {kRmsMean}},
      {"SkipLayerNormalization", kNorm, {{"Add"}, kMean}, 2},
      {"SkipSimplifiedLayerNormalization", kRms, {{"Add"}, kRmsMean}, 2},
      {"EmbedLayerNormalization",
       with(kNorm, {"Gather", "Unsqueeze", "Shape", "Expand"}),
       {{"Gather"}, kMean}},
      {"Gelu", kGelu, {{"Erf", "Gelu"}}},
      {"BiasGelu", kGelu, {{"Erf", "Gelu"}}},
      {"FastGelu", kFastGelu, {{"Tanh", "Erf", "Gelu"}}},
      {"QuickGelu", {"Mul", "Sigmoid"}, {{"Sigmoid"}}},
      {"BiasSoftmax", {"Add", "Softmax"}, {{"Softmax"}}},
      {"Attention", kAttention, {{"Softmax"}, {"MatMul"}}},
      {"MultiHeadAttention", kAttention, {{"Softmax"}, {"MatMul"}}},
  };
  for (const auto& k : kKinds)
    if (op_type == k.op_type) return &k;
  return nullptr;
}

int SoleConsumer(const ModelGraph& g, int n) {
  const auto& outs = g.nodes[static_cast<size_t>(n)].outputs;
  if (outs.empty() || outs[0].empty() || g.outputs.count(outs[0])) return -1;
  auto it = g.consumers.find(outs[0]);
  return it == g.consumers.end() || it->second.size() != 1 ? -1 : it->second[0];
}

void AbsorbFusedNeighbours(const ModelGraph& g, const std::vector<profile::OpRecord>& rows,
                           std::vector<Group>* groups, std::vector<char>* claimed) {
  static const std::set<std::string> kActivations = {
      "Relu",     "LeakyRelu", "Sigmoid",         "Tanh",     "Clip", "HardSigmoid", "Elu", "Selu",
      "Softplus", "Softsign",  "ThresholdedRelu", "HardSwish"};
  auto free = [&](int n) { return n >= 0 && !(*claimed)[static_cast<size_t>(n)]; };
  auto op = [&](int n) -> const std::string& { return g.nodes[static_cast<size_t>(n)].op_type; };
  // N computes with a constant operand: a Mul or Div by a scale.
  auto by_constant = [&](int n) {
    const auto& in = g.nodes[static_cast<size_t>(n)].inputs;
    return in.size() == 2 && (g.constants.count(in[0]) > 0) != (g.constants.count(in[1]) > 0);
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    Group& grp = (*groups)[i];
    if (grp.nodes.size() != 1 || grp.region) continue;
    const int a = grp.nodes[0];
    const std::string& type = rows[i].op_type;
    auto had = [&](const char* what) {
      return std::find(grp.undone.begin(), grp.undone.end(), what) != grp.undone.end();
    };
    auto take = [&](int n) {
      (*claimed)[static_cast<size_t>(n)] = 1;
      grp.nodes.push_back(n);
    };
    if (had("new_reshape") && op(a) == "Reshape") {
      if (int c = SoleConsumer(g, a); free(c) && op(c) == "Reshape") take(c);
      continue;
    }
    if (type == op(a) || RegionKindOf(type) != nullptr) continue;
    if (op(a) == "MatMul" && (type == "Gemm" || type == "FusedGemm")) {
      if (int c = SoleConsumer(g, a); free(c) && op(c) == "Add") take(c);
    }
    if (op(a) == "MatMul" && type == "FusedMatMul") {
      for (size_t k = 0; k < 2 && k < g.nodes[static_cast<size_t>(a)].inputs.size(); ++k) {
        auto p = g.producer.find(g.nodes[static_cast<size_t>(a)].inputs[k]);
        if (p == g.producer.end() || !free(p->second) || SoleConsumer(g, p->second) != a) continue;
        const std::string& t = op(p->second);
        if (t == "Transpose" || ((t == "Mul" || t == "Div") && by_constant(p->second)))
          take(p->second);
      }
      if (int c = SoleConsumer(g, a);
          free(c) && (op(c) == "Mul" || op(c) == "Div") && by_constant(c))
        take(c);
    }
    if (type == "Split" && (op(a) == "Gather" || op(a) == "Slice") &&
        !g.nodes[static_cast<size_t>(a)].inputs.empty()) {
      auto c = g.consumers.find(g.nodes[static_cast<size_t>(a)].inputs[0]);
      if (c != g.consumers.end())
        for (int sib : c->second)
          if (free(sib) && op(sib) == op(a)) take(sib);
      grp.region = grp.nodes.size() > 1;  // side by side, not post-ops: each by its own cost
    }
    if (had("fused") && StartsWith(type, "Fused")) {
      if (int c = SoleConsumer(g, grp.nodes.back()); free(c) && kActivations.count(op(c))) take(c);
    }
  }
}

void MatchByStructure(const ModelGraph& g,
                      const std::unordered_map<std::string, std::vector<int64_t>>& shapes,
                      const std::vector<profile::OpRecord>& rows, const std::vector<char>& inserted,
                      std::vector<Group>* groups, std::vector<char>* claimed) {
  const size_t n_nodes = g.nodes.size();
  auto shape_of = [&](const std::string& t) -> const std::vector<int64_t>* {
    auto it = shapes.find(t);
    return it == shapes.end() ? nullptr : &it->second;
  };
  // A shape as the row reports it: the model's, or in ORT's NCHWc layout the channels (dimension
  // 1) padded up to its block of 8 or 16.
  auto same = [](const std::vector<int64_t>& model, const std::vector<int64_t>& row) {
    if (model == row) return true;
    if (model.size() != row.size() || model.size() < 3) return false;
    for (size_t d = 0; d < model.size(); ++d)
      if (d != 1 && model[d] != row[d]) return false;
    return row[1] > model[1] && row[1] - model[1] < 16 && row[1] % 8 == 0;
  };
  auto has_shape = [&](const std::vector<std::vector<int64_t>>& list,
                       const std::vector<int64_t>& s) {
    return std::any_of(list.begin(), list.end(), [&](const auto& r) { return same(s, r); });
  };
  // The row that claimed each node, to place a candidate subgraph between the rows that wrote
  // what it reads and the rows that read what it writes.
  std::vector<int> row_of(n_nodes, -1);
  for (size_t i = 0; i < groups->size(); ++i)
    for (int n : (*groups)[i].nodes) row_of[static_cast<size_t>(n)] = static_cast<int>(i);
  for (int pass = 0; pass < 4; ++pass) {
    bool progress = false;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (inserted[i]) continue;
      Group& grp = (*groups)[i];
      const profile::OpRecord& row = rows[i];
      const RegionKind* kind = RegionKindOf(row.op_type);
      int anchor = -1;
      RegionKind own;
      if (grp.nodes.empty()) {
        if (!kind) {
          // Only a renamed row, only with shapes to tell its node from others of its type.
          if (grp.undone.empty() || row.output_shapes.empty() || shapes.empty()) continue;
          own = {row.op_type.c_str(), {row.op_type}, {{row.op_type}}, 1};
          kind = &own;
        }
      } else if (kind && !grp.by_structure && grp.nodes.size() == 1 &&
                 g.nodes[static_cast<size_t>(grp.nodes[0])].op_type != row.op_type) {
        anchor = grp.nodes[0];
      } else {
        continue;
      }
      const std::set<std::string> ops(kind->ops.begin(), kind->ops.end());
      auto is_free = [&](int n) { return n == anchor || !(*claimed)[static_cast<size_t>(n)]; };
      auto in_kind = [&](int n) {
        return is_free(n) && !g.nodes[static_cast<size_t>(n)].constant &&
               ops.count(g.nodes[static_cast<size_t>(n)].op_type) > 0;
      };
      // Some reader of N's outputs is outside any pattern of this kind: N ends one.
      auto ends = [&](int n) {
        for (const auto& o : g.nodes[static_cast<size_t>(n)].outputs) {
          if (o.empty()) continue;
          if (g.outputs.count(o)) return true;
          auto c = g.consumers.find(o);
          if (c == g.consumers.end()) continue;
          for (int r : c->second)
            if (!in_kind(r)) return true;
        }
        return false;
      };
      std::vector<int> found;
      int found_after =
          -3;  // the latest row it reads from (-1: none), -2 when not between its rows
      for (size_t e = 0; e < n_nodes; ++e) {
        const int end = static_cast<int>(e);
        const GraphNode& en = g.nodes[e];
        if (!in_kind(end) || !ends(end)) continue;
        // (A row named after a node of it is placed by its name: no shape to agree on.)
        if (anchor < 0 && !row.output_shapes.empty() && !en.outputs.empty()) {
          const auto* s = shape_of(en.outputs[0]);
          if (s ? !same(*s, row.output_shapes[0]) : !shapes.empty()) continue;
        }
        // Grow back from the end.
        std::vector<int> region = {end};
        std::vector<char> in(n_nodes, 0);
        in[e] = 1;
        for (size_t k = 0; k < region.size(); ++k)
          for (const auto& t : g.nodes[static_cast<size_t>(region[k])].inputs) {
            if (t.empty() || g.constants.count(t)) continue;
            auto p = g.producer.find(t);
            if (p == g.producer.end() || in[static_cast<size_t>(p->second)]) continue;
            if (!in_kind(p->second) || ends(p->second)) continue;
            in[static_cast<size_t>(p->second)] = 1;
            region.push_back(p->second);
          }
        if (anchor >= 0 && !in[static_cast<size_t>(anchor)]) continue;
        // What it reads from outside: graph inputs, claimed nodes' outputs, other patterns' ends;
        // never an unclaimed node that would then be left out of every pattern.
        std::set<std::string> reads;  // a folded tensor too (a constant position embedding)
        bool closed = true;
        for (int r : region)
          for (const auto& t : g.nodes[static_cast<size_t>(r)].inputs) {
            if (t.empty() || g.weights.count(t)) continue;
            auto p = g.producer.find(t);
            if (p != g.producer.end() && in[static_cast<size_t>(p->second)]) continue;
            if (p != g.producer.end() && is_free(p->second) &&
                !g.nodes[static_cast<size_t>(p->second)].constant && !ends(p->second) &&
                !in_kind(p->second))
              closed = false;
            reads.insert(t);
          }
        // No inner tensor read outside (it would be an output of the fused kernel).
        for (int r : region) {
          if (r == end) continue;
          for (const auto& o : g.nodes[static_cast<size_t>(r)].outputs) {
            auto c = g.consumers.find(o);
            if (g.outputs.count(o)) closed = false;
            if (c != g.consumers.end())
              for (int reader : c->second)
                if (!in[static_cast<size_t>(reader)]) closed = false;
          }
        }
        if (!closed || reads.size() < kind->min_inputs) continue;
        bool complete = true;
        for (const auto& one_of : kind->need) {
          bool any = false;
          for (int r : region)
            any = any || std::find(one_of.begin(), one_of.end(),
                                   g.nodes[static_cast<size_t>(r)].op_type) != one_of.end();
          complete = complete && any;
        }
        if (!complete) continue;
        // (Not for a renamed row: a merged Reshape reads what the Reshape before it read.)
        if (kind != &own && anchor < 0 && !row.input_shapes.empty() && !shapes.empty()) {
          bool fits = true;
          for (const auto& t : reads)
            if (const auto* s = shape_of(t); s && !has_shape(row.input_shapes, *s)) fits = false;
          if (!fits) continue;
        }
        // Placed between the rows that wrote what it reads and the rows that read what it writes.
        int after = -1, before = static_cast<int>(rows.size());
        for (const auto& t : reads)
          if (auto p = g.producer.find(t); p != g.producer.end())
            after = std::max(after, row_of[static_cast<size_t>(p->second)]);
        for (const auto& o : en.outputs)
          if (auto c = g.consumers.find(o); c != g.consumers.end())
            for (int reader : c->second)
              if (row_of[static_cast<size_t>(reader)] >= 0)
                before = std::min(before, row_of[static_cast<size_t>(reader)]);
        const int here = static_cast<int>(i);
        const int placed = after < here && before > here ? after : -2;
        if (found.empty() || placed > found_after) {
          found = region;
          found_after = placed;
        }
        if (anchor >= 0) break;
      }
      if (found.empty()) continue;
      std::sort(found.begin(), found.end());
      for (int n : grp.nodes) {
        (*claimed)[static_cast<size_t>(n)] = 0;
        row_of[static_cast<size_t>(n)] = -1;
      }
      for (int n : found) {
        (*claimed)[static_cast<size_t>(n)] = 1;
        row_of[static_cast<size_t>(n)] = static_cast<int>(i);
      }
      grp.nodes = found;
      grp.by_structure = true;
      progress = true;
    }
    if (!progress) break;
  }
}

}  // namespace opscope::importers::join
