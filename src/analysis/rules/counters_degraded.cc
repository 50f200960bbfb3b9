// counters-unavailable: the profile has fewer or scaled counters than asked for.
#include <fmt/format.h>

#include "analysis/rules.h"
#include "base/strings.h"

namespace opscope::analysis::rules {

static bool Mentions(const std::string& s, std::initializer_list<const char*> words) {
  for (const char* w : words)
    if (s.find(w) != std::string::npos) return true;
  return false;
}

static void Apply(const RuleContext& ctx, std::vector<profile::Finding>* out) {
  std::vector<std::string> missing, multiplexed;
  for (const std::string& d : ctx.profile.meta.degradations) {
    if (Mentions(d, {"multiplex"}))
      multiplexed.push_back(d);
    else if (Mentions(d, {"counter", "PMU", "cycles", "instructions", "perf_event", "cache"}))
      missing.push_back(d);
  }
  if (!missing.empty()) {
    profile::Finding f;
    f.severity = profile::Severity::kInfo;
    f.title = "hardware counters unavailable: bound classes rest on time, FLOPs and bytes only";
    f.evidence = Join(missing, "; ");
    f.suggestion =
        "run on bare metal (VMs rarely expose a PMU), lower "
        "kernel.perf_event_paranoid (`sysctl kernel.perf_event_paranoid=1`) or run "
        "as root to get IPC and cache misses that confirm the roofline classes";
    f.numbers["degradations"] = static_cast<double>(missing.size());
    out->push_back(std::move(f));
  }
  if (!multiplexed.empty()) {
    profile::Finding f;
    f.severity = profile::Severity::kWarning;
    f.title = "counters were multiplexed: their values are scaled estimates";
    f.evidence = Join(multiplexed, "; ");
    f.suggestion =
        "ask for fewer events per run (the PMU has only a few programmable counters), "
        "or repeat the run with different event groups";
    f.numbers["degradations"] = static_cast<double>(multiplexed.size());
    out->push_back(std::move(f));
  }
}

extern const Rule kRule_counters_degraded = {
    "counters-unavailable",
    "meta.degradations mention missing counters/PMU (info) or multiplexing (warning)", Apply};

}  // namespace opscope::analysis::rules
