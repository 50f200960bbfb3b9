#include "base/target_signals.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace opscope {
namespace {

// A target made of a child and a grandchild in the child's process group; both wait for
// signals. The test process becomes a subreaper so it can collect the grandchild too, once the
// child is gone: wait for the child first.
struct Family {
  pid_t child = -1, grandchild = -1;
};

Family StartFamily(const TargetSignals& sig, bool ignore_int) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  int ready[2];
  EXPECT_EQ(pipe(ready), 0);
  Family f;
  f.child = fork();
  if (f.child == 0) {
    sig.PrepareChild();
    if (ignore_int) signal(SIGINT, SIG_IGN);
    if (fork() == 0) {  // the grandchild says it is ready once its SIGINT is back to default
      signal(SIGINT, SIG_DFL);
      pid_t self = getpid();
      (void)!write(ready[1], &self, sizeof self);
      for (;;) pause();
    }
    for (;;) pause();
  }
  close(ready[1]);
  EXPECT_EQ(read(ready[0], &f.grandchild, sizeof f.grandchild),
            static_cast<ssize_t>(sizeof f.grandchild));
  close(ready[0]);
  return f;
}

// The tests reap the grandchild as the child's subreaper; qemu-user (the aarch64 build's tests)
// refuses PR_SET_CHILD_SUBREAPER with EINVAL, so they cannot run there.
class TargetSignalsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
      GTEST_SKIP() << "prctl(PR_SET_CHILD_SUBREAPER) refused (" << strerror(errno)
                   << "): an emulator such as qemu-user";
  }
};

int TermSignal(pid_t pid) {
  int status = 0;
  if (TargetSignals::Wait(pid, &status) != pid) return -1;
  return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

TEST_F(TargetSignalsTest, ForwardsToTheTargetsWholeGroupAndRemembersTheSignal) {
  TargetSignals sig;
  Family f = StartFamily(sig, false);
  sig.Attach(f.child);
  EXPECT_EQ(getpgid(f.child), f.child) << "the target has a process group of its own";
  EXPECT_EQ(getpgid(f.grandchild), f.child);
  EXPECT_NE(getpgrp(), f.child);
  kill(getpid(), SIGTERM);  // the handler runs before kill returns (one thread)
  EXPECT_EQ(TermSignal(f.child), SIGTERM);
  EXPECT_EQ(TermSignal(f.grandchild), SIGTERM);
  sig.Detach();
  EXPECT_EQ(sig.received(), SIGTERM);
  EXPECT_EQ(TargetSignals::ExitCodeFor(sig.received()), 143);
}

TEST_F(TargetSignalsTest, SignalBeforeAttachIsForwardedAtAttach) {
  TargetSignals sig;
  kill(getpid(), SIGHUP);  // opscope survives it
  EXPECT_EQ(sig.received(), SIGHUP);
  Family f = StartFamily(sig, false);
  sig.Attach(f.child);
  EXPECT_EQ(TermSignal(f.child), SIGHUP);
  EXPECT_EQ(TermSignal(f.grandchild), SIGHUP);
}

TEST_F(TargetSignalsTest, ThirdRequestKillsATargetThatIgnoresThem) {
  TargetSignals sig;
  Family f = StartFamily(sig, true);
  sig.Attach(f.child);
  kill(getpid(), SIGINT);
  kill(getpid(), SIGINT);
  EXPECT_EQ(waitpid(f.child, nullptr, WNOHANG), 0) << "the child ignores SIGINT";
  kill(getpid(), SIGINT);
  EXPECT_EQ(TermSignal(f.child), SIGKILL);
  // The grandchild did not ignore SIGINT. Reaped here once its parent is gone (subreaper).
  EXPECT_EQ(TermSignal(f.grandchild), SIGINT);
  EXPECT_EQ(sig.received(), SIGINT);
}

TEST_F(TargetSignalsTest, NoForwardingAfterDetachAndOldHandlersComeBack) {
  static volatile sig_atomic_t seen = 0;
  struct sigaction mine {
  }, old{};
  mine.sa_handler = [](int s) { seen = s; };
  sigemptyset(&mine.sa_mask);
  sigaction(SIGTERM, &mine, &old);
  {
    TargetSignals sig;
    {
      TargetSignals nested;  // shares the handlers; its end must not uninstall them
    }
    Family f = StartFamily(sig, false);
    sig.Attach(f.child);
    sig.Detach();
    kill(getpid(), SIGTERM);
    EXPECT_EQ(sig.received(), SIGTERM);
    EXPECT_EQ(seen, 0) << "opscope's handler, not the previous one, ran while installed";
    // Not forwarded: the child is still there.
    EXPECT_EQ(waitpid(f.child, nullptr, WNOHANG), 0);
    kill(-f.child, SIGKILL);
    EXPECT_EQ(TermSignal(f.child), SIGKILL);
    EXPECT_EQ(TermSignal(f.grandchild), SIGKILL);
  }
  kill(getpid(), SIGTERM);
  EXPECT_EQ(seen, SIGTERM);
  sigaction(SIGTERM, &old, nullptr);
}

TEST_F(TargetSignalsTest, ChildDiesOfAForwardedSignalBeforeExec) {
  // The parent's handler is inherited by fork: PrepareChild must put the defaults back.
  TargetSignals sig;
  pid_t pid = fork();
  if (pid == 0) {
    sig.PrepareChild();
    raise(SIGTERM);
    _exit(0);
  }
  EXPECT_EQ(TermSignal(pid), SIGTERM);
  EXPECT_EQ(sig.received(), 0);
}

TEST_F(TargetSignalsTest, TargetDiesWithAKilledOpscope) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t opscope = fork();
  if (opscope == 0) {  // plays opscope: launches a target, then is killed with SIGKILL
    TargetSignals sig;
    pid_t target = fork();
    if (target == 0) {
      sig.PrepareChild();
      for (;;) pause();
    }
    sig.Attach(target);
    (void)!write(ready[1], &target, sizeof target);
    for (;;) pause();
  }
  close(ready[1]);
  pid_t target = 0;
  ASSERT_EQ(read(ready[0], &target, sizeof target), static_cast<ssize_t>(sizeof target));
  close(ready[0]);
  kill(opscope, SIGKILL);
  EXPECT_EQ(TermSignal(opscope), SIGKILL);
  EXPECT_EQ(TermSignal(target), SIGKILL) << "reaped here: this test process is a subreaper";
}

}  // namespace
}  // namespace opscope
