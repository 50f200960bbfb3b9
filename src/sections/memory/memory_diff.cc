#include "sections/memory/memory_diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "sections/memory/memory_section.h"

namespace opscope::memory {
namespace {

BytesDelta Delta(std::string name, double before, double after) {
  BytesDelta d;
  d.name = std::move(name);
  d.change = "changed";
  d.before = before;
  d.after = after;
  d.delta = after - before;
  return d;
}

void SortByAbs(std::vector<BytesDelta>& v) {
  std::stable_sort(v.begin(), v.end(), [](const BytesDelta& a, const BytesDelta& b) {
    return std::fabs(a.delta) > std::fabs(b.delta);
  });
}

std::string Signed(double bytes) {
  return (bytes > 0 ? "+" : bytes < 0 ? "-" : "±") + HumanBytes(std::fabs(bytes));
}

std::string Pct(const BytesDelta& d) {
  if (d.change != "changed") return d.change;
  if (d.before <= 0) return "-";
  return fmt::format("{:+.1f}%", d.delta / d.before * 100);
}

}  // namespace

MemoryDiff DiffMemory(const profile::Profile& before, const profile::Profile& after) {
  MemoryDiff d;
  const MemorySection* a = before.sections.Find<MemorySection>();
  const MemorySection* b = after.sections.Find<MemorySection>();
  if (!a || !b) return d;
  d.available = true;
  auto step_name = [](const MemorySection& m) {
    return m.peak_step >= 0 ? m.steps[static_cast<size_t>(m.peak_step)].name : std::string("-");
  };
  d.peak = Delta("peak step '" + step_name(*a) + "' → '" + step_name(*b) + "'", a->peak_live_bytes,
                 b->peak_live_bytes);
  d.arena = Delta("arena", a->arena_bytes, b->arena_bytes);
  d.weights = Delta("weights", a->weight_bytes, b->weight_bytes);
  d.packed_weights = Delta("packed weight copies", a->packed_weight_bytes, b->packed_weight_bytes);
  d.workspace = Delta("workspace", a->workspace_bytes, b->workspace_bytes);
  d.peak_rss = Delta("process peak RSS", a->peak_rss_bytes, b->peak_rss_bytes);
  if (a->peak_rss_bytes <= 0 || b->peak_rss_bytes <= 0) d.peak_rss.change = "unknown on a side";

  std::map<std::string, const MemStep*> sa;
  for (const MemStep& s : a->steps) sa.emplace(s.name, &s);
  std::map<std::string, bool> seen;
  for (const MemStep& s : b->steps) {
    auto it = sa.find(s.name);
    if (it == sa.end()) {
      BytesDelta x = Delta(s.name, 0, s.live_bytes);
      x.change = "appeared";
      d.steps.push_back(x);
    } else {
      d.steps.push_back(Delta(s.name, it->second->live_bytes, s.live_bytes));
    }
    seen[s.name] = true;
  }
  for (const MemStep& s : a->steps)
    if (!seen.count(s.name)) {
      BytesDelta x = Delta(s.name, s.live_bytes, 0);
      x.change = "disappeared";
      d.steps.push_back(x);
    }
  SortByAbs(d.steps);

  // Tensors alive at either peak, matched by name.
  struct Side {
    const LiveTensor* t = nullptr;
    bool at_peak = false;
  };
  std::map<std::string, std::pair<Side, Side>> tensors;
  for (const LiveTensor& t : a->tensors) tensors[t.name].first.t = &t;
  for (const LiveTensor& t : b->tensors) tensors[t.name].second.t = &t;
  for (int i : AliveAt(*a, a->peak_step))
    tensors[a->tensors[static_cast<size_t>(i)].name].first.at_peak = true;
  for (int i : AliveAt(*b, b->peak_step))
    tensors[b->tensors[static_cast<size_t>(i)].name].second.at_peak = true;
  for (const auto& [name, sides] : tensors) {
    const auto& [x, y] = sides;
    if (!x.at_peak && !y.at_peak) continue;
    BytesDelta t = Delta(name, x.at_peak ? x.t->bytes : 0, y.at_peak ? y.t->bytes : 0);
    if (x.t) t.shape_before = ShapeToString(x.t->shape);
    if (y.t) t.shape_after = ShapeToString(y.t->shape);
    if (!x.t)
      t.change = "appeared";
    else if (!y.t)
      t.change = "disappeared";
    else if (!x.at_peak)
      t.change = "joined the peak";
    else if (!y.at_peak)
      t.change = "left the peak";
    d.at_peak.push_back(std::move(t));
  }
  SortByAbs(d.at_peak);
  return d;
}

std::string FormatMemoryDiff(const MemoryDiff& d, size_t max_rows) {
  if (!d.available) return "";
  std::string out =
      "\nmemory                                        before        after            Δ\n";
  for (const BytesDelta* x :
       {&d.peak, &d.arena, &d.weights, &d.packed_weights, &d.workspace, &d.peak_rss})
    out += fmt::format("  {:<40} {:>10}   {:>10}   {:>10}  {}\n",
                       x == &d.peak ? "activation peak" : x->name, HumanBytes(x->before),
                       HumanBytes(x->after), Signed(x->delta), Pct(*x));
  out += "  (" + d.peak.name + ")\n";
  auto table = [&](const char* title, const std::vector<BytesDelta>& rows, bool shapes) {
    size_t shown = 0;
    std::string body;
    for (const BytesDelta& r : rows) {
      if (r.delta == 0) continue;
      if (shown++ == max_rows) break;
      std::string name = r.name.size() > 40 ? r.name.substr(0, 37) + "..." : r.name;
      body += fmt::format("  {:<40} {:>10}   {:>10}   {:>10}  {}", name,
                          r.change == "appeared" ? "-" : HumanBytes(r.before),
                          r.change == "disappeared" ? "-" : HumanBytes(r.after), Signed(r.delta),
                          Pct(r));
      if (shapes && !r.shape_before.empty() && !r.shape_after.empty() &&
          r.shape_before != r.shape_after)
        body += "  shape " + r.shape_before + " → " + r.shape_after;
      body += "\n";
    }
    if (!body.empty()) out += fmt::format("\n{}\n", title) + body;
  };
  table("tensors alive at the peak (before or after), by change:", d.at_peak, true);
  table("steps by change of live bytes:", d.steps, false);
  return out;
}

void MemoryDiffToJson(const MemoryDiff& d, nlohmann::json& j) {
  auto one = [](const BytesDelta& x) {
    nlohmann::json o = {{"name", x.name},
                        {"change", x.change},
                        {"before_bytes", x.before},
                        {"after_bytes", x.after},
                        {"delta_bytes", x.delta}};
    if (!x.shape_before.empty() || !x.shape_after.empty()) {
      o["shape_before"] = x.shape_before;
      o["shape_after"] = x.shape_after;
    }
    return o;
  };
  j = {{"peak", one(d.peak)},
       {"arena", one(d.arena)},
       {"weights", one(d.weights)},
       {"packed_weights", one(d.packed_weights)},
       {"workspace", one(d.workspace)},
       {"peak_rss", one(d.peak_rss)},
       {"steps", nlohmann::json::array()},
       {"at_peak", nlohmann::json::array()}};
  for (const BytesDelta& x : d.steps) j["steps"].push_back(one(x));
  for (const BytesDelta& x : d.at_peak) j["at_peak"].push_back(one(x));
}

}  // namespace opscope::memory
