#include "cli/output.h"

#include "analysis/rules.h"
#include "sections/telemetry/board_probe.h"

namespace opscope::cli {

void AddOutputOptions(CLI::App* app, OutputChoice* out, const std::string& what,
                      std::vector<std::string> sections) {
  out->command = app->get_name();
  out->sections = std::move(sections);
  app->add_option("-o,--output", out->paths,
                  "write to FILE, in the format its extension names (repeatable: one pass, many "
                  "files; '-' is standard output); " +
                      what)
      ->allow_extra_args(false);
  app->add_option(
      "--format", out->format,
      "format NAME (to standard output, or the -o files): " + report::FormatNames(out->sections));
}

Status PrepareOutput(OutputChoice& out, const std::string& default_format) {
  OPSCOPE_ASSIGN_OR_RETURN(out.targets, report::PlanOutputs(out.paths, out.format, default_format));
  for (const report::OutputTarget& t : out.targets)
    if (!report::FormatFits(*t.format, out.sections))
      return InvalidArgument(
          (t.path.empty() ? std::string("--format ") + t.format->name : "-o " + t.path) + ": " +
          (out.command.empty() ? std::string("this command") : out.command) + " cannot write " +
          t.format->name + " (it renders " + t.format->needs + ", which " +
          (out.command.empty() ? std::string("it") : out.command) +
          " does not make); its formats: " + report::FormatNames(out.sections));
  return Status::Ok();
}

Status EmitProfile(const profile::Profile& p, const OutputChoice& out,
                   const report::ReportOptions& o, FILE* stream) {
  // The table first, then the files and their "wrote" lines (what a terminal user reads last).
  if (!report::WritesToStream(out.targets) && !report::WritesFormat(out.targets, "table")) {
    std::string t;
    OPSCOPE_RETURN_IF_ERROR(report::FindFormat("table")->write(p, o, &t));
    OPSCOPE_RETURN_IF_ERROR(report::WriteStream(t, stream));
  }
  return report::WriteOutputs(p, out.targets, o, stream, stderr);
}

Status FinishProfile(profile::Profile* p, const FinishOptions& f, const OutputChoice& out,
                     const report::ReportOptions& o) {
  if (f.on_this_machine) telemetry::DescribeInto(p);
  analysis::Diagnose(p, f.ceilings);
  if (f.more_findings) f.more_findings(p);
  if (Status st = profile::Validate(*p); !st.ok())
    return st.WithPrefix(p->meta.source.empty() ? p->meta.kind : p->meta.source);
  return EmitProfile(*p, out, o, f.stream);
}

}  // namespace opscope::cli
