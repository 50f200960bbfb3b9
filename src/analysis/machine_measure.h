// Measuring this machine's ceilings for `opscope machine` (the one part of analysis/ that does
// work rather than compute over a Profile).
//
//  - Peak float32 FLOP/s: every thread runs an FMA loop over kFmaAccumulators independent vector
//    accumulators (enough to cover FMA latency × issue width on current x86 and Arm cores), built
//    once per instruction set (target_clones: AVX-512, AVX2+FMA, baseline) so the binary stays
//    portable. Best of `repeats` timed passes.
//  - Memory bandwidth: a STREAM-style triad a[i] = b[i] + s*c[i] on double arrays, counted as 24
//    bytes per element (two reads, one write; write-allocate traffic is not counted, as in
//    STREAM), threads first-touch their own slice; once with arrays >> LLC (DRAM level) and once
//    with arrays that fit in the LLC. Best of `repeats`.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "analysis/machine.h"
#include "base/status.h"

namespace opscope::analysis {

struct MeasureOptions {
  int threads = 0;                  // 0: all online CPUs
  double seconds_per_test = 0.25;   // target duration of one timed pass
  int repeats = 5;                  // best of
  size_t dram_bytes_per_array = 0;  // 0: max(8 × LLC, 64 MiB)
  // Called before each of the six figures: its name, how many are done, of how many.
  std::function<void(const char* figure, int done, int total)> progress;
};

// Peak float32 GFLOP/s with `threads` threads (the best repeat). `spread_pct`, when given,
// receives how far the median repeat fell below the best one, percent (the noise check).
double MeasurePeakGflops(int threads, double seconds, int repeats, double* spread_pct = nullptr);
// Peak integer G ops/s of the engine's int16-pair multiply-add (see machine_measure.cc), same
// protocol as MeasurePeakGflops.
double MeasurePeakGopsInt8(int threads, double seconds, int repeats, double* spread_pct = nullptr);
// Triad GB/s with `threads` threads over arrays of `bytes_per_array` bytes each (as above).
double MeasureTriadGbps(size_t bytes_per_array, int threads, double seconds, int repeats,
                        double* spread_pct = nullptr);
// This CPU's stamp: model, compute-relevant flags from /proc/cpuinfo, online CPUs.
CpuStamp ThisCpuStamp();
// Last-level cache size from sysfs (the largest cache index of cpu0), 0 if unknown.
size_t LastLevelCacheBytes();

// Where `opscope machine` stores its ceilings: $XDG_CONFIG_HOME/opscope/machine.json, else
// $HOME/.config/opscope/machine.json ("" when neither variable is set).
std::string DefaultMachineFile();
StatusOr<MachineCeilings> LoadMachineFile(const std::string& path);
// Creates the folder when needed; writes atomically.
Status SaveMachineFile(const MachineCeilings& c, const std::string& path);

// The ceilings a command should use. `machine_file` (--machine) must exist when given; otherwise
// the default file is used when present. Hand-given peaks (> 0) override or replace the stored
// ones (method "manual" / "measured+manual"). nullopt: no ceilings known (a roofline is then
// not possible; the caller says so once). Stored ceilings are checked against `here` (null:
// ThisCpuStamp()) with CheckCeilingsCpu: an error on another CPU; an unstamped file is used with
// `verification` "unverified: ..." (the caller shows it).
StatusOr<std::optional<MachineCeilings>> ResolveCeilings(const std::string& machine_file,
                                                         double peak_gflops, double peak_gbps,
                                                         const CpuStamp* here = nullptr);

// Runs all four measurements and fills cpu_model, the CPU stamp, threads, the spread (noise),
// measured_at, method="measured". Does not judge the noise: see CheckCeilingsStable.
MachineCeilings MeasureMachine(const MeasureOptions& opts);

}  // namespace opscope::analysis
