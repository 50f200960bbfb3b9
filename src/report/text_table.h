// A minimal column-aligned text table for terminal reports.
#pragma once

#include <string>
#include <vector>

namespace opscope::report {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void AlignRight(std::vector<size_t> cols) { right_ = std::move(cols); }
  void AddRow(std::vector<std::string> cells) { rows_.push_back({std::move(cells), ""}); }
  // A full-width line printed under the previous row (fused-with notes, counters).
  void AddNote(std::string note) { rows_.push_back({{}, std::move(note)}); }
  std::string Render(bool color) const;

 private:
  struct Row {
    std::vector<std::string> cells;
    std::string note;
  };
  std::vector<std::string> header_;
  std::vector<size_t> right_;
  std::vector<Row> rows_;
};

// Display width of UTF-8 text (code points; all our glyphs are single-width).
size_t DisplayWidth(const std::string& s);

}  // namespace opscope::report
