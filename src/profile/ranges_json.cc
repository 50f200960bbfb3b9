#include "profile/json_fields.h"
#include "profile/profile_json.h"

namespace opscope::profile {

#define RANGE_FIELDS(X) \
  X(name);              \
  X(domain);            \
  X(tid);               \
  X(start_ns);          \
  X(end_ns);            \
  X(depth);             \
  X(parent);            \
  X(counters)
// "run" only where a source knows it (`opscope run`), so other profiles keep their bytes.
void to_json(nlohmann::json& j, const Range& v) {
  RANGE_FIELDS(OPSCOPE_JSON_PUT);
  if (v.run >= 0) j["run"] = v.run;
}
void from_json(const nlohmann::json& j, Range& v) {
  RANGE_FIELDS(OPSCOPE_JSON_GET);
  OPSCOPE_JSON_GET(run);
}

}  // namespace opscope::profile
