// Fills the memory section from opscope's engine (collect layer: `opscope profile`).
#pragma once

#include "opscope/engine.h"
#include "sections/memory/memory_section.h"

namespace opscope::memory {

// The section of `session` after its runs: its tensors' lifetimes over the steps a run executes
// (profile ops are the session's nodes, so a step's `op` is its anchor node), each step's
// weights, packed copies and workspace. The process's RSS and peak RSS are the caller's to read
// (ReadProcessMemory), as late as its profile is complete.
MemorySection FromSession(const engine::Session& session);

// VmRSS and VmHWM of /proc/self/status, in bytes (0 when unreadable).
struct ProcessMemory {
  double rss_bytes = 0;
  double peak_rss_bytes = 0;
};
ProcessMemory ReadProcessMemory();

}  // namespace opscope::memory
