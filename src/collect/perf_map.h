// JIT symbol maps: /tmp/perf-PID.map, the format perf defined and JITs publish (oneDNN with
// ONEDNN_JIT_PROFILE=1, V8, LuaJIT, ...). One line per symbol: "START SIZE NAME", hex numbers
// with or without "0x".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace opscope::collect {

class PerfMap {
 public:
  struct Entry {
    uint64_t start = 0, size = 0;
    std::string name;
  };
  // Malformed lines are skipped and counted (bad_lines()).
  static PerfMap Parse(std::string_view text);
  static StatusOr<PerfMap> Load(const std::string& path);
  // Load for a map in a shared folder (/tmp): another user may have planted the file, so it is
  // read only when it is a regular file (a symbolic link is not followed), owned by `owner` (the
  // recorded process's user) or by root, and not writable by others. NotFound when there is no
  // file; PermissionDenied, saying which rule failed, when one is there but not trusted.
  static StatusOr<PerfMap> LoadTrusted(const std::string& path, uint32_t owner);
  static std::string PathFor(int pid) { return "/tmp/perf-" + std::to_string(pid) + ".map"; }

  // The symbol containing `addr`; later lines win when ranges overlap (a JIT reusing memory).
  const Entry* Find(uint64_t addr) const;
  size_t size() const { return entries_.size(); }
  size_t bad_lines() const { return bad_lines_; }

 private:
  std::vector<Entry> entries_;  // sorted by start; overlaps resolved
  size_t bad_lines_ = 0;
};

}  // namespace opscope::collect
