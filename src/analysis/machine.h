// Machine ceilings: the two roofs of the roofline (peak float32 FLOP/s and memory bandwidth).
//
// `opscope machine` measures them on this machine (analysis/machine_measure.h) and stores them
// as JSON (by default $XDG_CONFIG_HOME/opscope/machine.json); users analysing a profile taken on
// another board give them by hand (--peak-gflops, --peak-gbps). The CPU model travels with the
// numbers so that ceilings measured on one machine are noticed when applied to another. A copy is
// stored in each analysed profile (Meta::machine) so the profile explains itself later.
#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "profile/profile.h"

namespace opscope::analysis {

// The struct lives in the profile layer (profile/meta.h) because a profile stores the ceilings
// it was diagnosed against (Meta::machine).
using MachineCeilings = profile::MachineCeilings;

std::string CeilingsToJson(const MachineCeilings& c);
StatusOr<MachineCeilings> CeilingsFromJson(const std::string& text, const std::string& origin);

// What identifies a CPU for its ceilings: the model name, the ISA flags that change its peak
// FLOP/s (vector widths, FMA, matrix and dot-product units; "avx2 fma sse4_2 ..." sorted), and
// the number of online CPUs.
struct CpuStamp {
  std::string model;
  std::string flags;
  int cpus = 0;
};
// Picks the compute-relevant flags out of /proc/cpuinfo's "flags" (x86) or "Features" (Arm) line,
// sorted and space-separated.
std::string RelevantCpuFlags(const std::string& cpuinfo_flags);

// Checks that stamped ceilings were measured on `here`. Hand-given ceilings ("manual") are
// never checked. A file without a stamp (older opscope) is used but unverified: Ok, and `note`
// says so. A mismatch is an error naming `origin` (the file), the measured CPU, this CPU and
// the fix.
Status CheckCeilingsCpu(const MachineCeilings& c, const CpuStamp& here, const std::string& origin,
                        std::string* note);

// The most a ceiling may vary between repeats (median below best, percent) before
// `opscope machine` refuses to store it.
inline constexpr double kMaxCeilingSpreadPct = 10.0;

// Whether freshly measured ceilings may be stored: an error saying why not (a figure varied more
// than kMaxCeilingSpreadPct between repeats, or the all-core peak came out below the one-core
// peak: both mean other processes competed for the CPU) and what to do.
Status CheckCeilingsStable(const MachineCeilings& c);

// "" when the ceilings were measured on `cpu_model` (or either is unknown); otherwise a sentence
// for the user saying which machine the ceilings come from.
std::string CeilingsMismatch(const MachineCeilings& c, const std::string& cpu_model);

}  // namespace opscope::analysis
