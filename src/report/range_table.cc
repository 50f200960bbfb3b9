#include "report/range_table.h"

#include <fmt/format.h>

#include "analysis/format.h"
#include "analysis/hygiene.h"
#include "base/strings.h"
#include "profile/attached.h"
#include "report/format.h"

namespace opscope::report {
std::string FormatRangeTable(const analysis::RangeReport& r, bool color, bool wide) {
  std::string bold = color ? "\x1b[1m" : "", reset = color ? "\x1b[0m" : "";
  std::string out;
  if (r.ranges.empty()) return "no ranges recorded\n";
  out += bold + "pipeline" +
         (r.runs > 1 ? fmt::format(" (per run, mean of {} runs)", r.runs) : std::string()) + ": " +
         EscapeControl(r.headline) + reset + "\n\n";
  bool cpu = false;
  for (const auto& s : r.ranges) cpu |= s.counters.count("thread_cpu_ms") > 0;
  out += fmt::format("{:<36} {:>7} {:>11} {:>11} {:>11} {:>11} {:>6} {:>7} {:>7}{}\n", "range",
                     "calls", "per run", "median", "trim.mean", "max", "cv%", "%top", "%parent",
                     cpu ? "     cpu%" : "");
  for (const auto& s : r.ranges) {
    std::string name = ClipName(std::string(2 * s.depth, ' ') + s.name, 36, wide);
    out += fmt::format("{:<36} {:>7} {:>11} {:>11} {:>11} {:>11} {:>6.1f} {:>7.1f} {:>7.1f}", name,
                       s.calls, HumanMs(s.per_run_ms), HumanMs(s.ms.median),
                       HumanMs(s.ms.trimmed_mean), HumanMs(s.ms.max), s.ms.cv * 100,
                       s.share_of_top * 100, s.share_of_parent * 100);
    if (cpu) {
      auto it = s.counters.find("thread_cpu_ms");
      if (it != s.counters.end() && s.total_ms > 0)
        out += fmt::format(" {:>8.1f}", it->second / s.total_ms * 100);
      else
        out += fmt::format(" {:>8}", "-");
    }
    out += "\n";
  }
  if (cpu)
    out +=
        "\ncpu% = thread CPU time / wall time of the range (below 100%: waiting, sleeping or "
        "preempted)\n";
  return out;
}

std::string RangesToCsv(const analysis::RangeReport& r) {
  std::string out =
      "path,name,domain,depth,calls,total_ms,per_run_ms,mean_ms,median_ms,trimmed_mean_ms,min_ms,"
      "max_ms,"
      "p90_ms,cv,share_of_top,share_of_parent,threads,thread_cpu_ms\n";
  for (const auto& s : r.ranges) {
    auto it = s.counters.find("thread_cpu_ms");
    out += fmt::format(
        "{},{},{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:."
        "6f},{},{}\n",
        CsvText(s.path), CsvText(s.name), CsvText(s.domain), s.depth, s.calls, s.total_ms,
        s.per_run_ms, s.ms.mean, s.ms.median, s.ms.trimmed_mean, s.ms.min, s.ms.max, s.ms.p90,
        s.ms.cv, s.share_of_top, s.share_of_parent, s.threads,
        it == s.counters.end() ? std::string() : fmt::format("{:.6f}", it->second));
  }
  return out;
}

namespace {

bool HasRanges(const profile::Profile& p) {
  // A `run` profile always has this section (it says "no ranges recorded"); elsewhere (`gpu`
  // profiles hold NVTX ranges) only when there are ranges.
  return p.meta.kind == "run" || !p.ranges.empty();
}

// What `opscope run` prints: the range table, then the whole program's repeat statistics, the
// clocks, opscope's overhead, how the target was built, and the findings.
Status RangeTable(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  analysis::RangeReport rep = analysis::SummarizeRanges(p);
  *out = FormatRangeTable(rep, o.color, o.wide);
  if (!o.findings) return Status::Ok();
  const profile::Verdicts verdicts = analysis::VerdictsOf(p);
  if (profile::IsAttachedSpan(p) && p.e2e.runs_ms.size() == 1) {
    *out += "\nattached span: " + HumanMs(p.e2e.runs_ms[0]) + " of " + p.meta.attached +
            " (one span of a running program, not repeated runs)\n";
  } else {
    *out += "\nwhole program: " + verdicts.noise_words + "\n";
  }
  if (!verdicts.throttling.empty()) *out += "clocks: " + verdicts.throttling + "\n";
  if (p.overhead)
    *out += fmt::format("opscope overhead: {:.2f}% ({})\n", p.overhead->pct, p.overhead->method);
  const std::string kind = p.meta.target ? p.meta.target->kind : "",
                    evidence = p.meta.target ? p.meta.target->evidence : "";
  if (!kind.empty() || !evidence.empty())
    *out += "target build: " + (kind == "unknown" ? evidence : kind + " — " + evidence) + "\n";
  *out += "\n" + analysis::FormatFindings(p.findings, o.color);
  return Status::Ok();
}

Status RangeCsv(const profile::Profile& p, const ReportOptions&, std::string* out) {
  *out = RangesToCsv(analysis::SummarizeRanges(p));
  return Status::Ok();
}

Status WriteRangeCsv(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  if (!HasRanges(p)) return InvalidArgument("the profile has no ranges section");
  return RangeCsv(p, o, out);
}

}  // namespace

OPSCOPE_REGISTER_SECTION(ranges, {"ranges", 30, "run", &HasRanges, &RangeTable, &RangeCsv});
OPSCOPE_REGISTER_FORMAT(ranges_csv, {.name = "ranges-csv",
                                     .extension = "",
                                     .description = "one row per range path (CSV)",
                                     .write = &WriteRangeCsv,
                                     .needs = "ranges"});

}  // namespace opscope::report
