// The one way opscope starts a target program (stat, record, run and gpu all go through it).
//
// Design. Start() resolves argv[0] as execvp would (PATH for a bare name), so "not found" and
// "not executable" are told before anything is set up, then forks. The child puts itself in a
// process group of its own (TargetSignals::PrepareChild) and blocks on a "ready" pipe; the parent
// opens whatever must watch the child from its first instruction (counters, sampling events with
// enable_on_exec) and calls Go(). The child then execs; a second pipe, close-on-exec, carries
// errno back when exec fails, so a program that cannot be executed is never confused with one that
// ran and exited 126 or 127. Wait() reaps it, retrying on EINTR, while TargetSignals forwards
// opscope's SIGINT/SIGTERM/SIGHUP/SIGQUIT to the target's group.
//
// The environment is opscope's own with the changes of LaunchOptions: variables set (replacing
// any the user had), removed, and libraries preloaded before the user's own LD_PRELOAD.
//
// Exit status. Every command that runs a target exits with `TargetExitCode`: the target's own
// status; 128+N when it died of signal N (a terminal Ctrl-C that went straight to the target's
// group gives 130 too); 128+N when opscope itself received signal N and passed it on; 127 when
// the program was not found, 126 when it was found but could not be executed
// (`ExitCodeForStartError`). The README's exit-code table is this rule.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/target_signals.h"

namespace opscope {

struct LaunchOptions {
  std::vector<std::string> argv;  // argv[0] looked up in PATH when it has no '/'
  // Environment changes: set (replacing the user's value), removed, and libraries put before
  // the user's LD_PRELOAD (space-separated, as ld.so reads it).
  std::vector<std::pair<std::string, std::string>> set_env;
  std::vector<std::string> unset_env;
  std::vector<std::string> preload;
  bool stdout_to_stderr = false;  // the target's stdout goes to opscope's stderr
};

// How a target ended.
struct TargetExit {
  int exit_code = 0;    // its exit status; 128+signal when a signal ended it
  int term_signal = 0;  // the signal that ended it, 0 if it exited
  int64_t wall_ns = 0;  // from Go() to the end of Wait()
  // "exited with status 3", "killed by signal 11 (SIGSEGV, Segmentation fault)".
  std::string Describe() const;
};

// "SIGSEGV" for 11; "signal 77" for a number without a name.
std::string SignalName(int sig);

// Where argv0 is run from: argv0 itself when it contains '/', else the first executable regular
// file named argv0 in $PATH. The errors, one wording for every command:
//   NotFound          "command not found: 'NAME' (not in PATH: /usr/bin:/bin)" / "(no such file)"
//   PermissionDenied  "cannot run '/x/NAME': not executable (permission denied); check its mode
//                     (`chmod +x`) and the mount's noexec flag" / "...: is a directory"
StatusOr<std::string> ResolveCommand(const std::string& argv0);

// The status for an exec() that failed with `err` on `path` (the wording above; ENOEXEC:
// InvalidArgument "not an executable format").
Status ExecErrorStatus(int err, const std::string& path);

// 127 for NotFound (the program is not there), 126 for any other start error (found but not
// executable), as a shell does.
int ExitCodeForStartError(const Status& st);

// What opscope exits with after running a target: 128+`received` when opscope received a signal
// and passed it on, else the target's exit code (TargetExit::exit_code: 128+N when it died of
// signal N).
int TargetExitCode(int target_exit_code, int received);

class LaunchedTarget {
 public:
  // Forks the target; it waits for Go(). `signals` must outlive the target. Errors: the
  // ResolveCommand errors (nothing was started) and Internal (pipe, fork).
  static StatusOr<LaunchedTarget> Start(const LaunchOptions& options, TargetSignals* signals);

  LaunchedTarget(LaunchedTarget&& other) noexcept;
  LaunchedTarget& operator=(LaunchedTarget&&) = delete;
  LaunchedTarget(const LaunchedTarget&) = delete;
  // A target never waited for is killed and reaped.
  ~LaunchedTarget();

  pid_t pid() const { return pid_; }
  const std::string& path() const { return path_; }

  // Lets the target exec. Returns the exec error (ExecErrorStatus) when exec failed; the child
  // has then exited and Wait() reaps it.
  Status Go();
  // Waits for the target (retrying on EINTR) and detaches the signal forwarding.
  TargetExit Wait();
  // Kills the target before it ran (the watchers could not be set up) and reaps it.
  void Abandon();

 private:
  LaunchedTarget() = default;
  pid_t pid_ = -1;
  int go_fd_ = -1, err_fd_ = -1;
  int64_t t0_ = 0;
  bool reaped_ = false;
  std::string path_;
  TargetSignals* signals_ = nullptr;
};

// Convenience for targets nothing has to watch from exec on: Start + Go + Wait.
// A start or exec error is the Status; `*exit` is filled otherwise.
Status RunTarget(const LaunchOptions& options, TargetSignals* signals, TargetExit* exit);

}  // namespace opscope
