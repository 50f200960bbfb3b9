// The binary trace the CUPTI tracer writes and the decoder reads.
//
// The tracer (a shared library inside someone else's CUDA program) must be cheap and must never
// fail loudly, so it writes compact fixed-layout records as they arrive and does no analysis:
// correlation, NVTX attribution, demangling and statistics all happen later in opscope itself
// (gpu/decoder.h). This header is the whole contract between the two sides; it depends on
// nothing (no CUPTI, no libstdc++ containers) so the tracer, the decoder and the tests that
// forge synthetic traces all use the same definitions.
//
// Layout: a FileHeader, then records, each a RecordHeader {type, payload size} followed by the
// payload. Payloads are the packed structs below in the writer's native byte order (the file
// never leaves the machine that wrote it before it is decoded). A reader skips record types it
// does not know and reads only the prefix it knows of a longer payload, so fields can be added
// at the end of a struct. Strings (kernel names, API names, NVTX messages) are interned: a
// kString record defines id -> bytes once, later records refer to the id (0 = no string).
// A trace that ends without a kEnd record was cut short (the program was killed, or crashed in
// a way no handler could catch); everything before the cut is still valid.
//
// Timestamps: the tracer asks CUPTI to take every timestamp from CLOCK_MONOTONIC (through
// cuptiActivityRegisterTimestampCallback) and takes its own NVTX timestamps from the same clock,
// so GPU, API and NVTX times are on opscope's timeline already. If CUPTI refused the callback,
// the kClock records carry (monotonic, cupti) pairs and the decoder shifts CUPTI's times.
#pragma once

#include <cstdint>
#include <cstring>

namespace opscope::gpu::trace {

inline constexpr char kMagic[8] = {'O', 'P', 'S', 'G', 'P', 'U', 'T', '1'};
// Version 2 added the kernel-metrics records (kMetricsConfig, kKernelMetrics). The decoder
// reads every version from kOldestVersion to kVersion: a version-1 trace simply has no metrics.
inline constexpr uint32_t kVersion = 2;
inline constexpr uint32_t kOldestVersion = 1;

// Environment variable naming the folder where each traced process writes gpu-<pid>.trace.
inline constexpr const char kOutDirEnv[] = "OPSCOPE_GPU_OUT";
// Set to "1" by `opscope gpu --metrics`: the tracer also collects per-kernel throughput metrics
// with CUPTI's range profiler (kernel replay: every kernel runs once per pass).
inline constexpr const char kMetricsEnv[] = "OPSCOPE_GPU_METRICS";

#pragma pack(push, 1)

struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_size;  // sizeof(FileHeader) when written
  int32_t pid;
  uint32_t flags;    // reserved, 0
  int64_t start_ns;  // CLOCK_MONOTONIC when the tracer started
};

enum RecordType : uint16_t {
  kString = 1,
  kClock = 2,
  kDevice = 3,
  kKernel = 4,
  kMemcpy = 5,
  kMemset = 6,
  kApi = 7,
  kSync = 8,
  kNvtxPush = 9,
  kNvtxPop = 10,
  kNvtxStart = 11,
  kNvtxEnd = 12,
  kNvtxMark = 13,
  kThreadName = 14,
  kDropped = 15,
  kMessage = 16,
  kEnd = 17,
  kCopyContent = 18,
  kMetricsConfig = 19,
  kKernelMetrics = 20,
};

struct RecordHeader {
  uint16_t type;
  uint16_t reserved;
  uint32_t size;  // payload bytes that follow
};

// Followed by `length` bytes (no terminator).
struct StringRecord {
  uint32_t id;
  uint32_t length;
};

struct ClockRecord {
  int64_t monotonic_ns;
  int64_t cupti_ns;
  uint32_t cupti_is_monotonic;  // 1 when CUPTI accepted our CLOCK_MONOTONIC callback
  uint32_t reserved;
};

struct DeviceRecord {
  uint32_t id;
  uint32_t name;  // string id
  uint32_t cc_major, cc_minor;
  uint32_t sm_count;
  uint32_t max_warps_per_sm, max_blocks_per_sm;
  uint32_t max_registers_per_sm, max_shared_per_sm;
  uint32_t max_registers_per_block, max_shared_per_block, max_threads_per_block;
  uint32_t warp_size;
  uint32_t core_clock_khz;
  uint64_t global_memory_bandwidth_kbps;  // KB/s as CUPTI reports it
  uint64_t global_memory_bytes;
};

struct KernelRecord {
  int64_t start_ns, end_ns;
  uint32_t device, context, stream, correlation;
  int32_t grid[3], block[3];
  uint32_t registers_per_thread;
  int32_t static_shared_bytes, dynamic_shared_bytes;
  uint32_t local_bytes_per_thread;
  uint32_t name;  // string id (mangled, as CUPTI reports it)
  uint32_t graph_id;
};

// copy_kind / src_kind / dst_kind use CUPTI's numbering (CUpti_ActivityMemcpyKind and
// CUpti_ActivityMemoryKind), mirrored here so the decoder needs no CUPTI header.
enum MemcpyKind : uint8_t {
  kCopyUnknown = 0,
  kHtoD = 1,
  kDtoH = 2,
  kHtoA = 3,
  kAtoH = 4,
  kAtoA = 5,
  kAtoD = 6,
  kDtoA = 7,
  kDtoD = 8,
  kHtoH = 9,
  kPtoP = 10,
};
enum MemoryKind : uint8_t {
  kMemUnknown = 0,
  kMemPageable = 1,
  kMemPinned = 2,
  kMemDevice = 3,
  kMemArray = 4,
  kMemManaged = 5,
  kMemDeviceStatic = 6,
  kMemManagedStatic = 7,
};

struct MemcpyRecord {
  int64_t start_ns, end_ns;
  uint64_t bytes;
  uint32_t device, context, stream, correlation, runtime_correlation;
  uint8_t copy_kind, src_kind, dst_kind, async;
};

struct MemsetRecord {
  int64_t start_ns, end_ns;
  uint64_t bytes;
  uint32_t device, context, stream, correlation;
  uint16_t memory_kind, async;
};

enum ApiDomain : uint8_t { kDriverApi = 1, kRuntimeApi = 2 };

struct ApiRecord {
  int64_t start_ns, end_ns;
  uint32_t tid;  // OS thread id (gettid)
  uint32_t correlation;
  uint32_t cbid;
  uint32_t name;  // string id
  uint32_t return_value;
  uint8_t domain;  // ApiDomain
  uint8_t reserved[3];
};

// CUpti_ActivitySynchronizationType numbering.
enum SyncType : uint32_t {
  kSyncUnknown = 0,
  kEventSynchronize = 1,
  kStreamWaitEvent = 2,
  kStreamSynchronize = 3,
  kContextSynchronize = 4,
};

struct SyncRecord {
  int64_t start_ns, end_ns;
  uint32_t type;         // SyncType
  uint32_t correlation;  // of the API call that synchronized (gives the thread)
  uint32_t context, stream;
};

struct NvtxPushRecord {
  int64_t ts_ns;
  uint32_t tid;
  uint32_t name;    // string id (0 when the message was not a string)
  uint32_t domain;  // string id of the domain name, 0 for the default domain
  uint32_t reserved;
};

struct NvtxPopRecord {
  int64_t ts_ns;
  uint32_t tid;
  uint32_t domain;
};

// Start/end ranges may end on another thread; `id` pairs them.
struct NvtxStartRecord {
  int64_t ts_ns;
  uint64_t id;
  uint32_t tid;
  uint32_t name;
  uint32_t domain;
  uint32_t reserved;
};

struct NvtxEndRecord {
  int64_t ts_ns;
  uint64_t id;
  uint32_t tid;
  uint32_t reserved;
};

struct NvtxMarkRecord {
  int64_t ts_ns;
  uint32_t tid;
  uint32_t name;
  uint32_t domain;
  uint32_t reserved;
};

struct ThreadNameRecord {
  uint32_t tid;
  uint32_t name;
};

enum DropSource : uint32_t { kDropCupti = 1, kDropTracer = 2 };

// Records lost so far from one source (CUPTI's buffers, or the tracer's own writes that failed).
// Counts are cumulative: the decoder keeps the last value per source.
struct DroppedRecord {
  uint64_t count;
  uint32_t source;
  uint32_t reserved;
};

enum MessageLevel : uint32_t { kInfo = 0, kWarning = 1, kError = 2 };

// Something the tracer wants the user to know ("cuptiActivityEnable(DRIVER) failed: ...").
struct MessageRecord {
  uint32_t level;
  uint32_t text;  // string id
};

// A fingerprint of the host bytes a cudaMemcpy*(HostToDevice) call was about to copy, taken at
// the call (CUPTI callback API), so that "the same copy every iteration" can be told apart from
// "a copy of the same size whose content changes" (an input). Copies up to kFullHashBytes are
// hashed whole; larger ones by kSampleBlocks evenly spaced blocks (`sampled`).
inline constexpr uint64_t kFullHashBytes = 1 << 20;
inline constexpr uint32_t kSampleBlocks = 256;
inline constexpr uint32_t kSampleBlockBytes = 4096;
inline constexpr uint64_t kMinHashedCopyBytes = 64 * 1024;

struct CopyContentRecord {
  uint32_t correlation;  // of the runtime API call (the memcpy's runtime_correlation)
  uint32_t sampled;      // 1 when only sample blocks were hashed
  uint64_t bytes;
  uint64_t hash;  // 0 when the source could not be read
};

// Per-kernel metrics (`opscope gpu --metrics`). The tracer profiles each kernel launch as one
// range of CUPTI's range profiler (auto range, kernel replay) and writes one kKernelMetrics
// record per range, joined to its launch by the driver API correlation id (the id the kernel's
// activity record carries). A kMetricsConfig record precedes them, once per profiled context.
// Values are what CUPTI evaluates (NaN for a metric it could not evaluate).
enum MetricsReplay : uint32_t { kReplayKernel = 1 };

struct MetricsConfigRecord {
  uint32_t device;
  uint32_t passes;      // replay passes per kernel the metric set needs
  uint32_t replay;      // MetricsReplay
  uint32_t max_ranges;  // ranges collected before the tracer decodes and restarts
  uint32_t chip;        // string id of CUPTI's chip name ("GH100")
  uint32_t reserved;
};

struct KernelMetricsRecord {
  uint32_t correlation;  // of the launching driver API call; 0 = could not be joined
  uint32_t range_name;   // string id of CUPTI's range name (as CUPTI reports it)
  uint32_t range_index;  // index of the range within its collection
  uint32_t device;
  double sm_throughput_pct;      // sm__throughput.avg.pct_of_peak_sustained_elapsed
  double memory_throughput_pct;  // gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed
  double dram_throughput_pct;    // dram__throughput.avg.pct_of_peak_sustained_elapsed
  double achieved_occupancy_pct;  // sm__warps_active.avg.pct_of_peak_sustained_active
  double duration_ns;             // gpu__time_duration.sum (the kernel alone, under replay)
};

enum EndReason : uint32_t { kEndExit = 0, kEndSignal = 1 };

struct EndRecord {
  int64_t ts_ns;
  uint32_t reason;  // EndReason
  int32_t signal;   // for kEndSignal
};

#pragma pack(pop)

// Appends one record to a byte buffer; Buffer needs size() and resize() or the equivalent
// Append(const void*, size_t). Used by the tests that forge traces; the tracer has its own
// lock-protected writer with the same framing.
template <typename Sink, typename Payload>
void AppendRecord(Sink& sink, RecordType type, const Payload& payload, const void* tail = nullptr,
                  uint32_t tail_size = 0) {
  RecordHeader h{static_cast<uint16_t>(type), 0,
                 static_cast<uint32_t>(sizeof(Payload) + tail_size)};
  sink.append(reinterpret_cast<const char*>(&h), sizeof h);
  sink.append(reinterpret_cast<const char*>(&payload), sizeof payload);
  if (tail_size) sink.append(static_cast<const char*>(tail), tail_size);
}

}  // namespace opscope::gpu::trace
