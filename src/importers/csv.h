// CSV records as nvprof and `nsys stats --format csv` write them (RFC 4180): comma-separated
// fields, a field optionally double-quoted, "" for a quote inside a quoted field, and line breaks
// allowed inside quotes. A record is therefore not a line: the reader walks the text with a
// small state machine and a record ends at the first line break outside quotes.
//
// Lenient where the tools are: a quote inside an unquoted field is kept as a character (RFC 4180
// forbids it; "12"" monitor" style text appears in free-form lines), characters after a closing
// quote are appended to the field, a lone CR before LF ends the line, and the last record may
// lack its line break. Not lenient where data would be lost silently: a quoted field still open at
// the end of the text is an error naming the line it opened on (a truncated file).
//
// The importers mix CSV tables with free text ("==4711== Profiling result:", nsys' report titles),
// so the caller can look at the physical line under the cursor and skip it before asking for a
// record.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace opscope::importers::csv {

class Reader {
 public:
  explicit Reader(std::string_view text, char separator = ',') : text_(text), sep_(separator) {}

  bool AtEnd() const { return pos_ >= text_.size(); }
  // The physical line at the cursor, without its CR LF / LF.
  std::string_view Line() const;
  // 1-based number of the physical line at the cursor (of the next record's first line).
  size_t LineNumber() const { return line_; }
  // Moves past the physical line at the cursor without parsing it.
  void SkipLine();
  // Parses the record at the cursor into `fields` and moves past it. `raw`, when given, gets the
  // record's text without its final line break (more than one line when a quoted field holds a
  // line break). Fails, leaving the cursor where it was, when a quoted field is not closed before
  // the end of the text.
  Status Next(std::vector<std::string>* fields, std::string_view* raw = nullptr);

 private:
  std::string_view text_;
  char sep_;
  size_t pos_ = 0;
  size_t line_ = 1;
};

}  // namespace opscope::importers::csv
