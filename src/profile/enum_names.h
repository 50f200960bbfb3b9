// The profile's enums are named only at the JSON edge (and in rendered text): each has a
// NameOf function with a switch, and its Parse is this one loop over the values.
#pragma once

#include <cstddef>
#include <string>

namespace opscope::profile {

template <typename E, size_t N>
bool ParseByName(const std::string& name, const E (&all)[N], const char* (*name_of)(E), E* out) {
  for (E e : all)
    if (name == name_of(e)) {
      *out = e;
      return true;
    }
  return false;
}

}  // namespace opscope::profile
