// The ranges section (`opscope run`, and the NVTX ranges of `gpu` profiles): the per-range table
// and its CSV form, registered as the "ranges" section and the "ranges-csv" format.
#pragma once

#include <string>

#include "analysis/range_stats.h"

namespace opscope::report {

// The table: headline per run, then one row per range path (names clipped at 36 columns unless
// `wide`).
std::string FormatRangeTable(const analysis::RangeReport& r, bool color, bool wide = false);
std::string RangesToCsv(const analysis::RangeReport& r);

}  // namespace opscope::report
