// The one path from a Profile to bytes: every command that makes or reads a profile renders
// through this registry (`diff`, which compares two, writes its formats through the same output
// path: report/diff_output.h).
//
// Two registries, both one file + one line:
// - Formats (OPSCOPE_REGISTER_FORMAT): a format turns a whole Profile into bytes: "table", "json"
//   (always the profile itself), "csv", "chrome", "folded", "svg", "pprof", "hot-json", ... `-o
//   FILE` picks one by the file's extension (longest match, so `.trace.json` wins over `.json`),
//   `--format NAME` names it (report/output.h resolves and writes several -o files in one pass).
// - Sections (OPSCOPE_REGISTER_SECTION): the parts a Profile can hold (ops, stat counters,
//   samples, ranges, gpu, memory, and the sections importers add). The "table" and "csv" formats
//   render every section the profile holds through this registry, the "html" page adds each
//   section's HTML block and the "chrome" trace each section's timeline tracks, so a new kind of
//   section is one folder with one registration and every command and `opscope report` render
//   it (docs/sections.md). The ops, ranges, gpu, stat and hot-function HTML and the ops, ranges
//   and gpu tracks are still written by the page and the trace themselves.
//
// The primary section. Each command's terminal output is the table of the section it produced
// (a `stat` profile's counter table, a `run` profile's range table, ...) with the findings in that
// section's style; other sections a profile holds follow it, without findings. The primary is the
// section whose `kind` equals meta.kind, else the first present one by `order`.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "profile/profile.h"
#include "report/samples_report.h"

namespace opscope::report {

class Timeline;  // report/timeline.h

struct ReportOptions {
  int top = 20;                   // rows in the op hotspot tables
  bool color = false;             // ANSI colours (terminal tables only)
  double threshold = 0;           // hide op rows below this share (0..1)
  bool wide = false;              // tables show long names whole instead of clipping them
  bool gpu_trace = false;         // the gpu section also lists every kernel and copy
  std::string separator = ",";    // the field separator of the stat section's separated values
  std::string iteration_range;    // the gpu section's iteration (NVTX range); "" = detect
  std::string title;              // flame-graph title; "" = from the profile
  SampleReportOptions samples;    // hot-functions tables, folded stacks, flame graph, pprof
  std::vector<std::string> only;  // render only these sections (names); empty = all present
  bool findings = true;           // the primary section's table ends with the findings
  std::string primary;            // the section shown first, whatever the kind ("memory" for
                                  // `--sort mem`); "" = by meta.kind
};

struct Format {
  const char* name;       // "table", "json", "csv", "chrome", ...
  const char* extension;  // ".txt", ".json", ".csv", ".trace.json", ... ("" = none)
  const char* description;
  Status (*write)(const profile::Profile& p, const ReportOptions& o, std::string* out);
  const char* more_extensions = "";  // other extensions, space-separated (".pprof .pb")
  bool binary = false;               // not for a terminal
  // Optional: the same bytes as `write`, handed to `sink` piece by piece; WriteOutputs prefers it,
  // so a large output (the JSON profile of a big import) is never held whole in memory.
  Status (*stream)(const profile::Profile& p, const ReportOptions& o,
                   const std::function<void(std::string_view)>& sink) = nullptr;
  // The sections it renders, space-separated, one of which the profile must hold ("stat" for
  // stat-csv, "samples ops" for the stack formats); "" = any profile. A command lists and accepts
  // only the formats of the sections it makes (cli/output.h).
  const char* needs = "";
};

bool RegisterFormat(const Format& f);
const std::vector<Format>& Formats();
const Format* FindFormat(const std::string& name);
const Format* FormatForPath(const std::string& path);
// "table, json, csv, chrome" for messages.
std::string FormatNames();
// Whether `f` can render a profile holding some of `sections` (empty: any section).
bool FormatFits(const Format& f, const std::vector<std::string>& sections);
// The names of the formats that fit `sections`, for messages and --help.
std::string FormatNames(const std::vector<std::string>& sections);

// Resolves -o/--format into a format, failing with a message that lists the choices. A path whose
// extension names another kind of file than the format writes (`-o a.json --format csv`) is
// refused; an unknown extension with --format is fine.
StatusOr<const Format*> ChooseFormat(const std::string& output_path, const std::string& format_name,
                                     const std::string& default_name);

struct Section {
  const char* name;  // "ops", "stat", "samples", "ranges", "gpu", ...
  int order;         // place among the non-primary sections: ops 10, stat 20, ranges 30, gpu 40,
                     // samples 50; imported sections 60 and up
  const char* kind;  // the meta.kind whose primary section this is ("profile", "stat", ...)
  bool (*present)(const profile::Profile& p);
  // The terminal table; o.findings says whether it ends with the findings (primary only).
  Status (*table)(const profile::Profile& p, const ReportOptions& o, std::string* out);
  // Separated values of the section's rows (nullptr: none).
  Status (*csv)(const profile::Profile& p, const ReportOptions& o, std::string* out) = nullptr;
  // The HTML page's block: one <section id="NAME"> with its own <h2> (nullptr: none), linked
  // from the page's navigation as `html_label`.
  Status (*html)(const profile::Profile& p, const ReportOptions& o, std::string* out) = nullptr;
  const char* html_label = nullptr;
  // Tracks on the Chrome-trace timeline (nullptr: none).
  void (*timeline)(const profile::Profile& p, const ReportOptions& o, Timeline& t) = nullptr;
};

bool RegisterSection(const Section& s);
const std::vector<Section>& Sections();
const Section* FindSection(const std::string& name);
// The sections `p` holds that `o.only` allows, primary first (see the top of this file).
std::vector<const Section*> PresentSections(const profile::Profile& p, const ReportOptions& o);

// The table of every present section (what the "table" format writes).
Status RenderTables(const profile::Profile& p, const ReportOptions& o, std::string* out);

// Escapes control characters (and DEL) of a name for a terminal: "\n" -> "\\n", others "\\xHH";
// bytes that are not UTF-8 become U+FFFD (base/strings.h ToValidUtf8).
std::string EscapeControl(const std::string& s);
// EscapeControl, then cut to `max` display columns with "..." unless `wide`.
std::string ClipName(const std::string& s, size_t max, bool wide);

// One text cell of a CSV file: valid UTF-8, RFC 4180 quoting when it holds the separator, a quote
// or a line break, and a leading ' when it starts with = + - @, tab or CR (OWASP's advice against
// formula injection: a spreadsheet would run `=HYPERLINK(...)` from a node name). Numbers are not
// text cells: write them as they are.
std::string CsvText(const std::string& s, const std::string& separator = ",");

}  // namespace opscope::report

#define OPSCOPE_REGISTER_FORMAT(id, ...) \
  static const bool kFormatRegistered_##id = ::opscope::report::RegisterFormat(__VA_ARGS__)
#define OPSCOPE_REGISTER_SECTION(id, ...) \
  static const bool kSectionRegistered_##id = ::opscope::report::RegisterSection(__VA_ARGS__)
