#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "collect/attach_dir.h"
#include "collect/attach_request.h"
#include "collect/ranges_recorder_internal.h"
#include "collect/trusted_file.h"

namespace opscope::collect::rec::internal {

// ---- Writing from a signal handler ------------------------------------------------------------
// A program that dies of a signal runs no exit handlers, so the ranges it closed would be lost.
// The recorder catches the deadly signals whose action is still the default, writes the file
// from the handler (open/write/close only: no stdio, no allocation), then puts the previous action
// back and raises the signal again, so the program dies as it would have. Locks are only tried:
// a thread interrupted inside the recorder keeps its buffer, the others are written. A program
// that installs its own handlers later replaces these (and then usually exits through exit(),
// which writes the file as usual).

constexpr int kDeadly[] = {SIGSEGV, SIGBUS,  SIGFPE, SIGILL, SIGABRT, SIGTRAP,
                           SIGSYS,  SIGTERM, SIGINT, SIGHUP, SIGQUIT};
struct sigaction g_prev[NSIG];

void WriteRange(SignalSafeWriter& w, char kind, int32_t tid, int64_t start, int64_t end,
                uint32_t name, uint32_t domain, uint32_t depth, int64_t cpu_ns) {
  w.Str("range ");
  w.Char(kind);
  w.Char(' ');
  w.Int(tid);
  w.Char(' ');
  w.Int(start);
  w.Char(' ');
  w.Int(end);
  w.Char(' ');
  w.Int(name);
  w.Char(' ');
  w.Int(domain);
  w.Char(' ');
  w.Int(depth);
  w.Char(' ');
  w.Int(cpu_ns);
  w.Char('\n');
}

// Every recorded range not yet in the file: each thread's closed ones, the ranges still open on
// its stacks (ending `now`, kind U), and the start/end ranges. `try_only` (a signal handler):
// skip a thread whose buffer stays locked rather than wait for it. The caller holds g->mu.
void WriteBufferedRanges(SignalSafeWriter& w, int64_t now, bool try_only) {
  for (ThreadBuf* b : g->bufs) {
    if (try_only) {
      if (!TryLockBriefly(b->mu)) continue;
    } else {
      b->mu.lock();
    }
    b->done.ForEach([&](const Record& r) {
      WriteRange(w, r.kind, b->tid, r.start, r.end, r.name, r.domain, r.depth, r.cpu_ns);
    });
    for (size_t domain = 0; domain < b->stacks.size(); ++domain)
      for (size_t d = 0; d < b->stacks[domain].size(); ++d)
        WriteRange(w, 'U', b->tid, b->stacks[domain][d].start, now, b->stacks[domain][d].name,
                   static_cast<uint32_t>(domain), static_cast<uint32_t>(d), -1);
    b->mu.unlock();
  }
  for (const Ended& e : g->ended)
    WriteRange(w, 'S', e.s.tid, e.s.start, e.end, e.s.name, e.s.domain, 0, -1);
  for (const auto& [id, st] : g->started)
    WriteRange(w, 'U', st.tid, st.start, now, st.name, st.domain, 0, -1);
}

std::atomic<bool> g_signal_flush_busy{false};

// The file's first lines: what it is, whose, from which recorder.
void WriteHeader(SignalSafeWriter& w) {
  w.Str("opscope-ranges 1\npid ");
  w.Int(getpid());
  w.Str("\nsource ");
  w.Text(g->source);
  w.Char('\n');
}

// A "name <id> <text>" or "domain <id> <text>" line.
void WriteName(SignalSafeWriter& w, const char* tag, size_t id, const std::string& text) {
  w.Str(tag);
  w.Char(' ');
  w.Int(static_cast<int64_t>(id));
  w.Char(' ');
  w.Text(text);
  w.Char('\n');
}

// The whole file, from a signal handler (the caller holds g->mu).
void WriteAllSignalSafe(int fd, int64_t now) {
  SignalSafeWriter w(fd);
  WriteHeader(w);
  for (size_t i = 0; i < g->names.size(); ++i) WriteName(w, "name", i, g->names[i]);
  for (size_t i = 0; i < g->domains.size(); ++i) WriteName(w, "domain", i, g->domains[i]);
  WriteBufferedRanges(w, now, /*try_only=*/true);
}

// Creates `name` in the attach output folder (never follows or replaces anything there).
int OpenInOutFolder(const char* name) {
  return ::openat(g->out_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

// Written whole under a temporary name, then renamed in without replacing anything
// (RENAME_NOREPLACE): opscope polls for the name and reads it at once (a CI run caught one
// between its create and its write: an empty ack), and refuses a file with two links, which
// linking it in would show for a moment. The first marker written stays. Where the file system
// cannot rename without replacing, it is linked in and the temporary name removed.
void WriteMarker(const char* name, const char* text) {
  char tmp[1024];
  size_t n = 0;
  for (const char* s = name; *s && n + 5 < sizeof tmp;) tmp[n++] = *s++;
  std::memcpy(tmp + n, ".tmp", 5);
  ::unlinkat(g->out_fd, tmp, 0);
  int fd = OpenInOutFolder(tmp);
  if (fd < 0) return;
  SignalSafeWriter(fd).Str(text);
  ::close(fd);
  if (renameat2(g->out_fd, tmp, g->out_fd, name, RENAME_NOREPLACE) == 0) return;
  if (errno == EINVAL || errno == ENOSYS) (void)::linkat(g->out_fd, tmp, g->out_fd, name, 0);
  ::unlinkat(g->out_fd, tmp, 0);
}

// ---- The end of a process that runs no exit handlers (a deadly signal, _exit) ------------------

// Attach mode: the channel goes with the program (known names only: async-signal-safe).
void RemoveChannelSignalSafe() {
  if (g->channel_fd < 0) return;
  unlinkat(g->channel_fd, "request", 0);
  unlinkat(g->channel_fd, "stop", 0);
  rmdir(g->channel.c_str());
}

// Run mode: the end of the run file. Attach mode: a session still attached writes its records
// and `done` ("signal" or "exit": the program is gone), and the channel is removed.
void EndWithoutExitHandlers(const char* how) {
  if (g == nullptr) return;
  if (!g->attachable) {
    if (Active()) WriteRunEnd(true);
    return;
  }
  if (g->owner_pid != getpid()) return;  // a forked child: the channel is its parent's
  if (Active() && !g_signal_flush_busy.exchange(true)) {
    if (TryLockBriefly(g->mu)) {
      if (g->attached) {
        const int fd = OpenInOutFolder(g->out_file.c_str());
        if (fd >= 0) {
          WriteAllSignalSafe(fd, Now(CLOCK_MONOTONIC));
          ::close(fd);
        }
        WriteMarker(g->done_file.c_str(), how);
      }
      g->mu.unlock();
    }
    g_signal_flush_busy = false;
  }
  RemoveChannelSignalSafe();
}

void OnDeadlySignal(int sig) {
  const int saved_errno = errno;
  EndWithoutExitHandlers("signal\n");
  // Die as the program would have: the previous action, raised again (it is delivered when this
  // handler returns; a fault would also recur on the same instruction).
  sigaction(sig, &g_prev[sig], nullptr);
  raise(sig);
  errno = saved_errno;
}

// Installs the handler where the action is still the default, or where it is another opscope
// recorder's (the annotation and NVTX libraries each keep their own records: both get written).
void InstallDeadlySignalHandlers() {
  for (int sig : kDeadly) {
    struct sigaction cur {};
    if (sigaction(sig, nullptr, &cur) != 0) continue;
    bool ours = false;
    if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL) {
      ours = true;
    } else if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler != SIG_IGN) {
      Dl_info info{};
      ours = dladdr(reinterpret_cast<void*>(cur.sa_handler), &info) != 0 && info.dli_fname &&
             std::strstr(info.dli_fname, "libopscope_ranges_") != nullptr;
    }
    if (!ours) continue;
    struct sigaction mine {};
    mine.sa_handler = OnDeadlySignal;
    sigemptyset(&mine.sa_mask);
    mine.sa_flags = SA_RESTART | SA_ONSTACK;  // on the alternate stack where there is one
    g_prev[sig] = cur;
    sigaction(sig, &mine, nullptr);
  }
}

}  // namespace opscope::collect::rec::internal
