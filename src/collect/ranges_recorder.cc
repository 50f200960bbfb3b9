#include "collect/ranges_recorder.h"

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
#include "collect/trusted_file.h"

namespace opscope::collect::rec {
namespace {

int64_t Now(clockid_t clk) {
  timespec ts;
  clock_gettime(clk, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// 32 bytes; the thread id is the buffer's (start/end ranges carry the starting thread's id in
// a separate list).
struct Record {
  int64_t start, end;
  int64_t cpu_ns;
  uint32_t name;
  uint16_t domain;
  uint8_t depth;
  char kind;
};

void WakeWriter();
void StartWriter();
Record* TakeChunk();

// Records in fixed-size chunks: appending never copies or re-faults what is already recorded.
class RecordLog {
 public:
  static constexpr size_t kChunk = 8192;
  // A thread with this many chunks waiting wakes the run-mode writer before its next tick.
  static constexpr size_t kWakeWriterChunks = 4;
  void Add(const Record& r) {
    if (used_ == kChunk || chunks_.empty()) NewChunk();
    chunks_.back()[used_++] = r;
  }
  // O(1): the writer takes a thread's records without copying them under its lock.
  void Swap(RecordLog& other) {
    chunks_.swap(other.chunks_);
    std::swap(used_, other.used_);
  }
  template <typename Fn>
  void ForEach(Fn fn) const {
    for (size_t c = 0; c < chunks_.size(); ++c) {
      size_t n = c + 1 == chunks_.size() ? used_ : kChunk;
      for (size_t i = 0; i < n; ++i) fn(chunks_[c][i]);
    }
  }
  void Clear() {
    chunks_.clear();
    used_ = 0;
  }
  // Hands the chunks over (to the pool, once written) and leaves the log empty.
  void MoveChunksTo(std::vector<std::unique_ptr<Record[]>>* out) {
    for (auto& c : chunks_) out->push_back(std::move(c));
    Clear();
  }

 private:
  __attribute__((noinline)) void NewChunk() {
    if (chunks_.size() >= kWakeWriterChunks) WakeWriter();
    chunks_.emplace_back(TakeChunk());
    used_ = 0;
  }
  std::vector<std::unique_ptr<Record[]>> chunks_;
  size_t used_ = 0;
};

struct Open {
  int64_t start;
  int64_t cpu_start;
  uint32_t name;
  uint32_t session;  // attach session it was opened in (a pop from another session is dropped)
};

struct CachedName {
  std::string text;  // verified on every hit: the same pointer may later hold another string
  uint32_t id;
};

struct ThreadBuf {
  std::mutex mu;
  int32_t tid = 0;
  RecordLog done;
  std::vector<std::vector<Open>> stacks;               // by domain id: open push/pop ranges
  std::unordered_map<const char*, CachedName> by_ptr;  // thread-local intern cache
  // Attach mode: when a range opened before the attach ended on this thread (a pop with nothing
  // to pop). The ranges recorded here before it were nested inside that unrecorded range: the
  // detach says so (a `cut B` line), so opscope does not report the inside of a stage without
  // the stage (see WriteAllLocked).
  int64_t horizon = 0;
  std::vector<Open>& Stack(uint32_t domain) {
    if (domain >= stacks.size()) stacks.resize(domain + 1);
    return stacks[domain];
  }
};

struct StartOpen {
  int32_t tid;
  int64_t start;
  uint32_t name, domain;
};

struct Ended {
  StartOpen s;
  int64_t end;
};

// Leaked on purpose: must outlive every thread and static destructor that may still record.
struct Global {
  std::mutex mu;
  std::string path;
  std::string source;
  std::vector<std::string> names;
  std::unordered_map<std::string, uint32_t> name_ids;
  std::vector<std::string> domains{"default"};
  std::vector<ThreadBuf*> bufs;
  std::unordered_map<uint64_t, StartOpen> started;
  std::vector<Ended> ended;
  uint64_t next_start_id = 1;
  pid_t pid = 0;  // whose buffers these are: set by Init and in a forked child (not by vfork)
  // Run mode: the output file, appended to as ranges close (the writer thread, every
  // kWriteIntervalMs or when a thread's records pile up) and ended once (exit, _exit, a deadly
  // signal). file_mu orders the writers; the hot path never takes it.
  std::mutex file_mu;
  int file_fd = -1;
  bool file_failed = false;  // could not be created (said once)
  bool file_ended = false;   // `end` written, or being written: nothing more goes in
  size_t names_written = 0, domains_written = 0;
  // Chunks written to the file come back here and are handed out again: a steady recording reuses
  // a few chunks instead of mapping, faulting in and unmapping 256 KiB every 8192 ranges (an
  // munmap of memory another thread touched also interrupts that thread's core).
  std::mutex pool_mu;
  std::vector<Record*> pool;
  std::atomic<bool> writer_started{false};  // in this process
  std::atomic<bool> writer_wake{false};
  std::mutex writer_mu;
  std::condition_variable writer_cv;
  // Attach mode (OPSCOPE_ATTACHABLE=1): the channel folder, and while attached the output folder
  // (an open fd: checked once, so it cannot be swapped later) and the names written into it.
  bool attachable = false;
  pid_t owner_pid = 0;  // the process that made the channel (a forked child is not attachable)
  std::string channel;  // <attach folder>/opscope-attach-<pid>-<source> (attach_dir.h)
  int channel_fd = -1;
  bool attached = false;
  int out_fd = -1;
  pid_t opscope_pid = 0;
  std::string out_file, done_file;  // "ranges.<source>.<pid>", "done.<source>"
};

std::atomic<bool> g_active{false};
std::atomic<uint32_t> g_session{0};
Global* g = nullptr;
thread_local ThreadBuf* t_buf = nullptr;

int32_t Gettid() { return static_cast<int32_t>(syscall(SYS_gettid)); }

void Say(const std::string& what) {
  std::fprintf(stderr, "opscope recorder (pid %d): %s\n", static_cast<int>(getpid()), what.c_str());
}

// ---- Alternate signal stacks ------------------------------------------------------------------
// A stack overflow faults with no stack left to run a handler on, so the deadly-signal handler
// (below) runs on an alternate stack. sigaltstack is per thread: one is installed for the thread
// that starts the recorder and for every thread when it first records, unless the program gave
// that thread one of its own. Threads that never record get none (an overflow there loses the
// file, as before).
constexpr size_t kAltStackBytes = 64 * 1024;  // the handler needs ~13 KiB (two fixed buffers)

struct AltStack {
  void* mem = nullptr;
  ~AltStack() {  // thread exit: unhook and free it, unless a handler is running on it
    if (mem == nullptr) return;
    stack_t cur{};
    if (sigaltstack(nullptr, &cur) != 0 || cur.ss_sp != mem || (cur.ss_flags & SS_ONSTACK)) return;
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    if (sigaltstack(&off, nullptr) == 0) munmap(mem, kAltStackBytes);
  }
};
thread_local AltStack t_alt_stack;

void EnsureAltStack() {
  if (t_alt_stack.mem != nullptr) return;
  stack_t cur{};
  if (sigaltstack(nullptr, &cur) != 0 || !(cur.ss_flags & SS_DISABLE)) return;  // the program's
  void* mem = mmap(nullptr, kAltStackBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (mem == MAP_FAILED) return;
  stack_t ss{};
  ss.ss_sp = mem;
  ss.ss_size = kAltStackBytes;
  if (sigaltstack(&ss, nullptr) != 0) {
    munmap(mem, kAltStackBytes);
    return;
  }
  t_alt_stack.mem = mem;
}

Record* TakeChunk() {
  {
    std::lock_guard<std::mutex> lock(g->pool_mu);
    if (!g->pool.empty()) {
      Record* c = g->pool.back();
      g->pool.pop_back();
      return c;
    }
  }
  return new Record[RecordLog::kChunk];
}

// Written chunks back to the pool, which keeps as many as a few threads' worth of a writer
// wake-up; the rest are freed (outside the pool's lock).
void GiveChunks(std::vector<std::unique_ptr<Record[]>>* chunks) {
  constexpr size_t kPoolMax = 4 * RecordLog::kWakeWriterChunks;
  {
    std::lock_guard<std::mutex> lock(g->pool_mu);
    for (auto& c : *chunks)
      if (g->pool.size() < kPoolMax) g->pool.push_back(c.release());
  }
  chunks->clear();
}

ThreadBuf* Buf() {
  if (t_buf) return t_buf;
  EnsureAltStack();
  ThreadBuf* b = new ThreadBuf;
  b->tid = Gettid();
  std::lock_guard<std::mutex> lock(g->mu);
  g->bufs.push_back(b);
  t_buf = b;
  // Run mode: the first record of this process starts its writer (a process that records nothing
  // gets no thread; a forked child starts its own here, since threads do not survive fork).
  if (!g->attachable && !g->writer_started.load(std::memory_order_relaxed)) StartWriter();
  return b;
}

uint32_t InternName(ThreadBuf* b, const char* name) {
  if (name == nullptr) name = "(null)";
  auto it = b->by_ptr.find(name);
  if (it != b->by_ptr.end() && std::strcmp(it->second.text.c_str(), name) == 0)
    return it->second.id;
  std::string s = name;
  uint32_t id;
  {
    std::lock_guard<std::mutex> lock(g->mu);
    auto [git, inserted] = g->name_ids.emplace(s, static_cast<uint32_t>(g->names.size()));
    if (inserted) g->names.push_back(s);
    id = git->second;
  }
  b->by_ptr[name] = CachedName{std::move(s), id};
  return id;
}

bool g_cpu_time = true;  // OPSCOPE_RANGES_CPU=0 turns the per-range thread CPU time off

int64_t CpuNow() { return g_cpu_time ? Now(CLOCK_THREAD_CPUTIME_ID) : 0; }

// fork() copies the recorder's state as it is at that moment: with g->mu and every buffer lock
// held by the forking thread (taken in that order, as everywhere), no other thread is halfway
// through changing a buffer, the name table or the buffer list.
void AtForkPrepare() {
  if (!g) return;
  g->mu.lock();
  for (ThreadBuf* b : g->bufs) b->mu.lock();
  g->pool_mu.lock();
}

void AtForkParent() {
  if (!g) return;
  g->pool_mu.unlock();
  for (ThreadBuf* b : g->bufs) b->mu.unlock();
  g->mu.unlock();
}

void AtForkChild() {
  if (!g) return;
  // Only the forking thread exists in the child; the parent's records, file and writer thread
  // belong to the parent. The child's first record registers a buffer anew (Buf), which starts
  // its writer; its file is its own (its pid), with every name.
  new (&g->mu) std::mutex;
  new (&g->file_mu) std::mutex;
  new (&g->writer_mu) std::mutex;
  new (&g->writer_cv) std::condition_variable;
  new (&g->pool_mu) std::mutex;
  for (ThreadBuf* b : g->bufs) {
    new (&b->mu) std::mutex;
    delete b;
  }
  g->bufs.clear();
  t_buf = nullptr;
  g->started.clear();
  g->ended.clear();
  g->pid = getpid();
  if (g->file_fd >= 0) ::close(g->file_fd);  // the parent's file, through the parent's offset
  g->file_fd = -1;
  g->file_failed = g->file_ended = false;
  g->names_written = g->domains_written = 0;
  g->writer_started.store(false, std::memory_order_relaxed);
  g->writer_wake.store(false, std::memory_order_relaxed);
  // An attachable program's child has no listener (threads do not survive fork): it stays
  // dormant; the channel and any attach session are the parent's.
  if (g->attachable) {
    g_active.store(false, std::memory_order_relaxed);
    g->attached = false;
  }
}

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

// Appends to a fixed buffer and writes it out when full.
class SignalSafeWriter {
 public:
  explicit SignalSafeWriter(int fd) : fd_(fd) {}
  ~SignalSafeWriter() { Drain(); }
  void Str(const char* s) {
    while (*s) Char(*s++);
  }
  void Text(const std::string& s) {  // one line: newlines become spaces
    for (char c : s) Char(c == '\n' || c == '\r' ? ' ' : c);
  }
  // Straight into the buffer, two digits at a time: the writer thread formats millions of these
  // while the program runs.
  void Int(int64_t v) {
    static constexpr char kPairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    if (sizeof buf_ - used_ < 21) Drain();
    char tmp[20];
    size_t n = sizeof tmp;
    uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    while (u >= 100) {
      const size_t pair = static_cast<size_t>(u % 100) * 2;
      u /= 100;
      n -= 2;
      tmp[n] = kPairs[pair];
      tmp[n + 1] = kPairs[pair + 1];
    }
    if (u >= 10) {
      n -= 2;
      tmp[n] = kPairs[u * 2];
      tmp[n + 1] = kPairs[u * 2 + 1];
    } else {
      tmp[--n] = static_cast<char>('0' + u);
    }
    if (v < 0) buf_[used_++] = '-';
    std::memcpy(buf_ + used_, tmp + n, sizeof tmp - n);
    used_ += sizeof tmp - n;
  }
  void Char(char c) {
    if (used_ == sizeof buf_) Drain();
    buf_[used_++] = c;
  }

 private:
  void Drain() {
    size_t off = 0;
    while (off < used_) {
      ssize_t w = ::write(fd_, buf_ + off, used_ - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    used_ = 0;
  }
  int fd_;
  size_t used_ = 0;
  char buf_[8192];
};

// try_lock with a few retries: another thread holds a recorder lock only for a moment; the
// interrupted thread itself may hold one forever.
template <typename Mutex>
bool TryLockBriefly(Mutex& mu) {
  for (int i = 0; i < 1000; ++i) {
    if (mu.try_lock()) return true;
    sched_yield();
  }
  return false;
}

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

// Like TryLockBriefly, for a lock held across write() calls (the run-mode writer's): up to
// about half a second, sleeping (nanosleep is async-signal-safe).
template <typename Mutex>
bool TryLockForAWhile(Mutex& mu) {
  for (int i = 0; i < 500; ++i) {
    if (mu.try_lock()) return true;
    timespec ms{0, 1000000};
    nanosleep(&ms, nullptr);
  }
  return false;
}

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

void WriteLine(FILE* f, const char* tag, size_t id, const std::string& text) {
  std::string clean = text;
  for (char& c : clean)
    if (c == '\n' || c == '\r') c = ' ';
  std::fprintf(f, "%s %zu %s\n", tag, id, clean.c_str());
}

// The whole file through stdio (the caller holds g->mu). `at_exit` (and always outside attach
// mode): ranges still open are written as ending now (U). Otherwise (detaching from a running
// program) ranges still open are left out, and each thread's partial ranges are told as `cut`
// lines (ranges_reader.h ThreadCut), which opscope applies over every recorder's ranges: B, when
// a range opened before the attach ended (ThreadBuf::horizon); A, the start of the oldest range
// still open. At exit no cuts are written: the ranges ending then are often the lifetime ranges
// (a whole main(), a thread's whole loop), and dropping everything inside them would leave
// nothing. Returns how many ranges were open.
size_t WriteAllLocked(FILE* f, int64_t now, bool at_exit = true) {
  const bool with_open = at_exit;
  size_t open = g->started.size();
  std::fprintf(f, "opscope-ranges 1\npid %d\nsource %s\n", getpid(), g->source.c_str());
  for (size_t i = 0; i < g->names.size(); ++i) WriteLine(f, "name", i, g->names[i]);
  for (size_t i = 0; i < g->domains.size(); ++i) WriteLine(f, "domain", i, g->domains[i]);
  for (ThreadBuf* b : g->bufs) {
    std::lock_guard<std::mutex> bl(b->mu);
    b->done.ForEach([&](const Record& r) {
      std::fprintf(f, "range %c %d %lld %lld %u %u %u %lld\n", r.kind, b->tid,
                   static_cast<long long>(r.start), static_cast<long long>(r.end), r.name,
                   static_cast<unsigned>(r.domain), static_cast<unsigned>(r.depth),
                   static_cast<long long>(r.cpu_ns));
    });
    int64_t oldest_open = INT64_MAX;
    for (const auto& st : b->stacks)
      if (!st.empty()) oldest_open = std::min(oldest_open, st.front().start);
    if (!at_exit && b->horizon > 0)
      std::fprintf(f, "cut B %d %lld\n", b->tid, static_cast<long long>(b->horizon));
    if (!at_exit && oldest_open != INT64_MAX)
      std::fprintf(f, "cut A %d %lld\n", b->tid, static_cast<long long>(oldest_open));
    for (size_t domain = 0; domain < b->stacks.size(); ++domain)
      for (size_t d = 0, n = b->stacks[domain].size(); d < n; ++d) {
        ++open;
        if (!with_open) continue;
        const auto& st = b->stacks[domain];
        std::fprintf(f, "range U %d %lld %lld %u %zu %zu -1\n", b->tid,
                     static_cast<long long>(st[d].start), static_cast<long long>(now), st[d].name,
                     domain, d);
      }
  }
  for (const Ended& e : g->ended)
    std::fprintf(f, "range S %d %lld %lld %u %u 0 -1\n", e.s.tid, static_cast<long long>(e.s.start),
                 static_cast<long long>(e.end), e.s.name, e.s.domain);
  if (with_open)
    for (const auto& [id, s] : g->started)
      std::fprintf(f, "range U %d %lld %lld %u %u 0 -1\n", s.tid, static_cast<long long>(s.start),
                   static_cast<long long>(now), s.name, s.domain);
  return open;
}

// ---- Attach mode (OPSCOPE_ATTACHABLE=1; protocol in ranges_recorder.h) -----------------------

std::mutex g_attach_mu;  // serializes the listener thread and the exit-time detach
bool g_exiting = false;

// Channels of this uid whose process is gone (killed by SIGKILL, or ended through a signal
// handler of its own that called _exit) are removed by the next attachable program that makes its
// channel in the same folder. Gone: kill(pid, 0) says ESRCH, and nobody holds the folder's lock
// (each recorder holds a flock on its channel while it runs: a process with that pid in another
// pid namespace sharing the folder, or a forked child still holding the descriptor, keeps it).
// Only folders named like a channel, this uid's and private, and only the files the protocol puts
// there are removed; a folder holding anything else stays.
void ReclaimStaleChannels(int base_fd) {
  const int list_fd = fcntl(base_fd, F_DUPFD_CLOEXEC, 0);
  DIR* d = list_fd >= 0 ? fdopendir(list_fd) : nullptr;
  if (d == nullptr) {
    if (list_fd >= 0) ::close(list_fd);
    return;
  }
  static constexpr char kPrefix[] = "opscope-attach-";
  std::vector<std::string> stale;
  while (dirent* e = readdir(d)) {
    const char* n = e->d_name;
    if (std::strncmp(n, kPrefix, sizeof kPrefix - 1) != 0) continue;
    const char* digits = n + sizeof kPrefix - 1;
    const char* q = digits;
    long pid = 0;
    while (*q >= '0' && *q <= '9' && pid < (1L << 31)) pid = pid * 10 + (*q++ - '0');
    if (q == digits || *q != '-' || q[1] == '\0' || pid <= 0 || pid == getpid()) continue;
    bool source_word = true;  // "annotate", "nvtx"
    for (const char* c = q + 1; *c; ++c) source_word = source_word && *c >= 'a' && *c <= 'z';
    if (!source_word) continue;
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    stale.push_back(n);
  }
  closedir(d);
  for (const std::string& name : stale) {
    FileTrust trust = FileTrust::kTrusted;
    std::string why;
    const int fd = OpenTrustedFolder(base_fd, name.c_str(), geteuid(), "this program's uid", true,
                                     &trust, &why);
    if (fd < 0) continue;  // another user's, or not a channel
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
      ::close(fd);
      continue;
    }
    unlinkat(fd, "request", 0);
    unlinkat(fd, "stop", 0);
    // opscope's temporary files (range_attach.cc PlaceFile), left by an opscope killed meanwhile.
    const int inner_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (DIR* in = inner_fd >= 0 ? fdopendir(inner_fd) : nullptr) {
      std::vector<std::string> temps;
      while (dirent* e = readdir(in)) {
        const std::string f = e->d_name;
        if ((f.rfind(".request.", 0) == 0 || f.rfind(".stop.", 0) == 0) && f.size() > 4 &&
            f.compare(f.size() - 4, 4, ".tmp") == 0)
          temps.push_back(f);
      }
      closedir(in);
      for (const std::string& f : temps) unlinkat(fd, f.c_str(), 0);
    } else if (inner_fd >= 0) {
      ::close(inner_fd);
    }
    ::close(fd);
    unlinkat(base_fd, name.c_str(), AT_REMOVEDIR);  // fails, leaving it, if anything else is in it
  }
}

// Creates (or takes back, after an earlier process with this pid) the channel folder, after
// reclaiming the stale channels next to it.
bool OpenChannel() {
  const char* chosen = std::getenv(kAttachDirEnv);
  const std::string base = AttachBaseDir(chosen, std::getenv("XDG_RUNTIME_DIR"), geteuid());
  if (chosen != nullptr && chosen[0] != '\0') {
    struct stat bst {};
    if (base[0] != '/' || stat(base.c_str(), &bst) != 0 || !S_ISDIR(bst.st_mode)) {
      Say(std::string(kAttachDirEnv) + "=" + base +
          " is not an existing folder given by its absolute path: not attachable");
      return false;
    }
  }
  const std::string name = AttachChannelName(getpid(), g->source);
  g->channel = base + "/" + name;
  const int base_fd = ::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (base_fd < 0) {
    Say("cannot open " + base + " (" + std::strerror(errno) + "): not attachable");
    return false;
  }
  ReclaimStaleChannels(base_fd);
  if (mkdirat(base_fd, name.c_str(), 0700) != 0 && errno != EEXIST) {
    Say("cannot create " + g->channel + " (" + std::strerror(errno) + "): not attachable");
    ::close(base_fd);
    return false;
  }
  FileTrust trust = FileTrust::kTrusted;
  std::string why;
  const int fd =
      OpenTrustedFolder(base_fd, name.c_str(), geteuid(), "this program's uid", true, &trust, &why);
  ::close(base_fd);
  if (fd < 0) {
    Say(g->channel + " is " + why + ": not attachable (remove it and start the program again)");
    return false;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    Say(g->channel +
        " is held by another running process (one with this pid in another pid namespace?): not "
        "attachable");
    ::close(fd);
    return false;
  }
  unlinkat(fd, "request", 0);  // stale: from an earlier process with this pid
  unlinkat(fd, "stop", 0);
  g->channel_fd = fd;
  return true;
}

bool ChannelHas(const char* name) {
  struct stat st {};
  return fstatat(g->channel_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

// Reads `name` from the channel if it is to be obeyed (collect/trusted_file.h: a regular file of
// this uid, one link, not writable by others, at most 4 KiB); otherwise *why says why not (""
// when it is not there at all).
bool ReadChannelFile(const char* name, std::string* text, std::string* why) {
  return ReadTrustedFile(g->channel_fd, name, geteuid(), "this program's uid", kMaxMarkerBytes,
                         text, why) == FileTrust::kTrusted;
}

void ClearBuffersLocked() {
  for (ThreadBuf* b : g->bufs) {
    std::lock_guard<std::mutex> bl(b->mu);
    b->done.Clear();
    b->stacks.clear();
    b->horizon = 0;
  }
  g->started.clear();
  g->ended.clear();
}

// The listener saw a request: check it, its output folder, and switch to recording.
void TryAttach() {
  std::string text, why;
  if (!ReadChannelFile("request", &text, &why)) {
    if (!why.empty()) {
      Say("ignored an attach request: " + g->channel + "/request is " + why);
      unlinkat(g->channel_fd, "request", 0);
    }
    return;
  }
  const AttachRequest request = ParseAttachRequest(text);
  if (!request.Valid()) {
    Say("ignored a malformed attach request in " + g->channel);
    unlinkat(g->channel_fd, "request", 0);
    return;
  }
  const std::string& out = request.out;
  const long opscope_pid = request.opscope_pid;
  const bool cpu = request.cpu;
  int ofd = ::open(out.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st {};
  if (ofd < 0 || fstat(ofd, &st) != 0 ||
      CheckTrusted(st, geteuid(), "this program's uid", true, false, &why) != FileTrust::kTrusted) {
    Say("ignored an attach request: its output folder " + out + " is " +
        (ofd < 0 ? std::string("not openable (") + std::strerror(errno) + ")" : why));
    if (ofd >= 0) ::close(ofd);
    unlinkat(g->channel_fd, "request", 0);
    return;
  }
  int64_t since = 0;
  {
    std::lock_guard<std::mutex> lock(g->mu);
    ClearBuffersLocked();
    since = Now(CLOCK_MONOTONIC);
    g->out_fd = ofd;
    g->opscope_pid = static_cast<pid_t>(opscope_pid);
    g->out_file = "ranges." + g->source + "." + std::to_string(getpid());
    g->done_file = "done." + g->source;
    g_cpu_time = cpu;
    g_session.fetch_add(1, std::memory_order_relaxed);
    g->attached = true;
  }
  g_active.store(true, std::memory_order_release);
  // When recording began (CLOCK_MONOTONIC ns): opscope keeps what all recorders saw.
  const std::string ack = "attached " + std::to_string(since) + "\n";
  WriteMarker(("attached." + g->source).c_str(), ack.c_str());
}

// Ends the attach session: writes what was recorded (when `done` is given: "stop", "exit") and
// the `done.<source>` marker ("stop N T": N ranges still open were left out, their end unknown;
// "exit T": they end at exit; T the CLOCK_MONOTONIC ns of the end), clears the buffers and goes
// dormant again.
void Detach(const char* done) {
  g_active.store(false, std::memory_order_release);
  const int64_t now = Now(CLOCK_MONOTONIC);
  std::lock_guard<std::mutex> lock(g->mu);
  if (!g->attached) return;
  if (done != nullptr) {
    const bool at_exit = std::strcmp(done, "exit") == 0;
    size_t open = 0;
    int fd = OpenInOutFolder(g->out_file.c_str());
    FILE* f = fd >= 0 ? fdopen(fd, "w") : nullptr;
    if (f != nullptr) {
      open = WriteAllLocked(f, now, at_exit);
      std::fclose(f);
    } else {
      Say("cannot write the ranges into the attach folder: " + std::string(std::strerror(errno)));
      if (fd >= 0) ::close(fd);
    }
    const std::string text =
        at_exit ? "exit " + std::to_string(now) + "\n"
                : "stop " + std::to_string(open) + " " + std::to_string(now) + "\n";
    WriteMarker(g->done_file.c_str(), text.c_str());
  }
  ClearBuffersLocked();
  ::close(g->out_fd);
  g->out_fd = -1;
  g->attached = false;
  unlinkat(g->channel_fd, "stop", 0);
  unlinkat(g->channel_fd, "request", 0);
}

// The listener: blocks on inotify while dormant (no cost), checks every 250 ms while attached
// (a stop request, or opscope gone without one: then the records are dropped).
void* Listen(void*) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, nullptr);  // the program's signals go to its own threads
  prctl(PR_SET_NAME, "opscope-listen", 0, 0, 0);
  int ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (ino >= 0 && inotify_add_watch(ino, g->channel.c_str(),
                                    IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ATTRIB) < 0) {
    ::close(ino);
    ino = -1;
  }
  for (;;) {
    bool attached;
    {
      std::lock_guard<std::mutex> lock(g_attach_mu);
      if (g_exiting) break;
      if (!g->attached)
        TryAttach();
      else if (ChannelHas("stop"))
        Detach("stop");
      else if (!ChannelHas("request") || (kill(g->opscope_pid, 0) != 0 && errno == ESRCH))
        Detach(nullptr);  // opscope went away without a stop: nobody will read the records
      attached = g->attached;
    }
    if (ino >= 0) {
      pollfd p{ino, POLLIN, 0};
      if (poll(&p, 1, attached ? 250 : -1) > 0) {
        char buf[4096];
        while (::read(ino, buf, sizeof buf) > 0) {
        }
      }
    } else {
      usleep(200000);
    }
  }
  if (ino >= 0) ::close(ino);
  return nullptr;
}

void StartListener() {
  if (!OpenChannel()) return;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  if (pthread_create(&t, &attr, Listen, nullptr) != 0) Say("cannot start the attach listener");
  pthread_attr_destroy(&attr);
}

// At exit: a session still attached writes its records ("exit"), and the channel is removed.
void AttachAtExit() {
  if (g->owner_pid != getpid()) return;  // a forked child: the channel is its parent's
  std::lock_guard<std::mutex> lock(g_attach_mu);
  g_exiting = true;
  if (g->attached) Detach("exit");
  if (g->channel_fd >= 0) {
    unlinkat(g->channel_fd, "request", 0);
    unlinkat(g->channel_fd, "stop", 0);
    ::close(g->channel_fd);
    g->channel_fd = -1;
    rmdir(g->channel.c_str());
  }
}

}  // namespace

// _exit and _Exit are caught by the annotate runtime, the library in LD_PRELOAD (annotate_rt.cc);
// another recorder library in the process (NVTX's, loaded by NVTX's dlopen, whose own symbols
// interpose nothing) asks it to call this library's end too.
void AskForQuickExitHook() {
  using AddHook = void (*)(void (*)());
  if (auto add = reinterpret_cast<AddHook>(dlsym(RTLD_DEFAULT, "opscope_ranges_add_exit_hook_v1")))
    add(EndAtQuickExit);
}

bool Init(const char* source) {
  const char* out = std::getenv("OPSCOPE_RANGES_OUT");
  const bool run_mode = out != nullptr && out[0] != '\0';
  const char* attachable = std::getenv("OPSCOPE_ATTACHABLE");
  if (!run_mode && !(attachable && attachable[0] == '1')) return false;
  if (g == nullptr) {
    g = new Global;
    g->path = run_mode ? out : "";
    g->source = source;
    g->pid = getpid();
    const char* cpu = std::getenv("OPSCOPE_RANGES_CPU");
    g_cpu_time = !(cpu && cpu[0] == '0');
    pthread_atfork(AtForkPrepare, AtForkParent, AtForkChild);
    std::atexit(Flush);
    EnsureAltStack();
    InstallDeadlySignalHandlers();
    if (std::strcmp(source, "annotate") != 0) AskForQuickExitHook();
    if (!run_mode) {
      g->attachable = true;
      g->owner_pid = getpid();
      StartListener();
    }
  }
  if (run_mode) g_active.store(true, std::memory_order_release);
  return true;
}

bool Active() { return g_active.load(std::memory_order_acquire); }

uint32_t InternDomain(const char* name) {
  if (g == nullptr) return 0;  // dormant recorders intern too: domains are created at start-up
  std::lock_guard<std::mutex> lock(g->mu);
  std::string s = name ? name : "(null)";
  for (size_t i = 0; i < g->domains.size(); ++i)
    if (g->domains[i] == s) return static_cast<uint32_t>(i);
  if (g->domains.size() >= 65535) return 0;  // records store the domain in 16 bits
  g->domains.push_back(s);
  return static_cast<uint32_t>(g->domains.size() - 1);
}

void Push(uint32_t domain, const char* name) {
  if (!Active()) return;
  ThreadBuf* b = Buf();
  // Interning takes the global lock: never while holding the buffer's (Flush locks global, then
  // buffer). The intern cache itself is touched only by its own thread.
  uint32_t id = InternName(b, name);
  int64_t cpu = CpuNow();
  std::lock_guard<std::mutex> lock(b->mu);
  b->Stack(domain).push_back(
      Open{Now(CLOCK_MONOTONIC), cpu, id, g_session.load(std::memory_order_relaxed)});
}

void Pop(uint32_t domain) {
  if (!Active()) return;
  int64_t end = Now(CLOCK_MONOTONIC);
  int64_t cpu = CpuNow();
  ThreadBuf* b = Buf();
  std::lock_guard<std::mutex> lock(b->mu);
  auto& st = b->Stack(domain);
  if (st.empty()) {  // unmatched pop: ignored; attached, the end of a range opened before
    if (g->attachable) b->horizon = end;
    return;
  }
  Open o = st.back();
  st.pop_back();
  if (o.session != g_session.load(std::memory_order_relaxed)) return;  // opened before attach
  b->done.Add(Record{o.start, end, g_cpu_time ? cpu - o.cpu_start : -1, o.name,
                     static_cast<uint16_t>(domain),
                     static_cast<uint8_t>(std::min<size_t>(st.size(), 255)), 'P'});
}

uint64_t Start(uint32_t domain, const char* name) {
  if (!Active()) return 0;
  ThreadBuf* b = Buf();
  uint32_t id = InternName(b, name);
  int64_t now = Now(CLOCK_MONOTONIC);
  std::lock_guard<std::mutex> lock(g->mu);
  uint64_t rid = g->next_start_id++;
  g->started[rid] = StartOpen{b->tid, now, id, domain};
  return rid;
}

void End(uint64_t rid) {
  if (!Active() || rid == 0) return;
  int64_t now = Now(CLOCK_MONOTONIC);
  StartOpen s;
  {
    std::lock_guard<std::mutex> lock(g->mu);
    auto it = g->started.find(rid);
    if (it == g->started.end()) return;
    s = it->second;
    g->started.erase(it);
  }
  std::lock_guard<std::mutex> lock(g->mu);
  g->ended.push_back(Ended{s, now});
}

void Flush() {
  if (g == nullptr) return;
  if (g->attachable) {
    AttachAtExit();
    return;
  }
  if (Active()) WriteRunEnd(false);
}

void EndAtQuickExit() { EndWithoutExitHandlers("exit\n"); }

}  // namespace opscope::collect::rec
