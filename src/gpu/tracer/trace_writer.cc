#include "gpu/tracer/trace_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gpu/trace_format.h"

namespace opscope::gpu::tracer {
namespace {

constexpr size_t kStagingBytes = 1 << 20;
constexpr int kMaxLogLines = 20;

pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
std::atomic<uint32_t> g_owner{0};
std::atomic<int> g_log_lines{0};
char g_staging[kStagingBytes];

uint64_t Fnv1a(const char* s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(s[i]);
    h *= 1099511628211ull;
  }
  return h ? h : 1;  // 0 marks an empty slot
}

bool WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

void Log(const char* fmt, ...) {
  if (g_log_lines.fetch_add(1) >= kMaxLogLines) return;
  char line[1024];
  int n = snprintf(line, sizeof line, "opscope-gpu: ");
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
  va_end(ap);
  size_t len = static_cast<size_t>(n) + (m < 0 ? 0 : static_cast<size_t>(m));
  if (len > sizeof line - 2) len = sizeof line - 2;
  line[len++] = '\n';
  ssize_t ignored = write(2, line, len);
  (void)ignored;
}

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// gettid is a system call: cache it per thread (a forked child's only thread re-reads it, see
// ReopenAfterFork).
thread_local uint32_t t_tid = 0;
uint32_t CurrentTid() {
  if (t_tid == 0) t_tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return t_tid;
}

TraceWriter& Writer() {
  static TraceWriter writer;
  return writer;
}

bool TraceWriter::Open(const char* dir) {
  if (dir == nullptr || dir[0] == '\0') return false;
  snprintf(dir_, sizeof dir_, "%s", dir);
  char path[4200];
  snprintf(path, sizeof path, "%s/gpu-%d.trace", dir_, static_cast<int>(getpid()));
  fd_ = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    Log("cannot create %s (%s); GPU tracing is off for this process", path, strerror(errno));
    return false;
  }
  WriteHeader();
  return true;
}

void TraceWriter::WriteHeader() {
  trace::FileHeader h{};
  memcpy(h.magic, trace::kMagic, sizeof h.magic);
  h.version = trace::kVersion;
  h.header_size = sizeof h;
  h.pid = static_cast<int32_t>(getpid());
  h.start_ns = MonotonicNs();
  if (!WriteAll(fd_, reinterpret_cast<const char*>(&h), sizeof h)) {
    Log("cannot write the trace header (%s); GPU tracing is off for this process", strerror(errno));
    close(fd_);
    fd_ = -1;
  }
}

void TraceWriter::Lock() {
  pthread_mutex_lock(&g_mutex);
  g_owner.store(CurrentTid(), std::memory_order_relaxed);
}

void TraceWriter::Unlock() {
  g_owner.store(0, std::memory_order_relaxed);
  pthread_mutex_unlock(&g_mutex);
}

bool TraceWriter::TryLockFor(int milliseconds) {
  if (HeldByThisThread()) return false;
  for (int i = 0; i <= milliseconds * 10; ++i) {
    if (pthread_mutex_trylock(&g_mutex) == 0) {
      g_owner.store(CurrentTid(), std::memory_order_relaxed);
      return true;
    }
    timespec ts{0, 100000};
    nanosleep(&ts, nullptr);
  }
  return false;
}

bool TraceWriter::HeldByThisThread() const {
  return g_owner.load(std::memory_order_relaxed) == CurrentTid();
}

bool TraceWriter::GrowTable() {
  size_t capacity = capacity_ ? capacity_ * 2 : 4096;
  Slot* slots = static_cast<Slot*>(calloc(capacity, sizeof(Slot)));
  if (slots == nullptr) return false;
  for (size_t i = 0; i < capacity_; ++i) {
    if (slots_[i].hash == 0) continue;
    size_t j = slots_[i].hash & (capacity - 1);
    while (slots[j].hash != 0) j = (j + 1) & (capacity - 1);
    slots[j] = slots_[i];
  }
  free(slots_);
  slots_ = slots;
  capacity_ = capacity;
  return true;
}

uint32_t TraceWriter::InternLocked(const char* s) {
  return s == nullptr ? 0 : InternLocked(s, strlen(s));
}

uint32_t TraceWriter::InternLocked(const char* s, size_t length) {
  if (s == nullptr) return 0;
  if (length > (1u << 20)) length = 1u << 20;
  uint64_t h = Fnv1a(s, length);
  if (filled_ * 2 >= capacity_) GrowTable();  // on failure: keep probing the full-enough table
  if (capacity_ > 0) {
    size_t j = h & (capacity_ - 1);
    for (size_t probes = 0; probes < capacity_ && slots_[j].hash != 0; ++probes) {
      const Slot& slot = slots_[j];
      if (slot.hash == h && slot.length == length && memcmp(slot.text, s, length) == 0)
        return slot.id;
      j = (j + 1) & (capacity_ - 1);
    }
  }
  uint32_t id = next_string_id_++;
  trace::StringRecord rec{id, static_cast<uint32_t>(length)};
  AppendLocked(trace::kString, &rec, sizeof rec, s, static_cast<uint32_t>(length));
  // Remember it if there is room (a full table only means the string is written again).
  if (capacity_ > 0 && filled_ + 1 < capacity_) {
    char* copy = static_cast<char*>(malloc(length ? length : 1));
    if (copy != nullptr) {
      memcpy(copy, s, length);
      size_t j = h & (capacity_ - 1);
      while (slots_[j].hash != 0) j = (j + 1) & (capacity_ - 1);
      slots_[j] = Slot{h, copy, static_cast<uint32_t>(length), id};
      ++filled_;
    }
  }
  return id;
}

void TraceWriter::AppendLocked(uint16_t type, const void* payload, uint32_t size, const void* tail,
                               uint32_t tail_size) {
  if (fd_ < 0) return;
  size_t need = sizeof(trace::RecordHeader) + size + tail_size;
  if (used_ + need > kStagingBytes) FlushLocked();
  trace::RecordHeader h{type, 0, size + tail_size};
  if (need > kStagingBytes) {  // a huge string: write it straight through
    bool ok = WriteAll(fd_, reinterpret_cast<const char*>(&h), sizeof h) &&
              WriteAll(fd_, static_cast<const char*>(payload), size) &&
              WriteAll(fd_, static_cast<const char*>(tail), tail_size);
    if (!ok) ++dropped_records_;
    return;
  }
  memcpy(g_staging + used_, &h, sizeof h);
  memcpy(g_staging + used_ + sizeof h, payload, size);
  if (tail_size) memcpy(g_staging + used_ + sizeof h + size, tail, tail_size);
  used_ += need;
  ++pending_records_;
}

void TraceWriter::FlushLocked() {
  if (fd_ < 0 || used_ == 0) return;
  if (!WriteAll(fd_, g_staging, used_)) {
    dropped_records_ += pending_records_;
    Log("writing the trace failed (%s); %u records lost", strerror(errno), pending_records_);
  }
  used_ = 0;
  pending_records_ = 0;
}

void TraceWriter::ReopenAfterFork() {
  t_tid = 0;
  // Only this thread exists in the child; the mutex may have been held by a parent thread.
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  memcpy(&g_mutex, &fresh, sizeof fresh);
  g_owner.store(0);
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  used_ = 0;
  pending_records_ = 0;
  dropped_records_ = 0;
  next_string_id_ = 1;
  for (size_t i = 0; i < capacity_; ++i) free(slots_[i].text);
  free(slots_);
  slots_ = nullptr;
  capacity_ = filled_ = 0;
  if (dir_[0] != '\0') {
    char dir[sizeof dir_];
    memcpy(dir, dir_, sizeof dir);
    Open(dir);
  }
}

}  // namespace opscope::gpu::tracer
