// Chrome Trace Event format (JSON object form): one complete ("X") event per node per run on the
// thread that ran it, plus one event per run and per annotated range; loads in Perfetto UI and
// chrome://tracing. Timestamps are microseconds from the first event.
#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "report/format.h"

namespace opscope::report {
namespace {

Status WriteChrome(const profile::Profile& p, const ReportOptions&, std::string* out) {
  using nlohmann::json;
  int64_t t0 = std::numeric_limits<int64_t>::max();
  for (const auto& e : p.op_events) t0 = std::min(t0, e.start_ns);
  for (const auto& r : p.ranges) t0 = std::min(t0, r.start_ns);
  if (p.gpu) {
    for (const auto& k : p.gpu->kernels) t0 = std::min(t0, k.start_ns);
    for (const auto& m : p.gpu->memcpys) t0 = std::min(t0, m.start_ns);
    for (const auto& a : p.gpu->api_calls) t0 = std::min(t0, a.start_ns);
  }
  if (t0 == std::numeric_limits<int64_t>::max()) t0 = 0;
  auto us = [&](int64_t ns) { return (ns - t0) / 1000.0; };
  const int pid = 1;
  json events = json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0},
                    {"args", {{"name", "opscope: " + p.meta.source}}}});
  std::vector<int> tids;
  for (const auto& e : p.op_events) {
    const auto& op = p.ops[e.op];
    json args = {{"op_type", op.op_type}, {"run", e.run}, {"status", op.status}};
    std::vector<std::string> in, outs;
    for (const auto& s : op.input_shapes) in.push_back(ShapeToString(s));
    for (const auto& s : op.output_shapes) outs.push_back(ShapeToString(s));
    args["input_shapes"] = Join(in, ", ");
    args["output_shapes"] = Join(outs, ", ");
    if (op.flops > 0) args["flops"] = op.flops;
    if (op.bytes > 0) args["bytes"] = op.bytes;
    if (!op.step.empty() && op.status == "fused") args["step"] = op.step;
    events.push_back({{"name", op.name}, {"cat", op.op_type}, {"ph", "X"}, {"ts", us(e.start_ns)},
                      {"dur", e.dur_ns / 1000.0}, {"pid", pid}, {"tid", e.tid}, {"args", args}});
    if (std::find(tids.begin(), tids.end(), e.tid) == tids.end()) tids.push_back(e.tid);
  }
  for (const auto& r : p.ranges) {
    events.push_back({{"name", r.name}, {"cat", r.domain.empty() ? "range" : r.domain}, {"ph", "X"},
                      {"ts", us(r.start_ns)}, {"dur", (r.end_ns - r.start_ns) / 1000.0},
                      {"pid", pid}, {"tid", r.tid}, {"args", {{"depth", r.depth}}}});
  }
  if (p.gpu) {
    const int gpid = 2;
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", gpid}, {"tid", 0},
                      {"args", {{"name", "GPU " + p.gpu->device_name}}}});
    for (const auto& k : p.gpu->kernels)
      events.push_back({{"name", k.name}, {"cat", "kernel"}, {"ph", "X"}, {"ts", us(k.start_ns)},
                        {"dur", (k.end_ns - k.start_ns) / 1000.0}, {"pid", gpid}, {"tid", k.stream},
                        {"args", {{"correlation_id", k.correlation_id}}}});
    for (const auto& m : p.gpu->memcpys)
      events.push_back({{"name", "memcpy " + m.kind}, {"cat", "memcpy"}, {"ph", "X"}, {"ts", us(m.start_ns)},
                        {"dur", (m.end_ns - m.start_ns) / 1000.0}, {"pid", gpid}, {"tid", m.stream},
                        {"args", {{"bytes", m.bytes}, {"pageable", m.pageable}}}});
    for (const auto& a : p.gpu->api_calls)
      events.push_back({{"name", a.name}, {"cat", "cuda_api"}, {"ph", "X"}, {"ts", us(a.start_ns)},
                        {"dur", (a.end_ns - a.start_ns) / 1000.0}, {"pid", pid}, {"tid", a.tid},
                        {"args", {{"correlation_id", a.correlation_id}}}});
  }
  json doc = {{"traceEvents", events}, {"displayTimeUnit", "ms"},
              {"otherData", {{"schema", profile::kSchema}, {"source", p.meta.source}}}};
  *out = doc.dump() + "\n";
  return Status::Ok();
}

}  // namespace
OPSCOPE_REGISTER_FORMAT(chrome, {"chrome", ".trace.json", "Chrome Trace Event format (Perfetto UI, chrome://tracing)", &WriteChrome});
}  // namespace opscope::report
