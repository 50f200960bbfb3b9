// The memory section's findings (analysis layer; listed in analysis/rules/rules.def):
// - memory-peak-tensors: a few tensors make most of the peak;
// - memory-long-lived: a large tensor stays alive across most of the run;
// - memory-weight-copies: kernels keep repacked copies that double the weights;
// - memory-rss-gap: the process holds far more than the model needs.
#include <fmt/format.h>

#include <algorithm>

#include "analysis/rules.h"
#include "base/strings.h"
#include "sections/memory/memory_section.h"

namespace opscope::analysis::rules {
namespace {

using memory::LiveTensor;
using memory::MemorySection;

inline constexpr double kMinPeakBytes = 1 << 20;  // below 1 MiB, memory is nobody's problem
inline constexpr size_t kFewTensors = 3;
inline constexpr double kFewShare = 0.6;
inline constexpr double kLongLivedPeakShare = 0.1;
inline constexpr double kLongLivedStepShare = 0.5;
inline constexpr int kLongLivedMinSteps = 8;
inline constexpr double kCopyShare = 0.5;
inline constexpr double kRssGapBytes = 256.0 * (1 << 20);
inline constexpr double kRssRatio = 3;

const MemorySection* Of(const RuleContext& ctx) {
  const MemorySection* m = ctx.profile.sections.Find<MemorySection>();
  return m && m->peak_step >= 0 ? m : nullptr;
}

std::string TensorBrief(const LiveTensor& t) {
  return fmt::format("'{}' [{}] {} {}", t.name, ShapeToString(t.shape), t.dtype,
                     HumanBytes(t.bytes));
}

void PeakTensors(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  const MemorySection* m = Of(ctx);
  if (!m || m->peak_live_bytes < kMinPeakBytes) return;
  const std::vector<int> alive = memory::AliveAt(*m, m->peak_step);
  const size_t k = std::min(kFewTensors, alive.size());
  double top = 0;
  std::vector<std::string> briefs, ops;
  for (size_t i = 0; i < k; ++i) {
    const LiveTensor& t = m->tensors[static_cast<size_t>(alive[i])];
    top += t.bytes;
    briefs.push_back(TensorBrief(t));
    if (!t.producer.empty()) ops.push_back(t.producer);
  }
  const double share = top / m->peak_live_bytes;
  if (share < kFewShare) return;
  profile::Finding f;
  f.rule = "memory-peak-tensors";
  f.severity = profile::Severity::kInfo;
  f.title = fmt::format("{} tensor(s) make {:.0f}% of the {} activation peak", k, share * 100,
                        HumanBytes(m->peak_live_bytes));
  f.evidence = fmt::format("at step {} '{}', {} tensors are alive; the largest: {}",
                           m->peak_step + 1, m->steps[static_cast<size_t>(m->peak_step)].name,
                           alive.size(), Join(briefs, ", "));
  f.suggestion =
      "shrink those tensors: let their producer write in place or fuse it with its consumer "
      "(no second buffer), recompute a cheap tensor instead of keeping it, store it in lower "
      "precision (fp16/int8), and avoid layouts that need a transposed copy";
  f.ops = ops;
  f.numbers["peak_live_bytes"] = m->peak_live_bytes;
  f.numbers["top_bytes"] = top;
  f.numbers["share"] = share;
  out->push_back(std::move(f));
}

void LongLived(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  const MemorySection* m = Of(ctx);
  if (!m || m->peak_live_bytes < kMinPeakBytes) return;
  const int n = static_cast<int>(m->steps.size());
  std::vector<const LiveTensor*> hits;
  for (const LiveTensor& t : m->tensors) {
    const int span = t.last_step - t.first_step + 1;
    // The caller owns the inputs and keeps the outputs: their lifetimes are not the graph's.
    if (t.place == "input" || t.place == "output") continue;
    if (t.bytes >= kLongLivedPeakShare * m->peak_live_bytes && span >= kLongLivedMinSteps &&
        span >= kLongLivedStepShare * n)
      hits.push_back(&t);
  }
  if (hits.empty()) return;
  std::stable_sort(hits.begin(), hits.end(), [](auto* a, auto* b) { return a->bytes > b->bytes; });
  std::vector<std::string> briefs;
  profile::Finding f;
  double bytes = 0;
  for (const LiveTensor* t : hits) {
    bytes += t->bytes;
    if (briefs.size() < 4)
      briefs.push_back(fmt::format("{} alive over steps {}-{} of {}", TensorBrief(*t),
                                   t->first_step + 1, t->last_step + 1, n));
    if (!t->producer.empty() && f.ops.size() < 8) f.ops.push_back(t->producer);
  }
  f.rule = "memory-long-lived";
  f.severity = profile::Severity::kInfo;
  f.title = fmt::format("{} large tensor(s) stay alive across most of the run ({})", hits.size(),
                        HumanBytes(bytes));
  f.evidence = Join(briefs, "; ");
  f.suggestion =
      "a tensor written early and read late holds its memory the whole time: compute it just "
      "before its late consumer, or keep a smaller form of it (pooled, lower precision) and "
      "expand it there";
  f.numbers["tensors"] = static_cast<double>(hits.size());
  f.numbers["bytes"] = bytes;
  out->push_back(std::move(f));
}

void WeightCopies(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  const MemorySection* m = Of(ctx);
  if (!m || m->weight_bytes < kMinPeakBytes ||
      m->packed_weight_bytes < kCopyShare * m->weight_bytes)
    return;
  std::vector<std::pair<double, std::string>> steps;
  for (const auto& s : m->steps)
    if (s.packed_weight_bytes > 0) steps.push_back({s.packed_weight_bytes, s.name});
  std::stable_sort(steps.begin(), steps.end(), [](auto& a, auto& b) { return a.first > b.first; });
  profile::Finding f;
  f.rule = "memory-weight-copies";
  f.severity = profile::Severity::kInfo;
  f.title = fmt::format("kernels keep {} of repacked weights beside the model's {}",
                        HumanBytes(m->packed_weight_bytes), HumanBytes(m->weight_bytes));
  std::vector<std::string> top;
  for (size_t i = 0; i < steps.size() && i < 4; ++i) {
    top.push_back(fmt::format("'{}' {}", steps[i].second, HumanBytes(steps[i].first)));
    f.ops.push_back(steps[i].second);
  }
  f.evidence = fmt::format(
      "{} step(s) hold their weights a second time in the layout their kernel prefers (oneDNN "
      "blocked formats): {}",
      steps.size(), Join(top, ", "));
  f.suggestion =
      "the plain initializers stay in memory after packing: a deployment runtime can drop them "
      "(ONNX Runtime shares and frees prepacked weights with session.use_prepacked_weights / "
      "a shared PrepackedWeightsContainer; TensorRT builds them into the engine), or store the "
      "model's weights already in the packed layout";
  f.numbers["weight_bytes"] = m->weight_bytes;
  f.numbers["packed_weight_bytes"] = m->packed_weight_bytes;
  out->push_back(std::move(f));
}

void RssGap(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  const MemorySection* m = Of(ctx);
  if (!m || m->peak_rss_bytes <= 0) return;
  const double model =
      m->peak_live_bytes + m->weight_bytes + m->packed_weight_bytes + m->workspace_bytes;
  const double gap = m->peak_rss_bytes - model;
  if (gap < kRssGapBytes || m->peak_rss_bytes < kRssRatio * model) return;
  profile::Finding f;
  f.rule = "memory-rss-gap";
  f.severity = profile::Severity::kInfo;
  f.title = fmt::format("the process peaked at {}, {} above what the model holds",
                        HumanBytes(m->peak_rss_bytes), HumanBytes(gap));
  f.evidence = fmt::format(
      "peak RSS {} (VmHWM) against {} of activations at their peak, weights, packed copies and "
      "workspace: the rest is the allocator, the libraries, thread stacks and the loader's "
      "copies of the model",
      HumanBytes(m->peak_rss_bytes), HumanBytes(model));
  f.suggestion =
      "on a memory-tight board, measure the runtime alone (an empty model) to see its floor; "
      "release the parsed model after the session is built, cap thread pools, and prefer an "
      "arena allocator that returns memory (mallopt/MALLOC_ARENA_MAX with many threads)";
  f.numbers["peak_rss_bytes"] = m->peak_rss_bytes;
  f.numbers["model_bytes"] = model;
  out->push_back(std::move(f));
}

}  // namespace

extern const Rule kRule_memory_peak_tensors = {
    "memory-peak-tensors",
    "the activation peak is >= 1 MiB and its 3 largest tensors (or fewer, when fewer are alive) "
    "make >= 60% of it",
    PeakTensors};
extern const Rule kRule_memory_long_lived = {
    "memory-long-lived",
    "an intermediate tensor >= 10% of the activation peak alive over >= 50% (and >= 8) of the "
    "steps",
    LongLived};
extern const Rule kRule_memory_weight_copies = {
    "memory-weight-copies",
    "kernels' packed weight copies >= 50% of the model's weights (>= 1 MiB)", WeightCopies};
extern const Rule kRule_memory_rss_gap = {
    "memory-rss-gap", "peak RSS >= 3x the model's memory at its peak and >= 256 MiB above it",
    RssGap};

}  // namespace opscope::analysis::rules
