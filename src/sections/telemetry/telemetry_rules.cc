// The telemetry section's findings (analysis layer; listed in analysis/rules/rules.def):
// - board-power-mode: a Jetson measured in a power mode other than MAXN, or with jetson_clocks
//   off (the clocks scale with load, so the numbers move);
// - clock-below-ceiling: a CPU-cluster or memory clock (and the GPU's, for GPU profiles) ran well
//   below its ceiling during the measured runs (DVFS, a power cap or thermal throttling);
// - little-cores: on a machine with several core types (big.LITTLE, x86 hybrids), engine threads
//   ran on the smaller cores;
// - cluster-migration: a thread moved between core types from one run to the next.
#include <fmt/format.h>

#include <algorithm>

#include "analysis/rules.h"
#include "base/strings.h"
#include "sections/telemetry/telemetry_section.h"

namespace opscope::analysis::rules {
namespace {

using telemetry::Channel;
using telemetry::TelemetrySection;

inline constexpr double kBelowCeiling = 0.9;  // median under 90% of the ceiling

void PowerMode(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  const TelemetrySection* t = ctx.profile.sections.Find<TelemetrySection>();
  if (!t || t->platform != "jetson") return;
  auto get = [&](const char* k) {
    auto it = t->environment.find(k);
    return it == t->environment.end() ? std::string() : it->second;
  };
  const std::string mode = get("power mode"), clocks = get("jetson_clocks");
  const bool maxn = mode.find("MAXN") != std::string::npos;
  const bool pinned = StartsWith(clocks, "on");
  if ((mode.empty() || maxn) && (clocks.empty() || pinned)) return;
  profile::Finding f;
  f.rule = "board-power-mode";
  f.severity = profile::Severity::kWarning;
  std::vector<std::string> what;
  if (!mode.empty() && !maxn) what.push_back("power mode " + mode);
  if (!clocks.empty() && !pinned) what.push_back("jetson_clocks " + clocks);
  f.title = "the board was not at full speed: " + Join(what, "; ");
  f.evidence = Join(what, "; ") +
               ": every time in this profile is for that setting, and with dynamic clocks it "
               "moves with load and temperature";
  f.suggestion =
      "for numbers comparable with other boards and reports, measure in MAXN (`sudo nvpmodel -m "
      "0`) with `sudo jetson_clocks`; to measure the deployment's own power budget, keep its mode "
      "and say which one next to every figure";
  f.numbers["maxn"] = maxn ? 1 : 0;
  f.numbers["jetson_clocks_on"] = pinned ? 1 : 0;
  out->push_back(std::move(f));
}

void BelowCeiling(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  const TelemetrySection* t = ctx.profile.sections.Find<TelemetrySection>();
  if (!t || t->sample_ns.size() < 2) return;  // a description, not samples of the runs
  std::vector<std::string> low;
  double worst = 1;
  // The clocks of what did the work: CPU clusters and memory always; the GPU when the profile
  // holds GPU activity. An accelerator idling at its floor while the CPU engine ran is no news.
  auto relevant = [&](const Channel& c) {
    if (StartsWith(c.name, "cpu clock") || StartsWith(c.name, "emc ") || StartsWith(c.name, "dmc "))
      return true;
    return ctx.profile.gpu.has_value() && StartsWith(c.name, "gpu ");
  };
  for (const Channel& c : t->channels) {
    if (c.kind != "clock" || c.max <= 0 || !relevant(c)) continue;
    const double median = telemetry::Summarize(c).median;
    if (median >= kBelowCeiling * c.max) continue;
    worst = std::min(worst, median / c.max);
    low.push_back(fmt::format("{} median {:.0f} of {:.0f} MHz ({:.0f}%)", c.name, median, c.max,
                              median / c.max * 100));
  }
  if (low.empty()) return;
  profile::Finding f;
  f.rule = "clock-below-ceiling";
  f.severity = worst < 0.6 ? profile::Severity::kWarning : profile::Severity::kInfo;
  f.title = fmt::format("{} clock(s) ran below their ceiling during the runs", low.size());
  f.evidence = Join(low, "; ");
  f.suggestion =
      "a clock under its ceiling is DVFS at work (a governor that waits for load), a power cap "
      "or thermal throttling: pin the clocks for measurement (jetson_clocks; the performance "
      "governor for cpufreq/devfreq), check the thermal zones beside them, and compare runs only "
      "at the same clocks";
  f.numbers["clocks_below"] = static_cast<double>(low.size());
  f.numbers["worst_ratio"] = worst;
  out->push_back(std::move(f));
}

// "4-7" for the CPUs of the biggest cores, "" when unknown.
std::string BigCpus(const TelemetrySection& t) {
  std::vector<int> out;
  for (const telemetry::CoreCluster& c : t.clusters)
    if (!t.IsLittle(c)) out.insert(out.end(), c.cpus.begin(), c.cpus.end());
  std::sort(out.begin(), out.end());
  return CpuRanges(out);
}

// Per thread: the samples it was seen in, those on little cores, and its moves between clusters.
struct Placement {
  int seen = 0, little = 0, moves = 0;
  std::vector<std::string> little_names, moved_between;
};

std::vector<Placement> PlacementOf(const TelemetrySection& t) {
  std::vector<Placement> out(t.threads.size());
  for (size_t k = 0; k < t.threads.size(); ++k) {
    const telemetry::CoreCluster* prev = nullptr;
    for (const auto& row : t.thread_cpus) {
      if (k >= row.size() || row[k] < 0) continue;
      const telemetry::CoreCluster* c = t.ClusterOf(row[k]);
      if (!c) continue;
      Placement& p = out[k];
      ++p.seen;
      if (t.IsLittle(*c)) {
        ++p.little;
        const std::string name = fmt::format("{} (cpu {})", c->name, row[k]);
        if (std::find(p.little_names.begin(), p.little_names.end(), name) == p.little_names.end())
          p.little_names.push_back(name);
      }
      if (prev && prev != c) {
        ++p.moves;
        const std::string pair = prev->name + " -> " + c->name;
        if (std::find(p.moved_between.begin(), p.moved_between.end(), pair) ==
            p.moved_between.end())
          p.moved_between.push_back(pair);
      }
      prev = c;
    }
  }
  return out;
}

void LittleCores(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  const TelemetrySection* t = ctx.profile.sections.Find<TelemetrySection>();
  if (!t || t->thread_cpus.empty() || !t->Heterogeneous()) return;
  const std::vector<Placement> pl = PlacementOf(*t);
  std::vector<std::string> what;
  int threads = 0, seen = 0, little = 0;
  for (size_t k = 0; k < pl.size(); ++k) {
    seen += pl[k].seen;
    little += pl[k].little;
    if (pl[k].little == 0) continue;
    ++threads;
    if (what.size() < 8)
      what.push_back(fmt::format("thread {} on {} after {} of {} runs", t->threads[k],
                                 Join(pl[k].little_names, ", "), pl[k].little, pl[k].seen));
  }
  if (threads == 0) return;
  profile::Finding f;
  f.rule = "little-cores";
  f.severity = profile::Severity::kWarning;
  f.title = fmt::format("{} thread(s) ran on the little cores", threads);
  f.evidence = Join(what, "; ") +
               (t->pinned_cpus.empty() ? "" : "; the process was pinned to cpus " + t->pinned_cpus);
  const std::string big = BigCpus(*t);
  f.suggestion =
      "a little core runs the same kernel several times slower, so these times mix core types: "
      "pin the measurement to the big cores" +
      (big.empty() ? std::string()
                   : " (`opscope profile --cpus " + big + "`, `taskset -c " + big +
                         "` for the deployed program)") +
      " with as many engine threads as there are big cores; keep the little cores for pre/post "
      "processing only when they are measured there";
  f.numbers["threads_on_little"] = threads;
  f.numbers["little_share"] = seen ? static_cast<double>(little) / seen : 0;
  out->push_back(std::move(f));
}

void ClusterMigration(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  const TelemetrySection* t = ctx.profile.sections.Find<TelemetrySection>();
  if (!t || t->thread_cpus.size() < 2 || t->clusters.size() < 2) return;
  const std::vector<Placement> pl = PlacementOf(*t);
  std::vector<std::string> what;
  int threads = 0, moves = 0;
  for (size_t k = 0; k < pl.size(); ++k) {
    if (pl[k].moves == 0) continue;
    ++threads;
    moves += pl[k].moves;
    if (what.size() < 8)
      what.push_back(fmt::format("thread {} moved {} time(s) ({})", t->threads[k], pl[k].moves,
                                 Join(pl[k].moved_between, "; ")));
  }
  if (threads == 0) return;
  profile::Finding f;
  f.rule = "cluster-migration";
  f.severity = profile::Severity::kInfo;
  f.title = fmt::format("{} thread(s) moved between core types during the runs", threads);
  f.evidence = Join(what, "; ");
  const std::string big = BigCpus(*t);
  f.suggestion =
      "runs on different core types are not comparable, and a move costs cold caches: pin the "
      "threads to one cluster" +
      (big.empty() ? std::string() : " (`--cpus " + big + "`)") +
      ", then compare the per-run times again";
  f.numbers["threads_moved"] = threads;
  f.numbers["moves"] = moves;
  out->push_back(std::move(f));
}

}  // namespace

extern const Rule kRule_little_cores = {
    "little-cores",
    "on a machine with several core types, engine threads ran on the smaller cores (the CPU "
    "each thread last ran on, sampled after every measured run)",
    LittleCores};
extern const Rule kRule_cluster_migration = {
    "cluster-migration", "a thread ran on different core types in different measured runs",
    ClusterMigration};
extern const Rule kRule_board_power_mode = {
    "board-power-mode", "a Jetson in a power mode other than MAXN, or with jetson_clocks off",
    PowerMode};
extern const Rule kRule_clock_below_ceiling = {
    "clock-below-ceiling",
    "a CPU-cluster or memory clock (the GPU's too in a GPU profile) whose median over the runs is "
    "under 90% of its ceiling",
    BelowCeiling};

}  // namespace opscope::analysis::rules
