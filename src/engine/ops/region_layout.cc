// RegionLayoutFor: NHWC or nChw8c per CPU and channel count (region_layout.h).
#include "engine/ops/region_layout.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>

namespace opscope::engine {
namespace {

// 0: the CPU's choice, 1: NHWC, 2: nChw8c.
std::atomic<int> forced_for_testing{0};

int FromEnvironment() {
  const char* v = std::getenv("OPSCOPE_REGION_LAYOUT");
  if (!v) return 0;
  if (std::strcmp(v, "nhwc") == 0) return 1;
  if (std::strcmp(v, "nchw8c") == 0) return 2;
  return 0;
}

bool CpuPrefersBlocked() {
  // x86 below AVX-512, in oneDNN's own view of the ISA (it honours ONEDNN_MAX_CPU_ISA, so a run
  // limited to AVX2 on an AVX-512 machine lays regions out as an AVX2 machine would). AVX-512
  // CPUs have NHWC-native brgemm convolutions; other architectures keep NHWC too.
  static const bool blocked = [] {
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    return isa == dnnl::cpu_isa::avx2 || isa == dnnl::cpu_isa::avx2_vnni ||
           isa == dnnl::cpu_isa::avx || isa == dnnl::cpu_isa::sse41;
  }();
  return blocked;
}

}  // namespace

RegionLayout RegionLayoutFor(int64_t channels) {
  static const int env = FromEnvironment();
  const int forced = forced_for_testing.load(std::memory_order_relaxed);
  const int choice = forced ? forced : env;
  const bool blocked = choice == 2 || (choice == 0 && CpuPrefersBlocked());
  return blocked && channels > 0 && channels % 8 == 0 ? RegionLayout::kNChw8c : RegionLayout::kNhwc;
}

const char* RegionLayoutName(RegionLayout layout) {
  return layout == RegionLayout::kNChw8c ? "nChw8c" : "NHWC";
}

void SetRegionLayoutForTesting(std::optional<RegionLayout> forced) {
  forced_for_testing.store(!forced                          ? 0
                           : *forced == RegionLayout::kNhwc ? 1
                                                            : 2,
                           std::memory_order_relaxed);
}

}  // namespace opscope::engine
