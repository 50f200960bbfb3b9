// Chrome Trace Event format (JSON object form), read by Perfetto UI and chrome://tracing.
//
// What each consumer needs, checked against their readers:
// - `ts`/`dur` in microseconds from the first event (no displayTimeUnit: older Perfetto reads
//   "ms" as the unit of `ts`);
// - process_name / thread_name metadata ("M") for every pid/tid used, and sort indices;
// - ops: one complete ("X") event per node per run on the thread the op timer saw (the engine's
//   dispatching thread: its args say so, with the worker-thread count), inside one "run N" slice
//   per run; fused-step splits carry "estimated": true and how they were split;
// - ranges: one process per run when the source knows the run (`opscope run`), else one process;
// - GPU kernels and copies per stream in a "GPU" process, API calls on the host threads;
// - counter ("C") tracks for the CPU clock and temperature opscope samples once per run;
// - whatever tracks the profile's sections add (Section::timeline: call-stack samples as instant
//   events, the memory section's live-bytes counter, ...).
#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

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
  auto us = [&](int64_t ns) { return static_cast<double>(ns - t0) / 1000.0; };
  const std::string source = p.meta.source.empty() ? "opscope " + p.meta.kind : p.meta.source;

  json events = json::array();
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
    if (!op.step.empty() && op.status == profile::OpStatus::kFused) {
      args["step"] = op.step;
      args["estimated"] = true;
      args["attribution"] = op.attribution;
    }
    events.push_back({{"name", op.name},
                      {"cat", op.op_type},
                      {"ph", "X"},
                      {"ts", us(e.start_ns)},
                      {"dur", e.dur_ns / 1000.0},
                      {"pid", kOpsPid},
                      {"tid", e.tid},
                      {"args", args}});
    threads.insert({kOpsPid, e.tid});
    processes[kOpsPid] = "opscope: " + source;
    widen(e.run, e.start_ns, e.start_ns + e.dur_ns);
    run_tid.emplace(e.run, e.tid);
  }
  for (const auto& [run, span] : run_span)
    events.push_back({{"name", "run " + std::to_string(run)},
                      {"cat", "run"},
                      {"ph", "X"},
                      {"ts", us(span.first)},
                      {"dur", (span.second - span.first) / 1000.0},
                      {"pid", kOpsPid},
                      {"tid", run_tid[run]},
                      {"args", {{"run", run}}}});
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
    events.push_back({{"name", r.name},
                      {"cat", r.domain.empty() ? "range" : r.domain},
                      {"ph", "X"},
                      {"ts", us(r.start_ns)},
                      {"dur", (r.end_ns - r.start_ns) / 1000.0},
                      {"pid", pid},
                      {"tid", r.tid},
                      {"args", args}});
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
  for (const auto& [run, span] : range_runs) {
    events.push_back(
        {{"name", attached ? std::string("attached span") : "run " + std::to_string(run)},
         {"cat", "run"},
         {"ph", "X"},
         {"ts", us(span.first)},
         {"dur", (span.second - span.first) / 1000.0},
         {"pid", 1 + run},
         {"tid", range_run_tid.count(run) ? range_run_tid[run] : 0},
         {"args", {{"run", run}}}});
  }

  // GPU.
  if (p.gpu) {
    processes[kGpuPid] = "GPU " + p.gpu->device_name;
    for (const auto& k : p.gpu->kernels) {
      events.push_back({{"name", k.name},
                        {"cat", "kernel"},
                        {"ph", "X"},
                        {"ts", us(k.start_ns)},
                        {"dur", (k.end_ns - k.start_ns) / 1000.0},
                        {"pid", kGpuPid},
                        {"tid", k.stream},
                        {"args", {{"correlation_id", k.correlation_id}}}});
      threads.insert({kGpuPid, k.stream});
    }
    for (const auto& m : p.gpu->memcpys) {
      events.push_back({{"name", "memcpy " + m.kind},
                        {"cat", "memcpy"},
                        {"ph", "X"},
                        {"ts", us(m.start_ns)},
                        {"dur", (m.end_ns - m.start_ns) / 1000.0},
                        {"pid", kGpuPid},
                        {"tid", m.stream},
                        {"args", {{"bytes", m.bytes}, {"pageable", m.pageable}}}});
      threads.insert({kGpuPid, m.stream});
    }
    for (const auto& a : p.gpu->api_calls) {
      events.push_back({{"name", a.name},
                        {"cat", "cuda_api"},
                        {"ph", "X"},
                        {"ts", us(a.start_ns)},
                        {"dur", (a.end_ns - a.start_ns) / 1000.0},
                        {"pid", kOpsPid},
                        {"tid", a.tid},
                        {"args", {{"correlation_id", a.correlation_id}}}});
      threads.insert({kOpsPid, a.tid});
      processes.emplace(kOpsPid, "opscope: " + source);
    }
  }

  // The sections' tracks.
  for (const auto& e : tl.events()) {
    json ev = e.event;
    ev["ts"] = us(e.at_ns);
    const int pid = ev["pid"].get<int>(), tid = ev["tid"].get<int>();
    if (ev["ph"] != "C") threads.insert({pid, tid});
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

  // Metadata.
  for (const auto& [pid, name] : processes) {
    events.push_back(Meta("process_name", pid, 0, name));
    events.push_back({{"name", "process_sort_index"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"sort_index", pid}}}});
  }
  std::set<int> gpu_streams;
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
