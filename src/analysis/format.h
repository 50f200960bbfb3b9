// Text forms of the diagnosis, printed after the hotspot table: the roofline table and the
// findings. Kept in analysis/ (pure string producers) so report/ and cli/ can both print them.
#pragma once

#include <string>
#include <vector>

#include "analysis/machine.h"
#include "analysis/roofline.h"
#include "profile/findings.h"

namespace opscope::analysis {

// "Findings (3)" and one block per finding: [severity] rule: title / evidence / do / ops.
std::string FormatFindings(const std::vector<profile::Finding>& findings, bool color);

// The ceilings line and one row per point, sorted by share, at most `max_rows`.
std::string FormatRoofline(const std::vector<RooflinePoint>& points, const MachineCeilings& c,
                           bool color, size_t max_rows = 20);

// "peak 94.1 GFLOP/s (all 2 threads), 48.0 (one core); triad 11.2 GB/s, LLC 61.0 GB/s".
std::string FormatCeilings(const MachineCeilings& c);

// Cells whose values come from files (diff): short whatever the value. Fixed notation below
// 1e7 in magnitude, else three significant digits ("+1.23e+300"); "n/a" when not finite.
std::string BoundedSigned(double v, int decimals);  // "+0.200", "-18.014"
std::string BoundedPct(double pct);                 // "+12.3%"
std::string BoundedMs(double ms);                   // HumanMs below 1e7 ms, "1.23e+10 s" above

}  // namespace opscope::analysis
