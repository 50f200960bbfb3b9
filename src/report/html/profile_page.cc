// The profile page and the "html" format registration.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "analysis/hygiene.h"
#include "analysis/machine.h"
#include "analysis/range_stats.h"
#include "analysis/roofline.h"
#include "base/strings.h"
#include "profile/attached.h"
#include "report/format.h"
#include "report/html/charts.h"
#include "report/html/html_page.h"
#include "report/html/html_report.h"
#include "report/html/table_rows.h"

namespace opscope::report::html {

std::vector<std::string> ScopeParts(const std::string& node_name) {
  const char sep = node_name.find('/') != std::string::npos ? '/' : '.';
  std::vector<std::string> parts = Split(node_name, sep, /*skip_empty=*/true);
  if (parts.empty()) parts.push_back(node_name.empty() ? "(unnamed)" : node_name);
  return parts;
}

std::string StageOf(const std::string& node_name) {
  auto parts = ScopeParts(node_name);
  return parts.size() > 1 ? parts[0] : "";
}

namespace {

double OpMs(const profile::OpRecord& op) {
  return op.status == profile::OpStatus::kFolded ? 0 : op.stats.trimmed_mean;
}

std::string Pct(double frac) { return fmt::format("{:.1f}%", frac * 100); }
std::string Rate(double v) { return v > 0 ? fmt::format("{:.2f}", v) : "-"; }

std::string Header(const profile::Profile& p) {
  const auto& m = p.meta;
  std::string out = "<header>\n";
  std::string what = m.kind.empty() ? "profile" : m.kind;
  out += "<h1>opscope — " + Escape(what) + " of " +
         Escape(m.source.empty() ? "(unknown source)" : m.source) + "</h1>\n";
  out += "<dl class=\"meta\">\n";
  auto row = [&](const std::string& k, const std::string& v_html) {
    if (!v_html.empty()) out += "<dt>" + Escape(k) + "</dt><dd>" + v_html + "</dd>\n";
  };
  row(m.kind == "profile" ? "model" : "command", "<code>" + Escape(m.source) + "</code>");
  std::string host = m.host;
  if (!m.cpu_model.empty()) host += ": " + m.cpu_model;
  if (m.logical_cpus) host += fmt::format(", {} logical CPUs", m.logical_cpus);
  if (!m.governor.empty()) host += ", governor " + m.governor;
  if (m.cpu_mhz > 0) host += fmt::format(", {:.0f} MHz", m.cpu_mhz);
  if (!m.kernel.empty()) host += ", Linux " + m.kernel;
  if (!m.arch.empty()) host += " (" + m.arch + ")";
  row("host", Escape(host));
  std::string build = "opscope " + m.tool_version;
  if (!m.build_type.empty()) build += ", " + m.build_type + " build";
  const profile::Verdicts verdicts = analysis::VerdictsOf(p);
  std::string build_html = Escape(build);
  if (!m.build_type.empty() && verdicts.build != "release")
    build_html +=
        " <span class=\"bad\">(not a release build: its times are not representative)</span>";
  if (m.target) {
    std::string t = "profiled program: " + m.target->kind;
    if (!m.target->opt_level.empty()) t += " (" + m.target->opt_level + ")";
    build_html += "; " + Escape(t);
  }
  row("build", build_html);
  if (m.threads > 0) row("threads", std::to_string(m.threads));
  if (m.runs > 0 || m.warmup > 0)
    row("runs", Escape(fmt::format("{} measured, {} warm-up", m.runs, m.warmup)));
  row("created", Escape(m.created));
  out += "</dl>\n";

  if (profile::IsAttachedSpan(p) && p.e2e.runs_ms.size() == 1) {
    out += "<div class=\"latency\"><div>\n<p><b>Attached span</b>: " + Ms(p.e2e.runs_ms[0]) +
           " of " + Escape(p.meta.attached) +
           " (one span of a running program: no run-to-run statistics)</p>\n</div></div>\n";
  } else if (!p.e2e.runs_ms.empty()) {
    const Stats& s = p.e2e.stats;
    std::string cls = verdicts.noise;
    std::replace(cls.begin(), cls.end(), ' ', '-');
    out += "<div class=\"latency\"><div>\n";
    out += "<p><b>End-to-end latency</b>: median " + Ms(s.median) + ", trimmed mean " +
           Ms(s.trimmed_mean) + ", min " + Ms(s.min) + ", max " + Ms(s.max) + ", p90 " + Ms(s.p90) +
           Escape(fmt::format(", CV {:.1f}%", s.cv * 100)) +
           Escape(fmt::format("; {:.1f} inferences/s", p.e2e.throughput_per_s)) + "</p>\n";
    out += "<p>Noise: <span class=\"verdict " + Escape(cls) + "\">" + Escape(verdicts.noise) +
           "</span> — " + Escape(verdicts.noise_words) + "</p>\n";
    if (!verdicts.throttling.empty())
      out += std::string("<p class=\"") + (verdicts.throttled ? "bad" : "muted") +
             "\">Clocks: " + Escape(verdicts.throttling) + "</p>\n";
    out += "</div>\n" + LatencyHistogram("latency-chart", p.e2e.runs_ms) + "</div>\n";
  }
  if (p.overhead) {
    const auto& ov = *p.overhead;
    const bool measured = ov.measurable && ov.pct > 0;
    std::string t = measured ? fmt::format("{:+.2f}%", ov.pct)
                             : std::string("not measurable (below the noise)");
    t += " (median " + HumanMs(ov.observed_median_ms) + " with the per-op observer, " +
         HumanMs(ov.baseline_median_ms) + " without";
    if (ov.noise_low_pct != 0 || ov.noise_high_pct != 0)
      t += fmt::format("; 95% interval of the paired difference {:+.2f}%…{:+.2f}%",
                       ov.noise_low_pct, ov.noise_high_pct);
    t += "; " + ov.method + ")";
    if (ov.counters_pct != 0) t += fmt::format("; per-op counters add {:+.2f}%", ov.counters_pct);
    out += "<p><b>opscope overhead</b>: " + Escape(t) + "</p>\n";
  }
  for (const auto& d : m.degradations) out += "<p class=\"note\">note: " + Escape(d) + "</p>\n";
  return out;
}

std::string Findings(const profile::Profile& p, const std::map<std::string, int>& op_index) {
  std::string out = "<section id=\"findings\">\n";
  out += fmt::format("<h2>Findings ({})</h2>\n", p.findings.size());
  if (p.findings.empty())
    out += "<p class=\"muted\">No rule found anything to report in this profile.</p>\n";
  for (const auto& f : p.findings) {
    const std::string severity = profile::SeverityName(f.severity);
    out += "<div class=\"finding " + severity + "\">\n";
    out += "<p><span class=\"sev\">" + severity + "</span><b>" + Escape(f.title) +
           "</b> <span class=\"rule\">" + Escape(f.rule) + "</span></p>\n";
    if (!f.evidence.empty()) out += "<p><i>evidence:</i> " + Escape(f.evidence) + "</p>\n";
    if (!f.suggestion.empty()) out += "<p><i>do:</i> " + Escape(f.suggestion) + "</p>\n";
    if (!f.ops.empty()) {
      std::vector<std::string> links;
      for (const auto& name : f.ops) {
        auto it = op_index.find(name);
        links.push_back(it == op_index.end() ? "<code>" + Escape(name) + "</code>"
                                             : fmt::format("<a href=\"#op-{}\"><code>{}</code></a>",
                                                           it->second, Escape(name)));
      }
      out += "<p><i>ops:</i> " + Join(links, ", ") + "</p>\n";
    }
    out += "</div>\n";
  }
  return out + "</section>\n";
}

struct Columns {
  std::vector<std::string> counters;  // per-op counter events, in name order
  bool roofline = false;
};

// One op row (or the row of a fused step when `group` is set).
struct RowData {
  std::string name, type, status, shapes;
  double median = 0, trimmed = 0, share = 0, cv = 0, flops = 0, bytes = 0;
  std::vector<double> runs;
  std::string bound;
  std::map<std::string, double> counters;
};

std::vector<Cell> RowCells(const RowData& r, const Columns& c, Cell index_cell) {
  std::vector<Cell> out;
  out.push_back(std::move(index_cell));
  Cell name;
  name.kind = Cell::kName;
  name.text = r.name;
  out.push_back(std::move(name));
  out.push_back(TextCell(r.type));
  out.push_back(TextCell(r.status));
  out.push_back(NumCell(r.median, HumanMs(r.median)));
  out.push_back(NumCell(r.trimmed, HumanMs(r.trimmed)));
  out.push_back(NumCell(r.share, Pct(r.share)));
  out.push_back(SparkCell(r.runs, fmt::format("{} runs: CV {:.1f}%", r.runs.size(), r.cv * 100),
                          /*sort_key=*/true, r.cv));
  out.push_back(NumCell(r.cv, r.runs.size() >= 2 ? fmt::format("{:.1f}%", r.cv * 100) : "-"));
  const double sec = r.trimmed / 1e3;
  out.push_back(NumCell(r.flops, HumanCount(r.flops)));
  out.push_back(NumCell(r.bytes, HumanBytes(r.bytes)));
  const double gflops = sec > 0 && r.flops > 0 ? r.flops / sec / 1e9 : 0;
  const double gbps = sec > 0 && r.bytes > 0 ? r.bytes / sec / 1e9 : 0;
  out.push_back(NumCell(gflops, Rate(gflops)));
  out.push_back(NumCell(gbps, Rate(gbps)));
  const double intensity = r.bytes > 0 ? r.flops / r.bytes : 0;
  out.push_back(NumCell(intensity, intensity > 0 ? fmt::format("{:.2f}", intensity) : "-"));
  if (c.roofline) out.push_back(TextCell(r.bound));
  for (const auto& ev : c.counters) {
    auto it = r.counters.find(ev);
    out.push_back(it == r.counters.end() ? NumCell(-1, "")
                                         : NumCell(it->second, HumanCount(it->second)));
  }
  out.push_back(TextCell(r.shapes, "mono"));
  return out;
}

std::string OpTable(const profile::Profile& p) {
  std::string out = "<section id=\"ops\">\n";
  Columns cols;
  std::set<std::string> events;
  for (const auto& op : p.ops)
    for (const auto& [k, v] : op.counters) events.insert(k);
  cols.counters.assign(events.begin(), events.end());
  if (cols.counters.size() > 8) cols.counters.resize(8);
  // The verdicts Diagnose stored (OpRecord::roofline); a profile written before they were stored
  // is classified here from its ceilings.
  std::vector<std::string> bound(p.ops.size());
  bool stored = false;
  for (size_t i = 0; i < p.ops.size(); ++i)
    if (p.ops[i].roofline) {
      stored = true;
      bound[i] = profile::BoundClassName(p.ops[i].roofline->bound);
    }
  if (stored) {
    cols.roofline = true;
  } else if (const auto& c = p.meta.machine; c && c->Usable()) {
    cols.roofline = true;
    for (const auto& pt : analysis::ComputeRoofline(p, *c))
      if (pt.op >= 0 && static_cast<size_t>(pt.op) < bound.size())
        bound[pt.op] = analysis::BoundClassName(pt.cls);
  }

  // Fused steps (several source nodes in one execution step) become expandable groups.
  std::map<std::string, std::vector<int>> steps;
  for (size_t i = 0; i < p.ops.size(); ++i)
    if (!p.ops[i].step.empty()) steps[p.ops[i].step].push_back(static_cast<int>(i));
  struct Unit {
    std::string step;  // "" for a single op
    std::vector<int> ops;
    double share = 0;
  };
  std::vector<Unit> units;
  std::set<std::string> placed;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const auto& op = p.ops[i];
    auto it = op.step.empty() ? steps.end() : steps.find(op.step);
    if (it != steps.end() && it->second.size() >= 2) {
      if (!placed.insert(op.step).second) continue;
      Unit u{op.step, it->second, 0};
      for (int k : u.ops) u.share += p.ops[k].share;
      units.push_back(u);
    } else {
      units.push_back({"", {static_cast<int>(i)}, op.share});
    }
  }
  std::stable_sort(units.begin(), units.end(),
                   [](const Unit& a, const Unit& b) { return a.share > b.share; });
  int groups = 0;
  for (const auto& u : units) groups += !u.step.empty();

  out += fmt::format("<h2>Operators ({} nodes{})</h2>\n", p.ops.size(),
                     groups ? fmt::format(", {} fused steps", groups) : "");
  out +=
      "<p class=\"muted\">Sorted by share of the summed per-op trimmed means. Times are per run. ";
  if (groups)
    out +=
        "A fused step (nodes that ran as one primitive) is one row with its summed time; its "
        "source nodes "
        "are listed under it with the share attributed to each. ";
  out +=
      "<span class=\"js-only\">Click a column to sort; the filter matches node names and op "
      "types.</span></p>\n";
  out +=
      "<div class=\"controls js-only\"><input class=\"filter\" type=\"search\" "
      "placeholder=\"filter by node name or op "
      "type\" data-table=\"optable\" data-count=\"optable-count\" aria-label=\"filter operators\">";
  if (groups)
    out +=
        "<button type=\"button\" class=\"expand-all\" data-table=\"optable\">expand all</button>";
  out += "<span id=\"optable-count\" class=\"muted\"></span></div>\n";
  // Column label, numeric, width in px (used by the fixed layout of large tables).
  std::vector<std::tuple<std::string, bool, int>> heads = {
      {"#", true, 48},      {"node", false, 300},  {"op type", false, 130}, {"status", false, 130},
      {"median", true, 84}, {"trimmed", true, 84}, {"share", true, 60},     {"runs", true, 84},
      {"CV", true, 56},     {"FLOPs", true, 72},   {"bytes", true, 80},     {"GFLOP/s", true, 72},
      {"GB/s", true, 64},   {"FLOP/B", true, 64}};
  if (cols.roofline) heads.emplace_back("bound", false, 110);
  for (const auto& ev : cols.counters) heads.emplace_back(ev + "/run", true, 90);
  heads.emplace_back("outputs", false, 160);
  // Above kFixedLayoutRows rows the table gets a fixed layout: the browser then sizes columns
  // from the first row instead of measuring every cell (several times faster to open at 5,000
  // ops, docs/html-report.md).
  constexpr size_t kFixedLayoutRows = 300;
  const bool fixed = p.ops.size() + groups > kFixedLayoutRows;
  int total_w = 0;
  for (const auto& h : heads) total_w += std::get<2>(h);
  out += fmt::format(
      "<div class=\"tablewrap\"><table id=\"optable\" class=\"sortable{}\" data-rows=\"{}\"{}>\n",
      fixed ? " fixed" : "", p.ops.size() + groups,
      fixed ? fmt::format(" style=\"width:{}px\"", total_w) : "");
  if (fixed) {
    out += "<colgroup>";
    for (const auto& h : heads) out += fmt::format("<col style=\"width:{}px\">", std::get<2>(h));
    out += "</colgroup>\n";
  }
  out += "<thead><tr>";
  for (const auto& [label, num, w] : heads)
    out += std::string(num ? "<th class=\"num\" data-sort=\"num\">" : "<th>") + Escape(label) +
           "</th>";
  out += "</tr></thead>\n<tbody>\n";

  auto op_row = [&](int i) {
    const auto& op = p.ops[i];
    RowData r;
    r.name = op.name;
    r.type = op.op_type;
    r.status = profile::OpStatusName(op.status);
    if (op.status == profile::OpStatus::kFused) r.status += " · " + op.attribution;
    if (!op.layout.empty()) r.status += " · " + op.layout;
    std::vector<std::string> sh;
    for (const auto& s : op.output_shapes) sh.push_back(ShapeToString(s));
    r.shapes = Join(sh, ", ");
    r.median = op.stats.median;
    r.trimmed = OpMs(op);
    r.share = op.share;
    r.cv = op.stats.cv;
    r.flops = op.flops;
    r.bytes = op.bytes;
    r.runs = op.runs_ms;
    r.bound = bound[i];
    r.counters = op.counters;
    return r;
  };
  // Rows of the units: the first kInitialUnits become HTML, the rest one JSON block that page.js
  // builds rows from when they are scrolled to, filtered, sorted or linked to.
  std::vector<std::vector<Row>> unit_rows;
  unit_rows.reserve(units.size());
  int g = 0;
  for (const auto& u : units) {
    std::vector<Row> rows;
    if (u.step.empty()) {
      int i = u.ops[0];
      RowData r = op_row(i);
      Row row{fmt::format("op-{}", i), "", "", "", r.name, r.type, i, {}};
      row.cells = RowCells(r, cols, NumCell(i, std::to_string(i)));
      rows.push_back(std::move(row));
      unit_rows.push_back(std::move(rows));
      continue;
    }
    ++g;
    RowData s;
    s.name = u.step;
    std::vector<std::string> types;
    size_t nruns = p.ops[u.ops[0]].runs_ms.size();
    bool same_runs = true;
    for (int k : u.ops) same_runs = same_runs && p.ops[k].runs_ms.size() == nruns;
    if (same_runs) s.runs.assign(nruns, 0.0);
    for (int k : u.ops) {
      const auto& op = p.ops[k];
      if (std::find(types.begin(), types.end(), op.op_type) == types.end())
        types.push_back(op.op_type);
      s.median += op.stats.median;
      s.trimmed += OpMs(op);
      s.share += op.share;
      s.flops += op.flops;
      s.bytes += op.bytes;
      if (same_runs)
        for (size_t j = 0; j < nruns; ++j) s.runs[j] += op.runs_ms[j];
    }
    s.type = Join(types, "+");
    s.status = fmt::format("step of {} nodes", u.ops.size());
    if (s.runs.size() >= 2) s.cv = ComputeStats(s.runs).cv;
    std::string names;
    for (int k : u.ops) names += p.ops[k].name + "\n";
    const std::string gid = fmt::format("g{}", g);
    Row head{fmt::format("step-{}", g), "group", gid, "", s.name + "\n" + names, s.type, -1, {}};
    head.cells = RowCells(s, cols, NumCell(p.ops[u.ops[0]].index, ""));
    rows.push_back(std::move(head));
    for (int k : u.ops) {
      RowData r = op_row(k);
      Row child{fmt::format("op-{}", k), "child", "", gid, r.name, r.type, k, {}};
      child.cells = RowCells(r, cols, NumCell(k, std::to_string(k)));
      rows.push_back(std::move(child));
    }
    unit_rows.push_back(std::move(rows));
  }
  TableRows rows = RenderTableRows(
      "optable", unit_rows, "by share of time",
      "<code>opscope report PROFILE.json --format csv</code> (every node, one line each; "
      "<code>-o ops.csv</code> to write a file) or <code>opscope report PROFILE.json --format "
      "table</code>.");
  out += rows.body;
  out += "</tbody></table></div>\n";
  out += rows.after;
  int folded = 0;
  for (const auto& op : p.ops) folded += op.status == profile::OpStatus::kFolded;
  if (folded)
    out += fmt::format("<p class=\"muted\">{} node(s) folded at load time (zero run time).</p>\n",
                       folded);
  return out + "</section>\n";
}

std::string Breakdown(const profile::Profile& p) {
  std::map<std::string, std::pair<double, int>> by_type, by_stage;
  double total = 0;
  for (const auto& op : p.ops) {
    double ms = OpMs(op);
    total += ms;
    auto& t = by_type[op.op_type];
    t.first += ms;
    t.second++;
    std::string st = StageOf(op.name);
    auto& s = by_stage[st.empty() ? "(no scope)" : st];
    s.first += ms;
    s.second++;
  }
  if (total <= 0) return "";
  auto bars = [&](const std::map<std::string, std::pair<double, int>>& m) {
    std::vector<Bar> v;
    for (const auto& [k, a] : m)
      v.push_back({k, a.first, HumanMs(a.first) + fmt::format(" {:.1f}%", a.first / total * 100),
                   fmt::format("{}: {} per run, {:.1f}% of op time, {} node(s)", k,
                               HumanMs(a.first), a.first / total * 100, a.second),
                   ""});
    std::stable_sort(v.begin(), v.end(),
                     [](const Bar& a, const Bar& b) { return a.value > b.value; });
    return v;
  };
  std::string out =
      "<section id=\"breakdown\" class=\"deferred\">\n<h2>Where the time goes</h2>\n<div "
      "class=\"charts\">\n";
  out += "<div><h3>By op type</h3>\n" +
         BarChart("optype-chart", "time by op type", bars(by_type), 20, "other types") + "</div>\n";
  out += "<div><h3>By network stage</h3>\n";
  if (by_stage.size() == 1 && by_stage.count("(no scope)"))
    out +=
        "<p class=\"muted\">Node names carry no scope (<code>backbone/…</code> or "
        "<code>backbone.conv1</code>), so "
        "there are no stages to show.</p>\n";
  else
    out += BarChart("stage-chart", "time by network stage", bars(by_stage), 20, "other stages") +
           "<p class=\"muted\">A stage is the first scope component of the node name "
           "(<code>backbone/…</code>, "
           "<code>bev_pool.…</code>).</p>\n";
  out += "</div>\n</div>\n</section>\n";
  return out;
}

std::string StatTable(const profile::Profile& p) {
  if (!p.stat) return "";
  const auto& s = *p.stat;
  std::string out = "<section id=\"counters\">\n<h2>Counters</h2>\n";
  out += "<p>Command: <code>" + Escape(ShellJoin(s.command)) + "</code>, " +
         std::to_string(s.runs.size()) + " run(s)";
  if (!s.verdict.empty())
    out += "; verdict <b>" + Escape(s.verdict) + "</b>: " + Escape(s.verdict_reason);
  out += "</p>\n";
  std::map<std::string, const profile::CounterReading*> first;
  if (!s.runs.empty())
    for (const auto& c : s.runs[0].counters) first[c.event] = &c;
  out += fmt::format(
      "<div class=\"tablewrap\"><table id=\"countertable\" class=\"sortable\" "
      "data-rows=\"{}\"><thead><tr>"
      "<th>event</th><th class=\"num\" data-sort=\"num\">median</th><th class=\"num\" "
      "data-sort=\"num\">mean"
      "</th><th class=\"num\" data-sort=\"num\">min</th><th class=\"num\" "
      "data-sort=\"num\">max</th><th "
      "class=\"num\" data-sort=\"num\">CV</th><th>unit</th><th class=\"num\" "
      "data-sort=\"num\">counted</th>"
      "<th>note</th></tr></thead><tbody>\n",
      s.summary.size());
  for (const auto& [ev, st] : s.summary) {
    auto it = first.find(ev);
    const auto* c = it == first.end() ? nullptr : it->second;
    std::string unit = c ? c->unit : "";
    auto val = [&](double v) { return unit == "ms" ? HumanMs(v) : HumanCount(v); };
    std::string note = c ? c->note : "";
    if (c && !c->requested.empty())
      note = "stands in for " + c->requested + (note.empty() ? "" : "; " + note);
    out += "<tr data-name=\"" + Escape(ev) + "\"><td>" + Escape(ev) + "</td>" +
           TdNum(st.median, val(st.median)) + TdNum(st.mean, val(st.mean)) +
           TdNum(st.min, val(st.min)) + TdNum(st.max, val(st.max)) +
           TdNum(st.cv, fmt::format("{:.1f}%", st.cv * 100)) + Td(Escape(unit)) +
           TdNum(c ? c->running_fraction : 0,
                 c ? fmt::format("{:.0f}%", c->running_fraction * 100) : "") +
           Td(Escape(note)) + "</tr>\n";
  }
  out += "</tbody></table></div>\n";
  if (!s.derived.empty()) {
    std::vector<std::string> d;
    for (const auto& [k, v] : s.derived) d.push_back(k + " " + fmt::format("{:.4g}", v));
    out += "<p>Derived: " + Escape(Join(d, ", ")) + "</p>\n";
  }
  for (const auto& o : s.outliers) out += "<p class=\"note\">outlier: " + Escape(o) + "</p>\n";
  return out + "</section>\n";
}

std::string RangeTable(const profile::Profile& p) {
  if (p.ranges.empty()) return "";
  auto rr = analysis::SummarizeRanges(p);
  std::string out = "<section id=\"ranges\" class=\"deferred\">\n<h2>Ranges</h2>\n";
  if (!rr.headline.empty()) out += "<p>Per run: " + Escape(rr.headline) + "</p>\n";
  out += fmt::format(
      "<div class=\"tablewrap\"><table id=\"rangetable\" class=\"sortable\" "
      "data-rows=\"{}\"><thead><tr>"
      "<th>range</th><th>domain</th><th class=\"num\" data-sort=\"num\">calls</th><th "
      "class=\"num\" "
      "data-sort=\"num\">per run</th><th class=\"num\" data-sort=\"num\">median</th><th "
      "class=\"num\" "
      "data-sort=\"num\">max</th><th class=\"num\" data-sort=\"num\">share of parent</th><th "
      "class=\"num\" "
      "data-sort=\"num\">threads</th></tr></thead><tbody>\n",
      rr.ranges.size());
  for (const auto& r : rr.ranges) {
    out += "<tr data-name=\"" + Escape(r.path) + "\" data-type=\"" + Escape(r.domain) + "\">" +
           Td(Escape(r.path), "name") + Td(Escape(r.domain)) +
           TdNum(static_cast<double>(r.calls), std::to_string(r.calls)) +
           TdNum(r.per_run_ms, HumanMs(r.per_run_ms)) + TdNum(r.ms.median, HumanMs(r.ms.median)) +
           TdNum(r.ms.max, HumanMs(r.ms.max)) + TdNum(r.share_of_parent, Pct(r.share_of_parent)) +
           TdNum(r.threads, std::to_string(r.threads)) + "</tr>\n";
  }
  return out + "</tbody></table></div>\n</section>\n";
}

std::string GpuTables(const profile::Profile& p) {
  if (!p.gpu) return "";
  const auto& g = *p.gpu;
  std::string out = "<section id=\"gpu\">\n<h2>GPU" +
                    (g.device_name.empty() ? "" : ": " + Escape(g.device_name)) + "</h2>\n";
  if (!g.complete)
    out +=
        "<p class=\"note\">The trace ended without its end record: what follows is partial.</p>\n";
  if (g.dropped_records)
    out += fmt::format("<p class=\"note\">{} CUPTI records were dropped.</p>\n", g.dropped_records);
  struct Agg {
    int n = 0;
    double ns = 0, bytes = 0;
  };
  std::map<std::string, Agg> kernels, copies;
  for (const auto& k : g.kernels) {
    auto& a = kernels[k.name];
    a.n++;
    a.ns += static_cast<double>(k.end_ns - k.start_ns);
  }
  for (const auto& m : g.memcpys) {
    auto& a = copies[m.kind + (m.pageable ? " (pageable)" : "")];
    a.n++;
    a.ns += static_cast<double>(m.end_ns - m.start_ns);
    a.bytes += static_cast<double>(m.bytes);
  }
  auto table = [&](const char* id, const char* what, const std::map<std::string, Agg>& m,
                   bool bytes) {
    std::vector<std::pair<std::string, Agg>> rows(m.begin(), m.end());
    std::stable_sort(rows.begin(), rows.end(),
                     [](auto& a, auto& b) { return a.second.ns > b.second.ns; });
    out += fmt::format(
        "<h3>{}</h3><div class=\"tablewrap\"><table id=\"{}\" class=\"sortable\" "
        "data-rows=\"{}\"><thead><tr>"
        "<th>name</th><th class=\"num\" data-sort=\"num\">count</th><th class=\"num\" "
        "data-sort=\"num\">total</th>"
        "<th class=\"num\" data-sort=\"num\">average</th>{}</tr></thead><tbody>\n",
        what, id, rows.size(), bytes ? "<th class=\"num\" data-sort=\"num\">bytes</th>" : "");
    for (const auto& [name, a] : rows) {
      out += "<tr data-name=\"" + Escape(name) + "\">" + Td(Escape(name), "name") +
             TdNum(a.n, std::to_string(a.n)) + TdNum(a.ns, HumanMs(a.ns / 1e6)) +
             TdNum(a.ns / a.n, HumanMs(a.ns / a.n / 1e6));
      if (bytes) out += TdNum(a.bytes, HumanBytes(a.bytes));
      out += "</tr>\n";
    }
    out += "</tbody></table></div>\n";
  };
  if (!kernels.empty()) table("kerneltable", "Kernels", kernels, false);
  if (!copies.empty()) table("copytable", "Copies", copies, true);
  return out + "</section>\n";
}

std::string HotFunctions(const profile::Profile& p) {
  if (!p.samples || p.samples->samples.empty()) return "";
  const auto& s = *p.samples;
  std::vector<double> self(s.frames.size(), 0), total(s.frames.size(), 0);
  double all = 0;
  std::vector<uint32_t> seen_at(s.frames.size(), UINT32_MAX);
  uint32_t serial = 0;
  for (const auto& smp : s.samples) {
    all += smp.weight;
    if (smp.stack.empty()) continue;
    if (smp.stack[0] < self.size()) self[smp.stack[0]] += smp.weight;
    for (uint32_t f : smp.stack)
      if (f < total.size() && seen_at[f] != serial) {
        seen_at[f] = serial;
        total[f] += smp.weight;
      }
    ++serial;
  }
  // Frames with the same function and module are one row.
  std::map<std::string, std::pair<double, double>> rows;
  for (size_t i = 0; i < s.frames.size(); ++i) {
    const auto& f = s.frames[i];
    auto& r = rows[f.function + (f.module.empty() ? "" : " [" + f.module + "]")];
    r.first += self[i];
    r.second = std::max(r.second, total[i]);
  }
  std::vector<std::pair<std::string, std::pair<double, double>>> v(rows.begin(), rows.end());
  std::stable_sort(v.begin(), v.end(),
                   [](auto& a, auto& b) { return a.second.first > b.second.first; });
  if (v.size() > 100) v.resize(100);
  std::string out = "<section id=\"functions\" class=\"deferred\">\n<h2>Hot functions</h2>\n";
  out += "<p class=\"muted\">" +
         Escape(fmt::format(
             "{} samples of {} at {:.0f} Hz; the 100 functions with the most self time.",
             s.samples.size(), s.event, s.frequency_hz)) +
         "</p>\n";
  for (const auto& w : s.warnings) out += "<p class=\"note\">" + Escape(w) + "</p>\n";
  out += fmt::format(
      "<div class=\"tablewrap\"><table id=\"functable\" class=\"sortable\" "
      "data-rows=\"{}\"><thead><tr>"
      "<th>function</th><th class=\"num\" data-sort=\"num\">self</th><th class=\"num\" "
      "data-sort=\"num\">"
      "total</th></tr></thead><tbody>\n",
      v.size());
  for (const auto& [name, st] : v)
    out += "<tr data-name=\"" + Escape(name) + "\">" + Td(Escape(name), "name mono") +
           TdNum(st.first, Pct(all > 0 ? st.first / all : 0)) +
           TdNum(st.second, Pct(all > 0 ? st.second / all : 0)) + "</tr>\n";
  return out + "</tbody></table></div>\n</section>\n";
}

}  // namespace

std::string RenderProfilePage(const profile::Profile& p) {
  std::map<std::string, int> op_index;
  for (size_t i = 0; i < p.ops.size(); ++i) op_index.emplace(p.ops[i].name, static_cast<int>(i));
  std::string out = PageBegin("opscope: " + (p.meta.source.empty() ? p.meta.kind : p.meta.source));
  out += Header(p);
  std::vector<std::pair<std::string, std::string>> nav = {{"findings", "findings"}};
  if (!p.ops.empty()) {
    nav.push_back({"ops", "operators"});
    nav.push_back({"breakdown", "time by type and stage"});
    nav.push_back({"roofline", "roofline"});
  }
  if (!p.ops.empty() || (p.samples && !p.samples->samples.empty()))
    nav.push_back({"flame", "flame graph"});
  if (!p.op_events.empty() || !p.ranges.empty() || p.gpu) nav.push_back({"timeline", "timeline"});
  if (p.stat) nav.push_back({"counters", "counters"});
  if (!p.ranges.empty()) nav.push_back({"ranges", "ranges"});
  if (p.gpu) nav.push_back({"gpu", "GPU"});
  if (p.samples && !p.samples->samples.empty()) nav.push_back({"functions", "hot functions"});
  // The blocks of the sections that render their own (Section::html).
  std::vector<std::string> blocks;
  for (const Section* s : PresentSections(p, ReportOptions{})) {
    if (!s->html) continue;
    std::string block;
    Status st = s->html(p, ReportOptions{}, &block);
    if (!st.ok())
      block = "<section id=\"" + Escape(s->name) + "\"><p class=\"muted\">" + Escape(st.message()) +
              "</p></section>\n";
    blocks.push_back(std::move(block));
    nav.push_back({s->name, s->html_label ? s->html_label : s->name});
  }
  out += "<nav>";
  for (const auto& [id, label] : nav) out += "<a href=\"#" + id + "\">" + label + "</a>";
  out += "</nav>\n</header>\n<main>\n";
  out += Findings(p, op_index);
  if (!p.ops.empty()) {
    out += OpTable(p);
    out += Breakdown(p);
    out += RooflineSection(p);
  }
  if (!p.ops.empty() || (p.samples && !p.samples->samples.empty())) out += FlameSection(p);
  if (!p.op_events.empty() || !p.ranges.empty() || p.gpu) out += TimelineSection(p);
  out += StatTable(p);
  out += RangeTable(p);
  out += GpuTables(p);
  out += HotFunctions(p);
  for (const std::string& b : blocks) out += b;
  if (p.ops.empty())
    out += "<section><p class=\"muted\">This profile has no per-op data (it is a " +
           Escape(p.meta.kind) +
           " profile), so the operator table, roofline and op breakdown are not "
           "shown.</p></section>\n";
  out += "</main>\n<footer>" +
         Escape(fmt::format("{} · written by opscope {} · {}", profile::kSchema,
                            p.meta.tool_version, p.meta.created)) +
         "</footer>\n";
  out += PageEnd();
  return out;
}

namespace {
Status WriteHtml(const profile::Profile& p, const ReportOptions&, std::string* out) {
  *out = RenderProfilePage(p);
  return Status::Ok();
}
}  // namespace

OPSCOPE_REGISTER_FORMAT(
    html,
    {"html", ".html",
     "self-contained HTML report: findings, sortable op table, roofline, flame graph, timeline",
     &WriteHtml});

}  // namespace opscope::report::html
