#include "collect/range_run.h"

#include <fmt/format.h>
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>

#include "base/clock.h"
#include "base/host.h"
#include "base/launch.h"
#include "collect/range_folder.h"
#include "collect/ranges_reader.h"
#include "profile/profile_io.h"
#include "sections/telemetry/board_probe.h"

namespace opscope::collect {
namespace {

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

// "crashed (SIGSEGV: Segmentation fault)", "was killed by SIGTERM (passed on by opscope)".
std::string DescribeDeath(int sig, int received) {
  const std::string name = SignalName(sig);
  if (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGABRT ||
      sig == SIGTRAP || sig == SIGSYS)
    return fmt::format("crashed ({}: {})", name, strsignal(sig));
  return fmt::format("was killed by {}{}", name, sig == received ? " (passed on by opscope)" : "");
}

// Recorder work per range besides the clock reads (interning, buffer append, two uncontended
// locks), measured with bench/annotate_overhead.sh with OPSCOPE_RANGES_CPU=0 (docs/diagnosis.md).
constexpr double kBookkeepingNs = 250;

// A range file without its `end` line: the process ended without running the recorder's end
// (SIGKILL, or an exec), so what closed after its last write is missing, and the ranges open then.
std::string DescribeCutFile(const RangeFileInfo& f) {
  const std::string cut =
      f.cut_line ? " (its last line, cut mid-write, was left out)" : std::string();
  if (f.last_write_ns == 0)
    return fmt::format(
        "process {} ended before the recorder's first write (killed by SIGKILL?): its {} ranges "
        "are missing{}",
        f.pid, f.source, cut);
  return fmt::format(
      "process {} ended without writing its last ranges (killed by SIGKILL, exec()ed, or still "
      "running after the program ended?): the {} range(s) open at its last write, and those that "
      "closed in the up to {} ms after it, are missing{}",
      f.pid, f.open_at_last_write, kRecorderWriteIntervalMs, cut);
}

}  // namespace

void EstimateRecorderOverhead(bool cpu_time, int measured_runs, profile::Profile* p) {
  if (p->ranges.empty() || !(p->e2e.stats.median > 0)) return;
  // opscope's own cost, estimated from what the recorder does per range.
  const double per_range_ns = ClockCostPerRangeNs(cpu_time) + kBookkeepingNs;
  const double per_run = static_cast<double>(p->ranges.size()) / std::max(1, measured_runs);
  profile::Overhead ov;
  ov.observed_median_ms = p->e2e.stats.median;
  ov.baseline_median_ms = std::max(0.0, ov.observed_median_ms - per_run * per_range_ns / 1e6);
  ov.pct = ov.baseline_median_ms > 0
               ? (ov.observed_median_ms - ov.baseline_median_ms) / ov.baseline_median_ms * 100
               : 0;
  ov.method = fmt::format(
      "estimated: {:.0f} ranges per run × {:.0f} ns per range (clock reads "
      "timed on this machine + {:.0f} ns bookkeeping measured by "
      "bench/annotate_overhead)",
      per_run, per_range_ns, kBookkeepingNs);
  p->overhead = ov;
}

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

StatusOr<RangeRunResult> RunRanges(const RangeRunOptions& o, TargetSignals* signals,
                                   profile::Profile* p) {
  auto note = [&](const std::string& what) {
    p->meta.degradations.push_back(what);
    if (o.on_note) o.on_note(what);
  };
  const std::string lib_dir = RuntimeLibDir();
  const std::string rt = lib_dir + "/libopscope_ranges_rt.so";
  const std::string nvtx = lib_dir + "/libopscope_ranges_nvtx.so";
  if (access(rt.c_str(), R_OK) != 0)
    return NotFound(rt +
                    ": opscope's range recorder library is missing (rebuild opscope, or "
                    "point OPSCOPE_LIB_DIR at the folder that holds it)");
  bool use_nvtx = o.nvtx;
  if (use_nvtx && access(nvtx.c_str(), R_OK) != 0) {
    use_nvtx = false;
    note("NVTX ranges not recorded: opscope was built without the NVTX v3 headers");
  }
  const char* user_inj = std::getenv("NVTX_INJECTION64_PATH");
  if (use_nvtx && user_inj && user_inj[0]) {
    use_nvtx = false;
    note(
        fmt::format("NVTX ranges not recorded: NVTX_INJECTION64_PATH is already set ({}) and "
                    "NVTX loads only one tool",
                    user_inj));
  }

  // opscope's own private folder; read through its descriptor all the same (the program may
  // change users, and the rule is one: collect/range_folder.h).
  OPSCOPE_ASSIGN_OR_RETURN(std::unique_ptr<RangeFolder> tmp,
                           RangeFolder::Make("/tmp", "opscope-run-"));

  LaunchOptions launch;
  launch.argv = o.command;
  launch.preload = {rt};
  launch.stdout_to_stderr = o.stdout_to_stderr;
  // An AddressSanitizer-built program refuses to start when a preloaded library comes before its
  // runtime; the recorder does not use ASan, so the order check is safe to skip.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string asan_options =
      std::string(asan ? asan : "") + (asan && asan[0] ? ":" : "") + "verify_asan_link_order=0";

  RangeRunResult result;
  std::string death;  // how the last run that died of a signal ended, for the empty-profile note
  const int total = o.warmup + o.runs;
  // The board's clocks, temperatures, power and accelerator load after each measured run.
  const telemetry::BoardProbe board = telemetry::BoardProbe::Discover();
  telemetry::TelemetrySection tele = board.Describe();
  for (int i = 0; i < total && signals->received() == 0; ++i) {
    const int run = i - o.warmup;
    const std::string prefix = fmt::format("run{}", i);
    launch.set_env = {{"ASAN_OPTIONS", asan_options},
                      {"OPSCOPE_RANGES_OUT", tmp->path() + "/" + prefix},
                      {"OPSCOPE_RANGES_CPU", o.cpu_time ? "1" : "0"}};
    if (use_nvtx) launch.set_env.push_back({"NVTX_INJECTION64_PATH", nvtx});
    TargetExit end;
    if (Status st = RunTarget(launch, signals, &end); !st.ok()) {
      if (st.code() == StatusCode::kInternal) return st;
      result.exec_error = st;
      return result;
    }
    const double ms = static_cast<double>(end.wall_ns) / 1e6;
    ThermalSample ts = ReadThermalSample();
    p->clocks.push_back(profile::ClockSample{run, ts.cpu_mhz_avg, ts.max_temp_c});
    if (result.exit_code == 0) result.exit_code = end.exit_code;
    if (end.term_signal != 0) {
      death = DescribeDeath(end.term_signal, signals->received());
      note(fmt::format("run {}: the program {}; {}", run, death,
                       end.term_signal == SIGKILL
                           ? "nothing runs at a SIGKILL: what it had not written yet is lost"
                           : "the ranges it had open end then"));
    } else if (end.exit_code != 0) {
      note(fmt::format("run {}: the program exited with status {}", run, end.exit_code));
    }
    if (signals->received() != 0)
      note(
          fmt::format("run {}: opscope received {} and passed it to the program; reporting what "
                      "was recorded",
                      run, SignalName(signals->received())));
    if (run < 0) continue;
    if (!board.empty()) board.Sample(&tele, run, NowNs());
    p->e2e.runs_ms.push_back(ms);
    std::vector<profile::Range> ranges;
    std::vector<RangeFileInfo> infos;
    std::vector<std::string> refused;
    OPSCOPE_RETURN_IF_ERROR(ReadRangeFiles(*tmp, prefix, &ranges, &infos, &refused));
    for (const std::string& r : refused) note(fmt::format("run {}: {}", run, r));
    for (const auto& inf : infos)
      if (!inf.complete) note(fmt::format("run {}: {}", run, DescribeCutFile(inf)));
    int unclosed = 0;
    for (const auto& inf : infos) unclosed += inf.unclosed;
    if (unclosed > 0)
      note(end.term_signal != 0
               ? fmt::format("run {}: {} range(s) were still open when it died", run, unclosed)
               : fmt::format("run {}: {} range(s) were still open at exit and end at exit", run,
                             unclosed));
    AssignNesting(&ranges);
    const int32_t base = static_cast<int32_t>(p->ranges.size());
    for (auto& r : ranges) {
      if (r.parent >= 0) r.parent += base;
      r.run = run;
      p->ranges.push_back(std::move(r));
    }
  }
  if (const std::string left = tmp->Remove(); !left.empty()) note(left);
  result.measured = static_cast<int>(p->e2e.runs_ms.size());
  if (!board.empty() && !tele.sample_ns.empty())
    p->sections.Get<telemetry::TelemetrySection>() = std::move(tele);
  p->meta.runs = result.measured;
  if (p->ranges.empty() && !death.empty())
    note("no ranges recorded: the program " + death +
         (death.find("SIGKILL") != std::string::npos
              ? fmt::format(" before the recorder wrote any range (it writes every {} ms)",
                            kRecorderWriteIntervalMs)
              : " before any range was recorded"));
  else if (p->ranges.empty() && p->e2e.runs_ms.empty())
    note("no ranges recorded: no measured run took place");
  else if (p->ranges.empty())
    note(
        "no ranges recorded: annotate the program with include/opscope/annotate.h "
        "(OPSCOPE_RANGE(\"stage\")) or NVTX (nvtxRangePushA/nvtxRangePop); a statically linked "
        "program cannot load the recorder");
  profile::FinalizeStats(*p);
  EstimateRecorderOverhead(o.cpu_time, result.measured, p);
  return result;
}

}  // namespace opscope::collect
