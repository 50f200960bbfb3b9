#include "gpu/decoder.h"

#include <algorithm>
#include <cstring>

namespace opscope::gpu {
namespace {

// Copies the known prefix of a payload; a payload shorter than the struct is corrupt.
template <typename T>
bool Read(std::string_view payload, T* out) {
  if (payload.size() < sizeof(T)) return false;
  memcpy(out, payload.data(), sizeof(T));
  return true;
}

}  // namespace

StatusOr<DecodedTrace> DecodeTrace(std::string_view bytes, const std::string& origin) {
  trace::FileHeader header;
  if (bytes.size() < sizeof header)
    return DataLoss(origin + ": not an opscope GPU trace (" + std::to_string(bytes.size()) +
                    " bytes, shorter than the header)");
  memcpy(&header, bytes.data(), sizeof header);
  if (memcmp(header.magic, trace::kMagic, sizeof header.magic) != 0)
    return DataLoss(origin + ": not an opscope GPU trace (bad magic)");
  if (header.version < trace::kOldestVersion || header.version > trace::kVersion)
    return Unsupported(origin + ": GPU trace version " + std::to_string(header.version) +
                       ", this opscope reads versions " + std::to_string(trace::kOldestVersion) +
                       " to " + std::to_string(trace::kVersion) +
                       "; use the tracer library built with this opscope");
  if (header.header_size < sizeof header || header.header_size > bytes.size())
    return DataLoss(origin + ": corrupt GPU trace header");

  DecodedTrace t;
  t.version = header.version;
  t.pid = header.pid;
  t.start_ns = header.start_ns;
  std::unordered_map<uint32_t, std::string> strings;
  auto str = [&](uint32_t id) -> std::string {
    if (id == 0) return {};
    auto it = strings.find(id);
    if (it != strings.end()) return it->second;
    std::string unknown = "?";
    unknown += std::to_string(id);
    return unknown;
  };

  size_t pos = header.header_size;
  auto stop = [&](const std::string& why) {
    t.problem = origin + ": " + why + " at byte " + std::to_string(pos) + " after " +
                std::to_string(t.records) + " records; the rest of the trace is ignored";
  };
  while (pos < bytes.size()) {
    if (bytes.size() - pos < sizeof(trace::RecordHeader)) {
      t.truncated = true;
      stop("trace cut short");
      break;
    }
    trace::RecordHeader rh;
    memcpy(&rh, bytes.data() + pos, sizeof rh);
    if (rh.size > bytes.size() - pos - sizeof rh) {
      t.truncated = true;
      stop("trace cut short inside a record");
      break;
    }
    std::string_view payload = bytes.substr(pos + sizeof rh, rh.size);
    bool ok = true;
    switch (rh.type) {
      case trace::kString: {
        trace::StringRecord s;
        ok = Read(payload, &s) && payload.size() - sizeof s >= s.length;
        if (ok) strings[s.id] = std::string(payload.substr(sizeof s, s.length));
        break;
      }
      case trace::kClock: {
        trace::ClockRecord c;
        if ((ok = Read(payload, &c))) t.clocks.push_back(c);
        break;
      }
      case trace::kDevice: {
        trace::DeviceRecord d;
        if ((ok = Read(payload, &d))) {
          t.devices.push_back(d);
          t.device_names.push_back(str(d.name));
        }
        break;
      }
      case trace::kKernel: {
        trace::KernelRecord k;
        if ((ok = Read(payload, &k))) {
          t.kernels.push_back(k);
          t.kernel_names.push_back(str(k.name));
        }
        break;
      }
      case trace::kMemcpy: {
        trace::MemcpyRecord m;
        if ((ok = Read(payload, &m))) t.memcpys.push_back(m);
        break;
      }
      case trace::kMemset: {
        trace::MemsetRecord m;
        if ((ok = Read(payload, &m))) t.memsets.push_back(m);
        break;
      }
      case trace::kApi: {
        trace::ApiRecord a;
        if ((ok = Read(payload, &a))) {
          t.api_calls.push_back(a);
          t.api_names.push_back(str(a.name));
        }
        break;
      }
      case trace::kSync: {
        trace::SyncRecord s;
        if ((ok = Read(payload, &s))) t.syncs.push_back(s);
        break;
      }
      case trace::kCopyContent: {
        trace::CopyContentRecord c;
        if ((ok = Read(payload, &c))) t.copy_contents.push_back(c);
        break;
      }
      case trace::kMetricsConfig: {
        trace::MetricsConfigRecord c;
        if ((ok = Read(payload, &c))) {
          t.metrics_configs.push_back(c);
          t.metrics_chips.push_back(str(c.chip));
        }
        break;
      }
      case trace::kKernelMetrics: {
        trace::KernelMetricsRecord m;
        if ((ok = Read(payload, &m))) {
          t.kernel_metrics.push_back(m);
          t.kernel_metrics_ranges.push_back(str(m.range_name));
        }
        break;
      }
      case trace::kNvtxPush: {
        trace::NvtxPushRecord r;
        if ((ok = Read(payload, &r)))
          t.nvtx.push_back({NvtxEvent::kPush, r.ts_ns, r.tid, 0, str(r.name), str(r.domain)});
        break;
      }
      case trace::kNvtxPop: {
        trace::NvtxPopRecord r;
        if ((ok = Read(payload, &r)))
          t.nvtx.push_back({NvtxEvent::kPop, r.ts_ns, r.tid, 0, {}, str(r.domain)});
        break;
      }
      case trace::kNvtxStart: {
        trace::NvtxStartRecord r;
        if ((ok = Read(payload, &r)))
          t.nvtx.push_back({NvtxEvent::kStart, r.ts_ns, r.tid, r.id, str(r.name), str(r.domain)});
        break;
      }
      case trace::kNvtxEnd: {
        trace::NvtxEndRecord r;
        if ((ok = Read(payload, &r)))
          t.nvtx.push_back({NvtxEvent::kEnd, r.ts_ns, r.tid, r.id, {}, {}});
        break;
      }
      case trace::kNvtxMark: {
        trace::NvtxMarkRecord r;
        if ((ok = Read(payload, &r)))
          t.nvtx.push_back({NvtxEvent::kMark, r.ts_ns, r.tid, 0, str(r.name), str(r.domain)});
        break;
      }
      case trace::kThreadName: {
        trace::ThreadNameRecord r;
        if ((ok = Read(payload, &r))) t.thread_names[r.tid] = str(r.name);
        break;
      }
      case trace::kDropped: {
        trace::DroppedRecord r;
        if ((ok = Read(payload, &r))) {
          if (r.source == trace::kDropCupti) t.cupti_dropped = std::max(t.cupti_dropped, r.count);
          if (r.source == trace::kDropTracer)
            t.tracer_dropped = std::max(t.tracer_dropped, r.count);
        }
        break;
      }
      case trace::kMessage: {
        trace::MessageRecord r;
        if ((ok = Read(payload, &r))) t.messages.push_back(str(r.text));
        break;
      }
      case trace::kEnd: {
        trace::EndRecord r;
        if ((ok = Read(payload, &r))) {
          t.ended = true;
          t.end_signal = r.reason == trace::kEndSignal ? r.signal : 0;
        }
        break;
      }
      default:
        break;  // a newer tracer's record: skip it
    }
    if (!ok) {
      stop("corrupt record (type " + std::to_string(rh.type) + ", " + std::to_string(rh.size) +
           " bytes)");
      break;
    }
    pos += sizeof rh + rh.size;
    ++t.records;
  }
  return t;
}

}  // namespace opscope::gpu
