// The telemetry section's renderers (report layer): the environment and a min/median/max row per
// channel (table, HTML block), one CSV row per sample and channel, and one Chrome-trace counter
// track per channel.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "report/format.h"
#include "report/html/html_page.h"
#include "report/timeline.h"
#include "sections/telemetry/telemetry_section.h"

namespace opscope::telemetry {
namespace {

using report::ReportOptions;

const TelemetrySection* Of(const profile::Profile& p) {
  return p.sections.Find<TelemetrySection>();
}
bool HasTelemetry(const profile::Profile& p) {
  const TelemetrySection* t = Of(p);
  return t && (!t->channels.empty() || !t->environment.empty() || !t->pinned_cpus.empty() ||
               !t->threads.empty());
}

// "pinned to cpus 1" and one line per thread: where it ran over the samples, e.g.
// "12345 opscope: Cortex-A76 cpu 5 x4, Cortex-A55 cpu 1 x1".
std::vector<std::pair<std::string, std::string>> PlacementLines(const TelemetrySection& t) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!t.pinned_cpus.empty()) out.push_back({"pinned to cpus", t.pinned_cpus});
  for (size_t k = 0; k < t.threads.size(); ++k) {
    std::vector<std::pair<int32_t, int>> seen;  // cpu, samples
    for (const auto& row : t.thread_cpus) {
      if (k >= row.size() || row[k] < 0) continue;
      auto it = std::find_if(seen.begin(), seen.end(), [&](auto& s) { return s.first == row[k]; });
      if (it == seen.end())
        seen.push_back({row[k], 1});
      else
        ++it->second;
    }
    std::vector<std::string> parts;
    for (const auto& [cpu, n] : seen) {
      const CoreCluster* c = t.ClusterOf(cpu);
      parts.push_back(fmt::format("{}cpu {} x{}", c ? c->name + " " : "", cpu, n));
    }
    if (!parts.empty()) out.push_back({"thread " + t.threads[k], Join(parts, ", ")});
  }
  return out;
}

std::string Value(double v, const std::string& unit) {
  // Two calls, not one with a chosen format string: under C++20 fmt checks the format at
  // compile time, and GCC 12 accepted a runtime choice between two literals there, then crashed.
  if (std::fabs(v) >= 100) return fmt::format("{:.0f} {}", v, unit);
  return fmt::format("{:.1f} {}", v, unit);
}

std::string Heading(const TelemetrySection& t) {
  std::string h = "board";
  if (!t.board.empty()) h += " " + t.board;
  h += t.source == "sysfs" ? "" : " (" + t.source + ")";
  if (t.sample_ns.size() > 1) h += fmt::format(", {} samples", t.sample_ns.size());
  return h;
}

Status TelemetryTable(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  const TelemetrySection& t = *Of(p);
  std::string s = report::EscapeControl(Heading(t)) + ":\n";
  for (const auto& [k, v] : t.environment)
    if (k != "board") s += "  " + report::EscapeControl(k) + ": " + report::EscapeControl(v) + "\n";
  for (const auto& [k, v] : PlacementLines(t))
    s += "  " + report::EscapeControl(k) + ": " + report::EscapeControl(v) + "\n";
  if (!t.channels.empty()) {
    s += fmt::format("{:<36}  {:>11}  {:>11}  {:>11}  {:>11}\n", "channel", "min", "median", "max",
                     "ceiling");
    for (const Channel& c : t.channels) {
      const Range3 r = Summarize(c);
      s += fmt::format("{:<36}  {:>11}  {:>11}  {:>11}  {:>11}{}\n",
                       report::ClipName(c.name, 36, o.wide), Value(r.min, c.unit),
                       Value(r.median, c.unit), Value(r.max, c.unit),
                       c.max > 0 ? Value(c.max, c.unit) : "-",
                       c.gaps ? fmt::format("  ({} unreadable samples)", c.gaps) : "");
    }
  }
  *out = std::move(s);
  return Status::Ok();
}

// sample,run,time_ns,channel,unit,value
Status TelemetryCsv(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  const TelemetrySection& t = *Of(p);
  const std::string& sep = o.separator;
  *out = Join({"sample", "run", "time_ns", "channel", "unit", "value"}, sep) + "\n";
  for (size_t i = 0; i < t.sample_ns.size(); ++i)
    for (const Channel& c : t.channels)
      if (i < c.values.size())
        *out += Join({std::to_string(i), std::to_string(t.sample_runs[i]),
                      std::to_string(t.sample_ns[i]), report::CsvText(c.name, sep),
                      report::CsvText(c.unit, sep), fmt::format("{:.6g}", c.values[i])},
                     sep) +
                "\n";
  return Status::Ok();
}

Status TelemetryHtml(const profile::Profile& p, const ReportOptions&, std::string* out) {
  using report::html::Escape;
  const TelemetrySection& t = *Of(p);
  std::string s = "<section id=\"telemetry\">\n<h2>Board</h2>\n<p>" + Escape(Heading(t)) +
                  "</p>\n<dl class=\"meta\">\n";
  for (const auto& [k, v] : t.environment)
    s += "<dt>" + Escape(k) + "</dt><dd>" + Escape(v) + "</dd>\n";
  for (const auto& [k, v] : PlacementLines(t))
    s += "<dt>" + Escape(k) + "</dt><dd>" + Escape(v) + "</dd>\n";
  s += "</dl>\n";
  if (!t.channels.empty()) {
    s += "<div class=\"tablewrap\"><table id=\"telemetrytable\" class=\"sortable\"><thead><tr>"
         "<th>channel</th><th>source</th><th class=\"num\" data-sort=\"num\">min</th><th "
         "class=\"num\" data-sort=\"num\">median</th><th class=\"num\" data-sort=\"num\">max</th>"
         "<th class=\"num\" data-sort=\"num\">ceiling</th></tr></thead><tbody>\n";
    for (const Channel& c : t.channels) {
      const Range3 r = Summarize(c);
      s += "<tr><td class=\"name\">" + Escape(c.name) + "</td><td><code>" + Escape(c.source) +
           "</code></td>" + report::html::TdNum(r.min, Value(r.min, c.unit)) +
           report::html::TdNum(r.median, Value(r.median, c.unit)) +
           report::html::TdNum(r.max, Value(r.max, c.unit)) +
           report::html::TdNum(c.max, c.max > 0 ? Value(c.max, c.unit) : "-") + "</tr>\n";
    }
    s += "</tbody></table></div>\n";
  }
  *out = s + "</section>\n";
  return Status::Ok();
}

// One counter track per channel in a "board" process, a value at each sample.
void TelemetryTimeline(const profile::Profile& p, const ReportOptions&, report::Timeline& tl) {
  constexpr int kBoardPid = 999999;
  const TelemetrySection& t = *Of(p);
  if (t.sample_ns.empty()) return;
  tl.Process(kBoardPid, "board" + (t.board.empty() ? std::string() : ": " + t.board));
  for (const Channel& c : t.channels)
    for (size_t i = 0; i < t.sample_ns.size() && i < c.values.size(); ++i)
      tl.Counter(c.name + " (" + c.unit + ")", t.sample_ns[i], kBoardPid, {{c.unit, c.values[i]}});
}

}  // namespace

OPSCOPE_REGISTER_SECTION(telemetry, {"telemetry", 70, "", &HasTelemetry, &TelemetryTable,
                                     &TelemetryCsv, &TelemetryHtml, "board", &TelemetryTimeline});

}  // namespace opscope::telemetry
