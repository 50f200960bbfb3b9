#include "profile/json_fields.h"
#include "profile/profile_json.h"

namespace opscope::profile {

#define KERNEL_METRIC_FIELDS(X) X(sm_throughput_pct); X(memory_throughput_pct); \
  X(dram_throughput_pct); X(achieved_occupancy_pct); X(metrics_duration_ns); X(bound)
static void to_json(nlohmann::json& j, const GpuKernel& v) {
  OPSCOPE_JSON_PUT(name); OPSCOPE_JSON_PUT(device); OPSCOPE_JSON_PUT(stream);
  OPSCOPE_JSON_PUT(start_ns); OPSCOPE_JSON_PUT(end_ns);
  j["grid"] = {v.grid[0], v.grid[1], v.grid[2]};
  j["block"] = {v.block[0], v.block[1], v.block[2]};
  OPSCOPE_JSON_PUT(registers_per_thread); OPSCOPE_JSON_PUT(static_shared_bytes);
  OPSCOPE_JSON_PUT(dynamic_shared_bytes); OPSCOPE_JSON_PUT(correlation_id);
  OPSCOPE_JSON_PUT(occupancy); OPSCOPE_JSON_PUT(range); OPSCOPE_JSON_PUT(tid);
  OPSCOPE_JSON_PUT(occupancy_limiter);
  KERNEL_METRIC_FIELDS(OPSCOPE_JSON_PUT);
}
static void from_json(const nlohmann::json& j, GpuKernel& v) {
  OPSCOPE_JSON_GET(name); OPSCOPE_JSON_GET(device); OPSCOPE_JSON_GET(stream);
  OPSCOPE_JSON_GET(start_ns); OPSCOPE_JSON_GET(end_ns);
  for (int i = 0; i < 3; ++i) {
    if (j.contains("grid")) v.grid[i] = j.at("grid").at(i).get<int32_t>();
    if (j.contains("block")) v.block[i] = j.at("block").at(i).get<int32_t>();
  }
  OPSCOPE_JSON_GET(registers_per_thread); OPSCOPE_JSON_GET(static_shared_bytes);
  OPSCOPE_JSON_GET(dynamic_shared_bytes); OPSCOPE_JSON_GET(correlation_id);
  OPSCOPE_JSON_GET(occupancy); OPSCOPE_JSON_GET(range); OPSCOPE_JSON_GET(tid);
  OPSCOPE_JSON_GET(occupancy_limiter);
  KERNEL_METRIC_FIELDS(OPSCOPE_JSON_GET);
}

#define MEMCPY_FIELDS(X) X(kind); X(bytes); X(pageable); X(device); X(stream); X(start_ns); \
  X(end_ns); X(correlation_id); X(range); X(tid); X(async); X(content_hash); \
  X(content_sampled)
static void to_json(nlohmann::json& j, const GpuMemcpy& v) { MEMCPY_FIELDS(OPSCOPE_JSON_PUT); }
static void from_json(const nlohmann::json& j, GpuMemcpy& v) { MEMCPY_FIELDS(OPSCOPE_JSON_GET); }

#define MEMSET_FIELDS(X) X(bytes); X(device); X(stream); X(start_ns); X(end_ns); X(correlation_id)
static void to_json(nlohmann::json& j, const GpuMemset& v) { MEMSET_FIELDS(OPSCOPE_JSON_PUT); }
static void from_json(const nlohmann::json& j, GpuMemset& v) { MEMSET_FIELDS(OPSCOPE_JSON_GET); }

#define API_FIELDS(X) X(name); X(api); X(tid); X(start_ns); X(end_ns); X(correlation_id)
static void to_json(nlohmann::json& j, const GpuApiCall& v) { API_FIELDS(OPSCOPE_JSON_PUT); }
static void from_json(const nlohmann::json& j, GpuApiCall& v) { API_FIELDS(OPSCOPE_JSON_GET); }

#define SYNC_FIELDS(X) X(type); X(tid); X(stream); X(start_ns); X(end_ns); X(correlation_id)
static void to_json(nlohmann::json& j, const GpuSync& v) { SYNC_FIELDS(OPSCOPE_JSON_PUT); }
static void from_json(const nlohmann::json& j, GpuSync& v) { SYNC_FIELDS(OPSCOPE_JSON_GET); }

#define DEVICE_FIELDS(X) X(id); X(name); X(cc_major); X(cc_minor); X(sm_count); \
  X(max_warps_per_sm); X(max_blocks_per_sm); X(max_registers_per_sm); X(max_shared_per_sm); \
  X(memory_bandwidth_gbps); X(memory_bytes)
static void to_json(nlohmann::json& j, const GpuDevice& v) { DEVICE_FIELDS(OPSCOPE_JSON_PUT); }
static void from_json(const nlohmann::json& j, GpuDevice& v) { DEVICE_FIELDS(OPSCOPE_JSON_GET); }

#define GPU_FIELDS(X) X(device_name); X(kernels); X(memcpys); X(memsets); X(api_calls); \
  X(dropped_records); X(syncs); X(devices); X(complete); X(end_signal); \
  X(metrics_passes)
void to_json(nlohmann::json& j, const GpuSection& v) { GPU_FIELDS(OPSCOPE_JSON_PUT); }

void GpuSectionWithSlots(nlohmann::json& j, const GpuSection& v) {
  OPSCOPE_JSON_PUT(device_name);
  for (const char* a : {"kernels", "memcpys", "memsets", "api_calls"})
    j[a] = std::string(kGpuArraySlot) + a;
  OPSCOPE_JSON_PUT(dropped_records);
  OPSCOPE_JSON_PUT(syncs);
  OPSCOPE_JSON_PUT(devices);
  OPSCOPE_JSON_PUT(complete);
  OPSCOPE_JSON_PUT(end_signal);
  OPSCOPE_JSON_PUT(metrics_passes);
}

namespace {
template <class T>
void WriteRecords(const std::vector<T>& records, int indent, std::string_view pad,
                  const std::function<void(std::string_view)>& sink) {
  if (records.empty()) {
    sink("[]");
    return;
  }
  const std::string elem_pad =
      indent < 0 ? std::string() : std::string(pad) + std::string(static_cast<size_t>(indent), ' ');
  sink(indent < 0 ? "[" : "[\n");
  std::string text;
  for (size_t i = 0; i < records.size(); ++i) {
    nlohmann::json e = records[i];
    text = e.dump(indent);
    if (indent >= 0) {
      std::string shifted = elem_pad;
      for (char c : text) {
        shifted += c;
        if (c == '\n') shifted += elem_pad;
      }
      text.swap(shifted);
    }
    sink(text);
    if (i + 1 < records.size()) sink(indent < 0 ? "," : ",\n");
  }
  if (indent >= 0) {
    sink("\n");
    sink(pad);
  }
  sink("]");
}
}  // namespace

bool WriteGpuArray(const GpuSection& v, std::string_view name, int indent, std::string_view pad,
                   const std::function<void(std::string_view)>& sink) {
  if (name == "kernels")
    WriteRecords(v.kernels, indent, pad, sink);
  else if (name == "memcpys")
    WriteRecords(v.memcpys, indent, pad, sink);
  else if (name == "memsets")
    WriteRecords(v.memsets, indent, pad, sink);
  else if (name == "api_calls")
    WriteRecords(v.api_calls, indent, pad, sink);
  else
    return false;
  return true;
}
void from_json(const nlohmann::json& j, GpuSection& v) { GPU_FIELDS(OPSCOPE_JSON_GET); }

}  // namespace opscope::profile
