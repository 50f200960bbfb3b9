// Running a program under the tracer: finding the driver and the tracer library, setting the
// injection variables, collecting the per-process trace files into one Profile.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "base/target_signals.h"
#include "profile/profile.h"

namespace opscope::gpu {

// Loads libcuda.so.1 (without linking it) and asks for devices: Unavailable with one line that
// says what is missing ("no NVIDIA driver found (libcuda.so.1 not loadable): ...") otherwise.
Status ProbeNvidiaDriver();

// The tracer library: $OPSCOPE_GPU_TRACER, else libopscope_cupti_tracer.so next to the running
// opscope binary.
StatusOr<std::string> FindTracerLibrary();

struct TracedRun {
  int exit_code = 0;  // the program's exit status, 128+signal if it died of a signal
  int term_signal = 0;
  double wall_ms = 0;
  std::vector<std::string> trace_files;
  // Non-OK when the program could not be started (base/launch.h; exit 127/126).
  Status exec_error;
};

struct RunOptions {
  std::string tracer;                // path of the tracer library
  std::string out_dir;               // where the traced processes write gpu-<pid>.trace
  bool driver_api = true;            // also record driver API calls
  bool fingerprint_copies = true;    // hash the host bytes of HtoD copies (>= 64 KiB)
  TargetSignals* signals = nullptr;  // forwards opscope's signals (a local one when null)
  bool kernel_metrics = false;       // per-kernel throughput by kernel replay (slow; --metrics)
};

// Runs `command` (argv, searched in PATH; started by base/launch.h) with CUDA_INJECTION64_PATH
// and NVTX_INJECTION64_PATH pointing at the tracer and waits for it. SIGINT/SIGTERM/SIGHUP/SIGQUIT
// sent to opscope are passed to the program's process group (base/target_signals.h), so an
// interrupted program still gets its report.
StatusOr<TracedRun> RunTraced(const std::vector<std::string>& command, const RunOptions& options);

// Decodes every trace file and builds the Profile (kind "gpu"), summaries' findings included.
// A file that cannot be decoded becomes a degradation, not an error, unless none can.
StatusOr<profile::Profile> ProfileFromTraces(const std::vector<std::string>& files);

}  // namespace opscope::gpu
