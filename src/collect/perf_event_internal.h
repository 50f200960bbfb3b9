// Helpers shared by the files of the perf_event_open wrapper (perf_event.h): perf_event_names.cc
// (event names), perf_event_open.cc (the openers and the fallback ladder), perf_event.cc
// (CounterSet: building the attrs and opening the groups) and perf_event_read.cc (reading them).
// Not part of collect's interface.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace opscope::collect::perf_internal {

// The errors that mean "this machine has no such PMU event" (a VM or container without a PMU).
bool IsNoPmuError(int err);
// "ENOENT", "EACCES", ...; the number for others.
std::string ErrnoName(int err);
// "0x1f".
std::string Hex(uint64_t v);
// Appends `s` to `list` (may be null) unless it is there already.
void AddOnce(std::vector<std::string>* list, const std::string& s);

}  // namespace opscope::collect::perf_internal
