#include "profile/section_data.h"

namespace opscope::profile {

std::map<std::string, SectionType>& SectionTypes() {
  static std::map<std::string, SectionType> types;
  return types;
}

bool RegisterSectionType(const SectionType& t) {
  SectionTypes()[t.key] = t;
  return true;
}

const SectionType* FindSectionType(const std::string& key) {
  auto it = SectionTypes().find(key);
  return it == SectionTypes().end() ? nullptr : &it->second;
}

SectionSet& SectionSet::operator=(const SectionSet& o) {
  if (this == &o) return *this;
  by_key_.clear();
  for (const auto& [k, v] : o.by_key_)
    if (v) by_key_[k] = v->Clone();
  return *this;
}

}  // namespace opscope::profile
