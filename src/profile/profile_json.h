// nlohmann::json conversions of every Profile section. Internal to profile/ and to layers that
// embed profile pieces in their own JSON (report/). One .cc per section.
#pragma once

#include <functional>
#include <istream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "profile/profile.h"

namespace opscope {
void to_json(nlohmann::json& j, const Stats& s);
void from_json(const nlohmann::json& j, Stats& s);
}  // namespace opscope

namespace opscope::profile {

void to_json(nlohmann::json& j, const Meta& v);
void from_json(const nlohmann::json& j, Meta& v);
void to_json(nlohmann::json& j, const MachineCeilings& v);  // meta.cc
void from_json(const nlohmann::json& j, MachineCeilings& v);
void to_json(nlohmann::json& j, const TargetBuild& v);
void from_json(const nlohmann::json& j, TargetBuild& v);
void to_json(nlohmann::json& j, const ImportProvenance& v);
void from_json(const nlohmann::json& j, ImportProvenance& v);
void to_json(nlohmann::json& j, const E2E& v);
void from_json(const nlohmann::json& j, E2E& v);
void to_json(nlohmann::json& j, const OpRecord& v);
void from_json(const nlohmann::json& j, OpRecord& v);
void to_json(nlohmann::json& j, const OpEvent& v);
void from_json(const nlohmann::json& j, OpEvent& v);
void to_json(nlohmann::json& j, const Overhead& v);
void from_json(const nlohmann::json& j, Overhead& v);
void to_json(nlohmann::json& j, const ClockSample& v);
void to_json(nlohmann::json& j, const Verdicts& v);
void from_json(const nlohmann::json& j, Verdicts& v);
void from_json(const nlohmann::json& j, ClockSample& v);

void to_json(nlohmann::json& j, const StatSection& v);  // stat_json.cc
void from_json(const nlohmann::json& j, StatSection& v);
void to_json(nlohmann::json& j, const SampleSection& v);  // samples_json.cc
void from_json(const nlohmann::json& j, SampleSection& v);
void to_json(nlohmann::json& j, const Range& v);  // ranges_json.cc
void from_json(const nlohmann::json& j, Range& v);
void to_json(nlohmann::json& j, const GpuSection& v);  // gpu_json.cc
void from_json(const nlohmann::json& j, GpuSection& v);
// The big record arrays (ops, op_events, ranges, the samples' samples, the gpu section's kernels,
// memcpys, memsets and api_calls) are left in the document as the string kRecordArraySlot + name,
// (the writer adds a nonce after kRecordArraySlot, so a name cannot pose as a slot), and written
// by a writer of one such array in the text nlohmann's dump would give it (elements
// at `pad` plus one indent; `indent` < 0: compact; record_writer.h). ToJsonString and
// SaveProfile splice the arrays in record by record: a document tree holds about 2.5 KB per
// kernel record and 700 bytes per short sample, the records themselves a tenth of that.
inline constexpr char kRecordArraySlot[] = "\x01opscope-records\x01";
void GpuSectionWithSlots(nlohmann::json& j, const GpuSection& v, const std::string& slot);
void SampleSectionWithSlots(nlohmann::json& j, const SampleSection& v,
                            const std::string& slot);  // samples_json.cc
bool WriteSampleArray(const SampleSection& v, int indent, std::string_view pad,
                      const std::function<void(std::string_view)>& sink);
// Appends one element of the samples' "samples" array, converted as from_json(SampleSection)
// converts it; throws as it throws.
void AppendSample(const nlohmann::json& e, std::vector<Sample>* samples);
bool WriteGpuArray(const GpuSection& v, std::string_view name, int indent, std::string_view pad,
                   const std::function<void(std::string_view)>& sink);
// Appends one element of the gpu record array `name` ("kernels", "memcpys", "memsets",
// "api_calls", "syncs"), converted as from_json(GpuSection) converts it; throws as it throws.
void AppendGpuRecord(std::string_view name, const nlohmann::json& e, GpuSection* v);
void to_json(nlohmann::json& j, const Finding& v);  // findings_json.cc
void from_json(const nlohmann::json& j, Finding& v);

void to_json(nlohmann::json& j, const Profile& p);
void from_json(const nlohmann::json& j, Profile& p);

// The big record arrays of a profile (ops, op_events, ranges, the samples' samples and the gpu
// section's kernels, memcpys, memsets, api_calls, syncs), read one element at a time
// (profile_stream.cc).
struct StreamedRecords {
  std::vector<OpRecord> ops;
  std::vector<OpEvent> op_events;
  std::vector<Range> ranges;
  std::vector<Sample> samples;  // the samples section's "samples"
  GpuSection gpu;               // only its record arrays
};
// Parses a profile's JSON text into `doc`, the tree nlohmann::json::parse would give but with the
// record arrays empty, their elements converted into `records`; an element that does not convert
// stays in `doc`, so from_json(*doc) throws what it would have thrown. False (and `doc` discarded)
// on invalid JSON. Memory: the records and the tree of everything else, not the whole tree.
bool ParseProfileStreamed(const std::string& text, nlohmann::json* doc, StreamedRecords* records);
bool ParseProfileStreamed(std::istream& in, nlohmann::json* doc, StreamedRecords* records);
// After from_json(doc, *p): moves the records into `p`.
void MoveStreamedRecords(StreamedRecords&& records, Profile* p);
// FromJsonString through one nlohmann::json::parse of the whole text: the obviously-correct twin
// the streamed reader is tested against (profile_test, profile_json_fuzz); not for large files.
StatusOr<Profile> FromJsonStringWholeTree(const std::string& text, const std::string& origin);

}  // namespace opscope::profile
