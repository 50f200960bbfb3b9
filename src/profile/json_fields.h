// Field helpers for the hand-written JSON conversions: one line per field, missing or null
// fields keep their defaults when reading (so older files and foreign writers still load).
//
// Integer fields are range-checked first: nlohmann converts a floating-point number to an
// integer with a plain cast, undefined behaviour when the value does not fit (profile_json_fuzz
// found `1.2e73` as an op event's tid); such a number is refused with nlohmann's type_error 302
// instead, naming it. Anything else converts, or fails, exactly as nlohmann's get_to does.
#pragma once

#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <type_traits>
#include <vector>

namespace opscope::profile::json_fields {

template <typename T>
struct IsVector : std::false_type {};
template <typename T, typename A>
struct IsVector<std::vector<T, A>> : std::true_type {};
template <typename T>
struct IsMap : std::false_type {};
template <typename K, typename V, typename C, typename A>
struct IsMap<std::map<K, V, C, A>> : std::true_type {};

// Throws when `j` (or an element of it, for the containers of T) is a floating-point number the
// integer type it becomes cannot represent.
template <typename T>
void CheckIntegers(const nlohmann::json& j) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (!j.is_number_float()) return;
    const double d = j.get<double>();
    constexpr int kBits = std::numeric_limits<T>::digits;  // without the sign bit
    // The cast truncates toward zero: fine strictly inside (lo, hi). Both bounds are exact.
    const double hi = std::ldexp(1.0, kBits);
    const double lo = std::is_signed_v<T> ? -hi - 1 : -1.0;
    if (d > lo && d < hi) return;
    throw nlohmann::json::type_error::create(
        302, "number " + j.dump() + " does not fit the integer field it is read into", &j);
  } else if constexpr (IsVector<T>::value) {
    if (j.is_array())
      for (const auto& e : j) CheckIntegers<typename T::value_type>(e);
  } else if constexpr (IsMap<T>::value) {
    if (j.is_array())  // nlohmann's form of a map with non-string keys: [[key, value], ...]
      for (const auto& e : j)
        if (e.is_array() && !e.empty()) CheckIntegers<typename T::key_type>(e[0]);
  }
}

// j.get<T>() for an integer T, range-checked as above.
template <typename T>
T Int(const nlohmann::json& j) {
  CheckIntegers<T>(j);
  return j.get<T>();
}

}  // namespace opscope::profile::json_fields

#define OPSCOPE_JSON_PUT(field) j[#field] = v.field
#define OPSCOPE_JSON_GET(field)                                                              \
  do {                                                                                       \
    if (auto it_ = j.find(#field); it_ != j.end() && !it_->is_null()) {                      \
      ::opscope::profile::json_fields::CheckIntegers<std::decay_t<decltype(v.field)>>(*it_); \
      it_->get_to(v.field);                                                                  \
    }                                                                                        \
  } while (0)
