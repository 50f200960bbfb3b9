#include "sections/telemetry/board_probe.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>

#include "base/clock.h"
#include "base/files.h"
#include "base/host.h"
#include "base/strings.h"
#include "collect/perf_event.h"
#include "profile/profile.h"

namespace opscope::telemetry {
namespace {

// How a Read's files become one value.
enum How {
  kHzToMhz = 0,      // one file in Hz
  kKhzToMhz = 1,     // one file in kHz
  kMilliToUnit = 2,  // m°C -> °C
  kPlain = 3,        // the number as written (mW, %)
  kMvMaToMw = 4,     // files[0] mV x files[1] mA / 1000
  kNpuCore = 5,      // files[0] is the rknpu load text; meta.name ends with the core number
};

bool Number(const std::string& path, double* v) { return ParseDouble(ReadSysFile(path), v); }

// "NPU load:  Core0: 12%, Core1:  0%, Core2:  0%," -> {12, 0, 0}; "NPU load: 35%" -> {35}.
std::vector<double> NpuLoads(const std::string& text) {
  std::vector<double> out;
  static const std::regex core(R"(Core\s*\d+\s*:\s*(\d+(?:\.\d+)?)\s*%)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), core); it != std::sregex_iterator();
       ++it)
    out.push_back(std::stod((*it)[1]));
  if (out.empty()) {
    static const std::regex one(R"(load\s*:\s*(\d+(?:\.\d+)?)\s*%)", std::regex::icase);
    std::smatch m;
    if (std::regex_search(text, m, one)) out.push_back(std::stod(m[1]));
  }
  return out;
}

std::string DevfreqName(const std::string& dir) {
  std::string d = dir;
  std::transform(d.begin(), d.end(), d.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* gpu : {"ga10b", "gv11b", "gp10b", "gpu", "mali"})
    if (d.find(gpu) != std::string::npos) return "gpu";
  if (d.find("npu") != std::string::npos) return "npu";
  if (d.find("dmc") != std::string::npos) return "dmc";
  if (d.find("emc") != std::string::npos) return "emc";
  if (d.find("dla") != std::string::npos) return "dla";
  return dir;
}

}  // namespace

std::string DescribeCores(const std::vector<CoreCluster>& clusters, const std::vector<int>& only) {
  std::vector<std::string> parts;
  for (const CoreCluster& c : clusters) {
    std::vector<int> cpus;
    for (int32_t cpu : c.cpus)
      if (only.empty() || std::find(only.begin(), only.end(), cpu) != only.end())
        cpus.push_back(cpu);
    if (cpus.empty()) continue;
    std::string text = fmt::format("{}x {} (cpus {}", cpus.size(), c.name, CpuRanges(cpus));
    if (c.capacity > 0) text += fmt::format(", capacity {}", c.capacity);
    parts.push_back(text + ")");
  }
  return Join(parts, ", ");
}

namespace {

// The CPUs a CPU-list file names ("0-3,8"), empty when unreadable.
std::vector<int32_t> ReadCpuListFile(const std::string& path) {
  std::vector<int32_t> cpus;
  for (const std::string& part : Split(Trim(ReadSysFile(path)), ',')) {
    int a = 0, b = 0;
    const int n = std::sscanf(part.c_str(), "%d-%d", &a, &b);
    if (n < 1 || a < 0) continue;
    if (n == 1) b = a;
    for (int c = a; c <= b && c - a < 4096; ++c) cpus.push_back(c);
  }
  return cpus;
}

// The process's CPU affinity, sorted; empty when it cannot be read.
std::vector<int> Affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// The CPU PMUs the kernel registered (one per core type on big.LITTLE: armv8_cortex_a55,
// armv8_cortex_a76) with the CPUs each covers.
std::string CpuPmus() {
  std::vector<std::string> out;
  for (const collect::CorePmu& p : collect::CorePmus())
    out.push_back(p.cpus.empty() ? p.name : p.name + " (cpus " + p.cpus + ")");
  return Join(out, ", ");
}

}  // namespace

std::vector<CoreCluster> ReadCoreClusters() {
  std::map<int, std::string> core;  // cpu -> name
  std::map<int, int64_t> capacity;
  const std::string base = HostPath("/sys/devices/system/cpu/");
  for (const std::string& c : ListDirectory(base, "cpu")) {
    int n = 0;
    if (c.size() < 4 || !std::isdigit(static_cast<unsigned char>(c[3])) ||
        std::sscanf(c.c_str(), "cpu%d", &n) != 1)
      continue;
    const std::string midr = ReadSysFile(base + c + "/regs/identification/midr_el1");
    if (!midr.empty()) {
      const unsigned long long v = std::strtoull(midr.c_str(), nullptr, 16);
      core[n] = ArmCoreName(static_cast<unsigned>((v >> 24) & 0xff),
                            static_cast<unsigned>((v >> 4) & 0xfff));
    }
    int64_t cap = 0;
    if (ParseInt64(ReadSysFile(base + c + "/cpu_capacity"), &cap) && cap > 0) capacity[n] = cap;
  }
  if (core.empty()) {
    int cpu = -1;
    unsigned implementer = 0;
    for (const std::string& line : Split(ReadSysFile(HostPath("/proc/cpuinfo")), '\n')) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      const std::string key = Trim(line.substr(0, colon)), val = Trim(line.substr(colon + 1));
      if (key == "processor") cpu = std::atoi(val.c_str());
      if (key == "CPU implementer") implementer = std::strtoul(val.c_str(), nullptr, 16);
      if (key == "CPU part" && cpu >= 0)
        core[cpu] = ArmCoreName(implementer, std::strtoul(val.c_str(), nullptr, 16));
    }
  }
  if (core.empty()) {
    // x86 hybrids (Alder Lake and later) register one PMU per core type, each with its CPUs.
    const std::string dev = HostPath("/sys/bus/event_source/devices/");
    for (const auto& [pmu, name] :
         {std::pair<const char*, const char*>{"cpu_core", "P-core"}, {"cpu_atom", "E-core"}})
      for (int32_t cpu : ReadCpuListFile(dev + pmu + "/cpus")) core[cpu] = name;
  }
  // Grouped by name and capacity, in CPU order of first appearance.
  std::vector<CoreCluster> clusters;
  for (const auto& [cpu, name] : core) {
    const int64_t cap = capacity.count(cpu) ? capacity[cpu] : 0;
    auto it = std::find_if(clusters.begin(), clusters.end(), [&](const CoreCluster& c) {
      return c.name == name && c.capacity == cap;
    });
    if (it == clusters.end())
      clusters.push_back({name, {cpu}, cap});
    else
      it->cpus.push_back(cpu);
  }
  return clusters;
}

std::vector<int32_t> ThreadCpus(std::vector<std::string>* names) {
  std::vector<int32_t> cpus;
  for (const std::string& task : ListDirectory("/proc/self/task")) {
    // Field 39 of stat is the CPU the thread last ran on; the name (field 2) may hold spaces and
    // parentheses, so fields are counted after its last ')'.
    const std::string stat = ReadSysFile("/proc/self/task/" + task + "/stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    const std::vector<std::string> f = Split(Trim(stat.substr(close + 1)), ' ');
    int64_t cpu = -1;
    if (f.size() < 37 || !ParseInt64(f[36], &cpu) || cpu < 0 || cpu > 1 << 20) continue;
    names->push_back(task + " " + Trim(ReadSysFile("/proc/self/task/" + task + "/comm")));
    cpus.push_back(static_cast<int32_t>(cpu));
  }
  return cpus;
}

BoardProbe BoardProbe::Discover() {
  BoardProbe b;
  const std::string model = ReadSysFile(HostPath("/proc/device-tree/model"));
  // The device tree's strings end in NUL.
  b.board_ = Trim(std::string(model.c_str()));
  const std::string rknpu_load =
      !ReadSysFile(HostPath("/sys/kernel/debug/rknpu/load")).empty()
          ? HostPath("/sys/kernel/debug/rknpu/load")
          : (!ReadSysFile(HostPath("/proc/rknpu/load")).empty() ? HostPath("/proc/rknpu/load")
                                                                : "");
  if (b.board_.find("Jetson") != std::string::npos ||
      !ReadSysFile(HostPath("/etc/nv_tegra_release")).empty())
    b.platform_ = "jetson";
  else if (b.board_.find("Rockchip") != std::string::npos ||
           b.board_.find("RK35") != std::string::npos || !rknpu_load.empty())
    b.platform_ = "rockchip";

  // CPU clusters.
  const std::string cpufreq = HostPath("/sys/devices/system/cpu/cpufreq");
  for (const std::string& pol : ListDirectory(cpufreq, "policy")) {
    const std::string dir = cpufreq + "/" + pol + "/";
    double cur = 0, max = 0, min = 0;
    if (!Number(dir + "scaling_cur_freq", &cur)) continue;
    Number(dir + "cpuinfo_max_freq", &max);
    Number(dir + "scaling_min_freq", &min);
    std::string cpus = ReadSysFile(dir + "related_cpus");
    std::replace(cpus.begin(), cpus.end(), ' ', ',');
    Read r;
    r.meta = {"cpu clock (cpus " + cpus + ")", "clock",    "MHz",
              dir + "scaling_cur_freq",        max / 1000, min / 1000};
    r.files = {dir + "scaling_cur_freq"};
    r.how = kKhzToMhz;
    b.reads_.push_back(r);
    const std::string gov = ReadSysFile(dir + "scaling_governor");
    if (!gov.empty()) b.environment_["cpu governor (cpus " + cpus + ")"] = gov;
  }

  // devfreq.
  const std::string devfreq = HostPath("/sys/class/devfreq");
  for (const std::string& dev : ListDirectory(devfreq)) {
    const std::string dir = devfreq + "/" + dev + "/";
    double cur = 0, max = 0, min = 0;
    if (!Number(dir + "cur_freq", &cur)) continue;
    Number(dir + "max_freq", &max);
    Number(dir + "min_freq", &min);
    const std::string name = DevfreqName(dev);
    Read r;
    r.meta = {name + " clock", "clock", "MHz", dir + "cur_freq", max / 1e6, min / 1e6};
    r.files = {dir + "cur_freq"};
    r.how = kHzToMhz;
    b.reads_.push_back(r);
    const std::string gov = ReadSysFile(dir + "governor");
    if (!gov.empty()) b.environment_[name + " governor"] = gov;
    if (name == "gpu" && b.platform_ == "jetson" && max > 0)
      b.environment_["jetson_clocks"] =
          min >= max ? fmt::format("on (GPU clock floor at its ceiling, {:.0f} MHz)", max / 1e6)
                     : fmt::format(
                           "off (GPU clock floor {:.0f} MHz, ceiling {:.0f} MHz: it "
                           "scales with load)",
                           min / 1e6, max / 1e6);
  }

  // Jetson BPMP clocks (debugfs).
  const std::string bpmp = HostPath("/sys/kernel/debug/bpmp/debug/clk/");
  for (const char* clk : {"emc", "dla0_core", "dla1_core"}) {
    double rate = 0, max = 0;
    if (!Number(bpmp + clk + "/rate", &rate)) continue;
    Number(bpmp + std::string(clk) + "/max_rate", &max);
    std::string name = clk;
    if (name != "emc") name = name.substr(0, 4);  // dla0, dla1
    Read r;
    r.meta = {name + " clock", "clock", "MHz", bpmp + clk + "/rate", max / 1e6, 0};
    r.files = {bpmp + clk + "/rate"};
    r.how = kHzToMhz;
    b.reads_.push_back(r);
  }

  // Thermal zones.
  const std::string thermal = HostPath("/sys/class/thermal");
  for (const std::string& z : ListDirectory(thermal, "thermal_zone")) {
    const std::string dir = thermal + "/" + z + "/";
    double t = 0;
    if (!Number(dir + "temp", &t)) continue;
    std::string type = ReadSysFile(dir + "type");
    if (type.empty()) type = z;
    double trip = 0;
    for (int k = 0; k < 16; ++k) {
      const std::string kind = ReadSysFile(dir + "trip_point_" + std::to_string(k) + "_type");
      if (kind.empty()) break;
      double tt = 0;
      if ((kind == "passive" || (kind == "critical" && trip == 0)) &&
          Number(dir + "trip_point_" + std::to_string(k) + "_temp", &tt) && tt > 0) {
        trip = tt / 1000;
        if (kind == "passive") break;
      }
    }
    Read r;
    r.meta = {"thermal " + type, "temperature", "°C", dir + "temp", trip, 0};
    r.files = {dir + "temp"};
    r.how = kMilliToUnit;
    b.reads_.push_back(r);
  }

  // INA3221 power rails: hwmon, then the older iio driver.
  const std::string hwmon = HostPath("/sys/class/hwmon");
  for (const std::string& h : ListDirectory(hwmon, "hwmon")) {
    const std::string dir = hwmon + "/" + h + "/";
    if (ReadSysFile(dir + "name") != "ina3221") continue;
    for (int k = 1; k <= 3; ++k) {
      const std::string label = ReadSysFile(dir + "in" + std::to_string(k) + "_label");
      double mv = 0, ma = 0;
      if (label.empty() || !Number(dir + "in" + std::to_string(k) + "_input", &mv) ||
          !Number(dir + "curr" + std::to_string(k) + "_input", &ma))
        continue;
      Read r;
      r.meta = {"power " + label,
                "power",
                "mW",
                dir + "in" + std::to_string(k) + "_input x curr" + std::to_string(k) + "_input",
                0,
                0};
      r.files = {dir + "in" + std::to_string(k) + "_input",
                 dir + "curr" + std::to_string(k) + "_input"};
      r.how = kMvMaToMw;
      b.reads_.push_back(r);
    }
  }
  const std::string ina = HostPath("/sys/bus/i2c/drivers/ina3221x");
  for (const std::string& dev : ListDirectory(ina)) {
    for (const std::string& iio : ListDirectory(ina + "/" + dev, "iio:device")) {
      const std::string dir = ina + "/" + dev + "/" + iio + "/";
      for (int k = 0; k < 3; ++k) {
        const std::string label = ReadSysFile(dir + "rail_name_" + std::to_string(k));
        double mw = 0;
        if (label.empty() || !Number(dir + "in_power" + std::to_string(k) + "_input", &mw))
          continue;
        Read r;
        r.meta = {
            "power " + label, "power", "mW", dir + "in_power" + std::to_string(k) + "_input", 0, 0};
        r.files = {dir + "in_power" + std::to_string(k) + "_input"};
        r.how = kPlain;
        b.reads_.push_back(r);
      }
    }
  }

  // RK3588 NPU load.
  if (!rknpu_load.empty()) {
    const std::vector<double> loads = NpuLoads(ReadSysFile(rknpu_load));
    for (size_t k = 0; k < loads.size(); ++k) {
      Read r;
      r.meta = {loads.size() == 1 ? std::string("npu load") : fmt::format("npu load core{}", k),
                "load",
                "%",
                rknpu_load,
                100,
                0};
      r.files = {rknpu_load};
      r.how = kNpuCore * 100 + static_cast<int>(k);
      b.reads_.push_back(r);
    }
    const std::string version = ReadSysFile(HostPath("/sys/kernel/debug/rknpu/version"));
    if (!version.empty()) b.environment_["rknpu driver"] = version;
  }

  // Jetson power mode.
  const std::string status = ReadSysFile(HostPath("/var/lib/nvpmodel/status"));
  std::smatch m;
  static const std::regex pmode(R"(pmode\s*:\s*(\d+))");
  if (std::regex_search(status, m, pmode)) {
    const int id = std::stoi(m[1]);
    std::string name;
    const std::string conf = ReadSysFile(HostPath("/etc/nvpmodel.conf"));
    static const std::regex model(R"(<\s*POWER_MODEL\s+ID\s*=\s*(\d+)\s+NAME\s*=\s*([^\s>]+))");
    for (auto it = std::sregex_iterator(conf.begin(), conf.end(), model);
         it != std::sregex_iterator(); ++it)
      if (std::stoi((*it)[1]) == id) name = (*it)[2];
    b.environment_["power mode"] =
        name.empty() ? fmt::format("nvpmodel {}", id) : fmt::format("{} (nvpmodel {})", name, id);
  }
  b.clusters_ = ReadCoreClusters();
  if (!b.clusters_.empty()) b.environment_["cores"] = DescribeCores(b.clusters_);
  // Pinned: the affinity leaves out online CPUs (`--cpus`, taskset, a cgroup's cpuset). Both are
  // this process's own facts, read from the real /sys and /proc whatever --sysroot says.
  const std::vector<int> affinity = Affinity();
  std::vector<int> online;
  for (int32_t c : ReadCpuListFile("/sys/devices/system/cpu/online")) online.push_back(c);
  if (!affinity.empty() && !online.empty() && affinity != online) b.pinned_ = CpuRanges(affinity);
  if (const std::string pmus = CpuPmus(); !pmus.empty()) b.environment_["cpu PMUs"] = pmus;
  if (!b.board_.empty()) b.environment_["board"] = b.board_;
  return b;
}

TelemetrySection BoardProbe::Describe() const {
  TelemetrySection t;
  t.board = board_;
  t.platform = platform_;
  t.source = "sysfs";
  t.environment = environment_;
  for (const Read& r : reads_) t.channels.push_back(r.meta);
  t.clusters = clusters_;
  t.pinned_cpus = pinned_;
  return t;
}

bool TracksPlacement(const TelemetrySection& t) {
  return t.Heterogeneous() || !t.pinned_cpus.empty();
}

void BoardProbe::Sample(TelemetrySection* t, int32_t run, int64_t ns) const {
  if (t->channels.size() != reads_.size()) return;
  t->sample_ns.push_back(ns);
  t->sample_runs.push_back(run);
  for (size_t i = 0; i < reads_.size(); ++i) {
    const Read& r = reads_[i];
    Channel& c = t->channels[i];
    double v = 0, a = 0, b = 0;
    bool ok = false;
    if (r.how >= kNpuCore * 100) {
      const std::vector<double> loads = NpuLoads(ReadSysFile(r.files[0]));
      const size_t k = static_cast<size_t>(r.how - kNpuCore * 100);
      ok = k < loads.size();
      if (ok) v = loads[k];
    } else if (r.how == kMvMaToMw) {
      ok = Number(r.files[0], &a) && Number(r.files[1], &b);
      v = a * b / 1000;
    } else {
      ok = Number(r.files[0], &a);
      v = r.how == kHzToMhz       ? a / 1e6
          : r.how == kKhzToMhz    ? a / 1000
          : r.how == kMilliToUnit ? a / 1000
                                  : a;
    }
    if (!ok || !std::isfinite(v) || std::fabs(v) > 1e15) {
      ++c.gaps;
      v = c.values.empty() ? 0 : c.values.back();
    }
    c.values.push_back(v);
  }
}

void SamplePlacement(TelemetrySection* t) {
  if (t->thread_cpus.size() >= t->sample_ns.size()) return;  // one row per sample
  // The threads seen so far keep their columns; a new one gets a column of -1 before it.
  std::vector<std::string> names;
  const std::vector<int32_t> cpus = ThreadCpus(&names);
  std::vector<int32_t> row(t->threads.size(), -1);
  for (size_t k = 0; k < names.size(); ++k) {
    auto it = std::find(t->threads.begin(), t->threads.end(), names[k]);
    if (it == t->threads.end()) {
      t->threads.push_back(names[k]);
      for (auto& earlier : t->thread_cpus) earlier.push_back(-1);
      row.push_back(cpus[k]);
    } else {
      row[static_cast<size_t>(it - t->threads.begin())] = cpus[k];
    }
  }
  t->thread_cpus.push_back(std::move(row));
}

void DescribeInto(profile::Profile* p) {
  if (p->sections.Find<TelemetrySection>()) return;
  const BoardProbe probe = BoardProbe::Discover();
  if (probe.empty()) return;
  TelemetrySection t = probe.Describe();
  // Described, not sampled: one reading at the end stands for the state the numbers were taken in.
  probe.Sample(&t, -1, NowNs());
  p->sections.Get<TelemetrySection>() = std::move(t);
}

}  // namespace opscope::telemetry
