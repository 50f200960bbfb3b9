#include "base/host.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/files.h"
#include "base/strings.h"

namespace opscope {

namespace {
std::string& SysrootStorage() {
  static std::string root;
  return root;
}
}  // namespace

void SetSysroot(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  SysrootStorage() = d == "/" ? "" : d;
}
const std::string& Sysroot() { return SysrootStorage(); }
std::string HostPath(const std::string& path) { return Sysroot() + path; }

static std::string CpuModelFromProc() {
  std::istringstream in(ReadSysFile(HostPath("/proc/cpuinfo")));
  std::string line;
  std::string fallback;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = Trim(line.substr(0, colon));
    std::string val = Trim(line.substr(colon + 1));
    if (key == "model name" || key == "Model") return val;
    if (key == "Hardware" || key == "CPU part") fallback = val;
  }
  return fallback;
}

static double MhzFromProc() {
  std::istringstream in(ReadSysFile(HostPath("/proc/cpuinfo")));
  std::string line;
  while (std::getline(in, line)) {
    if (StartsWith(line, "cpu MHz")) {
      double v;
      auto colon = line.find(':');
      if (colon != std::string::npos && ParseDouble(Trim(line.substr(colon + 1)), &v)) return v;
    }
  }
  return 0;
}

HostInfo ReadHostInfo() {
  HostInfo h;
  utsname u;
  if (uname(&u) == 0) {
    h.hostname = u.nodename;
    h.kernel = u.release;
    h.arch = u.machine;
  }
  h.cpu_model = CpuModelFromProc();
  h.logical_cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  const std::string cf = HostPath("/sys/devices/system/cpu/cpu0/cpufreq/");
  h.governor = ReadSysFile(cf + "scaling_governor");
  double khz;
  if (ParseDouble(ReadSysFile(cf + "scaling_cur_freq"), &khz))
    h.cpu_mhz = khz / 1000;
  else
    h.cpu_mhz = MhzFromProc();
  if (ParseDouble(ReadSysFile(cf + "cpuinfo_max_freq"), &khz)) h.max_mhz = khz / 1000;
  return h;
}

ThermalSample ReadThermalSample() {
  namespace fs = std::filesystem;
  ThermalSample s;
  std::error_code ec;
  double sum = 0;
  int n = 0;
  for (const auto& e : fs::directory_iterator(HostPath("/sys/devices/system/cpu"), ec)) {
    std::string name = e.path().filename().string();
    if (!StartsWith(name, "cpu") || name.size() < 4 ||
        !isdigit(static_cast<unsigned char>(name[3])))
      continue;
    double khz;
    if (ParseDouble(ReadSysFile(e.path().string() + "/cpufreq/scaling_cur_freq"), &khz)) {
      sum += khz / 1000;
      ++n;
    }
  }
  s.cpu_mhz_avg = n ? sum / n : MhzFromProc();
  for (const auto& e : fs::directory_iterator(HostPath("/sys/class/thermal"), ec)) {
    if (!StartsWith(e.path().filename().string(), "thermal_zone")) continue;
    double milli;
    if (ParseDouble(ReadSysFile(e.path().string() + "/temp"), &milli) &&
        milli / 1000 > s.max_temp_c)
      s.max_temp_c = milli / 1000;
  }
  return s;
}

}  // namespace opscope
