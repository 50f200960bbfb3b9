// The one way opscope turns a JSON document into text. Names in a profile are bytes from other
// people's files (node names, symbols, range and kernel names) and are kept as they are; JSON
// text must be UTF-8, and nlohmann's default dump throws type_error 316 on the first invalid byte
// — after the measurement ran, losing it. Every writer dumps through here: invalid bytes become
// U+FFFD, as the other formats write them (base/strings.h ToValidUtf8).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace opscope::profile {

inline std::string DumpJson(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

}  // namespace opscope::profile
