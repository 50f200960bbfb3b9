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
#include "collect/ranges_recorder_internal.h"
#include "collect/trusted_file.h"

namespace opscope::collect::rec::internal {

std::atomic<bool> g_active{false};
std::atomic<uint32_t> g_session{0};
Global* g = nullptr;
thread_local ThreadBuf* t_buf = nullptr;

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

bool g_cpu_time = true;

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

}  // namespace opscope::collect::rec::internal

namespace opscope::collect::rec {

using namespace internal;  // NOLINT: the entry points are written in the state's terms

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
