#include "analysis/gpu_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "base/strings.h"
#include "profile/gpu_kernel_bound.h"

namespace opscope::analysis {
namespace {

using Interval = std::pair<int64_t, int64_t>;

// Durations and sums over the records of a damaged or foreign trace, whose times may lie near
// the int64 range (gpu_decoder_fuzz found 2^62 + 2^62 twice): saturating, and a record that
// ends before it starts lasts 0.
int64_t Dur(int64_t start, int64_t end) {
  if (end <= start) return 0;
  int64_t d = 0;
  return __builtin_sub_overflow(end, start, &d) ? INT64_MAX : d;
}
int64_t SatAdd(int64_t a, int64_t b) {
  int64_t s = 0;
  if (!__builtin_add_overflow(a, b, &s)) return s;
  return b > 0 ? INT64_MAX : INT64_MIN;
}

std::vector<Interval> Merge(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (i.second <= i.first) continue;
    if (!out.empty() && i.first <= out.back().second)
      out.back().second = std::max(out.back().second, i.second);
    else
      out.push_back(i);
  }
  return out;
}

int64_t Length(const std::vector<Interval>& v) {
  int64_t n = 0;
  for (const Interval& i : v) n = SatAdd(n, Dur(i.first, i.second));
  return n;
}

// Both inputs merged and sorted.
int64_t IntersectionLength(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t n = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    int64_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (hi > lo) n = SatAdd(n, Dur(lo, hi));
    if (a[i].second < b[j].second)
      ++i;
    else
      ++j;
  }
  return n;
}

std::vector<Interval> Clip(const std::vector<Interval>& v, Interval w) {
  std::vector<Interval> out;
  auto it =
      std::lower_bound(v.begin(), v.end(), Interval{w.first, w.first},
                       [](const Interval& a, const Interval& b) { return a.second < b.first; });
  for (; it != v.end() && it->first < w.second; ++it) {
    int64_t lo = std::max(it->first, w.first), hi = std::min(it->second, w.second);
    if (hi > lo) out.push_back({lo, hi});
  }
  return out;
}

struct Accum {
  int64_t calls = 0;
  double total = 0, min = std::numeric_limits<double>::max(), max = 0;
  void Add(double ns) {
    ++calls;
    total += ns;
    min = std::min(min, ns);
    max = std::max(max, ns);
  }
};

std::vector<ActivityRow> Rows(const std::map<std::pair<std::string, std::string>, Accum>& groups) {
  std::vector<ActivityRow> rows;
  double all = 0;
  for (const auto& [key, a] : groups) all += a.total;
  for (const auto& [key, a] : groups) {
    ActivityRow r;
    r.type = key.first;
    r.name = key.second;
    r.calls = a.calls;
    r.total_ns = a.total;
    r.min_ns = a.calls ? a.min : 0;
    r.max_ns = a.max;
    r.avg_ns = a.calls ? a.total / a.calls : 0;
    r.pct = all > 0 ? 100.0 * a.total / all : 0;
    rows.push_back(r);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const ActivityRow& x, const ActivityRow& y) {
    return x.total_ns > y.total_ns;
  });
  return rows;
}

bool IsSynchronousCopyApi(const profile::GpuApiCall& a) {
  if (a.api == "runtime")
    return StartsWith(a.name, "cudaMemcpy") && a.name.find("Async") == std::string::npos;
  return false;  // driver calls nested in runtime calls would count twice
}

// Iteration windows: instances of the chosen range, sorted by start.
std::vector<Interval> IterationWindows(const profile::Profile& p, const SummaryOptions& o,
                                       std::string* name) {
  std::map<std::string, std::pair<int64_t, int64_t>> top;  // name -> (count, total ns)
  for (const profile::Range& r : p.ranges) {
    bool eligible = o.iteration_range.empty() ? r.parent == -1 : r.name == o.iteration_range;
    if (!eligible) continue;
    auto& t = top[r.name];
    ++t.first;
    // Saturating (Dur, SatAdd): the sum only ranks the candidates.
    t.second = SatAdd(t.second, Dur(r.start_ns, r.end_ns));
  }
  std::string best;
  std::pair<int64_t, int64_t> best_v{0, 0};
  for (const auto& [n, v] : top)
    if (v.first >= 2 && v > best_v) {
      best = n;
      best_v = v;
    }
  if (!o.iteration_range.empty() && top.count(o.iteration_range)) best = o.iteration_range;
  std::vector<Interval> w;
  if (best.empty()) return w;
  for (const profile::Range& r : p.ranges)
    if (r.name == best && (o.iteration_range.empty() ? r.parent == -1 : true))
      w.push_back({r.start_ns, r.end_ns});
  std::sort(w.begin(), w.end());
  *name = best;
  return w;
}

int IterationOf(const std::vector<Interval>& windows, int64_t ts) {
  auto it = std::upper_bound(windows.begin(), windows.end(),
                             Interval{ts, std::numeric_limits<int64_t>::max()});
  if (it == windows.begin()) return -1;
  --it;
  return ts <= it->second ? static_cast<int>(it - windows.begin()) : -1;
}

std::vector<KernelThroughputRow> ThroughputRows(const profile::GpuSection& g) {
  struct Sum {
    double weight[4] = {0, 0, 0, 0}, value[4] = {0, 0, 0, 0};
  };
  std::map<std::string, KernelThroughputRow> rows;
  std::map<std::string, Sum> sums;
  double total = 0;
  for (const auto& k : g.kernels) {
    if (k.bound.empty()) continue;
    KernelThroughputRow& r = rows[k.name];
    if (r.launches == 0) {
      r.name = k.name;
      r.theoretical_occupancy = k.occupancy;
      r.registers_per_thread = k.registers_per_thread;
      r.shared_bytes_per_block = k.static_shared_bytes + k.dynamic_shared_bytes;
    }
    ++r.launches;
    // Weight by the replayed duration; a launch CUPTI gave no duration counts as 1 ns.
    double w = k.metrics_duration_ns > 0 ? k.metrics_duration_ns : 1;
    r.duration_ns += std::max(0.0, k.metrics_duration_ns);
    total += std::max(0.0, k.metrics_duration_ns);
    Sum& sum = sums[k.name];
    const double v[4] = {k.sm_throughput_pct, k.memory_throughput_pct, k.dram_throughput_pct,
                         k.achieved_occupancy_pct};
    for (int i = 0; i < 4; ++i)
      if (v[i] >= 0) {
        sum.weight[i] += w;
        sum.value[i] += w * v[i];
      }
  }
  std::vector<KernelThroughputRow> out;
  for (auto& [name, r] : rows) {
    const Sum& sum = sums[name];
    double* fields[4] = {&r.sm_pct, &r.memory_pct, &r.dram_pct, &r.achieved_occupancy_pct};
    for (int i = 0; i < 4; ++i)
      if (sum.weight[i] > 0) *fields[i] = sum.value[i] / sum.weight[i];
    r.pct = total > 0 ? 100.0 * r.duration_ns / total : 0;
    r.bound = profile::ClassifyKernelBound(r.sm_pct, r.memory_pct, r.dram_pct);
    r.low_occupancy =
        r.bound == "latency" && profile::LowAchievedOccupancy(r.achieved_occupancy_pct);
    out.push_back(r);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const KernelThroughputRow& a, const KernelThroughputRow& b) {
                     return a.duration_ns > b.duration_ns;
                   });
  return out;
}

std::string Pct(double part, double whole) {
  return whole > 0 ? fmt::format("{:.0f}%", 100.0 * part / whole) : "0%";
}

}  // namespace

std::string LayerKey(const std::string& name) {
  std::string out;
  size_t pos = 0;
  while (pos < name.size()) {
    size_t comma = name.find(", ", pos);
    std::string_view part(name.data() + pos,
                          (comma == std::string::npos ? name.size() : comma) - pos);
    bool drop = false;
    if (pos > 0) {
      for (std::string_view key : {"seq = ", "op_id = ", "input_op_ids = "}) {
        if (part.substr(0, key.size()) != key) continue;
        std::string_view value = part.substr(key.size());
        if (key == "input_op_ids = ") {
          // A bracketed list that may itself contain ", ": skip to its closing bracket.
          size_t close = name.find(']', pos);
          if (!value.empty() && value[0] == '[' && close != std::string::npos) {
            comma = name.find(", ", close);
            drop = true;
          }
        } else {
          drop = !value.empty() && value.find_first_not_of("0123456789") == std::string_view::npos;
        }
      }
    }
    if (!drop) {
      if (!out.empty()) out += ", ";
      out += part;
    }
    if (comma == std::string::npos) break;
    pos = comma + 2;
  }
  return out;
}

GpuSummary Summarize(const profile::Profile& p, const SummaryOptions& o) {
  GpuSummary s;
  if (!p.gpu) return s;
  const profile::GpuSection& g = *p.gpu;

  // nvprof-style tables.
  std::map<std::pair<std::string, std::string>, Accum> gpu_groups, api_groups;
  for (const auto& k : g.kernels) {
    gpu_groups[{"kernel", k.name}].Add(static_cast<double>(Dur(k.start_ns, k.end_ns)));
    s.kernel_ns += static_cast<double>(Dur(k.start_ns, k.end_ns));
  }
  for (const auto& m : g.memcpys)
    gpu_groups[{"memcpy", "[CUDA memcpy " + m.kind + "]"}].Add(
        static_cast<double>(Dur(m.start_ns, m.end_ns)));
  for (const auto& m : g.memsets)
    gpu_groups[{"memset", "[CUDA memset]"}].Add(static_cast<double>(Dur(m.start_ns, m.end_ns)));
  for (const auto& a : g.api_calls)
    api_groups[{a.api, a.name}].Add(static_cast<double>(Dur(a.start_ns, a.end_ns)));
  s.gpu_activities = Rows(gpu_groups);
  s.api_calls = Rows(api_groups);

  // Per layer.
  std::map<std::string, LayerRow> layers;
  std::map<std::string, std::set<int32_t>> instances;
  for (const auto& k : g.kernels) {
    std::string name = k.range >= 0 ? LayerKey(p.ranges[k.range].name) : "(no range)";
    LayerRow& row = layers[name];
    row.name = name;
    ++row.kernels;
    row.kernel_ns += static_cast<double>(Dur(k.start_ns, k.end_ns));
    if (k.range >= 0) instances[name].insert(k.range);
  }
  for (const auto& m : g.memcpys) {
    std::string name = m.range >= 0 ? LayerKey(p.ranges[m.range].name) : "(no range)";
    LayerRow& row = layers[name];
    row.name = name;
    row.copy_ns += static_cast<double>(Dur(m.start_ns, m.end_ns));
    if (m.range >= 0) instances[name].insert(m.range);
  }
  for (auto& [name, row] : layers) {
    row.pct = s.kernel_ns > 0 ? 100.0 * row.kernel_ns / s.kernel_ns : 0;
    for (int32_t r : instances[name]) {
      ++row.instances;
      row.range_ns += static_cast<double>(Dur(p.ranges[r].start_ns, p.ranges[r].end_ns));
    }
    s.layers.push_back(row);
  }
  std::stable_sort(s.layers.begin(), s.layers.end(), [](const LayerRow& a, const LayerRow& b) {
    return a.kernel_ns + a.copy_ns > b.kernel_ns + b.copy_ns;
  });

  // Copies per direction.
  std::map<std::string, CopyDirection> dirs;
  std::map<std::string, std::pair<double, double>>
      pageable_time;  // kind -> (pageable ns, pinned ns)
  for (const auto& m : g.memcpys) {
    CopyDirection& d = dirs[m.kind];
    d.kind = m.kind;
    ++d.count;
    d.bytes = SatAdd(d.bytes, m.bytes);
    d.ns += static_cast<double>(Dur(m.start_ns, m.end_ns));
    (m.pageable ? pageable_time[m.kind].first : pageable_time[m.kind].second) +=
        static_cast<double>(Dur(m.start_ns, m.end_ns));
    if (m.pageable) {
      ++d.pageable_count;
      d.pageable_bytes = SatAdd(d.pageable_bytes, m.bytes);
    }
  }
  for (auto& [kind, d] : dirs) {
    d.gbps = d.ns > 0 ? static_cast<double>(d.bytes) / d.ns : 0;
    auto [pg_ns, pin_ns] = pageable_time[kind];
    d.pageable_gbps = pg_ns > 0 ? static_cast<double>(d.pageable_bytes) / pg_ns : 0;
    d.pinned_gbps = pin_ns > 0 ? static_cast<double>(d.bytes - d.pageable_bytes) / pin_ns : 0;
    s.copies.push_back(d);
  }

  // Iterations.
  std::string iter_name;
  std::vector<Interval> windows = IterationWindows(p, o, &iter_name);

  // Repeated copies: same direction and size, in (nearly) every iteration.
  std::unordered_map<uint32_t, int64_t> launch_time;
  for (const auto& a : g.api_calls) {
    auto [it, fresh] = launch_time.emplace(a.correlation_id, a.start_ns);
    if (!fresh) it->second = std::min(it->second, a.start_ns);
  }
  std::map<std::pair<std::string, int64_t>, RepeatedCopy> groups;
  std::map<std::pair<std::string, int64_t>, std::set<int>> group_iters;
  std::map<std::pair<std::string, int64_t>, std::map<std::string, int64_t>> group_contents;
  for (const auto& m : g.memcpys) {
    if (!m.content_hash.empty()) ++group_contents[{m.kind, m.bytes}][m.content_hash];
    RepeatedCopy& r = groups[{m.kind, m.bytes}];
    r.kind = m.kind;
    r.bytes_each = m.bytes;
    ++r.count;
    r.total_ns += static_cast<double>(Dur(m.start_ns, m.end_ns));
    r.pageable = r.pageable || m.pageable;
    auto lt = launch_time.find(m.correlation_id);
    int it = IterationOf(windows, lt != launch_time.end() ? lt->second : m.start_ns);
    if (it >= 0) group_iters[{m.kind, m.bytes}].insert(it);
  }
  const int64_t n_iter = static_cast<int64_t>(windows.size());
  for (auto& [key, r] : groups) {
    r.iterations_with = static_cast<int64_t>(group_iters[key].size());
    for (const auto& [hash, n] : group_contents[key]) {
      r.fingerprinted += n;
      r.same_content = std::max(r.same_content, n);
    }
    if (r.kind != "HtoD" || r.bytes_each < kMinRepeatedCopyBytes) continue;
    bool repeated =
        n_iter >= kMinRepeats
            ? r.iterations_with >=
                  std::max<int64_t>(
                      kMinRepeats,
                      static_cast<int64_t>(std::ceil(kRepeatedCopyIterationShare * n_iter)))
            : r.count >= kMinRepeats;
    bool changing = r.fingerprinted >= kMinRepeats &&
                    static_cast<double>(r.same_content) <
                        kRepeatedCopyIterationShare * static_cast<double>(r.fingerprinted);
    if (repeated && !changing) s.repeated_copies.push_back(r);
  }
  std::stable_sort(
      s.repeated_copies.begin(), s.repeated_copies.end(),
      [](const RepeatedCopy& a, const RepeatedCopy& b) { return a.total_ns > b.total_ns; });

  // GPU busy time and gaps.
  std::vector<Interval> busy_raw;
  for (const auto& k : g.kernels) busy_raw.push_back({k.start_ns, k.end_ns});
  for (const auto& m : g.memcpys) busy_raw.push_back({m.start_ns, m.end_ns});
  for (const auto& m : g.memsets) busy_raw.push_back({m.start_ns, m.end_ns});
  std::vector<Interval> busy = Merge(busy_raw);
  s.idle.threshold_ns = o.gap_threshold_ns;
  if (!busy.empty()) {
    s.idle.span_ns = Dur(busy.front().first, busy.back().second);
    s.idle.busy_ns = Length(busy);
    for (size_t i = 1; i < busy.size(); ++i) {
      int64_t gap = Dur(busy[i - 1].second, busy[i].first);
      s.idle.largest_gap_ns = std::max(s.idle.largest_gap_ns, gap);
      if (gap > o.gap_threshold_ns) {
        ++s.idle.gaps;
        s.idle.gap_ns = SatAdd(s.idle.gap_ns, gap);
      }
    }
  }

  // Host waiting.
  std::vector<Interval> blocked_raw;
  std::map<std::string, int64_t> by_type;
  for (const auto& y : g.syncs) {
    s.waiting.sync_ns = SatAdd(s.waiting.sync_ns, Dur(y.start_ns, y.end_ns));
    ++s.waiting.sync_calls;
    by_type[y.type] = SatAdd(by_type[y.type], Dur(y.start_ns, y.end_ns));
    if (y.type != "stream_wait_event") blocked_raw.push_back({y.start_ns, y.end_ns});
  }
  s.waiting.sync_by_type.assign(by_type.begin(), by_type.end());
  for (const auto& a : g.api_calls)
    if (IsSynchronousCopyApi(a)) {
      s.waiting.sync_copy_ns = SatAdd(s.waiting.sync_copy_ns, Dur(a.start_ns, a.end_ns));
      ++s.waiting.sync_copy_calls;
      blocked_raw.push_back({a.start_ns, a.end_ns});
    }
  std::vector<Interval> blocked = Merge(blocked_raw);

  // Iteration split.
  if (windows.empty()) {
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    for (const auto& a : g.api_calls) {
      lo = std::min(lo, a.start_ns);
      hi = std::max(hi, a.end_ns);
    }
    if (!busy.empty()) {
      lo = std::min(lo, busy.front().first);
      hi = std::max(hi, busy.back().second);
    }
    if (hi > lo) windows.push_back({lo, hi});
  } else {
    s.split.range = iter_name;
  }
  double window_sum = 0, cpu_only = 0, gpu_only = 0, overlap = 0, both = 0;
  for (const Interval& w : windows) {
    std::vector<Interval> gb = Clip(busy, w), hb = Clip(blocked, w);
    int64_t len = Dur(w.first, w.second), lg = Length(gb), lb = Length(hb),
            gi = IntersectionLength(gb, hb);
    window_sum += static_cast<double>(len);
    gpu_only += static_cast<double>(gi);
    overlap += static_cast<double>(lg) - static_cast<double>(gi);
    both += static_cast<double>(lb) - static_cast<double>(gi);
    cpu_only += std::max(0.0, static_cast<double>(len) - static_cast<double>(lg) -
                                  static_cast<double>(lb) + static_cast<double>(gi));
  }
  s.split.iterations = static_cast<int64_t>(windows.size());
  if (!windows.empty()) {
    double n = static_cast<double>(windows.size());
    s.split.window_ns = window_sum / n;
    s.split.cpu_only_ns = cpu_only / n;
    s.split.gpu_only_ns = gpu_only / n;
    s.split.overlap_ns = overlap / n;
    s.split.both_wait_ns = both / n;
  }
  s.throughput = ThroughputRows(g);
  return s;
}

std::vector<profile::Finding> GpuFindings(const profile::Profile& p, const GpuSummary& s) {
  std::vector<profile::Finding> out;
  if (!p.gpu) return out;
  const int64_t n_iter = s.split.range.empty() ? 0 : s.split.iterations;

  for (const RepeatedCopy& r : s.repeated_copies) {
    profile::Finding f;
    f.rule = "gpu-repeated-copy";
    f.severity = profile::Severity::kWarning;
    f.title = fmt::format("the same {} host-to-device copy is repeated {}",
                          HumanBytes(static_cast<double>(r.bytes_each)),
                          n_iter ? "every iteration" : fmt::format("{} times", r.count));
    f.evidence =
        n_iter
            ? fmt::format(
                  "{} copies of {} bytes HtoD in {} of {} '{}' iterations, {} of copy time in "
                  "total",
                  r.count, r.bytes_each, r.iterations_with, n_iter, s.split.range,
                  FormatNs(r.total_ns))
            : fmt::format(
                  "{} copies of {} bytes HtoD, {} of copy time in total (no NVTX iteration range "
                  "found: counted over the whole run)",
                  r.count, r.bytes_each, FormatNs(r.total_ns));
    if (r.fingerprinted >= kMinRepeats) {
      f.title += " with the same content";
      f.evidence += fmt::format("; {} of {} fingerprinted copies carried identical bytes",
                                r.same_content, r.fingerprinted);
      f.suggestion =
          "the bytes do not change: copy them to the GPU once before the loop and keep the device "
          "buffer";
    } else {
      f.evidence += "; content not fingerprinted, so matched by size and direction only";
      f.suggestion =
          "if its content does not change between iterations (weights, configuration, lookup "
          "tables), "
          "copy it to the GPU once before the loop and keep the device buffer";
    }
    f.ops = {fmt::format("[CUDA memcpy HtoD] {} bytes", r.bytes_each)};
    f.numbers = {{"bytes_each", static_cast<double>(r.bytes_each)},
                 {"count", static_cast<double>(r.count)},
                 {"iterations_with", static_cast<double>(r.iterations_with)},
                 {"iterations", static_cast<double>(n_iter)},
                 {"total_ns", r.total_ns},
                 {"fingerprinted", static_cast<double>(r.fingerprinted)},
                 {"same_content", static_cast<double>(r.same_content)}};
    out.push_back(std::move(f));
  }

  for (const CopyDirection& d : s.copies) {
    if (d.pageable_count == 0) continue;
    profile::Finding f;
    f.rule = "gpu-pageable-copy";
    f.severity =
        d.pageable_bytes >= (1 << 20) ? profile::Severity::kWarning : profile::Severity::kInfo;
    f.title = fmt::format("{} {} copies use pageable host memory", d.pageable_count, d.kind);
    f.evidence = fmt::format(
        "{} of {} {} copies ({}) from/to pageable memory at {:.2f} GB/s{}", d.pageable_count,
        d.count, d.kind, HumanBytes(static_cast<double>(d.pageable_bytes)), d.pageable_gbps,
        d.pinned_gbps > 0 ? fmt::format(" (pinned copies here: {:.2f} GB/s)", d.pinned_gbps) : "");
    f.suggestion =
        "allocate the host buffers with cudaHostAlloc/cudaMallocHost (or cudaHostRegister them): "
        "pinned "
        "copies are faster and can overlap with kernels through cudaMemcpyAsync";
    f.ops = {"[CUDA memcpy " + d.kind + "]"};
    f.numbers = {{"pageable_count", static_cast<double>(d.pageable_count)},
                 {"pageable_bytes", static_cast<double>(d.pageable_bytes)},
                 {"pageable_gbps", d.pageable_gbps},
                 {"pinned_gbps", d.pinned_gbps}};
    out.push_back(std::move(f));
  }

  const IterationSplit& sp = s.split;
  if (sp.window_ns > 0 && !p.gpu->kernels.empty()) {
    double cpu_share = sp.cpu_only_ns / sp.window_ns,
           wait_share = (sp.gpu_only_ns + sp.both_wait_ns) / sp.window_ns;
    std::string where =
        sp.range.empty() ? "of the traced span" : fmt::format("of each '{}' iteration", sp.range);
    std::map<std::string, double> numbers = {{"window_ns", sp.window_ns},
                                             {"cpu_only_ns", sp.cpu_only_ns},
                                             {"gpu_only_ns", sp.gpu_only_ns},
                                             {"overlap_ns", sp.overlap_ns},
                                             {"both_wait_ns", sp.both_wait_ns}};
    std::string evidence = fmt::format(
        "{} {}: CPU only {} ({}), GPU only {} ({}), overlapped {} ({}), both waiting {} ({})",
        FormatNs(sp.window_ns), where, FormatNs(sp.cpu_only_ns), Pct(sp.cpu_only_ns, sp.window_ns),
        FormatNs(sp.gpu_only_ns), Pct(sp.gpu_only_ns, sp.window_ns), FormatNs(sp.overlap_ns),
        Pct(sp.overlap_ns, sp.window_ns), FormatNs(sp.both_wait_ns),
        Pct(sp.both_wait_ns, sp.window_ns));
    if (cpu_share >= 0.3) {
      profile::Finding f;
      f.rule = "gpu-waits-for-cpu";
      f.severity = cpu_share >= 0.5 ? profile::Severity::kWarning : profile::Severity::kInfo;
      f.title = fmt::format("the GPU is idle {} {} while the CPU works",
                            Pct(sp.cpu_only_ns, sp.window_ns), where);
      f.evidence = evidence;
      f.suggestion =
          "the CPU side (pre/post-processing, launches) is the bottleneck: profile it (`opscope "
          "record`), "
          "move the work to the GPU, or pipeline it with the GPU work of the previous iteration";
      f.numbers = numbers;
      out.push_back(std::move(f));
    }
    if (wait_share >= 0.3) {
      profile::Finding f;
      f.rule = "cpu-waits-for-gpu";
      f.severity = profile::Severity::kInfo;
      f.title = fmt::format("the CPU waits for the GPU {} {}",
                            Pct(sp.gpu_only_ns + sp.both_wait_ns, sp.window_ns), where);
      f.evidence =
          evidence +
          fmt::format(
              "; host blocked in synchronization {} over {} calls, in synchronous copies {}",
              FormatNs(static_cast<double>(s.waiting.sync_ns)), s.waiting.sync_calls,
              FormatNs(static_cast<double>(s.waiting.sync_copy_ns)));
      f.suggestion =
          "the GPU work bounds the iteration; if the CPU has independent work (next frame's "
          "pre-processing), overlap it with the GPU using streams and asynchronous copies instead "
          "of "
          "synchronizing early";
      f.numbers = numbers;
      out.push_back(std::move(f));
    }
  }

  // Low theoretical occupancy on kernels that matter.
  std::map<std::string, std::pair<double, const profile::GpuKernel*>> by_name;
  for (const auto& k : p.gpu->kernels) {
    auto& e = by_name[k.name];
    e.first += static_cast<double>(Dur(k.start_ns, k.end_ns));
    e.second = &k;
  }
  for (const auto& [name, e] : by_name) {
    const profile::GpuKernel& k = *e.second;
    if (s.kernel_ns <= 0 || e.first < 0.1 * s.kernel_ns || k.occupancy <= 0 || k.occupancy >= 0.25)
      continue;
    profile::Finding f;
    f.rule = "gpu-low-occupancy";
    f.severity = profile::Severity::kInfo;
    f.title = fmt::format("kernel {} can keep only {:.0f}% of the SM's warps busy", name,
                          100 * k.occupancy);
    f.evidence = fmt::format(
        "{} of kernel time; block {}x{}x{}, {} registers/thread, {} bytes shared memory: "
        "theoretical occupancy {:.0f}%, limited by {}",
        Pct(e.first, s.kernel_ns), k.block[0], k.block[1], k.block[2], k.registers_per_thread,
        k.static_shared_bytes + k.dynamic_shared_bytes, 100 * k.occupancy,
        profile::LimiterName(k.occupancy_limiter));
    f.suggestion =
        "low occupancy hides memory latency poorly: use larger blocks, fewer registers "
        "(__launch_bounds__, -maxrregcount) or less shared memory per block, unless the kernel is "
        "deliberately tuned for instruction-level parallelism";
    f.ops = {name};
    f.numbers = {{"occupancy", k.occupancy}, {"kernel_ns", e.first}};
    out.push_back(std::move(f));
  }
  return out;
}

std::string FormatNs(double ns) {
  if (ns >= 1e9) return fmt::format("{:.3f}s", ns / 1e9);
  if (ns >= 1e6) return fmt::format("{:.3f}ms", ns / 1e6);
  if (ns >= 1e3) return fmt::format("{:.2f}us", ns / 1e3);
  return fmt::format("{:.0f}ns", ns);
}

}  // namespace opscope::analysis
