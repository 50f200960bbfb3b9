// Reading the range records written by the in-process recorders (ranges_recorder.h) into
// Profile ranges, and rebuilding their nesting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "collect/range_folder.h"
#include "profile/ranges.h"

namespace opscope::collect {

// An attached recorder's word about a thread's partial ranges (`cut B|A <tid> <ns>` lines,
// written on detach; ranges_recorder.h): B, a range opened before the attach ended at `ns`, so
// the ranges of `tid` that start before `ns` were inside it; A, a range left open at the detach
// started at `ns`, so the ranges of `tid` that start at or after `ns` are inside it.
struct ThreadCut {
  char kind = 'B';
  int32_t tid = 0;
  int64_t ns = 0;
};

struct RangeFileInfo {
  std::string file;  // its name in the folder (ReadRangeFiles)
  int pid = 0;
  std::string source;  // "annotate", "nvtx"
  int unclosed = 0;    // ranges still open at exit (ended at exit)
  std::vector<ThreadCut> cuts;
  // `opscope run`'s recorder writes closed ranges as they close: after each write a `flush <ns>
  // <open>` line (the time, and how many ranges were open then), and at the process's end (exit,
  // _exit, a deadly signal) an `end <ns>` line. A file without `end` was cut short: the process
  // was killed (SIGKILL) or exec()ed, and what closed after its last write is missing.
  bool complete = false;      // an `end` line was read
  int64_t last_write_ns = 0;  // the last `flush` line's time, 0 when none
  int64_t open_at_last_write = 0;
  // The file ended in a cut line (no newline: the writer was killed mid-write); it was left out.
  bool cut_line = false;
};

// Parses one file's text, appending to `out` (parent/depth not yet assigned). A malformed line
// is a DataLoss naming `origin` and the line number; a last line without its newline (the
// writer killed mid-line) is left out and said in info->cut_line, unless it follows the `end`
// line (then the file is corrupt: DataLoss).
Status ParseRangeRecords(const std::string& text, const std::string& origin,
                         std::vector<profile::Range>* out, RangeFileInfo* info);

// How much range text opscope reads from one folder at most (all its files together).
inline constexpr size_t kMaxRangeBytes = size_t{1} << 30;

// Reads every file "<prefix>.<source>.<pid>" in `folder`, each by collect/trusted_file.h's rule
// (a regular file of folder.owner(), one link, within what is left of kMaxRangeBytes). A file
// refused is not read: `refused` gets one line naming it and why ("ranges.annotate.12 is a
// symbolic link: not reading it"). A file that is empty or holds part of its first line was cut
// by a kill before anything was written: an info with no ranges and cut_line set. Missing files
// are not an error (the program may have had no annotations); the infos say which were found.
Status ReadRangeFiles(const RangeFolder& folder, const std::string& prefix,
                      std::vector<profile::Range>* out, std::vector<RangeFileInfo>* infos,
                      std::vector<std::string>* refused);

// For an attached span (`run -p`): removes the ranges that are part of a range not recorded whole,
// from every recorder alike (so an NVTX stage cut at the attach also takes the annotate.h ranges
// inside it): those that start before `window_start` or end after `window_end` (the span all
// recorders were attached) with the ranges inside those on their thread, and those a ThreadCut of
// any file covers. Returns how many it removed. Call before AssignNesting.
size_t DropPartialRanges(int64_t window_start, int64_t window_end,
                         const std::vector<RangeFileInfo>& infos,
                         std::vector<profile::Range>* ranges);

// Sorts ranges by (tid, start, longer first) and assigns depth and parent by containment on each
// thread, so ranges from both recorders (annotation API and NVTX) nest with each other.
void AssignNesting(std::vector<profile::Range>* ranges);

}  // namespace opscope::collect
