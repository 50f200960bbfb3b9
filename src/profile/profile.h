// The Profile: the hub every source writes and every analysis and reporter reads.
//
// Sources (the engine's op observer, `stat`, `record`, `run`, the GPU tracer, importers) each
// fill the sections they know and leave the rest empty; reporters never ask where a profile came
// from. Units are part of every field name (`_ms`, `_ns`, `_bytes`) or documented beside it.
// Times on a timeline (`start_ns`) are CLOCK_MONOTONIC nanoseconds (see base/clock.h).
//
// Every source ends with Validate(), which checks the invariants reporters rely on (indices in
// range, no negative times, shares summing to at most 1, ...). The JSON form is the contract with
// other tools; it is documented in docs/profile-format.md and versioned by kSchema.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/stats.h"
#include "base/status.h"
#include "profile/findings.h"
#include "profile/gpu.h"
#include "profile/meta.h"
#include "profile/ranges.h"
#include "profile/samples.h"
#include "profile/section_data.h"
#include "profile/stat.h"

namespace opscope::profile {

inline constexpr const char kSchema[] = "opscope.profile/1";

struct Meta {
  std::string kind;          // "profile", "stat", "record", "run", "gpu", "import/<format>"
  std::string tool_version;  // opscope's version
  std::string build_type;    // opscope's own CMAKE_BUILD_TYPE ("Release", "Debug", ...)
  std::string source;        // the model path, or the profiled command line
  std::string created;       // ISO 8601 UTC
  std::string host, kernel, arch, cpu_model;
  int logical_cpus = 0;
  std::string governor;  // cpufreq governor, "" if unknown
  double cpu_mhz = 0;    // frequency at start, 0 if unknown
  int threads = 0;       // threads the engine used (profile), 0 if not applicable
  int warmup = 0;
  int runs = 0;
  // Every way this profile is less than it was asked to be, in words a user understands:
  // "cycles unavailable (no hardware PMU): using cpu-clock", "counters multiplexed (62%)", ...
  std::vector<std::string> degradations;
  // The ceilings Diagnose applied (the roofline's roofs); absent when none were known.
  std::optional<MachineCeilings> machine;
  std::optional<TargetBuild> target;       // the profiled program's build (stat, record, run)
  std::string attached;                    // `run -p`/`record -p`: "pid 1234 (pipeline)"
  std::optional<ImportProvenance> import;  // importers
  // Free-form, source-specific key/values that no other layer reads (docs/profile-format.md
  // lists every key).
  std::map<std::string, std::string> extra;
};

// End-to-end latency of the measured (non-warm-up) runs.
struct E2E {
  std::vector<double> runs_ms;
  Stats stats;                  // over runs_ms
  double throughput_per_s = 0;  // 1000 / median
};

// One ONNX node (or, for importers, one layer/kernel row of the foreign tool).
// Where the roofline puts an op (analysis/roofline.h has the rule).
enum class BoundClass { kCompute, kMemory, kLatency, kDataMovement, kUnknown };
// "compute-bound", "memory-bound", "latency-bound", "data-movement", "unknown": the JSON names.
const char* BoundClassName(BoundClass c);
bool ParseBoundClass(const std::string& name, BoundClass* out);

// The roofline's verdict on one op, stored by analysis::Diagnose when the machine's ceilings are
// known, so every renderer and every script reads one answer (JSON: the op's "bound",
// "intensity", "pct_of_roof", "attainable_gflops", "expected_ms" and "measured_over_expected";
// docs/profile-format.md). Absent when the profile was diagnosed without ceilings.
struct OpRoofline {
  BoundClass bound = BoundClass::kUnknown;
  double intensity = 0;          // FLOP (integer ops of a quantized kernel) per byte
  double attainable_gflops = 0;  // min(peak, intensity x bandwidth): the roof over the op
  double pct_of_roof = 0;        // achieved / the roof that limits it, percent
  // What the op would take at that roof, per run: max(work / peak, bytes / bandwidth).
  double expected_ms = 0;
  double measured_over_expected = 0;  // trimmed mean / expected_ms (0 when expected_ms is 0)
};

// How an op ran: "executed" as its own step; "fused" inside another op's step (its time is a part
// of that step's, see OpRecord::attribution); "folded" at load time (constant folding, no run
// time). The JSON names are OpStatusName's.
enum class OpStatus { kExecuted, kFused, kFolded };
const char* OpStatusName(OpStatus s);
bool ParseOpStatus(const std::string& name, OpStatus* out);

struct OpRecord {
  std::string name;
  std::string op_type;
  std::string domain;                              // "" for the default ONNX domain
  int index = 0;                                   // position in the graph's node order
  std::vector<std::vector<int64_t>> input_shapes;  // one entry per input ({} for a scalar)
  std::vector<std::vector<int64_t>> output_shapes;
  double flops = 0;  // floating-point operations per run (multiply-add = 2)
  double bytes = 0;  // compulsory traffic per run: inputs read + outputs written, bytes
  // Integer operations per run of a quantized kernel (int8 multiply-add into int32 = 2); JSON
  // key "ops", written only when non-zero.
  double int_ops = 0;
  std::vector<double> runs_ms;  // time per measured run
  Stats stats;                  // over runs_ms
  double share = 0;             // of the sum of all ops' trimmed means, 0..1
  // Executed as its own step; fused: ran inside step `step` together with `fused_with`, its time
  // a part of that step's (see `attribution`); folded: computed at load time, zero run time.
  OpStatus status = OpStatus::kExecuted;
  std::string step;                     // name of the execution step that ran it
  std::vector<std::string> fused_with;  // other source nodes of the same step
  // A row that is a runtime's layer rather than an ONNX node (an import without --model): the
  // ONNX nodes the layer was made of, as far as the file tells (TensorRT's fused names, layer
  // info Metadata); empty when unknown (and omitted in JSON). `diff` compares layers made of
  // the same nodes as groups (analysis/diff.h).
  std::vector<std::string> source_nodes;
  std::string attribution = "measured";  // how runs_ms was obtained
  // Memory order the engine kept this Conv's input/output in when it differs from ONNX's NCHW
  // (channels-last regions), e.g. "NHWC in, NCHW out"; empty otherwise (and omitted in JSON).
  std::string layout;
  std::map<std::string, double> counters;  // event -> value per run (mean), scaled
  std::optional<OpRoofline> roofline;      // analysis::Diagnose, with ceilings
};

// One timed occurrence of an op on a thread, for timelines (Chrome trace).
struct OpEvent {
  int32_t op = 0;   // index into Profile::ops
  int32_t run = 0;  // measured-run number, 0-based
  int32_t tid = 0;  // OS thread id that ran it
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
};

// opscope's own cost, measured in the same session.
struct Overhead {
  double baseline_median_ms = 0;  // observer off
  double observed_median_ms = 0;  // observer on (what the per-op numbers come from)
  double pct = 0;                 // (observed - baseline) / baseline * 100
  double counters_pct = 0;        // extra cost of per-op counters, 0 if not used
  std::string method;             // how it was measured, in words
  // False when the difference is inside the run-to-run noise: the 95% interval of the median
  // paired difference (observed run i minus baseline run i, % of the baseline median) contains 0.
  bool measurable = true;
  double noise_low_pct = 0, noise_high_pct = 0;  // that interval (0, 0 when not measured)
};

// One reading of clocks and temperature taken during a measured run (for throttling detection).
// Sources sample base/host.h's ReadThermalSample() at the end of each run, warm-up included
// (warm-up runs have run < 0: -warmup..-1). 0 means "not exposed by this board".
struct ClockSample {
  int32_t run = 0;
  double cpu_mhz = 0;
  double temp_c = 0;
};

// analysis::Diagnose's verdicts on the whole profile (JSON "verdicts", docs/profile-format.md), so
// every renderer and every script reads one answer instead of deriving it again. Absent in
// profiles written before they were stored (renderers then derive them).
struct Verdicts {
  bool ceilings = false;  // diagnosed against machine ceilings: ops carry their roofline verdict
  // Run-to-run noise of the end-to-end times: "stable", "noisy", "unstable"; "" without runs.
  std::string noise;
  double cv = 0;                  // coefficient of variation of the measured runs, 0..
  std::vector<int> outlier_runs;  // far-out runs (Tukey, k = 3), indices into e2e.runs_ms
  std::string noise_words;        // "12 runs, median 4.31 ms, trimmed mean 4.33 ms, CV 1.2%: ..."
  // Clocks and temperature over the measured runs (Profile::clocks).
  bool throttled = false;
  double freq_drop_pct = 0;  // (first - min) / first, percent
  double temp_rise_c = 0;    // max - first
  std::string throttling;    // one sentence; "" when nothing was sampled
  // opscope's own build ("release", "debug", "unknown") and why.
  std::string build;
  std::string build_evidence;
};

struct Profile {
  Meta meta;
  E2E e2e;
  std::vector<OpRecord> ops;
  std::vector<OpEvent> op_events;
  std::optional<Overhead> overhead;
  std::optional<StatSection> stat;       // opscope stat
  std::optional<SampleSection> samples;  // opscope record / profile --sample
  std::vector<Range> ranges;             // opscope run / NVTX
  std::optional<GpuSection> gpu;         // opscope gpu
  std::vector<Finding> findings;         // analysis: advice with evidence
  std::vector<ClockSample> clocks;       // per-run clock/temperature samples (hygiene)
  std::optional<Verdicts> verdicts;      // analysis::Diagnose
  SectionSet sections;                   // the typed sections (memory, ...): section_data.h
};

// Checks the invariants every reporter may rely on. Sources call it last; loaders call it on
// what they read. The message names the first broken invariant.
Status Validate(const Profile& p);

// Fills the Meta fields every source shares: opscope's version and build type, creation time,
// host, kernel, architecture, CPU model and count, governor and frequency.
void FillHostMeta(Meta& meta);

// Recomputes derived fields: per-op Stats and share from runs_ms, e2e stats and throughput.
void FinalizeStats(Profile& p);

}  // namespace opscope::profile
