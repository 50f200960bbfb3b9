#include "importers/csv.h"

namespace opscope::importers::csv {
namespace {

// Where a record parsed from `pos` ended.
struct Parsed {
  bool closed = true;    // false: a quoted field ran to the end of the text
  size_t end = 0;        // index of the LF that ended the record, or text.size()
  size_t next = 0;       // where the next record starts
  size_t newlines = 0;   // line breaks consumed (inside quotes and the one that ended it)
  size_t open_line = 0;  // for !closed: line breaks before the quote that was left open
};

// The state machine. States: at the start of a field, inside an unquoted field, inside a quoted
// field, and just after a quote inside a quoted field (either "" or the closing quote).
Parsed Parse(std::string_view text, size_t pos, char sep, std::vector<std::string>* fields) {
  enum class State { kFieldStart, kUnquoted, kQuoted, kQuoteSeen } state = State::kFieldStart;
  Parsed r;
  std::string cur;
  if (fields) fields->clear();
  auto end_field = [&] {
    if (fields) fields->push_back(std::move(cur));
    cur.clear();
  };
  size_t i = pos;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    switch (state) {
      case State::kQuoted:
        if (c == '"') {
          state = State::kQuoteSeen;
        } else {
          if (c == '\n') ++r.newlines;
          cur += c;  // separators and line breaks inside quotes are data
        }
        continue;
      case State::kQuoteSeen:
        if (c == '"') {  // "" inside quotes: one quote
          cur += '"';
          state = State::kQuoted;
          continue;
        }
        state = State::kUnquoted;  // the quote closed the field; text after it is appended
        break;
      case State::kFieldStart:
        if (c == '"') {
          state = State::kQuoted;
          r.open_line = r.newlines;
          continue;
        }
        state = State::kUnquoted;
        break;
      case State::kUnquoted:
        break;
    }
    // Outside quotes.
    if (c == sep) {
      end_field();
      state = State::kFieldStart;
    } else if (c == '\n') {
      break;
    } else if (c == '\r' && (i + 1 == text.size() || text[i + 1] == '\n')) {
      // CR of a CR LF (or a CR ending the text): not data
    } else {
      cur += c;
    }
  }
  if (state == State::kQuoted) {
    end_field();  // what was read of the open field
    r.closed = false;
    r.end = r.next = text.size();
    return r;
  }
  end_field();
  r.end = i;
  r.next = i < text.size() ? i + 1 : text.size();
  if (i < text.size()) ++r.newlines;
  return r;
}

}  // namespace

std::string_view Reader::Line() const {
  if (AtEnd()) return {};
  size_t nl = text_.find('\n', pos_);
  if (nl == std::string_view::npos) nl = text_.size();
  std::string_view line = text_.substr(pos_, nl - pos_);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

void Reader::SkipLine() {
  if (AtEnd()) return;
  size_t nl = text_.find('\n', pos_);
  pos_ = nl == std::string_view::npos ? text_.size() : nl + 1;
  ++line_;
}

Status Reader::Next(std::vector<std::string>* fields, std::string_view* raw) {
  Parsed r = Parse(text_, pos_, sep_, fields);
  if (!r.closed)
    return DataLoss("line " + std::to_string(line_ + r.open_line) +
                    ": a quoted field is not closed before the end of the file (truncated CSV?)");
  if (raw) {
    std::string_view s = text_.substr(pos_, r.end - pos_);
    if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
    *raw = s;
  }
  pos_ = r.next;
  line_ += r.newlines;
  return Status::Ok();
}

}  // namespace opscope::importers::csv
