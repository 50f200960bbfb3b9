// Text forms of a StatSection: perf-like human table and separated values (`-x SEP`).
//
// Both are written to stderr by `opscope stat` (the command's stdout stays its own) or to -o
// FILE. Formats are documented in docs/stat.md; golden files in src/report/testdata/stat/.
// Registered as the "stat" section (report/format.h) and the "stat-csv" format.
#pragma once

#include <string>

#include "profile/profile.h"

namespace opscope::report {

// The human table: one line per event (mean over runs, "+-" cv with -r, the fraction of time a
// multiplexed counter ran), elapsed time, the derived metrics with their formulas, the verdict
// with its evidence, per-event statistics when there were several runs, outlier runs, and every
// degradation.
std::string FormatStatTable(const profile::Profile& p);

// `perf stat -x SEP` output, column for column (perf-stat(1), CSV FORMAT): value (msec for
// clocks, a whole count otherwise, or <not supported>/<not counted>), unit ("msec" or empty),
// event, the variance as "N.NN%" with several runs (perf's: standard error of the mean / mean),
// running time in ns, percentage of time counted, metric value, metric unit.
std::string FormatStatSeparated(const profile::Profile& p, const std::string& sep);

}  // namespace opscope::report
