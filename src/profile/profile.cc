#include "profile/profile.h"

#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include "base/clock.h"
#include "base/host.h"
#include "base/version.h"
#include "profile/enum_names.h"

namespace opscope::profile {

static bool Finite(double v) { return std::isfinite(v); }

const char* BoundClassName(BoundClass c) {
  switch (c) {
    case BoundClass::kCompute:
      return "compute-bound";
    case BoundClass::kMemory:
      return "memory-bound";
    case BoundClass::kLatency:
      return "latency-bound";
    case BoundClass::kDataMovement:
      return "data-movement";
    case BoundClass::kUnknown:
      break;
  }
  return "unknown";
}

bool ParseBoundClass(const std::string& name, BoundClass* out) {
  static constexpr BoundClass kAll[] = {BoundClass::kCompute, BoundClass::kMemory,
                                        BoundClass::kLatency, BoundClass::kDataMovement,
                                        BoundClass::kUnknown};
  return ParseByName(name, kAll, &BoundClassName, out);
}

const char* OpStatusName(OpStatus s) {
  switch (s) {
    case OpStatus::kFused:
      return "fused";
    case OpStatus::kFolded:
      return "folded";
    case OpStatus::kExecuted:
      break;
  }
  return "executed";
}

bool ParseOpStatus(const std::string& name, OpStatus* out) {
  static constexpr OpStatus kAll[] = {OpStatus::kExecuted, OpStatus::kFused, OpStatus::kFolded};
  return ParseByName(name, kAll, &OpStatusName, out);
}

namespace {

// The longest time a profile may hold, in ms (about 28 hours): a run or an op beyond it is a
// damaged or hand-edited file, and would otherwise print as hundreds of digits.
constexpr double kMaxPlausibleMs = 1e8;

std::string Num(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "infinite" : "-infinite";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Every time field a profile carries must be finite, >= 0 and plausible; the error names it.
Status CheckTime(double v, const std::string& field) {
  if (std::isfinite(v) && v >= 0 && v <= kMaxPlausibleMs) return Status::Ok();
  return DataLoss("invalid profile: " + field + " = " + Num(v) +
                  " ms is not a plausible time (it "
                  "must be finite, at least 0 and at most " +
                  Num(kMaxPlausibleMs) + " ms, about 28 hours)");
}

Status CheckStats(const Stats& st, const std::string& where) {
  const std::pair<const char*, double> fields[] = {
      {"mean", st.mean},    {"median", st.median}, {"trimmed_mean", st.trimmed_mean},
      {"min", st.min},      {"max", st.max},       {"p90", st.p90},
      {"stddev", st.stddev}};
  for (const auto& [name, v] : fields)
    OPSCOPE_RETURN_IF_ERROR(CheckTime(v, where + ".stats." + name));
  return Status::Ok();
}

// The numbers a report prints: a count beyond these is a damaged or hand-edited file (an op of
// 1e308 FLOPs printed as dozens of digits, an overhead of "inf" blamed on the machine).
constexpr double kMaxPlausibleCount = 1e18;  // FLOPs, integer ops or bytes of one op, per run
constexpr double kMaxPlausiblePct = 1e6;     // opscope's overhead, in percent

Status CheckCount(double v, const std::string& field) {
  if (std::isfinite(v) && v >= 0 && v <= kMaxPlausibleCount) return Status::Ok();
  return DataLoss("invalid profile: " + field + " = " + Num(v) +
                  " is not a plausible count (it must be finite, at least 0 and at most " +
                  Num(kMaxPlausibleCount) + ")");
}

// The one plausibility rule for every number a profile carries, applied by Validate: where a
// profile is made (every source ends with Validate) and where one is read, with the same error.
Status CheckNumbers(const Profile& p) {
  for (size_t i = 0; i < p.e2e.runs_ms.size(); ++i)
    OPSCOPE_RETURN_IF_ERROR(CheckTime(p.e2e.runs_ms[i], "e2e.runs_ms[" + std::to_string(i) + "]"));
  OPSCOPE_RETURN_IF_ERROR(CheckStats(p.e2e.stats, "e2e"));
  for (size_t i = 0; i < p.ops.size(); ++i) {
    std::string where = "ops[" + std::to_string(i) + "] ('" + p.ops[i].name + "')";
    for (size_t k = 0; k < p.ops[i].runs_ms.size(); ++k)
      OPSCOPE_RETURN_IF_ERROR(
          CheckTime(p.ops[i].runs_ms[k], where + ".runs_ms[" + std::to_string(k) + "]"));
    OPSCOPE_RETURN_IF_ERROR(CheckStats(p.ops[i].stats, where));
    OPSCOPE_RETURN_IF_ERROR(CheckCount(p.ops[i].flops, where + ".flops"));
    OPSCOPE_RETURN_IF_ERROR(CheckCount(p.ops[i].int_ops, where + ".int_ops"));
    OPSCOPE_RETURN_IF_ERROR(CheckCount(p.ops[i].bytes, where + ".bytes"));
    if (const auto& r = p.ops[i].roofline) {
      OPSCOPE_RETURN_IF_ERROR(CheckCount(r->intensity, where + ".intensity"));
      OPSCOPE_RETURN_IF_ERROR(CheckCount(r->attainable_gflops, where + ".attainable_gflops"));
      OPSCOPE_RETURN_IF_ERROR(CheckCount(r->pct_of_roof, where + ".pct_of_roof"));
      OPSCOPE_RETURN_IF_ERROR(CheckTime(r->expected_ms, where + ".expected_ms"));
      OPSCOPE_RETURN_IF_ERROR(
          CheckCount(r->measured_over_expected, where + ".measured_over_expected"));
    }
  }
  if (p.overhead) {
    OPSCOPE_RETURN_IF_ERROR(
        CheckTime(p.overhead->baseline_median_ms, "overhead.baseline_median_ms"));
    OPSCOPE_RETURN_IF_ERROR(
        CheckTime(p.overhead->observed_median_ms, "overhead.observed_median_ms"));
    const std::pair<const char*, double> pcts[] = {{"pct", p.overhead->pct},
                                                   {"counters_pct", p.overhead->counters_pct},
                                                   {"noise_low_pct", p.overhead->noise_low_pct},
                                                   {"noise_high_pct", p.overhead->noise_high_pct}};
    for (const auto& [name, v] : pcts)
      if (!std::isfinite(v) || std::fabs(v) > kMaxPlausiblePct)
        return DataLoss("invalid profile: overhead." + std::string(name) + " = " + Num(v) +
                        "% is not a plausible overhead (it must be finite and within ±" +
                        Num(kMaxPlausiblePct) + "%)");
  }
  if (const auto& c = p.meta.machine) {
    const std::pair<const char*, double> roofs[] = {{"peak_gflops_all", c->peak_gflops_all},
                                                    {"peak_gflops_one", c->peak_gflops_one},
                                                    {"peak_gops_int8_all", c->peak_gops_int8_all},
                                                    {"peak_gops_int8_one", c->peak_gops_int8_one},
                                                    {"triad_gbps", c->triad_gbps},
                                                    {"llc_gbps", c->llc_gbps},
                                                    {"llc_bytes", c->llc_bytes}};
    for (const auto& [name, v] : roofs)
      OPSCOPE_RETURN_IF_ERROR(CheckCount(v, std::string("meta.machine.") + name));
    if (c->threads < 0) return DataLoss("invalid profile: meta.machine.threads is negative");
  }
  if (const auto& i = p.meta.import) {
    if (i->rows < 0 || i->matched_rows < 0 || i->matched_rows > i->rows || i->model_nodes < 0 ||
        i->model_nodes_timed < 0 || i->model_nodes_timed > i->model_nodes)
      return DataLoss("invalid profile: meta.import's row or node counts are inconsistent");
    if (!std::isfinite(i->matched_share) || i->matched_share < 0 || i->matched_share > 1 + 1e-6)
      return DataLoss("invalid profile: meta.import.matched_share is outside [0,1]");
  }
  if (p.stat)
    for (size_t i = 0; i < p.stat->runs.size(); ++i)
      OPSCOPE_RETURN_IF_ERROR(
          CheckTime(p.stat->runs[i].wall_ms, "stat.runs[" + std::to_string(i) + "].wall_ms"));
  return Status::Ok();
}

}  // namespace

Status Validate(const Profile& p) {
  OPSCOPE_RETURN_IF_ERROR(CheckNumbers(p));
  auto bad = [](const std::string& what) { return DataLoss("invalid profile: " + what); };
  if (p.meta.runs < 0 || p.meta.warmup < 0 || p.meta.threads < 0) return bad("negative run counts");
  for (double v : p.e2e.runs_ms)
    if (!Finite(v) || v < 0) return bad("negative or non-finite end-to-end time");
  std::set<std::string> names;
  double share_sum = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const OpRecord& op = p.ops[i];
    std::string where = "op #" + std::to_string(i) + " '" + op.name + "'";
    if (op.name.empty()) return bad(where + " has no name");
    if (!names.insert(op.name).second) return bad(where + " appears twice");
    if (!Finite(op.flops) || op.flops < 0 || !Finite(op.bytes) || op.bytes < 0 ||
        !Finite(op.int_ops) || op.int_ops < 0)
      return bad(where + " has negative or non-finite flops/ops/bytes");
    for (double v : op.runs_ms)
      if (!Finite(v) || v < 0) return bad(where + " has a negative or non-finite time");
    if (!Finite(op.share) || op.share < 0 || op.share > 1 + 1e-6)
      return bad(where + " has share outside [0,1]");
    share_sum += op.share;
  }
  if (share_sum > 1 + 1e-3) return bad("op shares sum to more than 1");
  for (const OpEvent& e : p.op_events) {
    if (e.op < 0 || static_cast<size_t>(e.op) >= p.ops.size())
      return bad("op event refers to a missing op");
    if (e.dur_ns < 0) return bad("op event with negative duration");
  }
  for (size_t i = 0; i < p.ranges.size(); ++i) {
    const Range& r = p.ranges[i];
    if (r.end_ns < r.start_ns) return bad("range '" + r.name + "' ends before it starts");
    if (r.parent < -1 || r.parent >= static_cast<int32_t>(p.ranges.size()) ||
        r.parent == static_cast<int32_t>(i))
      return bad("range '" + r.name + "' has an invalid parent");
  }
  if (p.samples) {
    const auto& s = *p.samples;
    for (const Sample& smp : s.samples) {
      for (uint32_t f : smp.stack)
        if (f >= s.frames.size()) return bad("sample refers to a missing frame");
      if (smp.op < -1 || smp.op >= static_cast<int32_t>(p.ops.size()))
        return bad("sample refers to a missing op");
      if (!Finite(smp.weight) || smp.weight < 0) return bad("sample with negative weight");
    }
  }
  if (p.stat) {
    for (const StatRun& run : p.stat->runs) {
      if (!Finite(run.wall_ms) || run.wall_ms < 0)
        return bad("stat run with a negative or non-finite wall time");
      for (const CounterReading& c : run.counters) {
        if (c.event.empty()) return bad("stat counter without an event name");
        if (!Finite(c.value) || !Finite(c.raw) || c.value < 0 || c.raw < 0)
          return bad("stat counter '" + c.event + "' has a negative or non-finite value");
        if (!Finite(c.running_fraction) || c.running_fraction < 0 || c.running_fraction > 1 + 1e-9)
          return bad("stat counter '" + c.event + "' has a running fraction outside [0,1]");
      }
    }
    for (const auto& [name, v] : p.stat->derived)
      if (!Finite(v)) return bad("stat derived metric '" + name + "' is not finite");
  }
  if (p.gpu) {
    const int32_t nranges = static_cast<int32_t>(p.ranges.size());
    for (const auto& k : p.gpu->kernels) {
      if (k.end_ns < k.start_ns) return bad("kernel '" + k.name + "' ends before it starts");
      if (k.range < -1 || k.range >= nranges)
        return bad("kernel '" + k.name + "' refers to a missing range");
      if (!Finite(k.occupancy) || k.occupancy < 0 || k.occupancy > 1)
        return bad("kernel '" + k.name + "' has occupancy outside [0,1]");
    }
    for (const auto& m : p.gpu->memcpys) {
      if (m.end_ns < m.start_ns || m.bytes < 0) return bad("memcpy with invalid time or size");
      if (m.range < -1 || m.range >= nranges) return bad("memcpy refers to a missing range");
    }
    for (const auto& m : p.gpu->memsets)
      if (m.end_ns < m.start_ns || m.bytes < 0) return bad("memset with invalid time or size");
    for (const auto& a : p.gpu->api_calls)
      if (a.end_ns < a.start_ns) return bad("API call '" + a.name + "' ends before it starts");
    for (const auto& s : p.gpu->syncs)
      if (s.end_ns < s.start_ns) return bad("synchronization ends before it starts");
  }
  for (const ClockSample& c : p.clocks)
    if (!Finite(c.cpu_mhz) || c.cpu_mhz < 0 || !Finite(c.temp_c))
      return bad("clock sample of run " + std::to_string(c.run) +
                 " has an invalid frequency or temperature");
  if (p.verdicts) {
    const Verdicts& v = *p.verdicts;
    if (!Finite(v.cv) || v.cv < 0 || !Finite(v.freq_drop_pct) || !Finite(v.temp_rise_c))
      return bad("verdicts hold a non-finite or negative number");
    for (int r : v.outlier_runs)
      if (r < 0 || static_cast<size_t>(r) >= p.e2e.runs_ms.size())
        return bad("verdicts name outlier run " + std::to_string(r) + ", not a measured run");
  }
  for (const auto& [key, section] : p.sections.all())
    if (Status st = section->Validate(p); !st.ok()) return bad(key + " section: " + st.message());
  return Status::Ok();
}

void FillHostMeta(Meta& meta) {
  HostInfo h = ReadHostInfo();
  meta.tool_version = OPSCOPE_VERSION;
  meta.build_type = OPSCOPE_BUILD_TYPE;
  meta.created = IsoTimeNow();
  meta.host = h.hostname;
  meta.kernel = h.kernel;
  meta.arch = h.arch;
  meta.cpu_model = h.cpu_model;
  meta.logical_cpus = h.logical_cpus;
  meta.governor = h.governor;
  meta.cpu_mhz = h.cpu_mhz;
}

void FinalizeStats(Profile& p) {
  p.e2e.stats = ComputeStats(p.e2e.runs_ms);
  p.e2e.throughput_per_s = p.e2e.stats.median > 0 ? 1000.0 / p.e2e.stats.median : 0;
  double total = 0;
  for (OpRecord& op : p.ops) {
    op.stats = ComputeStats(op.runs_ms);
    total += op.stats.trimmed_mean;
  }
  for (OpRecord& op : p.ops) op.share = total > 0 ? op.stats.trimmed_mean / total : 0;
}

}  // namespace opscope::profile
