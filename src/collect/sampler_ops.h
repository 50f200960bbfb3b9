// Attributing samples to the operator that was executing: `opscope profile --sample`.
//
// The engine's op observer records one OpEvent per op execution (start_ns, dur_ns on
// CLOCK_MONOTONIC, the tid that ran it); samples carry CLOCK_MONOTONIC times too. A sample is
// attributed to the op whose event interval contains its time. Kernels run on thread pools, so a
// sample on any thread of the process counts for the op running at that moment; when intervals
// overlap (parallel branches), an event on the sample's own thread wins, else the one that started
// last (the innermost).
#pragma once

#include <cstdint>

#include "profile/profile.h"

namespace opscope::collect {

struct AttributionStats {
  uint64_t attributed = 0;  // samples given an op
  uint64_t outside = 0;     // samples between ops (framework overhead, other work)
};

// Sets Sample::op for every sample of p.samples from p.op_events; leaves -1 outside all events.
AttributionStats AttributeSamplesToOps(profile::Profile& p);

}  // namespace opscope::collect
