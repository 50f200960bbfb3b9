// Writing a profile in the format the user chose (-o FILE by extension, --format to stdout).
#pragma once

#include <string>

#include "base/status.h"
#include "profile/profile.h"
#include "report/format.h"

namespace opscope::cli {

struct OutputChoice {
  std::string path;                       // -o
  std::string format;                     // --format
  const report::Format* resolved = nullptr;
};

// Resolves the format and checks the output path before any work starts.
Status PrepareOutput(OutputChoice& out, const std::string& default_format);
// Writes the profile: to the file (then prints the terminal table to stdout too, unless the file
// itself is the table), or to stdout.
Status EmitProfile(const profile::Profile& p, const OutputChoice& out, const report::ReportOptions& o);

}  // namespace opscope::cli
