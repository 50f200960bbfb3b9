// The one NVTX v3 injection core, shared by `opscope run`'s NVTX recorder
// (collect/nvtx/nvtx_inject.cc, libopscope_ranges_nvtx.so) and `opscope gpu`'s CUPTI tracer
// (gpu/tracer/nvtx_injection.cc, libopscope_cupti_tracer.so).
//
// NVTX (header-only nvtx3, or libnvToolsExt) loads the library named by NVTX_INJECTION64_PATH at
// the program's first NVTX call and calls its InitializeInjectionNvtx2(get_export_table). Each
// tool's InitializeInjectionNvtx2 calls Install() with a Tool of its own; Install fills NVTX's
// CORE and CORE2 function tables with this file's entry points, which decode the call and hand
// the Tool plain values. Everything NVTX-specific is decided here, once:
//
// - Which calls: marks (A/W/Ex, domain), push/pop (A/W/Ex, domain), start/end (A/W/Ex, domain),
//   domain create (A/W) and destroy, registered strings (A/W), categories (A/W, domain),
//   nvtxNameOsThreadA/W, and CORE2's Initialize. Table slots are filled only for ids below the
//   size NVTX reports (its tables hold SIZE+1 slots, the last one unused).
// - Event attributes: only the fields inside `size` are read (an attribute struct too small to
//   hold the message has none); message types ASCII, UNICODE and REGISTERED; `category`.
// - Strings: ASCII as given; wide strings (wchar_t, UTF-32 on Linux) converted to UTF-8, invalid
//   code points becoming '?'; both cut at kMaxName bytes (on a character boundary). A null
//   string or a missing message is "no name" (Name::present() false): the Tool decides its text.
// - Handles given to the program (domains, registered strings) are not pointers: they encode an
//   id of the Tool's as (id << 4) | 0x8, which is never null and never a valid pointer to read;
//   the program only passes them back. The null domain is the default domain, id 0.
// - Return values: push returns the 0-based level of the range pushed on this thread, pop the
//   level of the range popped or -1 when none was open (per thread, over all domains).
//
// The core never throws or allocates (it runs with -fno-exceptions inside foreign programs); a
// Tool's methods must not throw either. One Tool per process (per injection library).
#pragma once

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <cstddef>
#include <cstdint>

namespace opscope::nvtx {

constexpr size_t kMaxName = 1023;

// A name as the program gave it. `text` (NUL-terminated, `length` bytes) is valid only during the
// call; `registered` is non-zero for a string registered earlier (the id Tool::RegisterString
// returned).
struct Name {
  const char* text = nullptr;
  size_t length = 0;
  uint32_t registered = 0;
  bool present() const { return text != nullptr || registered != 0; }
};

// What an event (mark, push, start) carries besides its domain.
struct Event {
  Name name;
  uint32_t category = 0;
};

class Tool {
 public:
  virtual ~Tool() = default;
  // Ids for domains and registered strings, encoded into handles (domain 0 is the default).
  virtual uint32_t CreateDomain(const Name& name) = 0;
  virtual uint32_t RegisterString(uint32_t domain, const Name& text) = 0;
  virtual void Push(uint32_t domain, const Event& e) = 0;
  virtual void Pop(uint32_t domain) = 0;
  // Returns the range id handed to the program (its nvtxRangeId_t); `End` gets it back.
  virtual uint64_t Start(uint32_t domain, const Event& e) = 0;
  virtual void End(uint32_t domain, uint64_t id) = 0;
  virtual void Mark(uint32_t, const Event&) {}
  virtual void NameThread(uint32_t, const Name&) {}
  virtual void NameCategory(uint32_t, uint32_t, const Name&) {}
};

// Fills NVTX's tables with the entry points, calling `tool` from then on. False, with *why, when
// this NVTX offers no callback or core table (then the injection should return 0: NVTX turns
// itself into no-ops).
bool Install(NvtxGetExportTableFunc_t get_export_table, Tool* tool, const char** why);

// The handle encoding (exposed for tests).
uintptr_t EncodeHandle(uint32_t id);
uint32_t DecodeHandle(const void* handle);

// Decoders used by the entry points (exposed for tests). `buf` holds kMaxName + 1 bytes.
Name AsciiName(const char* s, char* buf);
Name WideName(const wchar_t* s, char* buf);
Event EventOf(const nvtxEventAttributes_t* a, char* buf);

}  // namespace opscope::nvtx
