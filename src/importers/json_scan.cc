#include "importers/json_scan.h"

#include <cstring>

namespace opscope::importers::json {

size_t SkipSpace(std::string_view t, size_t pos) {
  while (pos < t.size() && (t[pos] == ' ' || t[pos] == '\n' || t[pos] == '\r' || t[pos] == '\t'))
    ++pos;
  return pos;
}

size_t SkipValue(std::string_view t, size_t pos) {
  const size_t n = t.size();
  if (pos >= n) return std::string_view::npos;
  const char* d = t.data();
  char c = d[pos];
  if (c == '"') {
    for (size_t i = pos + 1; i < n;) {
      const void* q = std::memchr(d + i, '"', n - i);
      if (!q) return std::string_view::npos;
      size_t k = static_cast<const char*>(q) - d;
      size_t bs = 0;
      while (k - bs > pos && d[k - 1 - bs] == '\\') ++bs;
      if (bs % 2 == 0) return k + 1;
      i = k + 1;
    }
    return std::string_view::npos;
  }
  if (c == '{' || c == '[') {
    int depth = 0;
    for (size_t i = pos; i < n; ++i) {
      char x = d[i];
      if (x == '"') {
        size_t e = SkipValue(t, i);
        if (e == std::string_view::npos) return e;
        i = e - 1;
      } else if (x == '{' || x == '[') {
        if (++depth > 1000) return std::string_view::npos;
      } else if (x == '}' || x == ']') {
        if (--depth == 0) return i + 1;
      }
    }
    return std::string_view::npos;
  }
  // A scalar: up to the next delimiter.
  size_t i = pos;
  while (i < n && d[i] != ',' && d[i] != '}' && d[i] != ']' && d[i] != ' ' && d[i] != '\n' &&
         d[i] != '\r' && d[i] != '\t')
    ++i;
  return i == pos ? std::string_view::npos : i;
}

Status ForEachElement(std::string_view t, size_t pos, const std::string& origin,
                      const std::function<Status(std::string_view, size_t)>& fn, size_t* end,
                      const std::function<void(size_t)>& consumed) {
  size_t next_release = kConsumedStride;
  if (pos >= t.size() || t[pos] != '[') return DataLoss(origin + ": expected a JSON array");
  size_t i = SkipSpace(t, pos + 1);
  size_t index = 0;
  if (i < t.size() && t[i] == ']') {
    if (end) *end = i + 1;
    return Status::Ok();
  }
  while (true) {
    if (i >= t.size())
      return DataLoss(origin + ": the event array is cut short after " + std::to_string(index) +
                      " events (truncated file?)");
    size_t e = SkipValue(t, i);
    if (e == std::string_view::npos)
      return DataLoss(origin + ": event #" + std::to_string(index + 1) + " at byte " +
                      std::to_string(i) +
                      " is cut short or malformed (truncated or corrupt file?)");
    if (consumed && i >= next_release) {
      consumed(i);
      next_release = i + kConsumedStride;
    }
    OPSCOPE_RETURN_IF_ERROR(fn(t.substr(i, e - i), index));
    ++index;
    i = SkipSpace(t, e);
    if (i < t.size() && t[i] == ',') {
      i = SkipSpace(t, i + 1);
      continue;
    }
    if (i < t.size() && t[i] == ']') {
      if (end) *end = i + 1;
      return Status::Ok();
    }
    return DataLoss(origin + ": expected ',' or ']' after event #" + std::to_string(index) +
                    " at byte " + std::to_string(i) + " (truncated or corrupt file?)");
  }
}

size_t FindTopLevelKey(std::string_view t, std::string_view key) {
  size_t i = SkipSpace(t, 0);
  if (i >= t.size() || t[i] != '{') return std::string_view::npos;
  i = SkipSpace(t, i + 1);
  while (i < t.size() && t[i] == '"') {
    size_t ke = SkipValue(t, i);
    if (ke == std::string_view::npos) return ke;
    std::string_view k = t.substr(i + 1, ke - i - 2);
    i = SkipSpace(t, ke);
    if (i >= t.size() || t[i] != ':') return std::string_view::npos;
    i = SkipSpace(t, i + 1);
    if (k == key) return i;
    size_t ve = SkipValue(t, i);
    if (ve == std::string_view::npos) return ve;
    i = SkipSpace(t, ve);
    if (i < t.size() && t[i] == ',') i = SkipSpace(t, i + 1);
  }
  return std::string_view::npos;
}

std::string_view RawField(std::string_view el, std::string_view key) {
  size_t pos = 0;
  while ((pos = el.find(key, pos)) != std::string_view::npos) {
    size_t b = pos;
    pos += key.size();
    if (b == 0 || el[b - 1] != '"' || pos >= el.size() || el[pos] != '"') continue;
    size_t c = SkipSpace(el, pos + 1);
    if (c >= el.size() || el[c] != ':') continue;
    size_t v = SkipSpace(el, c + 1);
    size_t e = SkipValue(el, v);
    if (e == std::string_view::npos) return {};
    return el.substr(v, e - v);
  }
  return {};
}

Status ParseElement(simdjson::ondemand::parser& parser, std::string_view element,
                    const std::function<std::string()>& where,
                    const std::function<Status(simdjson::ondemand::object&)>& fn) {
  try {
    simdjson::padded_string_view view(element.data(), element.size(),
                                      element.size() + simdjson::SIMDJSON_PADDING);
    simdjson::ondemand::document doc = parser.iterate(view);
    simdjson::ondemand::object obj = doc.get_object();
    return fn(obj);
  } catch (const simdjson::simdjson_error& e) {
    return DataLoss(where() + ": " + e.what());
  }
}

}  // namespace opscope::importers::json
