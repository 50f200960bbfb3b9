// libFuzzer entry point for the range-record parser (built with OPSCOPE_FUZZ; the same entry
// point runs in ranges_reader_fuzz_test on the seed corpus plus truncations and bit flips).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collect/ranges_reader.h"
#include "profile/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<opscope::profile::Range> ranges;
  opscope::collect::RangeFileInfo info;
  if (opscope::collect::ParseRangeRecords(text, "fuzz", &ranges, &info).ok()) {
    opscope::collect::AssignNesting(&ranges);
    opscope::profile::Profile p;
    p.ranges = std::move(ranges);
    // Parsed ranges must always make a valid profile.
    if (!opscope::profile::Validate(p).ok()) __builtin_trap();
  }
  return 0;
}
