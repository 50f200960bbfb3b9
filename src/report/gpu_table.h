// The gpu section's terminal report (registered as the "gpu" section): nvprof-style activity and
// API tables, time per NVTX layer, copies, idle and waiting time, occupancy, --metrics
// throughput, and (with `findings`) the findings and the limits of the trace.
#pragma once

#include <string>

#include "analysis/gpu_summary.h"
#include "profile/profile.h"

namespace opscope::report {

// `gpu_trace` adds the listing of every kernel and copy; `wide` shows kernel names whole.
std::string FormatGpuReport(const profile::Profile& p, const analysis::GpuSummary& s,
                            bool gpu_trace, bool findings = true, bool wide = false);

}  // namespace opscope::report
