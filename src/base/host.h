// What the machine is and what state it is in: CPU model, core count, frequency governor and
// current frequency, thermal zones. Read from /proc and /sys; every field is optional because
// boards expose different subsets (Jetson, RK3588 and VMs all differ).
#pragma once

#include <string>
#include <vector>

namespace opscope {

// The root that /proc, /sys and /etc describing this machine are read from: "" (the machine
// itself), or the folder of `--sysroot DIR` (a copy of a board's files, for tests and for looking
// at a board's state from elsewhere). Only what describes the machine goes through it (host
// facts, doctor, machine, board telemetry); live processes (/proc/PID) are always this machine's.
void SetSysroot(const std::string& dir);
const std::string& Sysroot();
// Sysroot() + path (path absolute, "/sys/...").
std::string HostPath(const std::string& path);

// The name of an Arm core from MIDR_EL1's implementer and part number ("Cortex-A76" for 0x41,
// 0xd0b; NVIDIA's "Carmel"), or "implementer 0x.. part 0x..." when not known.
std::string ArmCoreName(unsigned implementer, unsigned part);

struct HostInfo {
  std::string hostname;
  std::string kernel;  // uname -r
  std::string arch;    // uname -m
  // "AMD EPYC 7B13"; on arm64, the cores by name: "Cortex-A78AE", "4x Cortex-A55 + 4x Cortex-A76"
  std::string cpu_model;
  int logical_cpus = 0;  // online CPUs
  std::string governor;  // cpufreq governor of cpu0, empty if no cpufreq
  double cpu_mhz = 0;    // current frequency of cpu0 (cpufreq, else /proc/cpuinfo), 0 if unknown
  double max_mhz = 0;    // cpuinfo_max_freq of cpu0, 0 if unknown
};

HostInfo ReadHostInfo();

// One reading of the clocks and temperatures that show throttling.
struct ThermalSample {
  double cpu_mhz_avg = 0;  // mean current frequency over online CPUs (0: unknown)
  double max_temp_c = 0;   // hottest thermal zone (0: none readable)
};
ThermalSample ReadThermalSample();

}  // namespace opscope
