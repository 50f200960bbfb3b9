// Theoretical occupancy of a kernel launch: the fraction of an SM's warp slots its blocks can
// fill, given the block size, registers per thread and shared memory per block — what the CUDA
// occupancy calculator computes, from the launch configuration CUPTI records.
//
// Per-SM limits come from the device record when CUPTI gives one (the real device), else from
// the compute-capability table in occupancy.cc (documented in docs/gpu.md). Allocation
// granularities and the per-block shared memory the driver reserves are per architecture and
// always come from the table. This is the *theoretical* upper bound: achieved occupancy (tail
// effects, uneven blocks) needs hardware counters and is not measured here.
#pragma once

#include <cstdint>
#include <optional>

#include "profile/gpu.h"

namespace opscope::gpu {

struct SmLimits {
  int max_warps = 0;                      // resident warps per SM
  int max_blocks = 0;                     // resident blocks per SM
  int registers = 0;                      // 32-bit registers per SM
  int64_t shared_bytes = 0;               // shared memory per SM at the largest carveout
  int register_unit = 256;                // registers are allocated per warp in units of this many
  int shared_unit = 128;                  // shared memory allocation granularity, bytes
  int64_t reserved_shared_per_block = 0;  // the driver's own shared memory per block (sm_80+)
  int sub_partitions = 4;                 // register file partitions (warp schedulers) per SM
  int warp_size = 32;
};

// Table limits for a compute capability; nullopt for an architecture opscope does not know.
std::optional<SmLimits> LimitsForComputeCapability(int major, int minor);

// The limiter values are part of the profile (GpuKernel::occupancy_limiter): profile/gpu.h.
using profile::kLimitBlocks;
using profile::kLimitRegisters;
using profile::kLimitSharedMemory;
using profile::kLimitUnknown;
using profile::kLimitWarps;
using profile::LimiterName;
using profile::OccupancyLimiter;

struct Occupancy {
  double fraction = 0;    // active warps / max warps, 0..1; 0 when it cannot be computed
  int active_blocks = 0;  // per SM
  OccupancyLimiter limiter = kLimitUnknown;
};

Occupancy TheoreticalOccupancy(const SmLimits& sm, int threads_per_block, int registers_per_thread,
                               int64_t shared_bytes_per_block);

}  // namespace opscope::gpu
