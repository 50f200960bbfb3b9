// Writing a profile's big record arrays (op events, ranges, samples, GPU records) as JSON text
// one record at a time, byte for byte what nlohmann's dump(indent) of the whole array would give:
// the profile writer (profile_json.cc) splices them into the dumped document where it left a slot
// (kRecordArraySlot + name, profile_json.h). Internal to profile/.
//
// Why: a document tree costs about 2.5 KB per GPU kernel and 700 bytes per one-frame sample, so
// the tree of a 1 GB perf script import took 8.45 GB (#39). Records with a field-by-field writer
// (WriteRecord overloads, declared before including this) skip even the per-record tree.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "profile/json_text.h"

namespace opscope::profile::records {

// Writes JSON text exactly as nlohmann's dump(indent) lays it out (members and array elements on
// their own lines at `pad` plus one indent per level; compact when indent < 0; keys in the order
// given, which callers keep sorted as nlohmann's std::map does). Numbers and strings go through
// nlohmann's own serializer, so the bytes are the same; what is saved is the document tree of
// each record (a map node and a key string per field), the cost of the generic path.
class RecordWriter {
 public:
  RecordWriter(int indent, std::string pad, std::string* out)
      : indent_(indent), pad_(std::move(pad)), out_(out) {}
  void Begin(char open) {
    out_->push_back(open);
    first_.push_back(true);
  }
  void End(char close) {
    bool empty = first_.back();
    first_.pop_back();
    if (!empty && indent_ >= 0) NewLine(first_.size());
    out_->push_back(close);
  }
  void Key(std::string_view k) {
    Next();
    out_->push_back('"');
    out_->append(k);
    out_->append(indent_ >= 0 ? "\": " : "\":");
  }
  void Element() { Next(); }
  void Int(int64_t v) { out_->append(std::to_string(v)); }
  void Bool(bool v) { out_->append(v ? "true" : "false"); }
  void Double(double v) {
    if (!(v == last_double_ && !last_double_text_.empty())) {
      last_double_ = v;
      last_double_text_ = DumpJson(nlohmann::json(v));
    }
    out_->append(last_double_text_);
  }
  void Str(const std::string& s) {
    auto it = strings_.find(s);
    if (it == strings_.end()) {
      if (strings_.size() > 4096) strings_.clear();
      it = strings_.emplace(s, DumpJson(nlohmann::json(s))).first;
    }
    out_->append(it->second);
  }
  void Ints3(const int32_t* v) {
    Begin('[');
    for (int i = 0; i < 3; ++i) {
      Element();
      Int(v[i]);
    }
    End(']');
  }

 private:
  void Next() {
    if (!first_.back()) out_->push_back(',');
    first_.back() = false;
    if (indent_ >= 0) NewLine(first_.size());
  }
  void NewLine(size_t depth) {
    out_->push_back('\n');
    out_->append(pad_);
    out_->append(depth * static_cast<size_t>(indent_), ' ');
  }
  int indent_;
  std::string pad_;
  std::string* out_;
  std::vector<bool> first_;
  double last_double_ = 0;
  std::string last_double_text_;
  std::unordered_map<std::string, std::string> strings_;
};

// True for the record types with a field-by-field WriteRecord(RecordWriter&, const T&).
template <typename T, typename = void>
struct HasFastWriter : std::false_type {};
template <typename T>
struct HasFastWriter<
    T, std::void_t<decltype(WriteRecord(std::declval<RecordWriter&>(), std::declval<const T&>()))>>
    : std::true_type {};

template <class T>
void WriteRecords(const std::vector<T>& records, int indent, std::string_view pad,
                  const std::function<void(std::string_view)>& sink) {
  if (records.empty()) {
    sink("[]");
    return;
  }
  const std::string elem_pad =
      indent < 0 ? std::string() : std::string(pad) + std::string(static_cast<size_t>(indent), ' ');
  sink(indent < 0 ? "[" : "[\n");
  std::string text;
  constexpr bool kFast = HasFastWriter<T>::value;
  RecordWriter w(indent, elem_pad, &text);
  for (size_t i = 0; i < records.size(); ++i) {
    text.clear();
    if (indent >= 0) text = elem_pad;
    if constexpr (kFast) {
      WriteRecord(w, records[i]);
    } else {
      nlohmann::json e = records[i];
      std::string one = DumpJson(e, indent);
      for (char c : one) {
        text += c;
        if (c == '\n' && indent >= 0) text += elem_pad;
      }
    }
    if (i + 1 < records.size()) text += indent < 0 ? "," : ",\n";
    sink(text);
  }
  if (indent >= 0) {
    sink("\n");
    sink(pad);
  }
  sink("]");
}

}  // namespace opscope::profile::records
