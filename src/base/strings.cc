#include "base/strings.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace opscope {

std::vector<std::string> Split(std::string_view s, char sep, bool skip_empty) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    std::string_view piece = s.substr(start, pos == std::string_view::npos ? s.npos : pos - start);
    if (!skip_empty || !piece.empty()) out.emplace_back(piece);
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string CpuRanges(const std::vector<int>& cpus) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    parts.push_back(j == i ? std::to_string(cpus[i])
                           : std::to_string(cpus[i]) + "-" + std::to_string(cpus[j]));
    i = j + 1;
  }
  return Join(parts, ",");
}

std::string_view TrimmedView(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == s.npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string Trim(std::string_view s) { return std::string(TrimmedView(s)); }

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool EndsWith(std::string_view s, std::string_view x) {
  return s.size() >= x.size() && s.substr(s.size() - x.size()) == x;
}

std::string ShapeToString(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "scalar";
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += 'x';
    out += std::to_string(shape[i]);
  }
  return out;
}

bool ParseShape(std::string_view s, std::vector<int64_t>* out) {
  out->clear();
  if (s.empty()) return false;
  char sep = s.find(',') != s.npos ? ',' : 'x';
  for (const std::string& p : Split(s, sep)) {
    int64_t v;
    if (!ParseInt64(p, &v) || v < 0) return false;
    out->push_back(v);
  }
  return true;
}

static std::string Fmt(const char* f, double v, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v, unit);
  return buf;
}

std::string HumanBytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (std::fabs(b) >= 1000 && u < 4) {
    b /= 1000;
    ++u;
  }
  return Fmt(u == 0 ? "%.0f %s" : "%.2f %s", b, units[u]);
}

std::string HumanCount(double c) {
  const char* units[] = {"", "K", "M", "G", "T", "P"};
  int u = 0;
  while (std::fabs(c) >= 1000 && u < 5) {
    c /= 1000;
    ++u;
  }
  return Fmt(u == 0 ? "%.0f%s" : "%.2f%s", c, units[u]);
}

std::string HumanMs(double ms) {
  if (ms >= 1000) return Fmt("%.2f %s", ms / 1000, "s");
  if (ms >= 1) return Fmt("%.3f %s", ms, "ms");
  return Fmt("%.1f %s", ms * 1000, "us");
}

bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  const char* b = s.data();
  const char* e = b + s.size();
  if (*b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, *out);
  return ec == std::errc() && p == e;
}

bool ParseDouble(std::string_view s, double* out) {
  if (s.empty()) return false;
  std::string tmp(s);
  char* end = nullptr;
  *out = std::strtod(tmp.c_str(), &end);
  return end == tmp.c_str() + tmp.size() && std::isfinite(*out);
}

namespace {

// The UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates, nothing past U+10FFFF):
// returns its length when it is valid, else 0 with *bad the length of its maximal subpart (the
// bytes that could still have begun a valid sequence, at least 1), which one U+FFFD replaces.
size_t Utf8SequenceAt(std::string_view s, size_t i, size_t* bad) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  *bad = 1;
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (size_t k = 1; k < n; ++k) {
    if (i + k >= s.size()) return 0;
    const unsigned char min = k == 1 ? lo : 0x80, max = k == 1 ? hi : 0xBF;
    if (b(i + k) < min || b(i + k) > max) return 0;
    *bad = k + 1;
  }
  return n;
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  size_t bad;
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SequenceAt(s, i, &bad);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string ToValidUtf8(std::string_view s) {
  if (IsValidUtf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  size_t bad;
  for (size_t i = 0; i < s.size();) {
    if (const size_t n = Utf8SequenceAt(s, i, &bad); n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD
      i += bad;
    }
  }
  return out;
}

std::string ShellQuote(std::string_view s) {
  if (!s.empty() && s.find_first_of(" \t\n'\"\\$`*?;&|<>()") == s.npos) return std::string(s);
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string ShellJoin(const std::vector<std::string>& argv) {
  std::vector<std::string> quoted;
  for (const std::string& a : argv) quoted.push_back(ShellQuote(a));
  return Join(quoted, " ");
}

}  // namespace opscope
