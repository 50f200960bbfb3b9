#include "base/nvtx_core.h"

#include <cstring>

namespace opscope::nvtx {
namespace {

Tool* g_tool = nullptr;
thread_local int t_depth = 0;

uint32_t DomainId(nvtxDomainHandle_t d) { return d == nullptr ? 0 : DecodeHandle(d); }

// Appends the UTF-8 form of `c` if it fits in `room` bytes; returns the bytes written, 0 when
// it does not fit.
size_t PutUtf8(uint32_t c, char* out, size_t room) {
  if (c >= 0xD800 && c <= 0xDFFF) c = '?';  // surrogates are not characters
  if (c > 0x10FFFF) c = '?';
  size_t n = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
  if (n > room) return 0;
  if (n == 1) {
    out[0] = static_cast<char>(c);
  } else {
    for (size_t i = n - 1; i > 0; --i) {
      out[i] = static_cast<char>(0x80 | (c & 0x3F));
      c >>= 6;
    }
    static constexpr unsigned char kLead[] = {0, 0, 0xC0, 0xE0, 0xF0};
    out[0] = static_cast<char>(kLead[n] | c);
  }
  return n;
}

// ---- entry points ----

void MarkEx(const nvtxEventAttributes_t* a) {
  char buf[kMaxName + 1];
  g_tool->Mark(0, EventOf(a, buf));
}
void MarkA(const char* m) {
  char buf[kMaxName + 1];
  g_tool->Mark(0, Event{AsciiName(m, buf), 0});
}
void MarkW(const wchar_t* m) {
  char buf[kMaxName + 1];
  g_tool->Mark(0, Event{WideName(m, buf), 0});
}
void DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  char buf[kMaxName + 1];
  g_tool->Mark(DomainId(d), EventOf(a, buf));
}

int PushEvent(uint32_t domain, const Event& e) {
  g_tool->Push(domain, e);
  return t_depth++;
}
int PopDomain(uint32_t domain) {
  g_tool->Pop(domain);
  return t_depth > 0 ? --t_depth : -1;
}
int RangePushEx(const nvtxEventAttributes_t* a) {
  char buf[kMaxName + 1];
  return PushEvent(0, EventOf(a, buf));
}
int RangePushA(const char* m) {
  char buf[kMaxName + 1];
  return PushEvent(0, Event{AsciiName(m, buf), 0});
}
int RangePushW(const wchar_t* m) {
  char buf[kMaxName + 1];
  return PushEvent(0, Event{WideName(m, buf), 0});
}
int RangePop() { return PopDomain(0); }
int DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  char buf[kMaxName + 1];
  return PushEvent(DomainId(d), EventOf(a, buf));
}
int DomainRangePop(nvtxDomainHandle_t d) { return PopDomain(DomainId(d)); }

nvtxRangeId_t RangeStartEx(const nvtxEventAttributes_t* a) {
  char buf[kMaxName + 1];
  return g_tool->Start(0, EventOf(a, buf));
}
nvtxRangeId_t RangeStartA(const char* m) {
  char buf[kMaxName + 1];
  return g_tool->Start(0, Event{AsciiName(m, buf), 0});
}
nvtxRangeId_t RangeStartW(const wchar_t* m) {
  char buf[kMaxName + 1];
  return g_tool->Start(0, Event{WideName(m, buf), 0});
}
void RangeEnd(nvtxRangeId_t id) { g_tool->End(0, id); }
nvtxRangeId_t DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  char buf[kMaxName + 1];
  return g_tool->Start(DomainId(d), EventOf(a, buf));
}
void DomainRangeEnd(nvtxDomainHandle_t d, nvtxRangeId_t id) { g_tool->End(DomainId(d), id); }

void NameOsThreadA(uint32_t tid, const char* name) {
  char buf[kMaxName + 1];
  g_tool->NameThread(tid, AsciiName(name, buf));
}
void NameOsThreadW(uint32_t tid, const wchar_t* name) {
  char buf[kMaxName + 1];
  g_tool->NameThread(tid, WideName(name, buf));
}
void NameCategoryA(uint32_t category, const char* name) {
  char buf[kMaxName + 1];
  g_tool->NameCategory(0, category, AsciiName(name, buf));
}
void NameCategoryW(uint32_t category, const wchar_t* name) {
  char buf[kMaxName + 1];
  g_tool->NameCategory(0, category, WideName(name, buf));
}
void DomainNameCategoryA(nvtxDomainHandle_t d, uint32_t category, const char* name) {
  char buf[kMaxName + 1];
  g_tool->NameCategory(DomainId(d), category, AsciiName(name, buf));
}
void DomainNameCategoryW(nvtxDomainHandle_t d, uint32_t category, const wchar_t* name) {
  char buf[kMaxName + 1];
  g_tool->NameCategory(DomainId(d), category, WideName(name, buf));
}

nvtxDomainHandle_t DomainCreateA(const char* name) {
  char buf[kMaxName + 1];
  return reinterpret_cast<nvtxDomainHandle_t>(
      EncodeHandle(g_tool->CreateDomain(AsciiName(name, buf))));
}
nvtxDomainHandle_t DomainCreateW(const wchar_t* name) {
  char buf[kMaxName + 1];
  return reinterpret_cast<nvtxDomainHandle_t>(
      EncodeHandle(g_tool->CreateDomain(WideName(name, buf))));
}
void DomainDestroy(nvtxDomainHandle_t) {}
nvtxStringHandle_t DomainRegisterStringA(nvtxDomainHandle_t d, const char* s) {
  char buf[kMaxName + 1];
  return reinterpret_cast<nvtxStringHandle_t>(
      EncodeHandle(g_tool->RegisterString(DomainId(d), AsciiName(s, buf))));
}
nvtxStringHandle_t DomainRegisterStringW(nvtxDomainHandle_t d, const wchar_t* s) {
  char buf[kMaxName + 1];
  return reinterpret_cast<nvtxStringHandle_t>(
      EncodeHandle(g_tool->RegisterString(DomainId(d), WideName(s, buf))));
}
void Initialize(const void*) {}

template <typename Fn>
void Set(NvtxFunctionTable table, unsigned int size, unsigned int id, Fn fn) {
  if (table == nullptr || id == 0 || id >= size || table[id] == nullptr) return;
  *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace

uintptr_t EncodeHandle(uint32_t id) { return static_cast<uintptr_t>(id) << 4 | 0x8; }
uint32_t DecodeHandle(const void* handle) {
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(handle) >> 4);
}

Name AsciiName(const char* s, char* buf) {
  Name n;
  if (s == nullptr) return n;
  n.text = s;
  n.length = strnlen(s, kMaxName + 1);
  if (n.length > kMaxName) {  // cut, on a UTF-8 character boundary, into `buf`
    size_t len = kMaxName;
    while (len > 0 && (static_cast<unsigned char>(s[len]) & 0xC0) == 0x80) --len;
    std::memcpy(buf, s, len);
    buf[len] = '\0';
    n.text = buf;
    n.length = len;
  }
  return n;
}

Name WideName(const wchar_t* s, char* buf) {
  Name n;
  if (s == nullptr) return n;
  size_t used = 0;
  for (; *s != 0; ++s) {
    const size_t w = PutUtf8(static_cast<uint32_t>(*s), buf + used, kMaxName - used);
    if (w == 0) break;
    used += w;
  }
  buf[used] = '\0';
  n.text = buf;
  n.length = used;
  return n;
}

Event EventOf(const nvtxEventAttributes_t* a, char* buf) {
  Event e;
  if (a == nullptr) return e;
  auto holds = [a](size_t offset, size_t bytes) { return a->size >= offset + bytes; };
  if (holds(offsetof(nvtxEventAttributes_t, category), sizeof a->category))
    e.category = a->category;
  if (!holds(offsetof(nvtxEventAttributes_t, message), sizeof a->message)) return e;
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      e.name = AsciiName(a->message.ascii, buf);
      break;
    case NVTX_MESSAGE_TYPE_UNICODE:
      e.name = WideName(a->message.unicode, buf);
      break;
    case NVTX_MESSAGE_TYPE_REGISTERED:
      if (a->message.registered != nullptr) e.name.registered = DecodeHandle(a->message.registered);
      break;
    default:
      break;
  }
  return e;
}

bool Install(NvtxGetExportTableFunc_t get_export_table, Tool* tool, const char** why) {
  *why = "";
  if (get_export_table == nullptr || tool == nullptr) {
    *why = "NVTX gave no export table";
    return false;
  }
  auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      callbacks->GetModuleFunctionTable == nullptr) {
    *why = "this NVTX version offers no callback table";
    return false;
  }
  NvtxFunctionTable core = nullptr, core2 = nullptr;
  unsigned int core_size = 0, core2_size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) || !core) {
    *why = "NVTX gave no core function table";
    return false;
  }
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size))
    core2 = nullptr;
  g_tool = tool;
  Set(core, core_size, NVTX_CBID_CORE_MarkEx, MarkEx);
  Set(core, core_size, NVTX_CBID_CORE_MarkA, MarkA);
  Set(core, core_size, NVTX_CBID_CORE_MarkW, MarkW);
  Set(core, core_size, NVTX_CBID_CORE_RangeStartEx, RangeStartEx);
  Set(core, core_size, NVTX_CBID_CORE_RangeStartA, RangeStartA);
  Set(core, core_size, NVTX_CBID_CORE_RangeStartW, RangeStartW);
  Set(core, core_size, NVTX_CBID_CORE_RangeEnd, RangeEnd);
  Set(core, core_size, NVTX_CBID_CORE_RangePushEx, RangePushEx);
  Set(core, core_size, NVTX_CBID_CORE_RangePushA, RangePushA);
  Set(core, core_size, NVTX_CBID_CORE_RangePushW, RangePushW);
  Set(core, core_size, NVTX_CBID_CORE_RangePop, RangePop);
  Set(core, core_size, NVTX_CBID_CORE_NameCategoryA, NameCategoryA);
  Set(core, core_size, NVTX_CBID_CORE_NameCategoryW, NameCategoryW);
  Set(core, core_size, NVTX_CBID_CORE_NameOsThreadA, NameOsThreadA);
  Set(core, core_size, NVTX_CBID_CORE_NameOsThreadW, NameOsThreadW);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, DomainMarkEx);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, DomainRangeStartEx);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, DomainRangeEnd);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, DomainRangePushEx);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, DomainRangePop);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainNameCategoryA, DomainNameCategoryA);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainNameCategoryW, DomainNameCategoryW);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, DomainRegisterStringA);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, DomainRegisterStringW);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, DomainCreateA);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, DomainCreateW);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, DomainDestroy);
  Set(core2, core2_size, NVTX_CBID_CORE2_Initialize, Initialize);
  return true;
}

}  // namespace opscope::nvtx
