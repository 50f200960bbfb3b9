// tegrastats logs (`tegrastats --interval MS --logfile FILE`, or its stdout saved), one line per
// sample, as JetPack 4 (Nano, TX2, Xavier) and JetPack 5/6 (Orin) print them:
//
//   12-06-2026 10:00:01 RAM 4722/30536MB (lfb 5375x4MB) SWAP 0/15268MB (cached 0MB)
//   CPU [2%@1190,1%@1190,off,off] EMC_FREQ 0%@2133 GR3D_FREQ 0%@[305,305] VIC_FREQ 729 APE 174
//   CPU@46.5C SOC2@43.156C CV0@-256C tj@46.5C VDD_GPU_SOC 2408mW/2408mW VIN_SYS_5V0 3331mW/3331mW
//
//   RAM 2380/3964MB (lfb 20x4MB) SWAP 0/1982MB (cached 0MB) IRAM 0/252kB(lfb 252kB)
//   CPU [3%@1479,2%@1479] EMC_FREQ 0% GR3D_FREQ 0% PLL@31.5C CPU@34C POM_5V_IN 2242/2242
//
// (each sample is one line). Every value becomes a channel of the telemetry section: memory
// (RAM, SWAP, MB), per-core CPU load and clock, EMC and GPU (GR3D) load and clock, the other
// engines' clocks (VIC, APE, NVDEC, NVENC, DLA...), temperatures (-256C: a sensor that is off),
// power rails (current mW; JetPack 4 writes "cur/avg" without a unit). Times come from the
// leading "MM-DD-YYYY HH:MM:SS" stamp when present, else the samples are placed one second
// apart (tegrastats' default interval) and a note says so.
#include <fmt/format.h>

#include <cmath>
#include <ctime>
#include <map>
#include <regex>

#include "base/strings.h"
#include "importers/importer.h"
#include "sections/telemetry/telemetry_section.h"

namespace opscope::importers {
namespace {

bool HasAny(std::string_view s, std::initializer_list<std::string_view> keys) {
  for (auto k : keys)
    if (s.find(k) != std::string_view::npos) return true;
  return false;
}

int Sniff(std::string_view head, const std::string&) {
  const bool ram = head.find("RAM ") != std::string_view::npos &&
                   head.find("MB (lfb ") != std::string_view::npos;
  if (ram && HasAny(head, {"GR3D_FREQ", "EMC_FREQ"})) return kSniffCertain;
  if (ram && head.find("CPU [") != std::string_view::npos) return kSniffLikely;
  return kSniffNo;
}

// Channels in first-seen order, filled sample by sample (absent in a sample: a gap).
class Channels {
 public:
  void Set(const std::string& name, const char* kind, const char* unit, double v,
           const std::string& source, double max = 0) {
    auto [it, fresh] = index_.emplace(name, t_.channels.size());
    if (fresh) {
      telemetry::Channel c;
      c.name = name;
      c.kind = kind;
      c.unit = unit;
      c.source = "tegrastats " + source;
      c.values.assign(samples_, 0);
      c.gaps = static_cast<int64_t>(samples_);
      t_.channels.push_back(std::move(c));
    }
    telemetry::Channel& c = t_.channels[it->second];
    if (max > 0) c.max = max;
    if (!std::isfinite(v) || std::fabs(v) > 1e15) return;
    current_[it->second] = v;
  }
  void EndSample(int64_t ns) {
    t_.sample_ns.push_back(ns);
    t_.sample_runs.push_back(-1);
    for (size_t i = 0; i < t_.channels.size(); ++i) {
      telemetry::Channel& c = t_.channels[i];
      auto it = current_.find(i);
      if (it != current_.end()) {
        c.values.push_back(it->second);
      } else {
        c.values.push_back(c.values.empty() ? 0 : c.values.back());
        ++c.gaps;
      }
    }
    current_.clear();
    ++samples_;
  }
  telemetry::TelemetrySection& section() { return t_; }
  size_t samples() const { return samples_; }

 private:
  telemetry::TelemetrySection t_;
  std::map<std::string, size_t> index_;
  std::map<size_t, double> current_;
  size_t samples_ = 0;
};

bool Num(std::string_view s, double* v) { return ParseDouble(std::string(s), v); }

// "12-06-2026 10:00:01" at the start of the line -> seconds (UTC-agnostic, only differences
// are used).
bool Stamp(std::string_view line, double* seconds) {
  int mo, d, y, h, mi, s;
  if (line.size() < 19 || std::sscanf(std::string(line.substr(0, 19)).c_str(),
                                      "%2d-%2d-%4d %2d:%2d:%2d", &mo, &d, &y, &h, &mi, &s) != 6)
    return false;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  *seconds = static_cast<double>(timegm(&tm));
  return true;
}

StatusOr<profile::Profile> Parse(const Source& src) {
  const std::string& origin = src.origin();
  std::string_view text = src.bytes();
  Channels ch;
  double first_stamp = -1;
  size_t stamped = 0, line_no = 0, skipped = 0;
  static const std::regex cpu_core(R"((\d+)%@(\d+))");
  static const std::regex freq(R"(^(\d+(?:\.\d+)?)%(?:@\[?([\d,]+)\]?)?$)");
  static const std::regex temp(R"(^([A-Za-z][\w.-]*)@(-?\d+(?:\.\d+)?)C$)");
  static const std::regex rail_value(R"(^(\d+(?:\.\d+)?)(mW)?/(\d+(?:\.\d+)?)(mW)?$)");
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    static const std::regex sample(R"((^|\s)RAM \d+/\d+)");
    if (line.find("RAM ") == std::string_view::npos ||
        !std::regex_search(line.begin(), line.end(), sample)) {
      if (!Trim(std::string(line)).empty()) ++skipped;
      continue;
    }
    double stamp = 0;
    const bool has_stamp = Stamp(line, &stamp);
    std::vector<std::string> tok = Split(std::string(line), ' ', /*skip_empty=*/true);
    for (size_t i = 0; i < tok.size(); ++i) {
      const std::string& t = tok[i];
      const std::string next = i + 1 < tok.size() ? tok[i + 1] : "";
      std::smatch m;
      if ((t == "RAM" || t == "SWAP") && !next.empty()) {
        // "4722/30536MB"
        const size_t slash = next.find('/');
        double used = 0, total = 0;
        if (slash != std::string::npos && Num(next.substr(0, slash), &used)) {
          std::string tot = next.substr(slash + 1);
          if (EndsWith(tot, "MB")) tot.resize(tot.size() - 2);
          Num(tot, &total);
          ch.Set(t == "RAM" ? "ram used" : "swap used", "memory", "MB", used, t, total);
        }
        ++i;
      } else if (t == "CPU" && StartsWith(next, "[")) {
        // "[2%@1190,1%@1190,off,off]"
        std::string list = next.substr(1);
        if (!list.empty() && list.back() == ']') list.pop_back();
        std::vector<std::string> cores = Split(list, ',');
        for (size_t k = 0; k < cores.size(); ++k) {
          if (cores[k] == "off") {
            ch.Set(fmt::format("cpu{} load", k), "load", "%", 0, "CPU");
            continue;
          }
          std::smatch cm;
          if (std::regex_match(cores[k], cm, cpu_core)) {
            ch.Set(fmt::format("cpu{} load", k), "load", "%", std::stod(cm[1]), "CPU", 100);
            ch.Set(fmt::format("cpu{} clock", k), "clock", "MHz", std::stod(cm[2]), "CPU");
          } else {
            double load = 0;
            std::string c = cores[k];
            if (!c.empty() && c.back() == '%') c.pop_back();
            if (Num(c, &load)) ch.Set(fmt::format("cpu{} load", k), "load", "%", load, "CPU", 100);
          }
        }
        ++i;
      } else if (EndsWith(t, "_FREQ") && !next.empty()) {
        // "EMC_FREQ 0%@2133", "GR3D_FREQ 0%@[305,305]", "EMC_FREQ 0%", "VIC_FREQ 729"
        std::string base = t.substr(0, t.size() - 5);
        std::string name = base == "GR3D" ? "gpu" : base;
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        std::smatch fm;
        double mhz = 0;
        if (std::regex_match(next, fm, freq)) {
          ch.Set(name + " load", "load", "%", std::stod(fm[1]), t, 100);
          if (fm[2].matched) {
            double top = 0;
            for (const std::string& f : Split(fm[2].str(), ',', true)) {
              double v = 0;
              if (Num(f, &v)) top = std::max(top, v);
            }
            ch.Set(name + " clock", "clock", "MHz", top, t);
          }
          ++i;
        } else if (Num(next, &mhz)) {
          ch.Set(name + " clock", "clock", "MHz", mhz, t);
          ++i;
        }
      } else if ((t == "APE" || t == "NVDEC" || t == "NVENC" || t == "NVJPG" || t == "NVJPG1" ||
                  t == "OFA" || t == "NVDLA0" || t == "NVDLA1" || t == "PVA0_FREQ") &&
                 !next.empty()) {
        double mhz = 0;
        std::string v = next;
        if (const size_t at = v.find('@'); at != std::string::npos) v = v.substr(at + 1);
        if (Num(v, &mhz)) {
          std::string name = t;
          std::transform(name.begin(), name.end(), name.begin(),
                         [](unsigned char c) { return std::tolower(c); });
          ch.Set(name + " clock", "clock", "MHz", mhz, t);
          ++i;
        }
      } else if (t.back() == 'C' && t.find('@') != std::string::npos &&
                 std::regex_match(t, m, temp)) {  // the cheap test first: a regex per token is slow
        const double c = std::stod(m[2]);
        // -256C: the sensor is off in this power mode.
        ch.Set("thermal " + m[1].str(), "temperature", "°C", c <= -256 ? NAN : c, m[1].str());
      } else if (next.find('/') != std::string::npos && std::regex_match(next, m, rail_value) &&
                 std::isupper(static_cast<unsigned char>(t[0])) && t != "RAM" && t != "SWAP" &&
                 t != "IRAM") {
        ++i;
        if (t == "NC") continue;  // a rail input that is not connected
        // "VDD_GPU_SOC 2408mW/2408mW" (JetPack 5/6), "POM_5V_IN 2242/2242" (JetPack 4): current.
        ch.Set("power " + t, "power", "mW", std::stod(m[1]), t);
      }
    }
    double at_s;
    if (has_stamp) {
      if (first_stamp < 0) first_stamp = stamp;
      at_s = stamp - first_stamp;
      ++stamped;
    } else {
      at_s = static_cast<double>(ch.samples());
    }
    ch.EndSample(static_cast<int64_t>(std::llround(at_s * 1e9)));
  }
  if (ch.samples() == 0)
    return DataLoss(origin + ": no tegrastats sample (a line with \"RAM used/totalMB\") in " +
                    std::to_string(line_no) + " lines");
  profile::Profile p = util::NewProfile("tegrastats", origin);
  telemetry::TelemetrySection& t = ch.section();
  t.platform = "jetson";
  t.source = "tegrastats log";
  if (stamped < ch.samples())
    p.meta.degradations.push_back(fmt::format(
        "{} of {} samples have no time stamp: placed one second apart (tegrastats' default "
        "--interval 1000); run tegrastats with its time stamps (JetPack 5+) for real times",
        ch.samples() - stamped, ch.samples()));
  if (skipped)
    p.meta.degradations.push_back(
        fmt::format("{} line(s) that are not samples were skipped", skipped));
  // A channel with no reading in any sample (a sensor off in this power mode, "-256C") is not a
  // track; the environment says it was off.
  std::vector<telemetry::Channel> kept;
  for (telemetry::Channel& c : t.channels) {
    if (c.gaps < static_cast<int64_t>(c.values.size())) {
      kept.push_back(std::move(c));
      continue;
    }
    t.environment["off: " + c.name] =
        c.kind == "temperature" ? "in every sample (-256C)" : "in every sample";
  }
  t.channels = std::move(kept);
  p.sections.Get<telemetry::TelemetrySection>() = std::move(t);
  return p;
}

}  // namespace

namespace formats {
extern const Format kFormat_tegrastats = {
    "tegrastats", "NVIDIA Jetson tegrastats log (tegrastats --logfile)", Sniff, Parse};
}  // namespace formats

}  // namespace opscope::importers
