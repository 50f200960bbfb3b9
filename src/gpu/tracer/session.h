// The life of the tracer inside one process: started by whichever entry point the program hits
// first (CUDA's InitializeInjection or NVTX's InitializeInjectionNvtx2), finished exactly once —
// at exit, or on a fatal signal so that a crashing program still leaves its trace.
#pragma once

#include <cstdint>

namespace opscope::gpu::tracer {

// Opens the output file named by OPSCOPE_GPU_OUT and installs the exit, signal and fork
// handlers. Idempotent and thread-safe. False when there is nowhere to write (tracing off).
bool StartTracer();

// Called by the CUPTI part once activity collection is on: Finish() asks it to deliver every
// buffered activity record (cuptiActivityFlushAll) before the trace is closed.
void SetActivityFlusher(void (*flush)(bool forced));

// Writes the end record and flushes. `signal` is 0 for a normal exit.
void FinishTracer(int signal);

}  // namespace opscope::gpu::tracer
