// CSV records as nvprof and `nsys stats --format csv` write them: comma-separated, fields
// optionally double-quoted with "" for a quote inside.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace opscope::importers::csv {

inline std::vector<std::string> Fields(std::string_view line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(std::move(cur));
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(std::move(cur));
  return out;
}

}  // namespace opscope::importers::csv
