// Chrome Trace Event format (JSON object form), read by Perfetto UI, chrome://tracing and
// speedscope.
//
// What each consumer needs, checked against their readers (report/trace_check.h checks every
// trace the tests write against these rules):
// - `ts`/`dur` in microseconds from the first event, each a whole number of nanoseconds (three
//   decimals at most; no displayTimeUnit: older Perfetto reads "ms" as the unit of `ts`);
// - complete ("X") slices that nest exactly on each thread as every reader computes an end:
//   Perfetto rounds ts and dur to integer ns (older releases truncate), speedscope and
//   chrome://tracing add ts + dur in doubles. A slice that starts inside another is clamped into
//   it in ns (a range that ended after its parent on a skewed clock), and then shortened by the
//   nanosecond or two that a reader's rounding would put past its parent's end or its next
//   sibling's start (a sibling that starts where the last one ended is what made speedscope
//   draw a staircase). Slices are written sorted per thread;
// - process_name / thread_name metadata ("M") for every pid/tid used, and sort indices;
// - ops: one complete event per node per run on the thread the op timer saw (the engine's
//   dispatching thread: its args say so, with the worker-thread count), inside one "run N" slice
//   per run. A fused step is a slice of its own (its measured time) holding its nodes' slices,
//   which split it by estimated cost and carry "estimated": true; a node estimated at no time of
//   its own (a BatchNormalization folded into its Conv) is an instant event inside the step, not
//   a zero-length slice that no viewer shows;
// - ranges: one process per run when the source knows the run (`opscope run`), else one process;
// - GPU kernels and copies per stream in a "GPU" process, API calls on the host threads;
// - counter ("C") tracks for the CPU clock and temperature opscope samples once per run;
// - whatever tracks the profile's sections add (Section::timeline: call-stack samples as instant
//   events, the memory section's live-bytes counter, ...).
// A profile with nothing to place on a timeline (a `stat` profile: counter totals only) is
// refused with the reason, never written as an empty trace.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "base/strings.h"
#include "profile/attached.h"
#include "profile/json_text.h"
#include "report/format.h"
#include "report/timeline.h"

namespace opscope::report {
namespace {

using nlohmann::json;

constexpr int kOpsPid = 1;
constexpr int kGpuPid = 1000000;  // far from the run pids (1 + run)

json Meta(const char* what, int pid, int tid, const std::string& name) {
  return {{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

// A µs value of the trace: whole ns, written as the double nearest to ns / 1000, which prints
// with three decimals at most.
double Us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

// Where a reader puts a point of the trace, from the `ts` (and `dur`) it reads: in doubles as
// speedscope and chrome://tracing add them, truncated to ns (Perfetto before 2024) and rounded to
// ns (Perfetto now).
struct Reading {
  double us;
  int64_t trunc_ns, round_ns;
  bool NotAfter(const Reading& o) const {
    return us <= o.us && trunc_ns <= o.trunc_ns && round_ns <= o.round_ns;
  }
};
Reading StartAsRead(int64_t start_ns) {
  const double ts = Us(start_ns);
  return {ts, static_cast<int64_t>(ts * 1000.0), std::llround(ts * 1000.0)};
}
Reading EndAsRead(int64_t start_ns, int64_t dur_ns) {
  const double ts = Us(start_ns), dur = Us(dur_ns);
  return {ts + dur, static_cast<int64_t>(ts * 1000.0) + static_cast<int64_t>(dur * 1000.0),
          std::llround(ts * 1000.0) + std::llround(dur * 1000.0)};
}

// A complete slice before placement: times in ns from the trace's origin.
struct Slice {
  int pid, tid;
  int64_t start_ns, end_ns;
  json event;    // without ts and dur
  int rank;      // at equal spans the lower rank holds the other: run 0, fused step 1, else 2
  size_t order;  // as added: ties keep it
};

// Nests each thread's slices exactly (the contract at the top of this file) and appends them to
// `events`, sorted per thread. Returns how many were clamped into their parent.
int64_t PlaceSlices(std::vector<Slice>& slices, json& events) {
  std::stable_sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
    if (a.pid != b.pid) return a.pid < b.pid;
    if (a.tid != b.tid) return a.tid < b.tid;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    if (a.end_ns != b.end_ns) return a.end_ns > b.end_ns;  // a parent before its children
    return a.rank < b.rank;
  });
  int64_t clamped = 0;
  const size_t n = slices.size();
  std::vector<int64_t> parent(n, -1), next_start(n, -1), dur(n, 0);
  for (size_t begin = 0; begin < n;) {
    size_t end = begin;
    while (end < n && slices[end].pid == slices[begin].pid && slices[end].tid == slices[begin].tid)
      ++end;
    // In ns: clamp each slice into the one it starts in; note parents and next siblings.
    std::vector<size_t> stack;
    int64_t last_top = -1;
    std::map<size_t, int64_t> last_child;
    for (size_t i = begin; i < end; ++i) {
      Slice& s = slices[i];
      while (!stack.empty() && slices[stack.back()].end_ns <= s.start_ns) stack.pop_back();
      if (!stack.empty()) {
        const Slice& up = slices[stack.back()];
        if (s.end_ns > up.end_ns) {
          s.event["args"]["clamped_ns"] = s.end_ns - up.end_ns;
          s.end_ns = up.end_ns;
          ++clamped;
        }
        parent[i] = static_cast<int64_t>(stack.back());
        auto [it, fresh] = last_child.emplace(stack.back(), static_cast<int64_t>(i));
        if (!fresh) {
          next_start[static_cast<size_t>(it->second)] = s.start_ns;
          it->second = static_cast<int64_t>(i);
        }
      } else {
        if (last_top >= 0) next_start[static_cast<size_t>(last_top)] = s.start_ns;
        last_top = static_cast<int64_t>(i);
      }
      stack.push_back(i);
    }
    // As read: parents come first in this order, so each limit is final when it is used.
    for (size_t i = begin; i < end; ++i) {
      const Slice& s = slices[i];
      int64_t d = s.end_ns - s.start_ns;
      auto fits = [&](int64_t dk) {
        const Reading e = EndAsRead(s.start_ns, dk);
        if (parent[i] >= 0) {
          const size_t up = static_cast<size_t>(parent[i]);
          if (!e.NotAfter(EndAsRead(slices[up].start_ns, dur[up]))) return false;
        }
        return next_start[i] < 0 || e.NotAfter(StartAsRead(next_start[i]));
      };
      while (d > 0 && !fits(d)) --d;
      dur[i] = d;
    }
    begin = end;
  }
  for (size_t i = 0; i < n; ++i) {
    json ev = std::move(slices[i].event);
    ev["ts"] = Us(slices[i].start_ns);
    ev["dur"] = Us(dur[i]);
    events.push_back(std::move(ev));
  }
  return clamped;
}

Status WriteChrome(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  // Every section's tracks: `only` picks the tables a command prints, not what a timeline holds.
  Timeline tl;
  ReportOptions every = o;
  every.only.clear();
  for (const Section* s : PresentSections(p, every))
    if (s->timeline) s->timeline(p, o, tl);
  int64_t t0 = std::numeric_limits<int64_t>::max();
  for (const auto& e : tl.events()) t0 = std::min(t0, e.at_ns);
  for (const auto& e : p.op_events) t0 = std::min(t0, e.start_ns);
  for (const auto& r : p.ranges) t0 = std::min(t0, r.start_ns);
  if (p.gpu) {
    for (const auto& k : p.gpu->kernels) t0 = std::min(t0, k.start_ns);
    for (const auto& m : p.gpu->memcpys) t0 = std::min(t0, m.start_ns);
    for (const auto& a : p.gpu->api_calls) t0 = std::min(t0, a.start_ns);
  }
  if (t0 == std::numeric_limits<int64_t>::max()) t0 = 0;
  auto us = [&](int64_t ns) { return Us(ns - t0); };
  const std::string source = p.meta.source.empty() ? "opscope " + p.meta.kind : p.meta.source;

  json events = json::array();
  std::vector<Slice> slices;
  auto slice = [&](const std::string& name, const std::string& cat, int64_t start_ns,
                   int64_t end_ns, int pid, int tid, json args, int rank = 2) {
    slices.push_back({pid, tid, start_ns - t0, std::max(start_ns, end_ns) - t0,
                      SliceEvent(name, cat, pid, tid, std::move(args)), rank, slices.size()});
  };
  std::set<std::pair<int, int>> threads;                // (pid, tid) that carry events
  std::map<int, std::string> processes;                 // pid -> name
  std::map<int, std::pair<int64_t, int64_t>> run_span;  // run -> [start, end] ns (ops or ranges)
  auto widen = [&](int run, int64_t a, int64_t b) {
    auto [it, fresh] = run_span.emplace(run, std::make_pair(a, b));
    if (!fresh) it->second = {std::min(it->second.first, a), std::max(it->second.second, b)};
  };

  // Ops.
  const std::string thread_note =
      "the op timer records the thread that dispatched the op; its work runs on the engine's " +
      std::to_string(std::max(1, p.meta.threads)) + " thread(s)";
  std::map<int, int> run_tid;  // run -> dispatching tid
  // A fused step: the back-to-back events of its nodes on one thread in one run (a step inside
  // a loop body runs once per iteration: one step each time).
  struct Step {
    int run, tid;
    std::string name;
    int64_t start, end;
    std::vector<const profile::OpEvent*> parts;
  };
  std::vector<Step> steps;
  std::vector<const profile::OpEvent*> by_thread;
  for (const auto& e : p.op_events) by_thread.push_back(&e);
  std::stable_sort(by_thread.begin(), by_thread.end(),
                   [](const profile::OpEvent* a, const profile::OpEvent* b) {
                     return a->tid != b->tid ? a->tid < b->tid : a->start_ns < b->start_ns;
                   });
  for (size_t i = 0; i < by_thread.size(); ++i) {
    const profile::OpEvent* e = by_thread[i];
    const auto& op = p.ops[static_cast<size_t>(e->op)];
    if (op.step.empty() || op.status != profile::OpStatus::kFused) continue;
    const Step* last = steps.empty() ? nullptr : &steps.back();
    const bool again =
        last && std::any_of(last->parts.begin(), last->parts.end(),
                            [&](const profile::OpEvent* x) { return x->op == e->op; });
    if (!last || again || last->run != e->run || last->tid != e->tid || last->name != op.step ||
        i == 0 || last->parts.back() != by_thread[i - 1])
      steps.push_back({e->run, e->tid, op.step, e->start_ns, e->start_ns, {}});
    Step& st = steps.back();
    st.start = std::min(st.start, e->start_ns);
    st.end = std::max(st.end, e->start_ns + e->dur_ns);
    st.parts.push_back(e);
  }
  for (const auto& e : p.op_events) {
    const auto& op = p.ops[static_cast<size_t>(e.op)];
    json args = {{"op_type", op.op_type},
                 {"run", e.run},
                 {"status", profile::OpStatusName(op.status)},
                 {"thread", thread_note}};
    std::vector<std::string> in, outs;
    for (const auto& s : op.input_shapes) in.push_back(ShapeToString(s));
    for (const auto& s : op.output_shapes) outs.push_back(ShapeToString(s));
    args["input_shapes"] = Join(in, ", ");
    args["output_shapes"] = Join(outs, ", ");
    if (op.flops > 0) args["flops"] = op.flops;
    if (op.bytes > 0) args["bytes"] = op.bytes;
    const bool fused = !op.step.empty() && op.status == profile::OpStatus::kFused;
    if (fused) {
      args["step"] = op.step;
      args["estimated"] = true;
      args["attribution"] = op.attribution;
    }
    if (fused && e.dur_ns <= 0) {
      // No time of its own by the estimate: a mark inside its step, findable by name.
      args["note"] = "estimated at no time of its own in the fused step (it runs inside it)";
      events.push_back({{"name", op.name},
                        {"cat", op.op_type},
                        {"ph", "i"},
                        {"s", "t"},
                        {"ts", us(e.start_ns)},
                        {"pid", kOpsPid},
                        {"tid", e.tid},
                        {"args", args}});
    } else {
      slice(op.name, op.op_type, e.start_ns, e.start_ns + e.dur_ns, kOpsPid, e.tid, args);
    }
    threads.insert({kOpsPid, e.tid});
    processes[kOpsPid] = "opscope: " + source;
    widen(e.run, e.start_ns, e.start_ns + e.dur_ns);
    run_tid.emplace(e.run, e.tid);
  }
  for (const Step& st : steps) {
    std::vector<std::string> types, split;
    const double total = static_cast<double>(std::max<int64_t>(1, st.end - st.start));
    for (const profile::OpEvent* e : st.parts) {
      const auto& op = p.ops[static_cast<size_t>(e->op)];
      types.push_back(op.op_type);
      split.push_back(
          fmt::format("{} {:.1f}%", op.name, 100.0 * static_cast<double>(e->dur_ns) / total));
    }
    slice(st.name + " (fused: " + Join(types, "+") + ")", "fused step", st.start, st.end, kOpsPid,
          st.tid,
          {{"run", st.run},
           {"step", st.name},
           {"measured",
            "the step's time as measured; its nodes' slices split it by estimated "
            "cost"},
           {"split", Join(split, ", ")}},
          /*rank=*/1);
  }
  for (const auto& [run, span] : run_span)
    slice("run " + std::to_string(run), "run", span.first, span.second, kOpsPid, run_tid[run],
          {{"run", run}}, /*rank=*/0);
  const bool op_runs = !run_span.empty();

  // Ranges: one process per run where the run is known (`run -p`: the one attached span).
  const bool attached = profile::IsAttachedSpan(p);
  std::map<int, std::pair<int64_t, int64_t>> range_runs;
  std::map<int, int> range_run_tid;
  for (const auto& r : p.ranges) {
    const int pid = r.run >= 0 ? 1 + r.run : kOpsPid;
    json args = {{"depth", r.depth}};
    if (r.run >= 0) args["run"] = r.run;
    for (const auto& [k, v] : r.counters) args[k] = v;
    slice(r.name, r.domain.empty() ? "range" : r.domain, r.start_ns, r.end_ns, pid, r.tid,
          std::move(args));
    threads.insert({pid, r.tid});
    if (r.run >= 0) {
      processes[pid] = source + (attached ? std::string(" (attached span)")
                                          : " (run " + std::to_string(r.run) + ")");
      auto [it, fresh] = range_runs.emplace(r.run, std::make_pair(r.start_ns, r.end_ns));
      if (!fresh)
        it->second = {std::min(it->second.first, r.start_ns),
                      std::max(it->second.second, r.end_ns)};
      if (r.depth == 0) range_run_tid.emplace(r.run, r.tid);
    } else {
      processes.emplace(pid, "opscope: " + source);
    }
  }
  for (const auto& [run, span] : range_runs)
    slice(attached ? std::string("attached span") : "run " + std::to_string(run), "run", span.first,
          span.second, 1 + run, range_run_tid.count(run) ? range_run_tid[run] : 0, {{"run", run}},
          /*rank=*/0);

  // GPU.
  if (p.gpu) {
    processes[kGpuPid] = "GPU " + p.gpu->device_name;
    for (const auto& k : p.gpu->kernels) {
      slice(k.name, "kernel", k.start_ns, k.end_ns, kGpuPid, k.stream,
            {{"correlation_id", k.correlation_id}});
      threads.insert({kGpuPid, k.stream});
    }
    for (const auto& m : p.gpu->memcpys) {
      slice("memcpy " + m.kind, "memcpy", m.start_ns, m.end_ns, kGpuPid, m.stream,
            {{"bytes", m.bytes}, {"pageable", m.pageable}});
      threads.insert({kGpuPid, m.stream});
    }
    for (const auto& a : p.gpu->api_calls) {
      slice(a.name, "cuda_api", a.start_ns, a.end_ns, kOpsPid, a.tid,
            {{"correlation_id", a.correlation_id}});
      threads.insert({kOpsPid, a.tid});
      processes.emplace(kOpsPid, "opscope: " + source);
    }
  }

  // The sections' tracks.
  for (const auto& e : tl.events()) {
    json ev = e.event;
    const int pid = ev["pid"].get<int>(), tid = ev["tid"].get<int>();
    if (ev["ph"] != "C") threads.insert({pid, tid});
    if (ev["ph"] == "X") {
      slices.push_back({pid, tid, e.at_ns - t0, e.at_ns - t0 + std::max<int64_t>(0, e.dur_ns),
                        std::move(ev), 2, slices.size()});
      continue;
    }
    ev["ts"] = us(e.at_ns);
    events.push_back(std::move(ev));
  }
  for (const auto& [pid, name] : tl.processes()) processes.emplace(pid, name);

  // Clock and temperature counter tracks: one value per run, at the run's start.
  for (const auto& c : p.clocks) {
    int pid = kOpsPid;
    int64_t at = 0;
    if (op_runs && run_span.count(c.run)) {
      at = run_span[c.run].first;
    } else if (range_runs.count(c.run)) {
      pid = 1 + c.run;
      at = range_runs[c.run].first;
    } else {
      continue;  // a warm-up run, or a run that left no event to place it at
    }
    if (c.cpu_mhz > 0)
      events.push_back({{"name", "CPU clock (MHz)"},
                        {"ph", "C"},
                        {"ts", us(at)},
                        {"pid", pid},
                        {"tid", 0},
                        {"args", {{"MHz", c.cpu_mhz}}}});
    if (c.temp_c > 0)
      events.push_back({{"name", "temperature (°C)"},
                        {"ph", "C"},
                        {"ts", us(at)},
                        {"pid", pid},
                        {"tid", 0},
                        {"args", {{"C", c.temp_c}}}});
  }

  if (slices.empty() && events.empty()) {
    const std::string what =
        p.meta.kind.empty() ? std::string("the profile") : "this " + p.meta.kind + " profile";
    return Unsupported(
        "nothing to draw: " + what +
        " has no timed events (no op events, ranges, GPU activity, call-stack samples, or clock "
        "and board readings over time)" +
        (p.stat ? std::string("; a stat profile holds counter totals only: use the table, .csv or "
                              ".json")
                : std::string()) +
        "; no trace written");
  }
  PlaceSlices(slices, events);

  // Metadata.
  for (const auto& [pid, name] : processes) {
    events.push_back(Meta("process_name", pid, 0, name));
    events.push_back({{"name", "process_sort_index"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"sort_index", pid}}}});
  }
  for (const auto& [pid, tid] : threads) {
    std::string name;
    if (pid == kGpuPid)
      name = "stream " + std::to_string(tid);
    else if (tl.threads().count({pid, tid}))
      name = tl.threads().at({pid, tid});
    else if (p.samples && p.samples->thread_names.count(tid))
      name = p.samples->thread_names.at(tid);
    else if (!p.op_events.empty() && pid == kOpsPid && run_tid.size() &&
             tid == run_tid.begin()->second)
      name = "engine dispatch (ops)";
    else
      name = "thread " + std::to_string(tid);
    events.push_back(Meta("thread_name", pid, tid, name));
  }
  json doc = {{"traceEvents", events},
              {"otherData",
               {{"schema", profile::kSchema}, {"source", p.meta.source}, {"kind", p.meta.kind}}}};
  *out = profile::DumpJson(doc) + "\n";
  return Status::Ok();
}

}  // namespace
OPSCOPE_REGISTER_FORMAT(chrome, {"chrome", ".trace.json",
                                 "Chrome Trace Event format (Perfetto UI, chrome://tracing): ops, "
                                 "ranges, GPU activity, clocks",
                                 &WriteChrome, ".chrome.json"});
}  // namespace opscope::report
