#include "report/diff_output.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "profile/json_text.h"
#include "report/html/html_report.h"

namespace opscope::report {
namespace {

constexpr const char* kDiffFormats[] = {"table", "json", "csv", "html", "chrome"};

std::string Num(double v) { return fmt::format("{:.9g}", v); }

// kind,name,op_type,change,unit,before,after,delta,delta_pct,shape_before,shape_after
std::string DiffCsv(const analysis::ProfileDiff& d) {
  std::string out =
      "kind,name,op_type,change,unit,before,after,delta,delta_pct,shape_before,shape_after\n";
  auto row = [&](const char* kind, const std::string& name, const std::string& op_type,
                 const std::string& change, const char* unit, double before, double after,
                 double delta, double pct, const std::string& sb, const std::string& sa) {
    out += Join({kind, CsvText(name), CsvText(op_type), CsvText(change), unit, Num(before),
                 Num(after), Num(delta), Num(pct), CsvText(sb), CsvText(sa)},
                ",") +
           "\n";
  };
  if (d.e2e.available)
    row("e2e", d.e2e.basis, "", d.e2e.significant ? "significant" : "within the noise", "ms",
        d.e2e.before_ms, d.e2e.after_ms, d.e2e.after_ms - d.e2e.before_ms, d.e2e.delta_pct, "", "");
  for (const auto& t : d.op_types)
    row("op_type", t.op_type, t.op_type, t.change, "ms", t.before_ms, t.after_ms, t.delta_ms,
        t.delta_pct, "", "");
  for (const auto& n : d.nodes)
    row("node", n.name, n.op_type, n.change, "ms", n.before_ms, n.after_ms, n.delta_ms, n.delta_pct,
        n.shape_before, n.shape_after);
  for (const auto& g : d.groups)
    row("group", Join(g.nodes, "+"), "", "changed", "ms", g.before_ms, g.after_ms, g.delta_ms,
        g.delta_pct, "", "");
  for (const auto& n : d.ranges)
    row("range", n.name, n.op_type, n.change, "ms", n.before_ms, n.after_ms, n.delta_ms,
        n.delta_pct, "", "");
  if (d.memory.available) {
    auto mem = [&](const char* kind, const memory::BytesDelta& x) {
      row(kind, x.name, "", x.change, "bytes", x.before, x.after, x.delta,
          x.before > 0 ? x.delta / x.before * 100 : 0, x.shape_before, x.shape_after);
    };
    for (const memory::BytesDelta* x :
         {&d.memory.peak, &d.memory.arena, &d.memory.weights, &d.memory.packed_weights,
          &d.memory.workspace, &d.memory.peak_rss})
      mem("memory", *x);
    for (const auto& x : d.memory.at_peak) mem("memory_tensor", x);
    for (const auto& x : d.memory.steps) mem("memory_step", x);
  }
  return out;
}

// Both sides' traces in one: the after side's processes get pids offset by kAfterPid and every
// process name says which side it is.
Status DiffChrome(const DiffRender& r, std::string* out) {
  constexpr int64_t kAfterPid = 1 << 24;
  nlohmann::json events = nlohmann::json::array();
  int sides = 0;
  for (const auto* side : {&r.before, &r.after}) {
    std::string text;
    OPSCOPE_RETURN_IF_ERROR(FindFormat("chrome")->write(*side, ReportOptions{}, &text));
    nlohmann::json t = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (t.is_discarded() || !t.contains("traceEvents"))
      return Internal("the chrome writer gave no trace");
    const bool after = side == &r.after;
    const std::string label = after ? "after: " + r.after_label : "before: " + r.before_label;
    for (auto& e : t["traceEvents"]) {
      if (after && e.contains("pid") && e["pid"].is_number_integer())
        e["pid"] = e["pid"].get<int64_t>() + kAfterPid;
      if (e.value("ph", "") == "M" && e.value("name", "") == "process_name")
        e["args"]["name"] = label + " — " + e["args"].value("name", "");
      if (e.value("ph", "") == "M" && e.value("name", "") == "process_sort_index")
        e["args"]["sort_index"] = e["pid"];
      events.push_back(std::move(e));
    }
    ++sides;
  }
  nlohmann::json doc = {{"traceEvents", std::move(events)},
                        {"otherData",
                         {{"schema", "opscope.diff/1"},
                          {"before", r.before_label},
                          {"after", r.after_label},
                          {"headline", r.diff.headline}}}};
  *out = profile::DumpJson(doc) + "\n";
  return Status::Ok();
}

}  // namespace

bool DiffWrites(const std::string& format) {
  for (const char* f : kDiffFormats)
    if (format == f) return true;
  return false;
}

std::string DiffFormatNames() {
  std::vector<std::string> v(std::begin(kDiffFormats), std::end(kDiffFormats));
  return Join(v, ", ");
}

Status RenderDiff(const Format& f, const DiffRender& r, std::string* out) {
  const std::string name = f.name;
  if (name == "table")
    *out = analysis::FormatDiff(r.diff, r.color, r.rows);
  else if (name == "json")
    *out = analysis::DiffToJson(r.diff);
  else if (name == "csv")
    *out = DiffCsv(r.diff);
  else if (name == "html")
    *out = html::RenderDiffPage(r.before, r.after, r.diff, r.before_label, r.after_label);
  else if (name == "chrome")
    return DiffChrome(r, out);
  else
    return InvalidArgument("a diff is written as " + DiffFormatNames() + ", not " + name +
                           " (render each profile with `opscope report FILE -o ...`)");
  return Status::Ok();
}

}  // namespace opscope::report
