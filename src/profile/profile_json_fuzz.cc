// Fuzz target for the profile reader (profile_stream.cc): the streamed reader and its whole-tree
// twin must agree on every input — the same error message, or the same profile.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "profile/profile_io.h"
#include "profile/profile_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto streamed = opscope::profile::FromJsonString(text, "fuzz");
  auto whole = opscope::profile::FromJsonStringWholeTree(text, "fuzz");
  if (streamed.ok() != whole.ok()) std::abort();
  if (!streamed.ok() && streamed.status().message() != whole.status().message()) std::abort();
  if (streamed.ok() &&
      opscope::profile::ToJsonString(*streamed, -1) != opscope::profile::ToJsonString(*whole, -1))
    std::abort();
  return 0;
}
