// The ops section: the terminal report of a model profile: header, hotspot table, table by op
// type, coverage, opscope's own overhead, and the findings. Columns are sized to their content;
// node names are shown whole with their control characters escaped.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>

#include "analysis/format.h"
#include "analysis/machine.h"
#include "analysis/roofline.h"
#include "base/stats.h"
#include "base/strings.h"
#include "report/format.h"
#include "report/ops_csv.h"
#include "report/text_table.h"

namespace opscope::report {
namespace {

std::string F(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string ShapesCell(const std::vector<std::vector<int64_t>>& shapes, size_t max_len = 34) {
  std::vector<std::string> parts;
  for (const auto& s : shapes)
    if (!s.empty()) parts.push_back(ShapeToString(s));
  std::string out = Join(parts, ", ");
  if (out.size() > max_len) out = out.substr(0, max_len - 3) + "...";
  return out;
}

void Header(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  const auto& m = p.meta;
  *out += "opscope " + EscapeControl(m.tool_version) +
          (m.build_type.empty() ? "" : " (" + EscapeControl(m.build_type) + " build)") + " — " +
          EscapeControl(m.kind) + " of " + EscapeControl(m.source) + "\n";
  // An imported profile knows nothing of the host it ran on unless its file said.
  if (!m.host.empty() || !m.cpu_model.empty() || m.logical_cpus > 0) {
    std::string cpu = m.cpu_model.empty() ? "unknown CPU" : EscapeControl(m.cpu_model);
    *out += "host " + EscapeControl(m.host) + ": " + cpu + ", " + std::to_string(m.logical_cpus) +
            " logical CPUs";
    if (!m.governor.empty()) *out += ", governor " + EscapeControl(m.governor);
    if (m.cpu_mhz > 0) *out += F(", %.0f MHz", m.cpu_mhz);
    *out += "\n";
  }
  if (m.threads > 0)
    *out += "threads " + std::to_string(m.threads) + ", warm-up runs " + std::to_string(m.warmup) +
            ", measured runs " + std::to_string(m.runs) + "\n";
  else if (m.runs > 0)
    *out += "measured runs " + std::to_string(m.runs) + "\n";
  if (!p.e2e.runs_ms.empty()) {
    const Stats& s = p.e2e.stats;
    *out += "end-to-end latency: median " + HumanMs(s.median) + ", trimmed mean " +
            HumanMs(s.trimmed_mean) + ", min " + HumanMs(s.min) + ", max " + HumanMs(s.max) +
            ", p90 " + HumanMs(s.p90) + F(", CV %.1f%%", s.cv * 100) + " (" +
            (s.n < 3 ? std::string("too few runs for a noise estimate") : VarianceVerdict(s.cv)) +
            ")" + F("; throughput %.1f inferences/s", p.e2e.throughput_per_s) + "\n";
  }
  for (const auto& d : m.degradations) *out += "note: " + EscapeControl(d) + "\n";
}

void Hotspots(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  std::vector<const profile::OpRecord*> ops;
  for (const auto& op : p.ops) ops.push_back(&op);
  std::stable_sort(ops.begin(), ops.end(), [](auto* a, auto* b) { return a->share > b->share; });
  size_t shown = std::min<size_t>(ops.size(), static_cast<size_t>(std::max(o.top, 1)));
  *out += "\nHot operators (top " + std::to_string(shown) + " of " + std::to_string(p.ops.size()) +
          " nodes, by share of the summed per-op trimmed means)\n";
  const bool imported = StartsWith(p.meta.kind, "import/");
  bool has_counters = false;
  for (const auto* op : ops) has_counters |= !op->counters.empty();
  TextTable t({"#", "node", "op type", "inputs", "outputs", "median", "trimmed", "share", "cum",
               "FLOPs", "bytes", "GFLOP/s", "GB/s"});
  t.AlignRight({0, 5, 6, 7, 8, 9, 10, 11, 12});
  double cum = 0;
  bool any_int = false;
  for (size_t i = 0; i < shown; ++i) {
    const auto* op = ops[i];
    if (op->share < o.threshold) break;
    cum += op->share;
    double sec = op->stats.trimmed_mean / 1e3;
    // Quantized kernels: integer ops in the FLOPs columns, marked "int".
    const bool integer = op->int_ops > 0;
    any_int |= integer;
    const double work = integer ? op->int_ops : op->flops;
    const std::string mark = integer ? " int" : "";
    // An op with no timed run (an imported row without times) has no time, not 0 us.
    const bool timed = !op->runs_ms.empty() || op->status == profile::OpStatus::kFolded;
    t.AddRow({std::to_string(i + 1), EscapeControl(op->name), EscapeControl(op->op_type),
              ShapesCell(op->input_shapes), ShapesCell(op->output_shapes),
              timed ? HumanMs(op->stats.median) : "no runs",
              timed ? HumanMs(op->stats.trimmed_mean) : "no runs", F("%.1f%%", op->share * 100),
              F("%.1f%%", cum * 100), HumanCount(work) + mark, HumanBytes(op->bytes),
              sec > 0 && work > 0 ? F("%.2f", work / sec / 1e9) + mark : "-",
              sec > 0 && op->bytes > 0 ? F("%.2f", op->bytes / sec / 1e9) : "-"});
    if (op->status == profile::OpStatus::kFused)
      t.AddNote("   fused in step '" + EscapeControl(op->step) + "' with " +
                EscapeControl(Join(op->fused_with, ", ")) + "; " + EscapeControl(op->attribution));
    else if (imported && !op->attribution.empty())
      t.AddNote("   " + EscapeControl(op->attribution));  // how the runtime's row maps to it
    if (!op->layout.empty())
      t.AddNote("   memory layout: " + EscapeControl(op->layout) + " (channels-last region)");
    if (!op->counters.empty()) {
      std::vector<std::string> cs;
      for (const auto& [k, v] : op->counters) cs.push_back(EscapeControl(k) + "=" + HumanCount(v));
      t.AddNote("   counters/run: " + Join(cs, ", "));
    }
  }
  *out += t.Render(o.color);
  if (any_int) *out += "\"int\": integer operations (G ops/s) of a quantized kernel, not FLOPs.\n";
  int folded = 0;
  for (const auto& op : p.ops) folded += op.status == profile::OpStatus::kFolded;
  if (folded) *out += std::to_string(folded) + " node(s) folded at load time (zero run time).\n";
}

void ByType(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  struct Agg {
    double ms = 0, share = 0;
    int count = 0;
    double flops = 0, bytes = 0, int_ops = 0;
  };
  std::map<std::string, Agg> agg;
  for (const auto& op : p.ops) {
    Agg& a = agg[op.op_type];
    a.ms += op.stats.trimmed_mean;
    a.share += op.share;
    a.count++;
    a.flops += op.flops;
    a.bytes += op.bytes;
    a.int_ops += op.int_ops;
  }
  std::vector<std::pair<std::string, Agg>> rows(agg.begin(), agg.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](auto& a, auto& b) { return a.second.ms > b.second.ms; });
  *out += "\nBy operator type\n";
  TextTable t({"op type", "time/run", "share", "nodes", "FLOPs", "bytes"});
  t.AlignRight({1, 2, 3, 4, 5});
  for (const auto& [type, a] : rows)
    t.AddRow({EscapeControl(type), HumanMs(a.ms), F("%.1f%%", a.share * 100),
              std::to_string(a.count),
              a.int_ops > 0 && a.flops == 0 ? HumanCount(a.int_ops) + " int" : HumanCount(a.flops),
              HumanBytes(a.bytes)});
  *out += t.Render(o.color);
}

void Coverage(const profile::Profile& p, std::string* out) {
  if (p.e2e.runs_ms.empty() || p.ops.empty()) return;
  double sum = 0;
  for (const auto& op : p.ops) sum += op.stats.median;
  double e2e = p.e2e.stats.median;
  *out += "\ncoverage: per-op medians sum to " + HumanMs(sum) +
          F(" = %.1f%% of the end-to-end median", e2e > 0 ? sum / e2e * 100 : 0) +
          "; the remaining " + HumanMs(std::max(0.0, e2e - sum)) +
          (StartsWith(p.meta.kind, "import/")
               ? " is the runtime's time outside its per-op rows (scheduling, copies, "
                 "allocation)\n"
               : " is the engine's own overhead (scheduling, allocation, observer)\n");
  if (p.overhead) {
    const auto& ov = *p.overhead;
    // A difference inside the run-to-run noise (or a negative one: the observer cannot speed a
    // run up) is not a measurement of anything.
    const bool measured = ov.measurable && ov.pct > 0;
    std::string noise =
        ov.noise_low_pct != 0 || ov.noise_high_pct != 0
            ? F("; 95%% interval of the paired difference %+.2f%%", ov.noise_low_pct) +
                  F("…%+.2f%%", ov.noise_high_pct)
            : "";
    *out += (measured ? F("opscope overhead: %+.2f%%", ov.pct)
                      : std::string("opscope overhead: not measurable (below the noise)")) +
            " (median " + HumanMs(ov.observed_median_ms) + " with the per-op observer, " +
            HumanMs(ov.baseline_median_ms) + " without" + noise + "; " + ov.method + ")";
    if (ov.counters_pct != 0) *out += F("; per-op counters add %+.2f%%", ov.counters_pct);
    *out += "\n";
  }
}

void Diagnosis(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  if (const auto& c = p.meta.machine; c && c->Usable() && !p.ops.empty()) {
    auto points = analysis::RooflineForDisplay(p, *c);
    if (!points.empty())
      *out += "\n" + analysis::FormatRoofline(points, *c, o.color, static_cast<size_t>(o.top));
  }
  if (o.findings && !p.findings.empty())
    *out += "\n" + analysis::FormatFindings(p.findings, o.color);
}

Status OpsTable(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  out->clear();
  Header(p, o, out);
  if (!p.ops.empty()) {
    Hotspots(p, o, out);
    ByType(p, o, out);
    Coverage(p, out);
  }
  Diagnosis(p, o, out);
  return Status::Ok();
}

bool HasOps(const profile::Profile& p) { return !p.ops.empty() || p.meta.kind == "profile"; }

}  // namespace

OPSCOPE_REGISTER_SECTION(ops, {"ops", 10, "profile", &HasOps, &OpsTable, &OpsCsv});
}  // namespace opscope::report
