#include "collect/perf_map.h"

#include <algorithm>
#include <cstdlib>

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

const PerfMap::Entry* PerfMap::Find(uint64_t addr) const {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), addr,
                             [](uint64_t a, const Entry& e) { return a < e.start; });
  if (it == entries_.begin()) return nullptr;
  --it;
  return addr < it->start + it->size ? &*it : nullptr;
}

}  // namespace opscope::collect
