#include "cli/output.h"

#include <unistd.h>

#include <cstdio>

#include "base/files.h"

namespace opscope::cli {

Status PrepareOutput(OutputChoice& out, const std::string& default_format) {
  OPSCOPE_ASSIGN_OR_RETURN(out.resolved, report::ChooseFormat(out.path, out.format, default_format));
  if (!out.path.empty()) OPSCOPE_RETURN_IF_ERROR(CheckWritable(out.path));
  return Status::Ok();
}

Status EmitProfile(const profile::Profile& p, const OutputChoice& out, const report::ReportOptions& o) {
  std::string text;
  OPSCOPE_RETURN_IF_ERROR(out.resolved->write(p, o, &text));
  if (out.path.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return Status::Ok();
  }
  OPSCOPE_RETURN_IF_ERROR(WriteFileAtomic(out.path, text));
  if (std::string(out.resolved->name) != "table") {
    const report::Format* table = report::FindFormat("table");
    std::string t;
    if (table && table->write(p, o, &t).ok()) std::fwrite(t.data(), 1, t.size(), stdout);
  }
  std::fprintf(stdout, "\nwrote %s (%s)\n", out.path.c_str(), out.resolved->name);
  std::fflush(stdout);
  return Status::Ok();
}

}  // namespace opscope::cli
