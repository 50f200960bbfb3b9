// Loading and saving profiles in their JSON form (schema kSchema, docs/profile-format.md).
#pragma once

#include <string>

#include "base/status.h"
#include "profile/profile.h"

namespace opscope::profile {

std::string ToJsonString(const Profile& p, int indent = 1);
// Parses and validates; a truncated or foreign file gets a DataLoss/Unsupported status saying so.
StatusOr<Profile> FromJsonString(const std::string& text, const std::string& origin);

Status SaveProfile(const Profile& p, const std::string& path);
StatusOr<Profile> LoadProfile(const std::string& path);

}  // namespace opscope::profile
