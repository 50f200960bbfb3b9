// A flame graph drawn by opscope itself: one self-contained SVG (no external scripts) with a few
// lines of embedded JavaScript: click a frame to zoom into it (click the bottom frame or press
// Escape to reset), "Search" highlights frames whose name matches a regular expression and shows
// their share of the samples. Widths are sample weight; colours are a stable hash of the module.
#pragma once

#include <string>

#include "profile/profile.h"
#include "report/samples_report.h"

namespace opscope::report {

std::string RenderFlameSvg(const profile::Profile& p, const std::string& title,
                           SampleGroup group = SampleGroup::kFunction);

}  // namespace opscope::report
