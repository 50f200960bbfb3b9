#include <string>
#include <type_traits>
#include <unordered_map>

#include "profile/json_fields.h"
#include "profile/json_text.h"
#include "profile/profile_json.h"
#include "profile/record_writer.h"

namespace opscope::profile {

#define KERNEL_METRIC_FIELDS(X) \
  X(sm_throughput_pct);         \
  X(memory_throughput_pct);     \
  X(dram_throughput_pct);       \
  X(achieved_occupancy_pct);    \
  X(metrics_duration_ns);       \
  X(bound)
static void to_json(nlohmann::json& j, const GpuKernel& v) {
  OPSCOPE_JSON_PUT(name);
  OPSCOPE_JSON_PUT(device);
  OPSCOPE_JSON_PUT(stream);
  OPSCOPE_JSON_PUT(start_ns);
  OPSCOPE_JSON_PUT(end_ns);
  j["grid"] = {v.grid[0], v.grid[1], v.grid[2]};
  j["block"] = {v.block[0], v.block[1], v.block[2]};
  OPSCOPE_JSON_PUT(registers_per_thread);
  OPSCOPE_JSON_PUT(static_shared_bytes);
  OPSCOPE_JSON_PUT(dynamic_shared_bytes);
  OPSCOPE_JSON_PUT(correlation_id);
  OPSCOPE_JSON_PUT(occupancy);
  OPSCOPE_JSON_PUT(range);
  OPSCOPE_JSON_PUT(tid);
  OPSCOPE_JSON_PUT(occupancy_limiter);
  KERNEL_METRIC_FIELDS(OPSCOPE_JSON_PUT);
}
static void from_json(const nlohmann::json& j, GpuKernel& v) {
  OPSCOPE_JSON_GET(name);
  OPSCOPE_JSON_GET(device);
  OPSCOPE_JSON_GET(stream);
  OPSCOPE_JSON_GET(start_ns);
  OPSCOPE_JSON_GET(end_ns);
  for (int i = 0; i < 3; ++i) {
    if (j.contains("grid")) v.grid[i] = json_fields::Int<int32_t>(j.at("grid").at(i));
    if (j.contains("block")) v.block[i] = json_fields::Int<int32_t>(j.at("block").at(i));
  }
  OPSCOPE_JSON_GET(registers_per_thread);
  OPSCOPE_JSON_GET(static_shared_bytes);
  OPSCOPE_JSON_GET(dynamic_shared_bytes);
  OPSCOPE_JSON_GET(correlation_id);
  OPSCOPE_JSON_GET(occupancy);
  OPSCOPE_JSON_GET(range);
  OPSCOPE_JSON_GET(tid);
  OPSCOPE_JSON_GET(occupancy_limiter);
  KERNEL_METRIC_FIELDS(OPSCOPE_JSON_GET);
}

#define MEMCPY_FIELDS(X) \
  X(kind);               \
  X(bytes);              \
  X(pageable);           \
  X(device);             \
  X(stream);             \
  X(start_ns);           \
  X(end_ns);             \
  X(correlation_id);     \
  X(range);              \
  X(tid);                \
  X(async);              \
  X(content_hash);       \
  X(content_sampled)
static void to_json(nlohmann::json& j, const GpuMemcpy& v) { MEMCPY_FIELDS(OPSCOPE_JSON_PUT); }
static void from_json(const nlohmann::json& j, GpuMemcpy& v) { MEMCPY_FIELDS(OPSCOPE_JSON_GET); }

#define MEMSET_FIELDS(X) \
  X(bytes);              \
  X(device);             \
  X(stream);             \
  X(start_ns);           \
  X(end_ns);             \
  X(correlation_id)
static void to_json(nlohmann::json& j, const GpuMemset& v) { MEMSET_FIELDS(OPSCOPE_JSON_PUT); }
static void from_json(const nlohmann::json& j, GpuMemset& v) { MEMSET_FIELDS(OPSCOPE_JSON_GET); }

#define API_FIELDS(X) \
  X(name);            \
  X(api);             \
  X(tid);             \
  X(start_ns);        \
  X(end_ns);          \
  X(correlation_id)
static void to_json(nlohmann::json& j, const GpuApiCall& v) { API_FIELDS(OPSCOPE_JSON_PUT); }
static void from_json(const nlohmann::json& j, GpuApiCall& v) { API_FIELDS(OPSCOPE_JSON_GET); }

#define SYNC_FIELDS(X) \
  X(type);             \
  X(tid);              \
  X(stream);           \
  X(start_ns);         \
  X(end_ns);           \
  X(correlation_id)
static void to_json(nlohmann::json& j, const GpuSync& v) { SYNC_FIELDS(OPSCOPE_JSON_PUT); }
static void from_json(const nlohmann::json& j, GpuSync& v) { SYNC_FIELDS(OPSCOPE_JSON_GET); }

#define DEVICE_FIELDS(X)    \
  X(id);                    \
  X(name);                  \
  X(cc_major);              \
  X(cc_minor);              \
  X(sm_count);              \
  X(max_warps_per_sm);      \
  X(max_blocks_per_sm);     \
  X(max_registers_per_sm);  \
  X(max_shared_per_sm);     \
  X(memory_bandwidth_gbps); \
  X(memory_bytes)
static void to_json(nlohmann::json& j, const GpuDevice& v) { DEVICE_FIELDS(OPSCOPE_JSON_PUT); }
static void from_json(const nlohmann::json& j, GpuDevice& v) { DEVICE_FIELDS(OPSCOPE_JSON_GET); }

#define GPU_FIELDS(X) \
  X(device_name);     \
  X(kernels);         \
  X(memcpys);         \
  X(memsets);         \
  X(api_calls);       \
  X(dropped_records); \
  X(syncs);           \
  X(devices);         \
  X(complete);        \
  X(end_signal);      \
  X(metrics_passes)
void to_json(nlohmann::json& j, const GpuSection& v) { GPU_FIELDS(OPSCOPE_JSON_PUT); }

void GpuSectionWithSlots(nlohmann::json& j, const GpuSection& v, const std::string& slot) {
  OPSCOPE_JSON_PUT(device_name);
  for (const char* a : {"kernels", "memcpys", "memsets", "api_calls"}) j[a] = slot + a;
  OPSCOPE_JSON_PUT(dropped_records);
  OPSCOPE_JSON_PUT(syncs);
  OPSCOPE_JSON_PUT(devices);
  OPSCOPE_JSON_PUT(complete);
  OPSCOPE_JSON_PUT(end_signal);
  OPSCOPE_JSON_PUT(metrics_passes);
}

// The fields of to_json(GpuKernel) / to_json(GpuApiCall) above, in std::map (sorted) order.
// Static members of this namespace (not of an unnamed one), so that record_writer.h's template
// finds them by argument-dependent lookup.
static void WriteRecord(records::RecordWriter& w, const GpuKernel& v) {
  w.Begin('{');
  w.Key("achieved_occupancy_pct"), w.Double(v.achieved_occupancy_pct);
  w.Key("block"), w.Ints3(v.block);
  w.Key("bound"), w.Str(v.bound);
  w.Key("correlation_id"), w.Int(v.correlation_id);
  w.Key("device"), w.Int(v.device);
  w.Key("dram_throughput_pct"), w.Double(v.dram_throughput_pct);
  w.Key("dynamic_shared_bytes"), w.Int(v.dynamic_shared_bytes);
  w.Key("end_ns"), w.Int(v.end_ns);
  w.Key("grid"), w.Ints3(v.grid);
  w.Key("memory_throughput_pct"), w.Double(v.memory_throughput_pct);
  w.Key("metrics_duration_ns"), w.Double(v.metrics_duration_ns);
  w.Key("name"), w.Str(v.name);
  w.Key("occupancy"), w.Double(v.occupancy);
  w.Key("occupancy_limiter"), w.Int(v.occupancy_limiter);
  w.Key("range"), w.Int(v.range);
  w.Key("registers_per_thread"), w.Int(v.registers_per_thread);
  w.Key("sm_throughput_pct"), w.Double(v.sm_throughput_pct);
  w.Key("start_ns"), w.Int(v.start_ns);
  w.Key("static_shared_bytes"), w.Int(v.static_shared_bytes);
  w.Key("stream"), w.Int(v.stream);
  w.Key("tid"), w.Int(v.tid);
  w.End('}');
}
static void WriteRecord(records::RecordWriter& w, const GpuApiCall& v) {
  w.Begin('{');
  w.Key("api"), w.Str(v.api);
  w.Key("correlation_id"), w.Int(v.correlation_id);
  w.Key("end_ns"), w.Int(v.end_ns);
  w.Key("name"), w.Str(v.name);
  w.Key("start_ns"), w.Int(v.start_ns);
  w.Key("tid"), w.Int(v.tid);
  w.End('}');
}

bool WriteGpuArray(const GpuSection& v, std::string_view name, int indent, std::string_view pad,
                   const std::function<void(std::string_view)>& sink) {
  if (name == "kernels")
    records::WriteRecords(v.kernels, indent, pad, sink);
  else if (name == "memcpys")
    records::WriteRecords(v.memcpys, indent, pad, sink);
  else if (name == "memsets")
    records::WriteRecords(v.memsets, indent, pad, sink);
  else if (name == "api_calls")
    records::WriteRecords(v.api_calls, indent, pad, sink);
  else
    return false;
  return true;
}
void from_json(const nlohmann::json& j, GpuSection& v) { GPU_FIELDS(OPSCOPE_JSON_GET); }

void AppendGpuRecord(std::string_view name, const nlohmann::json& e, GpuSection* v) {
  if (name == "kernels")
    v->kernels.push_back(e.get<GpuKernel>());
  else if (name == "memcpys")
    v->memcpys.push_back(e.get<GpuMemcpy>());
  else if (name == "memsets")
    v->memsets.push_back(e.get<GpuMemset>());
  else if (name == "api_calls")
    v->api_calls.push_back(e.get<GpuApiCall>());
  else if (name == "syncs")
    v->syncs.push_back(e.get<GpuSync>());
}

}  // namespace opscope::profile
