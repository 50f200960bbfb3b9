#include "base/host.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

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

std::string ArmCoreName(unsigned implementer, unsigned part) {
  if (implementer == 0x41) {
    static const std::map<unsigned, const char*> kArm = {
        {0xd03, "Cortex-A53"},   {0xd04, "Cortex-A35"},  {0xd05, "Cortex-A55"},
        {0xd07, "Cortex-A57"},   {0xd08, "Cortex-A72"},  {0xd09, "Cortex-A73"},
        {0xd0a, "Cortex-A75"},   {0xd0b, "Cortex-A76"},  {0xd0c, "Neoverse-N1"},
        {0xd0d, "Cortex-A77"},   {0xd40, "Neoverse-V1"}, {0xd41, "Cortex-A78"},
        {0xd42, "Cortex-A78AE"}, {0xd44, "Cortex-X1"},   {0xd46, "Cortex-A510"},
        {0xd47, "Cortex-A710"},  {0xd48, "Cortex-X2"},   {0xd49, "Neoverse-N2"},
        {0xd4b, "Cortex-A78C"},  {0xd4d, "Cortex-A715"}, {0xd4e, "Cortex-X3"}};
    if (auto it = kArm.find(part); it != kArm.end()) return it->second;
  }
  if (implementer == 0x4e && part == 0x004) return "Carmel";
  char buf[48];
  std::snprintf(buf, sizeof buf, "implementer 0x%02x part 0x%03x", implementer, part);
  return buf;
}

// x86: "model name". arm64 kernels write no model name, only each core's implementer and part:
// named cores, counted by type in order ("4x Cortex-A55 + 4x Cortex-A76"; one type: its name).
static std::string CpuModelFromProc() {
  std::istringstream in(ReadSysFile(HostPath("/proc/cpuinfo")));
  std::string line;
  std::string fallback;
  unsigned implementer = 0;
  std::vector<std::pair<std::string, int>> cores;  // name, count
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = Trim(line.substr(0, colon));
    std::string val = Trim(line.substr(colon + 1));
    if (key == "model name" || key == "Model") return val;
    if (key == "Hardware") fallback = val;
    if (key == "CPU implementer") implementer = std::strtoul(val.c_str(), nullptr, 16);
    if (key == "CPU part") {
      const std::string name = ArmCoreName(implementer, std::strtoul(val.c_str(), nullptr, 16));
      if (!cores.empty() && cores.back().first == name)
        ++cores.back().second;
      else
        cores.push_back({name, 1});
    }
  }
  if (cores.size() == 1) return cores[0].first;
  if (!cores.empty()) {
    std::string out;
    for (const auto& [name, n] : cores)
      out += (out.empty() ? "" : " + ") + std::to_string(n) + "x " + name;
    return out;
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
