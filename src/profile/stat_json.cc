#include "profile/json_fields.h"
#include "profile/profile_json.h"

namespace opscope::profile {

#define READING_FIELDS(X) \
  X(event);               \
  X(unit);                \
  X(value);               \
  X(raw);                 \
  X(enabled_ns);          \
  X(running_ns);          \
  X(supported);           \
  X(note);                \
  X(requested);           \
  X(running_fraction)
static void to_json(nlohmann::json& j, const CounterReading& v) {
  READING_FIELDS(OPSCOPE_JSON_PUT);
}
static void from_json(const nlohmann::json& j, CounterReading& v) {
  READING_FIELDS(OPSCOPE_JSON_GET);
}

#define TASK_FIELDS(X) \
  X(pid);              \
  X(tid);              \
  X(comm);             \
  X(counters)
static void to_json(nlohmann::json& j, const TaskCounts& v) { TASK_FIELDS(OPSCOPE_JSON_PUT); }
static void from_json(const nlohmann::json& j, TaskCounts& v) { TASK_FIELDS(OPSCOPE_JSON_GET); }

// `tasks` and `attached` are written only in attach mode: `stat -- CMD` profiles keep their form.
#define RUN_FIELDS(X) \
  X(counters);        \
  X(wall_ms);         \
  X(exit_code);       \
  X(term_signal);     \
  X(note)
static void to_json(nlohmann::json& j, const StatRun& v) {
  RUN_FIELDS(OPSCOPE_JSON_PUT);
  if (!v.tasks.empty()) j["tasks"] = v.tasks;
}
static void from_json(const nlohmann::json& j, StatRun& v) {
  RUN_FIELDS(OPSCOPE_JSON_GET);
  OPSCOPE_JSON_GET(tasks);
}

#define STAT_FIELDS(X) \
  X(command);          \
  X(runs);             \
  X(summary);          \
  X(derived);          \
  X(verdict);          \
  X(verdict_reason);   \
  X(degradations);     \
  X(outliers);         \
  X(user_only)
void to_json(nlohmann::json& j, const StatSection& v) {
  STAT_FIELDS(OPSCOPE_JSON_PUT);
  if (!v.attached.empty()) j["attached"] = v.attached;
}
void from_json(const nlohmann::json& j, StatSection& v) {
  STAT_FIELDS(OPSCOPE_JSON_GET);
  OPSCOPE_JSON_GET(attached);
}

}  // namespace opscope::profile
