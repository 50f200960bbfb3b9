// Reading one tracer file (gpu/trace_format.h) back into plain structs with strings resolved.
//
// The decoder trusts nothing: a file may be cut short (the program was killed mid-write), come
// from a newer tracer (unknown record types are skipped, longer payloads read by prefix), or be
// garbage. A bad header is an error; damage after a valid header keeps everything decoded up
// to it and says where it stopped (`truncated`, `problem`), because the start of a crashed
// program's trace is exactly what its user needs. Nothing is interpreted here; building the
// Profile (correlation, NVTX nesting, attribution) is gpu/builder.h's job.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "gpu/trace_format.h"

namespace opscope::gpu {

struct NvtxEvent {
  enum Kind { kPush, kPop, kStart, kEnd, kMark } kind = kPush;
  int64_t ts_ns = 0;
  uint32_t tid = 0;
  uint64_t id = 0;     // start/end pairing
  std::string name;    // push/start/mark
  std::string domain;  // "" = default domain (push/pop/start/mark)
};

struct DecodedTrace {
  uint32_t version = 0;
  int32_t pid = 0;
  int64_t start_ns = 0;
  std::vector<trace::DeviceRecord> devices;
  std::vector<std::string> device_names;  // parallel to devices
  std::vector<trace::KernelRecord> kernels;
  std::vector<std::string> kernel_names;  // parallel to kernels, as recorded (mangled)
  std::vector<trace::MemcpyRecord> memcpys;
  std::vector<trace::MemsetRecord> memsets;
  std::vector<trace::ApiRecord> api_calls;
  std::vector<std::string> api_names;  // parallel to api_calls
  std::vector<trace::SyncRecord> syncs;
  std::vector<trace::CopyContentRecord> copy_contents;
  std::vector<trace::ClockRecord> clocks;
  std::vector<trace::MetricsConfigRecord> metrics_configs;
  std::vector<std::string> metrics_chips;  // parallel to metrics_configs
  std::vector<trace::KernelMetricsRecord> kernel_metrics;
  std::vector<std::string> kernel_metrics_ranges;  // parallel to kernel_metrics
  std::vector<NvtxEvent> nvtx;                     // in file order
  std::unordered_map<uint32_t, std::string> thread_names;
  std::vector<std::string> messages;  // the tracer's warnings, in words
  uint64_t cupti_dropped = 0;
  uint64_t tracer_dropped = 0;
  bool ended = false;  // the end record was seen
  int32_t end_signal = 0;
  bool truncated = false;  // bytes after the last whole record were dropped
  std::string problem;     // why decoding stopped early, "" if it did not
  size_t records = 0;
};

// `origin` names the file in messages.
StatusOr<DecodedTrace> DecodeTrace(std::string_view bytes, const std::string& origin);

}  // namespace opscope::gpu
