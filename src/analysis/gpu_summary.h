// What `opscope gpu` reports, computed from a Profile's GPU section and ranges: nvprof-style
// summaries, time per layer, copy analysis, idle and waiting time, and the findings.
//
// Pure functions over a Profile (no I/O), so a saved or imported profile gives the same report.
//
// Iterations. Several answers are per iteration ("the same 1 MB copy every iteration", "the GPU
// is idle 40% of each iteration"). An iteration is an instance of a top-level NVTX range: the
// one named by the user (--iteration-range), else the top-level range name that occurs most
// often (at least twice). Without one, the whole traced span counts as one iteration and the
// repeated-copy rule falls back to "same size and direction at least kMinRepeats times".
//
// Repeated copies. A host-to-device copy of one size, present in (nearly) every iteration, is
// flagged when the tracer's content fingerprints say the bytes were the same each time (at
// least kRepeatedCopyIterationShare of the fingerprinted copies carry one content), or when
// there are no fingerprints (then it is a candidate matched by size and direction only). Same
// size with changing content is an input, and is not flagged.
//
// Host blocked vs. busy. The host is "blocked" while a thread waits in a CUDA synchronization
// (CUPTI's synchronization records) or in a synchronous cudaMemcpy; any other time is counted
// as CPU work. Within an iteration, GPU-busy time (the union of kernels, copies and memsets)
// against host-blocked time splits the iteration into CPU only (the GPU waits for the CPU),
// GPU only (the CPU waits for the GPU), overlapped, and both waiting (launch latency, driver).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profile/profile.h"

// The terminal form of a GpuSummary is report/gpu_table.h.

namespace opscope::analysis {

inline constexpr int kMinRepeats = 3;
inline constexpr int64_t kMinRepeatedCopyBytes = 64 * 1024;
inline constexpr double kRepeatedCopyIterationShare = 0.9;

struct SummaryOptions {
  std::string iteration_range;  // "" = detect
  int64_t gap_threshold_ns = 10000;
};

struct ActivityRow {
  std::string name;
  std::string type;  // "kernel", "memcpy", "memset", or the API ("runtime", "driver")
  int64_t calls = 0;
  double total_ns = 0, min_ns = 0, max_ns = 0, avg_ns = 0;
  double pct = 0;  // of the table's total, 0..100
};

struct LayerRow {
  std::string name;       // innermost NVTX range; "(no range)" for the rest
  int64_t instances = 0;  // range instances that launched at least one kernel or copy
  int64_t kernels = 0;
  double kernel_ns = 0;  // GPU time of the kernels launched in it
  double copy_ns = 0;    // GPU time of the copies issued in it
  double pct = 0;        // kernel_ns of all kernel time, 0..100
  double range_ns = 0;   // CPU wall time of those instances
};

struct CopyDirection {
  std::string kind;
  int64_t count = 0, bytes = 0;
  double ns = 0;
  double gbps = 0;  // bytes / copy time
  int64_t pageable_count = 0, pageable_bytes = 0;
  double pageable_gbps = 0, pinned_gbps = 0;  // 0 when there are none of that kind
};

struct RepeatedCopy {
  std::string kind;
  int64_t bytes_each = 0;
  int64_t count = 0;
  int64_t iterations_with = 0;  // iterations that contain at least one
  double total_ns = 0;
  bool pageable = false;      // at least one of them from pageable memory
  int64_t fingerprinted = 0;  // copies whose host bytes the tracer fingerprinted
  int64_t same_content = 0;   // of those, how many carry the most common content
};

struct IdleGaps {
  int64_t span_ns = 0;  // first GPU activity start to last end
  int64_t busy_ns = 0;  // union of GPU activity
  int64_t gaps = 0;     // gaps longer than the threshold
  int64_t gap_ns = 0;   // their total
  int64_t largest_gap_ns = 0;
  int64_t threshold_ns = 0;
};

struct HostWaiting {
  int64_t sync_ns = 0;  // in CUDA synchronization (all threads)
  int64_t sync_calls = 0;
  std::vector<std::pair<std::string, int64_t>> sync_by_type;  // type -> ns
  int64_t sync_copy_ns = 0;                                   // in synchronous cudaMemcpy* calls
  int64_t sync_copy_calls = 0;
};

struct IterationSplit {
  std::string range;  // "" when the whole span is one iteration
  int64_t iterations = 0;
  double window_ns = 0;  // mean iteration length
  double cpu_only_ns = 0, gpu_only_ns = 0, overlap_ns = 0, both_wait_ns = 0;  // means
};

// One kernel name's throughput under `--metrics`: figures averaged over its measured launches,
// weighted by their duration under replay.
struct KernelThroughputRow {
  std::string name;
  int64_t launches = 0;    // launches with metrics
  double duration_ns = 0;  // their total duration under replay
  double pct = 0;          // of the measured kernels' total duration, 0..100
  double sm_pct = -1, memory_pct = -1, dram_pct = -1, achieved_occupancy_pct = -1;  // -1 unknown
  double theoretical_occupancy = 0;  // 0..1, of the first launch (0 if unknown)
  int32_t registers_per_thread = 0;
  int64_t shared_bytes_per_block = 0;  // static + dynamic, of the first launch
  std::string bound;                   // ClassifyKernelBound of the averages
  bool low_occupancy = false;          // latency-bound with low achieved occupancy
};

struct GpuSummary {
  std::vector<ActivityRow> gpu_activities;
  std::vector<ActivityRow> api_calls;
  std::vector<LayerRow> layers;
  std::vector<CopyDirection> copies;
  std::vector<RepeatedCopy> repeated_copies;
  IdleGaps idle;
  HostWaiting waiting;
  IterationSplit split;
  double kernel_ns = 0;                         // total kernel time
  std::vector<KernelThroughputRow> throughput;  // by duration, descending; empty without metrics
};

GpuSummary Summarize(const profile::Profile& p, const SummaryOptions& options = {});

// The per-layer row a range name belongs to: the name, minus the per-call counters PyTorch's
// emit_nvtx appends (", seq = 12", ", op_id = 345", ", input_op_ids = [...]"), so that one
// operator's instances across iterations share a row. Other names are returned unchanged.
std::string LayerKey(const std::string& range_name);

// Findings for the copies, idle/waiting time and low occupancy, with their evidence.
std::vector<profile::Finding> GpuFindings(const profile::Profile& p, const GpuSummary& s);

// "850ns", "12.35us", "1.235ms", "2.500s".
std::string FormatNs(double ns);

}  // namespace opscope::analysis
