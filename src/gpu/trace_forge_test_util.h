// Forging tracer files for tests: the same framing and structs the tracer writes
// (gpu/trace_format.h), built in memory.
#pragma once

#include <cstddef>
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
  void Add(trace::RecordType type, const T& payload) {
    trace::AppendRecord(bytes_, type, payload);
  }

  void Kernel(const std::string& name, int64_t start, int64_t end, uint32_t corr,
              uint32_t stream = 7, int block = 256, uint32_t regs = 32, int32_t smem = 0) {
    trace::KernelRecord k{};
    k.start_ns = start;
    k.end_ns = end;
    k.stream = stream;
    k.correlation = corr;
    k.grid[0] = 64;
    k.grid[1] = 1;
    k.grid[2] = 1;
    k.block[0] = block;
    k.block[1] = 1;
    k.block[2] = 1;
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
  void Memcpy(uint8_t kind, uint64_t bytes, int64_t start, int64_t end, uint32_t corr,
              bool pageable, bool async = false) {
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
  void MetricsConfig(uint32_t passes, const std::string& chip = "GH100") {
    trace::MetricsConfigRecord c{};
    c.passes = passes;
    c.replay = trace::kReplayKernel;
    c.max_ranges = 64;
    c.chip = Str(chip);
    Add(trace::kMetricsConfig, c);
  }
  // Percentages of peak and the replayed duration, as the tracer writes them (NaN = unknown).
  void KernelMetrics(uint32_t corr, const std::string& range, double sm, double memory, double dram,
                     double occupancy, double duration_ns, uint32_t index = 0) {
    trace::KernelMetricsRecord m{};
    m.correlation = corr;
    m.range_name = range.empty() ? 0 : Str(range);
    m.range_index = index;
    m.sm_throughput_pct = sm;
    m.memory_throughput_pct = memory;
    m.dram_throughput_pct = dram;
    m.achieved_occupancy_pct = occupancy;
    m.duration_ns = duration_ns;
    Add(trace::kKernelMetrics, m);
  }
  // Rewrites the header's version (to forge traces of older or newer tracers).
  void SetVersion(uint32_t version) {
    memcpy(bytes_.data() + offsetof(trace::FileHeader, version), &version, sizeof version);
  }
  void Dropped(uint64_t n, uint32_t source = trace::kDropCupti) {
    Add(trace::kDropped, trace::DroppedRecord{n, source, 0});
  }
  void End(int signal = 0) {
    trace::EndRecord e{999999999, signal ? uint32_t{trace::kEndSignal} : uint32_t{trace::kEndExit},
                       signal};
    Add(trace::kEnd, e);
  }

  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
  std::map<std::string, uint32_t> ids_;
};

inline constexpr const char kWarStoryAttention[] = "_Z11attn_scoresPK6__halfS1_Pfiii";

// Three "infer" iterations of tests/gpu/war_story.cu as `opscope gpu --metrics` records them
// (5 passes): a 1 MiB configuration copy, then an attention-like kernel (memory-bound), a tiled
// GEMM (compute-bound) and a tiny one-block bias kernel (latency-bound, low occupancy), each
// launched in its own NVTX range; kernel activity lasts 5x the replayed duration. The bias
// kernel's DRAM figure is unknown (NaN) and CUPTI numbered its range instead of naming it. The
// values are shaped like Nsight Compute's output for such kernels, not recorded on a GPU.
inline TraceForge ForgeWarStory(uint32_t tid) {
  TraceForge f;
  f.Device(9, 0);
  f.Add(trace::kClock, trace::ClockRecord{1, 1, 1, 0});
  f.MetricsConfig(5);
  uint32_t c = 1;
  for (int it = 0; it < 3; ++it) {
    int64_t b = 1'000'000 + it * 10'000'000;
    f.Push("infer", b, tid);
    f.Push("config_upload", b + 1'000, tid);
    f.Api("cudaMemcpy_v3020", b + 1'000, b + 200'000, tid, c);
    f.Memcpy(trace::kHtoD, 1 << 20, b + 10'000, b + 190'000, c++, /*pageable=*/true);
    f.Pop(b + 200'000, tid);
    struct Launch {
      const char* range;
      const char* kernel;
      int64_t ns;
      int block;
      uint32_t regs;
      int32_t smem;
      double sm, mem, dram, occ;
    };
    const Launch launches[] = {
        {"attention", kWarStoryAttention, 2'000'000, 256, 40, 0, 22.5, 87.0, 85.5, 70.0},
        {"gemm", "_Z11sgemm_tiledPKfS0_Pfiii", 3'000'000, 256, 64, 32768, 82.0, 41.0, 12.0, 46.0},
        {"bias", "_Z10bias_smallPfi", 8'000, 32, 16, 0, 3.0, 4.0, __builtin_nan(""), 9.0},
    };
    int64_t gpu = b + 300'000;
    for (int k = 0; k < 3; ++k) {
      const Launch& l = launches[k];
      int64_t t = b + 210'000 + k * 10'000;
      f.Push(l.range, t, tid);
      f.Api("cudaLaunchKernel_v7000", t + 100, t + 900, tid, c);
      f.Pop(t + 1'000, tid);
      f.Kernel(l.kernel, gpu, gpu + l.ns * 5, c, 7, l.block, l.regs, l.smem);
      f.KernelMetrics(c, k == 2 ? std::to_string(k) : std::string(l.kernel), l.sm, l.mem, l.dram,
                      l.occ, static_cast<double>(l.ns), static_cast<uint32_t>(k));
      gpu += l.ns * 5 + 10'000;
      ++c;
    }
    f.Pop(b + 9'000'000, tid);
  }
  f.End();
  return f;
}

}  // namespace opscope::gpu::testing
