// The diff page: `opscope diff A B -o diff.html`.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/diff_gate.h"
#include "analysis/format.h"
#include "base/strings.h"
#include "report/html/html_page.h"
#include "report/html/html_report.h"
#include "report/html/table_rows.h"

namespace opscope::report::html {
namespace {

// Bootstrap intervals cost about a millisecond per node; the page computes them for the nodes
// with the largest changes and says so for the rest.
constexpr size_t kMaxNodeIntervals = 600;

std::string Side(const char* which, const std::string& label, const profile::Profile& p) {
  std::string s = "<code>" + Escape(label) + "</code>";
  std::vector<std::string> bits;
  if (!p.meta.source.empty() && p.meta.source != label) bits.push_back(p.meta.source);
  if (!p.meta.kind.empty()) bits.push_back(p.meta.kind);
  if (!p.meta.host.empty())
    bits.push_back("host " + p.meta.host +
                   (p.meta.cpu_model.empty() ? "" : " (" + p.meta.cpu_model + ")"));
  if (p.meta.threads) bits.push_back(fmt::format("{} threads", p.meta.threads));
  if (!p.e2e.runs_ms.empty())
    bits.push_back(
        fmt::format("{} runs, median {}", p.e2e.runs_ms.size(), HumanMs(p.e2e.stats.median)));
  if (!p.meta.created.empty()) bits.push_back(p.meta.created);
  return std::string("<dt>") + which + "</dt><dd>" + s +
         (bits.empty() ? "" : " — " + Escape(Join(bits, ", "))) + "</dd>\n";
}

}  // namespace

std::string RenderDiffPage(const profile::Profile& before, const profile::Profile& after,
                           const analysis::ProfileDiff& d, const std::string& before_label,
                           const std::string& after_label) {
  std::string out = PageBegin("opscope diff: " + before_label + " → " + after_label);
  out += "<header>\n<h1>opscope — diff</h1>\n<dl class=\"meta\">\n" +
         Side("before", before_label, before) + Side("after", after_label, after) + "</dl>\n";
  const auto& e = d.e2e;
  std::string cls = !e.available                   ? "muted"
                    : (e.has_ci && !e.significant) ? "muted"
                    : e.delta_pct > 0              ? "bad"
                                                   : "good";
  out += "<p class=\"verdict " + cls + "\">" + Escape(d.headline) + "</p>\n";
  if (e.available && e.has_ci)
    out += "<p class=\"muted\">" +
           Escape(fmt::format(
               "Change of the trimmed mean ({}), 95% interval from a bootstrap of {} resamples of "
               "each "
               "side's runs (fixed seed): {}%…{}%{}.",
               e.basis, analysis::kBootstrapResamples, analysis::BoundedSigned(e.ci_low_pct, 1),
               analysis::BoundedSigned(e.ci_high_pct, 1),
               e.significant ? ", which excludes 0" : ", which includes 0: within the noise")) +
           "</p>\n";
  for (const auto& n : d.notes) out += "<p class=\"note\">note: " + Escape(n) + "</p>\n";
  if (before.e2e.runs_ms.size() >= 2 && after.e2e.runs_ms.size() >= 2)
    out += "<div class=\"charts\"><div><h3>before</h3>" +
           LatencyHistogram("latency-before", before.e2e.runs_ms) + "</div><div><h3>after</h3>" +
           LatencyHistogram("latency-after", after.e2e.runs_ms) + "</div></div>\n";
  out += "<nav><a href=\"#types\">op types</a><a href=\"#nodes\">nodes</a>";
  if (!d.ranges.empty()) out += "<a href=\"#ranges\">ranges</a>";
  if (d.memory.available) out += "<a href=\"#memory\">memory</a>";
  out += "</nav>\n</header>\n<main>\n";

  // Op types.
  if (!d.op_types.empty()) {
    std::vector<Bar> bars;
    for (const auto& t : d.op_types)
      bars.push_back(
          {t.op_type, t.delta_ms, analysis::BoundedSigned(t.delta_ms, 3) + " ms",
           fmt::format("{}: {} → {} ({} → {} nodes), {}", t.op_type, HumanMs(t.before_ms),
                       HumanMs(t.after_ms), t.count_before, t.count_after,
                       t.change != "changed" ? t.change : analysis::BoundedPct(t.delta_pct)),
           ""});
    out +=
        "<section id=\"types\">\n<h2>Change by op type</h2>\n<p class=\"muted\">Slower to the "
        "right (red), faster "
        "to the left (green); per run.</p>\n" +
        BarChart("optype-delta-chart", "change by op type", bars, 20) + "</section>\n";
  }

  // Nodes, regressions first.
  std::map<std::string, const profile::OpRecord*> bmap, amap;
  for (const auto& op : before.ops) bmap[op.name] = &op;
  for (const auto& op : after.ops) amap[op.name] = &op;
  struct NodeRow {
    const analysis::NodeDelta* n;
    analysis::ChangeCi ci;
    bool computed = false;
    int rank = 2;  // 0 slower beyond the noise, 1 other changes, 2 the rest
  };
  std::vector<NodeRow> rows;
  size_t computed = 0, skipped = 0;
  for (const auto& n : d.nodes) {
    NodeRow r{&n, {}, false, 1};
    if (n.change == "changed") {
      auto b = bmap.find(n.name), a = amap.find(n.name);
      if (b != bmap.end() && a != amap.end()) {
        if (computed < kMaxNodeIntervals) {
          r.ci = analysis::NodeChangeCi(*b->second, *a->second);
          r.computed = true;
          computed += r.ci.has_ci;
        } else {
          ++skipped;
        }
      }
    }
    if (r.ci.has_ci && r.ci.low_pct > 0) r.rank = 0;
    rows.push_back(r);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const NodeRow& x, const NodeRow& y) {
    if (x.rank != y.rank) return x.rank < y.rank;
    if (x.rank == 0) return x.n->delta_ms > y.n->delta_ms;
    return false;  // d.nodes is already by |delta| descending
  });
  int slower = 0, faster = 0;
  for (const auto& r : rows) {
    slower += r.ci.has_ci && r.ci.low_pct > 0;
    faster += r.ci.has_ci && r.ci.high_pct < 0;
  }
  out += "<section id=\"nodes\">\n" + fmt::format("<h2>Nodes ({})</h2>\n", d.nodes.size());
  out += "<p>" +
         Escape(fmt::format(
             "{} node(s) slower and {} faster beyond the noise (95% interval of the change "
             "excludes 0); regressions first, then by the size of the change.",
             slower, faster)) +
         "</p>\n";
  if (skipped)
    out += fmt::format(
        "<p class=\"muted\">Intervals computed for the {} largest changes; {} smaller ones have "
        "none.</p>\n",
        kMaxNodeIntervals, skipped);
  out +=
      "<div class=\"controls js-only\"><input class=\"filter\" type=\"search\" "
      "placeholder=\"filter by node name or op "
      "type\" data-table=\"difftable\" data-count=\"difftable-count\" aria-label=\"filter "
      "nodes\"><span "
      "id=\"difftable-count\" class=\"muted\"></span></div>\n";
  const bool big = d.nodes.size() > 300;  // fixed layout, as the profile page's op table
  out += fmt::format(
      "<div class=\"tablewrap\"><table id=\"difftable\" class=\"sortable{}\" "
      "data-rows=\"{}\">\n{}<thead><tr><th>node</th>"
      "<th>op type</th><th>change</th><th class=\"num\" data-sort=\"num\">before</th><th "
      "class=\"num\" "
      "data-sort=\"num\">after</th><th class=\"num\" data-sort=\"num\">Δ ms</th><th class=\"num\" "
      "data-sort=\"num\">Δ%</th>"
      "<th class=\"num\" data-sort=\"num\">95% CI</th><th>verdict</th><th>before "
      "runs</th><th>after runs</th></tr></thead>"
      "\n<tbody>\n",
      big ? " fixed\" style=\"width:1300px" : "", d.nodes.size(),
      big ? "<colgroup><col style=\"width:320px\"><col style=\"width:130px\"><col "
            "style=\"width:90px\">"
            "<col style=\"width:90px\"><col style=\"width:90px\"><col style=\"width:80px\"><col "
            "style=\"width:70px\"><col style=\"width:130px\"><col style=\"width:120px\"><col "
            "style=\"width:90px\"><col style=\"width:90px\"></colgroup>\n"
          : "");
  std::vector<std::vector<Row>> units;
  units.reserve(rows.size());
  int i = 0;
  for (const auto& r : rows) {
    const auto& n = *r.n;
    std::string verdict, vcls;
    if (n.change != "changed")
      verdict = n.change;
    else if (!r.ci.has_ci)
      verdict = r.computed ? "no interval (< 2 runs)" : "no interval computed";
    else if (r.ci.low_pct > 0)
      verdict = "slower", vcls = "bad";
    else if (r.ci.high_pct < 0)
      verdict = "faster", vcls = "good";
    else
      verdict = "within noise", vcls = "muted";
    if (n.shape_changed) verdict += " · shape " + n.shape_before + " → " + n.shape_after;
    Row row{fmt::format("node-{}", i), "", "", "", n.name, n.op_type, i, {}};
    ++i;
    Cell name;
    name.kind = Cell::kName;
    name.text = n.name;
    row.cells.push_back(std::move(name));
    row.cells.push_back(TextCell(n.op_type));
    row.cells.push_back(TextCell(n.change));
    row.cells.push_back(n.change == "appeared" ? NumCell(-1, "-")
                                               : NumCell(n.before_ms, HumanMs(n.before_ms)));
    row.cells.push_back(n.change == "disappeared" ? NumCell(-1, "-")
                                                  : NumCell(n.after_ms, HumanMs(n.after_ms)));
    row.cells.push_back(NumCell(n.delta_ms, analysis::BoundedSigned(n.delta_ms, 3)));
    row.cells.push_back(n.change == "changed" && n.before_ms > 0
                            ? NumCell(n.delta_pct, analysis::BoundedPct(n.delta_pct))
                            : NumCell(0, "-"));
    row.cells.push_back(r.ci.has_ci
                            ? NumCell(r.ci.low_pct, analysis::BoundedSigned(r.ci.low_pct, 1) +
                                                        "%…" + analysis::BoundedPct(r.ci.high_pct))
                            : NumCell(0, "-"));
    row.cells.push_back(TextCell(verdict, vcls));
    auto b = bmap.find(n.name), a = amap.find(n.name);
    static const std::vector<double> kNone;
    row.cells.push_back(SparkCell(b != bmap.end() ? b->second->runs_ms : kNone,
                                  "before: per-run times", /*sort_key=*/false));
    row.cells.push_back(SparkCell(a != amap.end() ? a->second->runs_ms : kNone,
                                  "after: per-run times", /*sort_key=*/false));
    units.push_back({std::move(row)});
  }
  TableRows table = RenderTableRows(
      "difftable", units, "regressions first, then by the size of the change",
      "<code>opscope diff BEFORE.json AFTER.json --format json</code> (every node with its "
      "change).");
  out += table.body;
  out += "</tbody></table></div>\n" + table.after + "</section>\n";

  if (!d.ranges.empty()) {
    out += "<section id=\"ranges\">\n<h2>Ranges</h2>\n";
    out += fmt::format(
        "<div class=\"tablewrap\"><table id=\"rangedifftable\" class=\"sortable\" "
        "data-rows=\"{}\"><thead><tr>"
        "<th>range</th><th>domain</th><th>change</th><th class=\"num\" "
        "data-sort=\"num\">before</th><th "
        "class=\"num\" data-sort=\"num\">after</th><th class=\"num\" data-sort=\"num\">Δ "
        "ms</th><th "
        "class=\"num\" data-sort=\"num\">Δ%</th></tr></thead><tbody>\n",
        d.ranges.size());
    for (const auto& n : d.ranges)
      out += "<tr data-name=\"" + Escape(n.name) + "\"><td class=\"name\">" + Escape(n.name) +
             "</td><td>" + Escape(n.op_type) + "</td><td>" + Escape(n.change) + "</td>" +
             TdNum(n.before_ms, HumanMs(n.before_ms)) + TdNum(n.after_ms, HumanMs(n.after_ms)) +
             TdNum(n.delta_ms, analysis::BoundedSigned(n.delta_ms, 3)) +
             TdNum(n.delta_pct, n.before_ms > 0 ? analysis::BoundedPct(n.delta_pct) : "-") +
             "</tr>\n";
    out += "</tbody></table></div>\n</section>\n";
  }
  if (d.memory.available) {
    out += "<section id=\"memory\">\n<h2>Memory</h2>\n<p>" + Escape(d.memory.peak.name) + "</p>\n";
    auto rows = [&](const char* id, const char* what,
                    const std::vector<const memory::BytesDelta*>& list) {
      out += fmt::format(
          "<div class=\"tablewrap\"><table id=\"{}\" class=\"sortable\"><thead><tr><th>{}</th>"
          "<th>change</th><th class=\"num\" data-sort=\"num\">before</th><th class=\"num\" "
          "data-sort=\"num\">after</th><th class=\"num\" data-sort=\"num\">Δ</th></tr></thead>"
          "<tbody>\n",
          id, what);
      for (const memory::BytesDelta* x : list)
        out += "<tr><td class=\"name\">" + Escape(x->name) + "</td><td>" + Escape(x->change) +
               "</td>" + TdNum(x->before, HumanBytes(x->before)) +
               TdNum(x->after, HumanBytes(x->after)) +
               TdNum(x->delta, (x->delta > 0 ? "+" : "") + HumanBytes(x->delta)) + "</tr>\n";
      out += "</tbody></table></div>\n";
    };
    const memory::MemoryDiff& m = d.memory;
    rows("memtotals", "",
         {&m.peak, &m.arena, &m.weights, &m.packed_weights, &m.workspace, &m.peak_rss});
    std::vector<const memory::BytesDelta*> tensors, steps;
    for (const auto& x : m.at_peak) tensors.push_back(&x);
    for (const auto& x : m.steps)
      if (x.delta != 0) steps.push_back(&x);
    out += "<h3>Tensors alive at the peak</h3>\n";
    rows("memtensordiff", "tensor", tensors);
    out += "<h3>Live bytes by step</h3>\n";
    rows("memstepdiff", "step", steps);
    out += "</section>\n";
  }
  out += "</main>\n<footer>opscope.diff · " +
         Escape(fmt::format("{} → {}", before_label, after_label)) + "</footer>\n";
  out += PageEnd();
  return out;
}

}  // namespace opscope::report::html
