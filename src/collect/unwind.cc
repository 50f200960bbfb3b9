#include "collect/unwind.h"

#include <dwarf.h>

#include <cstring>

namespace opscope::collect {

struct UnwindCallbacks {
  static pid_t NextThread(Dwfl*, void* arg, void** thread_argp) {
    if (*thread_argp != nullptr) return 0;
    auto* u = static_cast<DwarfUnwinder*>(arg);
    *thread_argp = arg;
    return u->current_ ? u->current_->tid : 0;
  }
  static bool GetThread(Dwfl*, pid_t, void* arg, void** thread_argp) {
    *thread_argp = arg;
    return true;
  }
  static bool MemoryRead(Dwfl*, Dwarf_Addr addr, Dwarf_Word* result, void* arg) {
    auto* u = static_cast<DwarfUnwinder*>(arg);
    const std::string& stack = u->current_->stack;
    if (addr < u->sp_ || addr - u->sp_ + sizeof(Dwarf_Word) > stack.size()) return false;
    std::memcpy(result, stack.data() + (addr - u->sp_), sizeof(Dwarf_Word));
    return true;
  }
  static bool SetInitialRegisters(Dwfl_Thread* thread, void* arg) {
    auto* u = static_cast<DwarfUnwinder*>(arg);
    std::vector<uint64_t> regs;
    uint64_t pc = 0, sp = 0;
    if (!DwarfUnwinder::PerfRegsToDwarf(u->current_->regs, &regs, &pc, &sp)) return false;
    std::vector<Dwarf_Word> words(regs.begin(), regs.end());
    if (!dwfl_thread_state_registers(thread, 0, static_cast<unsigned>(words.size()), words.data()))
      return false;
#if defined(__aarch64__)
    dwfl_thread_state_register_pc(thread, pc);
#endif
    return true;
  }
};

static const Dwfl_Thread_Callbacks kCallbacks = {UnwindCallbacks::NextThread,
                                                 UnwindCallbacks::GetThread,
                                                 UnwindCallbacks::MemoryRead,
                                                 UnwindCallbacks::SetInitialRegisters,
                                                 nullptr,
                                                 nullptr};

bool DwarfUnwinder::PerfRegsToDwarf(const std::vector<uint64_t>& p, std::vector<uint64_t>* d,
                                    uint64_t* pc, uint64_t* sp) {
#if defined(__x86_64__)
  // perf order (mask bits ascending): AX BX CX DX SI DI BP SP IP R8..R15.
  // DWARF x86-64: 0 rax 1 rdx 2 rcx 3 rbx 4 rsi 5 rdi 6 rbp 7 rsp 8-15 r8-r15 16 rip.
  if (p.size() != 17) return false;
  *d = {p[0], p[3], p[2], p[1], p[4], p[5], p[6], p[7]};
  for (int i = 9; i < 17; ++i) d->push_back(p[i]);
  d->push_back(p[8]);
  *pc = p[8];
  *sp = p[7];
  return true;
#elif defined(__aarch64__)
  // perf order: X0..X30, SP, PC; DWARF: x0-x30 = 0-30, sp = 31 (PC set separately).
  if (p.size() != 33) return false;
  d->assign(p.begin(), p.begin() + 32);
  *pc = p[32];
  *sp = p[31];
  return true;
#else
  return false;
#endif
}

std::unique_ptr<DwarfUnwinder> DwarfUnwinder::Attach(Dwfl* dwfl, int pid, std::string* error) {
  auto u = std::unique_ptr<DwarfUnwinder>(new DwarfUnwinder);
  u->dwfl_ = dwfl;
  u->pid_ = pid;
  if (!dwfl_attach_state(dwfl, nullptr, pid, &kCallbacks, u.get())) {
    *error = dwfl_errmsg(-1);
    return nullptr;
  }
  return u;
}

bool DwarfUnwinder::Unwind(const RawSample& s, std::vector<uint64_t>* pcs, size_t max_frames) {
  std::vector<uint64_t> regs;
  uint64_t pc = 0;
  if (!PerfRegsToDwarf(s.regs, &regs, &pc, &sp_)) {
    // No user registers (sample in a kernel thread, or regs ABI none): the IP is all we have.
    if (!s.ips.empty()) pcs->push_back(s.ips[0]);
    return false;
  }
  current_ = &s;
  out_ = pcs;
  max_frames_ = pcs->size() + max_frames;
  size_t before = pcs->size();
  int rc = dwfl_getthread_frames(
      dwfl_, s.tid,
      [](Dwfl_Frame* frame, void* arg) -> int {
        auto* u = static_cast<DwarfUnwinder*>(arg);
        Dwarf_Addr pc;
        bool activation = false;
        if (!dwfl_frame_pc(frame, &pc, &activation)) return DWARF_CB_ABORT;
        if (pc == 0) return DWARF_CB_ABORT;
        u->out_->push_back(activation ? pc : pc - 1);
        return u->out_->size() >= u->max_frames_ ? DWARF_CB_ABORT : DWARF_CB_OK;
      },
      this);
  current_ = nullptr;
  if (pcs->size() == before) pcs->push_back(pc);
  return rc == 0;
}

}  // namespace opscope::collect
