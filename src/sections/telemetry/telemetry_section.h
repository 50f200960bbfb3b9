// The telemetry section: the board's state next to every number (issue: on the boards where
// perception models run). Jetson power mode and jetson_clocks, devfreq clocks (GPU, EMC, DLA, NPU,
// DDR), CPU clusters' clocks, thermal zones, INA3221 power rails, RK3588 NPU load: what the board
// exposes, described once (`environment`) and sampled once per run as counter tracks. Made the
// typed way (docs/sections.md): board_probe.cc reads sysfs (through `--sysroot`), the tegrastats
// importer fills it from a log, telemetry_report.cc renders it, telemetry_rules.cc advises.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "profile/section_data.h"

namespace opscope::telemetry {

struct Channel {
  std::string name;    // "gpu clock", "thermal CPU-therm", "power VDD_GPU_SOC", "npu load core0"
  std::string kind;    // "clock", "load", "temperature", "power", "memory"
  std::string unit;    // "MHz", "%", "°C", "mW", "MB"
  std::string source;  // where it was read: a sysfs path, or "tegrastats EMC_FREQ"
  double max = 0;      // its ceiling when known (devfreq max_freq, a thermal trip), 0: unknown
  double min = 0;      // its floor when known (devfreq min_freq), 0: unknown
  std::vector<double> values;  // one per sample; NaN is not allowed (an unreadable sample
                               // repeats the previous value and is counted in `gaps`)
  int64_t gaps = 0;
};

// CPUs of one core type: a cluster of a big.LITTLE SoC ("Cortex-A55", cpus 0-3, capacity 414), or
// an x86 hybrid's P- or E-cores. `capacity` is the kernel's cpu_capacity (1024 for the biggest
// core), 0 when it does not say.
struct CoreCluster {
  std::string name;
  std::vector<int32_t> cpus;
  int64_t capacity = 0;
};

struct TelemetrySection final : profile::SectionData {
  static constexpr char kKey[] = "telemetry";

  std::string board;     // /proc/device-tree/model, "" when unknown
  std::string platform;  // "jetson", "rockchip", "" (generic Linux)
  std::string source;    // "sysfs" (read by opscope during the runs) or "tegrastats log"
  // Board settings that change every number, in words: "power mode" -> "MAXN (nvpmodel 0)",
  // "jetson_clocks" -> "off (GPU clock floor 306 MHz below its ceiling 1300 MHz)", ...
  std::map<std::string, std::string> environment;
  // Sample i was taken at sample_ns[i] (CLOCK_MONOTONIC; an import: ns from the log's start),
  // after measured run sample_runs[i] (warm-up runs are negative; an import: -1).
  std::vector<int64_t> sample_ns;
  std::vector<int32_t> sample_runs;
  std::vector<Channel> channels;
  // The machine's core types (empty where it does not say, as on most x86), and the CPUs the
  // process was pinned to (`--cpus`, "" when not).
  std::vector<CoreCluster> clusters;
  std::string pinned_cpus;
  // Where the threads ran: threads[k] names thread k ("12345 opscope"); thread_cpus[i][k] is the
  // CPU it last ran on at sample i (-1: not alive then). Recorded where the placement matters
  // (several core types, or pinned); empty otherwise.
  std::vector<std::string> threads;
  std::vector<std::vector<int32_t>> thread_cpus;

  std::unique_ptr<profile::SectionData> Clone() const override;
  void ToJson(nlohmann::json& j) const override;
  Status Validate(const profile::Profile& p) const override;

  const Channel* Find(const std::string& name) const;
  // The cluster CPU `cpu` belongs to, null when none lists it.
  const CoreCluster* ClusterOf(int32_t cpu) const;
  // True when the clusters differ in size of core (capacity, or failing that a little core's
  // name): where running on the wrong one changes the numbers.
  bool Heterogeneous() const;
  // Whether `c` is one of the smaller core types (false on a machine with one type).
  bool IsLittle(const CoreCluster& c) const;
};

// min, median and max of a channel's values (0s when it has none).
struct Range3 {
  double min = 0, median = 0, max = 0;
};
Range3 Summarize(const Channel& c);

}  // namespace opscope::telemetry
