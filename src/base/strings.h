// Small string utilities used across layers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace opscope {

std::vector<std::string> Split(std::string_view s, char sep, bool skip_empty = false);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
// Sorted CPU numbers as the kernel writes CPU lists: {0, 1, 2, 3, 6} -> "0-3,6".
std::string CpuRanges(const std::vector<int>& cpus);
std::string Trim(std::string_view s);
// The same without a copy: a view into `s`.
std::string_view TrimmedView(std::string_view s);
bool StartsWith(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);

// "1x3x224x224" for {1,3,224,224}; "scalar" for {}.
std::string ShapeToString(const std::vector<int64_t>& shape);
// Parses "1x3x224x224" (also "1,3,224,224"); rejects empty or negative dims.
bool ParseShape(std::string_view s, std::vector<int64_t>* out);

// Human-readable quantities: "1.50 GB", "320 KB"; "12.3 G" (FLOPs); "1.23 ms".
std::string HumanBytes(double bytes);
std::string HumanCount(double count);
std::string HumanMs(double ms);

// Strict number parsing: the whole string must be consumed.
bool ParseInt64(std::string_view s, int64_t* out);
bool ParseDouble(std::string_view s, double* out);

// Names are bytes from other people's files (node names, symbols, range names): kept as they are
// in the profile, and made valid UTF-8 only where they are written. Each maximal invalid
// subsequence (an undecodable byte, a truncated or overlong sequence, a surrogate, a code point
// past U+10FFFF) becomes U+FFFD, as WHATWG's decoder and nlohmann's `replace` handler do.
bool IsValidUtf8(std::string_view s);
std::string ToValidUtf8(std::string_view s);

// Quotes a value for a shell command line when needed (for messages that echo commands).
std::string ShellQuote(std::string_view s);
// A command line as a shell would take it back: each argument ShellQuote'd, joined by spaces.
std::string ShellJoin(const std::vector<std::string>& argv);

}  // namespace opscope
