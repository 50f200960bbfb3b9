// Per-range statistics of an annotated program (`opscope run`): ranges with the same name under
// the same parent chain are one row (e.g. "pre-processing/resize"), with the number of calls,
// time statistics over instances, summed counters, and shares: of the sum of all top-level
// ranges (for top-level rows) and of their parent row. The headline lists the top-level stages
// in the order they first ran: "pre-processing 238 ms (72.1%), network 60.0 ms (18.2%), ...".
//
// The table and CSV forms are in report/range_table.h; the Chrome trace is report's "chrome".
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/stats.h"
#include "profile/profile.h"

namespace opscope::analysis {

struct RangeSummary {
  std::string name;
  std::string path;  // parent names and this one joined by '/'
  std::string domain;
  int depth = 0;
  int parent_row = -1;  // index into RangeReport::ranges
  int64_t calls = 0;
  Stats ms;               // over instances' durations
  double total_ms = 0;    // over all instances of all measured runs
  double per_run_ms = 0;  // total_ms / measured runs (meta.runs, at least 1)
  double share_of_top =
      0;  // top-level rows: total / sum of top-level totals; others: the same ratio
  double share_of_parent = 0;              // total / parent row's total (1 for top level)
  int threads = 0;                         // distinct threads it ran on
  std::map<std::string, double> counters;  // summed over instances
  int64_t first_start_ns = 0;
};

struct RangeReport {
  std::vector<RangeSummary> ranges;  // depth-first: each parent followed by its children
  double top_total_ms = 0;           // sum of the top-level rows' totals
  int runs = 1;                      // measured runs the totals cover
  std::string headline;  // per run: "pre-processing 238 ms (72.1%), network 60.0 ms (18.2%)"
};

RangeReport SummarizeRanges(const profile::Profile& p);

}  // namespace opscope::analysis
