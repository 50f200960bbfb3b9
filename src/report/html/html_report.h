// The HTML report (`-o report.html`, `--format html`): one self-contained page per profile, and
// the same page style for `opscope diff A B -o diff.html`. docs/html-report.md describes the
// sections and the choices behind them.
//
// The page renders whatever sections the profile holds: header (source, host, build, threads,
// runs, latency distribution with its noise verdict, opscope's overhead), findings with links
// into the op table, the op table (sortable, filterable, fused steps expandable to their source
// nodes, a per-run sparkline per row), time by op type and by network stage, the roofline, a
// flame graph (call-stack samples, else the op hierarchy by name scope), a timeline of one
// representative run, and the counter, range, GPU and hot-function tables. A section the
// profile cannot fill is left out, or says why when a reader would expect it.
#pragma once

#include <string>
#include <vector>

#include "analysis/diff.h"
#include "profile/profile.h"

namespace opscope::report::html {

std::string RenderProfilePage(const profile::Profile& p);

// The network stage of a node: the first scope component of its name ("backbone" for
// "backbone/conv1/Conv", "/backbone/conv1" and "backbone.conv1"), or "" when the name has no
// scope. Names containing '/' are split on '/', others on '.'.
std::vector<std::string> ScopeParts(const std::string& node_name);
std::string StageOf(const std::string& node_name);

// The run whose end-to-end time is closest to the median among the runs that have op events
// (or ranges); -1 when there is no timeline.
int RepresentativeRun(const profile::Profile& p);

// The diff page. `before_label`/`after_label` name the two files.
std::string RenderDiffPage(const profile::Profile& before, const profile::Profile& after,
                           const analysis::ProfileDiff& d, const std::string& before_label,
                           const std::string& after_label);

}  // namespace opscope::report::html
