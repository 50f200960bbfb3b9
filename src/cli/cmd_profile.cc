// opscope profile MODEL.onnx: per-operator hotspots of a model on the built-in engine.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "analysis/hygiene.h"
#include "analysis/machine_measure.h"
#include "base/strings.h"
#include "cli/checks.h"
#include "cli/command.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "collect/attach.h"
#include "collect/model_profiler.h"
#include "collect/op_counters.h"
#include "collect/perf_event.h"
#include "collect/sampler.h"
#include "collect/sampler_ops.h"
#include "engine/memory_limit.h"
#include "opscope/engine.h"
#include "profile/profile.h"

namespace opscope::cli {
namespace {

class ProfileCommand : public Command {
 public:
  const char* Name() const override { return "profile"; }
  const char* Help() const override {
    return "run a model on the built-in engine: per-operator hotspots, shapes, FLOPs, bytes, "
           "diagnosis";
  }
  void Setup(CLI::App* app) override {
    AddSysrootOption(app);
    app->add_option("model", model_, "ONNX model file")->required();
    threads_opt_ = app->add_option(
        "--threads", threads_,
        "Threads for the engine, 1 to 4 per usable CPU (default: one per usable CPU)");
    app->add_option("--warmup", warmup_, "Warm-up runs, not measured")
        ->capture_default_str()
        ->check(WholeNumberIn(0, 1000000));
    app->add_option("--runs", runs_, "Measured runs")
        ->capture_default_str()
        ->check(WholeNumberIn(1, 1000000));
    AddOutputOptions(app, &out_,
                     ".json is the profile, .html the report, .trace.json a timeline, "
                     ".csv one row per node, .folded/.svg/.pb.gz the op scopes by time",
                     {"ops", "memory", "samples", "telemetry"});
    app->add_option("--cpus", cpus_,
                    "Run on these CPUs only, e.g. 4-7 for the big cores of an RK3588 (every "
                    "engine thread; the thread count defaults to their number)");
    app->add_flag("--wide", wide_, "Show long names whole");
    app->add_option("--sort", sort_,
                    "What the terminal table shows: time (the op hotspots, default) or mem (the "
                    "memory table: the peak, the tensors alive at it, the steps by live bytes)")
        ->check(CLI::IsMember({"time", "mem", "memory"}));
    app->add_option("--top", top_, "Rows in the hotspot table")
        ->capture_default_str()
        ->check(WholeNumberIn(1, 1000000));
    app->add_option("--input", inputs_, "Input from a TensorProto file: NAME=FILE.pb (repeatable)")
        ->allow_extra_args(false);
    app->add_option("--shape", shapes_,
                    "Shape for an input with symbolic dims: NAME=1x3x224x224 (repeatable)")
        ->allow_extra_args(false);
    app->add_option("--save-outputs", save_dir_, "Write each output as a TensorProto .pb into DIR");
    app->add_option("--seed", seed_, "Seed for random inputs")
        ->capture_default_str()
        ->check(WholeNumberIn(0));
    app->add_option("--max-loop-iterations", max_loop_iterations_,
                    "Stop a Loop node after this many iterations, and refuse a longer Scan, "
                    "with an error naming it (a while loop that random inputs never end); 0: no "
                    "limit")
        ->capture_default_str()
        ->check(WholeNumberIn(0));
    app->add_flag("--no-fuse", no_fuse_,
                  "Disable operator fusion (Conv+BN, Conv+activation, MatMul+Add)");
    app->add_flag("--no-channels-last", no_channels_last_,
                  "Keep every activation NCHW (no NHWC regions between consecutive convolutions)");
    app->add_flag("--no-overhead", no_overhead_,
                  "Skip the interleaved runs that measure opscope's own overhead");
    app->add_flag(
        "--counters", counters_,
        "Per-operator counters (hardware where the CPU has a PMU, software stand-ins otherwise)");
    app->add_option("-e,--events,--event", events_,
                    "Counter events for --counters (comma-separated; default: cycles, "
                    "instructions, cache and branch misses, task-clock, page-faults)");
    app->add_flag(
        "--sample", sample_,
        "Sample call stacks during the measured runs and attribute them to the executing node");
    app->add_option("-F,--freq", freq_, "Sampling frequency for --sample, Hz")
        ->capture_default_str()
        ->check(NumberIn(1, 100000, false));
    app->add_option("--call-graph", call_graph_, "Call graphs for --sample: fp or dwarf")
        ->capture_default_str();
    app->add_option(
        "--machine", machine_file_,
        "Machine ceilings file for the roofline (default: the one `opscope machine` stored)");
    app->add_option("--peak-gflops", peak_gflops_,
                    "Compute ceiling by hand, GFLOP/s (e.g. for a target board)")
        ->check(PositiveFinite());
    app->add_option("--peak-gbps", peak_gbps_, "Memory-bandwidth ceiling by hand, GB/s")
        ->check(PositiveFinite());
  }

  CommandStatus Run() override {
    // Pinned first: the thread-count checks and default below count the CPUs left to use.
    if (!cpus_.empty()) {
      auto cpus = collect::ParseCpuList(cpus_, collect::OnlineCpus(), "--cpus");
      if (!cpus.ok()) return cpus.status();
      if (Status st = collect::PinProcess(*cpus); !st.ok()) return st;
    }
    if (threads_opt_->count() > 0 && (threads_ < 1 || threads_ > engine::MaxThreads()))
      return InvalidArgument(
          "--threads must be between 1 and " + std::to_string(engine::MaxThreads()) + " (" +
          std::to_string(engine::kMaxThreadsPerCpu) + " per usable CPU, this machine has " +
          std::to_string(engine::UsableCpus()) + "; got " + std::to_string(threads_) + ")");
    if (threads_ > engine::UsableCpus())
      report::Say("warning", engine::OversubscriptionWarning(threads_, engine::UsableCpus()));
    Status st = PrepareOutput(out_, "table");
    if (!st.ok()) return st;
    if (call_graph_ != "fp" && call_graph_ != "dwarf")
      return InvalidArgument("--call-graph must be fp or dwarf (got '" + call_graph_ + "')");
    std::vector<collect::EventSpec> events = collect::DefaultOpEvents();
    if (!events_.empty()) {
      auto parsed = collect::ParseEventList(events_);
      if (!parsed.ok()) return parsed.status();
      events = *parsed;
    }
    auto ceilings = analysis::ResolveCeilings(machine_file_, peak_gflops_, peak_gbps_);
    if (!ceilings.ok()) return ceilings.status();
    if (*ceilings && StartsWith((*ceilings)->verification, "unverified: "))
      report::Say("warning", (*ceilings)->verification.substr(12));

    engine::SetLoopIterationLimit(max_loop_iterations_);
    collect::ModelProfileOptions opt;
    opt.model_path = model_;
    opt.session.threads = threads_;
    opt.session.fuse = !no_fuse_;
    opt.session.channels_last = !no_channels_last_;
    opt.warmup = warmup_;
    opt.runs = runs_;
    opt.seed = seed_;
    opt.save_outputs_dir = save_dir_;
    opt.measure_overhead = !no_overhead_;
    for (const std::string& s : shapes_) {
      auto eq = s.find('=');
      std::vector<int64_t> dims;
      if (eq == std::string::npos || !ParseShape(s.substr(eq + 1), &dims))
        return InvalidArgument("--shape '" + s +
                               "': expected NAME=DxDxD (e.g. images=1x3x224x224)");
      opt.session.shapes[s.substr(0, eq)] = dims;
    }
    for (const std::string& s : inputs_) {
      auto eq = s.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
        return InvalidArgument("--input '" + s + "': expected NAME=FILE.pb");
      opt.input_files.emplace_back(s.substr(0, eq), s.substr(eq + 1));
    }
    std::unique_ptr<collect::OpCounters> counters;
    std::unique_ptr<collect::Sampler> sampler;
    std::optional<profile::SampleSection> samples;
    opt.on_ready = [&](engine::Session& session, std::vector<OpObserver*>* extra) -> Status {
      if (counters_) {
        collect::OpCounters::Options co;
        co.num_steps = static_cast<int>(session.Steps().size());
        for (int tid : session.WorkerThreadIds()) co.tids.push_back(tid);
        co.events = events;
        OPSCOPE_ASSIGN_OR_RETURN(counters, collect::OpCounters::Create(co));
        extra->push_back(counters.get());
      }
      if (sample_) {
        collect::SamplerOptions so;
        so.frequency_hz = freq_;
        so.call_graph =
            call_graph_ == "dwarf" ? collect::CallGraph::kDwarf : collect::CallGraph::kFramePointer;
        OPSCOPE_ASSIGN_OR_RETURN(sampler, collect::Sampler::Start(so));
      }
      return Status::Ok();
    };
    opt.on_measured = [&]() -> Status {
      if (sampler) {
        OPSCOPE_ASSIGN_OR_RETURN(samples, sampler->Stop());
      }
      return Status::Ok();
    };
    opt.finish = [&](engine::Session& session, profile::Profile& p) -> Status {
      if (counters) {
        // Each step's counts go to its first source node, so per-op sums match the whole run.
        std::vector<int> step_of_op(p.ops.size(), -1);
        const auto& steps = session.Steps();
        for (size_t s = 0; s < steps.size(); ++s)
          if (!steps[s].nodes.empty()) step_of_op[steps[s].nodes[0]] = static_cast<int>(s);
        collect::WriteOpCounters(*counters, step_of_op, &p);
        double measured_ms = 0;
        for (double v : p.e2e.runs_ms) measured_ms += v;
        if (p.overhead)
          p.overhead->counters_pct = collect::CounterOverheadPct(*counters, measured_ms);
      }
      if (samples) {
        for (const auto& d : sampler->degradations()) p.meta.degradations.push_back(d);
        p.samples = std::move(*samples);
        auto stats = collect::AttributeSamplesToOps(p);
        p.meta.extra["samples_attributed"] = std::to_string(stats.attributed);
        p.meta.extra["samples_outside_ops"] = std::to_string(stats.outside);
      }
      return Status::Ok();
    };
    // oneDNN publishes its JIT kernels in /tmp/perf-PID.map when asked before it first runs,
    // so samples inside convolutions get names instead of [unknown].
    std::string perf_map = "/tmp/perf-" + std::to_string(getpid()) + ".map";
    bool remove_perf_map = false;
    if (sample_) {
      remove_perf_map = access(perf_map.c_str(), F_OK) != 0;
      setenv("ONEDNN_JIT_PROFILE", "2", /*overwrite=*/0);  // 2: perf map (oneDNN >= 2.5 name)
      setenv("DNNL_JIT_PROFILE", "2", /*overwrite=*/0);    // the older name
    }
    Progress bar;
    opt.progress = [&](const char* phase, int done, int total) {
      if (done == 0)
        bar.Phase(phase, total);
      else
        bar.Update(done);
    };
    auto p = collect::ProfileModel(opt);
    bar.Finish();
    if (remove_perf_map) unlink(perf_map.c_str());
    if (!p.ok()) return p.status();
    FinishOptions f;
    if (ceilings->has_value())
      f.ceilings = &**ceilings;
    else
      p->meta.degradations.push_back(
          "no machine ceilings: roofline classes unavailable (run `opscope machine` once, or give "
          "--peak-gflops and --peak-gbps)");
    report::ReportOptions ro;
    ro.top = top_;
    ro.color = UseColor(1) && out_.format.empty();
    ro.wide = wide_;
    ro.only = {sort_ == "time" ? "ops" : "memory"};
    st = FinishProfile(&*p, f, out_, ro);
    if (!st.ok()) return st;
    return 0;
  }

 private:
  std::string model_;
  CLI::Option* threads_opt_ = nullptr;
  int threads_ = 0, warmup_ = 10, runs_ = 50, top_ = 15;
  int64_t max_loop_iterations_ = 10000000;
  uint64_t seed_ = 1;
  OutputChoice out_;
  std::vector<std::string> inputs_, shapes_;
  std::string save_dir_;
  bool wide_ = false;
  std::string sort_ = "time";
  bool no_fuse_ = false, no_channels_last_ = false, no_overhead_ = false, counters_ = false,
       sample_ = false;
  std::string events_, call_graph_ = "fp", machine_file_, cpus_;
  double freq_ = 997, peak_gflops_ = 0, peak_gbps_ = 0;
};

}  // namespace
OPSCOPE_REGISTER_COMMAND(ProfileCommand);
}  // namespace opscope::cli
