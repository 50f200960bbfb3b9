// Loading and saving profiles in their JSON form (schema kSchema, docs/profile-format.md).
#pragma once

#include <functional>
#include <optional>
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

Status SaveProfile(const Profile& p, const std::string& path);
// Reads PATH as an opscope profile, or — when a foreign loader recognises it — as another tool's
// profile (importers/, through SetForeignLoader).
StatusOr<Profile> LoadProfile(const std::string& path);

// Other tools' profile formats (ONNX Runtime, TensorRT, perf script, ...) are read by importers/,
// a layer above this one; the command-line program installs its reader here, so every command
// that loads a profile accepts those files too. The loader gets PATH and its first bytes (up to
// kForeignSniffBytes) and returns nullopt for a file it does not recognise.
inline constexpr size_t kForeignSniffBytes = 64 * 1024;
using ForeignLoader = std::optional<StatusOr<Profile>> (*)(const std::string& path,
                                                           std::string_view head);
void SetForeignLoader(ForeignLoader loader);
// nullopt when no loader is installed, PATH cannot be read, or the loader does not recognise it.
std::optional<StatusOr<Profile>> LoadForeignProfile(const std::string& path);

}  // namespace opscope::profile
