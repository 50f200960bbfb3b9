// ceilings-exceeded: an op runs above a machine ceiling, so the ceilings (not the op) are wrong:
// measured while other processes competed for the CPU, or on another machine. Every roofline
// class and percentage of the profile rests on them.
#include <fmt/format.h>

#include "analysis/rules.h"
#include "base/strings.h"

namespace opscope::analysis::rules {

static void Apply(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  std::vector<std::string> lines;
  profile::Finding f;
  for (const RooflinePoint& r : ctx.roofline) {
    if (r.above_roof.empty()) continue;
    f.ops.push_back(r.name);
    lines.push_back(fmt::format("{} ({}) {}", r.name, r.op_type, r.above_roof));
  }
  if (lines.empty()) return;
  f.severity = profile::Severity::kWarning;
  f.title =
      fmt::format("{} op(s) run above the machine ceilings: the ceilings are wrong", lines.size());
  f.evidence = Join(lines, "; ");
  if (ctx.ceilings && !ctx.ceilings->measured_at.empty())
    f.evidence += fmt::format(" (ceilings: {} on '{}', {})", ctx.ceilings->method,
                              ctx.ceilings->cpu_model, ctx.ceilings->measured_at);
  f.suggestion =
      "run `opscope machine` again on a quiet machine (no builds or benchmarks "
      "running), or pass the right --peak-gflops/--peak-gbps; until then do not "
      "trust the bound classes and percentages of roof";
  f.numbers["ops"] = static_cast<double>(lines.size());
  out->push_back(std::move(f));
}

extern const Rule kRule_ceilings_exceeded = {
    "ceilings-exceeded",
    "an op achieves > 110% of the peak GFLOP/s, or of the DRAM bandwidth with more bytes than "
    "the LLC holds (needs machine ceilings)",
    Apply};

}  // namespace opscope::analysis::rules
