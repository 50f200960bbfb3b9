// libopscope_ranges_nvtx.so: the NVTX v3 injection library of `opscope run`. NVTX loads it from
// NVTX_INJECTION64_PATH at the program's first NVTX call; the shared NVTX core (base/nvtx_core.h)
// decodes every call and hands this file's Tool plain names and domain ids, which go to the
// shared range recorder (collect/ranges_recorder.h). NVTX needs no CUDA: this works for any
// program that uses the NVTX headers. Returning 0 (neither OPSCOPE_RANGES_OUT nor
// OPSCOPE_ATTACHABLE=1 set) tells NVTX to turn itself into no-ops.
//
// When is the recorder there? NVTX v3 opens NVTX_INJECTION64_PATH at the program's first NVTX
// call and at no other time: its loader has no earlier hook, and the two ways a library already
// in the process could be found are off in the header (nvtxInit.h: "pre-injected" lookup disabled
// in load sequence 2; the static-injection pointer is a weak symbol the executable defines
// itself, which a preloaded library cannot replace). So an attachable program (`opscope run -p`)
// whose first NVTX call is still to come has no NVTX channel, unless this library is also in
// LD_PRELOAD: then its constructor starts the dormant recorder and opens the channel at load, and
// NVTX's later dlopen of the same path returns this same library, whose entry point finds the
// recorder running.
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>

#include "base/nvtx_core.h"
#include "collect/ranges_recorder.h"

namespace {

namespace rec = opscope::collect::rec;
namespace nvtx = opscope::nvtx;

class RangesTool : public nvtx::Tool {
 public:
  void Start() { default_domain_ = rec::InternDomain("nvtx"); }

  uint32_t CreateDomain(const nvtx::Name& n) override { return rec::InternDomain(Text(n)); }
  uint32_t RegisterString(uint32_t, const nvtx::Name& n) override {
    std::lock_guard<std::mutex> lock(mu_);
    registered_.emplace_back(Text(n));
    return static_cast<uint32_t>(registered_.size());
  }
  void Push(uint32_t domain, const nvtx::Event& e) override {
    rec::Push(Domain(domain), Text(e.name));
  }
  void Pop(uint32_t domain) override { rec::Pop(Domain(domain)); }
  uint64_t Start(uint32_t domain, const nvtx::Event& e) override {
    return rec::Start(Domain(domain), Text(e.name));
  }
  void End(uint32_t, uint64_t id) override { rec::End(id); }

 private:
  // The NVTX default domain (handle null, id 0) is recorded as "nvtx".
  uint32_t Domain(uint32_t id) const { return id == 0 ? default_domain_ : id; }
  // Registered strings live until exit (the deque never moves them).
  const char* Text(const nvtx::Name& n) {
    if (n.registered != 0) {
      std::lock_guard<std::mutex> lock(mu_);
      if (n.registered <= registered_.size()) return registered_[n.registered - 1].c_str();
      return "(unregistered string)";
    }
    return n.text != nullptr ? n.text : "(unnamed)";
  }

  uint32_t default_domain_ = 0;
  std::mutex mu_;
  std::deque<std::string> registered_;
};

RangesTool* g_tool = nullptr;  // leaked: NVTX may call in until the very end

// Preloaded into an attachable program: attachable from load, before the first NVTX call. Only in
// attach mode: under `opscope run -- CMD` the recorder starts as before, at NVTX's first call, so
// a program that never calls NVTX writes no NVTX file.
__attribute__((constructor)) void StartAtLoad() {
  const char* attachable = std::getenv("OPSCOPE_ATTACHABLE");
  const char* out = std::getenv("OPSCOPE_RANGES_OUT");
  if (attachable != nullptr && attachable[0] == '1' && (out == nullptr || out[0] == '\0'))
    rec::Init("nvtx");
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int NVTX_API
InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  if (!rec::Init("nvtx")) return 0;
  if (g_tool == nullptr) {
    g_tool = new RangesTool;
    g_tool->Start();
  }
  const char* why = "";
  return nvtx::Install(get_export_table, g_tool, &why) ? 1 : 0;
}
