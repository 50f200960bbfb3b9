#include "profile/json_fields.h"
#include "profile/profile_json.h"

namespace opscope::profile {

#define RANGE_FIELDS(X) X(name); X(domain); X(tid); X(start_ns); X(end_ns); X(depth); X(parent); \
  X(counters)
void to_json(nlohmann::json& j, const Range& v) { RANGE_FIELDS(OPSCOPE_JSON_PUT); }
void from_json(const nlohmann::json& j, Range& v) { RANGE_FIELDS(OPSCOPE_JSON_GET); }

}  // namespace opscope::profile
