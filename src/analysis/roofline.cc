#include "analysis/roofline.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "base/strings.h"

namespace opscope::analysis {

bool IsDataMovementOp(std::string_view t) {
  static constexpr std::array<std::string_view, 24> kTypes = {
      "Reshape",        "Transpose",    "Concat",       "Slice",     "Gather",
      "GatherElements", "GatherND",     "Split",        "Squeeze",   "Unsqueeze",
      "Flatten",        "Expand",       "Tile",         "Pad",       "Identity",
      "Cast",           "DepthToSpace", "SpaceToDepth", "ScatterND", "ScatterElements",
      "Scatter",        "Copy",         "MemCopy",      "Reorder"};
  return std::find(kTypes.begin(), kTypes.end(), t) != kTypes.end();
}

static const double* Find(const std::map<std::string, double>& m,
                          std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    if (auto it = m.find(k); it != m.end()) return &it->second;
  return nullptr;
}

std::string CounterConfirmation(const std::map<std::string, double>& counters, BoundClass cls) {
  const double* ipc_p = Find(counters, {"ipc"});
  const double* ins = Find(counters, {"instructions"});
  const double* cyc = Find(counters, {"cycles", "cpu-cycles"});
  const double* miss = Find(counters, {"LLC-load-misses", "llc-load-misses", "cache-misses"});
  double ipc = ipc_p ? *ipc_p : (ins && cyc && *cyc > 0 ? *ins / *cyc : -1);
  double mpki = (miss && ins && *ins > 0) ? *miss * 1000.0 / *ins : -1;
  if (ipc < 0 && mpki < 0) return "no hardware counters";
  std::string nums;
  if (ipc >= 0) nums += fmt::format("IPC {:.2f}", ipc);
  if (mpki >= 0)
    nums += fmt::format("{}{:.1f} cache misses/1k instr", nums.empty() ? "" : ", ", mpki);
  bool low_ipc = ipc >= 0 && ipc < kLowIpc, high_ipc = ipc >= kHighIpc;
  bool many_miss = mpki >= kHighMpki, few_miss = mpki >= 0 && mpki < kLowMpki;
  switch (cls) {
    case BoundClass::kMemory:
    case BoundClass::kDataMovement:
      if ((low_ipc || ipc < 0) && (many_miss || mpki < 0) && (low_ipc || many_miss))
        return "confirmed: " + nums + " (stalls on memory)";
      if (high_ipc || few_miss) return "contradicted: " + nums + " (data mostly served from cache)";
      break;
    case BoundClass::kCompute:
      if ((high_ipc || ipc < 0) && (few_miss || mpki < 0) && (high_ipc || few_miss))
        return "confirmed: " + nums + " (arithmetic units busy)";
      if (low_ipc && many_miss)
        return "contradicted: " + nums + " (stalls on memory despite high intensity)";
      if (low_ipc)
        return "contradicted: " + nums + " (pipeline stalls: dependency chains or a scalar kernel)";
      break;
    default:
      break;
  }
  return "inconclusive: " + nums;
}

std::vector<RooflinePoint> ComputeRoofline(const profile::Profile& p, const MachineCeilings& c) {
  std::vector<RooflinePoint> out;
  const double float_peak = c.PeakGflops(p.meta.threads);
  const double int8_peak = c.PeakGopsInt8(p.meta.threads);
  double bw = c.triad_gbps;
  // Fused nodes share one measured time, split between them by estimated cost: only the step's
  // totals are evidence that a ceiling is wrong (a post-op's estimated slice can show any rate).
  struct StepTotal {
    double work = 0, bytes = 0, ms = 0;
    size_t first = 0;
  };
  std::map<std::string, StepTotal> steps;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const profile::OpRecord& op = p.ops[i];
    if (op.status != profile::OpStatus::kFused || op.step.empty()) continue;
    auto [it, fresh] = steps.try_emplace(op.step);
    if (fresh) it->second.first = i;
    it->second.work += op.int_ops > 0 ? op.int_ops : op.flops;
    it->second.bytes += op.bytes;
    it->second.ms += op.stats.trimmed_mean > 0 ? op.stats.trimmed_mean : op.stats.median;
  }
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const profile::OpRecord& op = p.ops[i];
    bool dm = IsDataMovementOp(op.op_type);
    // Quantized kernels count integer ops: their work and roof are the integer ones (the int8
    // ceiling of `opscope machine`; the float peak, said so, for files without one).
    const bool integer = op.int_ops > 0;
    const double work = integer ? op.int_ops : op.flops;
    const double peak = integer && int8_peak > 0 ? int8_peak : float_peak;
    const char* unit = integer ? "GOP/s" : "GFLOP/s";
    const char* iunit = integer ? "op/B" : "FLOP/B";
    if (work <= 0 && op.bytes <= 0 && !dm) continue;
    double t_ms = op.stats.trimmed_mean > 0 ? op.stats.trimmed_mean : op.stats.median;
    if (op.status == profile::OpStatus::kFolded || t_ms <= 0) continue;
    RooflinePoint r;
    r.op = static_cast<int>(i);
    r.name = op.name;
    r.op_type = op.op_type;
    r.time_ms = t_ms;
    r.share = op.share;
    r.flops = op.flops;
    r.int_ops = op.int_ops;
    r.bytes = op.bytes;
    double t_s = t_ms / 1e3;
    r.achieved_gflops = work / t_s / 1e9;
    r.achieved_gbps = op.bytes / t_s / 1e9;
    r.intensity = op.bytes > 0 ? work / op.bytes : 0;
    if (peak > 0 && bw > 0) {
      double ridge = peak / bw;
      bool compute_side = op.bytes <= 0 || r.intensity >= ridge;
      r.attainable_gflops = op.bytes > 0 ? std::min(peak, r.intensity * bw) : peak;
      // Percent of the roof that limits the op: the compute roof on the right of the ridge,
      // the bandwidth roof on the left (for ops with no FLOPs that is the only meaningful one).
      if (compute_side)
        r.pct_of_roof = 100.0 * r.achieved_gflops / peak;
      else
        r.pct_of_roof = 100.0 * r.achieved_gbps / bw;
      // The rates that can prove the ceilings wrong: the op's own, or its fused step's (said
      // once, on the step's first node).
      double gflops = r.achieved_gflops, gbps = r.achieved_gbps, bytes = op.bytes;
      std::string what;
      bool judge = true;
      if (auto st = steps.find(op.status == profile::OpStatus::kFused ? op.step : std::string());
          st != steps.end()) {
        judge = st->second.first == i && st->second.ms > 0;
        if (judge) {
          gflops = st->second.work / (st->second.ms / 1e3) / 1e9;
          gbps = st->second.bytes / (st->second.ms / 1e3) / 1e9;
          bytes = st->second.bytes;
          what = fmt::format(" (its fused step '{}' as a whole)", op.step);
        }
      }
      if (judge && gflops > kAboveRoofFactor * peak)
        r.above_roof = fmt::format("achieves {:.1f} {}{}, above the compute roof of {:.1f} {}",
                                   gflops, unit, what, peak, unit);
      else if (judge && c.llc_bytes > 0 && bytes > c.llc_bytes && gbps > kAboveRoofFactor * bw)
        r.above_roof = fmt::format(
            "moves {:.1f} GB/s of {}{} (more than the {} LLC), above the "
            "memory roof of {:.1f} GB/s",
            gbps, HumanBytes(bytes), what, HumanBytes(c.llc_bytes), bw);
      double ideal_us = std::max(work / (peak * 1e9), op.bytes / (bw * 1e9)) * 1e6;
      r.expected_ms = ideal_us / 1e3;
      if (dm) {
        r.cls = BoundClass::kDataMovement;
        r.reason = fmt::format("{} moves {} and computes nothing ({:.1f}% of memory bandwidth)",
                               op.op_type, HumanBytes(op.bytes), r.achieved_gbps * 100 / bw);
      } else if (r.pct_of_roof < kLatencyPctOfRoof && ideal_us < kLatencyIdealUs) {
        r.cls = BoundClass::kLatency;
        r.reason = fmt::format(
            "reaches {:.1f}% of its roof; its work would take {:.1f} us at the "
            "roof but takes {:.1f} us: overhead dominates",
            r.pct_of_roof, ideal_us, t_ms * 1e3);
      } else if (compute_side) {
        r.cls = BoundClass::kCompute;
        r.reason = fmt::format(
            "intensity {:.1f} {} is right of the ridge ({:.1f} {}); "
            "{:.1f} of {:.1f} {} ({:.0f}% of {}peak)",
            r.intensity, iunit, ridge, iunit, r.achieved_gflops, peak, unit, r.pct_of_roof,
            integer ? (int8_peak > 0 ? "int8 " : "float32 (no int8 ceiling) ") : "");
      } else {
        r.cls = BoundClass::kMemory;
        r.reason = fmt::format(
            "intensity {:.2f} {} is left of the ridge ({:.1f} {}); "
            "{:.1f} of {:.1f} GB/s ({:.0f}% of bandwidth)",
            r.intensity, iunit, ridge, iunit, r.achieved_gbps, bw, r.pct_of_roof);
      }
    } else {
      r.cls = dm ? BoundClass::kDataMovement : BoundClass::kUnknown;
      r.reason =
          dm ? op.op_type + " moves data and computes nothing"
             : "no machine ceilings: run `opscope machine` or pass --peak-gflops/--peak-gbps";
    }
    r.counter_confirmation = CounterConfirmation(op.counters, r.cls);
    out.push_back(std::move(r));
  }
  return out;
}

void StoreRoofline(const std::vector<RooflinePoint>& points, profile::Profile* p) {
  for (auto& op : p->ops) op.roofline.reset();
  for (const RooflinePoint& pt : points) {
    if (pt.cls == BoundClass::kUnknown || pt.op < 0 || static_cast<size_t>(pt.op) >= p->ops.size())
      continue;
    profile::OpRoofline r;
    r.bound = pt.cls;
    r.intensity = pt.intensity;
    r.attainable_gflops = pt.attainable_gflops;
    r.pct_of_roof = pt.pct_of_roof;
    r.expected_ms = pt.expected_ms;
    r.measured_over_expected = pt.expected_ms > 0 ? pt.time_ms / pt.expected_ms : 0;
    p->ops[static_cast<size_t>(pt.op)].roofline = r;
  }
}

std::vector<RooflinePoint> RooflineForDisplay(const profile::Profile& p, const MachineCeilings& c) {
  std::vector<RooflinePoint> points = ComputeRoofline(p, c);
  for (RooflinePoint& pt : points) {
    if (pt.op < 0 || static_cast<size_t>(pt.op) >= p.ops.size()) continue;
    const auto& stored = p.ops[static_cast<size_t>(pt.op)].roofline;
    if (!stored) continue;
    pt.cls = stored->bound;
    pt.intensity = stored->intensity;
    pt.attainable_gflops = stored->attainable_gflops;
    pt.pct_of_roof = stored->pct_of_roof;
    pt.expected_ms = stored->expected_ms;
  }
  return points;
}

}  // namespace opscope::analysis
