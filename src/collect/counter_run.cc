#include "collect/counter_run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "base/clock.h"
#include "base/launch.h"
#include "base/strings.h"

namespace opscope::collect {
profile::CounterReading MakeReading(const CounterSet::Slot& slot, const RawCount& raw) {
  profile::CounterReading r;
  r.event = slot.spec.name;
  if (slot.requested != slot.spec.name) r.requested = slot.requested;
  r.supported = slot.supported;
  r.note = slot.note;
  r.unit = slot.spec.IsTime() ? "ms" : "count";
  r.raw = static_cast<double>(raw.value);
  r.enabled_ns = static_cast<double>(raw.enabled_ns);
  r.running_ns = static_cast<double>(raw.running_ns);
  const double scaled = ScaledValue(raw);
  r.value = slot.spec.IsTime() ? scaled / 1e6 : scaled;
  r.running_fraction = raw.enabled_ns > 0 ? std::min(1.0, static_cast<double>(raw.running_ns) /
                                                              static_cast<double>(raw.enabled_ns))
                                          : (slot.supported ? 1.0 : 0.0);
  if (slot.supported && raw.enabled_ns > 0 && raw.running_ns == 0 && r.note.empty())
    r.note = "not counted: the event never got a hardware counter (too many events for the PMU)";
  return r;
}

StatusOr<CountedRun> RunCounted(const std::vector<std::string>& argv,
                                const std::vector<EventSpec>& events, PerfEventOpener& opener,
                                TargetSignals* signals) {
  if (argv.empty()) return InvalidArgument("no command given: usage `opscope stat -- CMD [ARGS]`");
  std::optional<TargetSignals> local_signals;
  if (signals == nullptr) signals = &local_signals.emplace();
  CountedRun out;
  LaunchOptions launch;
  launch.argv = argv;
  auto started = LaunchedTarget::Start(launch, signals);
  if (!started.ok()) {
    if (started.status().code() == StatusCode::kInternal) return started.status();
    out.exec_error = started.status();
    out.run.exit_code = ExitCodeForStartError(out.exec_error);
    out.run.note = out.exec_error.message();
    return out;
  }
  LaunchedTarget& target = *started;
  StatusOr<CounterSet> set_or =
      CounterSet::Open(opener, events, StatTarget(target.pid()), &out.degradations);
  if (!set_or.ok()) {
    target.Abandon();
    return set_or.status();
  }
  CounterSet set = std::move(set_or).value();
  out.user_only = set.user_only();

  Status exec = target.Go();
  const TargetExit end = target.Wait();
  if (!exec.ok()) {
    out.exec_error = exec;
    out.run.exit_code = ExitCodeForStartError(exec);
    out.run.note = exec.message();
    return out;
  }
  std::vector<RawCount> raw(set.slots().size());
  OPSCOPE_RETURN_IF_ERROR(set.Read(raw));
  profile::StatRun& run = out.run;
  run.wall_ms = static_cast<double>(end.wall_ns) / 1e6;
  run.exit_code = end.exit_code;
  if (end.term_signal != 0) {
    run.term_signal = end.term_signal;
    run.note = "terminated by signal " + SignalName(run.term_signal) + " (" +
               std::to_string(run.term_signal) + "); counts are up to that point";
  }
  for (size_t i = 0; i < raw.size(); ++i) run.counters.push_back(MakeReading(set.slots()[i], raw[i]));
  return out;
}

}  // namespace opscope::collect
