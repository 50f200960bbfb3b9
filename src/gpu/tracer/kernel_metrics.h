// Per-kernel throughput metrics inside the traced program (`opscope gpu --metrics`).
//
// CUPTI's range profiler in auto-range mode with kernel replay: every kernel launch becomes one
// range, and CUPTI runs the kernel once per pass (saving and restoring the memory it writes) until
// every counter of the metric set is collected. That is why --metrics is opt-in and slow, and why
// kernel times measured with it are not comparable with a run without it.
//
// The tracer learns the correlation id of each launch from the driver API callback, in launch
// order; CUPTI's ranges come back in the same order, so range i of a collection belongs to the
// i-th launch recorded since that collection started. Every kMaxRanges launches (and at context
// teardown and exit) the tracer stops the profiler, decodes the counter data, evaluates the
// metrics with the profiler host API, writes one kKernelMetrics record per range and restarts.
// Only the first CUDA context is profiled.
//
// Any CUPTI failure is logged, written into the trace as a message ("kernel metrics off:
// <call> failed: <CUPTI error>") and turns metrics off for the rest of the run; activity tracing
// goes on. Nothing here throws or aborts.
#pragma once

#include <cupti.h>

namespace opscope::gpu::tracer {

// True when OPSCOPE_GPU_METRICS=1 (set by `opscope gpu --metrics`).
bool KernelMetricsRequested();

// Enables the driver API launch and resource callbacks metrics need on `subscriber` (the
// tracer's one CUPTI subscriber). False (and a message in the trace) when it could not.
bool StartKernelMetrics(CUpti_SubscriberHandle subscriber);

// The subscriber callback's share for the driver API and resource domains.
void KernelMetricsCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);

// Says why metrics could not start when the tracer has no subscriber at all.
void KernelMetricsUnavailable(const char* call, CUptiResult result);

}  // namespace opscope::gpu::tracer
