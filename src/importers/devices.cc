#include "importers/devices.h"

#include "base/strings.h"

namespace opscope::importers {

// FP32 peaks of the GPUs are CUDA cores x 2 (FMA) x the maximum GPU clock of the data sheet;
// the CPUs' are cores x FP32 FLOP/cycle (Arm's optimization guides: Cortex-A76 two 128-bit FMA
// pipes = 16, Cortex-A55 one 128-bit FMA = 8) x the maximum clock. docs/importers.md has the
// arithmetic.
const std::vector<DevicePeak>& DeviceTable() {
  static const std::vector<DevicePeak> table = {
      {"orin-agx", "NVIDIA Jetson AGX Orin 64GB (GPU, 2048 CUDA cores @ 1.3 GHz)", 5325, 204.8,
       "NVIDIA Jetson AGX Orin Series data sheet (DS-10662-001): 2048 cores, 1.3 GHz, "
       "256-bit LPDDR5 204.8 GB/s"},
      {"orin-nx", "NVIDIA Jetson Orin NX 16GB (GPU, 1024 CUDA cores @ 918 MHz)", 1880, 102.4,
       "NVIDIA Jetson Orin NX Series data sheet (DS-10712-001): 1024 cores, 918 MHz, "
       "128-bit LPDDR5 102.4 GB/s"},
      {"orin-nano", "NVIDIA Jetson Orin Nano 8GB (GPU, 1024 CUDA cores @ 625 MHz)", 1280, 68,
       "NVIDIA Jetson Orin Nano Series data sheet (DS-11105-001): 1024 cores, 625 MHz, "
       "128-bit LPDDR5 68 GB/s"},
      {"xavier-agx", "NVIDIA Jetson AGX Xavier (GPU, 512 CUDA cores @ 1377 MHz)", 1410, 136.5,
       "NVIDIA Jetson AGX Xavier Series data sheet (DS-09654-001): 512 cores, 1377 MHz, "
       "256-bit LPDDR4x 136.5 GB/s"},
      {"xavier-nx", "NVIDIA Jetson Xavier NX (GPU, 384 CUDA cores @ 1100 MHz)", 845, 59.7,
       "NVIDIA Jetson Xavier NX Series data sheet (DS-09693-001): 384 cores, 1100 MHz, "
       "128-bit LPDDR4x 59.7 GB/s"},
      {"rk3588", "Rockchip RK3588 (CPU, 4x Cortex-A76 @ 2.4 GHz + 4x Cortex-A55 @ 1.8 GHz)", 211.2,
       34.1,
       "Rockchip RK3588 data sheet: 4x A76 2.4 GHz, 4x A55 1.8 GHz, 64-bit LPDDR4x/LPDDR5 "
       "up to 4266 MT/s; FLOP/cycle from the Cortex-A76/A55 software optimization guides"},
      {"rpi5", "Raspberry Pi 5 (BCM2712 CPU, 4x Cortex-A76 @ 2.4 GHz)", 153.6, 17.1,
       "Raspberry Pi 5 product brief: BCM2712 4x A76 2.4 GHz, 32-bit LPDDR4X-4267; FLOP/cycle "
       "from the Cortex-A76 software optimization guide"},
  };
  return table;
}

const DevicePeak* FindDevice(std::string_view name) {
  for (const auto& d : DeviceTable())
    if (name == d.name) return &d;
  return nullptr;
}

std::string DeviceNames() {
  std::vector<std::string> n;
  for (const auto& d : DeviceTable()) n.push_back(d.name);
  return Join(n, ", ");
}

}  // namespace opscope::importers
