// The output options every command shares (-o FILE, repeatable; --format NAME), resolved and
// written by report/output.h. cli/ only binds the flags and picks the stream.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "profile/profile.h"
#include "report/format.h"
#include "report/output.h"
#include "report/say.h"  // the status lines every command prints

namespace opscope::cli {

struct OutputChoice {
  std::vector<std::string> paths;  // -o, any number of times
  std::string format;              // --format
  std::vector<report::OutputTarget> targets;
  std::string command;                // the subcommand, for messages
  std::vector<std::string> sections;  // the sections it can make; empty = any (report, import)
};

// Adds -o/--output (repeatable) and --format to `app`; `what` completes the -o help. `sections`
// are the sections the command can make ("ops", "stat", "ranges", "gpu", "samples", ...): --help
// lists only the formats that fit them, and PrepareOutput refuses the others.
void AddOutputOptions(CLI::App* app, OutputChoice* out, const std::string& what,
                      std::vector<std::string> sections = {});

// Resolves the formats and checks the output paths before any work starts.
Status PrepareOutput(OutputChoice& out, const std::string& default_format);

// How a command's profile is finished (FinishProfile).
struct FinishOptions {
  // Whether the profile was measured on this machine (not imported or re-read): its board
  // telemetry is described into it unless the source already sampled it.
  bool on_this_machine = true;
  // The machine ceilings for the roofline; null when none are known.
  const profile::MachineCeilings* ceilings = nullptr;
  // Findings only the command can make (`gpu`: its summary's), added after the rules.
  std::function<void(profile::Profile*)> more_findings;
  FILE* stream = stdout;  // where the table goes (stat: stderr, the program owns stdout)
};

// The one tail of every command that makes a profile (profile, stat, run, gpu, import): the
// board telemetry, Diagnose (every rule that applies), Validate (an invalid profile is an error
// naming the source, never written), then EmitProfile. Commands differ only in what they
// collected and in `f`.
Status FinishProfile(profile::Profile* p, const FinishOptions& f, const OutputChoice& out,
                     const report::ReportOptions& o);

// Writes the profile to every target. When every target is a file and none of them is the
// table, the terminal table is also printed on `stream` (what the command shows by default).
Status EmitProfile(const profile::Profile& p, const OutputChoice& out,
                   const report::ReportOptions& o, FILE* stream = stdout);

}  // namespace opscope::cli
