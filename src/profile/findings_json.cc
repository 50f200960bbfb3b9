#include "profile/json_fields.h"
#include "profile/profile_json.h"

namespace opscope::profile {

#define FINDING_FIELDS(X) \
  X(rule);                \
  X(severity);            \
  X(title);               \
  X(evidence);            \
  X(suggestion);          \
  X(ops);                 \
  X(numbers)
void to_json(nlohmann::json& j, const Finding& v) { FINDING_FIELDS(OPSCOPE_JSON_PUT); }
void from_json(const nlohmann::json& j, Finding& v) { FINDING_FIELDS(OPSCOPE_JSON_GET); }

}  // namespace opscope::profile
