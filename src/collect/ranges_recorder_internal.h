// The range recorder's shared state and the functions its files call across (internal: the
// recorder libraries are built with hidden visibility, so none of this is exported). The files:
// ranges_recorder.cc (the records, the buffers, fork, the public entry points),
// ranges_recorder_signal.cc (writing from a signal handler, the end of a process that runs no
// exit handlers), ranges_recorder_run.cc (run mode: the output file written as ranges close),
// ranges_recorder_attach.cc (attach mode: the channel, attach and detach).
#pragma once

#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "collect/ranges_recorder.h"

namespace opscope::collect::rec::internal {

inline int64_t Now(clockid_t clk) {
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

void WakeWriter();    // ranges_recorder_run.cc
void StartWriter();   // ranges_recorder_run.cc
Record* TakeChunk();  // ranges_recorder.cc

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

// ranges_recorder.cc
extern std::atomic<bool> g_active;
extern std::atomic<uint32_t> g_session;
extern Global* g;
extern bool g_cpu_time;  // OPSCOPE_RANGES_CPU=0 turns the per-range thread CPU time off

inline int32_t Gettid() { return static_cast<int32_t>(syscall(SYS_gettid)); }

// "opscope recorder (pid N): WHAT" on stderr.
void Say(const std::string& what);

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

// ranges_recorder.cc: written chunks back to the pool.
void GiveChunks(std::vector<std::unique_ptr<Record[]>>* chunks);

// ranges_recorder_signal.cc
void WriteRange(SignalSafeWriter& w, char kind, int32_t tid, int64_t start, int64_t end,
                uint32_t name, uint32_t domain, uint32_t depth, int64_t cpu_ns);
void WriteBufferedRanges(SignalSafeWriter& w, int64_t now, bool try_only);
void WriteHeader(SignalSafeWriter& w);
void WriteName(SignalSafeWriter& w, const char* tag, size_t id, const std::string& text);
int OpenInOutFolder(const char* name);
void WriteMarker(const char* name, const char* text);
void EndWithoutExitHandlers(const char* how);
void InstallDeadlySignalHandlers();

// ranges_recorder_run.cc
void WriteRunEnd(bool in_signal);

// ranges_recorder_attach.cc
void StartListener();
void AttachAtExit();

}  // namespace opscope::collect::rec::internal
