// The JSON profile: the contract other tools and opscope's own report/diff read.
#include "profile/profile_io.h"
#include "report/format.h"

namespace opscope::report {
namespace {
Status WriteJson(const profile::Profile& p, const ReportOptions&, std::string* out) {
  *out = profile::ToJsonString(p);
  return Status::Ok();
}
Status StreamJson(const profile::Profile& p, const ReportOptions&,
                  const std::function<void(std::string_view)>& sink) {
  profile::StreamJson(p, 1, sink);
  return Status::Ok();
}
}  // namespace
OPSCOPE_REGISTER_FORMAT(json, {"json", ".json", "the opscope profile (schema opscope.profile/1)",
                               &WriteJson, "", false, &StreamJson});
}  // namespace opscope::report
