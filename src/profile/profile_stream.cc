// Reading a profile without the document tree of its record arrays (profile_json.h,
// ParseProfileStreamed).
//
// nlohmann's DOM costs about 2.5 KB per GPU kernel record and 40 bytes per number, so the 615 MB
// profile of a 1 GB PyTorch trace took 3.4 GB to load (docs/benchmarks.md). Here nlohmann's SAX
// parser drives a tree builder that makes the same tree nlohmann::json::parse would (same value
// types, a repeated key replaces the earlier value), except that the elements of the record
// arrays (kRecordArrays) are built one at a time, converted with the same from_json into their
// structs, and dropped. The tree keeps those arrays empty, so from_json(Profile) on it reads
// every other field as before; the records are then moved in.
//
// Errors stay the same, message and order: an element whose conversion throws is kept (alone)
// in the tree's array, and the rest of that array is skipped, so from_json(Profile) meets it where
// it would have met it in the whole tree, and throws the same exception, unless a field it reads
// first throws, as it would have.
#include <istream>
#include <string>
#include <vector>

#include "profile/profile_json.h"

namespace opscope::profile {
namespace {

using json = nlohmann::json;

enum class Slot {
  kNone,
  kOps,
  kOpEvents,
  kRanges,
  kSamples,
  kKernels,
  kMemcpys,
  kMemsets,
  kApiCalls,
  kSyncs
};

// The record arrays read one element at a time: top-level keys, the "samples" key of the
// top-level "samples" object, and keys of the top-level "gpu" object.
Slot TopLevelSlot(const std::string& key) {
  if (key == "ops") return Slot::kOps;
  if (key == "op_events") return Slot::kOpEvents;
  if (key == "ranges") return Slot::kRanges;
  return Slot::kNone;
}
Slot GpuSlot(const std::string& key) {
  if (key == "kernels") return Slot::kKernels;
  if (key == "memcpys") return Slot::kMemcpys;
  if (key == "memsets") return Slot::kMemsets;
  if (key == "api_calls") return Slot::kApiCalls;
  if (key == "syncs") return Slot::kSyncs;
  return Slot::kNone;
}

class StreamingBuilder {
 public:
  explicit StreamingBuilder(StreamedRecords* out) : out_(out) {}
  json& Root() { return root_; }

  // nlohmann's SAX interface.
  bool null() { return Put(json(nullptr)); }
  bool boolean(bool v) { return Put(json(v)); }
  bool number_integer(json::number_integer_t v) { return Put(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return Put(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t&) { return Put(json(v)); }
  bool string(json::string_t& v) { return Put(json(std::move(v))); }
  bool binary(json::binary_t& v) { return Put(json::binary(std::move(v))); }
  bool start_object(std::size_t) { return Open(json::value_t::object); }
  bool start_array(std::size_t) { return Open(json::value_t::array); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool key(json::string_t& k) {
    key_ = std::move(k);
    // A repeated key replaces what the earlier one held: its records too.
    if (streaming_ < 0 && stack_.size() == 1 && stack_[0].value->is_object()) {
      if (key_ == "gpu")
        for (Slot s :
             {Slot::kKernels, Slot::kMemcpys, Slot::kMemsets, Slot::kApiCalls, Slot::kSyncs})
          Reset(s);
      else if (key_ == "samples")
        Reset(Slot::kSamples);
      else if (Slot s = TopLevelSlot(key_); s != Slot::kNone)
        Reset(s);
    } else if (streaming_ < 0 && InGpuObject()) {
      if (Slot s = GpuSlot(key_); s != Slot::kNone) Reset(s);
    } else if (streaming_ < 0 && InSamplesObject() && key_ == "samples") {
      Reset(Slot::kSamples);
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }

 private:
  struct Level {
    json* value;
    std::string key;  // the key it has in its parent object ("" in an array)
  };

  // The top-level "gpu" object is the innermost open value.
  bool InGpuObject() const {
    return stack_.size() == 2 && stack_[0].value->is_object() && stack_[1].key == "gpu" &&
           stack_[1].value->is_object();
  }
  // The top-level "samples" object is the innermost open value.
  bool InSamplesObject() const {
    return stack_.size() == 2 && stack_[0].value->is_object() && stack_[1].key == "samples" &&
           stack_[1].value->is_object();
  }
  bool AtStreamedArray() const {
    return streaming_ >= 0 && static_cast<size_t>(streaming_) + 1 == stack_.size();
  }

  // Where a new value goes: the root, the open array, the open object under the last key, or,
  // directly inside a streamed array, the element being built.
  json* Place(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    if (AtStreamedArray()) {
      element_ = std::move(v);
      return &element_;
    }
    json* top = stack_.back().value;
    if (top->is_array()) {
      top->push_back(std::move(v));
      return &top->back();
    }
    json& slot = (*top)[key_];
    slot = std::move(v);
    return &slot;
  }
  bool Put(json&& v) {
    const bool element = AtStreamedArray();
    Place(std::move(v));
    if (element) Finish();
    return true;
  }
  bool Open(json::value_t type) {
    const bool in_object =
        !stack_.empty() && !AtStreamedArray() && stack_.back().value->is_object();
    const std::string key = in_object ? key_ : std::string();
    Slot slot = Slot::kNone;
    if (type == json::value_t::array && in_object && streaming_ < 0) {
      if (stack_.size() == 1)
        slot = TopLevelSlot(key);
      else if (InGpuObject())
        slot = GpuSlot(key);
      else if (InSamplesObject() && key == "samples")
        slot = Slot::kSamples;
    }
    json* v = Place(json(type));
    stack_.push_back({v, key});
    if (slot != Slot::kNone) {
      streaming_ = static_cast<int>(stack_.size()) - 1;
      slot_ = slot;
    }
    return true;
  }
  bool Close() {
    const bool closing_streamed =
        streaming_ >= 0 && static_cast<size_t>(streaming_) + 1 == stack_.size();
    stack_.pop_back();
    if (closing_streamed)
      streaming_ = -1;
    else if (AtStreamedArray())
      Finish();  // an element (object or array) of a streamed array is complete
    return true;
  }

  bool& Failed(Slot s) { return failed_[static_cast<int>(s)]; }
  void Reset(Slot s) {
    Failed(s) = false;
    switch (s) {
      case Slot::kOps:
        out_->ops.clear();
        break;
      case Slot::kOpEvents:
        out_->op_events.clear();
        break;
      case Slot::kRanges:
        out_->ranges.clear();
        break;
      case Slot::kSamples:
        out_->samples.clear();
        break;
      case Slot::kKernels:
        out_->gpu.kernels.clear();
        break;
      case Slot::kMemcpys:
        out_->gpu.memcpys.clear();
        break;
      case Slot::kMemsets:
        out_->gpu.memsets.clear();
        break;
      case Slot::kApiCalls:
        out_->gpu.api_calls.clear();
        break;
      case Slot::kSyncs:
        out_->gpu.syncs.clear();
        break;
      case Slot::kNone:
        break;
    }
  }
  void Append(const json& e) {
    switch (slot_) {
      case Slot::kOps:
        out_->ops.push_back(e.get<OpRecord>());
        break;
      case Slot::kOpEvents:
        out_->op_events.push_back(e.get<OpEvent>());
        break;
      case Slot::kRanges:
        out_->ranges.push_back(e.get<Range>());
        break;
      case Slot::kSamples:
        AppendSample(e, &out_->samples);
        break;
      case Slot::kKernels:
        AppendGpuRecord("kernels", e, &out_->gpu);
        break;
      case Slot::kMemcpys:
        AppendGpuRecord("memcpys", e, &out_->gpu);
        break;
      case Slot::kMemsets:
        AppendGpuRecord("memsets", e, &out_->gpu);
        break;
      case Slot::kApiCalls:
        AppendGpuRecord("api_calls", e, &out_->gpu);
        break;
      case Slot::kSyncs:
        AppendGpuRecord("syncs", e, &out_->gpu);
        break;
      case Slot::kNone:
        break;
    }
  }
  // One element of the streamed array is complete: into its struct, or, the first that does not
  // convert, into the tree (see the top of the file).
  void Finish() {
    if (!Failed(slot_)) {
      try {
        Append(element_);
      } catch (const json::exception&) {
        Failed(slot_) = true;
        stack_[static_cast<size_t>(streaming_)].value->push_back(std::move(element_));
      }
    }
    element_ = json();
  }

  StreamedRecords* out_;
  json root_;
  std::vector<Level> stack_;
  std::string key_;
  int streaming_ = -1;  // index in stack_ of the streamed array being read, -1 when none
  Slot slot_ = Slot::kNone;
  json element_;
  bool failed_[10] = {};
};

template <typename Input>
bool Parse(Input&& in, json* doc, StreamedRecords* records) {
  *records = StreamedRecords();
  StreamingBuilder b(records);
  const bool ok = json::sax_parse(std::forward<Input>(in), &b);
  *doc = ok ? std::move(b.Root()) : json(json::value_t::discarded);
  return ok;
}

}  // namespace

bool ParseProfileStreamed(const std::string& text, nlohmann::json* doc, StreamedRecords* records) {
  return Parse(text, doc, records);
}
bool ParseProfileStreamed(std::istream& in, nlohmann::json* doc, StreamedRecords* records) {
  return Parse(in, doc, records);
}

void MoveStreamedRecords(StreamedRecords&& records, Profile* p) {
  if (!records.ops.empty()) p->ops = std::move(records.ops);
  if (!records.op_events.empty()) p->op_events = std::move(records.op_events);
  if (!records.ranges.empty()) p->ranges = std::move(records.ranges);
  if (p->samples && !records.samples.empty()) p->samples->samples = std::move(records.samples);
  if (!p->gpu) return;
  GpuSection& g = records.gpu;
  if (!g.kernels.empty()) p->gpu->kernels = std::move(g.kernels);
  if (!g.memcpys.empty()) p->gpu->memcpys = std::move(g.memcpys);
  if (!g.memsets.empty()) p->gpu->memsets = std::move(g.memsets);
  if (!g.api_calls.empty()) p->gpu->api_calls = std::move(g.api_calls);
  if (!g.syncs.empty()) p->gpu->syncs = std::move(g.syncs);
}

}  // namespace opscope::profile
