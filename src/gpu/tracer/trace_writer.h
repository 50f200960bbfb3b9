// The tracer's output file: one per traced process, <OPSCOPE_GPU_OUT>/gpu-<pid>.trace, in the
// format of gpu/trace_format.h.
//
// It lives inside someone else's program, so: no exceptions (built with -fno-exceptions), no
// allocation on the hot path beyond the interning table, no abort. Every producer (CUPTI's
// buffer-completed callback on CUPTI's thread, NVTX calls on the program's threads) appends
// under one mutex into a 1 MiB staging buffer that is written with write(2) when it fills and
// at flush. A failed write is not retried: its records are counted as dropped (kDropTracer)
// and reported in the trace. After fork() the child starts its own file (pthread_atfork).
#pragma once

#include <cstddef>
#include <cstdint>

namespace opscope::gpu::tracer {

// "opscope-gpu: <message>" on stderr, at most kMaxLogLines lines per process.
void Log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

int64_t MonotonicNs();
uint32_t CurrentTid();

class TraceWriter {
 public:
  // Opens <dir>/gpu-<pid>.trace and writes the file header. False (logged) on failure; the
  // writer then ignores every append.
  bool Open(const char* dir);
  bool is_open() const { return fd_ >= 0; }

  void Lock();
  void Unlock();
  // For signal handlers: false when another thread (or this one, interrupted) holds the lock
  // and does not release it within a few milliseconds.
  bool TryLockFor(int milliseconds);
  bool HeldByThisThread() const;

  // Returns the id of `s` (defining it with a kString record the first time). 0 for null.
  uint32_t InternLocked(const char* s, size_t length);
  uint32_t InternLocked(const char* s);

  void AppendLocked(uint16_t type, const void* payload, uint32_t size, const void* tail = nullptr,
                    uint32_t tail_size = 0);
  void FlushLocked();
  // Records lost because a write failed (the tracer's own losses, not CUPTI's).
  uint64_t dropped_locked() const { return dropped_records_; }

  // In a forked child: forget the parent's staging data and strings, start gpu-<childpid>.trace.
  void ReopenAfterFork();

 private:
  struct Slot {
    uint64_t hash;
    char* text;
    uint32_t length;
    uint32_t id;
  };
  bool GrowTable();
  void WriteHeader();

  int fd_ = -1;
  char dir_[4096] = {};
  size_t used_ = 0;
  uint32_t pending_records_ = 0;  // records in the staging buffer
  uint64_t dropped_records_ = 0;
  uint32_t next_string_id_ = 1;
  Slot* slots_ = nullptr;
  size_t capacity_ = 0, filled_ = 0;
};

// The process-wide writer.
TraceWriter& Writer();

}  // namespace opscope::gpu::tracer
