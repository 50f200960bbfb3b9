// OpObserver: the engine's hook for profilers.
//
// The executor runs a model as a sequence of steps (one per ONNX node, or one per fused group of
// nodes). Around every step it calls the observer on the thread that drives the run; the kernels
// inside a step may use the whole thread pool. With no observer set, the cost is one predictable
// branch per step. Observers must be cheap: record plain data into preallocated storage, never
// allocate or format strings in OnStepBegin/OnStepEnd.
#pragma once

namespace opscope {

class OpObserver {
 public:
  virtual ~OpObserver() = default;
  virtual void OnRunBegin(int run_index) {}
  virtual void OnStepBegin(int step) = 0;
  virtual void OnStepEnd(int step) = 0;
  virtual void OnRunEnd(int run_index) {}
};

}  // namespace opscope
