// Writing a rendered profile to where the user asked: any number of `-o FILE` (each in the format
// its extension names, or the one --format names), or standard output. One pass: every file is
// rendered from the same Profile. Status lines ("opscope: wrote FILE (FORMAT)") go to stderr;
// only data goes to stdout or the files.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "profile/profile.h"
#include "report/format.h"

namespace opscope::report {

struct OutputTarget {
  std::string path;  // "" = the data stream (stdout, or stderr for `stat`)
  const Format* format = nullptr;
};

// Resolves every -o path (and --format) before any work starts, and checks the files can be
// written. No path: one target on the data stream, in `format_name` or else `default_format`;
// the path "-" names the data stream too (beside files: `-o - -o p.json`).
// Several paths with --format: each gets that format (each checked against its extension).
StatusOr<std::vector<OutputTarget>> PlanOutputs(const std::vector<std::string>& paths,
                                                const std::string& format_name,
                                                const std::string& default_format);

// True when one of the targets is the data stream, or is a file in the given format.
bool WritesFormat(const std::vector<OutputTarget>& targets, const std::string& name);
bool WritesToStream(const std::vector<OutputTarget>& targets);

// Writes `text` to a stream and flushes it (unless `flush` is false); a failed write (a full disk,
// /dev/full) is an error naming standard output or standard error.
Status WriteStream(std::string_view text, FILE* stream, bool flush = true);

// Renders and writes every target: files atomically (then "opscope: wrote PATH (FORMAT)" on
// `status`), the stream one to `stream`. A binary format refuses a terminal stream. A target that
// fails does not stop the others; the first failure is returned.
Status WriteOutputs(const profile::Profile& p, const std::vector<OutputTarget>& targets,
                    const ReportOptions& o, FILE* stream, FILE* status);

// The same for output that is not one Profile (`diff`): `render` makes the text of one target's
// format (`to_file`: no colours). Every target is attempted; the first failure is returned.
Status WriteRenderedOutputs(
    const std::vector<OutputTarget>& targets,
    const std::function<Status(const Format& f, bool to_file, std::string* out)>& render,
    FILE* stream, FILE* status);

}  // namespace opscope::report
