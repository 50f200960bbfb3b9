// The GPU section: CUDA activity from the CUPTI tracer (kernels, copies, memsets, API calls).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace opscope::profile {

struct GpuKernel {
  std::string name;  // demangled
  int32_t device = 0, stream = 0;
  int64_t start_ns = 0, end_ns = 0;  // on the CPU clock (aligned)
  int32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  int32_t registers_per_thread = 0;
  int64_t static_shared_bytes = 0, dynamic_shared_bytes = 0;
  uint32_t correlation_id = 0;
  double occupancy = 0;           // theoretical, 0..1 (0 if unknown)
  int32_t range = -1;             // innermost enclosing NVTX range of the launching thread
  int32_t tid = 0;                // thread that launched it (0 if the launch API call is unknown)
  int32_t occupancy_limiter = 0;  // what bounds `occupancy`: see OccupancyLimiter below
  // Measured with `opscope gpu --metrics` (CUPTI range profiler, kernel replay); -1 = not measured.
  double sm_throughput_pct = -1;       // SM throughput, % of peak sustained
  double memory_throughput_pct = -1;   // memory throughput (busiest of DRAM, L2, L1), % of peak
  double dram_throughput_pct = -1;     // DRAM throughput, % of peak
  double achieved_occupancy_pct = -1;  // active warps, % of the SM's maximum
  double metrics_duration_ns = -1;     // the kernel's time under replay (gpu__time_duration)
  // "compute", "memory" or "latency" from the two throughputs (profile/gpu_kernel_bound.h);
  // "" = no metrics.
  std::string bound;
};

struct GpuMemcpy {
  std::string kind;  // "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"
  int64_t bytes = 0;
  bool pageable = false;  // host side pageable (not pinned)
  int32_t device = 0, stream = 0;
  int64_t start_ns = 0, end_ns = 0;
  uint32_t correlation_id = 0;
  int32_t range = -1;
  int32_t tid = 0;     // thread that issued it (0 if unknown)
  bool async = false;  // issued by a *Async call
  // Fingerprint of the host bytes of an HtoD copy (16 hex digits), "" when not taken; a
  // "sampled" one covers evenly spaced blocks of a large copy, not every byte.
  std::string content_hash;
  bool content_sampled = false;
};

struct GpuMemset {
  int64_t bytes = 0;
  int32_t device = 0, stream = 0;
  int64_t start_ns = 0, end_ns = 0;
  uint32_t correlation_id = 0;
};

struct GpuApiCall {
  std::string name;  // "cudaLaunchKernel", "cuMemcpyHtoD_v2", ...
  std::string api;   // "runtime" or "driver"
  int32_t tid = 0;
  int64_t start_ns = 0, end_ns = 0;
  uint32_t correlation_id = 0;
};

// Host time spent waiting for the GPU (cudaStreamSynchronize, cudaEventSynchronize, ...).
struct GpuSync {
  std::string type;  // "stream", "event", "context", "stream_wait_event", "unknown"
  int32_t tid = 0;   // waiting thread (0 if unknown)
  int32_t stream = 0;
  int64_t start_ns = 0, end_ns = 0;
  uint32_t correlation_id = 0;
};

// What the occupancy calculation used; per-SM limits come from the device when CUPTI reports
// them, else from opscope's compute-capability table (gpu/occupancy.cc).
struct GpuDevice {
  int32_t id = 0;
  std::string name;
  int32_t cc_major = 0, cc_minor = 0;
  int32_t sm_count = 0;
  int32_t max_warps_per_sm = 0, max_blocks_per_sm = 0, max_registers_per_sm = 0;
  int64_t max_shared_per_sm = 0;
  double memory_bandwidth_gbps = 0;  // as the driver reports it, 0 if unknown
  int64_t memory_bytes = 0;
};

struct GpuSection {
  std::string device_name;
  std::vector<GpuKernel> kernels;
  std::vector<GpuMemcpy> memcpys;
  std::vector<GpuMemset> memsets;
  std::vector<GpuApiCall> api_calls;
  uint64_t dropped_records = 0;
  std::vector<GpuSync> syncs;
  std::vector<GpuDevice> devices;
  // False when a trace ended without its end record (the program was killed or crashed where
  // no handler could run): what is here is valid, what came after is missing.
  bool complete = true;
  int32_t end_signal = 0;  // the fatal signal the tracer saw, 0 for a normal exit
  // Replay passes per kernel of `--metrics` (each kernel ran this many times); 0 = no metrics.
  int32_t metrics_passes = 0;
};

// What bounds a kernel's theoretical occupancy (computed by gpu/occupancy.h).
enum OccupancyLimiter : int32_t {
  kLimitUnknown = 0,
  kLimitWarps = 1,   // block size: warps per SM
  kLimitBlocks = 2,  // resident blocks per SM
  kLimitRegisters = 3,
  kLimitSharedMemory = 4,
};
inline const char* LimiterName(int32_t limiter) {
  switch (limiter) {
    case kLimitWarps:
      return "warps";
    case kLimitBlocks:
      return "blocks";
    case kLimitRegisters:
      return "registers";
    case kLimitSharedMemory:
      return "shared memory";
    default:
      return "unknown";
  }
}

}  // namespace opscope::profile
