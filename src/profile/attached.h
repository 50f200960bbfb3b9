// A `run -p PID` profile records one attached span of a running program, not runs of it:
// meta.attached names the process ("pid 1234 (pipeline)") and e2e.runs_ms[0] is the span's
// length. Reporters say "attached span", never "whole program: 1 runs" (docs/profile-format.md).
#pragma once

#include "profile/profile.h"

namespace opscope::profile {

inline bool IsAttachedSpan(const Profile& p) { return !p.meta.attached.empty(); }

}  // namespace opscope::profile
