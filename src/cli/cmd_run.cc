// `opscope run -- CMD`: per-range profile of a program annotated with opscope's annotation header
// (include/opscope/annotate.h) or NVTX. The program runs with opscope's range recorder preloaded
// (LD_PRELOAD) and opscope's NVTX injection library named in NVTX_INJECTION64_PATH; each run
// writes its records to a private temporary folder, which is read back, nested, summarised and
// removed.
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
#include "base/target_signals.h"
#include "cli/checks.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/target_build.h"
#include "collect/counter_run.h"
#include "collect/ranges_reader.h"
#include "collect/target_build.h"
#include "profile/profile_io.h"

extern char** environ;

namespace opscope::cli {
namespace {

// Folder of the runtime libraries: $OPSCOPE_LIB_DIR, else <dir of opscope>/lib (build tree),
// else <dir of opscope>/../lib/opscope (installed).
std::string RuntimeLibDir() {
  if (const char* d = std::getenv("OPSCOPE_LIB_DIR"); d && d[0]) return d;
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  std::string exe(buf, n);
  std::string dir = exe.substr(0, exe.rfind('/'));
  if (access((dir + "/lib/libopscope_ranges_rt.so").c_str(), R_OK) == 0) return dir + "/lib";
  return dir + "/../lib/opscope";
}

void RemoveTree(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") unlink((dir + "/" + n).c_str());
    }
    closedir(d);
  }
  rmdir(dir.c_str());
}

// What the recorder's clock reads cost per range on this machine (two CLOCK_MONOTONIC reads,
// plus two CLOCK_THREAD_CPUTIME_ID reads when per-range CPU time is on), in ns: the part of the
// recorder's cost that varies most between machines (a syscall on many VMs).
double ClockCostPerRangeNs(bool cpu_time) {
  constexpr int kIters = 2000;
  timespec ts;
  int64_t t0 = NowNs();
  for (int i = 0; i < kIters; ++i) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (cpu_time) {
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    }
  }
  return static_cast<double>(NowNs() - t0) / kIters;
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
    AddOutputOptions(app, &out_, ".json is the profile, .csv one row per range, .trace.json a "
                                 "timeline (one process per run)");
    app->add_flag("--wide", wide_, "show long range names whole");
    app->add_flag("--no-nvtx", no_nvtx_, "do not inject the NVTX recorder");
    app->add_flag("--no-cpu-time", no_cpu_time_,
                  "do not record each range's thread CPU time (saves two clock reads per range)");
    app->add_option("command", command_, "the program and its arguments (after --)")->required();
  }

  int Run() override {
    if (Status st = PrepareOutput(out_, "table"); !st.ok()) return ReportError(st);
    auto exe = collect::ResolveExecutable(command_[0]);
    if (!exe.ok()) return ReportError(exe.status());

    profile::Profile p;
    profile::FillHostMeta(p.meta);
    p.meta.kind = "run";
    p.meta.source = ShellJoin(command_);
    p.meta.warmup = warmup_;
    p.meta.runs = runs_;

    // How the target was built.
    analysis::BuildVerdict verdict = RecordTargetBuild(*exe, &p.meta);

    // Runtime libraries.
    std::string lib_dir = RuntimeLibDir();
    std::string rt = lib_dir + "/libopscope_ranges_rt.so", nvtx = lib_dir + "/libopscope_ranges_nvtx.so";
    if (access(rt.c_str(), R_OK) != 0)
      return ReportError(NotFound(rt + ": opscope's range recorder library is missing (rebuild opscope, "
                                  "or point OPSCOPE_LIB_DIR at the folder that holds it)"));
    bool use_nvtx = !no_nvtx_;
    if (use_nvtx && access(nvtx.c_str(), R_OK) != 0) {
      use_nvtx = false;
      Degrade(&p, "NVTX ranges not recorded: opscope was built without the NVTX v3 headers");
    }
    const char* user_inj = std::getenv("NVTX_INJECTION64_PATH");
    if (use_nvtx && user_inj && user_inj[0]) {
      use_nvtx = false;
      Degrade(&p, fmt::format("NVTX ranges not recorded: NVTX_INJECTION64_PATH is already set ({}) "
                              "and NVTX loads only one tool", user_inj));
    }

    char tmpl[] = "/tmp/opscope-run-XXXXXX";
    if (mkdtemp(tmpl) == nullptr)
      return ReportError(PermissionDenied(std::string("cannot create a temporary folder in /tmp: ") + std::strerror(errno)));
    std::string tmp = tmpl;

    // The program's stdout goes to stderr when opscope's data (other than the table) goes to stdout.
    bool quiet_child = false;
    for (const auto& t : out_.targets) quiet_child |= t.path.empty() && std::string(t.format->name) != "table";
    int total = warmup_ + runs_;
    TargetSignals signals;
    std::string death;  // how the last run that died of a signal ended, for the empty-profile note
    for (int i = 0; i < total && signals.received() == 0; ++i) {
      int run = i - warmup_;
      std::string prefix = fmt::format("{}/run{}", tmp, i);
      std::vector<std::string> env;
      std::string preload = rt;
      std::string asan;
      for (char** e = environ; *e; ++e) {
        std::string kv = *e;
        if (StartsWith(kv, "LD_PRELOAD=")) {
          preload += " " + kv.substr(11);
          continue;
        }
        if (StartsWith(kv, "OPSCOPE_RANGES_OUT=") || StartsWith(kv, "OPSCOPE_RANGES_CPU=")) continue;
        if (StartsWith(kv, "ASAN_OPTIONS=")) {
          asan = kv.substr(13);
          continue;
        }
        if (use_nvtx && StartsWith(kv, "NVTX_INJECTION64_PATH=")) continue;
        env.push_back(kv);
      }
      env.push_back("LD_PRELOAD=" + preload);
      // An AddressSanitizer-built program refuses to start when a preloaded library comes before
      // its runtime; the recorder does not use ASan, so the order check is safe to skip.
      env.push_back("ASAN_OPTIONS=" + asan + (asan.empty() ? "" : ":") + "verify_asan_link_order=0");
      env.push_back("OPSCOPE_RANGES_OUT=" + prefix);
      env.push_back(std::string("OPSCOPE_RANGES_CPU=") + (no_cpu_time_ ? "0" : "1"));
      if (use_nvtx) env.push_back("NVTX_INJECTION64_PATH=" + nvtx);
      std::vector<char*> envp, argv;
      for (auto& s : env) envp.push_back(s.data());
      envp.push_back(nullptr);
      for (auto& s : command_) argv.push_back(s.data());
      argv.push_back(nullptr);
      posix_spawn_file_actions_t fa;
      posix_spawn_file_actions_init(&fa);
      if (quiet_child) posix_spawn_file_actions_adddup2(&fa, 2, 1);
      posix_spawnattr_t attr;
      posix_spawnattr_init(&attr);
      signals.PrepareSpawn(&attr, &fa);
      pid_t pid;
      int64_t t0 = NowNs();
      int err = posix_spawn(&pid, exe->c_str(), &fa, &attr, argv.data(), envp.data());
      posix_spawn_file_actions_destroy(&fa);
      posix_spawnattr_destroy(&attr);
      if (err != 0) {
        RemoveTree(tmp);
        return ReportError(InvalidArgument(*exe + ": cannot start: " + std::strerror(err)));
      }
      signals.Attach(pid);
      int status = 0;
      TargetSignals::Wait(pid, &status);
      signals.Detach();
      double ms = (NowNs() - t0) / 1e6;
      ThermalSample ts = ReadThermalSample();
      p.clocks.push_back(profile::ClockSample{run, ts.cpu_mhz_avg, ts.max_temp_c});
      if (WIFSIGNALED(status)) {
        death = DescribeDeath(WTERMSIG(status), signals.received());
        Degrade(&p, fmt::format("run {}: the program {}; the ranges it had open end then", run,
                                death));
      } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
        Degrade(&p, fmt::format("run {}: the program exited with status {}", run, WEXITSTATUS(status)));
      if (signals.received() != 0)
        Degrade(&p, fmt::format("run {}: opscope received {} and passed it to the program; "
                                "reporting what was recorded", run,
                                collect::SignalName(signals.received())));
      if (run < 0) continue;
      p.e2e.runs_ms.push_back(ms);
      std::vector<profile::Range> ranges;
      std::vector<collect::RangeFileInfo> infos;
      if (Status st = collect::ReadRangeFiles(prefix, &ranges, &infos); !st.ok()) {
        RemoveTree(tmp);
        return ReportError(st);
      }
      int unclosed = 0;
      for (const auto& inf : infos) unclosed += inf.unclosed;
      if (unclosed > 0)
        Degrade(&p, WIFSIGNALED(status)
                        ? fmt::format("run {}: {} range(s) were still open when it died", run,
                                      unclosed)
                        : fmt::format("run {}: {} range(s) were still open at exit and end at exit",
                                      run, unclosed));
      collect::AssignNesting(&ranges);
      int32_t base = static_cast<int32_t>(p.ranges.size());
      for (auto& r : ranges) {
        if (r.parent >= 0) r.parent += base;
        r.run = run;
        p.ranges.push_back(std::move(r));
      }
    }
    RemoveTree(tmp);
    // A signal may have ended the loop early: count the runs that took place.
    const int measured = static_cast<int>(p.e2e.runs_ms.size());
    p.meta.runs = measured;
    if (p.ranges.empty() && !death.empty())
      Degrade(&p, "no ranges recorded: the program " + death + " before any range was recorded");
    else if (p.ranges.empty() && p.e2e.runs_ms.empty())
      Degrade(&p, "no ranges recorded: no measured run took place");
    else if (p.ranges.empty())
      Degrade(&p, "no ranges recorded: annotate the program with include/opscope/annotate.h "
                  "(OPSCOPE_RANGE(\"stage\")) or NVTX (nvtxRangePushA/nvtxRangePop); a statically "
                  "linked program cannot load the recorder");
    profile::FinalizeStats(p);
    if (!p.ranges.empty() && p.e2e.stats.median > 0) {
      // opscope's own cost, estimated from what the recorder does per range.
      double per_range_ns = ClockCostPerRangeNs(!no_cpu_time_) + kBookkeepingNs;
      double per_run = static_cast<double>(p.ranges.size()) / std::max(1, measured);
      profile::Overhead o;
      o.observed_median_ms = p.e2e.stats.median;
      o.baseline_median_ms = std::max(0.0, o.observed_median_ms - per_run * per_range_ns / 1e6);
      o.pct = o.baseline_median_ms > 0 ? (o.observed_median_ms - o.baseline_median_ms) / o.baseline_median_ms * 100 : 0;
      o.method = fmt::format("estimated: {:.0f} ranges per run × {:.0f} ns per range (clock reads "
                             "timed on this machine + {:.0f} ns bookkeeping measured by "
                             "bench/annotate_overhead)", per_run, per_range_ns, kBookkeepingNs);
      p.overhead = o;
    }
    analysis::Diagnose(&p, nullptr);  // ranges only: no op has FLOPs for a roofline
    if (Status st = profile::Validate(p); !st.ok()) return ReportError(st);

    (void)verdict;  // recorded in p.meta; the range section prints it
    report::ReportOptions ro;
    ro.color = UseColor(1);
    ro.wide = wide_;
    ro.only = {"ranges"};
    if (Status st = EmitProfile(p, out_, ro); !st.ok()) return ReportError(st);
    return signals.received() != 0 ? TargetSignals::ExitCodeFor(signals.received()) : 0;
  }

 private:
  // "crashed (SIGSEGV: Segmentation fault)", "was killed by SIGTERM (passed on by opscope)".
  static std::string DescribeDeath(int sig, int received) {
    const std::string name = collect::SignalName(sig);
    if (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGABRT ||
        sig == SIGTRAP || sig == SIGSYS)
      return fmt::format("crashed ({}: {})", name, strsignal(sig));
    return fmt::format("was killed by {}{}", name,
                       sig == received ? " (passed on by opscope)" : "");
  }

  static void Degrade(profile::Profile* p, const std::string& what) {
    p->meta.degradations.push_back(what);
    std::fprintf(stderr, "opscope: %s\n", what.c_str());
  }

  // Recorder work per range besides the clock reads (interning, buffer append, two uncontended
  // locks), measured with bench/annotate_overhead.sh with OPSCOPE_RANGES_CPU=0 (docs/diagnosis.md).
  static constexpr double kBookkeepingNs = 250;

  int runs_ = 1, warmup_ = 0;
  OutputChoice out_;
  bool wide_ = false;
  bool no_nvtx_ = false, no_cpu_time_ = false;
  std::vector<std::string> command_;
};

OPSCOPE_REGISTER_COMMAND(RunCommand);

}  // namespace opscope::cli
