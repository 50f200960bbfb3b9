// `opscope diff` written in the registry's formats (-o repeatable, --format, -o -): the table and
// JSON of analysis/diff.h, the HTML diff page, one CSV row per compared item, and a Chrome trace
// holding both profiles' timelines, each starting at 0, so one is above the other in Perfetto.
#pragma once

#include <string>

#include "analysis/diff.h"
#include "base/status.h"
#include "profile/profile.h"
#include "report/format.h"

namespace opscope::report {

struct DiffRender {
  const profile::Profile& before;
  const profile::Profile& after;
  const analysis::ProfileDiff& diff;
  std::string before_label, after_label;  // the two files
  size_t rows = 25;                       // rows per terminal table
  bool color = false;
};

// The formats a diff is written in: "table, json, csv, html, chrome".
bool DiffWrites(const std::string& format);
std::string DiffFormatNames();
Status RenderDiff(const Format& f, const DiffRender& r, std::string* out);

}  // namespace opscope::report
