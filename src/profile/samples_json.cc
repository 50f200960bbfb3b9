#include "profile/json_fields.h"
#include "profile/profile_json.h"
#include "profile/record_writer.h"

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

void SampleSectionWithSlots(nlohmann::json& j, const SampleSection& v, const std::string& slot) {
  // SECTION_FIELDS but `samples`: its tree is what the slot saves.
  OPSCOPE_JSON_PUT(event);
  OPSCOPE_JSON_PUT(unit);
  OPSCOPE_JSON_PUT(call_graph);
  OPSCOPE_JSON_PUT(frequency_hz);
  OPSCOPE_JSON_PUT(lost);
  OPSCOPE_JSON_PUT(frames);
  j["samples"] = slot + "samples";
  OPSCOPE_JSON_PUT(thread_names);
  OPSCOPE_JSON_PUT(warnings);
  OPSCOPE_JSON_PUT(modules);
}

// The fields of to_json(Sample) above, in std::map (sorted) order: one sample is a few numbers,
// and a perf script import can hold tens of millions of them.
static void WriteRecord(records::RecordWriter& w, const Sample& v) {
  w.Begin('{');
  w.Key("op"), w.Int(v.op);
  w.Key("pid"), w.Int(v.pid);
  w.Key("stack"), w.Begin('[');
  for (uint32_t f : v.stack) w.Element(), w.Int(f);
  w.End(']');
  w.Key("tid"), w.Int(v.tid);
  w.Key("time_ns"), w.Int(v.time_ns);
  w.Key("weight"), w.Double(v.weight);
  w.End('}');
}

bool WriteSampleArray(const SampleSection& v, int indent, std::string_view pad,
                      const std::function<void(std::string_view)>& sink) {
  records::WriteRecords(v.samples, indent, pad, sink);
  return true;
}

void AppendSample(const nlohmann::json& e, std::vector<Sample>* samples) {
  samples->push_back(e.get<Sample>());
}

}  // namespace opscope::profile
