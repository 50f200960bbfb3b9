// Published peak compute and memory bandwidth of common deployment targets, for a roofline of
// an imported profile without a probe of the board (`import --device NAME`). Every number and
// its source is in docs/importers.md ("Device table"); they are data-sheet peaks, not measured
// ceilings, and the profile says so (machine.method "device table").
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace opscope::importers {

struct DevicePeak {
  const char* name;    // "orin-agx"
  const char* title;   // "NVIDIA Jetson AGX Orin 64GB (GPU)"
  double peak_gflops;  // float32, GFLOP/s
  double peak_gbps;    // DRAM, GB/s
  const char* source;  // the document the numbers come from
};

const std::vector<DevicePeak>& DeviceTable();
const DevicePeak* FindDevice(std::string_view name);
std::string DeviceNames();  // "orin-agx, orin-nx, ..."

}  // namespace opscope::importers
