// NVTX ranges, recorded by the tracer itself through NVTX's injection interface.
//
// The NVTX client (header-only nvtx3, or libnvToolsExt) loads the library named by
// NVTX_INJECTION64_PATH on its first call and hands InitializeInjectionNvtx2 a table of function
// pointers to fill. `opscope gpu` points that variable at this library, so every nvtxRangePush/
// Pop/Start/End and mark of the program (TensorRT and PyTorch emit one range per layer) lands
// here with the calling thread and a CLOCK_MONOTONIC timestamp, on the same timeline as the CUPTI
// records. Doing this ourselves rather than through CUPTI's own NVTX support keeps NVTX working
// in programs that never touch CUDA and avoids CUPTI 13.0's crash in nvtxNameOsThreadA
// (NVIDIA/NVTX#125).
//
// Decoding NVTX (attributes, wide strings, handles, domains) is the shared core's
// (base/nvtx_core.h); this file turns its calls into trace records. Domain and registered-string
// ids are string ids of the trace, so the decoder names them without a table of its own.
#include <atomic>
#include <cstdint>

#include "base/nvtx_core.h"
#include "gpu/trace_format.h"
#include "gpu/tracer/session.h"
#include "gpu/tracer/trace_writer.h"

namespace opscope::gpu::tracer {
namespace {

std::atomic<uint64_t> g_next_range_id{1};

// The trace's string id of a name (0: no name). Called with the writer locked.
uint32_t IdLocked(TraceWriter& w, const nvtx::Name& n) {
  if (n.registered != 0) return n.registered;
  return n.text != nullptr ? w.InternLocked(n.text, n.length) : 0;
}

class TraceTool : public nvtx::Tool {
 public:
  uint32_t CreateDomain(const nvtx::Name& n) override { return Intern(n); }
  uint32_t RegisterString(uint32_t, const nvtx::Name& n) override { return Intern(n); }

  void Push(uint32_t domain, const nvtx::Event& e) override {
    TraceWriter& w = Writer();
    w.Lock();
    trace::NvtxPushRecord r{MonotonicNs(), CurrentTid(), 0, domain, 0};
    r.name = IdLocked(w, e.name);
    w.AppendLocked(trace::kNvtxPush, &r, sizeof r);
    w.Unlock();
  }
  void Pop(uint32_t domain) override {
    trace::NvtxPopRecord r{MonotonicNs(), CurrentTid(), domain};
    Writer().Lock();
    Writer().AppendLocked(trace::kNvtxPop, &r, sizeof r);
    Writer().Unlock();
  }
  uint64_t Start(uint32_t domain, const nvtx::Event& e) override {
    const uint64_t id = g_next_range_id.fetch_add(1);
    TraceWriter& w = Writer();
    w.Lock();
    trace::NvtxStartRecord r{MonotonicNs(), id, CurrentTid(), 0, domain, 0};
    r.name = IdLocked(w, e.name);
    w.AppendLocked(trace::kNvtxStart, &r, sizeof r);
    w.Unlock();
    return id;
  }
  void End(uint32_t, uint64_t id) override {
    trace::NvtxEndRecord r{MonotonicNs(), id, CurrentTid(), 0};
    Writer().Lock();
    Writer().AppendLocked(trace::kNvtxEnd, &r, sizeof r);
    Writer().Unlock();
  }
  void Mark(uint32_t domain, const nvtx::Event& e) override {
    TraceWriter& w = Writer();
    w.Lock();
    trace::NvtxMarkRecord r{MonotonicNs(), CurrentTid(), 0, domain, 0};
    r.name = IdLocked(w, e.name);
    w.AppendLocked(trace::kNvtxMark, &r, sizeof r);
    w.Unlock();
  }
  void NameThread(uint32_t tid, const nvtx::Name& n) override {
    TraceWriter& w = Writer();
    w.Lock();
    trace::ThreadNameRecord r{tid, IdLocked(w, n)};
    w.AppendLocked(trace::kThreadName, &r, sizeof r);
    w.Unlock();
  }

 private:
  static uint32_t Intern(const nvtx::Name& n) {
    TraceWriter& w = Writer();
    w.Lock();
    const uint32_t id = IdLocked(w, n);
    w.Unlock();
    return id;
  }
};

// Static storage, never destroyed before the process ends (NVTX may call in until then).
TraceTool* Tool() {
  static TraceTool* tool = new TraceTool;
  return tool;
}

}  // namespace
}  // namespace opscope::gpu::tracer

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  using namespace opscope::gpu::tracer;
  if (get_export_table == nullptr || !StartTracer()) return 0;  // 0: NVTX turns itself into no-ops
  const char* why = "";
  if (!opscope::nvtx::Install(get_export_table, Tool(), &why)) {
    Log("%s; NVTX ranges are not recorded", why);
    return 0;
  }
  return 1;
}
