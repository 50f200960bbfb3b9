#include "gpu/tracer/kernel_metrics.h"

#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <pthread.h>
#include <stdlib.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "gpu/trace_format.h"
#include "gpu/tracer/trace_writer.h"

namespace opscope::gpu::tracer {
namespace {

// The order matches KernelMetricsRecord's fields.
const char* kMetricNames[] = {
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "gpu__time_duration.sum",
};
constexpr size_t kMetricCount = sizeof kMetricNames / sizeof kMetricNames[0];
// Ranges per collection: the counter data image holds this many before the tracer decodes it.
constexpr size_t kMaxRanges = 64;

struct Session {
  CUcontext ctx = nullptr;
  uint32_t device = 0;
  CUpti_RangeProfiler_Object* object = nullptr;
  CUpti_Profiler_Host_Object* host = nullptr;
  uint8_t* availability = nullptr;
  uint8_t* config = nullptr;
  size_t config_size = 0;
  uint8_t* counter_data = nullptr;
  size_t counter_data_size = 0;
  bool profiler_initialized = false;
  bool started = false;
  uint32_t pending[kMaxRanges];  // correlation ids of the launches in this collection
  size_t pending_count = 0;
  bool warned_mismatch = false;
};

pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;  // guards g_session
Session g_session;
std::atomic<bool> g_off{false};       // a failure turned metrics off for this process
std::atomic<bool> g_finished{false};  // collected for the last time
std::atomic<bool> g_other_context_warned{false};

// A CUPTI parameter struct: zeroed, with its size set (CUPTI's versioning of its structs).
template <typename T>
T Params(size_t struct_size) {
  T p;
  memset(&p, 0, sizeof p);
  p.structSize = struct_size;
  return p;
}

const char* ResultText(CUptiResult r) {
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || s == nullptr) return "unknown CUPTI error";
  return s;
}

void Message(uint32_t level, const char* text) {
  Log("%s", text);
  TraceWriter& w = Writer();
  if (w.HeldByThisThread()) return;
  w.Lock();
  trace::MessageRecord m{level, w.InternLocked(text)};
  w.AppendLocked(trace::kMessage, &m, sizeof m);
  w.Unlock();
}

// Releases everything CUPTI gave us (best effort: a failure here has nothing left to turn off).
void TeardownLocked(Session& s) {
  if (s.object != nullptr) {
    if (s.started) {
      auto stop =
          Params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
      stop.pRangeProfilerObject = s.object;
      cuptiRangeProfilerStop(&stop);
    }
    auto disable =
        Params<CUpti_RangeProfiler_Disable_Params>(CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
    disable.pRangeProfilerObject = s.object;
    cuptiRangeProfilerDisable(&disable);
  }
  if (s.host != nullptr) {
    auto p = Params<CUpti_Profiler_Host_Deinitialize_Params>(
        CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
    p.pHostObject = s.host;
    cuptiProfilerHostDeinitialize(&p);
  }
  if (s.profiler_initialized) {
    auto p =
        Params<CUpti_Profiler_DeInitialize_Params>(CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE);
    cuptiProfilerDeInitialize(&p);
  }
  free(s.availability);
  free(s.config);
  free(s.counter_data);
  CUcontext ctx = s.ctx;
  s = Session{};
  s.ctx = ctx;  // still "the profiled context": later launches in it are not set up again
}

// Logs the failure, records it in the trace and turns metrics off for good.
void FailLocked(Session& s, const char* call, CUptiResult r) {
  char text[512];
  const char* hint = "";
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
    hint =
        " (GPU performance counters are restricted to administrators: run as root, or load the "
        "nvidia module with NVreg_RestrictProfilingToAdminUsers=0)";
  snprintf(text, sizeof text, "kernel metrics off: %s failed: %s%s", call, ResultText(r), hint);
  g_off.store(true);
  TeardownLocked(s);
  Message(trace::kWarning, text);
}

#define OPSCOPE_CUPTI_OR_FAIL(s, call, params) \
  do {                                         \
    CUptiResult r_ = call(&(params));          \
    if (r_ != CUPTI_SUCCESS) {                 \
      FailLocked(s, #call, r_);                \
      return false;                            \
    }                                          \
  } while (0)

bool ConfigureLocked(Session& s) {
  auto init = Params<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
  init.pRangeProfilerObject = s.object;
  init.counterDataSize = s.counter_data_size;
  init.pCounterData = s.counter_data;
  OPSCOPE_CUPTI_OR_FAIL(s, cuptiRangeProfilerCounterDataImageInitialize, init);

  auto set = Params<CUpti_RangeProfiler_SetConfig_Params>(
      CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
  set.pRangeProfilerObject = s.object;
  set.configSize = s.config_size;
  set.pConfig = s.config;
  set.counterDataImageSize = s.counter_data_size;
  set.pCounterDataImage = s.counter_data;
  set.range = CUPTI_AutoRange;
  set.replayMode = CUPTI_KernelReplay;
  set.maxRangesPerPass = kMaxRanges;
  set.numNestingLevels = 1;
  set.minNestingLevel = 1;
  set.passIndex = 0;
  set.targetNestingLevel = 1;
  OPSCOPE_CUPTI_OR_FAIL(s, cuptiRangeProfilerSetConfig, set);

  auto start =
      Params<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
  start.pRangeProfilerObject = s.object;
  OPSCOPE_CUPTI_OR_FAIL(s, cuptiRangeProfilerStart, start);
  s.started = true;
  s.pending_count = 0;
  return true;
}

// Everything from "is this GPU profilable" to the first Start, for the context of the first
// kernel launch (it is current on the launching thread).
bool SetUpLocked(Session& s, CUcontext ctx) {
  s.ctx = ctx;
  CUptiResult r = cuptiGetDeviceId(ctx, &s.device);
  if (r != CUPTI_SUCCESS) {
    FailLocked(s, "cuptiGetDeviceId", r);
    return false;
  }

  auto supported = Params<CUpti_Profiler_DeviceSupported_Params>(
      CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE);
  supported.cuDevice = static_cast<CUdevice>(s.device);
  supported.api = CUPTI_PROFILER_RANGE_PROFILING;
  OPSCOPE_CUPTI_OR_FAIL(s, cuptiProfilerDeviceSupported, supported);
  if (supported.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
    const char* why =
        supported.architecture != CUPTI_PROFILER_CONFIGURATION_SUPPORTED
            ? "the GPU architecture (compute capability 7.0 or newer is needed)"
        : supported.vGpu != CUPTI_PROFILER_CONFIGURATION_SUPPORTED
            ? "this vGPU (profiling is not enabled for it)"
        : supported.confidentialCompute != CUPTI_PROFILER_CONFIGURATION_SUPPORTED
            ? "confidential computing mode"
        : supported.cmp != CUPTI_PROFILER_CONFIGURATION_SUPPORTED ? "a crypto-mining processor"
        : supported.wsl != CUPTI_PROFILER_CONFIGURATION_SUPPORTED ? "WSL"
        : supported.sli != CUPTI_PROFILER_CONFIGURATION_SUPPORTED ? "SLI"
                                                                  : "this configuration";
    char text[256];
    snprintf(text, sizeof text, "kernel metrics off: CUPTI's range profiler does not support %s",
             why);
    g_off.store(true);
    TeardownLocked(s);
    Message(trace::kWarning, text);
    return false;
  }

  auto initialize =
      Params<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
  OPSCOPE_CUPTI_OR_FAIL(s, cuptiProfilerInitialize, initialize);
  s.profiler_initialized = true;

  auto chip = Params<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
  chip.deviceIndex = s.device;
  OPSCOPE_CUPTI_OR_FAIL(s, cuptiDeviceGetChipName, chip);

  auto avail = Params<CUpti_Profiler_GetCounterAvailability_Params>(
      CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE);
  avail.ctx = ctx;
  OPSCOPE_CUPTI_OR_FAIL(s, cuptiProfilerGetCounterAvailability, avail);
  s.availability = static_cast<uint8_t*>(calloc(avail.counterAvailabilityImageSize + 8, 1));
  if (s.availability == nullptr) {
    FailLocked(s, "calloc (counter availability image)", CUPTI_ERROR_OUT_OF_MEMORY);
    return false;
  }
  avail.pCounterAvailabilityImage = s.availability;
  OPSCOPE_CUPTI_OR_FAIL(s, cuptiProfilerGetCounterAvailability, avail);

  auto host = Params<CUpti_Profiler_Host_Initialize_Params>(
      CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
  host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  host.pChipName = chip.pChipName;
  host.pCounterAvailabilityImage = s.availability;
  OPSCOPE_CUPTI_OR_FAIL(s, cuptiProfilerHostInitialize, host);
  s.host = host.pHostObject;

  auto add = Params<CUpti_Profiler_Host_ConfigAddMetrics_Params>(
      CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
  add.pHostObject = s.host;
  add.ppMetricNames = kMetricNames;
  add.numMetrics = kMetricCount;
  OPSCOPE_CUPTI_OR_FAIL(s, cuptiProfilerHostConfigAddMetrics, add);

  auto config_size = Params<CUpti_Profiler_Host_GetConfigImageSize_Params>(
      CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
  config_size.pHostObject = s.host;
  OPSCOPE_CUPTI_OR_FAIL(s, cuptiProfilerHostGetConfigImageSize, config_size);
  s.config_size = config_size.configImageSize;
  void* config = nullptr;
  if (posix_memalign(&config, 8, s.config_size ? s.config_size : 8) != 0) config = nullptr;
  s.config = static_cast<uint8_t*>(config);
  if (s.config == nullptr) {
    FailLocked(s, "posix_memalign (config image)", CUPTI_ERROR_OUT_OF_MEMORY);
    return false;
  }
  auto image = Params<CUpti_Profiler_Host_GetConfigImage_Params>(
      CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
  image.pHostObject = s.host;
  image.configImageSize = s.config_size;
  image.pConfigImage = s.config;
  OPSCOPE_CUPTI_OR_FAIL(s, cuptiProfilerHostGetConfigImage, image);

  auto passes = Params<CUpti_Profiler_Host_GetNumOfPasses_Params>(
      CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
  passes.configImageSize = s.config_size;
  passes.pConfigImage = s.config;
  OPSCOPE_CUPTI_OR_FAIL(s, cuptiProfilerHostGetNumOfPasses, passes);

  auto enable =
      Params<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
  enable.ctx = ctx;
  OPSCOPE_CUPTI_OR_FAIL(s, cuptiRangeProfilerEnable, enable);
  s.object = enable.pRangeProfilerObject;

  auto size = Params<CUpti_RangeProfiler_GetCounterDataSize_Params>(
      CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
  size.pRangeProfilerObject = s.object;
  size.pMetricNames = kMetricNames;
  size.numMetrics = kMetricCount;
  size.maxNumOfRanges = kMaxRanges;
  size.maxNumRangeTreeNodes = kMaxRanges;
  OPSCOPE_CUPTI_OR_FAIL(s, cuptiRangeProfilerGetCounterDataSize, size);
  s.counter_data_size = size.counterDataSize;
  void* data = nullptr;
  if (posix_memalign(&data, 8, s.counter_data_size ? s.counter_data_size : 8) != 0) data = nullptr;
  s.counter_data = static_cast<uint8_t*>(data);
  if (s.counter_data == nullptr) {
    FailLocked(s, "posix_memalign (counter data image)", CUPTI_ERROR_OUT_OF_MEMORY);
    return false;
  }
  if (!ConfigureLocked(s)) return false;

  TraceWriter& w = Writer();
  w.Lock();
  trace::MetricsConfigRecord c{};
  c.device = s.device;
  c.passes = static_cast<uint32_t>(passes.numOfPasses);
  c.replay = trace::kReplayKernel;
  c.max_ranges = kMaxRanges;
  c.chip = w.InternLocked(chip.pChipName);
  w.AppendLocked(trace::kMetricsConfig, &c, sizeof c);
  w.Unlock();
  char text[200];
  snprintf(text, sizeof text,
           "kernel metrics on (%s): every kernel is replayed %zu time(s); kernel times are "
           "not comparable with a run without --metrics",
           chip.pChipName ? chip.pChipName : "?", passes.numOfPasses);
  Log("%s", text);
  return true;
}

// Stops the profiler, writes one record per profiled range, and restarts unless `last`.
bool CollectLocked(Session& s, bool last) {
  if (!s.started) return false;
  auto stop = Params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
  stop.pRangeProfilerObject = s.object;
  s.started = false;
  OPSCOPE_CUPTI_OR_FAIL(s, cuptiRangeProfilerStop, stop);

  auto decode = Params<CUpti_RangeProfiler_DecodeData_Params>(
      CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
  decode.pRangeProfilerObject = s.object;
  OPSCOPE_CUPTI_OR_FAIL(s, cuptiRangeProfilerDecodeData, decode);

  auto info = Params<CUpti_RangeProfiler_GetCounterDataInfo_Params>(
      CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
  info.pCounterDataImage = s.counter_data;
  info.counterDataImageSize = s.counter_data_size;
  OPSCOPE_CUPTI_OR_FAIL(s, cuptiRangeProfilerGetCounterDataInfo, info);

  // Ranges pair with launches by position only when CUPTI profiled exactly the launches we saw.
  const bool joined = info.numTotalRanges == s.pending_count && decode.numOfRangeDropped == 0;
  if (!joined && !s.warned_mismatch) {
    s.warned_mismatch = true;
    char text[256];
    snprintf(text, sizeof text,
             "kernel metrics: CUPTI profiled %zu ranges (%zu dropped) for %zu kernel launches; "
             "their figures cannot be paired with kernels",
             info.numTotalRanges, decode.numOfRangeDropped, s.pending_count);
    Message(trace::kWarning, text);
  }
  for (size_t i = 0; i < info.numTotalRanges; ++i) {
    auto range = Params<CUpti_RangeProfiler_CounterData_GetRangeInfo_Params>(
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE);
    range.pCounterDataImage = s.counter_data;
    range.counterDataImageSize = s.counter_data_size;
    range.rangeIndex = i;
    range.rangeDelimiter = "/";
    if (cuptiRangeProfilerCounterDataGetRangeInfo(&range) != CUPTI_SUCCESS)
      range.rangeName = nullptr;

    double values[kMetricCount];
    for (double& v : values) v = NAN;
    auto eval = Params<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(
        CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
    eval.pHostObject = s.host;
    eval.pCounterDataImage = s.counter_data;
    eval.counterDataImageSize = s.counter_data_size;
    eval.rangeIndex = i;
    eval.ppMetricNames = kMetricNames;
    eval.numMetrics = kMetricCount;
    eval.pMetricValues = values;
    OPSCOPE_CUPTI_OR_FAIL(s, cuptiProfilerHostEvaluateToGpuValues, eval);

    TraceWriter& w = Writer();
    w.Lock();
    trace::KernelMetricsRecord m{};
    m.correlation = joined ? s.pending[i] : 0;
    m.range_name = w.InternLocked(range.rangeName);
    m.range_index = static_cast<uint32_t>(i);
    m.device = s.device;
    m.sm_throughput_pct = values[0];
    m.memory_throughput_pct = values[1];
    m.dram_throughput_pct = values[2];
    m.achieved_occupancy_pct = values[3];
    m.duration_ns = values[4];
    w.AppendLocked(trace::kKernelMetrics, &m, sizeof m);
    w.Unlock();
  }
  s.pending_count = 0;
  if (last) return true;
  return ConfigureLocked(s);
}

void FinishLocked(Session& s) {
  if (g_finished.exchange(true)) return;
  if (!g_off.load()) CollectLocked(s, /*last=*/true);
  TeardownLocked(s);
}

void AtExit() {
  pthread_mutex_lock(&g_mutex);
  FinishLocked(g_session);
  pthread_mutex_unlock(&g_mutex);
}

bool IsLaunch(CUpti_CallbackId cbid) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      return true;
    default:
      return false;
  }
}

void OnLaunch(const CUpti_CallbackData* info) {
  if (info->context == nullptr) return;
  pthread_mutex_lock(&g_mutex);
  Session& s = g_session;
  if (info->callbackSite == CUPTI_API_ENTER) {
    if (s.ctx == nullptr) {
      static bool at_exit = false;
      if (SetUpLocked(s, info->context) && !at_exit) {
        at_exit = true;
        atexit(AtExit);  // registered after the tracer's own: runs before the end record
      }
    }
    if (s.ctx != info->context) {
      if (!g_other_context_warned.exchange(true))
        Message(trace::kInfo,
                "kernel metrics cover the first CUDA context only; kernels of other "
                "contexts have no throughput figures");
    } else if (s.started && s.pending_count < kMaxRanges) {
      s.pending[s.pending_count++] = info->correlationId;
    }
  } else if (s.started && s.ctx == info->context && s.pending_count >= kMaxRanges) {
    CollectLocked(s, /*last=*/false);
  }
  pthread_mutex_unlock(&g_mutex);
}

}  // namespace

bool KernelMetricsRequested() {
  const char* env = getenv(trace::kMetricsEnv);
  return env != nullptr && strcmp(env, "1") == 0;
}

void KernelMetricsUnavailable(const char* call, CUptiResult result) {
  pthread_mutex_lock(&g_mutex);
  FailLocked(g_session, call, result);
  pthread_mutex_unlock(&g_mutex);
}

bool StartKernelMetrics(CUpti_SubscriberHandle subscriber) {
  const CUpti_CallbackId launches[] = {CUPTI_DRIVER_TRACE_CBID_cuLaunch,
                                       CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid,
                                       CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync,
                                       CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                       CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
                                       CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
                                       CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
                                       CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
                                       CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};
  for (CUpti_CallbackId id : launches) {
    CUptiResult r = cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
    if (r != CUPTI_SUCCESS) {
      KernelMetricsUnavailable("cuptiEnableCallback (kernel launches)", r);
      return false;
    }
  }
  CUptiResult r = cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                      CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  if (r != CUPTI_SUCCESS) {
    KernelMetricsUnavailable("cuptiEnableCallback (context teardown)", r);
    return false;
  }
  return true;
}

void KernelMetricsCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  // CUPTI's profiler may call the driver from inside our callback: never re-enter (the mutex is
  // not recursive).
  static thread_local bool t_inside = false;
  if (data == nullptr || t_inside || g_off.load(std::memory_order_relaxed) ||
      g_finished.load(std::memory_order_relaxed))
    return;
  struct Inside {
    Inside() { t_inside = true; }
    ~Inside() { t_inside = false; }
  } inside;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && IsLaunch(cbid)) {
    OnLaunch(static_cast<const CUpti_CallbackData*>(data));
  } else if (domain == CUPTI_CB_DOMAIN_RESOURCE &&
             cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    auto* resource = static_cast<const CUpti_ResourceData*>(data);
    pthread_mutex_lock(&g_mutex);
    if (g_session.ctx != nullptr && resource->context == g_session.ctx) FinishLocked(g_session);
    pthread_mutex_unlock(&g_mutex);
  }
}

}  // namespace opscope::gpu::tracer
