// Sections added the typed way: a kind of profile data registered once, owning its data, its
// JSON (the profile key it is written under) and its Validate. Profile::sections holds them by
// key; code that knows a section asks for it by type (`p.sections.Find<MemorySection>()`), code
// that does not (the JSON reader and writer, Validate, the renderers' registry in report/format.h)
// walks them by key. docs/sections.md walks through adding one.
//
// The older sections (ops, stat, samples, ranges, gpu) are still fields of Profile; they move
// here one at a time.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "base/status.h"

namespace opscope::profile {

struct Profile;

class SectionData {
 public:
  virtual ~SectionData() = default;
  virtual std::unique_ptr<SectionData> Clone() const = 0;
  // The section's JSON value, written under its key at the top level of the profile.
  virtual void ToJson(nlohmann::json& j) const = 0;
  // The invariants renderers may rely on, against the profile that holds it (op indices in
  // range, ...). The message names the first broken one, without the "invalid profile: " prefix.
  virtual Status Validate(const Profile& p) const = 0;
};

struct SectionType {
  const char* key;  // the profile JSON key, and the key in Profile::sections
  // Parses the section's JSON value; throws nlohmann::json's exceptions on a wrong shape (the
  // loader turns them into a DataLoss naming the file).
  std::unique_ptr<SectionData> (*from_json)(const nlohmann::json& j);
};

bool RegisterSectionType(const SectionType& t);
const SectionType* FindSectionType(const std::string& key);
// Every registered key, sorted (the JSON reader's lookup list).
std::map<std::string, SectionType>& SectionTypes();

// The typed sections of one profile, by key. Copies are deep.
class SectionSet {
 public:
  SectionSet() = default;
  SectionSet(const SectionSet& o) { *this = o; }
  SectionSet& operator=(const SectionSet& o);
  SectionSet(SectionSet&&) = default;
  SectionSet& operator=(SectionSet&&) = default;

  // T declares `static constexpr char kKey[]`.
  template <class T>
  const T* Find() const {
    auto it = by_key_.find(T::kKey);
    return it == by_key_.end() ? nullptr : static_cast<const T*>(it->second.get());
  }
  template <class T>
  T* Find() {
    auto it = by_key_.find(T::kKey);
    return it == by_key_.end() ? nullptr : static_cast<T*>(it->second.get());
  }
  // The section of type T, added empty when absent.
  template <class T>
  T& Get() {
    auto& slot = by_key_[T::kKey];
    if (!slot) slot = std::make_unique<T>();
    return static_cast<T&>(*slot);
  }
  void Set(const std::string& key, std::unique_ptr<SectionData> s) { by_key_[key] = std::move(s); }
  void Erase(const std::string& key) { by_key_.erase(key); }
  bool empty() const { return by_key_.empty(); }
  const std::map<std::string, std::unique_ptr<SectionData>>& all() const { return by_key_; }

 private:
  std::map<std::string, std::unique_ptr<SectionData>> by_key_;
};

}  // namespace opscope::profile

#define OPSCOPE_REGISTER_SECTION_TYPE(id, ...)    \
  static const bool kSectionTypeRegistered_##id = \
      ::opscope::profile::RegisterSectionType(__VA_ARGS__)
