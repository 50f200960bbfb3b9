#include "report/timeline.h"

namespace opscope::report {

nlohmann::json SliceEvent(const std::string& name, const std::string& cat, int pid, int tid,
                          nlohmann::json args) {
  return {{"name", name}, {"cat", cat}, {"ph", "X"},
          {"pid", pid},   {"tid", tid}, {"args", std::move(args)}};
}

void Timeline::Slice(const std::string& name, const std::string& cat, int64_t start_ns,
                     int64_t dur_ns, int pid, int tid, nlohmann::json args) {
  events_.push_back({start_ns, SliceEvent(name, cat, pid, tid, std::move(args)), dur_ns});
}

void Timeline::Counter(const std::string& name, int64_t at_ns, int pid, nlohmann::json values) {
  events_.push_back(
      {at_ns,
       {{"name", name}, {"ph", "C"}, {"pid", pid}, {"tid", 0}, {"args", std::move(values)}}});
}

void Timeline::Instant(const std::string& name, const std::string& cat, int64_t at_ns, int pid,
                       int tid, nlohmann::json args) {
  events_.push_back({at_ns,
                     {{"name", name},
                      {"cat", cat},
                      {"ph", "i"},
                      {"s", "t"},
                      {"pid", pid},
                      {"tid", tid},
                      {"args", std::move(args)}}});
}

}  // namespace opscope::report
