// Roofline and bound classification of every operator that has FLOPs or bytes.
//
// Quantized ops (OpRecord::int_ops > 0) are placed against the integer roof instead: their work
// is their integer ops and their compute ceiling the measured int8 peak.
//
// For an op with F floating-point operations and B bytes of compulsory traffic per run, taking
// t seconds (trimmed mean): intensity I = F/B, attainable = min(peak, I * bandwidth), achieved =
// F/t. The op is classified as
//   data-movement: its op type moves data and does no arithmetic (IsDataMovementOp), whatever
//                  its numbers are;
//   latency-bound: it reaches less than kLatencyPctOfRoof of its roof AND its ideal time at the
//                  roof is under kLatencyIdealUs: too small to reach either roof (launch,
//                  dispatch, threading overhead dominate);
//   memory-bound:  I is left of the ridge point (peak / bandwidth);
//   compute-bound: I is right of the ridge point.
// Hardware counters, where the op has them, confirm or contradict the class: low IPC with many
// cache misses per kilo-instruction confirms memory-bound, high IPC with few misses confirms
// compute-bound. The result says which, in words.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "analysis/machine.h"
#include "profile/profile.h"

namespace opscope::analysis {

// The classes and their names are the profile's (stored per op by Diagnose).
using profile::BoundClass;
using profile::BoundClassName;  // "compute-bound", "memory-bound", ...

inline constexpr double kLatencyPctOfRoof = 10.0;  // percent
inline constexpr double kLatencyIdealUs = 20.0;    // microseconds at the roof
// Counter thresholds for the confirmation (IPC, LLC/cache misses per 1000 instructions).
inline constexpr double kLowIpc = 1.0, kHighIpc = 2.0, kHighMpki = 5.0, kLowMpki = 1.0;

// An op whose achieved rate is above a roof by more than this factor is evidence that the
// ceilings are wrong (measured under load, or on another machine): compute above the peak, or
// bandwidth above the DRAM triad for an op whose bytes do not fit in the last-level cache.
inline constexpr double kAboveRoofFactor = 1.10;

// Reshape, Transpose, Concat, Slice, Gather(+Elements/ND), Split, Squeeze, Unsqueeze, Flatten,
// Expand, Tile, Pad, Identity, Cast, DepthToSpace, SpaceToDepth, ScatterND, ScatterElements,
// Scatter, Copy/MemCopy, and Resize in "nearest" mode is not detectable from the op type alone
// (Resize is treated as arithmetic). docs/diagnosis.md lists them.
bool IsDataMovementOp(std::string_view op_type);

struct RooflinePoint {
  int op = -1;  // index into Profile::ops
  std::string name, op_type;
  double time_ms = 0;  // trimmed mean per run
  double share = 0;
  double flops = 0, bytes = 0;
  // Integer ops of a quantized kernel; when > 0 they are the op's work: intensity is op/byte,
  // achieved_gflops / attainable_gflops are G integer ops/s, and the compute roof is the int8
  // ceiling (MachineCeilings::PeakGopsInt8).
  double int_ops = 0;
  double intensity = 0;          // FLOP/byte (0 when bytes is 0)
  double attainable_gflops = 0;  // min(peak, intensity * bandwidth)
  double achieved_gflops = 0;
  double achieved_gbps = 0;
  double pct_of_roof = 0;  // achieved vs the roof that limits it (compute or memory), percent
  double expected_ms = 0;  // the op's time at that roof: max(work / peak, bytes / bandwidth)
  BoundClass cls = BoundClass::kUnknown;
  std::string reason;                // why this class, with the numbers
  std::string counter_confirmation;  // "confirmed: ...", "contradicted: ...", "no counters"
  std::string above_roof;  // "" or which roof the op exceeds, with the numbers (kAboveRoofFactor)
};

// One point per op with flops > 0 or bytes > 0 or a data-movement op type, in op order. Ops
// without time (folded) are skipped. `threads` picks the compute roof (1 → one core).
std::vector<RooflinePoint> ComputeRoofline(const profile::Profile& p, const MachineCeilings& c);

// Stores each point's verdict in its op (OpRecord::roofline), clearing what was there; points
// without a class (no ceilings) store nothing. Diagnose calls it.
void StoreRoofline(const std::vector<RooflinePoint>& points, profile::Profile* p);

// The points renderers draw: ComputeRoofline's, with each op's verdict (class, intensity, roof,
// % of roof, expected time) taken from what Diagnose stored in op.roofline, so that every
// renderer prints the one stored answer (a profile edited or written by another opscope is shown
// as it says). Ops without a stored verdict keep the computed one.
std::vector<RooflinePoint> RooflineForDisplay(const profile::Profile& p, const MachineCeilings& c);

// The counter verdict alone (exposed for tests): counters as stored in OpRecord::counters.
std::string CounterConfirmation(const std::map<std::string, double>& counters, BoundClass cls);

}  // namespace opscope::analysis
