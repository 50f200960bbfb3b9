#include "gpu/builder.h"

#include <cxxabi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include "gpu/occupancy.h"
#include "profile/gpu_kernel_bound.h"

namespace opscope::gpu {
namespace {

using profile::Range;

struct Launch {
  uint32_t tid = 0;
  int64_t ts = 0;
  bool runtime = false;
};

// Timestamps from a damaged trace can be anything; real ones are positive and far below 2^62 ns
// (146 years). Clamping keeps every later difference free of overflow.
constexpr int64_t kMaxTs = int64_t{1} << 62;
constexpr uint64_t kMaxBytes = uint64_t{1} << 48;  // no single copy moves 256 TiB
int64_t Ts(int64_t v, int64_t shift = 0) {
  int64_t out;
  if (__builtin_add_overflow(v, shift, &out)) out = v > 0 ? kMaxTs : 0;
  return std::clamp<int64_t>(out, 0, kMaxTs);
}

const char* SyncTypeName(uint32_t type) {
  switch (type) {
    case trace::kEventSynchronize:
      return "event";
    case trace::kStreamWaitEvent:
      return "stream_wait_event";
    case trace::kStreamSynchronize:
      return "stream";
    case trace::kContextSynchronize:
      return "context";
    default:
      return "unknown";
  }
}

// Finds the innermost range open at `ts` on one thread.
class RangeIndex {
 public:
  RangeIndex(const std::vector<Range>& ranges, size_t first) : ranges_(ranges) {
    for (size_t i = first; i < ranges.size(); ++i)
      by_tid_[ranges[i].tid].push_back(static_cast<int32_t>(i));
    for (auto& [tid, v] : by_tid_)
      std::stable_sort(v.begin(), v.end(), [&](int32_t a, int32_t b) {
        return ranges_[a].start_ns < ranges_[b].start_ns;
      });
  }

  int32_t Find(uint32_t tid, int64_t ts) const {
    auto it = by_tid_.find(static_cast<int32_t>(tid));
    if (it == by_tid_.end()) return -1;
    const std::vector<int32_t>& v = it->second;
    auto pos = std::upper_bound(v.begin(), v.end(), ts,
                                [&](int64_t t, int32_t r) { return t < ranges_[r].start_ns; });
    if (pos == v.begin()) return -1;
    int32_t latest = *(pos - 1);
    // With one properly nested stack, the enclosing range is an ancestor of the latest range
    // that started before `ts`.
    int32_t chain = -1;
    for (int32_t r = latest; r >= 0; r = ranges_[r].parent)
      if (Encloses(r, ts)) {
        chain = r;
        break;
      }
    // Other domains (or start/end ranges) on this thread may hold a range that started later
    // and still encloses `ts`: look back over the ranges that started after `chain`.
    int steps = 0;
    for (auto back = pos; back != v.begin() && steps < 256; ++steps) {
      --back;
      if (chain >= 0 && ranges_[*back].start_ns < ranges_[chain].start_ns) break;
      if (*back == chain) break;
      if (Encloses(*back, ts)) return *back;
    }
    return chain;
  }

 private:
  bool Encloses(int32_t r, int64_t ts) const {
    return ranges_[r].start_ns <= ts && ts <= ranges_[r].end_ns;
  }
  const std::vector<Range>& ranges_;
  std::unordered_map<int32_t, std::vector<int32_t>> by_tid_;
};

double MetricOrUnknown(double v) { return std::isfinite(v) && v >= 0 ? v : -1; }

bool AllDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Joins the tracer's per-kernel metrics (--metrics) to this trace's kernels, which are
// g->kernels[first..] in trace order, by the launch's correlation id, and classifies them.
template <typename Degrade>
void JoinKernelMetrics(const DecodedTrace& t, size_t first, profile::GpuSection* g, Degrade degrade,
                       const std::string& who) {
  for (const trace::MetricsConfigRecord& c : t.metrics_configs)
    g->metrics_passes = std::max<int32_t>(
        g->metrics_passes, static_cast<int32_t>(std::min<uint32_t>(uint32_t{c.passes}, 1 << 20)));
  if (!t.metrics_configs.empty())
    degrade(who + ": --metrics replayed every kernel " + std::to_string(g->metrics_passes) +
            " time(s) to collect its counters: kernel times, GPU idle time and wall time are not "
            "comparable with a run without --metrics");
  if (t.kernel_metrics.empty()) return;
  std::unordered_map<uint32_t, size_t> by_correlation;
  for (size_t i = first; i < g->kernels.size(); ++i)
    by_correlation.emplace(g->kernels[i].correlation_id, i);
  size_t unjoined = 0, renamed = 0;
  for (size_t m = 0; m < t.kernel_metrics.size(); ++m) {
    const trace::KernelMetricsRecord& r = t.kernel_metrics[m];
    auto it = r.correlation ? by_correlation.find(r.correlation) : by_correlation.end();
    if (it == by_correlation.end()) {
      ++unjoined;
      continue;
    }
    profile::GpuKernel& k = g->kernels[it->second];
    // CUPTI names an auto range after its kernel (or numbers it): a different name means the
    // launch order the tracer recorded and the ranges CUPTI profiled disagree.
    const std::string& range = t.kernel_metrics_ranges[m];
    const std::string& mangled = t.kernel_names[it->second - first];
    if (!range.empty() && !AllDigits(range) && mangled.find(range) == std::string::npos &&
        k.name.find(range) == std::string::npos && DemangleKernelName(range) != k.name)
      ++renamed;
    k.sm_throughput_pct = MetricOrUnknown(r.sm_throughput_pct);
    k.memory_throughput_pct = MetricOrUnknown(r.memory_throughput_pct);
    k.dram_throughput_pct = MetricOrUnknown(r.dram_throughput_pct);
    k.achieved_occupancy_pct = MetricOrUnknown(r.achieved_occupancy_pct);
    k.metrics_duration_ns = MetricOrUnknown(r.duration_ns);
    k.bound = profile::ClassifyKernelBound(k.sm_throughput_pct, k.memory_throughput_pct,
                                           k.dram_throughput_pct);
  }
  if (unjoined)
    degrade(who + ": " + std::to_string(unjoined) + " of " +
            std::to_string(t.kernel_metrics.size()) +
            " kernel metric records matched no kernel (CUPTI profiled a different set of launches "
            "than the "
            "tracer counted, e.g. CUDA graphs): those kernels have no throughput figures");
  if (renamed)
    degrade(who + ": " + std::to_string(renamed) +
            " kernel metric records name another kernel than the launch they were joined to: their "
            "throughput figures may belong to a neighbouring launch");
}

}  // namespace

std::string ApiDisplayName(const std::string& name, bool runtime) {
  // CUPTI names runtime callbacks with the version that introduced them ("cudaMemcpy_v3020");
  // users know the function as "cudaMemcpy". Driver names keep their suffix ("cuMemcpyHtoD_v2"
  // is the real symbol).
  if (!runtime) return name;
  size_t v = name.rfind("_v");
  if (v == std::string::npos || name.size() - v < 6) return name;
  for (size_t i = v + 2; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return name;
  return name.substr(0, v);
}

std::string DemangleKernelName(const std::string& name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

const char* MemcpyKindName(uint8_t kind) {
  switch (kind) {
    case trace::kHtoD:
      return "HtoD";
    case trace::kDtoH:
      return "DtoH";
    case trace::kHtoA:
      return "HtoA";
    case trace::kAtoH:
      return "AtoH";
    case trace::kAtoA:
      return "AtoA";
    case trace::kAtoD:
      return "AtoD";
    case trace::kDtoA:
      return "DtoA";
    case trace::kDtoD:
      return "DtoD";
    case trace::kHtoH:
      return "HtoH";
    case trace::kPtoP:
      return "PtoP";
    default:
      return "unknown";
  }
}

void AddTraceToProfile(const DecodedTrace& t, profile::Profile* p) {
  if (!p->gpu) p->gpu.emplace();
  profile::GpuSection& g = *p->gpu;
  const std::string who = "pid " + std::to_string(t.pid);
  auto degrade = [&](const std::string& what) { p->meta.degradations.push_back(what); };

  // Clock: shift CUPTI's times onto CLOCK_MONOTONIC when our callback was refused.
  int64_t shift = 0;
  const bool has_cupti_records =
      !t.kernels.empty() || !t.memcpys.empty() || !t.memsets.empty() || !t.api_calls.empty();
  if (!t.clocks.empty() && !t.clocks.front().cupti_is_monotonic && t.clocks.front().cupti_ns != 0) {
    shift = std::clamp<int64_t>(Ts(t.clocks.front().monotonic_ns) - Ts(t.clocks.front().cupti_ns),
                                -kMaxTs, kMaxTs);
    if (has_cupti_records)
      degrade(who + ": CUPTI kept its own clock; GPU times were aligned by a measured offset (" +
              std::to_string(shift) + " ns), so CPU/GPU alignment is approximate");
  }

  // Devices and their SM limits.
  std::map<uint32_t, SmLimits> limits;
  for (size_t i = 0; i < t.devices.size(); ++i) {
    const trace::DeviceRecord& d = t.devices[i];
    profile::GpuDevice out;
    out.id = static_cast<int32_t>(d.id);
    out.name = t.device_names[i];
    out.cc_major = static_cast<int32_t>(d.cc_major);
    out.cc_minor = static_cast<int32_t>(d.cc_minor);
    out.sm_count = static_cast<int32_t>(d.sm_count);
    out.max_warps_per_sm = static_cast<int32_t>(d.max_warps_per_sm);
    out.max_blocks_per_sm = static_cast<int32_t>(d.max_blocks_per_sm);
    out.max_registers_per_sm = static_cast<int32_t>(d.max_registers_per_sm);
    out.max_shared_per_sm = d.max_shared_per_sm;
    out.memory_bandwidth_gbps = static_cast<double>(d.global_memory_bandwidth_kbps) * 1024.0 / 1e9;
    out.memory_bytes = static_cast<int64_t>(d.global_memory_bytes);
    auto table = LimitsForComputeCapability(out.cc_major, out.cc_minor);
    SmLimits sm = table.value_or(SmLimits{});
    if (d.max_warps_per_sm) sm.max_warps = static_cast<int>(d.max_warps_per_sm);
    if (d.max_blocks_per_sm) sm.max_blocks = static_cast<int>(d.max_blocks_per_sm);
    if (d.max_registers_per_sm) sm.registers = static_cast<int>(d.max_registers_per_sm);
    if (d.max_shared_per_sm) sm.shared_bytes = d.max_shared_per_sm;
    if (d.warp_size) sm.warp_size = static_cast<int>(d.warp_size);
    if (!table)
      degrade("compute capability " + std::to_string(out.cc_major) + "." +
              std::to_string(out.cc_minor) +
              " is not in opscope's table: occupancy uses the device's limits with sm_80 "
              "granularities");
    limits[d.id] = sm;
    bool seen = std::any_of(g.devices.begin(), g.devices.end(),
                            [&](const profile::GpuDevice& x) { return x.id == out.id; });
    if (!seen) g.devices.push_back(out);
    if (g.device_name.empty()) g.device_name = out.name;
  }

  // NVTX events -> ranges.
  const size_t first_range = p->ranges.size();
  std::vector<size_t> order(t.nvtx.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return t.nvtx[a].ts_ns < t.nvtx[b].ts_ns; });
  std::map<std::pair<uint32_t, std::string>, std::vector<int32_t>> stacks;
  std::unordered_map<uint64_t, int32_t> started;
  int64_t last_ts = 0;
  size_t unmatched_pops = 0;
  auto domain_name = [](const std::string& d) { return d.empty() ? std::string("nvtx") : d; };
  for (size_t i : order) {
    const NvtxEvent& e = t.nvtx[i];
    last_ts = std::max(last_ts, Ts(e.ts_ns));
    switch (e.kind) {
      case NvtxEvent::kPush: {
        auto& stack = stacks[{e.tid, e.domain}];
        Range r;
        r.name = e.name;
        r.domain = domain_name(e.domain);
        r.tid = static_cast<int32_t>(e.tid);
        r.start_ns = r.end_ns = Ts(e.ts_ns);
        r.depth = static_cast<int32_t>(stack.size());
        r.parent = stack.empty() ? -1 : stack.back();
        stack.push_back(static_cast<int32_t>(p->ranges.size()));
        p->ranges.push_back(std::move(r));
        break;
      }
      case NvtxEvent::kPop: {
        auto& stack = stacks[{e.tid, e.domain}];
        if (stack.empty()) {
          ++unmatched_pops;
          break;
        }
        p->ranges[stack.back()].end_ns = Ts(e.ts_ns);
        stack.pop_back();
        break;
      }
      case NvtxEvent::kStart: {
        Range r;
        r.name = e.name;
        r.domain = domain_name(e.domain);
        r.tid = static_cast<int32_t>(e.tid);
        r.start_ns = r.end_ns = Ts(e.ts_ns);
        started[e.id] = static_cast<int32_t>(p->ranges.size());
        p->ranges.push_back(std::move(r));
        break;
      }
      case NvtxEvent::kEnd: {
        auto it = started.find(e.id);
        if (it == started.end()) {
          ++unmatched_pops;
          break;
        }
        p->ranges[it->second].end_ns = Ts(e.ts_ns);
        started.erase(it);
        break;
      }
      case NvtxEvent::kMark:
        break;
    }
  }

  // API calls and the launch map.
  std::unordered_map<uint32_t, Launch> launches;
  for (size_t i = 0; i < t.api_calls.size(); ++i) {
    const trace::ApiRecord& a = t.api_calls[i];
    profile::GpuApiCall out;
    out.name = ApiDisplayName(t.api_names[i], a.domain == trace::kRuntimeApi);
    out.api = a.domain == trace::kRuntimeApi ? "runtime" : "driver";
    out.tid = static_cast<int32_t>(a.tid);
    out.start_ns = Ts(a.start_ns, shift);
    out.end_ns = Ts(std::max(int64_t{a.end_ns}, int64_t{a.start_ns}), shift);
    out.correlation_id = a.correlation;
    last_ts = std::max(last_ts, out.end_ns);
    g.api_calls.push_back(out);
    Launch& l = launches[a.correlation];
    bool runtime = a.domain == trace::kRuntimeApi;
    if (l.ts == 0 || (runtime && !l.runtime)) l = Launch{a.tid, out.start_ns, runtime};
  }
  for (const auto& k : t.kernels) last_ts = std::max(last_ts, Ts(k.end_ns, shift));
  for (const auto& m : t.memcpys) last_ts = std::max(last_ts, Ts(m.end_ns, shift));

  // Close what is still open.
  size_t still_open = 0;
  for (auto& [key, stack] : stacks)
    for (int32_t r : stack) {
      p->ranges[r].end_ns = std::max(p->ranges[r].start_ns, last_ts);
      ++still_open;
    }
  for (auto& [id, r] : started) {
    p->ranges[r].end_ns = std::max(p->ranges[r].start_ns, last_ts);
    ++still_open;
  }
  if (still_open)
    degrade(who + ": " + std::to_string(still_open) +
            " NVTX ranges were still open when the trace ended; they are closed at its last event");
  if (unmatched_pops)
    degrade(who + ": " + std::to_string(unmatched_pops) +
            " NVTX pops/ends had no matching push/start");

  RangeIndex index(p->ranges, first_range);
  auto attribute = [&](uint32_t corr, uint32_t corr2, int32_t* tid) -> int32_t {
    auto it = launches.find(corr2 ? corr2 : corr);
    if (it == launches.end() && corr2) it = launches.find(corr);
    if (it == launches.end()) return -1;
    *tid = static_cast<int32_t>(it->second.tid);
    return index.Find(it->second.tid, it->second.ts);
  };

  size_t bad_times = 0;
  const size_t first_kernel = g.kernels.size();
  for (size_t i = 0; i < t.kernels.size(); ++i) {
    const trace::KernelRecord& k = t.kernels[i];
    profile::GpuKernel out;
    out.name = DemangleKernelName(t.kernel_names[i]);
    out.device = static_cast<int32_t>(k.device);
    out.stream = static_cast<int32_t>(k.stream);
    out.start_ns = Ts(k.start_ns, shift);
    out.end_ns = Ts(k.end_ns, shift);
    if (out.end_ns < out.start_ns) {
      out.end_ns = out.start_ns;
      ++bad_times;
    }
    for (int d = 0; d < 3; ++d) {
      out.grid[d] = k.grid[d];
      out.block[d] = k.block[d];
    }
    out.registers_per_thread = static_cast<int32_t>(k.registers_per_thread);
    out.static_shared_bytes = k.static_shared_bytes;
    out.dynamic_shared_bytes = k.dynamic_shared_bytes;
    out.correlation_id = k.correlation;
    out.range = attribute(k.correlation, 0, &out.tid);
    auto lim = limits.find(k.device);
    std::optional<SmLimits> sm;
    if (lim != limits.end()) sm = lim->second;
    if (sm) {
      int64_t threads = 1;
      for (int d = 0; d < 3; ++d) threads *= std::clamp<int64_t>(k.block[d], 0, 1 << 12);
      Occupancy o = TheoreticalOccupancy(
          *sm, static_cast<int>(std::min<int64_t>(threads, 1 << 20)),
          static_cast<int>(k.registers_per_thread),
          static_cast<int64_t>(k.static_shared_bytes) + k.dynamic_shared_bytes);
      out.occupancy = o.fraction;
      out.occupancy_limiter = o.limiter;
    }
    g.kernels.push_back(std::move(out));
  }
  JoinKernelMetrics(t, first_kernel, &g, degrade, who);
  std::unordered_map<uint32_t, const trace::CopyContentRecord*> contents;
  for (const auto& c : t.copy_contents) contents[c.correlation] = &c;
  for (const trace::MemcpyRecord& m : t.memcpys) {
    profile::GpuMemcpy out;
    auto content = contents.find(m.runtime_correlation ? m.runtime_correlation : m.correlation);
    if (content != contents.end() && content->second->hash != 0 &&
        content->second->bytes == m.bytes) {
      char hex[17];
      snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(content->second->hash));
      out.content_hash = hex;
      out.content_sampled = content->second->sampled != 0;
    }
    out.kind = MemcpyKindName(m.copy_kind);
    out.bytes = static_cast<int64_t>(std::min<uint64_t>(uint64_t{m.bytes}, kMaxBytes));
    uint8_t host_side = m.copy_kind == trace::kHtoD || m.copy_kind == trace::kHtoA   ? m.src_kind
                        : m.copy_kind == trace::kDtoH || m.copy_kind == trace::kAtoH ? m.dst_kind
                        : m.copy_kind == trace::kHtoH
                            ? (m.src_kind == trace::kMemPageable ? m.src_kind : m.dst_kind)
                            : static_cast<uint8_t>(trace::kMemUnknown);
    out.pageable = host_side == trace::kMemPageable;
    out.device = static_cast<int32_t>(m.device);
    out.stream = static_cast<int32_t>(m.stream);
    out.start_ns = Ts(m.start_ns, shift);
    out.end_ns = Ts(std::max(int64_t{m.end_ns}, int64_t{m.start_ns}), shift);
    out.correlation_id = m.correlation;
    out.async = m.async != 0;
    out.range = attribute(m.correlation, m.runtime_correlation, &out.tid);
    g.memcpys.push_back(std::move(out));
  }
  for (const trace::MemsetRecord& m : t.memsets) {
    profile::GpuMemset out;
    out.bytes = static_cast<int64_t>(std::min<uint64_t>(uint64_t{m.bytes}, kMaxBytes));
    out.device = static_cast<int32_t>(m.device);
    out.stream = static_cast<int32_t>(m.stream);
    out.start_ns = Ts(m.start_ns, shift);
    out.end_ns = Ts(std::max(int64_t{m.end_ns}, int64_t{m.start_ns}), shift);
    out.correlation_id = m.correlation;
    g.memsets.push_back(out);
  }
  for (const trace::SyncRecord& s : t.syncs) {
    profile::GpuSync out;
    out.type = SyncTypeName(s.type);
    out.stream = static_cast<int32_t>(s.stream);
    out.start_ns = Ts(s.start_ns, shift);
    out.end_ns = Ts(std::max(int64_t{s.end_ns}, int64_t{s.start_ns}), shift);
    out.correlation_id = s.correlation;
    auto it = launches.find(s.correlation);
    if (it != launches.end()) out.tid = static_cast<int32_t>(it->second.tid);
    g.syncs.push_back(out);
  }
  auto by_start = [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; };
  std::stable_sort(g.kernels.begin(), g.kernels.end(), by_start);
  std::stable_sort(g.memcpys.begin(), g.memcpys.end(), by_start);
  std::stable_sort(g.memsets.begin(), g.memsets.end(), by_start);
  std::stable_sort(g.api_calls.begin(), g.api_calls.end(), by_start);
  std::stable_sort(g.syncs.begin(), g.syncs.end(), by_start);

  for (const auto& [tid, name] : t.thread_names)
    p->meta.extra["thread." + std::to_string(tid)] = name;
  if (bad_times)
    degrade(who + ": " + std::to_string(bad_times) +
            " kernels had an end before their start (set to zero length)");
  g.dropped_records += t.cupti_dropped + t.tracer_dropped;
  if (t.cupti_dropped)
    degrade(who + ": CUPTI dropped " + std::to_string(t.cupti_dropped) +
            " activity records (its buffers were full): totals undercount the GPU work");
  if (t.tracer_dropped)
    degrade(who + ": the tracer could not write " + std::to_string(t.tracer_dropped) +
            " records (disk full?)");
  for (const std::string& m : t.messages) degrade(who + ": tracer: " + m);
  if (!t.problem.empty()) degrade(t.problem);
  if (t.end_signal) {
    g.end_signal = t.end_signal;
    degrade(who + ": the program died of signal " + std::to_string(t.end_signal) +
            "; its trace was saved up to that point");
  }
  if (!t.ended) {
    g.complete = false;
    degrade(who +
            ": the trace has no end record (the program was killed, or crashed where no handler "
            "could run): activity after the last flush is missing");
  }
}

}  // namespace opscope::gpu
