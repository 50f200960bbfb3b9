// The output options every command shares (-o FILE, repeatable; --format NAME), resolved and
// written by report/output.h. cli/ only binds the flags and picks the stream.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "base/status.h"
#include "profile/profile.h"
#include "report/format.h"
#include "report/output.h"

namespace opscope::cli {

struct OutputChoice {
  std::vector<std::string> paths;  // -o, any number of times
  std::string format;              // --format
  std::vector<report::OutputTarget> targets;
};

// Adds -o/--output (repeatable) and --format to `app`; `what` completes the -o help.
void AddOutputOptions(CLI::App* app, OutputChoice* out, const std::string& what);

// Resolves the formats and checks the output paths before any work starts.
Status PrepareOutput(OutputChoice& out, const std::string& default_format);

// Writes the profile to every target. When every target is a file and none of them is the
// table, the terminal table is also printed on `stream` (what the command shows by default).
Status EmitProfile(const profile::Profile& p, const OutputChoice& out,
                   const report::ReportOptions& o, FILE* stream = stdout);

}  // namespace opscope::cli
