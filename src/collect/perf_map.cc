#include "collect/perf_map.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/files.h"
#include "base/strings.h"

namespace opscope::collect {

PerfMap PerfMap::Parse(std::string_view text) {
  PerfMap m;
  std::vector<std::pair<Entry, size_t>> raw;  // entry, line number (later wins)
  size_t line_no = 0;
  for (const auto& line : Split(text, '\n', true)) {
    ++line_no;
    std::string t = Trim(line);
    if (t.empty()) continue;
    size_t s1 = t.find(' ');
    size_t s2 = s1 == std::string::npos ? s1 : t.find(' ', s1 + 1);
    if (s2 == std::string::npos) {
      ++m.bad_lines_;
      continue;
    }
    std::string a = t.substr(0, s1), b = t.substr(s1 + 1, s2 - s1 - 1);
    char* end = nullptr;
    uint64_t start = std::strtoull(a.c_str(), &end, 16);
    bool ok = end && *end == '\0' && !a.empty();
    uint64_t size = std::strtoull(b.c_str(), &end, 16);
    ok = ok && end && *end == '\0' && !b.empty() && size > 0 && start + size > start;
    if (!ok) {
      ++m.bad_lines_;
      continue;
    }
    raw.push_back({Entry{start, size, Trim(t.substr(s2 + 1))}, line_no});
  }
  // Sorted sweep: when two ranges overlap, the later line (newer code) wins.
  std::sort(raw.begin(), raw.end(), [](const auto& x, const auto& y) {
    return x.first.start != y.first.start ? x.first.start < y.first.start : x.second < y.second;
  });
  std::vector<Entry> kept;
  size_t kept_line = 0;
  for (auto& [e, n] : raw) {
    if (!kept.empty() && e.start < kept.back().start + kept.back().size) {
      if (n > kept_line) {
        kept.back() = std::move(e);
        kept_line = n;
      }
      continue;
    }
    kept.push_back(std::move(e));
    kept_line = n;
  }
  m.entries_ = std::move(kept);
  return m;
}

StatusOr<PerfMap> PerfMap::Load(const std::string& path) {
  OPSCOPE_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return Parse(text);
}

StatusOr<PerfMap> PerfMap::LoadTrusted(const std::string& path, uint32_t owner) {
  // O_NOFOLLOW: a link is refused by open itself; O_NONBLOCK: a FIFO cannot block the open.
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound(path + ": no such file");
    if (errno == ELOOP) return PermissionDenied(path + " is a symbolic link");
    return PermissionDenied(path + ": " + std::strerror(errno));
  }
  struct stat st;
  std::string why;
  if (::fstat(fd, &st) != 0)
    why = std::string("cannot stat it: ") + std::strerror(errno);
  else if (!S_ISREG(st.st_mode))
    why = "not a regular file";
  else if (st.st_uid != owner && st.st_uid != 0)
    why = "owned by uid " + std::to_string(st.st_uid) + ", not by the recorded process's uid " +
          std::to_string(owner) + " or root";
  else if (st.st_mode & S_IWOTH)
    why = "writable by other users";
  if (!why.empty()) {
    ::close(fd);
    return PermissionDenied(path + ": " + why);
  }
  std::string text;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return Parse(text);
}

const PerfMap::Entry* PerfMap::Find(uint64_t addr) const {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), addr,
                             [](uint64_t a, const Entry& e) { return a < e.start; });
  if (it == entries_.begin()) return nullptr;
  --it;
  return addr < it->start + it->size ? &*it : nullptr;
}

}  // namespace opscope::collect
