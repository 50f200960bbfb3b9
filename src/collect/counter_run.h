// Counting a whole command: the engine of `opscope stat`.
//
// The sequence (race-free, nothing of opscope counted):
//   1. the launcher (base/launch.h) forks; the child blocks on its ready pipe.
//   2. the parent opens the counter groups on the child (inherit=1, so every thread and child
//      the command creates is counted too; leaders disabled with enable_on_exec=1).
//   3. Go(): the child execs the command; an exec failure comes back as a Status, so "command
//      not found" / "not executable" are told apart from a command that ran and exited 127.
//   4. the parent waits, forwarding SIGINT/SIGTERM/SIGHUP/SIGQUIT to the command's process group
//      (base/target_signals.h: Ctrl-C or a supervisor's SIGTERM stops the command and still gets
//      its counts reported), then reads the groups: inherited counts of exited threads and
//      children have been folded into them by then.
// The command's stdin/stdout/stderr are opscope's own, untouched.
#pragma once

#include <string>
#include <vector>

#include "base/launch.h"
#include "base/status.h"
#include "base/target_signals.h"
#include "collect/attach.h"
#include "collect/perf_event.h"
#include "profile/stat.h"

namespace opscope::collect {

struct CountedRun {
  profile::StatRun run;                   // readings (scaled, with enabled/running times)
  std::vector<std::string> degradations;  // fallback rungs taken, in words
  bool user_only = false;
  // Non-OK when the command could not be started: NotFound ("command not found"),
  // PermissionDenied ("not executable"), InvalidArgument (not an executable format). Then
  // run.exit_code is what a shell would return (127 not found, 126 otherwise) and nothing ran.
  Status exec_error;
};

// Runs argv[0] (looked up in PATH) with argv, counting `events`. Errors are the perf errors of
// CounterSet::Open (the command is then not run); a command that cannot be started is reported
// in exec_error, one that dies on a signal in run.term_signal: both are results, not errors.
// `signals` forwards opscope's signals to the command (a local one when null).
StatusOr<CountedRun> RunCounted(const std::vector<std::string>& argv,
                                const std::vector<EventSpec>& events, PerfEventOpener& opener,
                                TargetSignals* signals = nullptr);

// `stat -p/-t/-a/-C`: counts what `what` names (ResolveAttach) from now until WaitForStop: one
// CounterSet per thread (cpu=-1, no inherit; the threads present now) or per CPU (pid=-1).
// run.counters are the sums; run.tasks the per-thread counts, largest first. The attached
// processes are not signalled; *stop says what ended the count.
StatusOr<CountedRun> CountAttached(const AttachSpec& spec, const ResolvedAttach& what,
                                   const std::vector<EventSpec>& events, PerfEventOpener& opener,
                                   const TargetSignals& signals, StopReason* stop);

// Converts kernel readings into the profile's form: time events in ms, others as counts;
// `value` scaled for multiplexing.
profile::CounterReading MakeReading(const CounterSet::Slot& slot, const RawCount& raw);

// "SIGSEGV" for 11 (base/launch.h).
using ::opscope::SignalName;

}  // namespace opscope::collect
