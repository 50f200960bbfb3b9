#include "collect/model_profiler.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>

#include "base/clock.h"
#include "base/host.h"
#include "base/stats.h"
#include "base/strings.h"
#include "collect/op_timer.h"
#include "engine/onnx_io.h"
#include "profile/fused_split.h"
#include "sections/memory/memory_engine.h"
#include "sections/telemetry/board_probe.h"

namespace opscope::collect {
namespace {

// Calls the timer and every extra observer; the timer brackets the others.
class FanOut final : public OpObserver {
 public:
  FanOut(OpTimer* timer, std::vector<OpObserver*> extra)
      : timer_(timer), extra_(std::move(extra)) {}
  void OnRunBegin(int r) override {
    timer_->OnRunBegin(r);
    for (auto* o : extra_) o->OnRunBegin(r);
  }
  void OnStepBegin(int s) override {
    for (auto* o : extra_) o->OnStepBegin(s);
    timer_->OnStepBegin(s);
  }
  void OnStepEnd(int s) override {
    timer_->OnStepEnd(s);
    for (auto* o : extra_) o->OnStepEnd(s);
  }
  void OnRunEnd(int r) override {
    for (auto* o : extra_) o->OnRunEnd(r);
    timer_->OnRunEnd(r);
  }

 private:
  OpTimer* timer_;
  std::vector<OpObserver*> extra_;
};

}  // namespace

void JudgeOverheadNoise(const std::vector<double>& paired_diffs_ms, profile::Overhead* o) {
  Interval ci = MedianConfidenceInterval(paired_diffs_ms);
  const double base = o->baseline_median_ms;
  o->noise_low_pct = base > 0 ? ci.low / base * 100 : 0;
  o->noise_high_pct = base > 0 ? ci.high / base * 100 : 0;
  o->measurable = !paired_diffs_ms.empty() && base > 0 && ci.low > 0 && o->pct > 0;
}

StatusOr<profile::Profile> ProfileModel(const ModelProfileOptions& opt) {
  if (opt.runs < 1)
    return InvalidArgument("--runs must be at least 1 (got " + std::to_string(opt.runs) + ")");
  if (opt.warmup < 0)
    return InvalidArgument("--warmup must not be negative (got " + std::to_string(opt.warmup) +
                           ")");

  engine::SessionOptions so = opt.session;
  std::vector<std::pair<std::string, engine::Tensor>> given;
  // Every --input error names the input and the file: "--input 'x': FILE: ..." when the file
  // cannot be read, "--input x=FILE" in the model's checks.
  std::map<std::string, std::string> given_files;
  for (const auto& [name, file] : opt.input_files) {
    std::string origin = "--input " + name + "=" + file;
    if (!given_files.emplace(name, file).second)
      return InvalidArgument(origin + ": input '" + name + "' is already given by --input " + name +
                             "=" + given_files[name]);
    auto t = engine::ReadTensorFile(file);
    if (!t.ok()) return t.status().WithPrefix("--input '" + name + "'");
    if (!so.shapes.count(name)) {
      so.shapes[name] = t->shape();
      so.shape_origins[name] = origin;
    }
    given.emplace_back(name, std::move(*t));
  }
  if (opt.progress) opt.progress("loading", 0, 0);
  OPSCOPE_ASSIGN_OR_RETURN(std::unique_ptr<engine::Session> session,
                           engine::Session::Load(opt.model_path, so));
  for (auto& [name, t] : given) {
    std::string origin = "--input " + name + "=" + given_files[name];
    OPSCOPE_RETURN_IF_ERROR(session->SetInput(name, std::move(t)).WithPrefix(origin));
  }
  OPSCOPE_RETURN_IF_ERROR(session->FillRandomInputs(opt.seed));

  const char* phase = "";
  int total = 0, done = 0;
  auto enter = [&](const char* name, int n) {
    phase = name;
    total = n;
    done = 0;
    if (opt.progress) opt.progress(phase, done, total);
  };
  auto tick = [&] {
    ++done;
    if (opt.progress) opt.progress(phase, done, total);
  };
  // The first run is the planning run; it is always made, even with --warmup 0, and counts as
  // the first warm-up run.
  enter("planning", 0);
  OPSCOPE_RETURN_IF_ERROR(session->Run());
  if (opt.warmup > 1) {
    enter("warm-up", opt.warmup - 1);
    for (int i = 1; i < opt.warmup; ++i) {
      OPSCOPE_RETURN_IF_ERROR(session->Run());
      tick();
    }
  }
  std::vector<OpObserver*> extra;
  if (opt.on_ready) OPSCOPE_RETURN_IF_ERROR(opt.on_ready(*session, &extra));

  const auto& steps = session->Steps();
  const auto& nodes = session->Nodes();
  OpTimer timer(static_cast<int>(steps.size()), opt.runs);
  FanOut fan(&timer, extra);
  OpObserver* observer = extra.empty() ? static_cast<OpObserver*>(&timer) : &fan;
  std::vector<double> observed_ms, baseline_ms;
  std::vector<profile::ClockSample> clocks;
  // The board's clocks, temperatures, power and accelerator load, once after each measured run.
  const telemetry::BoardProbe board = telemetry::BoardProbe::Discover();
  telemetry::TelemetrySection tele = board.Describe();
  enter("measuring", opt.runs * (opt.measure_overhead ? 2 : 1));
  for (int r = 0; r < opt.runs; ++r) {
    session->SetObserver(observer);
    int64_t t0 = NowNs();
    OPSCOPE_RETURN_IF_ERROR(session->Run());
    const int64_t t1 = NowNs();
    observed_ms.push_back((t1 - t0) / 1e6);
    ThermalSample ts = ReadThermalSample();
    clocks.push_back({r, ts.cpu_mhz_avg, ts.max_temp_c});
    if (!board.empty()) {
      board.Sample(&tele, r, t1);
      if (telemetry::TracksPlacement(tele)) telemetry::SamplePlacement(&tele);
    }
    tick();
    session->SetObserver(nullptr);
    if (opt.measure_overhead) {
      int64_t b0 = NowNs();
      OPSCOPE_RETURN_IF_ERROR(session->Run());
      baseline_ms.push_back((NowNs() - b0) / 1e6);
      tick();
    }
  }

  session->SetObserver(nullptr);
  if (opt.on_measured) OPSCOPE_RETURN_IF_ERROR(opt.on_measured());

  if (!opt.save_outputs_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(opt.save_outputs_dir, ec);
    int i = 0;
    for (const auto& spec : session->Outputs()) {
      const engine::Tensor* t = session->Output(spec.name);
      if (!t) continue;
      std::string file = opt.save_outputs_dir + "/output_" + std::to_string(i++) + ".pb";
      OPSCOPE_RETURN_IF_ERROR(engine::WriteTensorFile(*t, spec.name, file));
    }
  }

  profile::Profile p;
  p.meta.kind = "profile";
  profile::FillHostMeta(p.meta);
  p.meta.source = opt.model_path;
  p.meta.threads = session->Threads();
  p.meta.warmup = opt.warmup;
  p.meta.runs = opt.runs;
  p.meta.extra["seed"] = std::to_string(opt.seed);
  p.meta.extra["fusion"] = so.fuse ? "on" : "off";
  p.meta.extra["channels_last"] = so.channels_last ? "on" : "off";
  p.meta.extra["steps"] = std::to_string(steps.size());
  std::vector<std::string> inputs;
  for (const auto& in : session->Inputs())
    inputs.push_back(in.name + ":" + engine::DataTypeName(in.dtype) + "[" +
                     ShapeToString(in.shape) + "]");
  p.meta.extra["inputs"] = Join(inputs, " ");
  for (const auto& w : session->Warnings()) p.meta.degradations.push_back(w);
  for (const auto& [k, v] : session->LoadChecks()) p.meta.extra[k] = v;
  p.e2e.runs_ms = observed_ms;
  p.clocks = std::move(clocks);
  p.sections.Get<memory::MemorySection>() = memory::FromSession(*session);
  if (!board.empty()) p.sections.Get<telemetry::TelemetrySection>() = std::move(tele);

  p.ops.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const engine::NodeInfo& n = nodes[i];
    profile::OpRecord& op = p.ops[i];
    op.name = n.name;
    op.op_type = n.op_type;
    op.domain = n.domain;
    op.index = static_cast<int>(i);
    op.input_shapes = n.input_shapes;
    op.output_shapes = n.output_shapes;
    op.flops = n.flops;
    op.bytes = n.bytes;
    op.int_ops = n.int_ops;
    if (!profile::ParseOpStatus(n.status, &op.status))
      return Internal("node '" + n.name + "' has unknown status '" + n.status + "'");
    op.runs_ms.assign(opt.runs, 0.0);
    if (n.status == "folded") {
      op.attribution = "folded: computed once at load time, no run time";
    }
  }
  const int runs = timer.runs();
  // Control flow: a subgraph step's time is inside its parent's (If/Loop/Scan) step; the
  // parent's row is exclusive of it (what the parent itself does: choosing a branch, slicing,
  // copying values in and out), so rows add up to the run.
  std::vector<int64_t> step_ns(steps.size() * static_cast<size_t>(runs), 0);
  for (int r = 0; r < runs; ++r)
    for (size_t s = 0; s < steps.size(); ++s)
      step_ns[r * steps.size() + s] = timer.duration_ns(r, static_cast<int>(s));
  for (int r = 0; r < runs; ++r)
    for (size_t s = 0; s < steps.size(); ++s)
      if (steps[s].parent_step >= 0)
        step_ns[r * steps.size() + steps[s].parent_step] -=
            timer.duration_ns(r, static_cast<int>(s));
  for (int64_t& d : step_ns) d = std::max<int64_t>(d, 0);
  for (size_t s = 0; s < steps.size(); ++s) {
    const engine::StepInfo& st = steps[s];
    // Split by estimated cost (profile/fused_split.h): the anchor's FLOPs and bytes, post-ops'
    // FLOPs only, a BatchNormalization folded into the Conv's weights nothing.
    std::vector<profile::FusedPart> parts;
    // Integer operations count as half a FLOP each (an AVX2 vpmaddwd does twice the multiply-
    // adds of a float FMA).
    for (int k : st.nodes)
      parts.push_back({nodes[k].op_type, nodes[k].flops + nodes[k].int_ops / 2, nodes[k].bytes});
    std::vector<double> w = profile::FusedCostShares(parts, profile::FusedKind::kChain);
    const double wsum = 1.0;
    if (st.channels_last_in || st.channels_last_out)
      p.ops[st.nodes[0]].layout = (st.channels_last_in ? st.layout_in : "NCHW") + " in, " +
                                  (st.channels_last_out ? st.layout_out : "NCHW") + " out";
    for (size_t k = 0; k < st.nodes.size(); ++k) {
      profile::OpRecord& op = p.ops[st.nodes[k]];
      if (op.status == profile::OpStatus::kFolded) continue;
      double frac = w[k] / wsum;
      if (st.nodes.size() > 1) {
        op.status = profile::OpStatus::kFused;
        op.step = st.name;
        for (int other : st.nodes)
          if (other != st.nodes[k]) op.fused_with.push_back(nodes[other].name);
        char buf[160];
        std::snprintf(buf, sizeof buf, "%.1f%% of fused step '%s' (%s), split by estimated cost",
                      frac * 100, st.name.c_str(), st.op_type.c_str());
        op.attribution = buf;
      } else {
        op.step = st.name;
        op.attribution = "measured";
      }
      for (int r = 0; r < runs; ++r) {
        int64_t d = step_ns[r * steps.size() + s];
        op.runs_ms[r] = d / 1e6 * frac;
      }
      if (st.parent_step >= 0 && op.attribution == "measured")
        op.attribution = "measured inside '" + steps[st.parent_step].name + "'";
      else if (st.parent_step < 0 && op.attribution == "measured" &&
               (op.op_type == "If" || op.op_type == "Loop" || op.op_type == "Scan"))
        op.attribution =
            "measured, exclusive of its subgraph nodes (listed as '" + op.name + "/...')";
    }
    // Timeline events: one per node per run (fused nodes share their step's interval, split).
    for (int r = 0; r < runs; ++r) {
      int64_t d = step_ns[r * steps.size() + s];
      if (d <= 0) continue;
      int64_t t = timer.start_ns(r, static_cast<int>(s));
      for (size_t k = 0; k < st.nodes.size(); ++k) {
        int64_t dk = static_cast<int64_t>(d * (w[k] / wsum));
        p.op_events.push_back({st.nodes[k], r, timer.tid(), t, dk});
        t += dk;
      }
    }
  }
  std::sort(
      p.op_events.begin(), p.op_events.end(),
      [](const profile::OpEvent& a, const profile::OpEvent& b) { return a.start_ns < b.start_ns; });
  profile::FinalizeStats(p);

  if (opt.measure_overhead) {
    profile::Overhead o;
    o.baseline_median_ms = ComputeStats(baseline_ms).median;
    o.observed_median_ms = ComputeStats(observed_ms).median;
    o.pct = o.baseline_median_ms > 0
                ? (o.observed_median_ms - o.baseline_median_ms) / o.baseline_median_ms * 100
                : 0;
    o.method = "median latency of " + std::to_string(opt.runs) +
               " runs with the per-op observer against " + std::to_string(opt.runs) +
               " runs without it, interleaved in the same session";
    // Each observed run is paired with the baseline run right after it; the overhead counts as
    // measured only when the 95% interval of the median paired difference lies above 0
    // (docs/benchmarks.md, "opscope's own overhead").
    std::vector<double> diffs;
    for (size_t i = 0; i < observed_ms.size() && i < baseline_ms.size(); ++i)
      diffs.push_back(observed_ms[i] - baseline_ms[i]);
    JudgeOverheadNoise(diffs, &o);
    p.overhead = o;
  }
  if (opt.finish) OPSCOPE_RETURN_IF_ERROR(opt.finish(*session, p));
  // The process's memory as late as the profile is made: after counters and symbolization too.
  {
    const memory::ProcessMemory pm = memory::ReadProcessMemory();
    auto& m = p.sections.Get<memory::MemorySection>();
    m.rss_bytes = pm.rss_bytes;
    m.peak_rss_bytes = pm.peak_rss_bytes;
  }
  OPSCOPE_RETURN_IF_ERROR(
      profile::Validate(p).WithPrefix("internal: profile of " + opt.model_path));
  return p;
}

}  // namespace opscope::collect
