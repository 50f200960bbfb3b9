// The typed parts of a profile's Meta that more than one layer reads: the machine ceilings it
// was diagnosed against, how the profiled program was built, the process an attached span came
// from, and where an imported profile came from. They used to travel as strings in
// Meta::extra ("machine.*", "target.*", "attached", "import.*") and were parsed back by each
// reader; profiles written that way still load (UpgradeLegacyMeta moves them here).
//
// Meta::extra keeps only free-form, source-specific keys that no other layer reads; each is
// documented in docs/profile-format.md (tests/meta_keys_documented.py checks that).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace opscope::profile {

// The two roofs of the roofline: peak arithmetic and memory bandwidth, as `opscope machine`
// measures them (analysis/machine.h) or a user gives them. Stored whole in the profile (JSON
// meta.machine) so that a profile explains its roofline verdicts later.
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
  // (analysis::CpuStamp::flags) and online CPUs. Files written before the stamp existed have
  // neither.
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
  // "" (not checked), "same CPU", "unverified: ..." for unstamped files. Not in machine files.
  std::string verification;

  // A roofline needs at least one compute roof and one memory roof.
  bool Usable() const { return (peak_gflops_all > 0 || peak_gflops_one > 0) && triad_gbps > 0; }
  // The compute roof for a workload that used `threads` threads (1 → the one-core figure).
  double PeakGflops(int threads) const;
  // The integer roof for `threads` threads, 0 if unknown.
  double PeakGopsInt8(int threads) const;
};

// Every field of MachineCeilings that a machine file stores, for X-macro JSON conversions
// (verification is the profile's, not the file's).
// clang-format off
#define OPSCOPE_CEILING_FILE_FIELDS(X)                                                         \
  X(peak_gflops_all) X(peak_gflops_one) X(peak_gops_int8_all) X(peak_gops_int8_one)           \
  X(triad_gbps) X(llc_gbps) X(llc_bytes) X(threads) X(cpu_model) X(measured_at) X(method)      \
  X(cpu_flags) X(cpus) X(spread_pct) X(spread_of) X(repeats) X(pinned_cpus) X(core_types)
// clang-format on

// How the profiled program (not opscope) was built, from its DWARF producers
// (analysis::ClassifyProducers): `stat`, `record` and `run` fill it. JSON meta.target.
struct TargetBuild {
  std::string path;       // the executable that was classified, "" if it could not be resolved
  std::string kind;       // "release", "debug", "unknown"
  std::string opt_level;  // "-O2", "-O0", "none" (no -O flag), "" if unknown
  std::string evidence;   // the producer string or error that decided it
};

// Where an imported profile came from, and how well its rows joined the model (import
// --model). JSON meta.import.
struct ImportProvenance {
  std::string format;                  // the importer's name ("ort", "tensorrt", ...)
  std::vector<std::string> files;      // the file(s) read, in the order given
  std::string model;                   // --model, "" when not joined
  int64_t rows = 0;                    // rows of the file that were joined
  int64_t matched_rows = 0;            // of those, rows that match a node of the model
  double matched_share = 0;            // their share of the row time, 0..1
  int64_t model_nodes = 0;             // nodes of the model
  int64_t model_nodes_timed = 0;       // of those, nodes that got time
  std::vector<std::string> unmatched;  // "'row' 4.2%" for the largest unmatched rows
};

struct Meta;
// Moves the legacy string keys of Meta::extra ("machine.*", "target.*", "attached",
// "import.*", written before these were typed) into the typed fields, and erases them.
void UpgradeLegacyMeta(Meta* meta);

}  // namespace opscope::profile
