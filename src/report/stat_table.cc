#include "report/stat_table.h"

#include <fmt/format.h>

#include <cmath>

#include "analysis/format.h"
#include "base/strings.h"
#include "report/format.h"

namespace opscope::report {
namespace {

struct MetricDoc {
  const char* key;
  const char* label;
  const char* formula;
  bool percent;
};

constexpr MetricDoc kMetrics[] = {
    {"ipc", "IPC", "instructions / cycles", false},
    {"cycles_per_instruction", "CPI", "cycles / instructions", false},
    {"cache_miss_rate", "cache-miss rate", "cache-misses / cache-references", true},
    {"branch_miss_rate", "branch-miss rate", "branch-misses / branches", true},
    {"cache_mpki", "cache MPKI", "cache-misses per 1000 instructions", false},
    {"l1d_mpki", "L1D MPKI", "L1-dcache-load-misses per 1000 instructions", false},
    {"llc_mpki", "LLC MPKI", "LLC-load-misses per 1000 instructions", false},
    {"branch_mpki", "branch MPKI", "branch-misses per 1000 instructions", false},
    {"ghz", "effective GHz", "cycles / task-clock", false},
    {"cpus_utilized", "CPUs utilized", "task-clock / wall time", false},
    {"page_faults_per_cpu_ms", "faults per CPU-ms", "page-faults / task-clock", false},
    {"context_switches_per_s", "context switches/s", "context-switches / wall time", false},
};

// 1234567 -> "1,234,567".
std::string Grouped(double v) {
  if (!std::isfinite(v)) return "nan";
  std::string digits = fmt::format("{:.0f}", std::fabs(v));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string FormatValue(double v, const std::string& unit) {
  return unit == "ms" ? fmt::format("{:.2f}", v) : Grouped(v);
}

std::string Plain(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.6g}", v);
}

struct EventRow {
  const profile::CounterReading* first = nullptr;  // from the first run: name, unit, note
  double running_fraction = 1;                     // mean over runs
  bool counted = false;
};

std::vector<EventRow> Rows(const profile::StatSection& s) {
  std::vector<EventRow> rows;
  if (s.runs.empty()) return rows;
  const auto& first = s.runs.front().counters;
  for (size_t i = 0; i < first.size(); ++i) {
    EventRow row;
    row.first = &first[i];
    row.counted = s.summary.count(first[i].event) > 0;
    double sum = 0;
    int n = 0;
    for (const auto& run : s.runs)
      if (i < run.counters.size()) sum += run.counters[i].running_fraction, ++n;
    row.running_fraction = n ? sum / n : 0;
    rows.push_back(row);
  }
  return rows;
}

std::string EventComment(const std::string& event, const profile::StatSection& s) {
  auto d = [&](const char* k) -> const double* {
    auto it = s.derived.find(k);
    return it == s.derived.end() ? nullptr : &it->second;
  };
  if (event == "task-clock" && d("cpus_utilized"))
    return fmt::format("# {:.3f} CPUs utilized", *d("cpus_utilized"));
  if (event == "instructions" && d("ipc")) return fmt::format("# {:.2f} insn per cycle", *d("ipc"));
  if (event == "cycles" && d("ghz")) return fmt::format("# {:.3f} GHz", *d("ghz"));
  if (event == "cache-misses" && d("cache_miss_rate"))
    return fmt::format("# {:.2f}% of all cache refs", *d("cache_miss_rate") * 100);
  if (event == "branch-misses" && d("branch_miss_rate"))
    return fmt::format("# {:.2f}% of all branches", *d("branch_miss_rate") * 100);
  if (event == "LLC-load-misses" && d("llc_mpki"))
    return fmt::format("# {:.2f} per 1k insn", *d("llc_mpki"));
  if (event == "L1-dcache-load-misses" && d("l1d_mpki"))
    return fmt::format("# {:.2f} per 1k insn", *d("l1d_mpki"));
  if (event == "page-faults" && d("page_faults_per_cpu_ms"))
    return fmt::format("# {:.3f} per CPU-ms", *d("page_faults_per_cpu_ms"));
  if (event == "context-switches" && d("context_switches_per_s"))
    return fmt::format("# {:.1f} /s", *d("context_switches_per_s"));
  return "";
}

}  // namespace

// Attach mode: the counts of each thread (largest first, at most 20), the first four counted
// events as columns.
std::string FormatStatTasks(const profile::StatSection& s) {
  if (s.runs.size() != 1 || s.runs[0].tasks.empty()) return "";
  const auto& tasks = s.runs[0].tasks;
  std::vector<size_t> cols;
  for (size_t i = 0; i < s.runs[0].counters.size() && cols.size() < 4; ++i)
    if (s.runs[0].counters[i].supported) cols.push_back(i);
  std::string out = "\n Per thread:\n";
  std::string header = fmt::format("{:>9} {:>9}  {:<16}", "pid", "tid", "comm");
  for (size_t c : cols) {
    const profile::CounterReading& r = s.runs[0].counters[c];
    header += fmt::format(" {:>18}", r.event + (r.unit == "ms" ? " ms" : ""));
  }
  out += header + "\n";
  const size_t shown = std::min<size_t>(tasks.size(), 20);
  for (size_t t = 0; t < shown; ++t) {
    std::string line =
        fmt::format("{:>9} {:>9}  {:<16}", tasks[t].pid, tasks[t].tid, tasks[t].comm);
    for (size_t c : cols) {
      const auto& r = tasks[t].counters;
      line += fmt::format(" {:>18}", c < r.size() ? FormatValue(r[c].value, r[c].unit) : "-");
    }
    out += line + "\n";
  }
  if (shown < tasks.size())
    out += fmt::format("  ... {} more threads (all of them in the JSON profile)\n",
                       tasks.size() - shown);
  return out;
}

std::string FormatStatTable(const profile::Profile& p) {
  if (!p.stat) return "";
  const profile::StatSection& s = *p.stat;
  std::string out;
  const size_t runs = s.runs.size();
  out += fmt::format("\n Performance counter stats for '{}'{}:\n\n",
                     s.command.empty() && !s.attached.empty() ? s.attached : Join(s.command, " "),
                     runs > 1 ? fmt::format(" ({} runs)", runs) : "");
  for (const EventRow& row : Rows(s)) {
    const profile::CounterReading& c = *row.first;
    std::string name = c.event + (c.requested.empty() ? "" : " (for " + c.requested + ")");
    if (!row.counted) {
      out += fmt::format("{:>18}      {}{}\n", c.supported ? "<not counted>" : "<not supported>",
                         name, c.note.empty() || !c.supported ? "" : "  (" + c.note + ")");
      continue;
    }
    const Stats& st = s.summary.at(c.event);
    std::string value = FormatValue(st.mean, c.unit);
    std::string unit = c.unit == "ms" ? "ms" : "";
    std::string comment = EventComment(c.event, s);
    std::string tail;
    if (runs > 1) tail += fmt::format("  ( +- {:.2f}% )", st.cv * 100);
    if (row.running_fraction < 0.9995)
      tail += fmt::format("  [{:.1f}%]", row.running_fraction * 100);
    std::string text =
        fmt::format("{:>18} {:<4} {:<28} {:<28}{}", value, unit, name, comment, tail);
    out += Trim(text).empty() ? "" : text.substr(0, text.find_last_not_of(' ') + 1) + "\n";
  }
  out += FormatStatTasks(s);
  if (s.summary.count("wall-ms")) {
    const Stats& w = s.summary.at("wall-ms");
    out += fmt::format("\n{:>18.6f} seconds time elapsed{}\n", w.mean / 1000,
                       runs > 1 ? fmt::format("  ( +- {:.2f}% )", w.cv * 100) : "");
  }
  bool any_multiplexed = false;
  for (const EventRow& row : Rows(s))
    any_multiplexed |= row.counted && row.running_fraction < 0.9995;
  if (any_multiplexed)
    out +=
        "\n [NN.N%]: the counter was multiplexed and ran that fraction of the time; its value is "
        "scaled (raw * enabled / running)\n";

  if (!s.derived.empty()) {
    out += "\n Derived metrics (from the medians):\n";
    for (const MetricDoc& m : kMetrics) {
      auto it = s.derived.find(m.key);
      if (it == s.derived.end()) continue;
      std::string v =
          m.percent ? fmt::format("{:.2f}%", it->second * 100) : fmt::format("{:.3f}", it->second);
      out += fmt::format("   {:<22} {:>12}   {}\n", m.label, v, m.formula);
    }
  }
  out += fmt::format("\n Verdict: {}\n   {}\n", s.verdict, s.verdict_reason);

  if (runs > 1) {
    out += fmt::format("\n Over {} runs:\n", runs);
    out += fmt::format("   {:<28} {:>14} {:>14} {:>14} {:>14} {:>14} {:>8}\n", "event", "mean",
                       "median", "trimmed mean", "min", "max", "cv");
    auto line = [&](const std::string& name, const Stats& st, const std::string& unit) {
      out += fmt::format("   {:<28} {:>14} {:>14} {:>14} {:>14} {:>14} {:>7.2f}%\n", name,
                         FormatValue(st.mean, unit), FormatValue(st.median, unit),
                         FormatValue(st.trimmed_mean, unit), FormatValue(st.min, unit),
                         FormatValue(st.max, unit), st.cv * 100);
    };
    for (const EventRow& row : Rows(s))
      if (row.counted)
        line(row.first->event + (row.first->unit == "ms" ? " (ms)" : ""),
             s.summary.at(row.first->event), row.first->unit);
    if (s.summary.count("wall-ms")) line("wall time (ms)", s.summary.at("wall-ms"), "ms");
  }
  if (!s.outliers.empty()) {
    out += "\n Outlier runs:\n";
    for (const std::string& o : s.outliers) out += "   " + o + "\n";
  }
  for (size_t i = 0; i < s.runs.size(); ++i)
    if (!s.runs[i].note.empty()) out += fmt::format("\n Run {}: {}\n", i + 1, s.runs[i].note);
  if (!s.degradations.empty()) {
    out += "\n Degradations:\n";
    for (const std::string& d : s.degradations) out += "   - " + d + "\n";
  }
  out += "\n";
  return out;
}

namespace {

// perf's shadow metric for an event in `-x` output: value and unit, or two empty fields. Rates
// are per second of task-clock with perf's K/M/G prefixes (stat-shadow.c).
std::pair<std::string, std::string> PerfMetric(const profile::CounterReading& c,
                                               const profile::StatSection& s, double mean) {
  auto avg = [&](const char* e) -> const double* {
    auto it = s.summary.find(e);
    return it == s.summary.end() ? nullptr : &it->second.mean;
  };
  const double* task_ms = avg("task-clock");
  if (c.event == "task-clock" || c.event == "cpu-clock") {
    const double* wall = avg("wall-ms");
    if (wall && *wall > 0) return {fmt::format("{:.3f}", mean / *wall), "CPUs utilized"};
    return {"", ""};
  }
  if (c.event == "cycles" && task_ms && *task_ms > 0)
    return {fmt::format("{:.3f}", mean / (*task_ms * 1e6)), "GHz"};
  if (c.event == "instructions") {
    const double* cyc = avg("cycles");
    if (cyc && *cyc > 0) return {fmt::format("{:.2f}", mean / *cyc), "insn per cycle"};
    return {"", ""};
  }
  if (c.event == "branch-misses") {
    const double* br = avg("branches");
    if (br && *br > 0) return {fmt::format("{:.2f}", 100 * mean / *br), "of all branches"};
    return {"", ""};
  }
  if (c.event == "cache-misses") {
    const double* refs = avg("cache-references");
    if (refs && *refs > 0) return {fmt::format("{:.2f}", 100 * mean / *refs), "of all cache refs"};
    return {"", ""};
  }
  if (c.unit == "ms" || !task_ms || *task_ms <= 0) return {"", ""};
  double rate = mean / (*task_ms / 1e3);
  std::string unit = "/sec";
  if (rate > 1e9)
    rate /= 1e9, unit = "G/sec";
  else if (rate > 1e6)
    rate /= 1e6, unit = "M/sec";
  else if (rate > 1e3)
    rate /= 1e3, unit = "K/sec";
  return {fmt::format("{:.3f}", rate), unit};
}

}  // namespace

std::string FormatStatSeparated(const profile::Profile& p, const std::string& sep) {
  if (!p.stat) return "";
  const profile::StatSection& s = *p.stat;
  const size_t runs = s.runs.size();
  std::string out;
  auto line = [&](std::vector<std::string> fields) { out += Join(fields, sep) + "\n"; };
  const std::vector<EventRow> rows = Rows(s);
  for (size_t i = 0; i < rows.size(); ++i) {
    const EventRow& row = rows[i];
    const profile::CounterReading& c = *row.first;
    const std::string unit = c.unit == "ms" ? "msec" : c.unit == "count" ? "" : c.unit;
    double running_ns = 0;
    int n = 0;
    for (const auto& run : s.runs)
      if (i < run.counters.size()) running_ns += run.counters[i].running_ns, ++n;
    if (n) running_ns /= n;
    std::vector<std::string> f;
    if (!row.counted) {
      f = {c.supported ? "<not counted>" : "<not supported>", unit, CsvText(c.event, sep)};
      if (runs > 1) f.push_back("0.00%");
      f.insert(f.end(), {"0", "100.00", "", ""});
      line(f);
      continue;
    }
    const Stats& st = s.summary.at(c.event);
    f = {c.unit == "ms" ? fmt::format("{:.2f}", st.mean) : fmt::format("{:.0f}", st.mean), unit,
         CsvText(c.event, sep)};
    if (runs > 1) {
      // perf's "+-": the standard error of the mean, relative to the mean.
      double rel = st.mean != 0 && st.n > 0
                       ? st.stddev / std::sqrt(static_cast<double>(st.n)) / std::fabs(st.mean) * 100
                       : 0;
      f.push_back(fmt::format("{:.2f}%", rel));
    }
    f.push_back(fmt::format("{:.0f}", running_ns));
    f.push_back(fmt::format("{:.2f}", row.running_fraction * 100));
    auto [mv, mu] = PerfMetric(c, s, st.mean);
    f.push_back(mv);
    f.push_back(mu);
    line(f);
  }
  return out;
}

namespace {

bool HasStat(const profile::Profile& p) { return p.stat.has_value(); }

Status StatTable(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  *out = FormatStatTable(p);
  if (o.findings && !p.findings.empty())
    *out += "\n" + analysis::FormatFindings(p.findings, o.color);
  return Status::Ok();
}

Status StatCsv(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  *out = FormatStatSeparated(p, o.separator.empty() ? "," : o.separator);
  return Status::Ok();
}

Status WriteStatCsv(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  if (!p.stat) return InvalidArgument("the profile has no counter (stat) section");
  return StatCsv(p, o, out);
}

}  // namespace

OPSCOPE_REGISTER_SECTION(stat, {"stat", 20, "stat", &HasStat, &StatTable, &StatCsv});
OPSCOPE_REGISTER_FORMAT(
    stat_csv, {.name = "stat-csv",
               .extension = "",
               .description = "the counters as `perf stat -x,` writes them "
                              "(value,unit,event,[variance,]run time,running %,metric,metric unit)",
               .write = &WriteStatCsv,
               .needs = "stat"});

}  // namespace opscope::report
