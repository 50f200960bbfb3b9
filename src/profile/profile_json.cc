#include "profile/profile_json.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "base/files.h"
#include "profile/json_fields.h"
#include "profile/json_text.h"
#include "profile/profile_io.h"
#include "profile/record_writer.h"

namespace opscope {

void to_json(nlohmann::json& j, const Stats& v) {
  OPSCOPE_JSON_PUT(n);
  OPSCOPE_JSON_PUT(mean);
  OPSCOPE_JSON_PUT(median);
  OPSCOPE_JSON_PUT(trimmed_mean);
  OPSCOPE_JSON_PUT(min);
  OPSCOPE_JSON_PUT(max);
  OPSCOPE_JSON_PUT(p90);
  OPSCOPE_JSON_PUT(stddev);
  OPSCOPE_JSON_PUT(cv);
}
void from_json(const nlohmann::json& j, Stats& v) {
  OPSCOPE_JSON_GET(n);
  OPSCOPE_JSON_GET(mean);
  OPSCOPE_JSON_GET(median);
  OPSCOPE_JSON_GET(trimmed_mean);
  OPSCOPE_JSON_GET(min);
  OPSCOPE_JSON_GET(max);
  OPSCOPE_JSON_GET(p90);
  OPSCOPE_JSON_GET(stddev);
  OPSCOPE_JSON_GET(cv);
}

}  // namespace opscope

namespace opscope::profile {

#define META_FIELDS(X) \
  X(kind);             \
  X(tool_version);     \
  X(build_type);       \
  X(source);           \
  X(created);          \
  X(host);             \
  X(kernel);           \
  X(arch);             \
  X(cpu_model);        \
  X(logical_cpus);     \
  X(governor);         \
  X(cpu_mhz);          \
  X(threads);          \
  X(warmup);           \
  X(runs);             \
  X(degradations);     \
  X(extra)
void to_json(nlohmann::json& j, const Meta& v) {
  META_FIELDS(OPSCOPE_JSON_PUT);
  if (v.machine) j["machine"] = *v.machine;
  if (v.target) j["target"] = *v.target;
  if (!v.attached.empty()) OPSCOPE_JSON_PUT(attached);
  if (v.import) j["import"] = *v.import;
}
void from_json(const nlohmann::json& j, Meta& v) {
  META_FIELDS(OPSCOPE_JSON_GET);
  auto optional = [&](const char* key, auto& field) {
    if (auto it = j.find(key); it != j.end() && !it->is_null())
      field = it->get<typename std::decay_t<decltype(field)>::value_type>();
  };
  optional("machine", v.machine);
  optional("target", v.target);
  OPSCOPE_JSON_GET(attached);
  optional("import", v.import);
  UpgradeLegacyMeta(&v);
}

void to_json(nlohmann::json& j, const E2E& v) {
  OPSCOPE_JSON_PUT(runs_ms);
  OPSCOPE_JSON_PUT(stats);
  OPSCOPE_JSON_PUT(throughput_per_s);
}
void from_json(const nlohmann::json& j, E2E& v) {
  OPSCOPE_JSON_GET(runs_ms);
  OPSCOPE_JSON_GET(stats);
  OPSCOPE_JSON_GET(throughput_per_s);
}

#define OP_FIELDS(X) \
  X(name);           \
  X(op_type);        \
  X(domain);         \
  X(index);          \
  X(input_shapes);   \
  X(output_shapes);  \
  X(flops);          \
  X(bytes);          \
  X(runs_ms);        \
  X(stats);          \
  X(share);          \
  X(step);           \
  X(fused_with);     \
  X(attribution);    \
  X(counters)
void to_json(nlohmann::json& j, const OpRecord& v) {
  OP_FIELDS(OPSCOPE_JSON_PUT);
  j["status"] = OpStatusName(v.status);
  if (!v.layout.empty()) OPSCOPE_JSON_PUT(layout);
  if (!v.source_nodes.empty()) OPSCOPE_JSON_PUT(source_nodes);
  if (v.int_ops > 0) j["ops"] = v.int_ops;
  if (v.roofline) {
    const OpRoofline& r = *v.roofline;
    j["bound"] = BoundClassName(r.bound);
    j["intensity"] = r.intensity;
    j["attainable_gflops"] = r.attainable_gflops;
    j["pct_of_roof"] = r.pct_of_roof;
    j["expected_ms"] = r.expected_ms;
    j["measured_over_expected"] = r.measured_over_expected;
  }
}
void from_json(const nlohmann::json& j, OpRecord& v) {
  OP_FIELDS(OPSCOPE_JSON_GET);
  if (auto it = j.find("status"); it != j.end() && !it->is_null()) {
    const std::string name = it->get<std::string>();
    if (!ParseOpStatus(name, &v.status))
      throw nlohmann::json::type_error::create(
          302, "op '" + v.name + "' has unknown status '" + name + "'", &j);
  }
  OPSCOPE_JSON_GET(layout);
  OPSCOPE_JSON_GET(source_nodes);
  if (auto it = j.find("ops"); it != j.end()) v.int_ops = it->get<double>();
  if (auto it = j.find("bound"); it != j.end() && !it->is_null()) {
    OpRoofline r;
    if (!ParseBoundClass(it->get<std::string>(), &r.bound))
      throw nlohmann::json::type_error::create(
          302, "unknown bound class '" + it->get<std::string>() + "'", &j);
    auto get = [&](const char* key, double& field) {
      if (auto f = j.find(key); f != j.end() && !f->is_null()) field = f->get<double>();
    };
    get("intensity", r.intensity);
    get("attainable_gflops", r.attainable_gflops);
    get("pct_of_roof", r.pct_of_roof);
    get("expected_ms", r.expected_ms);
    get("measured_over_expected", r.measured_over_expected);
    v.roofline = r;
  }
}

// Op events are many: stored as compact arrays [op, run, tid, start_ns, dur_ns].
void to_json(nlohmann::json& j, const OpEvent& v) {
  j = nlohmann::json::array({v.op, v.run, v.tid, v.start_ns, v.dur_ns});
}
void from_json(const nlohmann::json& j, OpEvent& v) {
  if (!j.is_array() || j.size() != 5)
    throw nlohmann::json::type_error::create(
        302, "op event must be [op, run, tid, start_ns, dur_ns]", &j);
  v.op = json_fields::Int<int32_t>(j[0]);
  v.run = json_fields::Int<int32_t>(j[1]);
  v.tid = json_fields::Int<int32_t>(j[2]);
  v.start_ns = json_fields::Int<int64_t>(j[3]);
  v.dur_ns = json_fields::Int<int64_t>(j[4]);
}

#define OVERHEAD_FIELDS(X) \
  X(baseline_median_ms);   \
  X(observed_median_ms);   \
  X(pct);                  \
  X(counters_pct);         \
  X(method);               \
  X(measurable);           \
  X(noise_low_pct);        \
  X(noise_high_pct)
void to_json(nlohmann::json& j, const Overhead& v) { OVERHEAD_FIELDS(OPSCOPE_JSON_PUT); }
void from_json(const nlohmann::json& j, Overhead& v) { OVERHEAD_FIELDS(OPSCOPE_JSON_GET); }

#define VERDICTS_FIELDS(X) \
  X(ceilings);             \
  X(noise);                \
  X(cv);                   \
  X(outlier_runs);         \
  X(noise_words);          \
  X(throttled);            \
  X(freq_drop_pct);        \
  X(temp_rise_c);          \
  X(throttling);           \
  X(build);                \
  X(build_evidence)
void to_json(nlohmann::json& j, const Verdicts& v) { VERDICTS_FIELDS(OPSCOPE_JSON_PUT); }
void from_json(const nlohmann::json& j, Verdicts& v) { VERDICTS_FIELDS(OPSCOPE_JSON_GET); }

void to_json(nlohmann::json& j, const ClockSample& v) {
  OPSCOPE_JSON_PUT(run);
  OPSCOPE_JSON_PUT(cpu_mhz);
  OPSCOPE_JSON_PUT(temp_c);
}
void from_json(const nlohmann::json& j, ClockSample& v) {
  OPSCOPE_JSON_GET(run);
  OPSCOPE_JSON_GET(cpu_mhz);
  OPSCOPE_JSON_GET(temp_c);
}

namespace {
// slot: "" for the plain tree, else the prefix (kRecordArraySlot + a nonce) that the big record
// arrays are left as, for the streaming writer (profile_json.h).
void ProfileToJson(nlohmann::json& j, const Profile& p, const std::string& slot) {
  j = nlohmann::json::object();
  j["schema"] = kSchema;
  j["meta"] = p.meta;
  j["e2e"] = p.e2e;
  if (slot.empty())
    j["ops"] = p.ops;
  else
    j["ops"] = slot + "ops";
  if (!p.op_events.empty()) {
    if (slot.empty())
      j["op_events"] = p.op_events;
    else
      j["op_events"] = slot + "op_events";
  }
  if (p.overhead) j["overhead"] = *p.overhead;
  if (p.stat) j["stat"] = *p.stat;
  if (p.samples) {
    if (slot.empty())
      j["samples"] = *p.samples;
    else
      SampleSectionWithSlots(j["samples"], *p.samples, slot);
  }
  if (!p.ranges.empty()) {
    if (slot.empty())
      j["ranges"] = p.ranges;
    else
      j["ranges"] = slot + "ranges";
  }
  if (p.gpu) {
    if (slot.empty())
      j["gpu"] = *p.gpu;
    else
      GpuSectionWithSlots(j["gpu"], *p.gpu, slot);
  }
  for (const auto& [key, section] : p.sections.all()) section->ToJson(j[key]);
  if (p.verdicts) j["verdicts"] = *p.verdicts;
  j["findings"] = p.findings;
  if (!p.clocks.empty()) j["clocks"] = p.clocks;
}

// The slot prefix of one write: a nonce no name in the profile can know, so a hostile name equal
// to a slot is written as the string it is, never replaced by an array.
std::string SlotPrefix() {
  std::random_device rd;
  const uint64_t nonce = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(nonce));
  return std::string(kRecordArraySlot) + hex + ":";
}

// The profile's JSON text, handed to `sink` piece by piece: the document tree without the big
// record arrays, dumped, with each array's slot replaced by its records written one at a time.
// The text equals nlohmann::json(p).dump(indent) + "\n".
void WriteProfileJson(const Profile& p, int indent,
                      const std::function<void(std::string_view)>& sink) {
  const std::string slot = SlotPrefix();
  nlohmann::json j;
  ProfileToJson(j, p, slot);
  std::string head = DumpJson(j, indent);
  j = nullptr;
  // The slot as dumped: "\u0001opscope-records\u0001<nonce>:kernels".
  const std::string prefix =
      "\"\\u0001opscope-records\\u0001" + slot.substr(sizeof kRecordArraySlot - 1);
  size_t pos = 0, at;
  while ((at = head.find(prefix, pos)) != std::string::npos) {
    size_t name_at = at + prefix.size(), name_end = head.find('"', name_at);
    if (name_end == std::string::npos) break;
    size_t line = head.rfind('\n', at);
    line = line == std::string::npos ? 0 : line + 1;
    size_t pad_end = head.find_first_not_of(' ', line);
    sink(std::string_view(head).substr(pos, at - pos));
    const std::string_view name = std::string_view(head).substr(name_at, name_end - name_at);
    const std::string_view pad = std::string_view(head).substr(line, pad_end - line);
    if (name == "ops")
      records::WriteRecords(p.ops, indent, pad, sink);
    else if (name == "op_events")
      records::WriteRecords(p.op_events, indent, pad, sink);
    else if (name == "ranges")
      records::WriteRecords(p.ranges, indent, pad, sink);
    else if (name == "samples" && p.samples)
      WriteSampleArray(*p.samples, indent, pad, sink);
    else if (p.gpu)
      WriteGpuArray(*p.gpu, name, indent, pad, sink);
    pos = name_end + 1;
  }
  sink(std::string_view(head).substr(pos));
  sink("\n");
}
}  // namespace

void to_json(nlohmann::json& j, const Profile& p) { ProfileToJson(j, p, ""); }

void from_json(const nlohmann::json& j, Profile& p) {
  auto get = [&](const char* key, auto& field) {
    if (auto it = j.find(key); it != j.end() && !it->is_null()) it->get_to(field);
  };
  get("meta", p.meta);
  get("e2e", p.e2e);
  get("ops", p.ops);
  get("op_events", p.op_events);
  if (auto it = j.find("overhead"); it != j.end() && !it->is_null())
    p.overhead = it->get<Overhead>();
  if (auto it = j.find("stat"); it != j.end() && !it->is_null()) p.stat = it->get<StatSection>();
  if (auto it = j.find("samples"); it != j.end() && !it->is_null())
    p.samples = it->get<SampleSection>();
  get("ranges", p.ranges);
  if (auto it = j.find("gpu"); it != j.end() && !it->is_null()) p.gpu = it->get<GpuSection>();
  get("findings", p.findings);
  get("clocks", p.clocks);
  if (auto it = j.find("verdicts"); it != j.end() && !it->is_null())
    p.verdicts = it->get<Verdicts>();
  for (const auto& [key, type] : SectionTypes())
    if (auto it = j.find(key); it != j.end() && !it->is_null())
      p.sections.Set(key, type.from_json(*it));
}

std::string ToJsonString(const Profile& p, int indent) {
  std::string out;
  WriteProfileJson(p, indent, [&](std::string_view s) { out.append(s); });
  return out;
}

void StreamJson(const Profile& p, int indent, const std::function<void(std::string_view)>& sink) {
  WriteProfileJson(p, indent, sink);
}

namespace {

Status NotARecordFile(std::string_view head, const std::string& origin) {
  if (head.rfind("OPSREC", 0) == 0)
    return Unsupported(origin +
                       ": this is a record file from `opscope record` (call-stack samples), "
                       "not a JSON profile; read it with `opscope report " +
                       origin + "`");
  return Status::Ok();
}

// The parsed document (record arrays apart, profile_stream.cc) into a checked Profile.
StatusOr<Profile> FromDocument(nlohmann::json& j, StreamedRecords&& records,
                               const std::string& origin) {
  if (j.is_discarded())
    return DataLoss(origin + ": not valid JSON (truncated or corrupt profile?)");
  if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string())
    return Unsupported(origin +
                       ": not an opscope profile (no \"schema\" field); "
                       "use `opscope import` for other tools' formats");
  std::string schema = j["schema"].get<std::string>();
  if (schema != kSchema)
    return Unsupported(origin + ": profile schema '" + schema +
                       "' is not supported (this opscope reads '" + kSchema + "')");
  Profile p;
  try {
    p = j.get<Profile>();
  } catch (const nlohmann::json::exception& e) {
    return DataLoss(origin + ": malformed profile: " + e.what());
  }
  j = nullptr;
  MoveStreamedRecords(std::move(records), &p);
  OPSCOPE_RETURN_IF_ERROR(Validate(p).WithPrefix(origin));
  return p;
}

}  // namespace

StatusOr<Profile> FromJsonString(const std::string& text, const std::string& origin) {
  OPSCOPE_RETURN_IF_ERROR(NotARecordFile(text, origin));
  nlohmann::json j;
  StreamedRecords records;
  ParseProfileStreamed(text, &j, &records);
  return FromDocument(j, std::move(records), origin);
}

namespace {
// An istream over bytes that stay where they are (a mapped file), served a window at a time so
// that what was read can be released (the file's pages need not stay resident).
class ViewBuf : public std::streambuf {
 public:
  ViewBuf(std::string_view v, const std::function<void(size_t)>& release)
      : v_(v), release_(release) {}

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (pos_ >= v_.size()) return traits_type::eof();
    if (release_ && pos_ > 0) release_(pos_);
    constexpr size_t kWindow = size_t{1} << 20;
    const size_t n = std::min(kWindow, v_.size() - pos_);
    char* b = const_cast<char*>(v_.data()) + pos_;
    setg(b, b, b + n);
    pos_ += n;
    return traits_type::to_int_type(*b);
  }

 private:
  std::string_view v_;
  const std::function<void(size_t)>& release_;
  size_t pos_ = 0;
};
}  // namespace

StatusOr<Profile> FromJsonBytes(std::string_view text, const std::string& origin,
                                const std::function<void(size_t)>& release) {
  OPSCOPE_RETURN_IF_ERROR(NotARecordFile(text.substr(0, 6), origin));
  ViewBuf buf(text, release);
  std::istream in(&buf);
  nlohmann::json j;
  StreamedRecords records;
  ParseProfileStreamed(in, &j, &records);
  return FromDocument(j, std::move(records), origin);
}

StatusOr<Profile> FromJsonStringWholeTree(const std::string& text, const std::string& origin) {
  OPSCOPE_RETURN_IF_ERROR(NotARecordFile(text, origin));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return FromDocument(j, StreamedRecords(), origin);
}

Status SaveProfile(const Profile& p, const std::string& path) {
  // Streamed to the file (a 1 GB trace's import writes hundreds of MB of records), then renamed
  // into place.
  return WriteFileAtomicStreamed(path, [&](std::ostream& out) {
    StreamJson(p, 1, [&](std::string_view s) {
      out.write(s.data(), static_cast<std::streamsize>(s.size()));
    });
  });
}

StatusOr<Profile> LoadProfile(const std::string& path) {
  // Parsed as it is read (profile_stream.cc): neither the text nor its whole document tree is
  // held. The checks and messages are ReadFile's.
  {
    // A FIFO or device would block the open below or never end: refuse it first.
    OPSCOPE_ASSIGN_OR_RETURN(int fd, OpenRegularFile(path));
    ::close(fd);
  }
  std::ifstream in;
  std::vector<char> buffer(1 << 20);
  in.rdbuf()->pubsetbuf(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  in.open(path, std::ios::binary);
  if (!in) return PermissionDenied(path + ": cannot open: " + std::strerror(errno));
  char head[6] = {};
  in.read(head, sizeof head);
  OPSCOPE_RETURN_IF_ERROR(NotARecordFile(std::string_view(head, in.gcount()), path));
  in.clear();
  in.seekg(0);
  nlohmann::json j;
  StreamedRecords records;
  ParseProfileStreamed(in, &j, &records);
  if (in.bad()) return DataLoss(path + ": read error");
  return FromDocument(j, std::move(records), path);
}

}  // namespace opscope::profile
