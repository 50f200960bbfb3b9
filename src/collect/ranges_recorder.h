// The in-process range recorder shared by opscope's annotation runtime (annotate_rt.cc, loaded
// with LD_PRELOAD by `opscope run`) and the NVTX injection library (nvtx/nvtx_inject.cc, loaded
// by NVTX through NVTX_INJECTION64_PATH). It lives inside someone else's program: it never
// throws, never aborts, and does nothing unless OPSCOPE_RANGES_OUT or OPSCOPE_ATTACHABLE=1 is set.
//
// Each thread records into its own buffer (an uncontended mutex guards it against the writer); a
// push/pop stack per (thread, domain) keeps the open ranges. The records go to
// "$OPSCOPE_RANGES_OUT.<source>.<pid>" in the text format ranges_reader.h parses, appended as
// they close:
//
//   opscope-ranges 1
//   pid <pid>
//   source <source>
//   name <id> <text to end of line>        (before the first range that uses it)
//   domain <id> <text to end of line>
//   range <P|S|U> <tid> <start_ns> <end_ns> <name id> <domain id> <depth> <thread cpu ns|-1>
//   flush <ns> <open>           (after each write: its time, and how many ranges were open then)
//   end <ns>                    (the process ended through exit, _exit or a deadly signal)
//   cut <B|A> <tid> <ns>        (attach mode only, see below)
//
// P: push/pop, S: start/end (may end on another thread), U: still open at the end (ended then).
// Timestamps are CLOCK_MONOTONIC ns. One writer thread per recording process (`opscope-write`,
// started by its first record, every signal blocked) appends what closed every 100 ms, or sooner
// when a thread has 4 chunks (32768 records) waiting; the per-range path is unchanged (the writer
// swaps a thread's records out under its lock). The end of the process writes the rest, the ranges
// still open as U, and `end`: exit() through atexit; _exit()/_Exit(), which run no exit handlers
// (a forked child's usual end), through the annotate runtime, which catches them (annotate_rt.cc);
// a deadly signal (SIGSEGV, SIGABRT, SIGTERM, SIGINT, ... whose action was still the default)
// from its handler, which then lets the process die of the same signal. SIGKILL runs nothing:
// the file then ends at the last write (a last line cut mid-write is left out by the reader), and
// its last `flush` line says how many ranges were open. A forked child starts with empty buffers
// and writes its own file (its pid differs); a vfork()ed child writes nothing (its memory is its
// parent's); a process that exec()s loses what closed since the last write.
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
// both files ("exit T", open ranges ending at exit; "signal" from the signal handler, "exit" from
// _exit). If the opscope process disappears without a stop, the records are dropped. A forked
// child stays dormant (its parent owns the channel). The channel is removed at exit, _exit, and
// from the deadly-signal handler (SIGTERM, SIGINT, SIGHUP, SIGQUIT, ... at their default action:
// unlinkat/rmdir of known names only). A program that ends otherwise (SIGKILL, its own signal
// handler ending it without _exit) leaves it; the next attachable program of the same uid that
// makes its channel in the same folder removes channels whose pid is gone (kill(pid, 0): ESRCH)
// and whose folder lock is free (each recorder holds a flock on its channel while it runs: a
// process with that pid in another pid namespace sharing the folder keeps it).
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

// The end of the process through exit(): registered with atexit by Init. Run mode: writes the
// rest of the file and its `end`; attach mode: ends a session still attached and removes the
// channel. Idempotent per process.
void Flush();

// The same for a process ending without exit handlers through _exit/_Exit (annotate_rt.cc catches
// them): async-signal-safe, and nothing in a vfork()ed child.
void EndAtQuickExit();

}  // namespace opscope::collect::rec
