// How the profiled program was built (optimisation flags from its DWARF producer strings), for
// `stat`, `record` and `run`: a debug or -O0 target is called out by the debug-build rule.
#pragma once

#include <string>

#include "analysis/hygiene.h"
#include "profile/profile.h"

namespace opscope::cli {

// Resolves argv0 on PATH, reads its producers, records the verdict in meta (target.* keys) and
// returns it; a command that cannot be resolved gets an "unknown" verdict.
analysis::BuildVerdict RecordTargetBuild(const std::string& argv0, profile::Meta* meta);

}  // namespace opscope::cli
