#include "analysis/range_stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "base/strings.h"

namespace opscope::analysis {

RangeReport SummarizeRanges(const profile::Profile& p) {
  RangeReport rep;
  rep.runs = p.meta.runs > 0 ? p.meta.runs : 1;
  const auto& rs = p.ranges;
  std::vector<std::string> path(rs.size());
  std::vector<int> state(rs.size(), 0);
  std::function<const std::string&(int)> path_of = [&](int i) -> const std::string& {
    if (state[i] == 0) {
      state[i] = 1;  // guards against parent cycles in a hand-edited file
      int par = rs[i].parent;
      path[i] = (par >= 0 && state[par] != 1) ? path_of(par) + "/" + rs[i].name : rs[i].name;
      state[i] = 2;
    }
    return path[i];
  };
  struct Group {
    std::vector<double> ms;
    std::set<int32_t> tids;
    std::map<std::string, double> counters;
    int64_t first = INT64_MAX;
    std::string name, domain, parent_path;
  };
  std::map<std::string, Group> groups;
  for (size_t i = 0; i < rs.size(); ++i) {
    const std::string& pth = path_of(static_cast<int>(i));
    Group& g = groups[pth];
    g.name = rs[i].name;
    g.domain = rs[i].domain;
    g.parent_path = rs[i].parent >= 0 ? path_of(rs[i].parent) : "";
    g.ms.push_back((rs[i].end_ns - rs[i].start_ns) / 1e6);
    g.tids.insert(rs[i].tid);
    for (const auto& [k, v] : rs[i].counters) g.counters[k] += v;
    g.first = std::min(g.first, rs[i].start_ns);
  }
  // Children of each parent path, ordered by first start.
  std::map<std::string, std::vector<std::string>> children;
  for (const auto& [pth, g] : groups) children[g.parent_path].push_back(pth);
  for (auto& [k, v] : children)
    std::sort(v.begin(), v.end(), [&](const std::string& a, const std::string& b) {
      return groups[a].first != groups[b].first ? groups[a].first < groups[b].first : a < b;
    });
  for (const std::string& top : children[""]) {
    double t = 0;
    for (double v : groups[top].ms) t += v;
    rep.top_total_ms += t;
  }
  std::function<void(const std::string&, int, int)> emit = [&](const std::string& pth, int parent_row, int depth) {
    const Group& g = groups[pth];
    RangeSummary s;
    s.name = g.name;
    s.path = pth;
    s.domain = g.domain;
    s.depth = depth;
    s.parent_row = parent_row;
    s.calls = static_cast<int64_t>(g.ms.size());
    s.ms = ComputeStats(g.ms);
    for (double v : g.ms) s.total_ms += v;
    s.per_run_ms = s.total_ms / rep.runs;
    s.share_of_top = rep.top_total_ms > 0 ? s.total_ms / rep.top_total_ms : 0;
    s.share_of_parent = parent_row >= 0 && rep.ranges[parent_row].total_ms > 0
                            ? s.total_ms / rep.ranges[parent_row].total_ms
                            : 1.0;
    s.threads = static_cast<int>(g.tids.size());
    s.counters = g.counters;
    s.first_start_ns = g.first;
    rep.ranges.push_back(std::move(s));
    int row = static_cast<int>(rep.ranges.size()) - 1;
    auto it = children.find(pth);
    if (it != children.end())
      for (const std::string& c : it->second) emit(c, row, depth + 1);
  };
  for (const std::string& top : children[""]) emit(top, -1, 0);
  std::vector<std::string> parts;
  for (const RangeSummary& s : rep.ranges)
    if (s.depth == 0)
      parts.push_back(fmt::format("{} {} ({:.1f}%)", s.name, HumanMs(s.per_run_ms), s.share_of_top * 100));
  rep.headline = Join(parts, ", ");
  return rep;
}

std::string FormatRangeTable(const RangeReport& r, bool color) {
  std::string bold = color ? "\x1b[1m" : "", reset = color ? "\x1b[0m" : "";
  std::string out;
  if (r.ranges.empty()) return "no ranges recorded\n";
  out += bold + "pipeline" + (r.runs > 1 ? fmt::format(" (per run, mean of {} runs)", r.runs) : std::string()) +
         ": " + r.headline + reset + "\n\n";
  bool cpu = false;
  for (const auto& s : r.ranges) cpu |= s.counters.count("thread_cpu_ms") > 0;
  out += fmt::format("{:<36} {:>7} {:>11} {:>11} {:>11} {:>11} {:>6} {:>7} {:>7}{}\n", "range", "calls",
                     "per run", "median", "trim.mean", "max", "cv%", "%top", "%parent",
                     cpu ? "     cpu%" : "");
  for (const auto& s : r.ranges) {
    std::string name = std::string(2 * s.depth, ' ') + s.name;
    if (name.size() > 36) name = name.substr(0, 33) + "...";
    out += fmt::format("{:<36} {:>7} {:>11} {:>11} {:>11} {:>11} {:>6.1f} {:>7.1f} {:>7.1f}", name,
                       s.calls, HumanMs(s.per_run_ms), HumanMs(s.ms.median), HumanMs(s.ms.trimmed_mean),
                       HumanMs(s.ms.max), s.ms.cv * 100, s.share_of_top * 100, s.share_of_parent * 100);
    if (cpu) {
      auto it = s.counters.find("thread_cpu_ms");
      if (it != s.counters.end() && s.total_ms > 0)
        out += fmt::format(" {:>8.1f}", it->second / s.total_ms * 100);
      else
        out += fmt::format(" {:>8}", "-");
    }
    out += "\n";
  }
  if (cpu)
    out += "\ncpu% = thread CPU time / wall time of the range (below 100%: waiting, sleeping or "
           "preempted)\n";
  return out;
}

static std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string RangesToCsv(const RangeReport& r) {
  std::string out =
      "path,name,domain,depth,calls,total_ms,per_run_ms,mean_ms,median_ms,trimmed_mean_ms,min_ms,max_ms,"
      "p90_ms,cv,share_of_top,share_of_parent,threads,thread_cpu_ms\n";
  for (const auto& s : r.ranges) {
    auto it = s.counters.find("thread_cpu_ms");
    out += fmt::format("{},{},{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{},{}\n",
                       CsvField(s.path), CsvField(s.name), CsvField(s.domain), s.depth, s.calls,
                       s.total_ms, s.per_run_ms, s.ms.mean, s.ms.median, s.ms.trimmed_mean, s.ms.min, s.ms.max,
                       s.ms.p90, s.ms.cv, s.share_of_top, s.share_of_parent, s.threads,
                       it == s.counters.end() ? std::string() : fmt::format("{:.6f}", it->second));
  }
  return out;
}

std::string RangesToChromeTrace(const profile::Profile& p) {
  nlohmann::json events = nlohmann::json::array();
  std::vector<size_t> order(p.ranges.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return p.ranges[a].start_ns < p.ranges[b].start_ns;
  });
  std::set<int32_t> tids;
  for (size_t i : order) {
    const profile::Range& r = p.ranges[i];
    nlohmann::json e;
    e["name"] = r.name;
    e["cat"] = r.domain.empty() ? "range" : r.domain;
    e["ph"] = "X";
    e["ts"] = r.start_ns / 1000.0;
    e["dur"] = (r.end_ns - r.start_ns) / 1000.0;
    e["pid"] = 1;
    e["tid"] = r.tid;
    nlohmann::json args = {{"depth", r.depth}};
    for (const auto& [k, v] : r.counters) args[k] = v;
    e["args"] = args;
    events.push_back(std::move(e));
    tids.insert(r.tid);
  }
  nlohmann::json meta = {{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 0},
                         {"args", {{"name", p.meta.source.empty() ? "opscope run" : p.meta.source}}}};
  events.push_back(meta);
  nlohmann::json j = {{"traceEvents", events}, {"displayTimeUnit", "ms"},
                      {"otherData", {{"tool", "opscope"}, {"kind", p.meta.kind}}}};
  return j.dump(1) + "\n";
}

}  // namespace opscope::analysis
