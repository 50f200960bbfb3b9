#include "base/target_signals.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace opscope {
namespace {

constexpr int kNumForwarded = sizeof(TargetSignals::kForwarded) / sizeof(int);

// Process-wide state shared with the handler: lock-free atomics only.
std::atomic<pid_t> g_target{0};  // the target's pid = its process group id; 0: none
std::atomic<int> g_first{0};     // the first signal received
std::atomic<int> g_count{0};     // how many were received
std::atomic<bool> g_installed{false};
pid_t g_opscope = 0;  // the process that launches targets
struct sigaction g_old[kNumForwarded];
bool g_handled[kNumForwarded];  // false: was ignored when installing, left so

static_assert(std::atomic<pid_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

void SendToTarget(pid_t target, int sig) {
  // The group first; the pid alone if the group could not be made (setpgid refused).
  if (kill(-target, sig) != 0) kill(target, sig);
}

void OnSignal(int sig) {
  const int saved_errno = errno;
  int none = 0;
  g_first.compare_exchange_strong(none, sig);
  const int n = g_count.fetch_add(1) + 1;
  const pid_t target = g_target.load();
  if (target > 0) SendToTarget(target, n >= 3 ? SIGKILL : sig);
  errno = saved_errno;
}

// Makes `pgrp` the terminal's foreground group. The caller may be in a background group by
// then (the target took the terminal first): that is allowed only with SIGTTOU blocked.
// Async-signal-safe.
void TakeTerminal(int tty, pid_t pgrp) {
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  sigprocmask(SIG_BLOCK, &ttou, &old);
  tcsetpgrp(tty, pgrp);
  sigprocmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace

TargetSignals::TargetSignals() {
  if (isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp()) tty_ = STDIN_FILENO;
  // A nested instance shares the installed handlers: saving them as "previous" would lose the
  // real previous dispositions.
  g_opscope = getpid();
  owner_ = !g_installed.exchange(true);
  if (!owner_) return;
  g_first = 0;
  g_count = 0;
  g_target = 0;
  struct sigaction fwd {};
  fwd.sa_handler = OnSignal;
  sigemptyset(&fwd.sa_mask);
  fwd.sa_flags = SA_RESTART;
  for (int i = 0; i < kNumForwarded; ++i) {
    sigaction(kForwarded[i], nullptr, &g_old[i]);
    // A signal opscope was started with ignored (nohup; SIGINT for a `cmd &` of a script) stays
    // ignored, for opscope and, inherited, for the target.
    g_handled[i] = g_old[i].sa_handler != SIG_IGN;
    if (g_handled[i]) sigaction(kForwarded[i], &fwd, nullptr);
  }
}

TargetSignals::~TargetSignals() {
  if (!owner_) return;
  Detach();
  for (int i = 0; i < kNumForwarded; ++i)
    if (g_handled[i]) sigaction(kForwarded[i], &g_old[i], nullptr);
  g_installed = false;
}

void TargetSignals::PrepareChild() const {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int i = 0; i < kNumForwarded; ++i)
    if (g_handled[i]) sigaction(kForwarded[i], &dfl, nullptr);
  setpgid(0, 0);
  // Should opscope itself be killed (SIGKILL leaves it no chance to forward), the target follows.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != g_opscope) raise(SIGKILL);  // opscope was already gone
  if (tty_ >= 0) TakeTerminal(tty_, getpid());
}

void TargetSignals::Attach(pid_t pid) {
  if (pid <= 0) return;
  // Both sides set the group and the terminal (as shells do), so neither order of fork's return
  // matters; after the child's exec setpgid fails with EACCES, harmlessly.
  setpgid(pid, pid);
  if (tty_ >= 0) TakeTerminal(tty_, pid);
  g_target = pid;
  // A signal that arrived between the handlers' installation and now has not reached the target.
  if (int sig = g_first.load(); sig != 0) SendToTarget(pid, sig);
}

void TargetSignals::Detach() {
  g_target = 0;
  if (tty_ >= 0) TakeTerminal(tty_, getpgrp());
}

int TargetSignals::received() const { return g_first.load(); }

pid_t TargetSignals::Wait(pid_t pid, int* status) {
  pid_t r;
  do r = waitpid(pid, status, 0);
  while (r < 0 && errno == EINTR);
  return r;
}

}  // namespace opscope
