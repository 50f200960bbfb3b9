#include <string>
#include <type_traits>
#include <unordered_map>

#include "profile/json_fields.h"
#include "profile/json_text.h"
#include "profile/profile_json.h"

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

// Writes JSON text exactly as nlohmann's dump(indent) lays it out (members and array elements on
// their own lines at `pad` plus one indent per level; compact when indent < 0; keys in the order
// given, which callers keep sorted as nlohmann's std::map does). Numbers and strings go through
// nlohmann's own serializer, so the bytes are the same; what is saved is the document tree of
// each record (a map node and a key string per field), the cost of the generic path.
class RecordWriter {
 public:
  RecordWriter(int indent, std::string pad, std::string* out)
      : indent_(indent), pad_(std::move(pad)), out_(out) {}
  void Begin(char open) {
    out_->push_back(open);
    first_.push_back(true);
  }
  void End(char close) {
    bool empty = first_.back();
    first_.pop_back();
    if (!empty && indent_ >= 0) NewLine(first_.size());
    out_->push_back(close);
  }
  void Key(std::string_view k) {
    Next();
    out_->push_back('"');
    out_->append(k);
    out_->append(indent_ >= 0 ? "\": " : "\":");
  }
  void Element() { Next(); }
  void Int(int64_t v) { out_->append(std::to_string(v)); }
  void Bool(bool v) { out_->append(v ? "true" : "false"); }
  void Double(double v) {
    if (!(v == last_double_ && !last_double_text_.empty())) {
      last_double_ = v;
      last_double_text_ = DumpJson(nlohmann::json(v));
    }
    out_->append(last_double_text_);
  }
  void Str(const std::string& s) {
    auto it = strings_.find(s);
    if (it == strings_.end()) {
      if (strings_.size() > 4096) strings_.clear();
      it = strings_.emplace(s, DumpJson(nlohmann::json(s))).first;
    }
    out_->append(it->second);
  }
  void Ints3(const int32_t* v) {
    Begin('[');
    for (int i = 0; i < 3; ++i) {
      Element();
      Int(v[i]);
    }
    End(']');
  }

 private:
  void Next() {
    if (!first_.back()) out_->push_back(',');
    first_.back() = false;
    if (indent_ >= 0) NewLine(first_.size());
  }
  void NewLine(size_t depth) {
    out_->push_back('\n');
    out_->append(pad_);
    out_->append(depth * static_cast<size_t>(indent_), ' ');
  }
  int indent_;
  std::string pad_;
  std::string* out_;
  std::vector<bool> first_;
  double last_double_ = 0;
  std::string last_double_text_;
  std::unordered_map<std::string, std::string> strings_;
};

// The fields of to_json(GpuKernel) / to_json(GpuApiCall) above, in std::map (sorted) order.
void WriteRecord(RecordWriter& w, const GpuKernel& v) {
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
void WriteRecord(RecordWriter& w, const GpuApiCall& v) {
  w.Begin('{');
  w.Key("api"), w.Str(v.api);
  w.Key("correlation_id"), w.Int(v.correlation_id);
  w.Key("end_ns"), w.Int(v.end_ns);
  w.Key("name"), w.Str(v.name);
  w.Key("start_ns"), w.Int(v.start_ns);
  w.Key("tid"), w.Int(v.tid);
  w.End('}');
}

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
  constexpr bool kFast = std::is_same_v<T, GpuKernel> || std::is_same_v<T, GpuApiCall>;
  RecordWriter w(indent, elem_pad, &text);
  for (size_t i = 0; i < records.size(); ++i) {
    text.clear();
    if (indent >= 0) text = elem_pad;
    if constexpr (kFast) {
      WriteRecord(w, records[i]);
    } else {
      nlohmann::json e = records[i];
      std::string one = DumpJson(e, indent);
      for (char c : one) {
        text += c;
        if (c == '\n' && indent >= 0) text += elem_pad;
      }
    }
    if (i + 1 < records.size()) text += indent < 0 ? "," : ",\n";
    sink(text);
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
