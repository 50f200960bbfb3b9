// The gpu section: nvprof's column layout for the activity and API tables, then what nvprof
// never showed — per layer, copies, waiting, findings.
#include "report/gpu_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "analysis/format.h"
#include "analysis/gpu_summary.h"
#include "base/strings.h"
#include "profile/gpu_kernel_bound.h"
#include "report/format.h"

namespace opscope::report {

using analysis::ActivityRow;
using analysis::FormatNs;
using analysis::KernelThroughputRow;
using analysis::LayerRow;
using profile::kBoundPct;
using profile::LimiterName;
namespace {

constexpr size_t kMaxRows = 40;

void ActivityTable(std::string& out, bool wide, const char* title,
                   const std::vector<ActivityRow>& rows, bool show_type) {
  if (rows.empty()) return;
  out += fmt::format("{}\n {:>7} {:>11} {:>8} {:>11} {:>11} {:>11}  {}\n", title, "Time(%)", "Time",
                     "Calls", "Avg", "Min", "Max", "Name");
  for (size_t i = 0; i < rows.size() && i < kMaxRows; ++i) {
    const ActivityRow& r = rows[i];
    out += fmt::format(" {:>6.2f}% {:>11} {:>8} {:>11} {:>11} {:>11}  {}{}\n", r.pct,
                       FormatNs(r.total_ns), r.calls, FormatNs(r.avg_ns), FormatNs(r.min_ns),
                       FormatNs(r.max_ns), ClipName(r.name, 100, wide),
                       show_type ? " (" + r.type + ")" : "");
  }
  if (rows.size() > kMaxRows)
    out += fmt::format("  ... {} more rows in the JSON profile\n", rows.size() - kMaxRows);
  out += "\n";
}

std::vector<ActivityRow> OfApi(const std::vector<ActivityRow>& rows, const std::string& api) {
  std::vector<ActivityRow> out;
  double total = 0;
  for (const auto& r : rows)
    if (r.type == api) {
      out.push_back(r);
      total += r.total_ns;
    }
  for (auto& r : out) r.pct = total > 0 ? 100.0 * r.total_ns / total : 0;
  return out;
}

}  // namespace

std::string FormatGpuReport(const profile::Profile& p, const analysis::GpuSummary& s,
                            bool gpu_trace, bool findings, bool wide) {
  auto Clip = [wide](const std::string& name, size_t n) { return ClipName(name, n, wide); };
  std::string out;
  if (!p.gpu) return "no GPU activity recorded\n";
  const profile::GpuSection& g = *p.gpu;
  out += fmt::format("==== opscope gpu: {}\n", p.meta.source);
  for (const auto& d : g.devices)
    out += fmt::format(
        "device {}: {} (compute capability {}.{}, {} SMs{})\n", d.id, d.name, d.cc_major,
        d.cc_minor, d.sm_count,
        d.memory_bandwidth_gbps > 0 ? fmt::format(", {:.0f} GB/s", d.memory_bandwidth_gbps) : "");
  out += fmt::format("{} kernels, {} copies, {} memsets, {} API calls, {} NVTX ranges\n\n",
                     g.kernels.size(), g.memcpys.size(), g.memsets.size(), g.api_calls.size(),
                     p.ranges.size());

  ActivityTable(out, wide, "GPU activities:", s.gpu_activities, false);
  ActivityTable(out, wide, "API calls (runtime):", OfApi(s.api_calls, "runtime"), false);
  ActivityTable(out, wide, "API calls (driver):", OfApi(s.api_calls, "driver"), false);

  bool any_range = std::any_of(s.layers.begin(), s.layers.end(),
                               [](const LayerRow& l) { return l.instances > 0; });
  if (any_range) {
    out +=
        "Per layer (kernels and copies by the innermost NVTX range open on the launching "
        "thread):\n";
    out +=
        fmt::format(" {:>7} {:>11} {:>8} {:>10} {:>11} {:>11} {:>11}  {}\n", "Kern(%)", "Kernels",
                    "Launches", "Instances", "Per inst.", "Copies", "Range CPU", "Range");
    for (size_t i = 0; i < s.layers.size() && i < kMaxRows; ++i) {
      const LayerRow& l = s.layers[i];
      out += fmt::format(
          " {:>6.2f}% {:>11} {:>8} {:>10} {:>11} {:>11} {:>11}  {}\n", l.pct, FormatNs(l.kernel_ns),
          l.kernels, l.instances, l.instances ? FormatNs(l.kernel_ns / l.instances) : "-",
          FormatNs(l.copy_ns), l.instances ? FormatNs(l.range_ns) : "-", Clip(l.name, 80));
    }
    out += "\n";
  }

  if (!s.copies.empty()) {
    out += "Copies:\n";
    out += fmt::format(" {:<6} {:>8} {:>11} {:>11} {:>9} {:>10} {:>12}\n", "Kind", "Count", "Bytes",
                       "Time", "GB/s", "Pageable", "Pageable B");
    for (const auto& d : s.copies)
      out += fmt::format(" {:<6} {:>8} {:>11} {:>11} {:>9.2f} {:>10} {:>12}\n", d.kind, d.count,
                         HumanBytes(static_cast<double>(d.bytes)), FormatNs(d.ns), d.gbps,
                         d.pageable_count, HumanBytes(static_cast<double>(d.pageable_bytes)));
    for (const auto& r : s.repeated_copies)
      out += fmt::format(
          " repeated: {} x {} {} ({} of {} iterations){}{}\n", r.count,
          HumanBytes(static_cast<double>(r.bytes_each)), r.kind, r.iterations_with,
          s.split.range.empty() ? 0 : s.split.iterations, r.pageable ? ", pageable" : "",
          r.fingerprinted ? fmt::format(", same bytes in {} of {}", r.same_content, r.fingerprinted)
                          : std::string(", content not fingerprinted"));
    out += "\n";
  }

  out += "Idle and waiting:\n";
  if (s.idle.span_ns > 0)
    out += fmt::format(
        " GPU busy {} of {} ({:.0f}%); {} gaps longer than {} total {}; largest gap {}\n",
        FormatNs(static_cast<double>(s.idle.busy_ns)),
        FormatNs(static_cast<double>(s.idle.span_ns)), 100.0 * s.idle.busy_ns / s.idle.span_ns,
        s.idle.gaps, FormatNs(static_cast<double>(s.idle.threshold_ns)),
        FormatNs(static_cast<double>(s.idle.gap_ns)),
        FormatNs(static_cast<double>(s.idle.largest_gap_ns)));
  std::string types;
  for (const auto& [type, ns] : s.waiting.sync_by_type)
    types +=
        fmt::format("{}{} {}", types.empty() ? "" : ", ", type, FormatNs(static_cast<double>(ns)));
  out += fmt::format(
      " host blocked in synchronization {} ({} waits{}{}); in synchronous copies {} ({} calls)\n",
      FormatNs(static_cast<double>(s.waiting.sync_ns)), s.waiting.sync_calls,
      types.empty() ? "" : ": ", types, FormatNs(static_cast<double>(s.waiting.sync_copy_ns)),
      s.waiting.sync_copy_calls);
  if (s.split.window_ns > 0) {
    const auto& sp = s.split;
    auto pct = [&](double v) { return 100.0 * v / sp.window_ns; };
    out += fmt::format(
        " {}: {} each; CPU only {} ({:.0f}%), GPU only {} ({:.0f}%), overlapped {} ({:.0f}%), "
        "both waiting {} ({:.0f}%)\n",
        sp.range.empty() ? std::string("whole run as one iteration")
                         : fmt::format("{} '{}' iterations", sp.iterations, sp.range),
        FormatNs(sp.window_ns), FormatNs(sp.cpu_only_ns), pct(sp.cpu_only_ns),
        FormatNs(sp.gpu_only_ns), pct(sp.gpu_only_ns), FormatNs(sp.overlap_ns), pct(sp.overlap_ns),
        FormatNs(sp.both_wait_ns), pct(sp.both_wait_ns));
  }
  out += "\n";

  // Occupancy of the kernels that take the time.
  std::vector<const ActivityRow*> top;
  for (const auto& r : s.gpu_activities)
    if (r.type == "kernel" && top.size() < 10) top.push_back(&r);
  if (!top.empty()) {
    out += "Theoretical occupancy (top kernels by time):\n";
    out += fmt::format(" {:>6} {:>14} {:>16} {:>5} {:>8}  {}\n", "Occ.", "Limited by", "Block",
                       "Regs", "Shared", "Name");
    for (const ActivityRow* r : top) {
      auto k = std::find_if(g.kernels.begin(), g.kernels.end(),
                            [&](const profile::GpuKernel& x) { return x.name == r->name; });
      if (k == g.kernels.end()) continue;
      out += fmt::format(" {:>6} {:>14} {:>16} {:>5} {:>8}  {}\n",
                         k->occupancy > 0 ? fmt::format("{:.0f}%", 100 * k->occupancy) : "?",
                         LimiterName(k->occupancy_limiter),
                         fmt::format("{}x{}x{}", k->block[0], k->block[1], k->block[2]),
                         k->registers_per_thread, k->static_shared_bytes + k->dynamic_shared_bytes,
                         Clip(k->name, 80));
    }
    out += "\n";
  }

  if (!s.throughput.empty()) {
    out += fmt::format(
        "Kernel throughput (--metrics: CUPTI range profiler, {} replay pass(es) per kernel; "
        "% of peak; bound at {:.0f}%):\n",
        g.metrics_passes, kBoundPct);
    out += fmt::format(" {:>6} {:>8} {:>5} {:>5} {:>5} {:>8} {:>8} {:>5} {:>8} {:>11}  {:<24} {}\n",
                       "Time%", "Launches", "SM", "Mem", "DRAM", "Ach.occ", "Th.occ", "Regs",
                       "Shared", "Avg time", "Bound", "Name");
    auto pct = [](double v) { return v >= 0 ? fmt::format("{:.0f}", v) : std::string("?"); };
    for (size_t i = 0; i < s.throughput.size() && i < kMaxRows; ++i) {
      const KernelThroughputRow& r = s.throughput[i];
      std::string bound = r.bound.empty() ? "?" : r.bound + "-bound";
      if (r.low_occupancy) bound += " (low occ.)";
      out += fmt::format(
          " {:>5.1f}% {:>8} {:>5} {:>5} {:>5} {:>8} {:>8} {:>5} {:>8} {:>11}  {:<24} {}\n", r.pct,
          r.launches, pct(r.sm_pct), pct(r.memory_pct), pct(r.dram_pct),
          r.achieved_occupancy_pct >= 0 ? pct(r.achieved_occupancy_pct) + "%" : "?",
          r.theoretical_occupancy > 0 ? fmt::format("{:.0f}%", 100 * r.theoretical_occupancy) : "?",
          r.registers_per_thread, r.shared_bytes_per_block,
          FormatNs(r.launches ? r.duration_ns / static_cast<double>(r.launches) : 0), bound,
          Clip(r.name, 80));
    }
    if (s.throughput.size() > kMaxRows)
      out += fmt::format("  ... {} more kernels in the JSON profile\n",
                         s.throughput.size() - kMaxRows);
    out +=
        " (Mem: busiest of DRAM, L2, L1; Avg time: one replay pass per launch, not comparable with "
        "a run "
        "without --metrics)\n\n";
  }

  if (gpu_trace) {
    int64_t t0 = INT64_MAX;
    for (const auto& k : g.kernels) t0 = std::min(t0, k.start_ns);
    for (const auto& m : g.memcpys) t0 = std::min(t0, m.start_ns);
    struct Row {
      int64_t start, dur;
      std::string grid, block, regs, size, tput, name;
      int32_t dev, stream;
    };
    std::vector<Row> rows;
    for (const auto& k : g.kernels)
      rows.push_back({k.start_ns, k.end_ns - k.start_ns,
                      fmt::format("({} {} {})", k.grid[0], k.grid[1], k.grid[2]),
                      fmt::format("({} {} {})", k.block[0], k.block[1], k.block[2]),
                      std::to_string(k.registers_per_thread), "-", "-", k.name, k.device,
                      k.stream});
    for (const auto& m : g.memcpys) {
      double dur = static_cast<double>(m.end_ns - m.start_ns);
      rows.push_back({m.start_ns, m.end_ns - m.start_ns, "-", "-", "-",
                      HumanBytes(static_cast<double>(m.bytes)),
                      dur > 0 ? fmt::format("{:.2f}GB/s", m.bytes / dur) : "-",
                      "[CUDA memcpy " + m.kind + "]" + (m.pageable ? " pageable" : ""), m.device,
                      m.stream});
    }
    std::stable_sort(rows.begin(), rows.end(),
                     [](const Row& a, const Row& b) { return a.start < b.start; });
    out += "GPU trace:\n";
    out += fmt::format(" {:>12} {:>11} {:>18} {:>14} {:>5} {:>10} {:>11} {:>3} {:>6}  {}\n",
                       "Start", "Duration", "Grid", "Block", "Regs", "Size", "Throughput", "Dev",
                       "Stream", "Name");
    for (const Row& r : rows)
      out += fmt::format(" {:>12} {:>11} {:>18} {:>14} {:>5} {:>10} {:>11} {:>3} {:>6}  {}\n",
                         FormatNs(static_cast<double>(r.start - t0)),
                         FormatNs(static_cast<double>(r.dur)), r.grid, r.block, r.regs, r.size,
                         r.tput, r.dev, r.stream, Clip(r.name, 100));
    out += "\n";
  }

  if (findings && !p.findings.empty()) {
    out += "Findings:\n";
    for (const auto& f : p.findings)
      out += fmt::format(" [{}] {}\n     evidence: {}\n     do: {}\n",
                         profile::SeverityName(f.severity), f.title, f.evidence, f.suggestion);
    out += "\n";
  }
  if (findings && !p.meta.degradations.empty()) {
    out += "Limits of this trace:\n";
    for (const auto& d : p.meta.degradations) out += " - " + d + "\n";
  }
  return out;
}

namespace {

bool HasGpu(const profile::Profile& p) { return p.gpu.has_value(); }

Status GpuTable(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  analysis::SummaryOptions so;
  so.iteration_range = o.iteration_range;
  *out = FormatGpuReport(p, analysis::Summarize(p, so), o.gpu_trace, o.findings, o.wide);
  return Status::Ok();
}

}  // namespace

OPSCOPE_REGISTER_SECTION(gpu, {"gpu", 40, "gpu", &HasGpu, &GpuTable});

}  // namespace opscope::report
