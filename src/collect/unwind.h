// DWARF call-graph unwinding of sampled user stacks with libdw.
//
// A DWARF sample carries the user registers and a copy of the top of the user stack (see
// sampler.h). The unwinder gives libdwfl a "process" whose only thread is the current sample:
// set_initial_registers maps the perf register layout to DWARF register numbers, memory_read
// answers from the stack copy, and libdw's CFI interpreter (.eh_frame/.debug_frame) walks the
// frames. One Dwfl per address space is attached once and reused for every sample, so CFI is
// parsed once per module rather than once per sample.
#pragma once

#include <elfutils/libdwfl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collect/record_file.h"

namespace opscope::collect {

class DwarfUnwinder {
 public:
  // `dwfl` must already have the process's modules reported; it must outlive the unwinder.
  // Returns nullptr and sets `error` when libdw cannot attach (e.g. no module with an ELF).
  static std::unique_ptr<DwarfUnwinder> Attach(Dwfl* dwfl, int pid, std::string* error);

  // Appends the lookup PCs of `s`'s call chain, leaf first: the sampled IP itself, then each
  // caller's return address minus one (so it falls inside the call instruction's line).
  // Returns false when unwinding stopped early (the chain is still usable).
  bool Unwind(const RawSample& s, std::vector<uint64_t>* pcs, size_t max_frames = 256);

  // Maps perf user registers (in mask order) to DWARF registers; exposed for tests.
  static bool PerfRegsToDwarf(const std::vector<uint64_t>& perf_regs, std::vector<uint64_t>* dwarf,
                              uint64_t* pc, uint64_t* sp);

 private:
  DwarfUnwinder() = default;
  friend struct UnwindCallbacks;
  Dwfl* dwfl_ = nullptr;
  int pid_ = 0;
  const RawSample* current_ = nullptr;
  uint64_t sp_ = 0;
  std::vector<uint64_t>* out_ = nullptr;
  size_t max_frames_ = 0;
};

}  // namespace opscope::collect
