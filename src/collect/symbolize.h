// Turning raw samples into symbolized stacks: the end of `opscope record`, the in-process
// sampler's Stop(), and `opscope report` on a recording that was never finished.
//
// Design. Address spaces are rebuilt from the recorded mmap/fork/exec events (sorted by time),
// one per process. Each gets a libdwfl session with its executable mappings reported at their
// load bias, used both to unwind DWARF samples (unwind.h) and to symbolize PCs: function names
// from the ELF symbol table (always, so names agree between call-graph modes), source file:line
// and inlined frames from DWARF when present (dwarf_getscopes walks the inline chain; each
// inlined call site becomes its own frame, marked `inlined`), C++ names demangled, PCs outside
// every mapped file resolved from /tmp/perf-PID.map (JIT code). PCs are cached per address
// space, so the cost is per distinct PC, not per sample.
//
// Whatever is missing is said once per module in SampleSection::warnings ("libfoo.so: no debug
// info (functions from the symbol table, no file:line)").
#pragma once

#include <string>

#include "base/status.h"
#include "collect/record_file.h"
#include "profile/profile.h"
#include "profile/samples.h"

namespace opscope::collect {

// Unwinds (DWARF recordings) and symbolizes every raw sample of `reader`.
StatusOr<profile::SampleSection> Symbolize(const RecordReader& reader);

// Reads a record file as a Profile (meta.kind "record"): its symbolized chunk when the recording
// was finished, else the raw events unwound and symbolized now (saying so in the warnings; the
// binaries must still be where they were). Validated.
StatusOr<profile::Profile> LoadRecording(const std::string& path);

// "ns::f(int)" for "_ZN2ns1fEi"; other names unchanged.
std::string Demangle(const std::string& name);

}  // namespace opscope::collect
