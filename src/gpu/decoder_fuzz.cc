// Fuzz entry point for the GPU trace decoder and everything downstream of it: any bytes must
// decode to an error or to a trace whose Profile validates and summarizes without crashing.
// Built as a libFuzzer target with OPSCOPE_FUZZ; the same entry point runs in gpu_test on
// forged traces with truncations and bit flips.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "analysis/gpu_summary.h"
#include "gpu/builder.h"
#include "gpu/decoder.h"
#include "report/gpu_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace opscope;
  auto t = gpu::DecodeTrace(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!t.ok()) return 0;
  profile::Profile p;
  gpu::AddTraceToProfile(*t, &p);
  if (!profile::Validate(p).ok()) __builtin_trap();
  analysis::GpuSummary s = analysis::Summarize(p);
  p.findings = analysis::GpuFindings(p, s);
  (void)report::FormatGpuReport(p, s, true);
  return 0;
}
