#include "analysis/range_stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
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
    bool top = false;  // a top-level range (its path is its name alone)
  };
  std::map<std::string, Group> groups;
  for (size_t i = 0; i < rs.size(); ++i) {
    const std::string& pth = path_of(static_cast<int>(i));
    Group& g = groups[pth];
    g.name = rs[i].name;
    g.domain = rs[i].domain;
    // A nested range's path is longer than its parent's; a top-level one's is its name (which may
    // be "", so "" cannot also mean "no parent": a range named "" recursed into itself).
    g.top = pth.size() == rs[i].name.size();
    g.parent_path = g.top ? "" : path_of(rs[i].parent);
    g.ms.push_back((rs[i].end_ns - rs[i].start_ns) / 1e6);
    g.tids.insert(rs[i].tid);
    for (const auto& [k, v] : rs[i].counters) g.counters[k] += v;
    g.first = std::min(g.first, rs[i].start_ns);
  }
  // The top-level groups and the children of each parent path, ordered by first start.
  std::vector<std::string> tops;
  std::map<std::string, std::vector<std::string>> children;
  for (const auto& [pth, g] : groups) (g.top ? tops : children[g.parent_path]).push_back(pth);
  auto by_start = [&](const std::string& a, const std::string& b) {
    return groups[a].first != groups[b].first ? groups[a].first < groups[b].first : a < b;
  };
  std::sort(tops.begin(), tops.end(), by_start);
  for (auto& [k, v] : children) std::sort(v.begin(), v.end(), by_start);
  for (const std::string& top : tops) {
    double t = 0;
    for (double v : groups[top].ms) t += v;
    rep.top_total_ms += t;
  }
  std::function<void(const std::string&, int, int)> emit = [&](const std::string& pth,
                                                               int parent_row, int depth) {
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
  for (const std::string& top : tops) emit(top, -1, 0);
  std::vector<std::string> parts;
  for (const RangeSummary& s : rep.ranges)
    if (s.depth == 0)
      parts.push_back(
          fmt::format("{} {} ({:.1f}%)", s.name, HumanMs(s.per_run_ms), s.share_of_top * 100));
  rep.headline = Join(parts, ", ");
  return rep;
}

}  // namespace opscope::analysis
