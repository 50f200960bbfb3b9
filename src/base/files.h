// File helpers with Status errors that name the path.
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "base/status.h"

namespace opscope {

StatusOr<std::string> ReadFile(const std::string& path);
// Writes to PATH.tmp then renames, so a reader never sees half a file.
Status WriteFileAtomic(const std::string& path, const std::string& contents);
// The same, with the contents streamed by `fill` (no copy of a large document in memory).
Status WriteFileAtomicStreamed(const std::string& path,
                               const std::function<void(std::ostream&)>& fill);
// Checks that PATH can be created/overwritten (its folder exists and is writable) before any
// long work starts.
Status CheckWritable(const std::string& path);
// Reads a small sysfs/procfs file; empty string if absent or unreadable.
std::string ReadSysFile(const std::string& path);

}  // namespace opscope
