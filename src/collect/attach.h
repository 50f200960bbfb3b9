// Measuring programs opscope did not start: `stat`/`record` with -p PID[,PID...], -t TID[,...],
// -a (every CPU) and -C CPUS, for --duration S or until Ctrl-C / SIGINT / SIGTERM (or until every
// attached process has exited).
//
// Design. An AttachSpec names what to follow; ResolveAttach checks it before anything is opened
// (the processes exist, the permissions allow it: perf_access.h, one line with the fix) and lists
// the threads. Per-thread events (cpu=-1, no inherit: inherit events cannot be mmapped or read
// for threads that already exist) follow each thread; threads created later are picked up by
// rescanning /proc/PID/task (the sampler does it every drain round; counters count the threads
// present at the start). System-wide events are one per CPU (pid=-1).
//
// Stopping. Signals sent to opscope are not forwarded to attached processes (they are not
// opscope's): TargetSignals only records them, and WaitForStop returns; what was collected is
// then written. The attached programs keep running, untouched.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/target_signals.h"

namespace opscope::collect {

struct AttachSpec {
  std::vector<pid_t> pids;  // -p: processes, with all their threads
  std::vector<pid_t> tids;  // -t: single threads
  bool all_cpus = false;    // -a
  std::vector<int> cpus;    // -C: these CPUs only (system-wide on them)
  double duration_s = 0;    // --duration; 0: until a signal or every process has exited

  bool system_wide() const { return all_cpus || !cpus.empty(); }
  bool any() const { return !pids.empty() || !tids.empty() || system_wide(); }
};

// "12,34" -> {12, 34}. InvalidArgument naming `flag` for anything but positive whole numbers.
StatusOr<std::vector<pid_t>> ParsePidList(std::string_view text, const std::string& flag);
// "0-3,6" -> {0, 1, 2, 3, 6}; every CPU must be online (`online`). Errors name `flag`.
StatusOr<std::vector<int>> ParseCpuList(std::string_view text, const std::vector<int>& online,
                                        const std::string& flag = "-C");
// Pins every thread of this process, and so every thread it starts later (the engine's pool,
// OpenMP's), to `cpus` (`--cpus` of profile and machine).
Status PinProcess(const std::vector<int>& cpus);
// The online CPUs (/sys/devices/system/cpu/online).
std::vector<int> OnlineCpus();

// The threads of process `pid` (/proc/PID/task), ascending; empty when it is gone.
std::vector<pid_t> ThreadsOf(pid_t pid);
// The process a thread belongs to (Tgid in /proc/TID/status); 0 when it is gone.
pid_t ProcessOf(pid_t tid);
// /proc/TID/comm without the newline; "" when it is gone.
std::string CommOf(pid_t tid);
// True while the process exists and is not a zombie.
bool ProcessAlive(pid_t pid);

struct AttachTask {
  pid_t pid = 0, tid = 0;
  std::string comm;
};
struct ResolvedAttach {
  std::vector<AttachTask> tasks;  // every thread of -p, and -t; empty when system-wide
  std::vector<int> cpus;          // system-wide: the CPUs
  std::string description;        // "pid 1234 (7 threads)", "system-wide (CPUs 0-3)"
};

// Checks the spec (exclusive choices, existing processes and threads, permissions before
// anything starts) and lists what to open. `online` is OnlineCpus() (a parameter for tests).
StatusOr<ResolvedAttach> ResolveAttach(const AttachSpec& spec, const std::vector<int>& online);

// The -p/-t/-C flags' text as a command line gives it, and whether a command follows `--`.
struct AttachFlags {
  std::string pids, tids, cpus;
  bool have_command = false;
  // "no command given: ..." completes with this, e.g. "use `opscope record -- CMD [ARGS]`".
  std::string usage;
};

// What `stat`, `record` (and any command that can run or attach) share: parses the flags into
// *spec (its all_cpus and duration_s already set from -a/--duration), refuses a command together
// with an attach flag, neither of them, or --duration without attaching, and resolves the spec.
// An empty ResolvedAttach (no tasks, no cpus) means "run the command".
StatusOr<ResolvedAttach> ResolveAttachFlags(const AttachFlags& flags, AttachSpec* spec);

enum class StopReason { kDuration, kSignal, kTargetsExited };
// Blocks until --duration passed, opscope received a forwarded signal (`signals`, with no target
// attached: nothing is forwarded), or (not system-wide) every attached process and thread has
// exited. Calls `tick` about every 50 ms (rescans, drains); may be empty.
StopReason WaitForStop(const AttachSpec& spec, const ResolvedAttach& what,
                       const TargetSignals& signals, const std::function<void()>& tick);
// "for 2.0 s (--duration)", "until SIGINT", "until the processes exited".
std::string DescribeStop(StopReason reason, const AttachSpec& spec, int signal);

}  // namespace opscope::collect
