// `opscope run -- CMD`: per-range profile of a program annotated with opscope's annotation header
// (include/opscope/annotate.h) or NVTX. The collector is collect/range_run.h; this file parses
// the flags, renders and writes.
#include <dirent.h>
#include <signal.h>
#include <fmt/format.h>
#include <limits.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "analysis/format.h"
#include "analysis/hygiene.h"
#include "analysis/range_stats.h"
#include "analysis/rules.h"
#include "base/clock.h"
#include "base/files.h"
#include "base/host.h"
#include "base/strings.h"
#include "base/launch.h"
#include "base/target_signals.h"
#include "cli/checks.h"
#include "cli/command.h"
#include "cli/target_build.h"
#include "collect/counter_run.h"
#include "collect/range_run.h"
#include "collect/target_build.h"
#include "profile/profile_io.h"

extern char** environ;

namespace opscope::cli {
namespace {

std::string FormatFromPath(const std::string& path) {
  if (EndsWith(path, ".csv")) return "csv";
  if (EndsWith(path, ".trace.json") || EndsWith(path, ".chrome.json")) return "chrome";
  if (EndsWith(path, ".json")) return "json";
  return "table";
}

}  // namespace

class RunCommand : public Command {
 public:
  const char* Name() const override { return "run"; }
  const char* Help() const override {
    return "per-range profile of a program annotated with NVTX or opscope/annotate.h";
  }
  void Setup(CLI::App* app) override {
    app->add_option("-r,--runs", runs_, "measured runs of the program (default 1)")->check(WholeNumberIn(1, 100000));
    app->add_option("-w,--warmup", warmup_, "warm-up runs, not measured (default 0)")->check(WholeNumberIn(0, 100000));
    app->add_option("-o,--output", output_, "output file; format from the extension (.json, .csv, .trace.json)");
    app->add_option("--format", format_, "table, json, csv or chrome")
        ->check(CLI::IsMember({"table", "json", "csv", "chrome"}));
    app->add_flag("--no-nvtx", no_nvtx_, "do not inject the NVTX recorder");
    app->add_flag("--no-cpu-time", no_cpu_time_,
                  "do not record each range's thread CPU time (saves two clock reads per range)");
    app->add_option("command", command_, "the program and its arguments (after --)")->required();
  }

  int Run() override {
    std::string format = !format_.empty() ? format_ : output_.empty() ? "table" : FormatFromPath(output_);
    if (!output_.empty())
      if (Status st = CheckWritable(output_); !st.ok()) return ReportError(st);
    auto exe = ResolveCommand(command_[0]);
    if (!exe.ok()) {
      ReportError(exe.status());
      return ExitCodeForStartError(exe.status());
    }

    profile::Profile p;
    profile::FillHostMeta(p.meta);
    p.meta.kind = "run";
    p.meta.source = ShellJoin(command_);
    p.meta.warmup = warmup_;
    p.meta.runs = runs_;

    // How the target was built.
    analysis::BuildVerdict verdict = RecordTargetBuild(*exe, &p.meta);

    collect::RangeRunOptions ro;
    ro.command = command_;
    ro.warmup = warmup_;
    ro.runs = runs_;
    ro.nvtx = !no_nvtx_;
    ro.cpu_time = !no_cpu_time_;
    ro.stdout_to_stderr = output_.empty() && format != "table";
    ro.on_note = [](const std::string& what) {
      std::fprintf(stderr, "opscope: %s\n", what.c_str());
    };
    TargetSignals signals;
    auto ran = collect::RunRanges(ro, &signals, &p);
    if (!ran.ok()) return ReportError(ran.status());
    if (!ran->exec_error.ok()) {
      ReportError(ran->exec_error);
      return ExitCodeForStartError(ran->exec_error);
    }
    analysis::Diagnose(&p, nullptr);  // ranges only: no op has FLOPs for a roofline
    if (Status st = profile::Validate(p); !st.ok()) return ReportError(st);

    analysis::RangeReport rep = analysis::SummarizeRanges(p);
    auto render = [&](const std::string& f, bool color) -> std::string {
      if (f == "json") return profile::ToJsonString(p);
      if (f == "csv") return analysis::RangesToCsv(rep);
      if (f == "chrome") return analysis::RangesToChromeTrace(p);
      std::string out = analysis::FormatRangeTable(rep, color);
      analysis::RepeatReport rr = analysis::AnalyzeRepeats(p.e2e.runs_ms);
      out += "\nwhole program: " + rr.words + "\n";
      analysis::ThrottleReport tr = analysis::DetectThrottling(p.clocks);
      if (!tr.summary.empty()) out += "clocks: " + tr.summary + "\n";
      if (p.overhead) out += fmt::format("opscope overhead: {:.2f}% ({})\n", p.overhead->pct, p.overhead->method);
      out += "target build: " + (verdict.kind == "unknown" ? verdict.evidence : verdict.kind + " — " + verdict.evidence) + "\n\n";
      out += analysis::FormatFindings(p.findings, color);
      return out;
    };
    if (output_.empty()) {
      std::fputs(render(format, UseColor(1)).c_str(), stdout);
    } else {
      if (Status st = WriteFileAtomic(output_, render(format, false)); !st.ok()) return ReportError(st);
      std::fputs(render("table", UseColor(1)).c_str(), stdout);
      std::fprintf(stdout, "\nwrote %s (%s)\n", output_.c_str(), format.c_str());
    }
    return TargetExitCode(ran->exit_code, signals.received());
  }

 private:
  int runs_ = 1, warmup_ = 0;
  std::string output_, format_;
  bool no_nvtx_ = false, no_cpu_time_ = false;
  std::vector<std::string> command_;
};

OPSCOPE_REGISTER_COMMAND(RunCommand);

}  // namespace opscope::cli
