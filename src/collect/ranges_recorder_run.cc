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

// ---- Run mode: the output file, written as ranges close -----------------------------------------
// The writer thread (one per process, started by its first record, all signals blocked) wakes
// every kWriteIntervalMs, or sooner when a thread has RecordLog::kWakeWriterChunks chunks waiting,
// and appends what closed since its last write, then `flush <ns> <open>`. The end of the process
// (exit; _exit, caught by the annotate runtime; a deadly signal) appends the rest, the ranges
// still open as ending then (U), and `end <ns>`. A SIGKILL therefore loses only what closed after
// the last write (at most kWriteIntervalMs, plus the write itself) and the ranges open then, whose
// number the last `flush` line gives. The hot path is unchanged: the writer swaps a thread's
// records out under that thread's buffer lock (O(1)) and writes them outside it.

constexpr int kWriteIntervalMs = 100;  // range_run.h kRecorderWriteIntervalMs tells the user

// "$OPSCOPE_RANGES_OUT.<source>.<pid>", built without allocating.
void RunFilePath(char* path, size_t size) {
  size_t n = 0;
  auto add = [&](const char* s) {
    while (*s && n + 1 < size) path[n++] = *s++;
  };
  add(g->path.c_str());
  add(".");
  add(g->source.c_str());
  add(".");
  char pid[16];
  int pn = 0;
  for (int v = getpid(); v > 0 && pn < 15; v /= 10) pid[pn++] = static_cast<char>('0' + v % 10);
  while (pn > 0 && n + 1 < size) path[n++] = pid[--pn];
  path[n] = '\0';
}

// The run file, created with its header on first use (caller holds file_mu); -1 when it cannot be
// created (said once on stderr, except from a signal handler).
int RunFile(bool in_signal) {
  if (g->file_fd >= 0 || g->file_failed) return g->file_fd;
  char path[4096];
  RunFilePath(path, sizeof path);
  const int fd =
      ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    g->file_failed = true;
    if (!in_signal)
      std::fprintf(stderr, "opscope: cannot write ranges to %s: %s\n", path, std::strerror(errno));
    return -1;
  }
  {
    SignalSafeWriter w(fd);
    WriteHeader(w);
  }
  g->file_fd = fd;
  return fd;
}

// One write of the writer thread. Names go first: every record's name was interned before the
// record was added, so a file cut by a kill never holds a range whose name it lacks. Returns
// false once the file has its end (or cannot be written): the writer stops.
bool WriteClosedRanges() {
  std::lock_guard<std::mutex> file_lock(g->file_mu);
  if (g->file_ended || g->file_failed || g->pid != getpid()) return false;
  struct Taken {
    int32_t tid;
    RecordLog log;
  };
  std::vector<Taken> taken;
  std::vector<Ended> ended;
  std::vector<std::string> names, domains;
  size_t open = 0;
  const int64_t now = Now(CLOCK_MONOTONIC);
  {
    std::lock_guard<std::mutex> lock(g->mu);
    taken.resize(g->bufs.size());
    for (size_t i = 0; i < g->bufs.size(); ++i) {
      ThreadBuf* b = g->bufs[i];
      taken[i].tid = b->tid;
      std::lock_guard<std::mutex> bl(b->mu);
      taken[i].log.Swap(b->done);
      for (const auto& st : b->stacks) open += st.size();
    }
    ended.swap(g->ended);
    open += g->started.size();
    names.assign(g->names.begin() + static_cast<ptrdiff_t>(g->names_written), g->names.end());
    domains.assign(g->domains.begin() + static_cast<ptrdiff_t>(g->domains_written),
                   g->domains.end());
  }
  const int fd = RunFile(false);
  if (fd < 0) return false;
  SignalSafeWriter w(fd);
  for (size_t i = 0; i < names.size(); ++i) WriteName(w, "name", g->names_written + i, names[i]);
  for (size_t i = 0; i < domains.size(); ++i)
    WriteName(w, "domain", g->domains_written + i, domains[i]);
  g->names_written += names.size();
  g->domains_written += domains.size();
  for (const Taken& t : taken)
    t.log.ForEach([&](const Record& r) {
      WriteRange(w, r.kind, t.tid, r.start, r.end, r.name, r.domain, r.depth, r.cpu_ns);
    });
  for (const Ended& e : ended)
    WriteRange(w, 'S', e.s.tid, e.s.start, e.end, e.s.name, e.s.domain, 0, -1);
  w.Str("flush ");
  w.Int(now);
  w.Char(' ');
  w.Int(static_cast<int64_t>(open));
  w.Char('\n');
  std::vector<std::unique_ptr<Record[]>> written;
  for (Taken& t : taken) t.log.MoveChunksTo(&written);
  GiveChunks(&written);
  return true;
}

// The end of the run file, once per process: what closed since the last write, the ranges still
// open as ending now (U), and `end <ns>`. From exit (locks taken), or from a deadly signal's
// handler or _exit (`in_signal`: locks only tried, nothing allocated; a thread interrupted inside
// the recorder keeps its records). Once it has begun nothing else is written, even if the program
// survives the signal (its own handler took over meanwhile).
void WriteRunEnd(bool in_signal) {
  // A vfork()ed child (or one cloned without fork's handlers) shares or copied its parent's
  // memory without becoming the owner of these buffers: the parent writes them.
  if (g == nullptr || g->attachable || g->pid != getpid()) return;
  const int64_t now = Now(CLOCK_MONOTONIC);
  if (in_signal) {
    if (!TryLockForAWhile(g->file_mu)) return;
  } else {
    g->file_mu.lock();
  }
  if (!g->file_ended) {
    g->file_ended = true;
    bool locked = true;
    if (in_signal)
      locked = TryLockBriefly(g->mu);
    else
      g->mu.lock();
    const int fd = locked ? RunFile(in_signal) : -1;
    if (fd >= 0) {
      SignalSafeWriter w(fd);
      for (size_t i = g->names_written; i < g->names.size(); ++i)
        WriteName(w, "name", i, g->names[i]);
      for (size_t i = g->domains_written; i < g->domains.size(); ++i)
        WriteName(w, "domain", i, g->domains[i]);
      WriteBufferedRanges(w, now, /*try_only=*/in_signal);
      w.Str("end ");
      w.Int(now);
      w.Char('\n');
    }
    if (locked) g->mu.unlock();
  }
  g->file_mu.unlock();
}

void WakeWriter() {
  if (g == nullptr || !g->writer_started.load(std::memory_order_relaxed)) return;
  g->writer_wake.store(true, std::memory_order_relaxed);
  g->writer_cv.notify_one();
}

void* WriteLoop(void*) {
  // Its work, formatting what the program recorded, is what the exit paid before; at the normal
  // priority it finishes and sleeps. (At nice 19 it was starved on a busy machine and, runnable
  // beside the program's thread, made that thread's system calls half again as slow: measured
  // with bench/annotate_overhead.sh, docs/diagnosis.md.)
  prctl(PR_SET_NAME, "opscope-write", 0, 0, 0);
  std::unique_lock<std::mutex> lock(g->writer_mu);
  for (;;) {
    g->writer_cv.wait_for(lock, std::chrono::milliseconds(kWriteIntervalMs),
                          [] { return g->writer_wake.load(std::memory_order_relaxed); });
    g->writer_wake.store(false, std::memory_order_relaxed);
    lock.unlock();
    const bool more = WriteClosedRanges();
    lock.lock();
    if (!more) break;
  }
  return nullptr;
}

// Caller holds g->mu. The thread inherits a mask with every signal blocked: the program's signals
// go to its own threads, and the deadly-signal handler never runs on the thread holding file_mu.
void StartWriter() {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  if (pthread_create(&t, &attr, WriteLoop, nullptr) == 0)
    g->writer_started.store(true, std::memory_order_relaxed);
  else
    Say("cannot start the writer thread: ranges are written at exit only");
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace opscope::collect::rec::internal
