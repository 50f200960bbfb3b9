// The samples section (call-stack samples from `record` or `profile --sample`): the hot-functions
// table, or the callers and callees of one function (ReportOptions::samples.function), and its
// JSON form, the "hot-json" format.
#include "report/format.h"
#include "report/samples_report.h"

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

Status WriteHotJson(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  if (!p.samples)
    return InvalidArgument(
        "the profile has no call-stack samples (record with `opscope record -- "
        "CMD` or `opscope profile --sample`)");
  *out = RenderHotJson(p, ComputeHotFunctions(p, o.samples));
  return Status::Ok();
}

}  // namespace

OPSCOPE_REGISTER_SECTION(samples, {"samples", 50, "record", &HasSamples, &SamplesTable});
OPSCOPE_REGISTER_FORMAT(hot_json,
                        {"hot-json", ".hot.json",
                         "the hot-functions table as JSON (schema opscope.report.samples/1)",
                         &WriteHotJson});

}  // namespace opscope::report
