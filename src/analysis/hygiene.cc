#include "analysis/hygiene.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "base/strings.h"

namespace opscope::analysis {

ThrottleReport DetectThrottling(const std::vector<profile::ClockSample>& clocks) {
  ThrottleReport r;
  std::vector<profile::ClockSample> m;
  for (const auto& c : clocks)
    if (c.run >= 0) m.push_back(c);
  std::sort(m.begin(), m.end(), [](const auto& a, const auto& b) { return a.run < b.run; });
  if (m.size() < 2) return r;
  const auto& first = m.front();
  const auto& last = m.back();
  r.have_freq = first.cpu_mhz > 0 && last.cpu_mhz > 0;
  r.have_temp = first.temp_c > 0 && last.temp_c > 0;
  if (r.have_freq) {
    r.first_mhz = first.cpu_mhz;
    r.last_mhz = last.cpu_mhz;
    r.min_mhz = first.cpu_mhz;
    for (const auto& c : m)
      if (c.cpu_mhz > 0) r.min_mhz = std::min(r.min_mhz, c.cpu_mhz);
    r.freq_drop_pct = (r.first_mhz - r.last_mhz) / r.first_mhz * 100.0;
  }
  if (r.have_temp) {
    r.first_temp_c = first.temp_c;
    r.last_temp_c = last.temp_c;
    r.max_temp_c = first.temp_c;
    for (const auto& c : m) r.max_temp_c = std::max(r.max_temp_c, c.temp_c);
    r.temp_rise_c = r.last_temp_c - r.first_temp_c;
  }
  bool freq_drop = r.have_freq && r.freq_drop_pct > kThrottleFreqDropPct;
  bool heat = r.have_temp && r.temp_rise_c >= kThrottleTempRiseC;
  r.throttled = freq_drop || heat;
  for (const auto& c : m) {
    bool slow = r.have_freq && c.cpu_mhz > 0 &&
                (r.first_mhz - c.cpu_mhz) / r.first_mhz * 100.0 > kThrottleFreqDropPct;
    bool hot = r.have_temp && c.temp_c - r.first_temp_c >= kThrottleTempRiseC;
    if (slow || hot) r.affected_runs.push_back(c.run);
  }
  if (!r.have_freq && !r.have_temp) {
    r.summary = "clocks and temperature not exposed by this machine: throttling cannot be checked";
  } else if (r.throttled) {
    std::vector<std::string> parts;
    if (freq_drop)
      parts.push_back(
          fmt::format("CPU frequency fell from {:.0f} MHz (first run) to {:.0f} MHz "
                      "(last run), -{:.1f}%",
                      r.first_mhz, r.last_mhz, r.freq_drop_pct));
    if (heat)
      parts.push_back(fmt::format("temperature rose from {:.1f} °C to {:.1f} °C (+{:.1f} °C)",
                                  r.first_temp_c, r.last_temp_c, r.temp_rise_c));
    r.summary = "throttling: " + Join(parts, "; ") +
                fmt::format("; {} of {} runs affected", r.affected_runs.size(), m.size());
  } else {
    r.summary = fmt::format("clocks steady over {} runs", m.size());
    if (r.have_freq) r.summary += fmt::format(" ({:.0f} → {:.0f} MHz", r.first_mhz, r.last_mhz);
    if (r.have_temp)
      r.summary += fmt::format("{}{:.1f} → {:.1f} °C", r.have_freq ? ", " : " (", r.first_temp_c,
                               r.last_temp_c);
    r.summary += ")";
  }
  return r;
}

RepeatReport AnalyzeRepeats(std::span<const double> runs_ms) {
  RepeatReport r;
  r.stats = ComputeStats(runs_ms);
  for (size_t i : FindOutliers(runs_ms)) r.outlier_runs.push_back(static_cast<int>(i));
  // Fewer than 3 runs say nothing about the spread (one run has a CV of 0): no verdict, rather
  // than a "stable" no measurement earned.
  if (r.stats.n < 3) {
    r.verdict = "no estimate";
    r.words = fmt::format("{} run{}, median {}: too few for a noise estimate (3 or more)",
                          r.stats.n, r.stats.n == 1 ? "" : "s", HumanMs(r.stats.median));
    return r;
  }
  r.verdict = VarianceVerdict(r.stats.cv);
  r.words = fmt::format("{} runs, median {}, trimmed mean {}, CV {:.1f}%: {}", r.stats.n,
                        HumanMs(r.stats.median), HumanMs(r.stats.trimmed_mean), r.stats.cv * 100,
                        r.verdict);
  if (!r.outlier_runs.empty()) {
    std::vector<std::string> idx;
    for (int i : r.outlier_runs) idx.push_back(std::to_string(i));
    r.words += fmt::format("; outlier run(s) {}", Join(idx, ", "));
  }
  return r;
}

static std::string OptFlag(const std::string& producer) {
  std::string last;
  for (const std::string& tok : Split(producer, ' ', true))
    if (StartsWith(tok, "-O")) last = tok;  // the last -O wins, as on a compiler command line
  return last;
}

BuildVerdict ClassifyProducers(const std::vector<std::string>& producers) {
  BuildVerdict v;
  std::map<std::string, int> votes;  // opt level → units
  std::map<std::string, std::string> example;
  std::string flagless;
  for (const std::string& p : producers) {
    // Assembler units ("GNU AS 2.40") carry no optimisation flags.
    if (p.empty() || StartsWith(p, "GNU AS") || p.find("as ") == 0) continue;
    // Clang records only its version unless built with -grecord-command-line: no evidence.
    if (p.find(" -") == std::string::npos) {
      flagless = p;
      continue;
    }
    std::string o = OptFlag(p);
    if (o.empty()) o = "none";
    votes[o]++;
    example.emplace(o, p);
  }
  if (votes.empty()) {
    v.kind = "unknown";
    v.evidence = flagless.empty()
                     ? "unknown (no DWARF producer: build with -g to let opscope check the flags)"
                     : "unknown (the DWARF producer \"" + flagless +
                           "\" records no compiler flags; with clang add -grecord-command-line)";
    return v;
  }
  auto best = std::max_element(votes.begin(), votes.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  v.opt_level = best->first;
  v.kind =
      (v.opt_level == "-O0" || v.opt_level == "none" || v.opt_level == "-Og") ? "debug" : "release";
  int total = 0;
  for (const auto& [k, n] : votes) total += n;
  v.evidence =
      fmt::format("{} of {} compilation units built with {} (\"{}\")", best->second, total,
                  v.opt_level == "none" ? "no -O flag" : v.opt_level, example[best->first]);
  return v;
}

BuildVerdict ClassifyProducers(const StatusOr<std::vector<std::string>>& producers) {
  if (producers.ok()) return ClassifyProducers(*producers);
  BuildVerdict v;
  v.kind = "unknown";
  v.evidence = producers.status().message();
  return v;
}

BuildVerdict ClassifyBuildType(const std::string& t) {
  BuildVerdict v;
  v.evidence = "CMAKE_BUILD_TYPE=" + (t.empty() ? std::string("(none)") : t);
  if (t == "Release" || t == "RelWithDebInfo" || t == "MinSizeRel") {
    v.kind = "release";
    v.opt_level = t == "MinSizeRel" ? "-Os" : t == "Release" ? "-O3" : "-O2";
  } else {
    v.kind = "debug";
    v.opt_level = t == "Debug" ? "-O0" : "none";
  }
  return v;
}

void BuildVerdictToMeta(const BuildVerdict& v, const std::string& path, profile::Meta* meta) {
  meta->target = profile::TargetBuild{path, v.kind, v.opt_level, v.evidence};
}

profile::Verdicts ComputeVerdicts(const profile::Profile& p) {
  profile::Verdicts v;
  v.ceilings = false;
  for (const auto& op : p.ops) v.ceilings = v.ceilings || op.roofline.has_value();
  if (!p.e2e.runs_ms.empty()) {
    const RepeatReport r = AnalyzeRepeats(p.e2e.runs_ms);
    v.noise = r.verdict;
    v.cv = std::isfinite(r.stats.cv) && r.stats.cv >= 0 ? r.stats.cv : 0;
    v.outlier_runs = r.outlier_runs;
    v.noise_words = r.words;
  }
  const ThrottleReport t = DetectThrottling(p.clocks);
  v.throttled = t.throttled;
  v.freq_drop_pct = std::isfinite(t.freq_drop_pct) ? t.freq_drop_pct : 0;
  v.temp_rise_c = std::isfinite(t.temp_rise_c) ? t.temp_rise_c : 0;
  v.throttling = t.summary;
  const BuildVerdict b = ClassifyBuildType(p.meta.build_type);
  v.build = b.kind;
  v.build_evidence = b.evidence;
  return v;
}

profile::Verdicts VerdictsOf(const profile::Profile& p) {
  return p.verdicts ? *p.verdicts : ComputeVerdicts(p);
}

}  // namespace opscope::analysis
