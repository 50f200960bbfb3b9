// CUDA activity through CUPTI's activity API.
//
// libcuda loads the library named by CUDA_INJECTION64_PATH during cuInit and calls its
// InitializeInjection. From there we ask CUPTI for device, kernel, memcpy, memset, runtime and
// driver API and synchronization records, with every timestamp taken from our CLOCK_MONOTONIC
// callback, and thread ids as the OS reports them (gettid, the ids NVTX records carry). CUPTI
// fills 8 MiB buffers we lend it and hands them back full, or at flush; each is converted to
// trace records (gpu/trace_format.h) under the writer lock and freed. Every failure is logged
// once, written into the trace as a message, and tracing continues with what works.
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "gpu/trace_format.h"
#include "gpu/tracer/copy_fingerprint.h"
#include "gpu/tracer/kernel_metrics.h"
#include "gpu/tracer/session.h"
#include "gpu/tracer/trace_writer.h"

namespace opscope::gpu::tracer {
namespace {

constexpr size_t kBufferBytes = 8 << 20;
constexpr size_t kAlign = 8;
constexpr uint32_t kMaxCbid = 4096;

uint32_t g_api_names[2][kMaxCbid];  // [driver, runtime] cbid -> string id (under the lock)
uint64_t g_cupti_dropped = 0;       // cumulative, under the lock
bool g_monotonic_clock = false;

uint64_t CUPTIAPI MonotonicTimestamp() { return static_cast<uint64_t>(MonotonicNs()); }

const char* ResultText(CUptiResult r) {
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || s == nullptr) return "unknown CUPTI error";
  return s;
}

void MessageLocked(uint32_t level, const char* text) {
  trace::MessageRecord m{level, Writer().InternLocked(text)};
  Writer().AppendLocked(trace::kMessage, &m, sizeof m);
}

void Message(uint32_t level, const char* text) {
  Log("%s", text);
  Writer().Lock();
  MessageLocked(level, text);
  Writer().Unlock();
}

void ClockLocked() {
  uint64_t cupti = 0;
  if (cuptiGetTimestamp(&cupti) != CUPTI_SUCCESS) cupti = 0;
  trace::ClockRecord c{MonotonicNs(), static_cast<int64_t>(cupti), g_monotonic_clock ? 1u : 0u, 0};
  Writer().AppendLocked(trace::kClock, &c, sizeof c);
}

uint32_t ApiNameLocked(uint8_t domain, uint32_t cbid) {
  uint32_t* slot = cbid < kMaxCbid ? &g_api_names[domain == trace::kRuntimeApi][cbid] : nullptr;
  if (slot != nullptr && *slot != 0) return *slot;
  const char* name = nullptr;
  CUpti_CallbackDomain d =
      domain == trace::kRuntimeApi ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
  uint32_t id;
  if (cuptiGetCallbackName(d, cbid, &name) == CUPTI_SUCCESS && name != nullptr) {
    id = Writer().InternLocked(name);
  } else {
    char fallback[48];
    snprintf(fallback, sizeof fallback, "%s#%u", domain == trace::kRuntimeApi ? "cuda" : "cu",
             cbid);
    id = Writer().InternLocked(fallback);
  }
  if (slot != nullptr) *slot = id;
  return id;
}

void ConvertLocked(const CUpti_Activity* record) {
  TraceWriter& w = Writer();
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      trace::KernelRecord r{};
      r.start_ns = static_cast<int64_t>(k->start);
      r.end_ns = static_cast<int64_t>(k->end);
      r.device = k->deviceId;
      r.context = k->contextId;
      r.stream = k->streamId;
      r.correlation = k->correlationId;
      r.grid[0] = k->gridX;
      r.grid[1] = k->gridY;
      r.grid[2] = k->gridZ;
      r.block[0] = k->blockX;
      r.block[1] = k->blockY;
      r.block[2] = k->blockZ;
      r.registers_per_thread = k->registersPerThread;
      r.static_shared_bytes = k->staticSharedMemory;
      r.dynamic_shared_bytes = k->dynamicSharedMemory;
      r.local_bytes_per_thread = k->localMemoryPerThread;
      r.name = w.InternLocked(k->name);
      r.graph_id = k->graphId;
      w.AppendLocked(trace::kKernel, &r, sizeof r);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      trace::MemcpyRecord r{};
      r.start_ns = static_cast<int64_t>(m->start);
      r.end_ns = static_cast<int64_t>(m->end);
      r.bytes = m->bytes;
      r.device = m->deviceId;
      r.context = m->contextId;
      r.stream = m->streamId;
      r.correlation = m->correlationId;
      r.runtime_correlation = m->runtimeCorrelationId;
      r.copy_kind = m->copyKind;
      r.src_kind = m->srcKind;
      r.dst_kind = m->dstKind;
      r.async = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? 1 : 0;
      w.AppendLocked(trace::kMemcpy, &r, sizeof r);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      trace::MemsetRecord r{};
      r.start_ns = static_cast<int64_t>(m->start);
      r.end_ns = static_cast<int64_t>(m->end);
      r.bytes = m->bytes;
      r.device = m->deviceId;
      r.context = m->contextId;
      r.stream = m->streamId;
      r.correlation = m->correlationId;
      r.memory_kind = m->memoryKind;
      r.async = (m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) ? 1 : 0;
      w.AppendLocked(trace::kMemset, &r, sizeof r);
      break;
    }
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_RUNTIME: {
      auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      trace::ApiRecord r{};
      r.start_ns = static_cast<int64_t>(a->start);
      r.end_ns = static_cast<int64_t>(a->end);
      r.tid = a->threadId;
      r.correlation = a->correlationId;
      r.cbid = a->cbid;
      r.return_value = a->returnValue;
      r.domain =
          record->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? trace::kRuntimeApi : trace::kDriverApi;
      r.name = ApiNameLocked(r.domain, a->cbid);
      w.AppendLocked(trace::kApi, &r, sizeof r);
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
      trace::SyncRecord r{};
      r.start_ns = static_cast<int64_t>(s->start);
      r.end_ns = static_cast<int64_t>(s->end);
      r.type = static_cast<uint32_t>(s->type);
      r.correlation = s->correlationId;
      r.context = s->contextId;
      r.stream = s->streamId;
      w.AppendLocked(trace::kSync, &r, sizeof r);
      break;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
      auto* d = reinterpret_cast<const CUpti_ActivityDevice5*>(record);
      trace::DeviceRecord r{};
      r.id = d->id;
      r.name = w.InternLocked(d->name);
      r.cc_major = d->computeCapabilityMajor;
      r.cc_minor = d->computeCapabilityMinor;
      r.sm_count = d->numMultiprocessors;
      r.max_warps_per_sm = d->maxWarpsPerMultiprocessor;
      r.max_blocks_per_sm = d->maxBlocksPerMultiprocessor;
      r.max_registers_per_sm = d->maxRegistersPerMultiprocessor;
      r.max_shared_per_sm = d->maxSharedMemoryPerMultiprocessor;
      r.max_registers_per_block = d->maxRegistersPerBlock;
      r.max_shared_per_block = d->maxSharedMemoryPerBlock;
      r.max_threads_per_block = d->maxThreadsPerBlock;
      r.warp_size = d->numThreadsPerWarp;
      r.core_clock_khz = d->coreClockRate;
      r.global_memory_bandwidth_kbps = d->globalMemoryBandwidth;
      r.global_memory_bytes = d->globalMemorySize;
      w.AppendLocked(trace::kDevice, &r, sizeof r);
      break;
    }
    default:
      break;
  }
}

// ---- content fingerprints of host-to-device copies (CUPTI callback API) ----

std::atomic<bool> g_fingerprints_off{false};

void CUPTIAPI OnRuntimeApi(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                           const void* data) {
  auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API || info == nullptr ||
      info->callbackSite != CUPTI_API_ENTER)
    return;
  // cudaMemcpy and cudaMemcpyAsync (and their per-thread-stream forms) share this prefix.
  auto* params = static_cast<const cudaMemcpy_v3020_params*>(info->functionParams);
  if (params == nullptr || params->kind != cudaMemcpyHostToDevice ||
      params->count < trace::kMinHashedCopyBytes ||
      g_fingerprints_off.load(std::memory_order_relaxed))
    return;
  bool sampled = false;
  int error = 0;
  trace::CopyContentRecord r{info->correlationId, 0, params->count,
                             FingerprintHostBytes(params->src, params->count, &sampled, &error)};
  r.sampled = sampled ? 1 : 0;
  if (error != 0 && error != EFAULT && !g_fingerprints_off.exchange(true)) {
    // A seccomp profile (containers) may forbid process_vm_readv: say so once and stop trying.
    char text[200];
    snprintf(text, sizeof text,
             "cannot read copy sources (process_vm_readv: %s): repeated copies are "
             "matched by size only",
             strerror(error));
    Message(trace::kWarning, text);
  }
  Writer().Lock();
  Writer().AppendLocked(trace::kCopyContent, &r, sizeof r);
  Writer().Unlock();
  (void)cbid;
}

// One subscriber for every callback the tracer needs (CUPTI may refuse a second one): the
// runtime API for copy fingerprints, the driver API and resource domains for kernel metrics.
void CUPTIAPI OnCallback(void* user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                         const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
    OnRuntimeApi(user, domain, cbid, data);
  else
    KernelMetricsCallback(domain, cbid, data);
}

void StartCallbacks() {
  const char* env = getenv("OPSCOPE_GPU_HASH_COPIES");
  const bool fingerprints = env == nullptr || strcmp(env, "0") != 0;
  const bool metrics = KernelMetricsRequested();
  if (!fingerprints && !metrics) return;
  CUpti_SubscriberHandle subscriber;
  CUptiResult r = cuptiSubscribe(&subscriber, OnCallback, nullptr);
  if (r != CUPTI_SUCCESS) {
    if (fingerprints) {
      char text[256];
      snprintf(text, sizeof text,
               "cannot fingerprint copies (cuptiSubscribe: %s): repeated copies are matched "
               "by size only",
               ResultText(r));
      Message(trace::kWarning, text);
    }
    if (metrics) KernelMetricsUnavailable("cuptiSubscribe", r);
    return;
  }
  if (fingerprints) {
    const CUpti_CallbackId ids[] = {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
                                    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                                    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000,
                                    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000};
    for (CUpti_CallbackId id : ids)
      cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id);
  }
  if (metrics) StartKernelMetrics(subscriber);
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  void* p = nullptr;
  if (posix_memalign(&p, kAlign, kBufferBytes) != 0) p = nullptr;
  *buffer = static_cast<uint8_t*>(p);
  *size = p ? kBufferBytes : 0;  // no buffer: CUPTI drops records and counts them
  *max_records = 0;
}

void CUPTIAPI BufferCompleted(CUcontext context, uint32_t stream, uint8_t* buffer, size_t size,
                              size_t valid) {
  TraceWriter& w = Writer();
  w.Lock();
  CUpti_Activity* record = nullptr;
  while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS)
    ConvertLocked(record);
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS &&
      dropped > 0) {
    g_cupti_dropped += dropped;
    trace::DroppedRecord d{g_cupti_dropped, trace::kDropCupti, 0};
    w.AppendLocked(trace::kDropped, &d, sizeof d);
  }
  w.Unlock();
  free(buffer);
}

void FlushActivity(bool forced) {
  CUptiResult r = cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  if (r != CUPTI_SUCCESS) Log("cuptiActivityFlushAll: %s", ResultText(r));
  if (!forced) return;
  // A closing clock pair lets the decoder check (or, without our clock, estimate) alignment.
  Writer().Lock();
  ClockLocked();
  Writer().Unlock();
}

bool Enable(CUpti_ActivityKind kind, const char* what) {
  CUptiResult r = cuptiActivityEnable(kind);
  if (r == CUPTI_SUCCESS) return true;
  char text[256];
  snprintf(text, sizeof text, "cannot record %s: cuptiActivityEnable failed: %s", what,
           ResultText(r));
  Message(trace::kWarning, text);
  return false;
}

bool StartCupti() {
  CUptiResult r = cuptiActivityRegisterTimestampCallback(MonotonicTimestamp);
  g_monotonic_clock = r == CUPTI_SUCCESS;
  if (!g_monotonic_clock) {
    char text[256];
    snprintf(
        text, sizeof text,
        "CUPTI refused the CLOCK_MONOTONIC timestamp callback (%s); GPU times are shifted by a "
        "measured offset instead",
        ResultText(r));
    Message(trace::kWarning, text);
  }
  if (cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) != CUPTI_SUCCESS)
    Message(trace::kWarning,
            "CUPTI cannot report OS thread ids; kernels may not find their NVTX range");
  r = cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted);
  if (r != CUPTI_SUCCESS) {
    char text[256];
    snprintf(text, sizeof text,
             "cuptiActivityRegisterCallbacks failed: %s; no CUDA activity is recorded",
             ResultText(r));
    Message(trace::kError, text);
    return false;
  }
  Enable(CUPTI_ACTIVITY_KIND_DEVICE, "device properties");
  bool kernels = Enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernels");
  bool copies = Enable(CUPTI_ACTIVITY_KIND_MEMCPY, "memory copies");
  Enable(CUPTI_ACTIVITY_KIND_MEMSET, "memsets");
  Enable(CUPTI_ACTIVITY_KIND_RUNTIME, "runtime API calls");
  const char* driver = getenv("OPSCOPE_GPU_DRIVER_API");
  if (driver == nullptr || strcmp(driver, "0") != 0)
    Enable(CUPTI_ACTIVITY_KIND_DRIVER, "driver API calls");
  Enable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "synchronization");
  StartCallbacks();
  Writer().Lock();
  ClockLocked();
  Writer().Unlock();
  SetActivityFlusher(FlushActivity);
  return kernels || copies;
}

}  // namespace
}  // namespace opscope::gpu::tracer

// Called by libcuda (CUDA_INJECTION64_PATH) from cuInit. Returning 1 in every case: a failure
// to trace must never become a failure of the program.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  using namespace opscope::gpu::tracer;
  static std::atomic<bool> done{false};
  if (done.exchange(true)) return 1;
  if (!StartTracer()) return 1;
  StartCupti();
  return 1;
}
