// libopscope_ranges_rt.so: the runtime behind include/opscope/annotate.h. `opscope run` puts it
// in LD_PRELOAD; annotate.h finds `opscope_annotate_api_v1` with dlsym and calls through it.
//
// Being first in LD_PRELOAD, it also catches _exit and _Exit, with which a process ends without
// running exit handlers (a forked child's usual end, or a program's own signal handler): the
// recorders write what they hold first (rec::EndAtQuickExit, async-signal-safe, as _exit is),
// then the call goes on to libc's. Only the calls through the dynamic symbol are seen (libc's own
// internal exits are not: exit() runs the handlers anyway).
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "collect/ranges_recorder.h"
#include "opscope/annotate.h"

namespace {

uint32_t g_domain = 0;

void RtPush(const char* name) { opscope::collect::rec::Push(g_domain, name); }
void RtPop() { opscope::collect::rec::Pop(g_domain); }

using ExitFn = void (*)(int);
ExitFn g_next_exit = nullptr, g_next_Exit = nullptr;  // libc's, looked up before main

// The ends of the other recorder libraries in the process (rec::AskForQuickExitHook).
using EndHook = void (*)();
constexpr int kMaxHooks = 4;
std::atomic<EndHook> g_hooks[kMaxHooks];
std::atomic<int> g_hook_count{0};

void EndAll() {
  opscope::collect::rec::EndAtQuickExit();
  const int n = std::min(g_hook_count.load(std::memory_order_acquire), kMaxHooks);
  for (int i = 0; i < n; ++i)
    if (EndHook h = g_hooks[i].load(std::memory_order_acquire)) h();
}

[[noreturn]] void ExitThrough(ExitFn next, int status) {
  EndAll();
  if (next != nullptr) next(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

__attribute__((constructor)) void RtInit() {
  g_next_exit = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "_exit"));
  g_next_Exit = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "_Exit"));
  if (opscope::collect::rec::Init("annotate"))
    g_domain = opscope::collect::rec::InternDomain("opscope");
}

}  // namespace

extern "C" __attribute__((visibility("default")))
const struct opscope_annotate_api_v1 opscope_annotate_api_v1 = {
    sizeof(struct opscope_annotate_api_v1), RtPush, RtPop};

extern "C" __attribute__((visibility("default"))) void opscope_ranges_add_exit_hook_v1(
    void (*hook)()) {
  const int i = g_hook_count.fetch_add(1, std::memory_order_acq_rel);
  if (i < kMaxHooks) g_hooks[i].store(hook, std::memory_order_release);
}

extern "C" __attribute__((visibility("default"), noreturn)) void _exit(int status) {
  ExitThrough(g_next_exit, status);
}

extern "C" __attribute__((visibility("default"), noreturn)) void _Exit(int status) noexcept {
  ExitThrough(g_next_Exit != nullptr ? g_next_Exit : g_next_exit, status);
}
