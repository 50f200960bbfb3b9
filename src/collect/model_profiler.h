// Profiles a model on the built-in engine: warm-up, measured runs with the per-op timer,
// interleaved runs without it (to measure opscope's own overhead in the same session), and the
// conversion of engine steps into one Profile row per ONNX node.
//
// Clocks and temperature are sampled after every measured run (outside the timed region) into
// Profile::clocks, for throttling detection.
//
// Time of a fused step (Conv+BatchNormalization+Relu) is split among its source nodes in
// proportion to their estimated cost (FLOPs at 20 GFLOP/s plus bytes at 5 GB/s: a rough machine
// balance, used only for the split); each row says so in `attribution`. Folded nodes get zero
// time and say they were computed at load time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "opscope/engine.h"
#include "opscope/observer.h"
#include "profile/profile.h"

namespace opscope::collect {

struct ModelProfileOptions {
  std::string model_path;
  engine::SessionOptions session;
  int warmup = 10;
  int runs = 50;
  uint64_t seed = 1;
  std::vector<std::pair<std::string, std::string>> input_files;  // input name -> TensorProto .pb
  std::string save_outputs_dir;                                  // "" = don't save
  bool measure_overhead = true;
  // Called after the warm-up, before the measured runs, with the session (e.g. to learn its
  // worker thread ids); observers appended to `extra` (counters) are called inside the timer's
  // bracket of every step of the measured runs.
  std::function<Status(engine::Session& session, std::vector<OpObserver*>* extra)> on_ready;
  // Called right after the measured runs (e.g. to stop a sampler).
  std::function<Status()> on_measured;
  // Called last, with the session still alive and the profile complete (before Validate):
  // counters and samples are written into the profile here.
  std::function<Status(engine::Session& session, profile::Profile& p)> finish;
  // Called as the work goes: the phase ("loading", "planning", "warm-up", "measuring") and, when
  // it has a size, done of total runs.
  std::function<void(const char* phase, int done, int total)> progress;
};

StatusOr<profile::Profile> ProfileModel(const ModelProfileOptions& options);

// Sets o->measurable and o->noise_*_pct from the paired differences (observed run i minus the
// baseline run interleaved with it, ms): measurable only when the 95% distribution-free interval
// of their median (base/stats.h MedianConfidenceInterval) lies above 0 and o->pct is positive.
// Needs o->baseline_median_ms; with no pairs the overhead is not measurable.
void JudgeOverheadNoise(const std::vector<double>& paired_diffs_ms, profile::Overhead* o);

}  // namespace opscope::collect
