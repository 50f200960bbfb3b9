// `opscope doctor`: is this machine fit for measuring, and what will opscope be allowed to do?
//
// Each check reads one thing from /proc, /sys or the driver and says, in words, what it means for
// measurement quality and how to fix it. The interpreters are pure functions of what was read
// (tested on synthetic values); RunDoctorChecks reads the machine and calls them.
#pragma once

#include <string>
#include <vector>

#include "collect/perf_access.h"

namespace opscope::collect {

struct DoctorCheck {
  enum class Level { kOk, kNote, kWarn, kBad };
  std::string area;  // "perf permissions", "PMU", "CPU governor", ...
  Level level = Level::kOk;
  std::string finding;  // what is the case here
  std::string meaning;  // what it means for measurements, and what to do
};
const char* LevelName(DoctorCheck::Level level);  // "ok", "note", "warn", "bad"

DoctorCheck CheckPerfPermissions(const PerfAccess& access);
DoctorCheck CheckKernelSymbols(const PerfAccess& access);
DoctorCheck CheckAttach(const PerfAccess& access);
// `cycles_result`: what perf_event_open returned for a hardware cycles counter on this thread
// (an fd, or -errno).
DoctorCheck CheckPmu(int cycles_result);
// The scaling_governor of every CPU that has one (empty: no cpufreq, typical of VMs).
DoctorCheck CheckGovernor(const std::vector<std::string>& governors);
// intel_pstate/no_turbo ("" when absent) and cpufreq/boost ("" when absent).
DoctorCheck CheckTurbo(const std::string& intel_no_turbo, const std::string& cpufreq_boost);
// /sys/kernel/mm/transparent_hugepage/enabled, e.g. "always [madvise] never".
DoctorCheck CheckThp(const std::string& enabled);
// NUMA nodes with CPUs.
DoctorCheck CheckNuma(int nodes);
// /sys/devices/system/cpu/smt/active ("1"/"0", "" when absent) and the siblings of cpu0.
DoctorCheck CheckSmt(const std::string& active, const std::string& cpu0_siblings);
// The CUDA driver: `loadable` libcuda.so.1; `init_result` of cuInit(0); devices and names;
// driver version as CUDA encodes it (12040 = 12.4).
struct CudaProbe {
  bool loadable = false;
  std::string load_error;
  int init_result = -1;
  int driver_version = 0;
  std::vector<std::string> devices;
};
CudaProbe ProbeCuda();
DoctorCheck CheckCuda(const CudaProbe& probe);
// The board: its name, power mode and jetson_clocks (Jetson), clocks, temperatures, power rails
// and NPU load found (sections/telemetry/board_probe.h); a note when nothing is exposed.
DoctorCheck CheckBoard();

// libdw's version as loaded (dwfl_version), for `opscope --version`.
std::string LibdwVersion();

// Every check, in the order `opscope doctor` prints them.
std::vector<DoctorCheck> RunDoctorChecks();

}  // namespace opscope::collect
