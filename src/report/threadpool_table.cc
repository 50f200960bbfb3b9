// The "threadpool" section: ONNX Runtime's thread-pool statistics per node (the "ort.*" counters
// per run that importers/ort reads from `thread_scheduling_stats`), hottest nodes first. Never a
// primary section; shown after the op table of any profile that carries them.
#include <fmt/format.h>

#include <algorithm>

#include "base/strings.h"
#include "report/format.h"

namespace opscope::report {
namespace {

bool HasThreadPoolStats(const profile::Profile& p) {
  for (const auto& op : p.ops)
    if (op.counters.count("ort.threads_used")) return true;
  return false;
}

Status ThreadPoolTable(const profile::Profile& p, const ReportOptions& o, std::string* out) {
  std::vector<const profile::OpRecord*> ops;
  for (const auto& op : p.ops)
    if (op.counters.count("ort.threads_used")) ops.push_back(&op);
  std::stable_sort(ops.begin(), ops.end(),
                   [](auto* a, auto* b) { return a->stats.trimmed_mean > b->stats.trimmed_mean; });
  // A profile read from disk may carry some of the counters only.
  auto c = [](const profile::OpRecord* op, const char* k) {
    auto it = op->counters.find(k);
    return it == op->counters.end() ? 0.0 : it->second;
  };
  *out = fmt::format(
      "thread pool (ONNX Runtime thread_scheduling_stats, per run):\n{:<40}  {:>6}  {:>13}  "
      "{:>9}  {:>10}  {:>10}  {:>10}\n",
      "node", "loops", "threads (max)", "sub-runs", "dispatch", "main run", "wait");
  const size_t top = o.top > 0 ? static_cast<size_t>(o.top) : ops.size();
  for (size_t i = 0; i < ops.size() && i < top; ++i) {
    const profile::OpRecord* op = ops[i];
    *out +=
        fmt::format("{:<40}  {:>6.1f}  {:>7.1f} ({:>3.0f})  {:>9.1f}  {:>10}  {:>10}  {:>10}\n",
                    ClipName(op->name, 40, o.wide), c(op, "ort.parallel_loops"),
                    c(op, "ort.threads_used"), c(op, "ort.threads_used_max"),
                    c(op, "ort.sub_thread_runs"), HumanMs(c(op, "ort.distribution_us") / 1000),
                    HumanMs(c(op, "ort.main_run_us") / 1000), HumanMs(c(op, "ort.wait_us") / 1000));
  }
  if (ops.size() > top) *out += fmt::format("  ... {} more rows\n", ops.size() - top);
  return Status::Ok();
}

}  // namespace

OPSCOPE_REGISTER_SECTION(threadpool, {"threadpool", 60, "", &HasThreadPoolStats, &ThreadPoolTable});
}  // namespace opscope::report
