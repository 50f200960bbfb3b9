#include "profile/json_fields.h"
#include "profile/profile_json.h"

namespace opscope::profile {

#define FRAME_FIELDS(X) \
  X(function);          \
  X(module);            \
  X(file);              \
  X(line);              \
  X(address);           \
  X(inlined)
static void to_json(nlohmann::json& j, const Frame& v) { FRAME_FIELDS(OPSCOPE_JSON_PUT); }
static void from_json(const nlohmann::json& j, Frame& v) { FRAME_FIELDS(OPSCOPE_JSON_GET); }

#define MODULE_FIELDS(X) \
  X(name);               \
  X(path);               \
  X(build_id)
static void to_json(nlohmann::json& j, const Module& v) { MODULE_FIELDS(OPSCOPE_JSON_PUT); }
static void from_json(const nlohmann::json& j, Module& v) { MODULE_FIELDS(OPSCOPE_JSON_GET); }

#define SAMPLE_FIELDS(X) \
  X(stack);              \
  X(pid);                \
  X(tid);                \
  X(time_ns);            \
  X(weight);             \
  X(op)
static void to_json(nlohmann::json& j, const Sample& v) { SAMPLE_FIELDS(OPSCOPE_JSON_PUT); }
static void from_json(const nlohmann::json& j, Sample& v) { SAMPLE_FIELDS(OPSCOPE_JSON_GET); }

#define SECTION_FIELDS(X) \
  X(event);               \
  X(unit);                \
  X(call_graph);          \
  X(frequency_hz);        \
  X(lost);                \
  X(frames);              \
  X(samples);             \
  X(thread_names);        \
  X(warnings);            \
  X(modules)
void to_json(nlohmann::json& j, const SampleSection& v) { SECTION_FIELDS(OPSCOPE_JSON_PUT); }
void from_json(const nlohmann::json& j, SampleSection& v) { SECTION_FIELDS(OPSCOPE_JSON_GET); }

}  // namespace opscope::profile
