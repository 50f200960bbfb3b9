#include "report/trace_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <vector>

namespace opscope::report {
namespace {

using nlohmann::json;
using Thread = std::pair<int64_t, int64_t>;  // (pid, tid)

constexpr size_t kProblemsShown = 12;

// A slice as written: "X" (ts, dur) or a "B"/"E" pair (ts of each).
struct Span {
  double ts, second;  // µs; `second` is dur for "X", the "E"'s ts for a pair
  bool pair;
  size_t index;  // in traceEvents
  std::string name;
};

// How a reader turns a slice into [begin, end]: Perfetto rounds ts and dur to ns (llround), its
// releases before 2024 truncate them, speedscope and chrome://tracing add ts + dur in doubles.
enum class Reader { kRoundNs, kTruncNs, kDoubleUs };
constexpr Reader kReaders[] = {Reader::kRoundNs, Reader::kTruncNs, Reader::kDoubleUs};
const char* ReaderName(Reader r) {
  switch (r) {
    case Reader::kRoundNs:
      return "as Perfetto reads it (ts and dur rounded to ns)";
    case Reader::kTruncNs:
      return "as older Perfetto reads it (ts and dur truncated to ns)";
    case Reader::kDoubleUs:
      return "as speedscope and chrome://tracing read it (ts + dur in doubles)";
  }
  return "";
}
std::pair<double, double> Bounds(const Span& s, Reader r) {
  auto ns = [&](double us) {
    return r == Reader::kRoundNs ? static_cast<double>(std::llround(us * 1000.0))
                                 : static_cast<double>(static_cast<int64_t>(us * 1000.0));
  };
  if (r == Reader::kDoubleUs) return {s.ts, s.pair ? s.second : s.ts + s.second};
  return {ns(s.ts), s.pair ? ns(s.second) : ns(s.ts) + ns(s.second)};
}

std::string NameOf(const json& e) {
  return e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
}

class Checker {
 public:
  void Problem(size_t index, const json& e, const std::string& what) {
    ++problems_;
    if (shown_.size() >= kProblemsShown) return;
    std::string name = e.is_object() && e.contains("name") && e["name"].is_string()
                           ? e["name"].get<std::string>()
                           : std::string("?");
    shown_.push_back("event " + std::to_string(index) + " '" + name + "': " + what);
  }

  // A µs value as whole ns; false (and a problem) when it is not a number or not whole ns.
  bool Nanos(size_t index, const json& e, const char* key, int64_t* ns) {
    if (!e.contains(key) || !e[key].is_number()) {
      Problem(index, e, std::string("\"") + key + "\" is missing or not a number");
      return false;
    }
    const json& v = e[key];
    const double x = v.get<double>();
    if (!std::isfinite(x) || std::fabs(x) > 9e12) {
      Problem(index, e, std::string("\"") + key + "\" is out of range");
      return false;
    }
    *ns = std::llround(x * 1000.0);
    if (static_cast<double>(*ns) / 1000.0 != x) {
      Problem(index, e,
              std::string("\"") + key + "\" " + v.dump() + " is not a whole number of ns in µs");
      return false;
    }
    return true;
  }

  StatusOr<TraceSummary> Run(std::string_view text) {
    json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return InvalidArgument("not valid JSON");
    if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
      return InvalidArgument("no \"traceEvents\" array at the top level");
    const json& events = doc["traceEvents"];
    std::map<Thread, std::vector<Span>> complete;  // X slices per thread
    std::map<Thread, std::vector<Span>> open;      // B without its E yet
    std::map<Thread, int64_t> last_begin_end;      // ts of the last B/E per thread
    std::set<int64_t> pids_used, pids_named;
    std::set<Thread> threads_used, threads_named;
    for (size_t i = 0; i < events.size(); ++i) {
      const json& e = events[i];
      if (!e.is_object()) {
        Problem(i, e, "not an object");
        continue;
      }
      if (!e.contains("ph") || !e["ph"].is_string() || e["ph"].get<std::string>().size() != 1) {
        Problem(i, e, "\"ph\" is missing or not one character");
        continue;
      }
      const char ph = e["ph"].get<std::string>()[0];
      if (!e.contains("name") || !e["name"].is_string()) Problem(i, e, "\"name\" is missing");
      if (!e.contains("pid") || !e["pid"].is_number_integer() || !e.contains("tid") ||
          !e["tid"].is_number_integer()) {
        Problem(i, e, "\"pid\" or \"tid\" is missing or not an integer");
        continue;
      }
      const Thread th{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()};
      if (ph == 'M') {
        ++summary_.metadata;
        if (!e.contains("args") || !e["args"].is_object())
          Problem(i, e, "metadata without \"args\"");
        const std::string name = NameOf(e);
        if (name == "process_name") pids_named.insert(th.first);
        if (name == "thread_name") threads_named.insert(th);
        continue;
      }
      int64_t ts = 0;
      if (!Nanos(i, e, "ts", &ts)) continue;
      if (ts < 0) Problem(i, e, "\"ts\" is negative");
      pids_used.insert(th.first);
      switch (ph) {
        case 'X': {
          int64_t dur = 0;
          if (!Nanos(i, e, "dur", &dur)) break;
          if (dur < 0) {
            Problem(i, e, "\"dur\" is negative");
            break;
          }
          complete[th].push_back(
              {e["ts"].get<double>(), e["dur"].get<double>(), false, i, NameOf(e)});
          threads_used.insert(th);
          ++summary_.slices;
          if (dur == 0) ++summary_.zero_length;
          break;
        }
        case 'B':
        case 'E': {
          threads_used.insert(th);
          auto [last, fresh] = last_begin_end.emplace(th, ts);
          if (!fresh) {
            if (ts < last->second) Problem(i, e, "\"ts\" goes back in time on its thread");
            last->second = std::max(last->second, ts);
          }
          auto& stack = open[th];
          if (ph == 'B') {
            stack.push_back({e["ts"].get<double>(), 0, true, i, NameOf(e)});
            break;
          }
          if (stack.empty()) {
            Problem(i, e, "\"E\" without a \"B\" on its thread");
            break;
          }
          Span s = stack.back();
          stack.pop_back();
          if (e.contains("name") && e["name"].is_string() && e["name"] != s.name &&
              !e["name"].get<std::string>().empty())
            Problem(i, e, "\"E\" names another slice than its \"B\" ('" + s.name + "')");
          s.second = e["ts"].get<double>();
          complete[th].push_back(s);
          ++summary_.slices;
          if (s.second == s.ts) ++summary_.zero_length;
          break;
        }
        case 'i':
        case 'I': {
          threads_used.insert(th);
          ++summary_.instants;
          if (e.contains("s")) {
            const json& s = e["s"];
            if (!s.is_string() || (s != "t" && s != "p" && s != "g"))
              Problem(i, e, "instant scope \"s\" is not t, p or g");
          }
          break;
        }
        case 'C': {
          ++summary_.counters;
          if (!e.contains("args") || !e["args"].is_object() || e["args"].empty()) {
            Problem(i, e, "counter without values in \"args\"");
            break;
          }
          for (const auto& [k, v] : e["args"].items())
            if (!v.is_number()) Problem(i, e, "counter series '" + k + "' is not a number");
          break;
        }
        default:
          break;  // other phases (flows, async) are not written by opscope; left to viewers
      }
    }
    for (const auto& [th, stack] : open)
      for (const Span& s : stack) Problem(s.index, events[s.index], "\"B\" without its \"E\"");

    // Exact nesting per thread, as each reader computes the bounds: by start, longer first (a
    // parent before the children it contains); a slice that starts inside the one on top of the
    // stack must end inside it.
    for (auto& [th, spans] : complete)
      for (Reader reader : kReaders) {
        std::vector<std::pair<std::pair<double, double>, const Span*>> order;
        for (const Span& s : spans) order.push_back({Bounds(s, reader), &s});
        std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
          return a.first.first != b.first.first ? a.first.first < b.first.first
                                                : a.first.second > b.first.second;
        });
        std::vector<const std::pair<std::pair<double, double>, const Span*>*> stack;
        for (const auto& item : order) {
          const auto [begin, end] = item.first;
          while (!stack.empty() && stack.back()->first.second <= begin) stack.pop_back();
          if (!stack.empty() && end > stack.back()->first.second) {
            const Span& up = *stack.back()->second;
            const double over = end - stack.back()->first.second;
            Problem(item.second->index, events[item.second->index],
                    "ends " +
                        (reader == Reader::kDoubleUs ? fmt::format("{:.3g} µs", over)
                                                     : fmt::format("{:.0f} ns", over)) +
                        " after its parent '" + up.name + "' (event " + std::to_string(up.index) +
                        ") on pid " + std::to_string(th.first) + " tid " +
                        std::to_string(th.second) + ", " + ReaderName(reader));
          }
          stack.push_back(&item);
          summary_.max_depth = std::max(summary_.max_depth, static_cast<int>(stack.size()));
        }
      }
    for (int64_t pid : pids_used)
      if (!pids_named.count(pid)) {
        ++problems_;
        if (shown_.size() < kProblemsShown)
          shown_.push_back("pid " + std::to_string(pid) + " has no process_name");
      }
    for (const Thread& th : threads_used)
      if (!threads_named.count(th)) {
        ++problems_;
        if (shown_.size() < kProblemsShown)
          shown_.push_back("pid " + std::to_string(th.first) + " tid " + std::to_string(th.second) +
                           " has no thread_name");
      }
    summary_.threads = static_cast<int64_t>(threads_used.size());
    if (summary_.slices + summary_.instants + summary_.counters == 0)
      shown_.insert(shown_.begin(), "no events to show (only metadata, or nothing)"), ++problems_;
    if (problems_ == 0) return summary_;
    std::string msg = std::to_string(problems_) + " problem(s):";
    for (const std::string& s : shown_) msg += "\n  " + s;
    if (problems_ > shown_.size()) msg += "\n  ...";
    return InvalidArgument(msg);
  }

 private:
  TraceSummary summary_;
  size_t problems_ = 0;
  std::vector<std::string> shown_;
};

}  // namespace

StatusOr<TraceSummary> CheckChromeTrace(std::string_view json_text) {
  return Checker().Run(json_text);
}

}  // namespace opscope::report
