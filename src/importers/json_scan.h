// Streaming over large JSON arrays of events (ONNX Runtime profiles, Chrome traces) without a
// document-sized parse: a byte scanner finds each element of the array (tracking strings and
// nesting only), and each element is parsed on its own by simdjson On Demand. Memory stays the
// size of one event plus what the caller keeps, whatever the file size; simdjson's whole-document
// mode would need about five bytes of index per input byte.
#pragma once

#include <simdjson.h>

#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace opscope::importers::json {

// End (one past) of the JSON value starting at text[pos], or npos when it is cut short or
// malformed at the structural level (unbalanced brackets, an unterminated string).
size_t SkipValue(std::string_view text, size_t pos);
// First non-whitespace position at or after pos (text.size() if none).
size_t SkipSpace(std::string_view text, size_t pos);

// Calls fn(element, index) for each element of the array whose '[' is at text[pos]; the element
// view lies inside `text`, which must be followed by simdjson::SIMDJSON_PADDING readable bytes.
// A structural error names the element number and the byte offset.
// `consumed(offset)`, when given, is called every kConsumedStride bytes with the offset of the
// element about to be read: the caller may drop the pages before it (Source::ReleaseBefore).
inline constexpr size_t kConsumedStride = 32 << 20;
Status ForEachElement(std::string_view text, size_t pos, const std::string& origin,
                      const std::function<Status(std::string_view element, size_t index)>& fn,
                      size_t* end = nullptr,
                      const std::function<void(size_t offset)>& consumed = nullptr);

// Position of the value of top-level key `key` in the object that is the whole of `text`, or
// npos (key absent or the object malformed).
size_t FindTopLevelKey(std::string_view text, std::string_view key);

// Parses one element with `parser` and calls fn(object); simdjson errors become DataLoss with
// the message where() builds (called only on error).
Status ParseElement(simdjson::ondemand::parser& parser, std::string_view element,
                    const std::function<std::string()>& where,
                    const std::function<Status(simdjson::ondemand::object&)>& fn);

// The raw text of the value of `key` inside one element (a flat search for "key" followed by
// ':'), "" when absent. For cheap pre-filtering and for interning values by their text.
std::string_view RawField(std::string_view element, std::string_view key);

}  // namespace opscope::importers::json
