// Text forms of a StatSection: perf-like human table and separated values (`-x SEP`).
//
// Both are written to stderr by `opscope stat` (the command's stdout stays its own) or to -o
// FILE. Formats are documented in docs/stat.md; golden files in src/collect/testdata/table/.
#pragma once

#include <string>

#include "profile/profile.h"

namespace opscope::collect {

// The human table: one line per event (mean over runs, "+-" cv with -r, the fraction of time a
// multiplexed counter ran), elapsed time, the derived metrics with their formulas, the verdict
// with its evidence, per-event statistics when there were several runs, outlier runs, and every
// degradation.
std::string FormatStatTable(const profile::Profile& p);

// One line per event: value SEP unit SEP event SEP running% SEP median SEP trimmed_mean SEP
// min SEP max SEP cv% (value is the mean; "<not supported>"/"<not counted>" in place of it),
// then "wall-time" and one line per derived metric (value SEP SEP metric-name).
std::string FormatStatSeparated(const profile::Profile& p, const std::string& sep);

}  // namespace opscope::collect
