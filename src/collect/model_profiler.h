// Profiles a model on the built-in engine: warm-up, measured runs with the per-op timer,
// interleaved runs without it (to measure opscope's own overhead in the same session), and the
// conversion of engine steps into one Profile row per ONNX node.
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
  // Extra observers (counters, sampling markers), called inside the timer's bracket of each step.
  std::vector<OpObserver*> extra_observers;
  // Called before the measured runs with the session (e.g. to learn worker thread ids).
  std::function<Status(engine::Session&)> on_ready;
  std::function<void(int done, int total)> progress;
};

StatusOr<profile::Profile> ProfileModel(const ModelProfileOptions& options);

// Fills the Meta fields every command shares (host, CPU, governor, build, time).
void FillHostMeta(profile::Meta& meta);

}  // namespace opscope::collect
