// `opscope run -p PID`: the ranges of a program that is already running, started attachable
// (OPSCOPE_ATTACHABLE=1 with libopscope_ranges_rt.so preloaded, and/or NVTX_INJECTION64_PATH
// naming libopscope_ranges_nvtx.so). The recorder's side of the protocol is described in
// ranges_recorder.h; this is opscope's side:
//
//   1. Check: the process exists and is this user's (another user's program needs root: opscope
//      must write into its private channel folder and hand it files it owns); it has a channel
//      folder opscope-attach-<pid>-<source> of its own uid, mode 0700, in the attach folder its
//      environment chose (collect/attach_dir.h; read from /proc/PID/environ, and opscope's own
//      $OPSCOPE_ATTACH_DIR first), seen through /proc/PID/root when the program has its own
//      mount namespace (a private /tmp). When there is none, one line says what is missing (the
//      recorder not loaded at all or not yet, loaded without OPSCOPE_ATTACHABLE=1, or no channel
//      in the folders searched, named) and how to start the program.
//   2. Attach: a private output folder next to the channel (mkdtemp, owned by the program's
//      uid; the request names it as the program sees it), and a `request`
//      renamed into each channel (RENAME_NOREPLACE: a second opscope attaching at the same time
//      fails with "already attached"). The recorder answers `attached.<source>` within 5 s, or
//      removes a request it does not trust (then the program's stderr says why).
//   3. Wait: --duration S, Ctrl-C/SIGTERM/SIGHUP (received, never forwarded: the program is not
//      opscope's), or the program exiting.
//   4. Detach: a `stop` file in each channel; the recorder writes `ranges.<source>.<pid>` and
//      `done.<source>` (5 s, then "did not answer"). A program that exited while attached wrote
//      both at exit (or from its deadly-signal handler); SIGKILL leaves nothing.
//   5. The records become one measured "run": e2e.runs_ms holds the attached time, ranges are
//      nested as for `run -- CMD`, and the stop reason and the program's exit are degradations.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/target_signals.h"
#include "profile/profile.h"

namespace opscope::collect {

struct RangeAttachOptions {
  pid_t pid = 0;
  double duration_s = 0;  // 0: until a signal or the program exits
  bool cpu_time = true;
  // Told each note as it happens ("attached to ...", degradations); may be empty.
  std::function<void(const std::string&)> on_note;
};

struct RangeAttachResult {
  std::string description;  // "pid 1234 (pipeline)"
  bool program_exited = false;
};

// The attach folders where `run -p` looks for a program's channels, as the program sees them
// (collect/attach_dir.h): opscope's own $OPSCOPE_ATTACH_DIR (`opscope_dir`, may be null), the
// folder the program's environment `env` chooses, its private $XDG_RUNTIME_DIR, /tmp; `root` is
// where the program's file system is seen ("" or /proc/PID/root).
std::vector<std::string> AttachDirCandidates(const char* opscope_dir,
                                             const std::map<std::string, std::string>& env,
                                             uid_t uid, const std::string& root);

// Attaches, waits, detaches and fills `p` (whose meta the caller has filled) as described above.
StatusOr<RangeAttachResult> AttachRanges(const RangeAttachOptions& options,
                                         const TargetSignals& signals, profile::Profile* p);

}  // namespace opscope::collect
