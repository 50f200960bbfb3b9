#include "analysis/diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "analysis/format.h"
#include "analysis/range_stats.h"
#include "base/strings.h"
#include "profile/json_text.h"

namespace opscope::analysis {

static double Trimmed(std::vector<double> v) { return ComputeStats(v).trimmed_mean; }

void BootstrapChangeCi(const std::vector<double>& before, const std::vector<double>& after,
                       double* low_pct, double* high_pct) {
  std::mt19937_64 rng(kBootstrapSeed);
  std::vector<double> changes;
  changes.reserve(kBootstrapResamples);
  std::vector<double> b(before.size()), a(after.size());
  std::uniform_int_distribution<size_t> pick_b(0, before.size() - 1), pick_a(0, after.size() - 1);
  for (int i = 0; i < kBootstrapResamples; ++i) {
    for (auto& x : b) x = before[pick_b(rng)];
    for (auto& x : a) x = after[pick_a(rng)];
    double tb = Trimmed(b), ta = Trimmed(a);
    if (tb > 0) changes.push_back((ta - tb) / tb * 100.0);
  }
  std::sort(changes.begin(), changes.end());
  *low_pct = PercentileSorted(changes, 0.025);
  *high_pct = PercentileSorted(changes, 0.975);
}

static std::string OutShape(const profile::OpRecord& op) {
  std::vector<std::string> s;
  for (const auto& sh : op.output_shapes) s.push_back(ShapeToString(sh));
  return Join(s, ",");
}
static std::string InShape(const profile::OpRecord& op) {
  std::vector<std::string> s;
  for (const auto& sh : op.input_shapes) s.push_back(ShapeToString(sh));
  return Join(s, ",");
}

static double OpMs(const profile::OpRecord& op) {
  return op.status == profile::OpStatus::kFolded ? 0 : op.stats.trimmed_mean;
}

static void SortByAbs(std::vector<NodeDelta>& v) {
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return std::fabs(a.delta_ms) > std::fabs(b.delta_ms);
  });
}

static std::string KindInWords(const std::string& kind) {
  if (kind == "profile")
    return "a model profile (`opscope profile`: per-op times on the built-in engine)";
  if (kind == "run") return "a `run` profile (a whole program's annotated ranges)";
  if (kind == "stat") return "a `stat` profile (a whole program's counters)";
  if (kind == "gpu") return "a `gpu` profile (a CUDA program's kernels)";
  if (kind == "record") return "a `record` profile (call-stack samples)";
  if (kind.rfind("import/", 0) == 0) return "an imported " + kind.substr(7) + " profile";
  return "a '" + kind + "' profile";
}

std::string KindMismatch(const profile::Profile& before, const profile::Profile& after) {
  const std::string& a = before.meta.kind;
  const std::string& b = after.meta.kind;
  if (a.empty() || b.empty() || a == b) return "";
  // Per-op profiles of a model compare whatever runtime measured them: the built-in engine
  // ("profile") and imported ones ("import/ort", "import/tensorrt", ...), joined to ONNX nodes.
  auto per_op = [](const std::string& k) {
    return k == "profile" ||
           (k.rfind("import/", 0) == 0 && k != "import/perf-script" && k != "import/nsys");
  };
  if (per_op(a) && per_op(b)) return "";
  return "before is " + KindInWords(a) + " but after is " + KindInWords(b) +
         ": their times measure different things";
}

namespace {

// One side's layers: name -> (its nodes, its time), in profile order.
struct Layer {
  std::string name;
  std::vector<std::string> nodes;
  double ms = 0;
};

std::vector<Layer> LayersOf(const profile::Profile& p) {
  std::vector<Layer> out;
  std::map<std::string, size_t> at;
  for (const auto& op : p.ops) {
    std::string layer = op.name;
    std::vector<std::string> nodes = op.source_nodes;
    if (nodes.empty()) {
      nodes = {op.name};
      if (op.status == profile::OpStatus::kFused && !op.step.empty()) layer = op.step;
    }
    auto [it, fresh] = at.emplace(layer, out.size());
    if (fresh) out.push_back({layer, {}, 0});
    Layer& l = out[it->second];
    l.nodes.insert(l.nodes.end(), nodes.begin(), nodes.end());
    l.ms += OpMs(op);
  }
  return out;
}

std::vector<GroupDelta> CompareGroups(const profile::Profile& before,
                                      const profile::Profile& after) {
  std::vector<Layer> lb = LayersOf(before), la = LayersOf(after);
  // Union-find over layers (before first, then after), joined through the nodes they share.
  std::vector<size_t> parent(lb.size() + la.size());
  for (size_t i = 0; i < parent.size(); ++i) parent[i] = i;
  std::function<size_t(size_t)> find = [&](size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  std::map<std::string, size_t> owner;  // node -> a layer that has it
  auto layer_at = [&](size_t i) -> const Layer& {
    return i < lb.size() ? lb[i] : la[i - lb.size()];
  };
  for (size_t i = 0; i < parent.size(); ++i)
    for (const std::string& n : layer_at(i).nodes) {
      auto [it, fresh] = owner.emplace(n, i);
      if (!fresh) parent[find(i)] = find(it->second);
    }
  std::map<size_t, GroupDelta> groups;
  std::map<size_t, std::set<std::string>> nodes;
  for (size_t i = 0; i < parent.size(); ++i) {
    GroupDelta& g = groups[find(i)];
    const Layer& l = layer_at(i);
    (i < lb.size() ? g.before_layers : g.after_layers).push_back(l.name);
    (i < lb.size() ? g.before_ms : g.after_ms) += l.ms;
    nodes[find(i)].insert(l.nodes.begin(), l.nodes.end());
  }
  std::vector<GroupDelta> out;
  for (auto& [root, g] : groups) {
    if (g.before_layers.empty() || g.after_layers.empty()) continue;
    std::set<std::string> b(g.before_layers.begin(), g.before_layers.end()),
        a(g.after_layers.begin(), g.after_layers.end());
    if (b == a) continue;  // the same layers on both sides: the rows compare one to one
    g.nodes.assign(nodes[root].begin(), nodes[root].end());
    g.delta_ms = g.after_ms - g.before_ms;
    g.delta_pct = g.before_ms > 0 ? g.delta_ms / g.before_ms * 100 : 0;
    out.push_back(std::move(g));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
    return std::fabs(x.delta_ms) > std::fabs(y.delta_ms);
  });
  return out;
}

}  // namespace

ProfileDiff DiffProfiles(const profile::Profile& before, const profile::Profile& after) {
  ProfileDiff d;
  d.before_source = before.meta.source;
  d.after_source = after.meta.source;
  if (std::string kinds = KindMismatch(before, after); !kinds.empty())
    d.notes.push_back(kinds + " (compared anyway)");
  if (!before.ops.empty() && !after.ops.empty()) {
    std::set<std::string> names;
    for (const auto& op : before.ops) names.insert(op.name);
    bool common = false;
    for (const auto& op : after.ops) common = common || names.count(op.name);
    if (!common)
      d.notes.push_back(
          "no node name in common: these look like profiles of different models, so "
          "the per-node rows only list what each side has");
  }
  if (!before.meta.source.empty() && !after.meta.source.empty() &&
      before.meta.source != after.meta.source && before.meta.kind != "profile")
    d.notes.push_back(
        fmt::format("different programs ('{}' vs '{}'): the change includes whatever "
                    "differs between them",
                    before.meta.source, after.meta.source));
  if (!before.meta.cpu_model.empty() && !after.meta.cpu_model.empty() &&
      before.meta.cpu_model != after.meta.cpu_model)
    d.notes.push_back(
        fmt::format("profiles come from different CPUs ('{}' vs '{}'): the change "
                    "mixes the code change with the machine change",
                    before.meta.cpu_model, after.meta.cpu_model));
  if (before.meta.threads != after.meta.threads && before.meta.threads > 0 &&
      after.meta.threads > 0)
    d.notes.push_back(
        fmt::format("thread count differs: {} vs {}", before.meta.threads, after.meta.threads));
  if (before.meta.build_type != after.meta.build_type && !before.meta.build_type.empty() &&
      !after.meta.build_type.empty())
    d.notes.push_back("opscope build types differ: " + before.meta.build_type + " vs " +
                      after.meta.build_type);

  // End to end.
  E2EDelta& e = d.e2e;
  if (!before.e2e.runs_ms.empty() && !after.e2e.runs_ms.empty()) {
    e.available = true;
    e.basis = "end-to-end runs";
    e.before_ms = Trimmed(before.e2e.runs_ms);
    e.after_ms = Trimmed(after.e2e.runs_ms);
    e.runs_before = before.e2e.runs_ms.size();
    e.runs_after = after.e2e.runs_ms.size();
    if (before.e2e.runs_ms.size() >= 2 && after.e2e.runs_ms.size() >= 2) {
      e.has_ci = true;
      BootstrapChangeCi(before.e2e.runs_ms, after.e2e.runs_ms, &e.ci_low_pct, &e.ci_high_pct);
      e.significant = e.ci_low_pct > 0 || e.ci_high_pct < 0;
      e.weak_ci = std::min(e.runs_before, e.runs_after) < kMinRunsForSolidCi;
      if (e.weak_ci)
        d.notes.push_back(fmt::format(
            "the 95% CI comes from {} runs before and {} after: with fewer than {} runs per side "
            "it is weak (too narrow); measure more runs",
            e.runs_before, e.runs_after, kMinRunsForSolidCi));
    } else {
      d.notes.push_back("fewer than 2 runs on one side: no confidence interval");
    }
  } else {
    double sb = 0, sa = 0;
    for (const auto& op : before.ops) sb += OpMs(op);
    for (const auto& op : after.ops) sa += OpMs(op);
    if (sb > 0 && sa > 0) {
      e.available = true;
      e.basis = "sum of ops";
      e.before_ms = sb;
      e.after_ms = sa;
      d.notes.push_back(
          "no per-run end-to-end times: comparing the sums of op times, without a "
          "confidence interval");
    }
  }
  if (e.available && e.before_ms > 0) {
    e.delta_pct = (e.after_ms - e.before_ms) / e.before_ms * 100.0;
    e.speedup = e.after_ms > 0 ? e.before_ms / e.after_ms : 0;
  }

  // Nodes.
  std::map<std::string, const profile::OpRecord*> after_by_name;
  for (const auto& op : after.ops) after_by_name[op.name] = &op;
  std::map<std::string, OpTypeDelta> types;
  for (const auto& op : before.ops) {
    NodeDelta n;
    n.name = op.name;
    n.op_type = op.op_type;
    n.before_ms = OpMs(op);
    n.shape_before = OutShape(op);
    OpTypeDelta& t = types[op.op_type];
    t.count_before++;
    t.before_ms += n.before_ms;
    auto it = after_by_name.find(op.name);
    if (it == after_by_name.end()) {
      n.change = "disappeared";
    } else {
      const profile::OpRecord& b = *it->second;
      n.change = "changed";
      n.after_ms = OpMs(b);
      n.shape_after = OutShape(b);
      n.shape_changed = n.shape_before != n.shape_after || InShape(op) != InShape(b);
      if (b.op_type != op.op_type) n.op_type = op.op_type + "→" + b.op_type;
      after_by_name.erase(it);
    }
    n.delta_ms = n.after_ms - n.before_ms;
    n.delta_pct = n.before_ms > 0 ? n.delta_ms / n.before_ms * 100 : 0;
    d.nodes.push_back(std::move(n));
  }
  for (const auto& op : after.ops) {
    OpTypeDelta& t = types[op.op_type];
    t.count_after++;
    t.after_ms += OpMs(op);
    if (!after_by_name.count(op.name)) continue;
    NodeDelta n;
    n.name = op.name;
    n.op_type = op.op_type;
    n.change = "appeared";
    n.after_ms = OpMs(op);
    n.shape_after = OutShape(op);
    n.delta_ms = n.after_ms;
    d.nodes.push_back(std::move(n));
  }
  d.groups = CompareGroups(before, after);
  if (!d.groups.empty()) {
    std::set<std::string> grouped_before, grouped_after;
    for (const auto& g : d.groups) {
      grouped_before.insert(g.before_layers.begin(), g.before_layers.end());
      grouped_after.insert(g.after_layers.begin(), g.after_layers.end());
    }
    std::erase_if(d.nodes, [&](const NodeDelta& n) {
      return (n.change == "disappeared" && grouped_before.count(n.name)) ||
             (n.change == "appeared" && grouped_after.count(n.name));
    });
  }
  SortByAbs(d.nodes);
  for (auto& [name, t] : types) {
    t.op_type = name;
    t.change = t.count_before == 0 ? "new" : t.count_after == 0 ? "gone" : "changed";
    t.delta_ms = t.after_ms - t.before_ms;
    t.delta_pct = t.before_ms > 0 ? t.delta_ms / t.before_ms * 100 : 0;
    d.op_types.push_back(t);
  }
  std::stable_sort(d.op_types.begin(), d.op_types.end(), [](const auto& a, const auto& b) {
    return std::fabs(a.delta_ms) > std::fabs(b.delta_ms);
  });

  // Ranges, by path, time per measured run.
  if (!before.ranges.empty() || !after.ranges.empty()) {
    RangeReport rb = SummarizeRanges(before), ra = SummarizeRanges(after);
    std::map<std::string, const RangeSummary*> amap;
    for (const auto& r : ra.ranges) amap[r.path] = &r;
    for (const auto& r : rb.ranges) {
      NodeDelta n;
      n.name = r.path;
      n.op_type = r.domain;
      n.before_ms = r.per_run_ms;
      auto it = amap.find(r.path);
      if (it == amap.end()) {
        n.change = "disappeared";
      } else {
        n.change = "changed";
        n.after_ms = it->second->per_run_ms;
        amap.erase(it);
      }
      n.delta_ms = n.after_ms - n.before_ms;
      n.delta_pct = n.before_ms > 0 ? n.delta_ms / n.before_ms * 100 : 0;
      d.ranges.push_back(std::move(n));
    }
    for (const auto& r : ra.ranges) {
      if (!amap.count(r.path)) continue;
      NodeDelta n;
      n.name = r.path;
      n.op_type = r.domain;
      n.change = "appeared";
      n.after_ms = r.per_run_ms;
      n.delta_ms = r.per_run_ms;
      d.ranges.push_back(std::move(n));
    }
    SortByAbs(d.ranges);
  }

  d.memory = memory::DiffMemory(before, after);

  // Headline.
  if (e.available) {
    std::string ci =
        e.has_ci ? ", 95% CI " + BoundedSigned(e.ci_low_pct, 1) + "…" + BoundedPct(e.ci_high_pct)
                 : "";
    if (e.basis == "end-to-end runs")
      ci += fmt::format(", {} vs {} runs{}", e.runs_before, e.runs_after,
                        e.weak_ci ? ", weak CI" : "");
    std::string verdict;
    if (e.has_ci && !e.significant)
      verdict = "no significant change";
    else if (e.speedup >= 1)
      verdict = BoundedSigned(e.speedup, 2).substr(1) + "× faster";
    else
      verdict = BoundedSigned(e.speedup > 0 ? 1 / e.speedup : 0, 2).substr(1) + "× slower";
    d.headline = fmt::format(
        "{} {} → {} ({}{}): {}", e.basis == "sum of ops" ? "sum of ops" : "end-to-end",
        BoundedMs(e.before_ms), BoundedMs(e.after_ms), BoundedPct(e.delta_pct), ci, verdict);
  } else {
    d.headline = "no end-to-end or op times to compare";
  }
  return d;
}

static std::string Row(const NodeDelta& n, bool color) {
  std::string col = "", reset = color ? "\x1b[0m" : "";
  if (color) col = n.delta_ms < 0 ? "\x1b[32m" : n.delta_ms > 0 ? "\x1b[31m" : "";
  if (!color || col.empty()) reset = "";
  std::string pct = n.change == "changed" && n.before_ms > 0 ? BoundedPct(n.delta_pct) : n.change;
  std::string name = n.name.size() > 34 ? n.name.substr(0, 31) + "..." : n.name;
  std::string type = n.op_type.size() > 16 ? n.op_type.substr(0, 16) : n.op_type;
  std::string shape;
  if (n.shape_changed) shape = "  shape " + n.shape_before + " → " + n.shape_after;
  return fmt::format("{:<34} {:<16} {:>11} {:>11} {}{:>11} {:>12}{}{}\n", name, type,
                     n.change == "appeared" ? "-" : BoundedMs(n.before_ms),
                     n.change == "disappeared" ? "-" : BoundedMs(n.after_ms), col,
                     BoundedSigned(n.delta_ms, 3), pct, reset, shape);
}

std::string FormatDiff(const ProfileDiff& d, bool color, size_t max_rows) {
  std::string bold = color ? "\x1b[1m" : "", reset = color ? "\x1b[0m" : "";
  std::string out = bold + d.headline + reset + "\n";
  if (!d.before_source.empty() || !d.after_source.empty())
    out += fmt::format("  before: {}\n  after:  {}\n", d.before_source, d.after_source);
  for (const auto& n : d.notes) out += "  note: " + n + "\n";
  if (!d.op_types.empty()) {
    out += fmt::format("\n{:<24} {:>9} {:>11} {:>11} {:>11} {:>9}\n", "op type", "count", "before",
                       "after", "Δ ms", "Δ%");
    for (size_t i = 0; i < d.op_types.size() && i < max_rows; ++i) {
      const auto& t = d.op_types[i];
      out += fmt::format("{:<24} {:>9} {:>11} {:>11} {:>11} {:>9}\n", t.op_type,
                         fmt::format("{}→{}", t.count_before, t.count_after),
                         t.count_before ? BoundedMs(t.before_ms) : "-",
                         t.count_after ? BoundedMs(t.after_ms) : "-", BoundedSigned(t.delta_ms, 3),
                         t.change != "changed" ? t.change
                         : t.before_ms > 0     ? BoundedPct(t.delta_pct)
                                               : "-");
    }
  }
  auto table = [&](const char* title, const std::vector<NodeDelta>& rows) {
    if (rows.empty()) return;
    out += fmt::format("\n{:<34} {:<16} {:>11} {:>11} {:>11} {:>12}\n", title, "type", "before",
                       "after", "Δ ms", "Δ%");
    for (size_t i = 0; i < rows.size() && i < max_rows; ++i) out += Row(rows[i], color);
    if (rows.size() > max_rows)
      out += fmt::format("... {} more rows (--format json for all)\n", rows.size() - max_rows);
  };
  if (!d.groups.empty()) {
    out += fmt::format("\n{:<34} {:<16} {:>11} {:>11} {:>11} {:>12}\n", "layers compared as groups",
                       "", "before", "after", "Δ ms", "Δ%");
    auto cut = [](std::string s, size_t n) {
      return s.size() > n ? s.substr(0, n - 3) + "..." : s;
    };
    for (size_t i = 0; i < d.groups.size() && i < max_rows; ++i) {
      const GroupDelta& g = d.groups[i];
      std::vector<std::string> shown(g.nodes.begin(),
                                     g.nodes.begin() + std::min<size_t>(6, g.nodes.size()));
      out +=
          fmt::format("{:<34} {:<16} {:>11} {:>11} {:>11} {:>12}\n",
                      fmt::format("group of {} node(s)", g.nodes.size()), "",
                      BoundedMs(g.before_ms), BoundedMs(g.after_ms), BoundedSigned(g.delta_ms, 3),
                      g.before_ms > 0 ? BoundedPct(g.delta_pct) : "-");
      out += "  before: " + cut(Join(g.before_layers, " | "), 100) + "\n";
      out += "  after:  " + cut(Join(g.after_layers, " | "), 100) + "\n";
      out +=
          "  nodes:  " + Join(shown, ", ") + (g.nodes.size() > shown.size() ? ", ..." : "") + "\n";
    }
    if (d.groups.size() > max_rows)
      out +=
          fmt::format("... {} more groups (--format json for all)\n", d.groups.size() - max_rows);
  }
  table("node", d.nodes);
  table("range", d.ranges);
  int appeared = 0, disappeared = 0, reshaped = 0;
  for (const auto& n : d.nodes) {
    appeared += n.change == "appeared";
    disappeared += n.change == "disappeared";
    reshaped += n.shape_changed;
  }
  if (!d.nodes.empty())
    out += fmt::format("\n{} node(s) appeared, {} disappeared, {} changed shape\n", appeared,
                       disappeared, reshaped);
  out += memory::FormatMemoryDiff(d.memory, max_rows);
  return out;
}

std::string DiffToJson(const ProfileDiff& d) {
  auto node = [](const NodeDelta& n) {
    nlohmann::json j = {{"name", n.name},           {"op_type", n.op_type},
                        {"change", n.change},       {"before_ms", n.before_ms},
                        {"after_ms", n.after_ms},   {"delta_ms", n.delta_ms},
                        {"delta_pct", n.delta_pct}, {"shape_changed", n.shape_changed}};
    if (n.shape_changed) {
      j["shape_before"] = n.shape_before;
      j["shape_after"] = n.shape_after;
    }
    return j;
  };
  nlohmann::json j;
  j["schema"] = "opscope.diff/1";
  j["headline"] = d.headline;
  j["before"] = d.before_source;
  j["after"] = d.after_source;
  j["e2e"] = {{"available", d.e2e.available},
              {"basis", d.e2e.basis},
              {"before_ms", d.e2e.before_ms},
              {"after_ms", d.e2e.after_ms},
              {"delta_pct", d.e2e.delta_pct},
              {"speedup", d.e2e.speedup},
              {"runs_before", d.e2e.runs_before},
              {"runs_after", d.e2e.runs_after},
              {"has_ci", d.e2e.has_ci},
              {"weak_ci", d.e2e.weak_ci},
              {"ci95_low_pct", d.e2e.ci_low_pct},
              {"ci95_high_pct", d.e2e.ci_high_pct},
              {"significant", d.e2e.significant},
              {"ci_method", fmt::format("bootstrap of the trimmed mean, {} resamples, fixed seed",
                                        kBootstrapResamples)}};
  j["op_types"] = nlohmann::json::array();
  for (const auto& t : d.op_types)
    j["op_types"].push_back({{"op_type", t.op_type},
                             {"change", t.change},
                             {"count_before", t.count_before},
                             {"count_after", t.count_after},
                             {"before_ms", t.before_ms},
                             {"after_ms", t.after_ms},
                             {"delta_ms", t.delta_ms},
                             {"delta_pct", t.delta_pct}});
  j["nodes"] = nlohmann::json::array();
  for (const auto& n : d.nodes) j["nodes"].push_back(node(n));
  j["ranges"] = nlohmann::json::array();
  for (const auto& n : d.ranges) j["ranges"].push_back(node(n));
  if (!d.groups.empty()) {
    j["groups"] = nlohmann::json::array();
    for (const auto& g : d.groups)
      j["groups"].push_back({{"before_layers", g.before_layers},
                             {"after_layers", g.after_layers},
                             {"nodes", g.nodes},
                             {"before_ms", g.before_ms},
                             {"after_ms", g.after_ms},
                             {"delta_ms", g.delta_ms},
                             {"delta_pct", g.delta_pct}});
  }
  if (d.memory.available) memory::MemoryDiffToJson(d.memory, j["memory"]);
  j["notes"] = d.notes;
  return profile::DumpJson(j, 1) + "\n";
}

}  // namespace opscope::analysis
