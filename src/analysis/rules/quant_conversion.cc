// quant-conversion: a quantized model spends time converting between float and int8 —
// QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear nodes that ran as steps of their own
// (Q/DQ pairs that did not fold into an integer kernel), so activations make a float round trip.
#include <fmt/format.h>

#include <map>

#include "analysis/rules.h"
#include "base/strings.h"

namespace opscope::analysis::rules {

inline constexpr double kWarnShare = 0.05, kCriticalShare = 0.20;

static bool IsConversion(const std::string& op_type) {
  return op_type == "QuantizeLinear" || op_type == "DequantizeLinear" ||
         op_type == "DynamicQuantizeLinear";
}

static void Apply(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  double share = 0, ms = 0, bytes = 0;
  std::map<std::string, int> by_type;
  std::vector<const profile::OpRecord*> conv;
  int fused = 0;
  for (const profile::OpRecord* op : rule_util::OpsByShare(ctx.profile)) {
    if (!IsConversion(op->op_type)) continue;
    if (op->status == profile::OpStatus::kFused) {
      ++fused;
      continue;
    }
    if (op->status != profile::OpStatus::kExecuted) continue;
    share += op->share;
    ms += op->stats.trimmed_mean;
    bytes += op->bytes;
    by_type[op->op_type]++;
    conv.push_back(op);
  }
  if (conv.empty() || share < kWarnShare) return;
  profile::Finding f;
  f.severity = share >= kCriticalShare ? profile::Severity::kCritical : profile::Severity::kWarning;
  f.title = fmt::format("float<->int8 conversions take {:.1f}% of op time", share * 100);
  std::vector<std::string> types, top;
  for (const auto& [t, n] : by_type) types.push_back(fmt::format("{}×{}", t, n));
  for (size_t i = 0; i < conv.size() && i < 5; ++i) {
    top.push_back(rule_util::OpBrief(*conv[i]));
    f.ops.push_back(conv[i]->name);
  }
  f.evidence = fmt::format(
      "{} conversion node(s) ran on their own ({}): {} per run, {:.1f}% of op time, moving {}; "
      "{} other Q/DQ node(s) were fused into integer kernels; largest: {}",
      conv.size(), Join(types, ", "), HumanMs(ms), share * 100, HumanBytes(bytes), fused,
      Join(top, "; "));
  f.suggestion =
      "keep activations in int8 between quantized ops: quantize the model in QDQ form with "
      "DequantizeLinear -> Conv/MatMul/Gemm [-> Relu] -> QuantizeLinear around every heavy op "
      "(static quantization with calibration; each such group runs as one int8 kernel), "
      "instead of dynamic quantization, which re-quantizes every activation at run time "
      "(DynamicQuantizeLinear) and dequantizes every result to float";
  f.numbers["share"] = share;
  f.numbers["ms"] = ms;
  f.numbers["bytes"] = bytes;
  f.numbers["ops"] = static_cast<double>(conv.size());
  f.numbers["fused"] = fused;
  out->push_back(std::move(f));
}

extern const Rule kRule_quant_conversion = {
    "quant-conversion",
    "QuantizeLinear/DequantizeLinear/DynamicQuantizeLinear steps of their own (not fused into an "
    "integer kernel) take >= 5% of op time",
    Apply};

}  // namespace opscope::analysis::rules
