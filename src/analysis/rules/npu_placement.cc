// npu-cpu-fallback and npu-memory-bound: an NPU runtime's own profile (RKNN's layer table,
// importers/rknn) says where each layer ran and how many cycles it spent waiting for DDR.
// - npu-cpu-fallback: layers that fell back to the CPU (the NPU has no kernel for them:
//   GridSample, Softmax of some shapes, custom ops) take >= 5% of the layer time; the I/O
//   operators (InputOperator/OutputOperator) always run on the CPU and are not counted.
// - npu-memory-bound: NPU layers whose DDR cycles exceed their NPU (compute) cycles take >= 5%:
//   they wait for memory, not for MACs.
#include <fmt/format.h>

#include <map>

#include "analysis/rules.h"
#include "base/strings.h"

namespace opscope::analysis::rules {
namespace {

inline constexpr double kMinShare = 0.05;

double Counter(const profile::OpRecord& op, const char* k) {
  auto it = op.counters.find(k);
  return it == op.counters.end() ? -1 : it->second;
}

void CpuFallback(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  double share = 0, ms = 0;
  std::map<std::string, int> types;
  profile::Finding f;
  for (const profile::OpRecord* op : rule_util::OpsByShare(ctx.profile)) {
    if (Counter(*op, "rknn.cpu") != 1 || op->op_type == "InputOperator" ||
        op->op_type == "OutputOperator")
      continue;
    share += op->share;
    ms += op->stats.trimmed_mean;
    ++types[op->op_type];
    if (f.ops.size() < 8) f.ops.push_back(op->name);
  }
  if (share < kMinShare) return;
  std::vector<std::string> t;
  for (const auto& [type, n] : types) t.push_back(n > 1 ? fmt::format("{}×{}", type, n) : type);
  f.rule = "npu-cpu-fallback";
  f.severity = share >= 0.25 ? profile::Severity::kCritical : profile::Severity::kWarning;
  f.title = fmt::format("layers that fell back to the CPU take {:.1f}% of the time", share * 100);
  f.evidence = fmt::format(
      "{} layer(s) ran on the CPU, not the NPU ({}): {} per frame, {:.1f}% of the layer time; "
      "largest: {}",
      f.ops.size(), Join(t, ", "), HumanMs(ms), share * 100, f.ops.front());
  f.suggestion =
      "the NPU has no kernel for these layers as exported: replace them with operators it runs "
      "(GridSample by a precomputed gather or a custom op, Softmax on the last axis, supported "
      "Resize modes), move them out of the model into pre/post-processing, or check the "
      "toolkit's operator support list for the shapes and opset it needs";
  f.numbers["share"] = share;
  f.numbers["ms"] = ms;
  out->push_back(std::move(f));
}

void MemoryBound(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  double share = 0, ms = 0;
  profile::Finding f;
  std::vector<std::string> briefs;
  for (const profile::OpRecord* op : rule_util::OpsByShare(ctx.profile)) {
    const double ddr = Counter(*op, "rknn.ddr_cycles"), npu = Counter(*op, "rknn.npu_cycles");
    if (Counter(*op, "rknn.cpu") == 1 || ddr <= 0 || ddr <= npu) continue;
    share += op->share;
    ms += op->stats.trimmed_mean;
    if (f.ops.size() < 8) {
      f.ops.push_back(op->name);
      briefs.push_back(
          fmt::format("{} ({}, DDR {:.0f} vs NPU {:.0f} cycles)", op->name, op->op_type, ddr, npu));
    }
  }
  if (share < kMinShare) return;
  f.rule = "npu-memory-bound";
  f.severity = share >= 0.25 ? profile::Severity::kWarning : profile::Severity::kInfo;
  f.title = fmt::format("NPU layers waiting on DDR take {:.1f}% of the time", share * 100);
  f.evidence = fmt::format("{} per frame in layers whose DDR cycles exceed their NPU cycles: {}",
                           HumanMs(ms), Join(briefs, "; "));
  f.suggestion =
      "these layers move more than they compute (Split, Concat, 1x1 convolutions on wide "
      "tensors): fuse them with their neighbours, keep tensors in the NPU's native layout "
      "between layers (avoid layout changes the toolkit cannot fuse), and use int8 rather than "
      "float16 where accuracy allows, halving the traffic";
  f.numbers["share"] = share;
  f.numbers["ms"] = ms;
  out->push_back(std::move(f));
}

}  // namespace

extern const Rule kRule_npu_cpu_fallback = {
    "npu-cpu-fallback",
    "layers an NPU runtime ran on the CPU (RKNN Target CPU; not the I/O operators) take >= 5% of "
    "the time",
    CpuFallback};
extern const Rule kRule_npu_memory_bound = {
    "npu-memory-bound",
    "NPU layers whose DDR cycles exceed their NPU cycles (RKNN) take >= 5% of the time",
    MemoryBound};

}  // namespace opscope::analysis::rules
