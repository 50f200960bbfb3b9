#include "base/clock.h"

namespace opscope {

std::string IsoTimeNow() {
  time_t t = time(nullptr);
  tm utc;
  gmtime_r(&t, &utc);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

}  // namespace opscope
