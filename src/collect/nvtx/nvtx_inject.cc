// libopscope_ranges_nvtx.so: an NVTX v3 injection library for `opscope run`. NVTX loads it from
// NVTX_INJECTION64_PATH at the program's first NVTX call and calls InitializeInjectionNvtx2,
// which asks NVTX's export table for the CORE and CORE2 function tables and points the range
// entries (push/pop, start/end, their domain forms, domain creation and registered strings) at
// the shared range recorder. NVTX needs no CUDA: this works for any program that uses the NVTX
// headers. Returning 0 (OPSCOPE_RANGES_OUT unset) tells NVTX to turn itself into no-ops.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <cwchar>
#include <mutex>
#include <set>
#include <string>

#include "collect/ranges_recorder.h"

namespace {

namespace rec = opscope::collect::rec;

uint32_t g_default_domain = 0;

// Registered strings: NVTX hands our pointer back as the message; they live until exit.
std::mutex g_strings_mu;
std::set<std::string>* g_strings = nullptr;

const char* Register(const std::string& s) {
  std::lock_guard<std::mutex> lock(g_strings_mu);
  if (!g_strings) g_strings = new std::set<std::string>;
  return g_strings->insert(s).first->c_str();
}

std::string Narrow(const wchar_t* w) {
  std::string s;
  if (!w) return "(null)";
  for (; *w; ++w) s += (*w >= 0 && *w < 128) ? static_cast<char>(*w) : '?';
  return s;
}

std::string MessageOf(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return "(null)";
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return a->message.ascii ? a->message.ascii : "(null)";
    case NVTX_MESSAGE_TYPE_UNICODE: return Narrow(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return a->message.registered ? reinterpret_cast<const char*>(a->message.registered) : "(null)";
    default: return "(unnamed)";
  }
}

uint32_t DomainId(nvtxDomainHandle_t d) {
  return d == nullptr ? g_default_domain : static_cast<uint32_t>(reinterpret_cast<uintptr_t>(d) - 1);
}

int NVTX_API RangePushA(const char* m) { rec::Push(g_default_domain, m); return 0; }
int NVTX_API RangePushW(const wchar_t* m) { rec::Push(g_default_domain, Narrow(m).c_str()); return 0; }
int NVTX_API RangePushEx(const nvtxEventAttributes_t* a) {
  rec::Push(g_default_domain, MessageOf(a).c_str());
  return 0;
}
int NVTX_API RangePop() { rec::Pop(g_default_domain); return 0; }
nvtxRangeId_t NVTX_API RangeStartA(const char* m) { return rec::Start(g_default_domain, m); }
nvtxRangeId_t NVTX_API RangeStartW(const wchar_t* m) { return rec::Start(g_default_domain, Narrow(m).c_str()); }
nvtxRangeId_t NVTX_API RangeStartEx(const nvtxEventAttributes_t* a) {
  return rec::Start(g_default_domain, MessageOf(a).c_str());
}
void NVTX_API RangeEnd(nvtxRangeId_t id) { rec::End(id); }

nvtxDomainHandle_t NVTX_API DomainCreateA(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(static_cast<uintptr_t>(rec::InternDomain(name)) + 1);
}
nvtxDomainHandle_t NVTX_API DomainCreateW(const wchar_t* name) { return DomainCreateA(Narrow(name).c_str()); }
void NVTX_API DomainDestroy(nvtxDomainHandle_t) {}
nvtxStringHandle_t NVTX_API DomainRegisterStringA(nvtxDomainHandle_t, const char* s) {
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<char*>(Register(s ? s : "(null)")));
}
nvtxStringHandle_t NVTX_API DomainRegisterStringW(nvtxDomainHandle_t, const wchar_t* s) {
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<char*>(Register(Narrow(s))));
}
int NVTX_API DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  rec::Push(DomainId(d), MessageOf(a).c_str());
  return 0;
}
int NVTX_API DomainRangePop(nvtxDomainHandle_t d) { rec::Pop(DomainId(d)); return 0; }
nvtxRangeId_t NVTX_API DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return rec::Start(DomainId(d), MessageOf(a).c_str());
}
void NVTX_API DomainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { rec::End(id); }

template <typename Fn>
void Set(NvtxFunctionTable table, unsigned int size, unsigned int id, Fn fn) {
  if (table == nullptr || id == 0 || id > size || table[id] == nullptr) return;
  *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int NVTX_API
InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  if (!rec::Init("nvtx")) return 0;
  g_default_domain = rec::InternDomain("nvtx");
  auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return 0;
  NvtxFunctionTable core = nullptr, core2 = nullptr;
  unsigned int core_size = 0, core2_size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size)) return 0;
  Set(core, core_size, NVTX_CBID_CORE_RangePushA, RangePushA);
  Set(core, core_size, NVTX_CBID_CORE_RangePushW, RangePushW);
  Set(core, core_size, NVTX_CBID_CORE_RangePushEx, RangePushEx);
  Set(core, core_size, NVTX_CBID_CORE_RangePop, RangePop);
  Set(core, core_size, NVTX_CBID_CORE_RangeStartA, RangeStartA);
  Set(core, core_size, NVTX_CBID_CORE_RangeStartW, RangeStartW);
  Set(core, core_size, NVTX_CBID_CORE_RangeStartEx, RangeStartEx);
  Set(core, core_size, NVTX_CBID_CORE_RangeEnd, RangeEnd);
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size)) {
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, DomainCreateA);
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, DomainCreateW);
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, DomainDestroy);
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, DomainRegisterStringA);
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, DomainRegisterStringW);
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, DomainRangePushEx);
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, DomainRangePop);
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, DomainRangeStartEx);
    Set(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, DomainRangeEnd);
  }
  return 1;
}
