// `opscope run -- CMD`: per-range profile of a program annotated with opscope's annotation header
// (include/opscope/annotate.h) or NVTX. The collector is collect/range_run.h; this file parses
// the flags, renders and writes.
#include <dirent.h>
#include <fmt/format.h>
#include <limits.h>
#include <signal.h>
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
#include "base/clock.h"
#include "base/files.h"
#include "base/host.h"
#include "base/launch.h"
#include "base/strings.h"
#include "base/target_signals.h"
#include "cli/checks.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/target_build.h"
#include "collect/attach.h"
#include "collect/counter_run.h"
#include "collect/range_attach.h"
#include "collect/range_run.h"
#include "collect/target_build.h"
#include "profile/profile_io.h"

extern char** environ;

namespace opscope::cli {
namespace {}  // namespace

class RunCommand : public Command {
 public:
  const char* Name() const override { return "run"; }
  const char* Help() const override {
    return "profile the ranges of a program annotated with NVTX or opscope/annotate.h";
  }
  void Setup(CLI::App* app) override {
    AddSysrootOption(app);
    app->add_option("-r,--runs", runs_, "measured runs of the program (default 1)")
        ->check(WholeNumberIn(1, 100000));
    app->add_option("-w,--warmup", warmup_, "warm-up runs, not measured (default 0)")
        ->check(WholeNumberIn(0, 100000));
    AddOutputOptions(app, &out_,
                     ".json is the profile, .csv one row per range, .trace.json a "
                     "timeline (one process per run)",
                     {"ranges", "telemetry"});
    app->add_flag("--wide", wide_, "show long range names whole");
    app->add_flag("--no-nvtx", no_nvtx_, "do not inject the NVTX recorder");
    app->add_flag("--no-cpu-time", no_cpu_time_,
                  "do not record each range's thread CPU time (saves two clock reads per range)");
    app->add_option("-p,--pid", pid_,
                    "attach to a running program started attachable (OPSCOPE_ATTACHABLE=1 with "
                    "opscope's recorder preloaded); docs/diagnosis.md");
    app->add_option("--duration", duration_s_, "with -p: stop after S seconds (default: Ctrl-C)")
        ->check(NumberIn(0, 1e7, /*integer=*/false));
    app->add_option("command", command_, "the program and its arguments (after --)");
  }

  CommandStatus Run() override {
    if (Status st = PrepareOutput(out_, "table"); !st.ok()) return st;
    if (pid_.empty() && command_.empty())
      return InvalidArgument(
          "no command given: use `opscope run -- CMD [ARGS]`, or attach with -p PID");
    if (!pid_.empty()) return Attach();
    if (duration_s_ > 0)
      return InvalidArgument("--duration applies to -p; a command runs until it exits");
    auto exe = ResolveCommand(command_[0]);
    if (!exe.ok()) {
      return StartError(exe.status());
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
    // Machine output on stdout: the program's own stdout goes to stderr so as not to mix in.
    for (const auto& t : out_.targets)
      ro.stdout_to_stderr |= t.path.empty() && std::string(t.format->name) != "table";
    ro.on_note = [](const std::string& what) { report::Say("", what); };
    TargetSignals signals;
    auto ran = collect::RunRanges(ro, &signals, &p);
    if (!ran.ok()) return ran.status();
    if (!ran->exec_error.ok()) {
      return StartError(ran->exec_error);
    }
    (void)verdict;  // recorded in p.meta; the range section prints it
    report::ReportOptions o;
    o.color = UseColor(1);
    o.wide = wide_;
    o.only = {"ranges"};
    // Ranges only: no op has FLOPs for a roofline, so no ceilings.
    if (Status st = FinishProfile(&p, FinishOptions{}, out_, o); !st.ok()) return st;
    return TargetExitCode(ran->exit_code, signals.received());
  }

 private:
  // `run -p PID`: the ranges of a running attachable program (collect/range_attach.h).
  CommandStatus Attach() {
    collect::AttachSpec spec;
    auto what = collect::ResolveAttachFlags(
        {pid_, "", "", !command_.empty(), "use `opscope run -- CMD [ARGS]`"}, &spec);
    if (!what.ok()) return what.status();
    if (spec.pids.size() != 1)
      return InvalidArgument("-p: `run` attaches to one process at a time");
    if (runs_ != 1 || warmup_ != 0)
      return InvalidArgument("-r/-w apply to a command; -p records one span");
    profile::Profile p;
    profile::FillHostMeta(p.meta);
    p.meta.kind = "run";
    p.meta.source = "pid " + pid_;
    collect::RangeAttachOptions ro;
    ro.pid = spec.pids[0];
    ro.duration_s = duration_s_;
    ro.cpu_time = !no_cpu_time_;
    ro.on_note = [](const std::string& what) { report::Say("", what); };
    TargetSignals signals;  // received only: the program is not opscope's to signal
    auto attached = collect::AttachRanges(ro, signals, &p);
    if (!attached.ok()) return attached.status();
    p.meta.source = attached->description;
    report::ReportOptions o;
    o.color = UseColor(1);
    o.wide = wide_;
    o.only = {"ranges"};
    if (Status st = FinishProfile(&p, FinishOptions{}, out_, o); !st.ok()) return st;
    return 0;
  }

  std::string pid_;
  double duration_s_ = 0;
  int runs_ = 1, warmup_ = 0;
  OutputChoice out_;
  bool wide_ = false;
  bool no_nvtx_ = false, no_cpu_time_ = false;
  std::vector<std::string> command_;
};

OPSCOPE_REGISTER_COMMAND(RunCommand);

}  // namespace opscope::cli
