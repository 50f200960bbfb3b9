// The memory section's renderers (report layer): the terminal table, CSV rows, the HTML page's
// block (the live-bytes curve over the steps, the tensors alive at the peak, the steps) and the
// timeline's counter track.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "analysis/format.h"
#include "base/strings.h"
#include "report/format.h"
#include "report/html/html_page.h"
#include "report/timeline.h"
#include "sections/memory/memory_section.h"

namespace opscope::memory {
namespace {

using report::ReportOptions;

const MemorySection* Of(const profile::Profile& p) { return p.sections.Find<MemorySection>(); }

bool HasMemory(const profile::Profile& p) {
  const MemorySection* m = Of(p);
  return m && !m->steps.empty();
}

std::string Shape(const std::vector<int64_t>& s) { return "[" + ShapeToString(s) + "]"; }

std::string StepLabel(const MemorySection& m, int s) {
  if (s < 0 || s >= static_cast<int>(m.steps.size())) return "-";
  return m.steps[static_cast<size_t>(s)].name;
}

// The model's own memory at its peak: live activations plus weights, packed copies, workspace.
double ModelBytes(const MemorySection& m) {
  return m.peak_live_bytes + m.weight_bytes + m.packed_weight_bytes + m.workspace_bytes;
}

// Whether the steps are the profile's ops (an importer's per-op memory), not ranges of a trace.
bool StepsAreOps(const MemorySection& m) {
  return std::any_of(m.steps.begin(), m.steps.end(), [](const MemStep& s) { return s.op >= 0; });
}

// Steps, most live bytes first (the step order among equals).
std::vector<int> StepsByLive(const MemorySection& m) {
  std::vector<int> order(m.steps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return m.steps[static_cast<size_t>(a)].live_bytes > m.steps[static_cast<size_t>(b)].live_bytes;
  });
  return order;
}

std::vector<std::string> SummaryLines(const MemorySection& m) {
  std::vector<std::string> lines;
  if (!m.source.empty()) {
    // An import: its allocator's total, per op; nothing of weights or the process.
    lines.push_back(fmt::format("peak {} allocated during {} '{}' (#{} of {})",
                                HumanBytes(m.peak_live_bytes), StepsAreOps(m) ? "op" : "step",
                                report::EscapeControl(StepLabel(m, m.peak_step)), m.peak_step + 1,
                                m.steps.size()));
    if (m.arena_bytes > 0)
      lines.push_back(fmt::format("arena held {} at most (reserved by the allocator)",
                                  HumanBytes(m.arena_bytes)));
    return lines;
  }
  const std::vector<int> alive = AliveAt(m, m.peak_step);
  lines.push_back(
      fmt::format("peak {} of activations live during step '{}' (#{} of {}), {} "
                  "tensor(s)",
                  HumanBytes(m.peak_live_bytes), report::EscapeControl(StepLabel(m, m.peak_step)),
                  m.peak_step + 1, m.steps.size(), alive.size()));
  if (m.naive_bytes > 0)
    lines.push_back(
        fmt::format("arena {} planned for {} of tensors one buffer each ({:.2f}x reuse)",
                    HumanBytes(m.arena_bytes), HumanBytes(m.naive_bytes),
                    m.arena_bytes > 0 ? m.naive_bytes / m.arena_bytes : 0.0));
  lines.push_back(fmt::format("weights {}; kernels' packed copies {}; workspace {}",
                              HumanBytes(m.weight_bytes), HumanBytes(m.packed_weight_bytes),
                              HumanBytes(m.workspace_bytes)));
  if (m.peak_rss_bytes > 0)
    lines.push_back(fmt::format(
        "process RSS {}, peak {}: the model's memory at its peak (activations + weights + "
        "copies + workspace) is {} of it",
        HumanBytes(m.rss_bytes), HumanBytes(m.peak_rss_bytes), HumanBytes(ModelBytes(m))));
  else
    lines.push_back("process RSS: unknown (no /proc/self/status)");
  return lines;
}

Status MemoryTable(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  const MemorySection& m = *Of(p);
  const size_t top = o.top > 0 ? static_cast<size_t>(o.top) : 1000000;
  std::string s = m.source.empty()
                      ? fmt::format("memory ({} steps a run executes):\n", m.steps.size())
                      : fmt::format("memory of {} ({}; {} {}):\n", report::EscapeControl(m.device),
                                    report::EscapeControl(m.source), m.steps.size(),
                                    StepsAreOps(m) ? "ops" : "steps");
  for (const std::string& l : SummaryLines(m)) s += "  " + l + "\n";

  const std::vector<int> alive = AliveAt(m, m.peak_step);
  if (m.tensors.empty())
    s += "  (the source names no tensors: live bytes are its allocator's total)\n";
  else
    s += fmt::format(
        "\ntensors alive at the peak (largest first):\n{:<32}  {:>18}  {:>7}  {:>10}  "
        "{:>6}  {:<24}  {:<24}  {}\n",
        "tensor", "shape", "dtype", "bytes", "place", "written by", "last read by", "steps");
  for (size_t i = 0; i < alive.size() && i < top; ++i) {
    const LiveTensor& t = m.tensors[static_cast<size_t>(alive[i])];
    s += fmt::format(
        "{:<32}  {:>18}  {:>7}  {:>10}  {:>6}  {:<24}  {:<24}  {}-{}\n",
        report::ClipName(t.name, 32, o.wide), report::ClipName(Shape(t.shape), 18, o.wide),
        report::ClipName(t.dtype, 7, false), HumanBytes(t.bytes), t.place,
        report::ClipName(t.producer.empty() ? "(graph input)" : t.producer, 24, o.wide),
        report::ClipName(t.last_consumer.empty() ? "-" : t.last_consumer, 24, o.wide),
        t.first_step + 1, t.last_step + 1);
  }
  if (alive.size() > top) s += fmt::format("  ... {} more tensors\n", alive.size() - top);

  s += fmt::format(
      "\nsteps by live activations:\n{:>5}  {:<32}  {:>10}  {:>10}  {:>10}  {:>10}  "
      "{:>10}  {:>10}  {:>10}\n",
      "#", "step", "live", "arena", "allocated", "released", "weights", "packed", "workspace");
  const std::vector<int> order = StepsByLive(m);
  for (size_t i = 0; i < order.size() && i < top; ++i) {
    const MemStep& st = m.steps[static_cast<size_t>(order[i])];
    s += fmt::format("{:>5}  {:<32}  {:>10}  {:>10}  {:>10}  {:>10}  {:>10}  {:>10}  {:>10}\n",
                     order[i] + 1, report::ClipName(st.name, 32, o.wide), HumanBytes(st.live_bytes),
                     HumanBytes(st.arena_live_bytes), HumanBytes(st.allocated_bytes),
                     HumanBytes(st.released_bytes), HumanBytes(st.weight_bytes),
                     HumanBytes(st.packed_weight_bytes), HumanBytes(st.workspace_bytes));
  }
  if (order.size() > top) s += fmt::format("  ... {} more steps\n", order.size() - top);
  if (o.findings) s += "\n" + analysis::FormatFindings(p.findings, o.color);
  *out = std::move(s);
  return Status::Ok();
}

// One row per step, in step order: step,op,live_bytes,...
Status MemoryCsv(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  const MemorySection& m = *Of(p);
  const std::string& sep = o.separator;
  *out = Join({"step", "name", "op_type", "live_bytes", "arena_live_bytes", "allocated_bytes",
               "released_bytes", "weight_bytes", "packed_weight_bytes", "workspace_bytes", "peak"},
              sep) +
         "\n";
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const MemStep& st = m.steps[i];
    const std::string op_type = st.op >= 0 && static_cast<size_t>(st.op) < p.ops.size()
                                    ? p.ops[static_cast<size_t>(st.op)].op_type
                                    : "";
    *out +=
        Join({std::to_string(i + 1), report::CsvText(st.name, sep), report::CsvText(op_type, sep),
              fmt::format("{:.0f}", st.live_bytes), fmt::format("{:.0f}", st.arena_live_bytes),
              fmt::format("{:.0f}", st.allocated_bytes), fmt::format("{:.0f}", st.released_bytes),
              fmt::format("{:.0f}", st.weight_bytes), fmt::format("{:.0f}", st.packed_weight_bytes),
              fmt::format("{:.0f}", st.workspace_bytes),
              static_cast<int>(i) == m.peak_step ? "1" : "0"},
             sep) +
        "\n";
  }
  return Status::Ok();
}

using report::html::TdNum;
// A text cell: escaped.
std::string Td(const std::string& text) { return report::html::Td(report::html::Escape(text)); }

// The live-bytes curve over the steps (a step function: one level per step), the peak marked.
std::string Curve(const MemorySection& m) {
  constexpr double kW = 900, kH = 220, kL = 70, kR = 10, kT = 10, kB = 30;
  double top = 0;
  for (const MemStep& s : m.steps) top = std::max(top, s.live_bytes);
  if (top <= 0) top = 1;
  const size_t n = m.steps.size();
  auto x = [&](double i) { return kL + (kW - kL - kR) * i / static_cast<double>(n); };
  auto y = [&](double b) { return kT + (kH - kT - kB) * (1 - b / top); };
  std::string pts, arena_pts;
  for (size_t i = 0; i < n; ++i) {
    pts += fmt::format("{:.1f},{:.1f} {:.1f},{:.1f} ", x(i), y(m.steps[i].live_bytes), x(i + 1),
                       y(m.steps[i].live_bytes));
    arena_pts += fmt::format("{:.1f},{:.1f} {:.1f},{:.1f} ", x(i), y(m.steps[i].arena_live_bytes),
                             x(i + 1), y(m.steps[i].arena_live_bytes));
  }
  std::string out = fmt::format(
      "<svg class=\"chart memcurve\" id=\"memory-chart\" role=\"img\" aria-label=\"live "
      "activation bytes per step\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {0} {1}\" "
      "width=\"{0}\" height=\"{1}\">\n",
      kW, kH);
  out += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>", kL,
                     kH - kB, kW - kR);
  out += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n", kL, kT,
                     kH - kB);
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", kL - 4, y(top) + 4,
                     report::html::Escape(HumanBytes(top)));
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">0</text>", kL - 4, kH - kB + 4);
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">step (1..{})</text>\n",
                     (kL + kW) / 2, kH - 8, n);
  out +=
      "<polyline class=\"memarena\" points=\"" + arena_pts + "\"><title>arena</title></polyline>\n";
  out += "<polyline class=\"memlive\" points=\"" + pts +
         "\"><title>live activations</title></polyline>\n";
  if (m.peak_step >= 0)
    out += fmt::format(
        "<circle class=\"mempeak\" cx=\"{:.1f}\" cy=\"{:.1f}\" "
        "r=\"4\"><title>{}</title></circle>\n",
        x(m.peak_step + 0.5), y(m.peak_live_bytes),
        report::html::Escape("peak " + HumanBytes(m.peak_live_bytes) + " at step " +
                             std::to_string(m.peak_step + 1) + " '" + StepLabel(m, m.peak_step) +
                             "'"));
  return out + "</svg>\n";
}

Status MemoryHtml(const profile::Profile& p, const ReportOptions&, std::string* out) {
  const MemorySection& m = *Of(p);
  using report::html::Escape;
  std::string s = "<section id=\"memory\">\n<h2>Memory</h2>\n<ul>\n";
  for (const std::string& l : SummaryLines(m)) s += "<li>" + Escape(l) + "</li>\n";
  s += "</ul>\n<p class=\"muted\">Live activation bytes while each step runs (solid), of which "
       "in the planned arena (dashed).</p>\n<div class=\"tablewrap\">" +
       Curve(m) + "</div>\n";
  const std::vector<int> alive = AliveAt(m, m.peak_step);
  s += "<h3>Tensors alive at the peak</h3>\n<div class=\"tablewrap\"><table id=\"memtensors\" "
       "class=\"sortable\"><thead><tr><th>tensor</th><th>shape</th><th>dtype</th><th "
       "class=\"num\" data-sort=\"num\">bytes</th><th>place</th><th>written by</th><th>last read "
       "by</th><th class=\"num\" data-sort=\"num\">steps alive</th></tr></thead><tbody>\n";
  for (int i : alive) {
    const LiveTensor& t = m.tensors[static_cast<size_t>(i)];
    s += "<tr>" + Td(t.name) + Td(Shape(t.shape)) + Td(t.dtype) +
         TdNum(t.bytes, HumanBytes(t.bytes)) + Td(t.place) +
         Td(t.producer.empty() ? "(graph input)" : t.producer) +
         Td(t.last_consumer.empty() ? "-" : t.last_consumer) +
         TdNum(t.last_step - t.first_step + 1,
               fmt::format("{}-{}", t.first_step + 1, t.last_step + 1)) +
         "</tr>\n";
  }
  s += "</tbody></table></div>\n<h3>Steps</h3>\n<div class=\"tablewrap\"><table id=\"memsteps\" "
       "class=\"sortable\"><thead><tr><th class=\"num\" data-sort=\"num\">#</th><th>step</th>";
  for (const char* h : {"live", "arena", "allocated", "released", "weights", "packed", "workspace"})
    s += std::string("<th class=\"num\" data-sort=\"num\">") + h + "</th>";
  s += "</tr></thead><tbody>\n";
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const MemStep& st = m.steps[i];
    s += "<tr>" + TdNum(static_cast<double>(i + 1), std::to_string(i + 1)) + Td(st.name);
    for (double b : {st.live_bytes, st.arena_live_bytes, st.allocated_bytes, st.released_bytes,
                     st.weight_bytes, st.packed_weight_bytes, st.workspace_bytes})
      s += TdNum(b, HumanBytes(b));
    s += "</tr>\n";
  }
  *out = s + "</tbody></table></div>\n</section>\n";
  return Status::Ok();
}

// A counter track of the live bytes, one value per step at each run's start of that step (the
// anchor op's events).
void MemoryTimeline(const profile::Profile& p, const ReportOptions&, report::Timeline& t) {
  const MemorySection& m = *Of(p);
  std::vector<int> step_of_op(p.ops.size(), -1);
  for (size_t s = 0; s < m.steps.size(); ++s)
    if (m.steps[s].op >= 0 && static_cast<size_t>(m.steps[s].op) < p.ops.size())
      step_of_op[static_cast<size_t>(m.steps[s].op)] = static_cast<int>(s);
  for (const profile::OpEvent& e : p.op_events) {
    if (e.op < 0 || static_cast<size_t>(e.op) >= step_of_op.size()) continue;
    const int s = step_of_op[static_cast<size_t>(e.op)];
    if (s < 0) continue;
    const MemStep& st = m.steps[static_cast<size_t>(s)];
    t.Counter("live activations (bytes)", e.start_ns, report::Timeline::kOpsPid,
              {{"live", st.live_bytes}, {"arena", st.arena_live_bytes}});
  }
}

}  // namespace

OPSCOPE_REGISTER_SECTION(memory, {"memory", 45, "memory", &HasMemory, &MemoryTable, &MemoryCsv,
                                  &MemoryHtml, "memory", &MemoryTimeline});

}  // namespace opscope::memory
