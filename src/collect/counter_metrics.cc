#include "collect/counter_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/stats.h"

namespace opscope::collect {
namespace {

bool Get(const std::map<std::string, double>& m, const char* key, double* out) {
  auto it = m.find(key);
  if (it == m.end()) return false;
  *out = it->second;
  return true;
}

std::string Num(double v) {
  if (std::fabs(v) >= 100) return fmt::format("{:.0f}", v);
  if (std::fabs(v) >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}

}  // namespace

std::map<std::string, double> DerivedMetrics(const std::map<std::string, double>& v,
                                             double wall_ms) {
  std::map<std::string, double> d;
  double cycles = 0, instr = 0, refs = 0, misses = 0, br = 0, brm = 0, l1d = 0, llc = 0, task = 0,
         faults = 0, cs = 0;
  const bool has_cycles = Get(v, "cycles", &cycles) && cycles > 0;
  const bool has_instr = Get(v, "instructions", &instr) && instr > 0;
  if (has_cycles && has_instr) {
    d["ipc"] = instr / cycles;
    d["cycles_per_instruction"] = cycles / instr;
  }
  if (Get(v, "cache-references", &refs) && Get(v, "cache-misses", &misses) && refs > 0)
    d["cache_miss_rate"] = misses / refs;
  if (Get(v, "branches", &br) && Get(v, "branch-misses", &brm) && br > 0)
    d["branch_miss_rate"] = brm / br;
  if (has_instr) {
    if (Get(v, "cache-misses", &misses)) d["cache_mpki"] = misses / instr * 1000;
    if (Get(v, "L1-dcache-load-misses", &l1d)) d["l1d_mpki"] = l1d / instr * 1000;
    if (Get(v, "LLC-load-misses", &llc)) d["llc_mpki"] = llc / instr * 1000;
    if (Get(v, "branch-misses", &brm)) d["branch_mpki"] = brm / instr * 1000;
  }
  const bool has_task = Get(v, "task-clock", &task) && task > 0;
  if (has_cycles && has_task) d["ghz"] = cycles / (task * 1e6);
  if (has_task && wall_ms > 0) d["cpus_utilized"] = task / wall_ms;
  if (has_task && Get(v, "page-faults", &faults)) d["page_faults_per_cpu_ms"] = faults / task;
  if (wall_ms > 0 && Get(v, "context-switches", &cs))
    d["context_switches_per_s"] = cs / wall_ms * 1000;
  return d;
}

Verdict DecideVerdict(const std::map<std::string, double>& d,
                      const std::map<std::string, double>& v) {
  double ipc = 0;
  if (!Get(d, "ipc", &ipc)) {
    const bool has_cycles = v.count("cycles") > 0, has_instr = v.count("instructions") > 0;
    std::string missing = !has_cycles && !has_instr ? "cycles and instructions"
                          : !has_cycles             ? "cycles"
                                                    : "instructions";
    return {"undetermined (no hardware counters)",
            missing +
                " were not counted (no hardware PMU here, or not requested), so IPC and "
                "misses per kilo-instruction cannot be computed; run on a machine with a "
                "PMU (bare metal, or a VM with vPMU enabled)"};
  }
  double llc = -1, cache = -1, l1d = -1, brate = -1, bmpki = -1;
  Get(d, "llc_mpki", &llc);
  Get(d, "cache_mpki", &cache);
  Get(d, "l1d_mpki", &l1d);
  Get(d, "branch_miss_rate", &brate);
  Get(d, "branch_mpki", &bmpki);
  std::vector<std::string> memory_evidence, branch_evidence;
  if (llc >= kMemoryLlcMpki)
    memory_evidence.push_back(fmt::format("LLC MPKI {:.2f} >= {}", llc, kMemoryLlcMpki));
  if (cache >= kMemoryCacheMpki)
    memory_evidence.push_back(fmt::format("cache-miss MPKI {:.2f} >= {}", cache, kMemoryCacheMpki));
  if (l1d >= kMemoryL1dMpki)
    memory_evidence.push_back(fmt::format("L1D MPKI {:.1f} >= {}", l1d, kMemoryL1dMpki));
  if (brate >= kBranchMissRate)
    branch_evidence.push_back(
        fmt::format("branch-miss rate {:.1f}% >= {:.0f}%", brate * 100, kBranchMissRate * 100));
  if (bmpki >= kBranchMpki)
    branch_evidence.push_back(fmt::format("branch MPKI {:.1f} >= {}", bmpki, kBranchMpki));
  auto join = [](const std::vector<std::string>& parts) {
    std::string s;
    for (const auto& p : parts) s += (s.empty() ? "" : ", ") + p;
    return s;
  };
  const std::string ipc_text = fmt::format("IPC {:.2f}", ipc);
  if (ipc >= kComputeBoundIpc)
    return {"compute-bound", fmt::format("{} >= {}: the core retires instructions near its width; "
                                         "speed-ups come from doing less work (or SIMD)",
                                         ipc_text, kComputeBoundIpc)};
  if (ipc < kLowIpc && !memory_evidence.empty())
    return {"memory-bound", fmt::format("{} < {} with {}: the CPU is waiting for data", ipc_text,
                                        kLowIpc, join(memory_evidence))};
  if (!branch_evidence.empty())
    return {"front-end or branch-bound",
            fmt::format("{} with {}: mispredicted branches flush the pipeline", ipc_text,
                        join(branch_evidence))};
  if (!memory_evidence.empty())
    return {"memory-bound", fmt::format("{} with {}: many misses, though the core still overlaps "
                                        "some of them",
                                        ipc_text, join(memory_evidence))};
  if (ipc >= kLowIpc)
    return {"compute-bound",
            fmt::format("{} >= {} and no miss rate over its threshold", ipc_text, kLowIpc)};
  if (llc < 0 && cache < 0 && l1d < 0)
    return {
        "undetermined (no cache counters)",
        fmt::format("{} < {} but no cache-miss event was counted to say why", ipc_text, kLowIpc)};
  return {"undetermined",
          fmt::format("{} < {} but no miss rate over its threshold: front-end stalls, "
                      "long dependency chains or divisions are likely",
                      ipc_text, kLowIpc)};
}

void SummarizeStat(profile::StatSection& s) {
  s.summary.clear();
  s.derived.clear();
  s.outliers.clear();
  if (s.runs.empty()) return;
  std::map<std::string, std::vector<double>> series;
  std::vector<std::string> order;
  std::vector<double> wall;
  for (const profile::StatRun& run : s.runs) {
    wall.push_back(run.wall_ms);
    for (const profile::CounterReading& c : run.counters) {
      if (!c.supported || (c.running_ns == 0 && c.enabled_ns > 0)) continue;
      if (!series.count(c.event)) order.push_back(c.event);
      series[c.event].push_back(c.value);
    }
  }
  series["wall-ms"] = wall;
  order.push_back("wall-ms");
  // A multiplexed counter is an estimate: say so once per event, with the fraction it ran.
  for (size_t i = 0; i < s.runs.front().counters.size(); ++i) {
    double sum = 0;
    int n = 0;
    for (const profile::StatRun& run : s.runs)
      if (i < run.counters.size() && run.counters[i].supported)
        sum += run.counters[i].running_fraction, ++n;
    const double mean = n ? sum / n : 1;
    if (n && mean < 0.9995 && mean > 0) {
      std::string d = fmt::format(
          "counter multiplexed: {} ran {:.1f}% of the time (value scaled by "
          "enabled/running)",
          s.runs.front().counters[i].event, mean * 100);
      if (std::find(s.degradations.begin(), s.degradations.end(), d) == s.degradations.end())
        s.degradations.push_back(d);
    }
  }
  std::map<std::string, double> medians;
  for (const std::string& name : order) {
    const std::vector<double>& vals = series[name];
    s.summary[name] = ComputeStats(vals);
    medians[name] = s.summary[name].median;
    if (vals.size() >= 4) {
      for (size_t i : FindOutliers(vals)) {
        // Tukey's fences alone flag 40117 among 40118s (IQR 0); "wildly" also needs 10%.
        const double med = s.summary[name].median;
        if (std::fabs(vals[i] - med) < kOutlierMinRelative * std::fabs(med)) continue;
        s.outliers.push_back(
            fmt::format("run {}: {} {} differs wildly from the median {} (Tukey far out)", i + 1,
                        name, Num(vals[i]), Num(s.summary[name].median)));
      }
    }
  }
  // "cycles:u" feeds the metrics as "cycles" unless plain cycles was counted too. Events standing
  // in for others keep their own names (cpu-clock for cycles), so a clock never passes as cycles.
  for (const std::string& name : order) {
    const size_t colon = name.rfind(':');
    if (colon == std::string::npos) continue;
    const std::string mod = name.substr(colon + 1);
    if (mod == "u" || mod == "k" || mod == "uk" || mod == "ku")
      medians.emplace(name.substr(0, colon), medians[name]);
  }
  s.derived = DerivedMetrics(medians, medians["wall-ms"]);
  Verdict v = DecideVerdict(s.derived, medians);
  s.verdict = v.verdict;
  s.verdict_reason = v.reason;
}

std::vector<CounterColumn> OpCounterColumns(const std::map<std::string, double>& c, double op_ms) {
  std::vector<CounterColumn> cols;
  std::map<std::string, double> d = DerivedMetrics(c, op_ms);
  auto add = [&](const char* header, const char* key) {
    auto it = d.find(key);
    if (it != d.end()) cols.push_back({header, it->second, Num(it->second)});
  };
  if (d.count("ipc")) {
    add("IPC", "ipc");
    if (d.count("llc_mpki"))
      add("LLC MPKI", "llc_mpki");
    else
      add("cache MPKI", "cache_mpki");
    add("branch MPKI", "branch_mpki");
    return cols;
  }
  // Software stand-ins: how many threads were busy, and how often the op faulted or yielded.
  add("CPUs busy", "cpus_utilized");
  add("faults/cpu-ms", "page_faults_per_cpu_ms");
  auto cs = c.find("context-switches");
  if (cs != c.end()) cols.push_back({"ctx-sw", cs->second, Num(cs->second)});
  return cols;
}

}  // namespace opscope::collect
