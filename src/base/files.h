// File helpers with Status errors that name the path.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "base/status.h"

namespace opscope {

// Opens an input file for reading: refuses what is not a regular file (a FIFO or /dev/zero would
// block or never end) with a message that says what it is. The caller closes the descriptor.
StatusOr<int> OpenRegularFile(const std::string& path);
// The whole of a regular file (OpenRegularFile's checks).
StatusOr<std::string> ReadFile(const std::string& path);
// Writes to a fresh temporary file beside PATH, then renames it into place, so a reader never sees
// half a file. Every write, the flush and the close are checked: a full disk is an error naming
// PATH. A device, FIFO or socket (/dev/null, /dev/stdout, a pipe) is written in place, never
// replaced; a FIFO with no reader is an error, not a hang.
Status WriteFileAtomic(const std::string& path, const std::string& contents);
// The same, with the contents streamed by `fill` (no copy of a large document in memory).
Status WriteFileAtomicStreamed(const std::string& path,
                               const std::function<void(std::ostream&)>& fill);
// Checks that PATH can be created/overwritten (its folder exists and is writable) before any
// long work starts.
Status CheckWritable(const std::string& path);
// Reads a small sysfs/procfs file; empty string if absent, unreadable or not a regular file.
std::string ReadSysFile(const std::string& path);
// The entries of DIR whose names start with `prefix` (not . and ..), shorter names first, then
// alphabetically (cpu2 before cpu10); empty when DIR cannot be read.
std::vector<std::string> ListDirectory(const std::string& dir, const std::string& prefix = "");

}  // namespace opscope
