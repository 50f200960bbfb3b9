// opscope gpu [--gpu-trace] [--metrics] [-o FILE.json] -- PROGRAM [ARGS...]
//
// Runs a CUDA program with the CUPTI tracer injected (no change to the program), then prints
// nvprof-style summaries, time per NVTX layer, copy analysis, idle/waiting time and findings.
// Where the tracer was not built (no CUDA toolkit at build time) the command says so.
#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/files.h"
#include "base/launch.h"
#include "base/strings.h"
#include "base/target_signals.h"
#include "cli/checks.h"
#include "cli/command.h"
#include "cli/output.h"
#ifdef OPSCOPE_HAVE_GPU_LAYER
#include "analysis/gpu_summary.h"
#include "gpu/launch.h"
#include "profile/profile_io.h"
#endif

namespace opscope::cli {
namespace {

class GpuCommand : public Command {
 public:
  const char* Name() const override { return "gpu"; }
  const char* Help() const override {
    return "trace the CUDA kernels, copies, API calls and NVTX ranges of a program (CUPTI; like "
           "nvprof)";
  }

  void Setup(CLI::App* app) override {
    AddSysrootOption(app);
    app->add_flag("--gpu-trace", gpu_trace_,
                  "also list every kernel and copy with start, duration, size, throughput");
    AddOutputOptions(app, &out_,
                     ".json is the profile, .trace.json a timeline (CPU and GPU tracks)",
                     {"gpu", "ranges", "telemetry"});
    app->add_flag("--wide", wide_, "show long kernel names whole");
    app->add_option(
        "--iteration-range", iteration_range_,
        "NVTX range that marks one iteration (default: the most frequent top-level range)");
    app->add_option("--keep-trace", keep_dir_, "write the raw tracer files into DIR and keep them");
    app->add_option(
        "--from-trace", from_dir_,
        "report on tracer files kept earlier with --keep-trace DIR instead of running a program");
    app->add_flag("--no-driver-api", no_driver_api_,
                  "do not record driver API calls (less overhead)");
    app->add_flag("--no-copy-fingerprints", no_fingerprints_,
                  "do not hash the host bytes of host-to-device copies (repeated copies then match "
                  "by size only)");
    app->add_flag("--metrics", metrics_,
                  "per-kernel SM and memory throughput (% of peak), achieved occupancy and a "
                  "compute-/memory-/"
                  "latency-bound verdict (CUPTI range profiler). Off by default: it replays every "
                  "kernel several "
                  "times (one pass per counter group), so the program runs much slower and kernel "
                  "times measured "
                  "with --metrics are not comparable with a run without it");
    app->add_flag(
        "--no-driver-check", no_driver_check_,
        "run even where no NVIDIA driver is found (records NVTX ranges only; used by the tests)");
    app->add_option("command", command_, "the program to trace and its arguments (after --)");
  }

  CommandStatus Run() override {
#ifndef OPSCOPE_HAVE_GPU_LAYER
    return Unsupported(
        "this opscope was built without the CUDA toolkit, so it has no GPU tracer; rebuild where "
        "/usr/local/cuda (with CUPTI) is installed");
#else
    namespace fs = std::filesystem;
    if (Status s = PrepareOutput(out_, "table"); !s.ok()) return s;
    std::error_code ec;
    if (!from_dir_.empty()) {
      if (!command_.empty())
        return InvalidArgument("--from-trace reports on kept traces: give no program");
      gpu::TracedRun kept;
      for (const auto& e : fs::directory_iterator(from_dir_, ec))
        if (e.path().extension() == ".trace") kept.trace_files.push_back(e.path().string());
      if (ec) return NotFound(from_dir_ + ": " + ec.message());
      std::sort(kept.trace_files.begin(), kept.trace_files.end());
      if (kept.trace_files.empty()) return NotFound(from_dir_ + ": no gpu-*.trace files");
      return Finish(kept, from_dir_);
    }
    if (command_.empty())
      return InvalidArgument("no program given: opscope gpu [options] -- PROGRAM [ARGS...]");
    if (!no_driver_check_)
      if (Status s = gpu::ProbeNvidiaDriver(); !s.ok()) return s;
    auto tracer = gpu::FindTracerLibrary();
    if (!tracer.ok()) return tracer.status();

    std::string dir;
    if (!keep_dir_.empty()) {
      fs::create_directories(keep_dir_, ec);
      if (ec) return PermissionDenied(keep_dir_ + ": cannot create: " + ec.message());
      for (const auto& e : fs::directory_iterator(keep_dir_, ec))
        if (e.path().extension() == ".trace") fs::remove(e.path(), ec);
      dir = fs::absolute(keep_dir_).string();
    } else {
      std::string tmpl = (fs::temp_directory_path(ec) / "opscope-gpu-XXXXXX").string();
      if (mkdtemp(tmpl.data()) == nullptr)
        return PermissionDenied(tmpl + ": cannot create a temporary folder for the trace");
      dir = tmpl;
    }

    gpu::RunOptions options;
    options.tracer = *tracer;
    options.out_dir = dir;
    options.driver_api = !no_driver_api_;
    options.fingerprint_copies = !no_fingerprints_;
    TargetSignals signals;
    options.signals = &signals;
    options.kernel_metrics = metrics_;
    auto run = gpu::RunTraced(command_, options);
    if (signals.received() != 0)
      report::Say("", fmt::format("received signal {} ({}): passed it to the program",
                                  signals.received(), strsignal(signals.received())));
    CommandStatus result = Finish(run, dir);
    if (signals.received() != 0)
      result = std::move(result).WithExitCode(TargetExitCode(1, signals.received()));
    if (keep_dir_.empty()) fs::remove_all(dir, ec);
    return result;
#endif
  }

 private:
#ifdef OPSCOPE_HAVE_GPU_LAYER
  CommandStatus Finish(const StatusOr<gpu::TracedRun>& run, const std::string& dir) {
    if (!run.ok()) return run.status();
    if (!run->exec_error.ok()) {
      return StartError(run->exec_error);
    }
    if (run->term_signal)
      report::Say("", fmt::format("the program died of signal {} ({}); reporting what was traced",
                                  run->term_signal, strsignal(run->term_signal)));
    else if (run->exit_code != 0)
      report::Say("", fmt::format("the program exited with status {}", run->exit_code));
    if (run->trace_files.empty()) {
      return CommandStatus(Unavailable("no GPU trace was written: the program never initialized "
                                       "CUDA or NVTX (is it a CUDA program? "
                                       "a statically linked CUDA runtime still loads the tracer; "
                                       "check that it reaches cudaSetDevice or a "
                                       "first CUDA call)"))
          .WithExitCode(run->exit_code ? run->exit_code : 1);
    }
    auto built = gpu::ProfileFromTraces(run->trace_files);
    if (!built.ok()) return built.status();
    profile::Profile& p = *built;
    profile::FillHostMeta(p.meta);
    p.meta.source = from_dir_.empty() ? ShellJoin(command_) : "traces in " + from_dir_;
    if (from_dir_.empty()) {
      p.meta.extra["exit_code"] = std::to_string(run->exit_code);
      p.meta.extra["wall_ms"] = std::to_string(run->wall_ms);
      if (auto lib = gpu::FindTracerLibrary(); lib.ok()) p.meta.extra["tracer"] = *lib;
    }
    if (!keep_dir_.empty()) p.meta.extra["trace_dir"] = dir;

    if (metrics_ && p.gpu && p.gpu->metrics_passes == 0 && !p.gpu->kernels.empty())
      p.meta.degradations.push_back(
          "--metrics: no kernel metrics were recorded; the tracer's messages above say which CUPTI "
          "call failed");
    // Every rule that applies, as for any other profile (the debug-build, throttling and governor
    // rules, and gpu-kernel-bound with --metrics figures), then the GPU summary's own findings.
    FinishOptions f;
    f.on_this_machine = from_dir_.empty();  // --from: traces that may come from another machine
    f.more_findings = [&](profile::Profile* q) {
      analysis::SummaryOptions so;
      so.iteration_range = iteration_range_;
      analysis::GpuSummary summary = analysis::Summarize(*q, so);
      auto findings = analysis::GpuFindings(*q, summary);
      q->findings.insert(q->findings.end(), findings.begin(), findings.end());
    };
    report::ReportOptions ro;
    ro.only = {"gpu"};
    ro.gpu_trace = gpu_trace_;
    ro.iteration_range = iteration_range_;
    ro.wide = wide_;
    if (Status s = FinishProfile(&p, f, out_, ro); !s.ok()) return s;
    return run->exit_code;
  }
#endif

  bool gpu_trace_ = false;
  bool no_driver_api_ = false;
  bool no_driver_check_ = false;
  bool no_fingerprints_ = false;
  bool metrics_ = false;
  bool wide_ = false;
  OutputChoice out_;
  std::string iteration_range_;
  std::string keep_dir_;
  std::string from_dir_;
  std::vector<std::string> command_;
};

}  // namespace

OPSCOPE_REGISTER_COMMAND(GpuCommand);

}  // namespace opscope::cli
