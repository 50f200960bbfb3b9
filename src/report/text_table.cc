#include "report/text_table.h"

#include <algorithm>

namespace opscope::report {

size_t DisplayWidth(const std::string& s) {
  size_t w = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++w;
  return w;
}

std::string TextTable::Render(bool color) const {
  std::vector<size_t> width(header_.size(), 0);
  for (size_t i = 0; i < header_.size(); ++i) width[i] = DisplayWidth(header_[i]);
  for (const Row& r : rows_)
    for (size_t i = 0; i < r.cells.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], DisplayWidth(r.cells[i]));
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t i = 0; i < width.size(); ++i) {
      std::string c = i < cells.size() ? cells[i] : "";
      size_t pad = width[i] - std::min(width[i], DisplayWidth(c));
      bool right = std::find(right_.begin(), right_.end(), i) != right_.end();
      if (i) out += "  ";
      if (right)
        out += std::string(pad, ' ') + c;
      else
        out += c + (i + 1 < width.size() ? std::string(pad, ' ') : "");
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header_);
  if (color) out = "\033[1m" + out.substr(0, out.size() - 1) + "\033[0m\n";
  for (const Row& r : rows_) out += r.cells.empty() ? r.note + "\n" : line(r.cells);
  return out;
}

}  // namespace opscope::report
