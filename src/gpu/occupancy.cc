#include "gpu/occupancy.h"

#include <algorithm>
#include <climits>
#include <cstdint>

namespace opscope::gpu {
namespace {

struct CcRow {
  int major, minor;
  int max_warps, max_blocks;
  int shared_kib;  // per SM, largest carveout
};

// From NVIDIA's per-architecture technical specifications (CUDA C++ Programming Guide,
// "Compute Capabilities") and the occupancy calculator's constants. Registers per SM are 64K
// on every row.
constexpr CcRow kTable[] = {
    {5, 0, 64, 32, 64},   {5, 2, 64, 32, 96},   {5, 3, 64, 32, 64},   {6, 0, 64, 32, 64},
    {6, 1, 64, 32, 96},   {6, 2, 64, 32, 64},   {7, 0, 64, 32, 96},   {7, 2, 64, 32, 96},
    {7, 5, 32, 16, 64},   {8, 0, 64, 32, 164},  {8, 6, 48, 16, 100},  {8, 7, 48, 16, 164},
    {8, 9, 48, 24, 100},  {9, 0, 64, 32, 228},  {10, 0, 64, 32, 228}, {10, 3, 64, 32, 228},
    {12, 0, 48, 24, 100}, {12, 1, 48, 24, 100},
};

int64_t RoundUp(int64_t v, int64_t unit) { return unit <= 0 ? v : (v + unit - 1) / unit * unit; }

}  // namespace

std::optional<SmLimits> LimitsForComputeCapability(int major, int minor) {
  for (const CcRow& row : kTable) {
    if (row.major != major || row.minor != minor) continue;
    SmLimits s;
    s.max_warps = row.max_warps;
    s.max_blocks = row.max_blocks;
    s.registers = 64 * 1024;
    s.shared_bytes = static_cast<int64_t>(row.shared_kib) * 1024;
    s.register_unit = 256;
    s.shared_unit = major >= 8 ? 128 : 256;
    s.reserved_shared_per_block = major >= 8 ? 1024 : 0;
    s.sub_partitions = (major == 6 && minor == 0) ? 2 : 4;
    return s;
  }
  return std::nullopt;
}

Occupancy TheoreticalOccupancy(const SmLimits& sm, int threads_per_block, int registers_per_thread,
                               int64_t shared_bytes_per_block) {
  Occupancy o;
  if (threads_per_block <= 0 || sm.max_warps <= 0 || sm.max_blocks <= 0 || sm.warp_size <= 0)
    return o;
  // In 64 bits: the block size and the warp size come from trace files (a warp size of 2^31 - 1
  // overflowed the int sum; found by gpu_decoder_fuzz).
  const int64_t warps_per_block =
      (static_cast<int64_t>(threads_per_block) + sm.warp_size - 1) / sm.warp_size;
  if (warps_per_block > sm.max_warps) return o;  // cannot launch at all

  int by_warps = static_cast<int>(sm.max_warps / warps_per_block);
  int by_blocks = sm.max_blocks;
  int by_registers = INT_MAX;
  if (registers_per_thread > 0 && sm.registers > 0) {
    // Registers are allocated per warp, rounded up, and a warp's registers must fit in one of
    // the SM's register-file partitions.
    int64_t per_warp =
        RoundUp(static_cast<int64_t>(registers_per_thread) * sm.warp_size, sm.register_unit);
    int64_t per_partition = sm.registers / std::max(1, sm.sub_partitions);
    int64_t warps = (per_partition / per_warp) * std::max(1, sm.sub_partitions);
    by_registers = static_cast<int>(warps / warps_per_block);
  }
  int by_shared = INT_MAX;
  int64_t shared =
      shared_bytes_per_block > 0 ? shared_bytes_per_block + sm.reserved_shared_per_block : 0;
  if (shared > 0 && sm.shared_bytes > 0) {
    shared = RoundUp(shared, sm.shared_unit);
    by_shared = static_cast<int>(sm.shared_bytes / shared);
  }
  // Ties go to the first limiter listed: the most fundamental explanation.
  struct {
    int blocks;
    OccupancyLimiter why;
  } limits[] = {{by_warps, kLimitWarps},
                {by_blocks, kLimitBlocks},
                {by_registers, kLimitRegisters},
                {by_shared, kLimitSharedMemory}};
  o.active_blocks = INT_MAX;
  for (const auto& l : limits)
    if (l.blocks < o.active_blocks) {
      o.active_blocks = l.blocks;
      o.limiter = l.why;
    }
  o.fraction = std::min(1.0, static_cast<double>(o.active_blocks) * warps_per_block / sm.max_warps);
  return o;
}

}  // namespace opscope::gpu
