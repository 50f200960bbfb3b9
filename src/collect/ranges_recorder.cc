#include "collect/ranges_recorder.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "collect/attach_dir.h"
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

// Records in fixed-size chunks: appending never copies or re-faults what is already recorded.
class RecordLog {
 public:
  static constexpr size_t kChunk = 8192;
  void Add(const Record& r) {
    if (used_ == kChunk || chunks_.empty()) {
      chunks_.emplace_back(new Record[kChunk]);
      used_ = 0;
    }
    chunks_.back()[used_++] = r;
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

 private:
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
  bool flushed = false;
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

ThreadBuf* Buf() {
  if (t_buf) return t_buf;
  EnsureAltStack();
  ThreadBuf* b = new ThreadBuf;
  b->tid = Gettid();
  std::lock_guard<std::mutex> lock(g->mu);
  g->bufs.push_back(b);
  t_buf = b;
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

void AtForkChild() {
  if (!g) return;
  // Only the forking thread exists in the child; the parent's records belong to the parent.
  new (&g->mu) std::mutex;
  for (ThreadBuf* b : g->bufs) {
    new (&b->mu) std::mutex;
    b->done.Clear();
    b->stacks.clear();
  }
  g->started.clear();
  g->ended.clear();
  g->flushed = false;
  if (t_buf) t_buf->tid = Gettid();
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
  void Int(int64_t v) {
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    do tmp[n++] = static_cast<char>('0' + u % 10);
    while ((u /= 10) != 0);
    if (v < 0) Char('-');
    while (n > 0) Char(tmp[--n]);
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

std::atomic<bool> g_signal_flush_busy{false};

// The whole file, from a signal handler (the caller holds g->mu).
void WriteAllSignalSafe(int fd, int64_t now) {
  SignalSafeWriter w(fd);
  w.Str("opscope-ranges 1\npid ");
  w.Int(getpid());
  w.Str("\nsource ");
  w.Text(g->source);
  w.Char('\n');
  for (size_t i = 0; i < g->names.size(); ++i) {
    w.Str("name ");
    w.Int(static_cast<int64_t>(i));
    w.Char(' ');
    w.Text(g->names[i]);
    w.Char('\n');
  }
  for (size_t i = 0; i < g->domains.size(); ++i) {
    w.Str("domain ");
    w.Int(static_cast<int64_t>(i));
    w.Char(' ');
    w.Text(g->domains[i]);
    w.Char('\n');
  }
  for (ThreadBuf* b : g->bufs) {
    if (!TryLockBriefly(b->mu)) continue;
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

// The file as Flush() writes it, from a signal handler. It does not mark the process flushed: if
// the program survives the signal (its own handler runs next), the exit-time Flush() rewrites the
// file with everything.
void FlushFromSignal() {
  if (!Active() || g == nullptr || g_signal_flush_busy.exchange(true)) return;
  const int64_t now = Now(CLOCK_MONOTONIC);
  if (TryLockBriefly(g->mu)) {
    if (g->attachable && g->attached && g->owner_pid == getpid()) {
      int fd = OpenInOutFolder(g->out_file.c_str());
      if (fd >= 0) {
        WriteAllSignalSafe(fd, now);
        ::close(fd);
      }
      WriteMarker(g->done_file.c_str(), "signal\n");
    } else if (!g->flushed && !g->attachable) {
      // path.source.pid, built without allocating.
      char path[4096];
      size_t n = 0;
      auto add = [&](const char* s) {
        while (*s && n + 1 < sizeof path) path[n++] = *s++;
      };
      add(g->path.c_str());
      add(".");
      add(g->source.c_str());
      add(".");
      char pid[16];
      int pn = 0;
      for (int v = getpid(); v > 0 && pn < 15; v /= 10) pid[pn++] = static_cast<char>('0' + v % 10);
      while (pn > 0 && n + 1 < sizeof path) path[n++] = pid[--pn];
      path[n] = '\0';
      int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd >= 0) {
        WriteAllSignalSafe(fd, now);
        ::close(fd);
      }
    }
    g->mu.unlock();
  }
  g_signal_flush_busy = false;
}

void OnDeadlySignal(int sig) {
  const int saved_errno = errno;
  FlushFromSignal();
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

void Say(const std::string& what) {
  std::fprintf(stderr, "opscope recorder (pid %d): %s\n", static_cast<int>(getpid()), what.c_str());
}

// Creates (or takes back, after an earlier process with this pid) the channel folder.
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
  std::string out;
  long opscope_pid = 0;
  bool magic = false, cpu = true;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line == "opscope-attach 1")
      magic = true;
    else if (line.rfind("out ", 0) == 0)
      out = line.substr(4);
    else if (line.rfind("opscope-pid ", 0) == 0)
      opscope_pid = std::strtol(line.c_str() + 12, nullptr, 10);
    else if (line == "cpu 0")
      cpu = false;
  }
  if (!magic || out.empty() || out[0] != '/' || opscope_pid <= 0) {
    Say("ignored a malformed attach request in " + g->channel);
    unlinkat(g->channel_fd, "request", 0);
    return;
  }
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

bool Init(const char* source) {
  const char* out = std::getenv("OPSCOPE_RANGES_OUT");
  const bool run_mode = out != nullptr && out[0] != '\0';
  const char* attachable = std::getenv("OPSCOPE_ATTACHABLE");
  if (!run_mode && !(attachable && attachable[0] == '1')) return false;
  if (g == nullptr) {
    g = new Global;
    g->path = run_mode ? out : "";
    g->source = source;
    const char* cpu = std::getenv("OPSCOPE_RANGES_CPU");
    g_cpu_time = !(cpu && cpu[0] == '0');
    pthread_atfork(nullptr, nullptr, AtForkChild);
    std::atexit(Flush);
    EnsureAltStack();
    InstallDeadlySignalHandlers();
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
  if (!Active()) return;
  int64_t now = Now(CLOCK_MONOTONIC);
  std::lock_guard<std::mutex> lock(g->mu);
  if (g->flushed) return;
  g->flushed = true;
  std::string path = g->path + "." + g->source + "." + std::to_string(getpid());
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "opscope: cannot write ranges to %s: %s\n", path.c_str(),
                 std::strerror(errno));
    return;
  }
  WriteAllLocked(f, now);
  std::fclose(f);
}

}  // namespace opscope::collect::rec
