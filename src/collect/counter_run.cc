#include "collect/counter_run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "base/clock.h"
#include "base/launch.h"
#include "base/strings.h"
#include "collect/perf_access.h"

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
  r.running_fraction =
      raw.enabled_ns > 0
          ? std::min(1.0, static_cast<double>(raw.running_ns) / static_cast<double>(raw.enabled_ns))
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
  // A refusal that no rung of the ladder can get around is said before the command starts.
  OPSCOPE_RETURN_IF_ERROR(CheckPerfAccess(AccessOf(opener), {}));
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
  for (size_t i = 0; i < raw.size(); ++i)
    run.counters.push_back(MakeReading(set.slots()[i], raw[i]));
  return out;
}

namespace {

// Adds `r` into `sum` (same event): values and times add up; the running fraction is recomputed.
void Accumulate(profile::CounterReading* sum, const profile::CounterReading& r) {
  if (sum->event.empty()) {
    *sum = r;
    return;
  }
  sum->value += r.value;
  sum->raw += r.raw;
  sum->enabled_ns += r.enabled_ns;
  sum->running_ns += r.running_ns;
  sum->supported = sum->supported || r.supported;
  if (sum->enabled_ns > 0) sum->running_fraction = std::min(1.0, sum->running_ns / sum->enabled_ns);
}

}  // namespace

StatusOr<CountedRun> CountAttached(const AttachSpec& spec, const ResolvedAttach& what,
                                   const std::vector<EventSpec>& events, PerfEventOpener& opener,
                                   const TargetSignals& signals, StopReason* stop) {
  struct Counted {
    AttachTask task;  // tid 0 for a CPU
    CounterSet set;
  };
  CountedRun out;
  std::vector<Counted> sets;
  auto open = [&](const AttachTask& task, pid_t pid, int cpu) -> Status {
    CounterTarget t;
    t.pid = pid;
    t.cpu = cpu;
    auto set = CounterSet::Open(opener, events, t, &out.degradations);
    if (!set.ok()) return set.status();
    out.user_only = out.user_only || set->user_only();
    sets.push_back({task, std::move(set).value()});
    return Status::Ok();
  };
  for (const AttachTask& task : what.tasks) {
    Status st = open(task, task.tid, -1);
    if (st.code() == StatusCode::kNotFound) continue;  // it ended between the listing and now
    OPSCOPE_RETURN_IF_ERROR(st);
  }
  for (int cpu : what.cpus) OPSCOPE_RETURN_IF_ERROR(open(AttachTask{}, -1, cpu));
  if (sets.empty()) return NotFound("nothing left to count: every thread has exited");

  const int64_t t0 = NowNs();
  *stop = WaitForStop(spec, what, signals, nullptr);
  const int64_t t1 = NowNs();
  profile::StatRun& run = out.run;
  run.wall_ms = static_cast<double>(t1 - t0) / 1e6;
  run.counters.resize(events.size());
  for (Counted& c : sets) {
    std::vector<RawCount> raw(c.set.slots().size());
    OPSCOPE_RETURN_IF_ERROR(c.set.Read(raw));
    profile::TaskCounts task{c.task.pid, c.task.tid, c.task.comm, {}};
    for (size_t i = 0; i < raw.size() && i < run.counters.size(); ++i) {
      profile::CounterReading r = MakeReading(c.set.slots()[i], raw[i]);
      Accumulate(&run.counters[i], r);
      task.counters.push_back(std::move(r));
    }
    if (c.task.tid != 0) run.tasks.push_back(std::move(task));
  }
  // Largest first, by the first time event (task-clock by default), else the first event.
  size_t key = 0;
  for (size_t i = 0; i < events.size(); ++i)
    if (events[i].IsTime()) {
      key = i;
      break;
    }
  std::stable_sort(run.tasks.begin(), run.tasks.end(), [key](const auto& a, const auto& b) {
    const double va = key < a.counters.size() ? a.counters[key].value : 0;
    const double vb = key < b.counters.size() ? b.counters[key].value : 0;
    return va > vb;
  });
  return out;
}

}  // namespace opscope::collect
