// `opscope run`'s collector: runs an annotated program (include/opscope/annotate.h or NVTX) with
// opscope's range recorder preloaded and its NVTX injection library named in
// NVTX_INJECTION64_PATH, once per warm-up and measured run, through the one launcher
// (base/launch.h). Each run writes its records into a private temporary folder, which is read
// back, nested (AssignNesting), appended to the profile and removed.
//
// What the profile gets: ranges (parents re-based across runs), e2e.runs_ms (measured runs),
// clock samples per run, degradations (the program's non-zero exits, signals, unclosed ranges,
// NVTX not recorded and why), the finalized statistics and opscope's estimated overhead.
//
// The folder is opscope's (mode 0700) and read through its descriptor only, every file by the
// rule of collect/trusted_file.h (a regular file of opscope's uid, one link, capped): a program
// that changes users cannot plant anything opscope follows. The recorder writes closed ranges as
// they close (every kRecorderWriteIntervalMs): a file cut by a SIGKILL is read up to its last
// whole line, and the profile says what is missing.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/target_signals.h"
#include "profile/profile.h"

namespace opscope::collect {

struct RangeRunOptions {
  std::vector<std::string> command;
  int warmup = 0, runs = 1;
  bool nvtx = true;               // inject the NVTX recorder
  bool cpu_time = true;           // record each range's thread CPU time
  bool stdout_to_stderr = false;  // the program's stdout goes to stderr (machine output on stdout)
  // Told each degradation as it happens (the command prints them); may be empty.
  std::function<void(const std::string&)> on_note;
};

struct RangeRunResult {
  // The exit status of the first run that did not exit 0 (128+N for signal N), 0 when all did.
  int exit_code = 0;
  int measured = 0;  // measured runs that took place (a signal may end the loop early)
  // Non-OK when the program could not be started (base/launch.h wording; exit 127/126).
  Status exec_error;
};

// The folder of the runtime libraries: $OPSCOPE_LIB_DIR, else <dir of opscope>/lib (build tree),
// else <dir of opscope>/../lib/opscope (installed).
std::string RuntimeLibDir();

// opscope's own cost per profile (p->overhead), estimated from the ranges recorded over
// `measured_runs` runs: the clock reads timed on this machine plus the measured bookkeeping.
void EstimateRecorderOverhead(bool cpu_time, int measured_runs, profile::Profile* p);

// How often the recorder writes the ranges closed since its last write (ranges_recorder.cc's
// kWriteIntervalMs): what a SIGKILL can lose at most.
inline constexpr int kRecorderWriteIntervalMs = 100;

// Runs the program as described above and fills `p` (whose meta the caller has filled).
// Errors: the recorder library missing, the temporary folder, unreadable range files.
StatusOr<RangeRunResult> RunRanges(const RangeRunOptions& options, TargetSignals* signals,
                                   profile::Profile* p);

}  // namespace opscope::collect
