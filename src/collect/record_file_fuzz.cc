// libFuzzer target for the record file reader (the format `opscope report` reads from disk).
// Built as a fuzzer with OPSCOPE_FUZZ; the same entry point runs in record_file_test on a seed
// corpus plus truncations and bit flips.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collect/record_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace opscope::collect;
  auto r = RecordReader::FromBytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!r.ok()) return 0;
  uint64_t n = 0;
  EventVisitor v;
  v.sample = [&](const RawSample& s) { n += s.ips.size() + s.regs.size() + s.stack.size(); };
  v.mmap = [&](const RawMmap& m) { n += m.filename.size(); };
  v.comm = [&](const RawComm& c) { n += c.comm.size(); };
  v.fork = [&](const RawFork&) { ++n; };
  v.lost = [&](uint64_t l) { n += l; };
  (void)r->VisitEvents(v);
  if (r->symbolized()) {
    const auto& s = *r->symbolized();
    for (const auto& smp : s.samples)
      for (uint32_t f : smp.stack)
        if (f >= s.frames.size()) __builtin_trap();  // the decoder must have rejected it
  }
  return static_cast<int>(n & 0);
}
