#include "profile/enum_names.h"
#include "profile/json_fields.h"
#include "profile/profile_json.h"

namespace opscope::profile {

#define FINDING_FIELDS(X) \
  X(rule);                \
  X(title);               \
  X(evidence);            \
  X(suggestion);          \
  X(ops);                 \
  X(numbers)
const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kCritical:
      return "critical";
    case Severity::kWarning:
      return "warning";
    case Severity::kInfo:
      break;
  }
  return "info";
}

bool ParseSeverity(const std::string& name, Severity* out) {
  static constexpr Severity kAll[] = {Severity::kCritical, Severity::kWarning, Severity::kInfo};
  return ParseByName(name, kAll, &SeverityName, out);
}

void to_json(nlohmann::json& j, const Finding& v) {
  FINDING_FIELDS(OPSCOPE_JSON_PUT);
  j["severity"] = SeverityName(v.severity);
}
void from_json(const nlohmann::json& j, Finding& v) {
  FINDING_FIELDS(OPSCOPE_JSON_GET);
  if (auto it = j.find("severity"); it != j.end() && !it->is_null()) {
    const std::string name = it->get<std::string>();
    if (!ParseSeverity(name, &v.severity))
      throw nlohmann::json::type_error::create(
          302, "finding '" + v.rule + "' has unknown severity '" + name + "'", &j);
  }
}

}  // namespace opscope::profile
