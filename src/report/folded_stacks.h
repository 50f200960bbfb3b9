// Folded stacks ("root;caller;leaf COUNT" per line), the text format Brendan Gregg's FlameGraph
// scripts, speedscope, inferno and many other tools read. Counts are samples. With a thread or
// op grouping the group label becomes the root frame.
#pragma once

#include <string>

#include "profile/profile.h"
#include "report/samples_report.h"

namespace opscope::report {

std::string RenderFolded(const profile::Profile& p, SampleGroup group = SampleGroup::kFunction);

}  // namespace opscope::report
