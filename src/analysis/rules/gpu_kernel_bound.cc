// gpu-kernel-bound: what limits the GPU kernels that take the time, from the throughputs
// `opscope gpu --metrics` measured (SM and memory % of peak, achieved occupancy). The kernels
// were classified when the profile was built (profile/gpu_kernel_bound.h: compute, memory or
// latency, at 60% of peak); this rule groups the hot ones by class and says what to do about each.
#include "profile/gpu_kernel_bound.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analysis/rules.h"
#include "base/strings.h"

namespace opscope::analysis::rules {

inline constexpr double kGpuHotKernelShare = 0.05;

namespace {

struct KernelTotals {
  double ns = 0;
  std::map<std::string, double> ns_by_bound;
  double w = 0, sm = 0, mem = 0, occ_w = 0, occ = 0;
  double theoretical = 0;
};

}  // namespace

static void Apply(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  if (!ctx.profile.gpu) return;
  std::map<std::string, KernelTotals> by_name;
  double total = 0;
  for (const profile::GpuKernel& k : ctx.profile.gpu->kernels) {
    if (k.bound.empty()) continue;
    double ns = std::max(k.metrics_duration_ns, 0.0);
    double w = ns > 0 ? ns : 1;
    KernelTotals& t = by_name[k.name];
    t.ns += ns;
    t.ns_by_bound[k.bound] += w;
    double mem = profile::BoundMemoryPct(k.memory_throughput_pct, k.dram_throughput_pct);
    t.w += w;
    t.sm += w * std::max(k.sm_throughput_pct, 0.0);
    t.mem += w * std::max(mem, 0.0);
    if (k.achieved_occupancy_pct >= 0) {
      t.occ_w += w;
      t.occ += w * k.achieved_occupancy_pct;
    }
    t.theoretical = k.occupancy;
    total += ns;
  }
  if (by_name.empty() || total <= 0) return;

  struct Hot {
    std::string name, line;
    double share;
    bool low_occupancy;
  };
  std::map<std::string, std::vector<Hot>> hot;  // bound -> kernels
  for (const auto& [name, t] : by_name) {
    double share = t.ns / total;
    if (share < kGpuHotKernelShare) continue;
    auto bound = std::max_element(t.ns_by_bound.begin(), t.ns_by_bound.end(),
                                  [](const auto& a, const auto& b) { return a.second < b.second; })
                     ->first;
    double occ = t.occ_w > 0 ? t.occ / t.occ_w : -1;
    std::string line = fmt::format("{} {:.1f}%: SM {:.0f}%, memory {:.0f}% of peak", name,
                                   share * 100, t.sm / t.w, t.mem / t.w);
    if (occ >= 0) line += fmt::format(", achieved occupancy {:.0f}%", occ);
    if (t.theoretical > 0) line += fmt::format(" (theoretical {:.0f}%)", t.theoretical * 100);
    hot[bound].push_back(
        {name, line, share, bound == "latency" && profile::LowAchievedOccupancy(occ)});
  }
  for (const char* bound : {"memory", "latency", "compute"}) {
    auto it = hot.find(bound);
    if (it == hot.end()) continue;
    std::vector<Hot>& v = it->second;
    std::sort(v.begin(), v.end(), [](const Hot& a, const Hot& b) { return a.share > b.share; });
    profile::Finding f;
    double share = 0;
    bool low_occupancy = false;
    std::vector<std::string> lines;
    for (const Hot& h : v) {
      share += h.share;
      f.ops.push_back(h.name);
      lines.push_back(h.line);
      low_occupancy |= h.low_occupancy;
    }
    f.title = fmt::format("{} {}-bound GPU kernel(s) take {:.1f}% of measured kernel time",
                          v.size(), bound, share * 100);
    f.evidence = Join(lines, "; ");
    const std::string b = bound;
    if (b == "memory") {
      f.severity = share >= 0.25 ? profile::Severity::kWarning : profile::Severity::kInfo;
      f.suggestion =
          "the kernel waits on memory, not arithmetic: fuse it with its producer or consumer so "
          "intermediates stay on chip, tile it through shared memory (attention: a flash-attention "
          "style kernel), use fp16/bf16/int8 to move fewer bytes, and make warps read contiguous, "
          "aligned addresses";
    } else if (b == "latency") {
      f.severity = share >= 0.25 ? profile::Severity::kWarning : profile::Severity::kInfo;
      f.suggestion =
          low_occupancy
              ? "neither compute nor memory is busy and too few warps are resident to hide "
                "latency: "
                "raise occupancy (fewer registers per thread with __launch_bounds__, less shared "
                "memory per block, more threads per block or more blocks)"
              : "neither compute nor memory is busy: give each launch more work (batch, fuse small "
                "kernels, CUDA graphs for launch overhead) or more independent work per thread "
                "(instruction-level parallelism) to hide latency";
      if (low_occupancy) f.title += " (low achieved occupancy)";
    } else {
      f.severity = profile::Severity::kInfo;
      f.suggestion =
          "arithmetic sets the time: use tensor cores (fp16/bf16/tf32/int8 with cuBLAS/cuDNN or "
          "TensorRT), avoid fp64 and special functions in inner loops, or do less work "
          "(a cheaper algorithm, pruning)";
    }
    f.numbers["share"] = share;
    f.numbers["kernels"] = static_cast<double>(v.size());
    f.numbers["low_occupancy"] = low_occupancy ? 1 : 0;
    out->push_back(std::move(f));
  }
}

extern const Rule kRule_gpu_kernel_bound = {
    "gpu-kernel-bound",
    "GPU kernels with --metrics throughputs taking >= 5% of measured kernel time, grouped by "
    "compute/memory/latency bound (60% of peak)",
    Apply};

}  // namespace opscope::analysis::rules
