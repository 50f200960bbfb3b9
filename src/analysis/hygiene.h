// Measurement hygiene: the checks an expert does before believing a number.
//
//  - Throttling: per-run clock/temperature samples (Profile::clocks). A frequency drop of more
//    than kThrottleFreqDropPct between the first and the last measured run, or a temperature rise
//    of kThrottleTempRiseC or more, is reported as throttling; runs whose frequency is more than
//    kThrottleFreqDropPct below the first run's, or whose temperature is kThrottleTempRiseC above
//    it, are marked as affected.
//  - Repeats: outliers by Tukey's far-out fences, trimmed mean and median preferred, the
//    coefficient of variation with a plain-words verdict (base/stats.h VarianceVerdict).
//  - Build type: opscope's own CMAKE_BUILD_TYPE and, for a profiled program, the optimisation
//    flags of its compilation units' DW_AT_producer strings (read by collect/target_build.h).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "base/stats.h"
#include "base/status.h"
#include "profile/profile.h"

namespace opscope::analysis {

inline constexpr double kThrottleFreqDropPct = 5.0;
inline constexpr double kThrottleTempRiseC = 10.0;

struct ThrottleReport {
  bool have_freq = false, have_temp = false;
  bool throttled = false;
  double first_mhz = 0, last_mhz = 0, min_mhz = 0;
  double first_temp_c = 0, last_temp_c = 0, max_temp_c = 0;
  double freq_drop_pct = 0;  // (first - min) / first * 100 over measured runs
  double temp_rise_c = 0;    // max - first
  std::vector<int> affected_runs;
  std::string summary;  // one sentence, "" when nothing was sampled
};
// Warm-up samples (run < 0) are ignored.
ThrottleReport DetectThrottling(const std::vector<profile::ClockSample>& clocks);

struct RepeatReport {
  Stats stats;
  std::vector<int> outlier_runs;  // indices into the measured runs
  std::string verdict;            // "stable", "noisy", "unstable"
  std::string words;  // "12 runs, median 4.31 ms, trimmed mean 4.33 ms, CV 1.2%: stable"
};
RepeatReport AnalyzeRepeats(std::span<const double> runs_ms);

struct BuildVerdict {
  std::string kind;       // "release", "debug", "unknown"
  std::string opt_level;  // "-O2", "-O0", "none" (no -O flag), "" if unknown
  std::string evidence;   // the producer string or build type that decided it
};
// From DW_AT_producer strings of a binary's compilation units ("GNU C++17 12.2.0 -mtune=generic
// -march=x86-64 -g -O0"). The verdict follows the majority of the units that name a language
// (assembler units are ignored); no producer → "unknown (no DWARF producer)".
BuildVerdict ClassifyProducers(const std::vector<std::string>& producers);
// The same from collect::ReadDwarfProducers' result: an error (not ELF, unreadable) becomes
// kind "unknown" with the error message as evidence.
BuildVerdict ClassifyProducers(const StatusOr<std::vector<std::string>>& producers);
// opscope's own CMAKE_BUILD_TYPE: "Debug" or "" → debug; Release/RelWithDebInfo/MinSizeRel →
// release.
BuildVerdict ClassifyBuildType(const std::string& cmake_build_type);

// The whole-profile verdicts Diagnose stores (profile::Verdicts): noise, throttling, build.
// Renderers call it for profiles written before they were stored.
profile::Verdicts ComputeVerdicts(const profile::Profile& p);
// p.verdicts when stored, else ComputeVerdicts(p).
profile::Verdicts VerdictsOf(const profile::Profile& p);

// Stores the target's verdict (from `stat`/`record`/`run`) in meta.target for the rules and the
// reports; `path` is the executable it was read from ("" if unresolved).
void BuildVerdictToMeta(const BuildVerdict& v, const std::string& path, profile::Meta* meta);

}  // namespace opscope::analysis
