// NVTX ranges, recorded by the tracer itself through NVTX's injection interface.
//
// The NVTX client (header-only nvtx3, or libnvToolsExt) loads the library named by
// NVTX_INJECTION64_PATH on its first call and hands InitializeInjectionNvtx2 a table of function
// pointers to fill. `opscope gpu` points that variable at this library, so every nvtxRangePush/
// Pop/Start/End of the program (TensorRT and PyTorch emit one range per layer) lands here with
// the calling thread and a CLOCK_MONOTONIC timestamp, on the same timeline as the CUPTI
// records. Doing this ourselves rather than through CUPTI's own NVTX support keeps NVTX working
// in programs that never touch CUDA and avoids CUPTI 13.0's crash in nvtxNameOsThreadA
// (NVIDIA/NVTX#125).
//
// Handles given back to the program (domains, registered strings) are not pointers: they encode
// our string id, and the program only ever passes them back to us.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "gpu/trace_format.h"
#include "gpu/tracer/session.h"
#include "gpu/tracer/trace_writer.h"

namespace opscope::gpu::tracer {
namespace {

thread_local int t_depth = 0;
std::atomic<uint64_t> g_next_range_id{1};

template <typename Handle>
Handle EncodeHandle(uint32_t id) {
  return reinterpret_cast<Handle>(static_cast<uintptr_t>(id) << 4 | 0x8);
}
template <typename Handle>
uint32_t DecodeHandle(Handle h) {
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(h) >> 4);
}

uint32_t DomainId(nvtxDomainHandle_t d) { return d == nullptr ? 0 : DecodeHandle(d); }

// Wide strings: ASCII passes through, anything else becomes '?' (names are for display only).
uint32_t InternWideLocked(const wchar_t* s) {
  if (s == nullptr) return 0;
  char narrow[512];
  size_t n = 0;
  for (; s[n] != 0 && n < sizeof narrow; ++n) narrow[n] = (s[n] > 0 && s[n] < 128) ? static_cast<char>(s[n]) : '?';
  return Writer().InternLocked(narrow, n);
}

uint32_t MessageLocked(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return 0;
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return Writer().InternLocked(a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE: return InternWideLocked(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return a->message.registered == nullptr ? 0 : DecodeHandle(a->message.registered);
    default: return 0;
  }
}

// ---- push / pop ----

int Push(uint32_t domain, const nvtxEventAttributes_t* attr, const char* ascii, const wchar_t* wide) {
  TraceWriter& w = Writer();
  w.Lock();
  trace::NvtxPushRecord r{MonotonicNs(), CurrentTid(), 0, domain, 0};
  r.name = attr ? MessageLocked(attr) : ascii ? w.InternLocked(ascii) : InternWideLocked(wide);
  w.AppendLocked(trace::kNvtxPush, &r, sizeof r);
  w.Unlock();
  return t_depth++;
}

int Pop(uint32_t domain) {
  trace::NvtxPopRecord r{MonotonicNs(), CurrentTid(), domain};
  Writer().Lock();
  Writer().AppendLocked(trace::kNvtxPop, &r, sizeof r);
  Writer().Unlock();
  return t_depth > 0 ? --t_depth : -1;
}

int RangePushEx(const nvtxEventAttributes_t* a) { return Push(0, a, nullptr, nullptr); }
int RangePushA(const char* m) { return Push(0, nullptr, m ? m : "", nullptr); }
int RangePushW(const wchar_t* m) { return Push(0, nullptr, nullptr, m); }
int RangePop() { return Pop(0); }
int DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return Push(DomainId(d), a, nullptr, nullptr);
}
int DomainRangePop(nvtxDomainHandle_t d) { return Pop(DomainId(d)); }

// ---- start / end ----

nvtxRangeId_t Start(uint32_t domain, const nvtxEventAttributes_t* attr, const char* ascii,
                    const wchar_t* wide) {
  uint64_t id = g_next_range_id.fetch_add(1);
  TraceWriter& w = Writer();
  w.Lock();
  trace::NvtxStartRecord r{MonotonicNs(), id, CurrentTid(), 0, domain, 0};
  r.name = attr ? MessageLocked(attr) : ascii ? w.InternLocked(ascii) : InternWideLocked(wide);
  w.AppendLocked(trace::kNvtxStart, &r, sizeof r);
  w.Unlock();
  return id;
}

void End(nvtxRangeId_t id) {
  trace::NvtxEndRecord r{MonotonicNs(), id, CurrentTid(), 0};
  Writer().Lock();
  Writer().AppendLocked(trace::kNvtxEnd, &r, sizeof r);
  Writer().Unlock();
}

nvtxRangeId_t RangeStartEx(const nvtxEventAttributes_t* a) { return Start(0, a, nullptr, nullptr); }
nvtxRangeId_t RangeStartA(const char* m) { return Start(0, nullptr, m ? m : "", nullptr); }
nvtxRangeId_t RangeStartW(const wchar_t* m) { return Start(0, nullptr, nullptr, m); }
void RangeEnd(nvtxRangeId_t id) { End(id); }
nvtxRangeId_t DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return Start(DomainId(d), a, nullptr, nullptr);
}
void DomainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { End(id); }

// ---- marks, names, domains, strings ----

void Mark(uint32_t domain, const nvtxEventAttributes_t* attr, const char* ascii, const wchar_t* wide) {
  TraceWriter& w = Writer();
  w.Lock();
  trace::NvtxMarkRecord r{MonotonicNs(), CurrentTid(), 0, domain, 0};
  r.name = attr ? MessageLocked(attr) : ascii ? w.InternLocked(ascii) : InternWideLocked(wide);
  w.AppendLocked(trace::kNvtxMark, &r, sizeof r);
  w.Unlock();
}
void MarkEx(const nvtxEventAttributes_t* a) { Mark(0, a, nullptr, nullptr); }
void MarkA(const char* m) { Mark(0, nullptr, m ? m : "", nullptr); }
void MarkW(const wchar_t* m) { Mark(0, nullptr, nullptr, m); }
void DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) { Mark(DomainId(d), a, nullptr, nullptr); }

void NameThread(uint32_t tid, const char* ascii, const wchar_t* wide) {
  TraceWriter& w = Writer();
  w.Lock();
  trace::ThreadNameRecord r{tid, ascii ? w.InternLocked(ascii) : InternWideLocked(wide)};
  w.AppendLocked(trace::kThreadName, &r, sizeof r);
  w.Unlock();
}
void NameOsThreadA(uint32_t tid, const char* name) { NameThread(tid, name ? name : "", nullptr); }
void NameOsThreadW(uint32_t tid, const wchar_t* name) { NameThread(tid, nullptr, name); }

nvtxDomainHandle_t DomainCreate(const char* ascii, const wchar_t* wide) {
  TraceWriter& w = Writer();
  w.Lock();
  uint32_t id = ascii ? w.InternLocked(ascii) : InternWideLocked(wide);
  w.Unlock();
  return EncodeHandle<nvtxDomainHandle_t>(id);
}
nvtxDomainHandle_t DomainCreateA(const char* name) { return DomainCreate(name ? name : "", nullptr); }
nvtxDomainHandle_t DomainCreateW(const wchar_t* name) { return DomainCreate(nullptr, name); }
void DomainDestroy(nvtxDomainHandle_t) {}

nvtxStringHandle_t RegisterString(const char* ascii, const wchar_t* wide) {
  TraceWriter& w = Writer();
  w.Lock();
  uint32_t id = ascii ? w.InternLocked(ascii) : InternWideLocked(wide);
  w.Unlock();
  return EncodeHandle<nvtxStringHandle_t>(id);
}
nvtxStringHandle_t DomainRegisterStringA(nvtxDomainHandle_t, const char* s) { return RegisterString(s ? s : "", nullptr); }
nvtxStringHandle_t DomainRegisterStringW(nvtxDomainHandle_t, const wchar_t* s) { return RegisterString(nullptr, s); }
void Initialize(const void*) {}

template <typename Fn>
void Install(NvtxFunctionTable table, unsigned size, unsigned cbid, Fn fn) {
  if (table != nullptr && cbid < size && table[cbid] != nullptr)
    *table[cbid] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace
}  // namespace opscope::gpu::tracer

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  using namespace opscope::gpu::tracer;
  if (get_export_table == nullptr || !StartTracer()) return 0;  // 0: NVTX turns itself into no-ops
  auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      callbacks->GetModuleFunctionTable == nullptr) {
    Log("this NVTX version offers no callback table; NVTX ranges are not recorded");
    return 0;
  }
  NvtxFunctionTable core = nullptr, core2 = nullptr;
  unsigned core_size = 0, core2_size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size)) core = nullptr;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size)) core2 = nullptr;
  if (core == nullptr) {
    Log("NVTX gave no core function table; NVTX ranges are not recorded");
    return 0;
  }
  Install(core, core_size, NVTX_CBID_CORE_MarkEx, MarkEx);
  Install(core, core_size, NVTX_CBID_CORE_MarkA, MarkA);
  Install(core, core_size, NVTX_CBID_CORE_MarkW, MarkW);
  Install(core, core_size, NVTX_CBID_CORE_RangeStartEx, RangeStartEx);
  Install(core, core_size, NVTX_CBID_CORE_RangeStartA, RangeStartA);
  Install(core, core_size, NVTX_CBID_CORE_RangeStartW, RangeStartW);
  Install(core, core_size, NVTX_CBID_CORE_RangeEnd, RangeEnd);
  Install(core, core_size, NVTX_CBID_CORE_RangePushEx, RangePushEx);
  Install(core, core_size, NVTX_CBID_CORE_RangePushA, RangePushA);
  Install(core, core_size, NVTX_CBID_CORE_RangePushW, RangePushW);
  Install(core, core_size, NVTX_CBID_CORE_RangePop, RangePop);
  Install(core, core_size, NVTX_CBID_CORE_NameOsThreadA, NameOsThreadA);
  Install(core, core_size, NVTX_CBID_CORE_NameOsThreadW, NameOsThreadW);
  Install(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, DomainMarkEx);
  Install(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, DomainRangeStartEx);
  Install(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, DomainRangeEnd);
  Install(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, DomainRangePushEx);
  Install(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, DomainRangePop);
  Install(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, DomainRegisterStringA);
  Install(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, DomainRegisterStringW);
  Install(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, DomainCreateA);
  Install(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, DomainCreateW);
  Install(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, DomainDestroy);
  Install(core2, core2_size, NVTX_CBID_CORE2_Initialize, Initialize);
  return 1;
}
