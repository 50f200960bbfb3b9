// Finds what the board exposes and reads it (collect layer). Everything is read through
// base/host.h HostPath, so `--sysroot DIR` points it at a copy of a board's /sys, /proc and /etc.
//
// Sources, as the kernels of JetPack 5/6 and Rockchip's 5.10/6.1 BSPs lay them out:
// - /proc/device-tree/model: the board's name; Jetson when it (or /etc/nv_tegra_release) says so,
//   Rockchip when it names a Rockchip SoC or the rknpu driver is there;
// - cpufreq policies (/sys/devices/system/cpu/cpufreq/policyN: scaling_cur_freq, cpuinfo_max_freq,
//   related_cpus): one clock per CPU cluster;
// - devfreq devices (/sys/class/devfreq/*: cur_freq, min_freq, max_freq, governor, Hz): the GPU
//   (ga10b, gv11b, gp10b, mali, *gpu*), the NPU, DDR (dmc) and whatever else is there;
// - Jetson's BPMP clocks in debugfs (/sys/kernel/debug/bpmp/debug/clk/{emc,dla0_core,dla1_core}:
//   rate, max_rate; root only);
// - thermal zones (/sys/class/thermal/thermal_zoneN: type, temp in m°C, the first passive trip
//   as the ceiling);
// - INA3221 power rails: hwmon (/sys/class/hwmon/hwmonN with name "ina3221": inK_label,
//   inK_input mV, currK_input mA) and the older iio layout (/sys/bus/i2c/drivers/ina3221x/*/
//   iio:device*: rail_name_K, in_power K_input mW);
// - RK3588 NPU load (/sys/kernel/debug/rknpu/load or /proc/rknpu/load: "NPU load:  Core0: 12%,
//   Core1:  0%, ..."), the rknpu driver version;
// - Jetson power mode (/var/lib/nvpmodel/status "pmode:0000", named by /etc/nvpmodel.conf
//   "< POWER_MODEL ID=0 NAME=MAXN >") and jetson_clocks (the GPU's devfreq floor at its ceiling).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "profile/profile.h"
#include "sections/telemetry/telemetry_section.h"

namespace opscope::telemetry {

class BoardProbe {
 public:
  // Looks once; cheap to keep and to Sample many times.
  static BoardProbe Discover();
  bool empty() const { return reads_.empty() && environment_.empty() && pinned_.empty(); }

  // A section with the board, the environment and the channels, no samples yet.
  TelemetrySection Describe() const;
  // Appends one sample of every channel (taken after measured run `run`, at `ns`).
  void Sample(TelemetrySection* t, int32_t run, int64_t ns) const;

 private:
  struct Read {
    Channel meta;                    // name, kind, unit, source, max, min
    std::vector<std::string> files;  // read and combined by `combine`
    int how = 0;                     // see board_probe.cc
  };
  std::string board_, platform_;
  std::map<std::string, std::string> environment_;
  std::vector<Read> reads_;
  std::vector<CoreCluster> clusters_;
  std::string pinned_;
  friend struct ProbeAccess;
};

// The core types of this machine's CPUs: from midr_el1 (sysfs) or /proc/cpuinfo's "CPU
// implementer" and "CPU part" on arm64, with cpu_capacity when the kernel has it; from the
// cpu_core/cpu_atom PMUs on x86 hybrids. Empty where the machine says neither (most x86).
std::vector<CoreCluster> ReadCoreClusters();
// "4x Cortex-A55 (cpus 0-3, capacity 414), 4x Cortex-A76 (cpus 4-7, capacity 1024)": the clusters,
// or only their CPUs among `only` when it is not empty.
std::string DescribeCores(const std::vector<CoreCluster>& clusters,
                          const std::vector<int>& only = {});
// Each thread of this process ("TID comm" into `names`) and the CPU it last ran on
// (/proc/self/task/TID/stat, field 39).
std::vector<int32_t> ThreadCpus(std::vector<std::string>* names);

// Thread placement matters, and is recorded, when the machine mixes core types or the process is
// pinned to some of its CPUs.
bool TracksPlacement(const TelemetrySection& t);
// After Sample: appends the CPU each of this process's threads last ran on (the engine's threads:
// only for work done in this process, i.e. `profile`).
void SamplePlacement(TelemetrySection* t);

// Adds the board's description (no samples) to `p` when there is anything to describe and the
// profile has no telemetry yet: what every command records.
void DescribeInto(profile::Profile* p);

}  // namespace opscope::telemetry
