// The in-process range recorder shared by opscope's annotation runtime (annotate_rt.cc, loaded
// with LD_PRELOAD by `opscope run`) and the NVTX injection library (nvtx/nvtx_inject.cc, loaded
// by NVTX through NVTX_INJECTION64_PATH). It lives inside someone else's program: it never
// throws, never aborts, and does nothing unless OPSCOPE_RANGES_OUT or OPSCOPE_ATTACHABLE=1 is set.
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
//   cut <B|A> <tid> <ns>        (attach mode only, see below)
//
// P: push/pop, S: start/end (may end on another thread), U: still open at exit (ended at exit).
// Timestamps are CLOCK_MONOTONIC ns. A forked child starts with empty buffers and writes its own
// file (its pid differs); records of a process that exec()s are lost (no exit handlers run).
// A process killed by a signal (SIGSEGV, SIGABRT, SIGTERM, SIGINT, ... whose action was still the
// default) writes the file from the signal handler, its open ranges ending then, and dies of the
// same signal; SIGKILL leaves no chance to write anything.
//
// Attach mode (`opscope run -p PID`; OPSCOPE_ATTACHABLE=1 without OPSCOPE_RANGES_OUT). The
// recorder starts dormant: push/pop cost one load of the "active" flag, nothing is recorded or
// written. It creates the channel folder <attach folder>/opscope-attach-<pid>-<source> (the folder
// by collect/attach_dir.h: $OPSCOPE_ATTACH_DIR, else a private $XDG_RUNTIME_DIR, else /tmp; mode
// 0700; an existing one is taken over only when it is this uid's and private) and one listener
// thread
// that blocks on inotify there. opscope attaches by linking a `request` file into the channel:
//
//   opscope-attach 1
//   opscope-pid <pid of opscope>
//   out <absolute output folder>
//   cpu <0|1>
//
// The request, and the output folder it names, are obeyed only when owned by this process's uid
// and not writable by group or others (a request file must have one link, and is opened without
// following links or blocking: collect/trusted_file.h, the rule opscope applies the other way
// round); anything else is removed and said on stderr, so another user cannot make the program
// write anywhere. The output folder is opened once (O_NOFOLLOW) and every file in it is created
// with O_EXCL relative to that descriptor. Attached, the recorder clears its buffers, writes
// `attached.<source>` ("attached T", T the CLOCK_MONOTONIC ns it began) and records (ranges
// already open then are not recorded: their pop finds another session's entry and drops it). A
// `stop` file in the channel ends the session: the records go to `ranges.<source>.<pid>` in the
// output folder (the format above, ranges still open left out, plus `cut B|A <tid> <ns>` lines
// for each thread's partial ranges), then `done.<source>` ("stop N T"); the buffers are cleared
// and the recorder is dormant again, ready for the next attach. Exiting while attached writes
// both files ("exit T", open ranges ending at exit; "signal" from the signal handler). If the
// opscope process disappears without a stop, the records are dropped. A forked child stays
// dormant (its parent owns the channel); exit removes the channel.
#pragma once

#include <cstdint>

namespace opscope::collect::rec {

// Called from the library's constructor (the NVTX library: also from NVTX's first call, when NVTX
// loaded it then); idempotent. `source` names the output file ("annotate", "nvtx").
// Returns false (and stays inactive) when neither OPSCOPE_RANGES_OUT nor OPSCOPE_ATTACHABLE=1 is
// set; true when recording (run) or dormant and attachable.
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
