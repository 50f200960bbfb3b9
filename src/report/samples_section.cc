// The samples section (call-stack samples from `record` or `profile --sample`): the hot-functions
// table, or the callers and callees of one function (ReportOptions::samples.function), and its
// JSON form, the "hot-json" format.
#include "report/format.h"
#include "report/samples_report.h"
#include "report/timeline.h"

namespace opscope::report {
namespace {

bool HasSamples(const profile::Profile& p) {
  // A record file always has the section (an empty one says why); elsewhere only with samples.
  return p.samples && (p.meta.kind == "record" || !p.samples->samples.empty());
}

Status SamplesTable(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  if (!o.samples.function.empty()) {
    OPSCOPE_ASSIGN_OR_RETURN(CallerCallee cc, ComputeCallerCallee(p, o.samples.function));
    *out = RenderCallerCallee(cc);
    return Status::Ok();
  }
  HotFunctions hot = ComputeHotFunctions(p, o.samples);
  *out = RenderHotTable(p, hot, o.samples, o.color);
  return Status::Ok();
}

// One instant event per sample on the thread it hit, named by its leaf function, with the stack
// (leaf first) and the op it landed in. Samples of `profile --sample` share the op events'
// process, so they sit under the ops of the same thread.
void SamplesTimeline(const profile::Profile& p, const ReportOptions&, Timeline& t) {
  const profile::SampleSection& s = *p.samples;
  const bool with_ops = !p.op_events.empty();
  constexpr size_t kFramesShown = 32;
  for (const profile::Sample& smp : s.samples) {
    std::string leaf = "[unknown]", stack;
    for (size_t i = 0; i < smp.stack.size() && i < kFramesShown; ++i) {
      if (smp.stack[i] >= s.frames.size()) continue;
      const profile::Frame& f = s.frames[smp.stack[i]];
      if (i == 0) leaf = f.function;
      stack += (stack.empty() ? "" : "\n") + f.function + " (" + f.module + ")";
    }
    if (smp.stack.size() > kFramesShown) stack += "\n...";
    nlohmann::json args = {{"stack", stack}, {"weight", smp.weight}, {"unit", s.unit}};
    if (smp.op >= 0 && static_cast<size_t>(smp.op) < p.ops.size())
      args["op"] = p.ops[static_cast<size_t>(smp.op)].name;
    const int pid = with_ops ? Timeline::kOpsPid : smp.pid;
    t.Instant(leaf, "sample", smp.time_ns, pid, smp.tid, std::move(args));
    if (auto it = s.thread_names.find(smp.tid); it != s.thread_names.end())
      t.Thread(pid, smp.tid, it->second);
    if (!with_ops) {
      auto comm = s.thread_names.find(smp.pid);
      t.Process(pid, (comm == s.thread_names.end() ? std::string() : comm->second + " ") + "(pid " +
                         std::to_string(smp.pid) + ", call-stack samples)");
    }
  }
}

Status WriteHotJson(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  if (!p.samples)
    return InvalidArgument(
        "the profile has no call-stack samples (record with `opscope record -- "
        "CMD` or `opscope profile --sample`)");
  *out = RenderHotJson(p, ComputeHotFunctions(p, o.samples));
  return Status::Ok();
}

}  // namespace

OPSCOPE_REGISTER_SECTION(samples, {"samples", 50, "record", &HasSamples, &SamplesTable, nullptr,
                                   nullptr, nullptr, &SamplesTimeline});
OPSCOPE_REGISTER_FORMAT(hot_json, {.name = "hot-json",
                                   .extension = ".hot.json",
                                   .description = "the hot-functions table as JSON (schema "
                                                  "opscope.report.samples/1)",
                                   .write = &WriteHotJson,
                                   .needs = "samples"});

}  // namespace opscope::report
