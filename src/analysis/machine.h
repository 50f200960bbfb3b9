// Machine ceilings: the two roofs of the roofline (peak float32 FLOP/s and memory bandwidth).
//
// `opscope machine` measures them on this machine (analysis/machine_measure.h) and stores them
// as JSON (by default $XDG_CONFIG_HOME/opscope/machine.json); users analysing a profile taken on
// another board give them by hand (--peak-gflops, --peak-gbps). The CPU model travels with the
// numbers so that ceilings measured on one machine are noticed when applied to another. A copy is
// written into each analysed profile's Meta::extra under "machine.*" keys so the profile explains
// itself later.
#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "profile/profile.h"

namespace opscope::analysis {

struct MachineCeilings {
  double peak_gflops_all = 0;  // float32 FLOP/s with every core busy, GFLOP/s
  double peak_gflops_one = 0;  // one core
  // Integer ceiling of the engine's quantized kernels: int16-pair multiply-adds into int32
  // (vpmaddwd + vpaddd on x86), G integer ops/s (a multiply-add = 2), all cores / one core.
  // 0 when not measured (files written before it existed); int8 ops then have no compute roof.
  double peak_gops_int8_all = 0;
  double peak_gops_int8_one = 0;
  double triad_gbps = 0;  // STREAM-style triad on arrays much larger than the LLC, GB/s
  double llc_gbps = 0;    // the same triad on arrays that fit in the last-level cache
  double llc_bytes = 0;   // last-level cache size used for the LLC level, 0 if unknown
  int threads = 0;        // threads used for the "all" figures
  std::string cpu_model;
  std::string measured_at;  // ISO 8601 UTC, "" for hand-given ceilings
  std::string method;       // "measured" or "manual" (or "measured+manual")
  // The stamp of the CPU that was measured (with cpu_model): its compute-relevant ISA flags
  // (CpuStamp::flags) and online CPUs. Files written before the stamp existed have neither.
  std::string cpu_flags;
  int cpus = 0;
  // `machine --cpus`: the CPUs the measurement was pinned to ("4-7"; "" for all) and their core
  // types ("4x Cortex-A76 (cpus 4-7, capacity 1024)"; "" where the machine does not say). On a
  // big.LITTLE board, one file per cluster holds that cluster's ceilings.
  std::string pinned_cpus;
  std::string core_types;
  // Noise of the measurement: for each figure, how far the median repeat fell below the best one,
  // percent (the largest of the four figures). 0 when not measured.
  double spread_pct = 0;
  std::string spread_of;  // which figure that was ("peak float32, all cores", ...)
  int repeats = 0;        // timed repeats per figure
  // How the ceilings were checked against the CPU they are applied to (ResolveCeilings):
  // "" (not checked), "same CPU", "unverified: ..." for unstamped files.
  std::string verification;

  // A roofline needs at least one compute roof and one memory roof.
  bool Usable() const { return (peak_gflops_all > 0 || peak_gflops_one > 0) && triad_gbps > 0; }
  // The compute roof for a workload that used `threads` threads (1 → the one-core figure).
  double PeakGflops(int threads) const;
  // The integer roof for `threads` threads, 0 if unknown.
  double PeakGopsInt8(int threads) const;
};

std::string CeilingsToJson(const MachineCeilings& c);
StatusOr<MachineCeilings> CeilingsFromJson(const std::string& text, const std::string& origin);

// Meta::extra keys "machine.peak_gflops_all", ... (strings, full precision).
void CeilingsToMeta(const MachineCeilings& c, profile::Meta* meta);
std::optional<MachineCeilings> CeilingsFromMeta(const profile::Meta& meta);

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
