// The GPU section: CUDA activity from the CUPTI tracer (kernels, copies, memsets, API calls).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace opscope::profile {

struct GpuKernel {
  std::string name;           // demangled
  int32_t device = 0, stream = 0;
  int64_t start_ns = 0, end_ns = 0;  // on the CPU clock (aligned)
  int32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  int32_t registers_per_thread = 0;
  int64_t static_shared_bytes = 0, dynamic_shared_bytes = 0;
  uint32_t correlation_id = 0;
  double occupancy = 0;       // theoretical, 0..1 (0 if unknown)
  int32_t range = -1;         // innermost enclosing NVTX range of the launching thread
};

struct GpuMemcpy {
  std::string kind;           // "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"
  int64_t bytes = 0;
  bool pageable = false;      // host side pageable (not pinned)
  int32_t device = 0, stream = 0;
  int64_t start_ns = 0, end_ns = 0;
  uint32_t correlation_id = 0;
  int32_t range = -1;
};

struct GpuMemset {
  int64_t bytes = 0;
  int32_t device = 0, stream = 0;
  int64_t start_ns = 0, end_ns = 0;
  uint32_t correlation_id = 0;
};

struct GpuApiCall {
  std::string name;           // "cudaLaunchKernel", "cuMemcpyHtoD_v2", ...
  std::string api;            // "runtime" or "driver"
  int32_t tid = 0;
  int64_t start_ns = 0, end_ns = 0;
  uint32_t correlation_id = 0;
};

struct GpuSection {
  std::string device_name;
  std::vector<GpuKernel> kernels;
  std::vector<GpuMemcpy> memcpys;
  std::vector<GpuMemset> memsets;
  std::vector<GpuApiCall> api_calls;
  uint64_t dropped_records = 0;
};

}  // namespace opscope::profile
