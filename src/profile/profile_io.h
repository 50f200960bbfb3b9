// Loading and saving profiles in their JSON form (schema kSchema, docs/profile-format.md).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "profile/profile.h"

namespace opscope::profile {

std::string ToJsonString(const Profile& p, int indent = 1);
// The same text handed to `sink` piece by piece (the big record arrays a record at a time), so a
// writer never holds the whole text: hundreds of MB for a large import.
void StreamJson(const Profile& p, int indent, const std::function<void(std::string_view)>& sink);
// Parses and validates; a truncated or foreign file gets a DataLoss/Unsupported status saying so.
StatusOr<Profile> FromJsonString(const std::string& text, const std::string& origin);

// The same over bytes held elsewhere (a mapped file), parsed as they are read; `release(n)` is
// called as the first n bytes are done with (importers' Source::ReleaseBefore).
StatusOr<Profile> FromJsonBytes(std::string_view text, const std::string& origin,
                                const std::function<void(size_t)>& release = nullptr);

Status SaveProfile(const Profile& p, const std::string& path);
// Reads PATH as an opscope JSON profile. Commands load any profile file (record files and other
// tools' formats too) through importers/importer.h LoadProfileFile.
StatusOr<Profile> LoadProfile(const std::string& path);

}  // namespace opscope::profile
