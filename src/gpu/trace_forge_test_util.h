// Forging tracer files for tests: the same framing and structs the tracer writes
// (gpu/trace_format.h), built in memory.
#pragma once

#include <cstring>
#include <map>
#include <string>

#include "gpu/trace_format.h"

namespace opscope::gpu::testing {

class TraceForge {
 public:
  explicit TraceForge(int32_t pid = 4242) {
    trace::FileHeader h{};
    memcpy(h.magic, trace::kMagic, sizeof h.magic);
    h.version = trace::kVersion;
    h.header_size = sizeof h;
    h.pid = pid;
    h.start_ns = 1000;
    bytes_.append(reinterpret_cast<const char*>(&h), sizeof h);
  }

  uint32_t Str(const std::string& s) {
    auto it = ids_.find(s);
    if (it != ids_.end()) return it->second;
    uint32_t id = static_cast<uint32_t>(ids_.size() + 1);
    ids_[s] = id;
    trace::StringRecord r{id, static_cast<uint32_t>(s.size())};
    trace::AppendRecord(bytes_, trace::kString, r, s.data(), static_cast<uint32_t>(s.size()));
    return id;
  }

  template <typename T>
  void Add(trace::RecordType type, const T& payload) { trace::AppendRecord(bytes_, type, payload); }

  void Kernel(const std::string& name, int64_t start, int64_t end, uint32_t corr, uint32_t stream = 7,
              int block = 256, uint32_t regs = 32, int32_t smem = 0) {
    trace::KernelRecord k{};
    k.start_ns = start;
    k.end_ns = end;
    k.stream = stream;
    k.correlation = corr;
    k.grid[0] = 64; k.grid[1] = 1; k.grid[2] = 1;
    k.block[0] = block; k.block[1] = 1; k.block[2] = 1;
    k.registers_per_thread = regs;
    k.static_shared_bytes = smem;
    k.name = Str(name);
    Add(trace::kKernel, k);
  }
  void Api(const std::string& name, int64_t start, int64_t end, uint32_t tid, uint32_t corr,
           uint8_t domain = trace::kRuntimeApi) {
    trace::ApiRecord a{};
    a.start_ns = start;
    a.end_ns = end;
    a.tid = tid;
    a.correlation = corr;
    a.name = Str(name);
    a.domain = domain;
    Add(trace::kApi, a);
  }
  void Memcpy(uint8_t kind, uint64_t bytes, int64_t start, int64_t end, uint32_t corr, bool pageable,
              bool async = false) {
    trace::MemcpyRecord m{};
    m.start_ns = start;
    m.end_ns = end;
    m.bytes = bytes;
    m.correlation = corr;
    m.copy_kind = kind;
    uint8_t host = pageable ? trace::kMemPageable : trace::kMemPinned;
    m.src_kind = kind == trace::kHtoD ? host : uint8_t{trace::kMemDevice};
    m.dst_kind = kind == trace::kDtoH ? host : uint8_t{trace::kMemDevice};
    m.async = async ? 1 : 0;
    Add(trace::kMemcpy, m);
  }
  void Content(uint32_t corr, uint64_t bytes, uint64_t hash, bool sampled = false) {
    Add(trace::kCopyContent, trace::CopyContentRecord{corr, sampled ? 1u : 0u, bytes, hash});
  }
  void Push(const std::string& name, int64_t ts, uint32_t tid, const std::string& domain = "") {
    trace::NvtxPushRecord r{ts, tid, Str(name), domain.empty() ? 0 : Str(domain), 0};
    Add(trace::kNvtxPush, r);
  }
  void Pop(int64_t ts, uint32_t tid, const std::string& domain = "") {
    trace::NvtxPopRecord r{ts, tid, domain.empty() ? 0 : Str(domain)};
    Add(trace::kNvtxPop, r);
  }
  void Sync(uint32_t type, int64_t start, int64_t end, uint32_t corr) {
    trace::SyncRecord r{start, end, type, corr, 1, 7};
    Add(trace::kSync, r);
  }
  void Device(uint32_t major, uint32_t minor) {
    trace::DeviceRecord d{};
    d.name = Str("Test GPU");
    d.cc_major = major;
    d.cc_minor = minor;
    d.sm_count = 16;
    d.warp_size = 32;
    Add(trace::kDevice, d);
  }
  void Dropped(uint64_t n, uint32_t source = trace::kDropCupti) { Add(trace::kDropped, trace::DroppedRecord{n, source, 0}); }
  void End(int signal = 0) {
    trace::EndRecord e{999999999, signal ? uint32_t{trace::kEndSignal} : uint32_t{trace::kEndExit}, signal};
    Add(trace::kEnd, e);
  }

  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
  std::map<std::string, uint32_t> ids_;
};

}  // namespace opscope::gpu::testing
