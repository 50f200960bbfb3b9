// opscope report FILE: hot functions / call graph / flame graph / pprof from any profile opscope
// writes (record files and JSON profiles).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "base/files.h"
#include "base/strings.h"
#include "cli/checks.h"
#include "cli/command.h"
#include "collect/symbolize.h"
#include "profile/profile_io.h"
#include "report/flame_svg.h"
#include "report/folded_stacks.h"
#include "report/pprof_encode.h"
#include "report/samples_report.h"

namespace opscope::cli {
namespace {

std::string FormatForPath(const std::string& path) {
  if (EndsWith(path, ".folded") || EndsWith(path, ".txt.folded")) return "folded";
  if (EndsWith(path, ".svg")) return "svg";
  if (EndsWith(path, ".pb.gz") || EndsWith(path, ".pprof") || EndsWith(path, ".pb")) return "pprof";
  if (EndsWith(path, ".profile.json")) return "profile";
  if (EndsWith(path, ".json")) return "json";
  if (EndsWith(path, ".txt") || EndsWith(path, ".table")) return "table";
  return "";
}

// For profiles without samples: the ops by time, so `report` says something useful about every
// profile (the full op reports are `opscope profile`'s).
std::string OpsWithoutSamples(const profile::Profile& p, size_t top) {
  std::string out = "opscope report: " + (p.meta.source.empty() ? p.meta.kind : p.meta.source) + "\n";
  out += "this profile has no call-stack samples (record with `opscope record -- CMD` or "
         "`opscope profile --sample`); hot ops by median time instead:\n\n";
  std::vector<const profile::OpRecord*> ops;
  for (const auto& op : p.ops) ops.push_back(&op);
  std::stable_sort(ops.begin(), ops.end(), [](auto* a, auto* b) { return a->stats.median > b->stats.median; });
  out += fmt::format("{:>7}  {:>10}  {:<16}  {}\n", "share%", "median", "op type", "node");
  size_t n = 0;
  for (auto* op : ops) {
    if (top && n++ >= top) break;
    out += fmt::format("{:>7.1f}  {:>10}  {:<16}  {}\n", 100 * op->share, HumanMs(op->stats.median),
                       op->op_type, op->name);
  }
  return out;
}

class ReportCommandCli : public Command {
 public:
  const char* Name() const override { return "report"; }
  const char* Help() const override {
    return "Hot functions, callers/callees, flame graph or pprof from any opscope profile";
  }
  void Setup(CLI::App* app) override {
    app->add_option("file", file_, "Record file or JSON profile (default opscope.rec)");
    app->add_option("--sort", sort_, "self (default), inclusive or name");
    app->add_option("--threshold", threshold_, "Hide rows below this share in percent (default 0.5)")
        ->check(NumberIn(0, 100, false));
    app->add_option("--top", top_, "Rows to show (per group), 0 = all (default 40)")
        ->check(WholeNumberIn(0, 1000000000));
    app->add_option("--group", group_, "function (default), thread, module or op");
    app->add_option("-f,--function", function_, "Caller/callee view of the functions matching NAME");
    app->add_option("-o,--output", output_,
                    "Write to FILE; the format follows the extension: .txt, .json, .folded, .svg, "
                    ".pb.gz (pprof), .profile.json (the whole profile)");
    app->add_option("--format", format_, "table, json, folded, svg, pprof or profile, to standard output");
  }
  int Run() override {
    auto sort = report::ParseSampleSort(sort_);
    if (!sort.ok()) return ReportError(sort.status());
    auto group = report::ParseSampleGroup(group_);
    if (!group.ok()) return ReportError(group.status());
    if (threshold_ < 0 || threshold_ > 100)
      return ReportError(InvalidArgument("--threshold must be a percentage in 0..100"));
    std::string format = format_;
    if (!output_.empty()) {
      std::string by_ext = FormatForPath(output_);
      if (format.empty()) format = by_ext;
      if (format.empty())
        return ReportError(InvalidArgument("-o " + output_ + ": unknown extension; use .txt, .json, "
                                           ".folded, .svg, .pb.gz or .profile.json, or give --format"));
      Status w = CheckWritable(output_);
      if (!w.ok()) return ReportError(w);
    }
    if (format.empty()) format = "table";
    static const char* kFormats[] = {"table", "json", "folded", "svg", "pprof", "profile"};
    if (std::find(std::begin(kFormats), std::end(kFormats), format) == std::end(kFormats))
      return ReportError(InvalidArgument("--format '" + format + "': expected table, json, folded, svg, pprof or profile"));

    auto loaded = collect::LoadAnyProfile(file_);
    if (!loaded.ok()) return ReportError(loaded.status());
    profile::Profile& p = *loaded;
    // The table shows the warnings (a damaged or unfinished recording) under its rows and the JSON
    // forms carry them; the formats that have no place for them get them on stderr.
    if (p.samples && (format == "folded" || format == "svg" || format == "pprof"))
      for (const auto& w : p.samples->warnings) std::fprintf(stderr, "opscope: warning: %s\n", w.c_str());

    report::SampleReportOptions opt;
    opt.sort = *sort;
    opt.group = *group;
    opt.threshold_pct = threshold_;
    opt.top = top_;
    if (opt.group == report::SampleGroup::kOp && p.samples) {
      bool any = false;
      for (const auto& s : p.samples->samples) any = any || s.op >= 0;
      if (!any)
        std::fprintf(stderr, "opscope: note: no sample is attributed to an op (this profile did not "
                             "come from `opscope profile --sample`): all fall in [outside ops]\n");
    }

    std::string out;
    const bool has_samples = p.samples && !p.samples->samples.empty();
    if (format == "profile") {
      out = profile::ToJsonString(p);
    } else if (!has_samples && !p.ops.empty() && (format == "table")) {
      out = OpsWithoutSamples(p, top_);
    } else if (!has_samples && format != "json" && format != "table") {
      return ReportError(InvalidArgument(file_ + ": the profile has no call-stack samples, so there is "
                                         "nothing to draw as " + format));
    } else if (!function_.empty()) {
      auto cc = report::ComputeCallerCallee(p, function_);
      if (!cc.ok()) return ReportError(cc.status().WithPrefix(file_));
      out = report::RenderCallerCallee(*cc);
    } else if (format == "table") {
      auto hot = report::ComputeHotFunctions(p, opt);
      out = report::RenderHotTable(p, hot, opt, output_.empty() && UseColor(1));
    } else if (format == "json") {
      auto hot = report::ComputeHotFunctions(p, opt);
      out = report::RenderHotJson(p, hot);
    } else if (format == "folded") {
      out = report::RenderFolded(p, opt.group);
    } else if (format == "svg") {
      out = report::RenderFlameSvg(p, "opscope: " + (p.meta.source.empty() ? file_ : p.meta.source), opt.group);
    } else if (format == "pprof") {
      auto pb = report::RenderPprof(p);
      if (!pb.ok()) return ReportError(pb.status());
      out = std::move(*pb);
      if (output_.empty() && IsTerminal(1))
        return ReportError(InvalidArgument("pprof output is binary: use -o FILE.pb.gz or redirect it"));
    }
    if (output_.empty()) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      return 0;
    }
    Status st = WriteFileAtomic(output_, out);
    if (!st.ok()) return ReportError(st);
    std::fprintf(stderr, "opscope: wrote %s (%s)\n", output_.c_str(), format.c_str());
    return 0;
  }

 private:
  std::string file_ = "opscope.rec";
  std::string sort_ = "self";
  double threshold_ = 0.5;
  size_t top_ = 40;
  std::string group_ = "function";
  std::string function_;
  std::string output_;
  std::string format_;
};

}  // namespace
}  // namespace opscope::cli

using opscope::cli::ReportCommandCli;
OPSCOPE_REGISTER_COMMAND(ReportCommandCli);
