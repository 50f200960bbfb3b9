// `opscope stat [-r N] [-e EVENTS] [--json|-x SEP] [-o FILE] -- CMD [ARGS]`: counters for a whole
// program (see docs/stat.md). Everything opscope prints goes to stderr, so the command's stdout
// is left alone; opscope exits with the command's exit status (128+N when signal N killed it).
// SIGINT/SIGTERM/SIGHUP/SIGQUIT sent to opscope go to the command (base/target_signals.h): the
// counts so far are still printed and written, and opscope exits with 128+N.
#include <fmt/format.h>
#include <signal.h>

#include <cstdio>

#include "analysis/format.h"
#include "base/files.h"
#include "base/strings.h"
#include "base/target_signals.h"
#include "cli/checks.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/target_build.h"
#include "collect/attach.h"
#include "collect/counter_metrics.h"
#include "collect/counter_run.h"
#include "collect/perf_event.h"
#include "profile/profile_io.h"

namespace opscope::cli {
namespace {

class StatCommand : public Command {
 public:
  const char* Name() const override { return "stat"; }
  const char* Help() const override {
    return "count events of a whole program (its threads and children) over repeated runs, "
           "with a bound verdict";
  }
  void Setup(CLI::App* app) override {
    out_.command = "stat";
    out_.sections = {"stat", "telemetry"};
    AddSysrootOption(app);
    app->add_option("-r,--repeat", repeat_,
                    "run the command N times; report mean, median, "
                    "trimmed mean, min, max, cv per event")
        ->check(WholeNumberIn(1, 100000));
    app->add_option("-e,--event,--events", events_,
                    "events, comma-separated: generic names (cycles, "
                    "instructions, task-clock, page-faults, ...), hw-cache names "
                    "(L1-dcache-load-misses), raw rNNNN, libpfm4 names; :u/:k modifiers")
        ->allow_extra_args(false);
    app->add_flag("--json", json_,
                  "machine output: the whole profile as JSON (stderr, or -o FILE)");
    app->add_option("-x,--field-separator", sep_,
                    "machine output: separated values with SEP "
                    "(stderr, or -o FILE)")
        ->check(NonEmpty());
    app->add_option(
           "-o,--output", out_.paths,
           "write the result to FILE, in the format its "
           "extension names: .json the profile, .csv `perf stat -x,` lines, .txt the table "
           "(repeatable)")
        ->allow_extra_args(false);
    app->add_option("-p,--pid", pids_,
                    "attach to running processes PID[,PID...] (their threads, "
                    "counted per thread)")
        ->check(NonEmpty());
    app->add_option("-t,--tid", tids_, "attach to threads TID[,TID...]")->check(NonEmpty());
    app->add_flag("-a,--all-cpus", attach_.all_cpus, "system-wide: every CPU");
    app->add_option("-C,--cpu", cpus_, "system-wide on these CPUs only (e.g. 0-3,6)")
        ->check(NonEmpty());
    app->add_option("--duration", attach_.duration_s,
                    "with -p/-t/-a/-C: count for S seconds (default: until Ctrl-C, SIGINT or "
                    "SIGTERM, or until the processes exit)")
        ->check(NumberIn(0, 1e7, false));
    app->add_option("command", command_, "the command and its arguments, after --");
  }

  CommandStatus Run() override {
    auto what = ResolveAttachOptions();
    if (!what.ok()) return what.status();
    const bool attached = attach_.any();
    if (json_ && !sep_.empty()) return InvalidArgument("choose one of --json and -x");
    std::vector<collect::EventSpec> events = collect::DefaultStatEvents();
    if (!events_.empty()) {
      auto parsed = collect::ParseEventList(Join(events_, ","));
      if (!parsed.ok()) return parsed.status();
      events = std::move(parsed).value();
    }
    if (json_) out_.format = "json";
    if (!sep_.empty()) out_.format = "stat-csv";
    if (Status st = PrepareOutput(out_, "table"); !st.ok()) return st;

    profile::Profile p;
    FillMeta(p.meta);
    if (attached) p.meta.source = "attached to " + what->description;
    profile::StatSection s;
    s.command = command_;
    s.attached = what->description;
    int exit_code = 0;
    TargetSignals signals;
    for (int i = 0; i < repeat_ && signals.received() == 0; ++i) {
      collect::StopReason stop = collect::StopReason::kSignal;
      auto r = attached ? collect::CountAttached(attach_, *what, events, collect::SystemOpener(),
                                                 signals, &stop)
                        : collect::RunCounted(command_, events, collect::SystemOpener(), &signals);
      if (!r.ok()) return r.status();
      if (!r->exec_error.ok()) {
        return CommandStatus(r->exec_error).WithExitCode(r->run.exit_code);
      }
      for (const std::string& d : r->degradations) {
        if (std::find(s.degradations.begin(), s.degradations.end(), d) != s.degradations.end())
          continue;
        report::Say("note", d);
        s.degradations.push_back(d);
        p.meta.degradations.push_back(d);
      }
      s.user_only = s.user_only || r->user_only;
      exit_code = r->run.exit_code;
      const int sig = r->run.term_signal;
      if (sig != 0)
        report::Say("", fmt::format("the command was terminated by signal {} ({}){}; counts up "
                                    "to that point are reported",
                                    collect::SignalName(sig), sig,
                                    repeat_ > 1 ? " in run " + std::to_string(i + 1) : ""));
      s.runs.push_back(std::move(r->run));
      if (signals.received() != 0 || sig == SIGINT || sig == SIGTERM || sig == SIGKILL ||
          sig == SIGHUP || sig == SIGQUIT) {
        if (i + 1 < repeat_)
          report::Say("", fmt::format("stopping after run {} of {}", i + 1, repeat_));
        break;
      }
    }
    if (attached) {
      // Stopping an attached count by a signal is the normal way to end it, not a failure.
      if (const int got = signals.received(); got != 0)
        report::Say("", "received " + collect::SignalName(got) +
                            ": stopped counting (the processes were not signalled)");
    } else if (const int got = signals.received(); got != 0) {
      report::Say("", "received " + collect::SignalName(got) +
                          ": passed it to the command; reporting what was counted");
      exit_code = TargetSignals::ExitCodeFor(got);
    }
    collect::SummarizeStat(s);
    p.meta.degradations = s.degradations;
    p.meta.runs = static_cast<int>(s.runs.size());
    p.stat = std::move(s);
    for (const auto& run : p.stat->runs) p.e2e.runs_ms.push_back(run.wall_ms);
    profile::FinalizeStats(p);
    if (!attached) RecordTargetBuild(command_[0], &p.meta);
    // Data goes to stderr (the command's stdout is its own) or to the -o files; the terminal
    // gets the table when every target is a file.
    report::ReportOptions o;
    o.separator = sep_.empty() ? "," : sep_;
    o.color = UseColor(2);
    o.only = {"stat"};
    FinishOptions f;
    f.stream = stderr;
    if (Status st = FinishProfile(&p, f, out_, o); !st.ok()) return st;
    return exit_code;
  }

 private:
  void FillMeta(profile::Meta& m) {
    profile::FillHostMeta(m);
    m.kind = "stat";
    m.source = command_.empty() ? "attached" : ShellJoin(command_);
    m.extra["perf_event_paranoid"] = std::to_string(collect::SystemOpener().Paranoid());
    if (!events_.empty()) m.extra["events"] = Join(events_, ",");
  }

  // -p/-t/-a/-C: what to attach to, checked (processes exist, permissions) before anything opens.
  StatusOr<collect::ResolvedAttach> ResolveAttachOptions() {
    auto resolved =
        collect::ResolveAttachFlags({pids_, tids_, cpus_, !command_.empty(),
                                     "usage `opscope stat [-r N] [-e EVENTS] -- CMD [ARGS]`"},
                                    &attach_);
    if (resolved.ok() && attach_.any() && repeat_ > 1)
      return InvalidArgument("-r applies to a command opscope runs; an attached count is one run");
    return resolved;
  }

  int repeat_ = 1;
  std::vector<std::string> events_;
  bool json_ = false;
  std::string sep_;
  OutputChoice out_;
  std::vector<std::string> command_;
  std::string pids_, tids_, cpus_;
  collect::AttachSpec attach_;
};

}  // namespace

OPSCOPE_REGISTER_COMMAND(StatCommand);

}  // namespace opscope::cli
