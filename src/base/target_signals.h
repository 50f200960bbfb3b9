// One rule for every command that runs a target program (stat, record, run, gpu): while the
// target runs, SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to opscope are forwarded to the target's
// process group; opscope itself keeps running, waits for the target, writes what it collected and
// then exits with 128 + the signal it received (`ExitCodeFor`). A third request sends SIGKILL,
// for targets that ignore the others. A signal opscope was started with ignored (nohup, or
// SIGINT for a script's `opscope ... &`) stays ignored, for opscope and the target.
//
// If opscope is killed outright (SIGKILL), a target started with PrepareChild (fork launchers) is
// killed too (PR_SET_PDEATHSIG): a target never runs on without the opscope that watches it.
//
// The target gets a process group of its own, so the forwarded signal reaches everything it
// spawned and nothing else of opscope's job (a pipe reader, say). When opscope is the foreground
// job of its terminal, the terminal is handed to the target's group while it runs (as a shell
// does), so an interactive target can still read it and Ctrl-C reaches the target directly.
//
// The handlers only store the signal number and call kill(2): async-signal-safe. The state is
// process-wide: the first TargetSignals installs the handlers and restores the previous
// dispositions when destroyed; one made while another exists (a launcher called by a command
// that already made one) shares them. One target is attached at a time.
//
//   TargetSignals sig;                 // before fork
//   pid_t pid = fork();
//   if (pid == 0) { sig.PrepareChild(); ...; execvp(...); }
//   sig.Attach(pid);
//   TargetSignals::Wait(pid, &status);
//   sig.Detach();
//   ... write results ...
//   return sig.received() ? TargetSignals::ExitCodeFor(sig.received()) : ...;
#pragma once

#include <signal.h>
#include <sys/types.h>

namespace opscope {

class TargetSignals {
 public:
  TargetSignals();
  ~TargetSignals();
  TargetSignals(const TargetSignals&) = delete;
  TargetSignals& operator=(const TargetSignals&) = delete;

  // The signals forwarded to the target.
  static constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

  // Child side, between fork() and exec(); async-signal-safe. Puts the child in a process group
  // of its own, gives it the terminal when opscope held it, and sets the forwarded signals back
  // to their default action (so a signal forwarded before exec still ends it).
  void PrepareChild() const;
  // Parent side, once fork()/posix_spawn() returned `pid`: forwarding goes to its group from now
  // on; a signal that arrived before is forwarded now.
  void Attach(pid_t pid);
  // After the target was waited for: no more forwarding; the terminal comes back to opscope.
  void Detach();

  // The first forwarded signal opscope received since construction; 0 if none.
  int received() const;
  // What opscope exits with after forwarding `sig`: 128 + sig.
  static int ExitCodeFor(int sig) { return 128 + sig; }
  // waitpid(pid, status, 0), retried on EINTR.
  static pid_t Wait(pid_t pid, int* status);

 private:
  bool owner_ = false;  // installed the handlers (a nested instance only shares them)
  int tty_ = -1;  // the terminal handed to the target (opscope was its foreground job), else -1
};

}  // namespace opscope
