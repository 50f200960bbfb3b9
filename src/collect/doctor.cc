#include "collect/doctor.h"

#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <fmt/format.h>
#include <linux/perf_event.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "base/files.h"
#include "base/host.h"
#include "base/strings.h"
#include "collect/perf_event.h"
#include "sections/telemetry/board_probe.h"

namespace opscope::collect {
namespace {

using Level = DoctorCheck::Level;

DoctorCheck Make(std::string area, Level level, std::string finding, std::string meaning) {
  return DoctorCheck{std::move(area), level, std::move(finding), std::move(meaning)};
}

}  // namespace

const char* LevelName(Level level) {
  switch (level) {
    case Level::kOk:
      return "ok";
    case Level::kNote:
      return "note";
    case Level::kWarn:
      return "warn";
    case Level::kBad:
      return "bad";
  }
  return "?";
}

DoctorCheck CheckPerfPermissions(const PerfAccess& a) {
  const std::string finding = DescribeParanoid(a);
  if (a.PerfPrivileged() || a.paranoid <= 0)
    return Make("perf permissions", Level::kOk, finding,
                "stat, record and per-operator counters see user and kernel space; -a/-C work");
  if (a.paranoid >= 3)
    return Make("perf permissions", Level::kBad, finding,
                "stat, record and `profile --counters` cannot run: `sudo sysctl "
                "kernel.perf_event_paranoid=1`, or give opscope CAP_PERFMON");
  if (a.paranoid == 2)
    return Make("perf permissions", Level::kWarn, finding,
                "counts and samples are user space only (kernel time in syscalls and page faults "
                "is missing); `sudo sysctl kernel.perf_event_paranoid=1` to include it, 0 for -a");
  return Make("perf permissions", Level::kNote, finding,
              "own processes fully measured; system-wide (-a/-C) needs "
              "kernel.perf_event_paranoid=0 or CAP_PERFMON");
}

DoctorCheck CheckKernelSymbols(const PerfAccess& a) {
  const bool hidden = a.kptr_restrict >= 2 || (a.kptr_restrict == 1 && !a.root);
  return Make("kernel symbols", hidden ? Level::kNote : Level::kOk, DescribeKptrRestrict(a),
              hidden ? "no effect on opscope's user-space profiles; `perf` kernel frames would be "
                       "unnamed (`sudo sysctl kernel.kptr_restrict=0`)"
                     : "kernel frames could be named");
}

DoctorCheck CheckAttach(const PerfAccess& a) {
  return Make("attach (-p)", Level::kOk, DescribePtraceScope(a),
              a.root || a.cap_sys_ptrace
                  ? "any process can be attached to"
                  : "your own processes can be attached to; another user's needs CAP_SYS_PTRACE");
}

DoctorCheck CheckPmu(int r) {
  if (r >= 0)
    return Make("PMU", Level::kOk, "hardware counters open (cycles)",
                "cycles, instructions, IPC, cache and branch misses are measured");
  const int err = -r;
  if (err == EACCES || err == EPERM)
    return Make("PMU", Level::kWarn,
                "hardware counters refused (" + std::string(strerror(err)) + ")",
                "could not tell whether a PMU exists: fix the perf permissions first");
  if (err == ENOSYS)
    return Make("PMU", Level::kBad, "no perf_event_open (ENOSYS)", NoPerfEventsText());
  return Make("PMU", Level::kWarn,
              "no hardware counters (perf_event_open cycles: " + std::string(strerror(err)) + ")",
              "a VM or container without a virtual PMU: cycles become cpu-clock, and IPC, cache "
              "and branch misses are not measured (recorded as degradations in every profile); "
              "enable the virtual PMU (e.g. KVM `-cpu host`, vPMU in VMware) or use bare metal");
}

DoctorCheck CheckGovernor(const std::vector<std::string>& governors) {
  if (governors.empty())
    return Make("CPU governor", Level::kNote, "no cpufreq (typical of VMs)",
                "the host controls the clock; run-to-run spread may be larger than on bare metal");
  std::map<std::string, int> count;
  for (const auto& g : governors) ++count[g];
  std::vector<std::string> parts;
  for (const auto& [g, n] : count) parts.push_back(fmt::format("{} ({} CPUs)", g, n));
  const std::string finding = Join(parts, ", ");
  if (count.size() == 1 && count.count("performance"))
    return Make("CPU governor", Level::kOk, finding, "clocks stay high: stable timings");
  return Make("CPU governor", Level::kWarn, finding,
              "the clock follows load, so short runs measure the ramp-up and timings vary; "
              "`sudo cpupower frequency-set -g performance` while measuring (opscope also "
              "samples clocks per run and flags throttling)");
}

DoctorCheck CheckTurbo(const std::string& no_turbo, const std::string& boost) {
  const std::string nt = Trim(no_turbo), b = Trim(boost);
  if (nt.empty() && b.empty())
    return Make("turbo/boost", Level::kNote, "no turbo control exposed",
                "cannot tell; on a VM the host decides");
  const bool on = (!nt.empty() && nt == "0") || (nt.empty() && b == "1");
  const std::string finding = !nt.empty() ? "intel_pstate/no_turbo=" + nt : "cpufreq/boost=" + b;
  if (on)
    return Make("turbo/boost", Level::kWarn, finding + " (turbo on)",
                "the clock depends on temperature and how many cores are busy: A/B comparisons "
                "drift; disable it for benchmarks (`echo 1 | sudo tee "
                "/sys/devices/system/cpu/intel_pstate/no_turbo`, or 0 > cpufreq/boost)");
  return Make("turbo/boost", Level::kOk, finding + " (turbo off)",
              "a fixed top clock: comparable runs");
}

DoctorCheck CheckThp(const std::string& enabled) {
  const auto open = enabled.find('['), close = enabled.find(']');
  if (open == std::string::npos || close == std::string::npos)
    return Make("transparent huge pages", Level::kNote, "not exposed", "cannot tell");
  const std::string mode = enabled.substr(open + 1, close - open - 1);
  const std::string finding = "THP " + mode;
  if (mode == "always")
    return Make("transparent huge pages", Level::kNote, finding,
                "large tensors may or may not get huge pages run to run (khugepaged): dTLB misses "
                "and first-run times vary; `madvise` makes it deterministic");
  return Make("transparent huge pages", Level::kOk, finding,
              mode == "never" ? "no huge pages: TLB misses higher but stable"
                              : "huge pages only where asked for: stable");
}

DoctorCheck CheckNuma(int nodes) {
  if (nodes <= 1)
    return Make("NUMA", Level::kOk, nodes == 1 ? "1 node" : "no NUMA information",
                "memory bandwidth is the same from every core");
  return Make("NUMA", Level::kWarn, fmt::format("{} nodes", nodes),
              "bandwidth and latency depend on where memory and threads land: pin with "
              "`numactl --cpunodebind=0 --membind=0 opscope ...` for comparable runs");
}

DoctorCheck CheckSmt(const std::string& active, const std::string& siblings) {
  const std::string a = Trim(active), s = Trim(siblings);
  const bool smt =
      a == "1" ||
      (a.empty() && (s.find(',') != std::string::npos || s.find('-') != std::string::npos));
  const std::string finding =
      !a.empty() ? "smt/active=" + a : "cpu0 siblings: " + (s.empty() ? "?" : s);
  if (smt)
    return Make(
        "SMT", Level::kNote, finding + " (SMT on)",
        "two hardware threads share a core's units and caches: a busy sibling slows the "
        "measured thread; pin the target to one thread per core (taskset) for stable counts");
  return Make("SMT", Level::kOk, finding + " (SMT off)", "one thread per core");
}

CudaProbe ProbeCuda() {
  CudaProbe p;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = dlerror();
    p.load_error = e ? e : "libcuda.so.1 not found";
    return p;
  }
  p.loadable = true;
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  using VersionFn = int (*)(int*);
  using GetFn = int (*)(int*, int);
  using NameFn = int (*)(char*, int, int);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  auto version = reinterpret_cast<VersionFn>(dlsym(lib, "cuDriverGetVersion"));
  auto get = reinterpret_cast<GetFn>(dlsym(lib, "cuDeviceGet"));
  auto name = reinterpret_cast<NameFn>(dlsym(lib, "cuDeviceGetName"));
  if (init) p.init_result = init(0);
  if (version) version(&p.driver_version);
  int n = 0;
  if (p.init_result == 0 && count && count(&n) == 0)
    for (int i = 0; i < n; ++i) {
      int dev = 0;
      char buf[256] = {0};
      if (get && name && get(&dev, i) == 0 && name(buf, sizeof buf - 1, dev) == 0)
        p.devices.push_back(buf);
      else
        p.devices.push_back("device " + std::to_string(i));
    }
  // libcuda stays loaded: unloading a driver library that started threads is not safe.
  return p;
}

DoctorCheck CheckBoard() {
  const telemetry::TelemetrySection t = telemetry::BoardProbe::Discover().Describe();
  if (t.channels.empty() && t.environment.empty())
    return Make("board", Level::kNote,
                "no board telemetry: no cpufreq policies, devfreq clocks, thermal zones, power "
                "rails or NPU load readable" +
                    (Sysroot().empty() ? std::string() : " under " + Sysroot()),
                "profiles carry no clocks or temperatures of the board; on a Jetson or RK3588, "
                "run as root for the debugfs clocks and NPU load");
  std::vector<std::string> kinds;
  std::map<std::string, int> count;
  for (const auto& c : t.channels) ++count[c.kind];
  for (const auto& [k, n] : count) kinds.push_back(std::to_string(n) + " " + k);
  std::string finding = (t.board.empty() ? std::string("this machine") : t.board) +
                        (t.platform.empty() ? "" : " (" + t.platform + ")") + ": " +
                        Join(kinds, ", ") + " channel(s)";
  Level level = Level::kOk;
  std::string meaning = "sampled once per measured run into every profile (the telemetry section)";
  auto env = [&](const char* k) {
    auto it = t.environment.find(k);
    return it == t.environment.end() ? std::string() : it->second;
  };
  if (!env("cores").empty()) finding += "; cores " + env("cores");
  if (!env("cpu PMUs").empty()) finding += "; PMUs " + env("cpu PMUs");
  if (!env("power mode").empty()) finding += "; power mode " + env("power mode");
  if (!env("jetson_clocks").empty()) finding += "; jetson_clocks " + env("jetson_clocks");
  if ((!env("power mode").empty() && env("power mode").find("MAXN") == std::string::npos) ||
      StartsWith(env("jetson_clocks"), "off")) {
    level = Level::kWarn;
    meaning =
        "times depend on the power mode and move with dynamic clocks: for comparable "
        "numbers use `sudo nvpmodel -m 0` and `sudo jetson_clocks`, or state the mode "
        "beside every figure";
  }
  return Make("board", level, finding, meaning);
}

DoctorCheck CheckCuda(const CudaProbe& p) {
  if (!p.loadable)
    return Make("CUDA driver", Level::kNote, "no NVIDIA driver (libcuda.so.1 not loadable)",
                "`opscope gpu` cannot trace here; CPU measurements are unaffected");
  const std::string version =
      p.driver_version > 0
          ? fmt::format("driver API {}.{}", p.driver_version / 1000, p.driver_version % 1000 / 10)
          : "driver version unknown";
  if (p.init_result != 0)
    return Make(
        "CUDA driver", Level::kWarn,
        fmt::format("libcuda.so.1 loads ({}) but cuInit failed (error {})", version, p.init_result),
        "no usable GPU (no device, or the kernel module is not loaded): `nvidia-smi` "
        "says why");
  if (p.devices.empty())
    return Make("CUDA driver", Level::kWarn, version + ", no devices",
                "`opscope gpu` has nothing to trace");
  return Make("CUDA driver", Level::kOk,
              fmt::format("{}, {} device(s): {}", version, p.devices.size(), Join(p.devices, ", ")),
              "`opscope gpu` can trace CUDA programs");
}

std::string LibdwVersion() {
  const char* v = dwfl_version(nullptr);
  return v ? v : "unknown";
}

std::vector<DoctorCheck> RunDoctorChecks() {
  std::vector<DoctorCheck> out;
  const PerfAccess access = ReadPerfAccess();
  out.push_back(CheckPerfPermissions(access));
  out.push_back(CheckPmu(ProbePerfEvent(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES)));
  out.push_back(CheckKernelSymbols(access));
  out.push_back(CheckAttach(access));
  std::vector<std::string> governors;
  for (const auto& cpu : ListDirectory(HostPath("/sys/devices/system/cpu"), "cpu")) {
    const std::string g =
        Trim(ReadSysFile(HostPath("/sys/devices/system/cpu/") + cpu + "/cpufreq/scaling_governor"));
    if (!g.empty()) governors.push_back(g);
  }
  out.push_back(CheckGovernor(governors));
  out.push_back(CheckTurbo(ReadSysFile(HostPath("/sys/devices/system/cpu/intel_pstate/no_turbo")),
                           ReadSysFile(HostPath("/sys/devices/system/cpu/cpufreq/boost"))));
  out.push_back(CheckThp(ReadSysFile(HostPath("/sys/kernel/mm/transparent_hugepage/enabled"))));
  int nodes = 0;
  for (const auto& n : ListDirectory(HostPath("/sys/devices/system/node"), "node"))
    if (n.size() > 4 && std::isdigit(static_cast<unsigned char>(n[4])) &&
        !Trim(ReadSysFile(HostPath("/sys/devices/system/node/") + n + "/cpulist")).empty())
      ++nodes;
  out.push_back(CheckNuma(nodes));
  out.push_back(CheckSmt(
      ReadSysFile(HostPath("/sys/devices/system/cpu/smt/active")),
      ReadSysFile(HostPath("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list"))));
  out.push_back(CheckCuda(ProbeCuda()));
  out.push_back(CheckBoard());
  return out;
}

}  // namespace opscope::collect
