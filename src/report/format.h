// The registry of output formats. A format turns a Profile into bytes; `-o FILE` picks one by
// the file's extension (longest match, so `.trace.json` wins over `.json`), `--format NAME`
// writes it to standard output. Adding a format is one file with one OPSCOPE_REGISTER_FORMAT.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "profile/profile.h"

namespace opscope::report {

struct ReportOptions {
  int top = 20;          // rows in hotspot tables
  bool color = false;    // ANSI colours (terminal table only)
  double threshold = 0;  // hide rows below this share (0..1)
};

struct Format {
  const char* name;         // "table", "json", "csv", "chrome", ...
  const char* extension;    // ".txt", ".json", ".csv", ".trace.json", ... ("" = none)
  const char* description;
  Status (*write)(const profile::Profile& p, const ReportOptions& o, std::string* out);
};

bool RegisterFormat(const Format& f);
const std::vector<Format>& Formats();
const Format* FindFormat(const std::string& name);
const Format* FormatForPath(const std::string& path);
// "table, json, csv, chrome" for messages.
std::string FormatNames();

// Resolves -o/--format into a format, failing with a message that lists the choices.
StatusOr<const Format*> ChooseFormat(const std::string& output_path, const std::string& format_name,
                                     const std::string& default_name);

}  // namespace opscope::report

#define OPSCOPE_REGISTER_FORMAT(id, ...) \
  static const bool kFormatRegistered_##id = ::opscope::report::RegisterFormat(__VA_ARGS__)
