// The in-process range recorder shared by opscope's annotation runtime (annotate_rt.cc, loaded
// with LD_PRELOAD by `opscope run`) and the NVTX injection library (nvtx/nvtx_inject.cc, loaded
// by NVTX through NVTX_INJECTION64_PATH). It lives inside someone else's program: it never
// throws, never aborts, and does nothing unless OPSCOPE_RANGES_OUT is set.
//
// Each thread records into its own buffer (an uncontended mutex guards it against the exit-time
// flush); a push/pop stack per (thread, domain) keeps the open ranges. At exit the records are
// written to "$OPSCOPE_RANGES_OUT.<source>.<pid>" in the text format ranges_reader.h parses:
//
//   opscope-ranges 1
//   pid <pid>
//   source <source>
//   name <id> <text to end of line>
//   domain <id> <text to end of line>
//   range <P|S|U> <tid> <start_ns> <end_ns> <name id> <domain id> <depth> <thread cpu ns|-1>
//
// P: push/pop, S: start/end (may end on another thread), U: still open at exit (ended at exit).
// Timestamps are CLOCK_MONOTONIC ns. A forked child starts with empty buffers and writes its own
// file (its pid differs); records of a process that exec()s are lost (no exit handlers run).
// A process killed by a signal (SIGSEGV, SIGABRT, SIGTERM, SIGINT, ... whose action was still the
// default) writes the file from the signal handler, its open ranges ending then, and dies of the
// same signal; SIGKILL leaves no chance to write anything.
#pragma once

#include <cstdint>

namespace opscope::collect::rec {

// Called from the library's constructor; `source` names the output file ("annotate", "nvtx").
// Returns false (and stays inactive) when OPSCOPE_RANGES_OUT is unset.
bool Init(const char* source);
bool Active();

uint32_t InternDomain(const char* name);  // 0 is the library's default domain
void Push(uint32_t domain, const char* name);
void Pop(uint32_t domain);
uint64_t Start(uint32_t domain, const char* name);  // returns a non-zero id, 0 when inactive
void End(uint64_t id);

// Writes the file now (also registered with atexit by Init). Idempotent per process.
void Flush();

}  // namespace opscope::collect::rec
