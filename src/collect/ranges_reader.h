// Reading the range records written by the in-process recorders (ranges_recorder.h) into
// Profile ranges, and rebuilding their nesting.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "profile/ranges.h"

namespace opscope::collect {

struct RangeFileInfo {
  int pid = 0;
  std::string source;       // "annotate", "nvtx"
  int unclosed = 0;         // ranges still open at exit (ended at exit)
};

// Parses one file's text, appending to `out` (parent/depth not yet assigned). A malformed line
// is a DataLoss naming `origin` and the line number.
Status ParseRangeRecords(const std::string& text, const std::string& origin,
                         std::vector<profile::Range>* out, RangeFileInfo* info);

// Reads every file "<prefix>.<source>.<pid>" in prefix's folder. Missing files are not an error
// (the program may have had no annotations); the infos say which were found.
Status ReadRangeFiles(const std::string& prefix, std::vector<profile::Range>* out,
                      std::vector<RangeFileInfo>* infos);

// Sorts ranges by (tid, start, longer first) and assigns depth and parent by containment on each
// thread, so ranges from both recorders (annotation API and NVTX) nest with each other.
void AssignNesting(std::vector<profile::Range>* ranges);

}  // namespace opscope::collect
