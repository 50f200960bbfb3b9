#include "gpu/tracer/session.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>

#include <atomic>
#include <cstdlib>

#include "gpu/trace_format.h"
#include "gpu/tracer/trace_writer.h"

namespace opscope::gpu::tracer {
namespace {

pthread_once_t g_once = PTHREAD_ONCE_INIT;
bool g_started = false;
std::atomic<bool> g_finished{false};
std::atomic<void (*)(bool)> g_flusher{nullptr};

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGQUIT};
constexpr int kSignalCount = sizeof kSignals / sizeof kSignals[0];
struct sigaction g_previous[kSignalCount];

void WriteEnd(uint32_t reason, int signal) {
  TraceWriter& w = Writer();
  trace::DroppedRecord own{w.dropped_locked(), trace::kDropTracer, 0};
  w.AppendLocked(trace::kDropped, &own, sizeof own);
  trace::EndRecord end{MonotonicNs(), reason, signal};
  w.AppendLocked(trace::kEnd, &end, sizeof end);
  w.FlushLocked();
}

void AtExit() { FinishTracer(0); }

void OnSignal(int sig, siginfo_t* info, void* context) {
  int index = 0;
  while (index < kSignalCount && kSignals[index] != sig) ++index;
  if (index == kSignalCount) return;
  const struct sigaction& prev = g_previous[index];
  bool chained = (prev.sa_flags & SA_SIGINFO)
                     ? prev.sa_sigaction != nullptr
                     : (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN);
  if (chained) {
    // The program handles this signal itself and may well continue: save what we have, keep
    // tracing, and let its handler run.
    void (*flush)(bool) = g_flusher.load();
    if (flush != nullptr && !Writer().HeldByThisThread()) flush(false);
    if (Writer().TryLockFor(50)) {
      Writer().FlushLocked();
      Writer().Unlock();
    }
    if (prev.sa_flags & SA_SIGINFO)
      prev.sa_sigaction(sig, info, context);
    else
      prev.sa_handler(sig);
    return;
  }
  if (prev.sa_handler == SIG_IGN) return;
  FinishTracer(sig);
  // Re-raise with the default action so the program dies exactly as it would have.
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  raise(sig);
}

void ChildAfterFork() {
  g_finished.store(false);
  Writer().ReopenAfterFork();
}

void StartOnce() {
  const char* dir = getenv(trace::kOutDirEnv);
  if (dir == nullptr || dir[0] == '\0') {
    Log("%s is not set; run the program under `opscope gpu -- CMD` to trace it", trace::kOutDirEnv);
    return;
  }
  if (!Writer().Open(dir)) return;
  g_started = true;
  atexit(AtExit);
  pthread_atfork(nullptr, nullptr, ChildAfterFork);
  for (int i = 0; i < kSignalCount; ++i) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = OnSignal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(kSignals[i], &sa, &g_previous[i]) != 0)
      memset(&g_previous[i], 0, sizeof g_previous[i]);
  }
}

}  // namespace

bool StartTracer() {
  pthread_once(&g_once, StartOnce);
  return g_started;
}

void SetActivityFlusher(void (*flush)(bool forced)) { g_flusher.store(flush); }

void FinishTracer(int signal) {
  if (!g_started || g_finished.exchange(true)) return;
  void (*flush)(bool) = g_flusher.load();
  // cuptiActivityFlushAll delivers buffers through our callback, which takes the writer lock:
  // skip it when this thread was interrupted while holding that lock.
  if (flush != nullptr && !Writer().HeldByThisThread()) flush(true);
  if (signal == 0) {
    Writer().Lock();
    WriteEnd(trace::kEndExit, 0);
    Writer().Unlock();
  } else if (Writer().TryLockFor(200)) {
    WriteEnd(trace::kEndSignal, signal);
    Writer().Unlock();
  }
}

}  // namespace opscope::gpu::tracer
