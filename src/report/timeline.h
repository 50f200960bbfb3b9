// The Chrome-trace timeline as sections add to it (report/format.h Section::timeline): events
// are given in CLOCK_MONOTONIC nanoseconds; the "chrome" format places them with its own
// events, on one time origin, and writes the process and thread names.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace opscope::report {

// A complete ("X") event without its times (ts and dur are placed by the chrome writer).
nlohmann::json SliceEvent(const std::string& name, const std::string& cat, int pid, int tid,
                          nlohmann::json args);

class Timeline {
 public:
  static constexpr int kOpsPid = 1;  // the process of the engine's op events

  // A complete ("X") event.
  void Slice(const std::string& name, const std::string& cat, int64_t start_ns, int64_t dur_ns,
             int pid, int tid, nlohmann::json args = nlohmann::json::object());
  // A counter ("C") sample: each key of `values` is one series of the track `name`.
  void Counter(const std::string& name, int64_t at_ns, int pid, nlohmann::json values);
  // An instant ("i", thread scope) event.
  void Instant(const std::string& name, const std::string& cat, int64_t at_ns, int pid, int tid,
               nlohmann::json args = nlohmann::json::object());
  // Names a process or a thread (the first name given wins).
  void Process(int pid, const std::string& name) { processes_.emplace(pid, name); }
  void Thread(int pid, int tid, const std::string& name) {
    threads_.emplace(std::make_pair(pid, tid), name);
  }

  // What the "chrome" writer reads back.
  struct Event {
    int64_t at_ns;
    nlohmann::json event;  // without "ts" (and "dur": the writer places slices, chrome.cc)
    int64_t dur_ns = 0;    // slices ("X")
  };
  const std::vector<Event>& events() const { return events_; }
  const std::map<int, std::string>& processes() const { return processes_; }
  const std::map<std::pair<int, int>, std::string>& threads() const { return threads_; }

 private:
  std::vector<Event> events_;
  std::map<int, std::string> processes_;
  std::map<std::pair<int, int>, std::string> threads_;
};

}  // namespace opscope::report
