// How a profiled program was built: the DW_AT_producer strings of its compilation units (read
// with libdw), which carry the compiler's optimisation flags when built with -g
// (-grecord-gcc-switches is GCC's default). analysis/hygiene.h turns them into a verdict.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace opscope::collect {

// The executable a command line runs: argv0 itself when it contains '/', else the first match on
// PATH. NotFound with the PATH searched when there is none.
StatusOr<std::string> ResolveExecutable(const std::string& argv0);

// Producer strings of every compilation unit (deduplicated, in first-seen order, at most
// `max_units` units read). An ELF file without DWARF gives an empty list; a file that is not ELF
// gives Unsupported (scripts: "not an ELF binary").
StatusOr<std::vector<std::string>> ReadDwarfProducers(const std::string& path,
                                                      int max_units = 20000);

}  // namespace opscope::collect
