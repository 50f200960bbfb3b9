#include "report/samples_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "base/strings.h"
#include "profile/json_text.h"
#include "report/format.h"

namespace opscope::report {
namespace {

struct VecHash {
  size_t operator()(const std::vector<uint32_t>& v) const {
    size_t h = v.size();
    for (uint32_t x : v) h = h * 1000003u ^ x;
    return h;
  }
};

std::string Basename(const std::string& path) {
  size_t s = path.rfind('/');
  return s == std::string::npos ? path : path.substr(s + 1);
}

std::string Thousands(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Function keys: frames mapped to (name, module) ids once.
struct FunctionIndex {
  std::vector<uint32_t> frame_to_fn;
  std::vector<std::pair<std::string, std::string>> fns;  // name, module
  explicit FunctionIndex(const profile::SampleSection& s, bool by_module) {
    std::unordered_map<std::string, uint32_t> ids;
    frame_to_fn.reserve(s.frames.size());
    for (const auto& f : s.frames) {
      std::string key = by_module ? f.module : f.function + '\x01' + f.module;
      auto [it, inserted] = ids.emplace(key, fns.size());
      if (inserted) fns.emplace_back(by_module ? f.module : f.function, f.module);
      frame_to_fn.push_back(it->second);
    }
  }
};

}  // namespace

StatusOr<SampleSort> ParseSampleSort(const std::string& s) {
  if (s == "self") return SampleSort::kSelf;
  if (s == "inclusive" || s == "incl" || s == "total") return SampleSort::kInclusive;
  if (s == "name") return SampleSort::kName;
  return InvalidArgument("--sort '" + s + "': expected self, inclusive or name");
}

StatusOr<SampleGroup> ParseSampleGroup(const std::string& s) {
  if (s == "function" || s == "") return SampleGroup::kFunction;
  if (s == "thread") return SampleGroup::kThread;
  if (s == "module" || s == "dso") return SampleGroup::kModule;
  if (s == "op" || s == "operator") return SampleGroup::kOp;
  return InvalidArgument("--group '" + s + "': expected function, thread, module or op");
}

Status ParseSortKeys(const std::string& keys, SampleSort* sort, SampleGroup* group) {
  bool thread = false, module = false, function = false, op = false;
  for (const std::string& raw : Split(keys, ',')) {
    const std::string k = Trim(raw);
    if (k == "comm" || k == "pid" || k == "tid" || k == "thread")
      thread = true;
    else if (k == "dso" || k == "module")
      module = true;
    else if (k == "sym" || k == "symbol" || k == "function" || k == "srcline")
      function = true;
    else if (k == "op" || k == "operator")
      op = true;
    else if (k == "overhead" || k == "self")
      *sort = SampleSort::kSelf;
    else if (k == "children" || k == "inclusive" || k == "incl" || k == "total")
      *sort = SampleSort::kInclusive;
    else if (k == "name")
      *sort = SampleSort::kName;
    else
      return InvalidArgument("--sort key '" + k +
                             "': expected comm, pid, tid, dso, sym, op, "
                             "overhead, children or name (comma-separated, as in perf report)");
  }
  if (op)
    *group = SampleGroup::kOp;
  else if (thread)
    *group = SampleGroup::kThread;
  else if (module && !function)
    *group = SampleGroup::kModule;
  else if (function || module)
    *group = SampleGroup::kFunction;
  return Status::Ok();
}

std::string FrameLabel(const profile::Frame& f) {
  if (f.function == "[unknown]") return "[unknown] [" + f.module + "]";
  return f.function;
}

std::string SampleGroupLabel(const profile::Profile& p, const profile::Sample& s, SampleGroup g) {
  if (g == SampleGroup::kThread) {
    std::string name;
    if (p.samples) {
      auto it = p.samples->thread_names.find(s.tid);
      if (it != p.samples->thread_names.end()) name = it->second;
    }
    return (name.empty() ? "thread" : name) + " [" + std::to_string(s.tid) + "]";
  }
  if (g == SampleGroup::kOp) {
    if (s.op >= 0 && s.op < static_cast<int32_t>(p.ops.size()))
      return p.ops[static_cast<size_t>(s.op)].name + " (" +
             p.ops[static_cast<size_t>(s.op)].op_type + ")";
    return "[outside ops]";
  }
  return "";
}

HotFunctions ComputeHotFunctions(const profile::Profile& p, const SampleReportOptions& opt) {
  HotFunctions h;
  if (!p.samples) return h;
  const auto& sec = *p.samples;
  const bool by_module = opt.group == SampleGroup::kModule;
  FunctionIndex fi(sec, by_module);
  const bool grouped = opt.group == SampleGroup::kThread || opt.group == SampleGroup::kOp;

  // Per distinct stack: its leaf function and its distinct functions.
  struct StackInfo {
    int64_t leaf = -1;
    std::vector<uint32_t> fns;
  };
  std::unordered_map<std::vector<uint32_t>, uint32_t, VecHash> stack_ids;
  std::vector<StackInfo> stacks;
  std::unordered_map<std::string, uint32_t> group_ids;
  std::vector<std::string> groups;
  // (group, fn) -> row accumulators
  struct Acc {
    double self = 0, incl = 0;
    uint64_t ns = 0, ni = 0;
  };
  std::unordered_map<uint64_t, Acc> acc;
  std::vector<std::map<std::pair<std::string, int>, double>> self_lines(fi.fns.size()),
      any_lines(fi.fns.size());
  std::unordered_set<int32_t> tids;
  std::vector<uint32_t> seen_mark(fi.fns.size(), UINT32_MAX);

  for (const auto& s : sec.samples) {
    h.total_weight += s.weight;
    ++h.samples;
    tids.insert(s.tid);
    auto [it, inserted] = stack_ids.emplace(s.stack, static_cast<uint32_t>(stacks.size()));
    if (inserted) {
      StackInfo info;
      uint32_t id = it->second;
      for (size_t k = 0; k < s.stack.size(); ++k) {
        uint32_t fn = fi.frame_to_fn[s.stack[k]];
        if (k == 0) info.leaf = fn;
        if (seen_mark[fn] != id) {
          seen_mark[fn] = id;
          info.fns.push_back(fn);
        }
      }
      stacks.push_back(std::move(info));
    }
    const StackInfo& info = stacks[it->second];
    uint32_t g = 0;
    if (grouped) {
      std::string label = SampleGroupLabel(p, s, opt.group);
      auto [git, gnew] = group_ids.emplace(label, static_cast<uint32_t>(groups.size()));
      if (gnew) groups.push_back(label);
      g = git->second;
    }
    for (uint32_t fn : info.fns) {
      Acc& a = acc[(static_cast<uint64_t>(g) << 32) | fn];
      a.incl += s.weight;
      ++a.ni;
    }
    if (info.leaf >= 0) {
      Acc& a = acc[(static_cast<uint64_t>(g) << 32) | static_cast<uint32_t>(info.leaf)];
      a.self += s.weight;
      ++a.ns;
      if (!by_module) {
        const auto& f = sec.frames[s.stack[0]];
        self_lines[static_cast<size_t>(info.leaf)][{f.file, f.line}] += s.weight;
      }
    }
  }
  h.threads = tids.size();
  // Source lines for functions never at the leaf: their commonest frame.
  if (!by_module)
    for (size_t i = 0; i < sec.frames.size(); ++i) {
      uint32_t fn = fi.frame_to_fn[i];
      if (self_lines[fn].empty() && any_lines[fn].empty() && !sec.frames[i].file.empty())
        any_lines[fn][{sec.frames[i].file, sec.frames[i].line}] += 1;
    }

  std::vector<HotRow> rows;
  std::map<std::string, double> group_total;
  for (const auto& [key, a] : acc) {
    uint32_t g = static_cast<uint32_t>(key >> 32), fn = static_cast<uint32_t>(key);
    HotRow r;
    if (grouped) r.group = groups[g];
    r.function = fi.fns[fn].first;
    r.module = fi.fns[fn].second;
    const auto& lines = !self_lines[fn].empty() ? self_lines[fn] : any_lines[fn];
    if (!lines.empty()) {
      auto best = std::max_element(lines.begin(), lines.end(), [](const auto& x, const auto& y) {
        return x.second < y.second;
      });
      r.file = best->first.first;
      r.line = best->first.second;
    }
    r.self = a.self;
    r.inclusive = a.incl;
    r.self_samples = a.ns;
    r.inclusive_samples = a.ni;
    double t = h.total_weight > 0 ? h.total_weight : 1;
    r.self_pct = 100 * a.self / t;
    r.inclusive_pct = 100 * a.incl / t;
    group_total[r.group] += a.self;
    rows.push_back(std::move(r));
  }
  auto by_value = [&](const HotRow& a, const HotRow& b) {
    switch (opt.sort) {
      case SampleSort::kInclusive:
        if (a.inclusive != b.inclusive) return a.inclusive > b.inclusive;
        break;
      case SampleSort::kName:
        if (a.function != b.function) return a.function < b.function;
        break;
      case SampleSort::kSelf:
        if (a.self != b.self) return a.self > b.self;
        if (a.inclusive != b.inclusive) return a.inclusive > b.inclusive;
        break;
    }
    return a.function < b.function;
  };
  std::sort(rows.begin(), rows.end(), [&](const HotRow& a, const HotRow& b) {
    if (a.group != b.group) {
      double ta = group_total[a.group], tb = group_total[b.group];
      return ta != tb ? ta > tb : a.group < b.group;
    }
    return by_value(a, b);
  });
  std::map<std::string, size_t> shown;
  for (auto& r : rows) {
    bool keep = (r.self_pct >= opt.threshold_pct || r.inclusive_pct >= opt.threshold_pct) &&
                (opt.top == 0 || shown[r.group] < opt.top);
    if (keep) {
      ++shown[r.group];
      h.rows.push_back(std::move(r));
    } else {
      ++h.hidden;
    }
  }
  return h;
}

std::string DescribeSamples(const profile::Profile& p) {
  if (!p.samples) return "no samples";
  const auto& s = *p.samples;
  std::unordered_set<int32_t> tids;
  for (const auto& smp : s.samples) tids.insert(smp.tid);
  return fmt::format("{} samples of {}, {} call graphs, {:.0f} Hz, {} thread{}, {} lost",
                     Thousands(s.samples.size()), s.event.empty() ? "?" : s.event,
                     s.call_graph.empty() ? "?" : s.call_graph, s.frequency_hz, tids.size(),
                     tids.size() == 1 ? "" : "s", Thousands(s.lost));
}

std::string RenderHotTable(const profile::Profile& p, const HotFunctions& h,
                           const SampleReportOptions& opt, bool color) {
  std::string out;
  out += "opscope report: " + DescribeSamples(p) + "\n";
  if (!p.meta.source.empty()) out += "source: " + p.meta.source + "\n";
  for (const auto& d : p.meta.degradations) out += "note: " + d + "\n";
  if (h.samples == 0) {
    const std::vector<std::string> none;
    const auto& warnings = p.samples ? p.samples->warnings : none;
    bool damaged = false;
    for (const auto& w : warnings) damaged = damaged || w.find("corrupt") != std::string::npos;
    // A damaged file is not the command's fault: say so, and show why.
    out += damaged
               ? "\nno samples could be read: the record file is damaged (see the warnings below)\n"
               : "\nno samples were recorded (the command ended before the first sample, or "
                 "sampling was refused)\n";
    if (!warnings.empty()) {
      out += "\nwarnings:\n";
      for (const auto& w : warnings) out += "  " + w + "\n";
    }
    return out;
  }
  const char* label = opt.group == SampleGroup::kModule ? "module" : "function";
  std::string current_group = "\x01";
  size_t fw = 8, mw = 6;
  for (const auto& r : h.rows) {
    fw = std::max(fw, opt.wide ? EscapeControl(r.function).size()
                               : std::min<size_t>(EscapeControl(r.function).size(), 60));
    mw = std::max(mw, std::min<size_t>(r.module.size(), 28));
  }
  for (const auto& r : h.rows) {
    if (r.group != current_group) {
      current_group = r.group;
      out += "\n";
      if (!r.group.empty()) {
        if (color) out += "\033[1m";
        out += r.group;
        if (color) out += "\033[0m";
        out += "\n";
      }
      const std::string incl = opt.children ? fmt::format(" {:>7}", "incl%") : "";
      if (opt.group == SampleGroup::kModule)
        out += fmt::format("{:>7}{} {:>9}  {}\n", "self%", incl, "samples", label);
      else
        out += fmt::format("{:>7}{} {:>9}  {:<{}}  {:<{}}  {}\n", "self%", incl, "samples", label,
                           fw, "module", mw, "source");
    }
    std::string fn = ClipName(r.function, 60, opt.wide);
    const std::string incl = opt.children ? fmt::format(" {:>7.1f}", r.inclusive_pct) : "";
    std::string src;
    if (!r.file.empty()) {
      src = Basename(r.file);
      if (r.line) {
        src += ':';
        src += std::to_string(r.line);
      }
    }
    bool hot = color && r.self_pct >= 10;
    if (hot) out += "\033[31m";
    if (opt.group == SampleGroup::kModule)
      out += fmt::format("{:>7.1f}{} {:>9}  {}", r.self_pct, incl, Thousands(r.self_samples), fn);
    else
      out += fmt::format("{:>7.1f}{} {:>9}  {:<{}}  {:<{}}  {}", r.self_pct, incl,
                         Thousands(r.self_samples), fn, fw, EscapeControl(r.module), mw, src);
    if (hot) out += "\033[0m";
    out += "\n";
  }
  if (h.hidden)
    out += fmt::format("\n({} rows below --threshold {:g}% or beyond --top {} not shown)\n",
                       h.hidden, opt.threshold_pct, opt.top);
  if (!p.samples->warnings.empty()) {
    out += "\nwarnings:\n";
    for (const auto& w : p.samples->warnings) out += "  " + w + "\n";
  }
  return out;
}

std::string RenderHotJson(const profile::Profile& p, const HotFunctions& h) {
  nlohmann::json j;
  j["schema"] = "opscope.report.samples/1";
  j["source"] = p.meta.source;
  const auto* s = p.samples ? &*p.samples : nullptr;
  j["event"] = s ? s->event : "";
  j["unit"] = s ? s->unit : "";
  j["call_graph"] = s ? s->call_graph : "";
  j["frequency_hz"] = s ? s->frequency_hz : 0.0;
  j["samples"] = h.samples;
  j["lost"] = s ? s->lost : 0;
  j["total_weight"] = h.total_weight;
  j["threads"] = h.threads;
  j["hidden_rows"] = h.hidden;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : h.rows)
    rows.push_back({{"group", r.group},
                    {"function", r.function},
                    {"module", r.module},
                    {"file", r.file},
                    {"line", r.line},
                    {"self_pct", r.self_pct},
                    {"inclusive_pct", r.inclusive_pct},
                    {"self_samples", r.self_samples},
                    {"inclusive_samples", r.inclusive_samples},
                    {"self_weight", r.self},
                    {"inclusive_weight", r.inclusive}});
  j["rows"] = rows;
  j["warnings"] = s ? s->warnings : std::vector<std::string>{};
  j["degradations"] = p.meta.degradations;
  return profile::DumpJson(j, 1) + "\n";
}

StatusOr<CallerCallee> ComputeCallerCallee(const profile::Profile& p, const std::string& query) {
  if (!p.samples || p.samples->samples.empty()) return NotFound("the profile has no samples");
  const auto& sec = *p.samples;
  FunctionIndex fi(sec, false);
  std::vector<bool> match(fi.fns.size(), false);
  bool any = false;
  for (size_t i = 0; i < fi.fns.size(); ++i)
    if (fi.fns[i].first == query) match[i] = any = true;
  if (!any)
    for (size_t i = 0; i < fi.fns.size(); ++i)
      if (fi.fns[i].first.find(query) != std::string::npos) match[i] = any = true;
  if (!any) return NotFound("no sampled function matches '" + query + "'");
  CallerCallee c;
  for (size_t i = 0; i < fi.fns.size(); ++i)
    if (match[i]) c.matched.push_back(fi.fns[i].first + " (" + fi.fns[i].second + ")");
  if (c.matched.size() > 20) c.matched.resize(20);
  double total = 0, self = 0, incl = 0;
  std::map<std::pair<std::string, std::string>, std::pair<double, uint64_t>> callers, callees;
  for (const auto& s : sec.samples) {
    total += s.weight;
    // The outermost occurrence of a match: its caller is above it; the callee is the frame below
    // the innermost occurrence (so recursion is not double counted).
    int outer = -1, inner = -1;
    for (size_t k = 0; k < s.stack.size(); ++k)
      if (match[fi.frame_to_fn[s.stack[k]]]) {
        if (inner < 0) inner = static_cast<int>(k);
        outer = static_cast<int>(k);
      }
    if (outer < 0) continue;
    incl += s.weight;
    if (inner == 0) self += s.weight;
    auto caller = outer + 1 < static_cast<int>(s.stack.size())
                      ? fi.fns[fi.frame_to_fn[s.stack[static_cast<size_t>(outer + 1)]]]
                      : std::make_pair(std::string("[root]"), std::string());
    auto& ce = callers[caller];
    ce.first += s.weight;
    ++ce.second;
    auto callee = inner > 0 ? fi.fns[fi.frame_to_fn[s.stack[static_cast<size_t>(inner - 1)]]]
                            : std::make_pair(std::string("[self]"), std::string());
    auto& cl = callees[callee];
    cl.first += s.weight;
    ++cl.second;
  }
  c.self_pct = total > 0 ? 100 * self / total : 0;
  c.inclusive_pct = total > 0 ? 100 * incl / total : 0;
  auto fill = [&](const auto& m, std::vector<CallerCallee::Edge>* out) {
    for (const auto& [k, v] : m)
      out->push_back({k.first, k.second, incl > 0 ? 100 * v.first / incl : 0, v.second});
    std::sort(out->begin(), out->end(), [](const auto& a, const auto& b) { return a.pct > b.pct; });
  };
  fill(callers, &c.callers);
  fill(callees, &c.callees);
  return c;
}

std::string RenderCallerCallee(const CallerCallee& c) {
  std::string out;
  out += fmt::format(
      "function: {}{}\n", c.matched.empty() ? "?" : c.matched[0],
      c.matched.size() > 1 ? fmt::format(" (+{} more matches)", c.matched.size() - 1) : "");
  for (size_t i = 1; i < c.matched.size(); ++i) out += "          " + c.matched[i] + "\n";
  out +=
      fmt::format("self {:.1f}%, inclusive {:.1f}% of all samples\n", c.self_pct, c.inclusive_pct);
  out += "\ncallers (share of its inclusive time):\n";
  for (const auto& e : c.callers)
    out += fmt::format("  {:>6.1f}%  {:>8}  {}{}\n", e.pct, Thousands(e.samples), e.function,
                       e.module.empty() ? "" : "  [" + e.module + "]");
  out += "\ncallees (share of its inclusive time):\n";
  for (const auto& e : c.callees)
    out += fmt::format("  {:>6.1f}%  {:>8}  {}{}\n", e.pct, Thousands(e.samples), e.function,
                       e.module.empty() ? "" : "  [" + e.module + "]");
  return out;
}

}  // namespace opscope::report
