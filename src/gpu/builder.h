// Turning decoded traces into the Profile: the GPU section and the NVTX ranges.
//
// What happens here, per traced process:
// - NVTX push/pop events pair up per (thread, domain) stack into Profile::ranges with depth
//   and parent; start/end ranges pair by id. Ranges still open when the trace ends are closed
//   at its last timestamp and counted in meta.degradations.
// - Each kernel and copy finds the API call that launched it by correlation id (runtime call
//   preferred over the driver call inside it), which gives the launching thread and the launch
//   time; its range is the innermost range open on that thread at that time. Attributing by
//   launch rather than by execution time is what makes "time per layer" right for asynchronous
//   launches: the GPU may run a layer's kernels long after the CPU has left the layer's range.
// - Kernel names are demangled; theoretical occupancy is computed per kernel.
// - CUPTI times are shifted onto CLOCK_MONOTONIC when the tracer could not install its clock.
// - Dropped records, tracer warnings, a missing end record and a fatal signal become
//   meta.degradations, said in words.
#pragma once

#include "base/status.h"
#include "gpu/decoder.h"
#include "profile/profile.h"

namespace opscope::gpu {

// Appends one process's trace to `p` (creating p->gpu if needed). Ranges are appended to
// p->ranges; indices in the GPU section refer to the whole vector.
void AddTraceToProfile(const DecodedTrace& trace, profile::Profile* p);

// "vecAdd(float*, float const*, int)" for "_Z6vecAddPfPKfi"; the input when not mangled.
std::string DemangleKernelName(const std::string& name);

const char* MemcpyKindName(uint8_t kind);

// "cudaMemcpy" for CUPTI's runtime callback name "cudaMemcpy_v3020"; driver names unchanged.
std::string ApiDisplayName(const std::string& name, bool runtime);

}  // namespace opscope::gpu
