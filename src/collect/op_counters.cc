#include "collect/op_counters.h"

#include <fmt/format.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "base/clock.h"

namespace opscope::collect {
namespace {

// Scaled delta between two readings of one event: the step's own running fraction is used, so a
// counter multiplexed in some steps only is estimated per step.
double ScaledDelta(const RawCount& a, const RawCount& b, double* fraction) {
  const double dv = static_cast<double>(b.value - a.value);
  const double de = static_cast<double>(b.enabled_ns - a.enabled_ns);
  const double dr = static_cast<double>(b.running_ns - a.running_ns);
  if (b.value < a.value) return 0;  // never goes backwards; a failed read left zeros
  if (dr <= 0 || de <= 0) {
    *fraction = de > 0 ? 0.0 : 1.0;
    return de > 0 ? 0.0 : dv;  // never ran in this window: nothing to scale from
  }
  *fraction = std::min(1.0, dr / de);
  return dr >= de ? dv : dv * de / dr;
}

}  // namespace

StatusOr<std::unique_ptr<OpCounters>> OpCounters::Create(Options o) {
  if (o.num_steps <= 0) return InvalidArgument("OpCounters needs at least one step");
  if (o.tids.empty()) return InvalidArgument("OpCounters needs at least one thread id to count");
  if (o.events.empty()) return InvalidArgument("OpCounters needs at least one event");
  PerfEventOpener& opener = o.opener ? *o.opener : SystemOpener();
  std::unique_ptr<OpCounters> c(new OpCounters());
  c->num_steps_ = o.num_steps;
  c->use_rdpmc_ = o.use_rdpmc;
  c->tids_ = o.tids;
  for (pid_t tid : o.tids) {
    CounterTarget t;
    t.pid = tid;
    t.cpu = -1;
    t.inherit = false;
    t.map_for_rdpmc = o.use_rdpmc;
    StatusOr<CounterSet> step_set = CounterSet::Open(opener, o.events, t, &c->degradations_);
    if (!step_set.ok()) return step_set.status().WithPrefix("thread " + std::to_string(tid));
    t.map_for_rdpmc = false;
    StatusOr<CounterSet> whole_set = CounterSet::Open(opener, o.events, t, &c->degradations_);
    if (!whole_set.ok()) return whole_set.status().WithPrefix("thread " + std::to_string(tid));
    c->step_sets_.push_back(std::move(step_set).value());
    c->whole_sets_.push_back(std::move(whole_set).value());
  }
  const CounterSet& first = c->step_sets_.front();
  c->slots_ = first.slots().size();
  for (size_t s = 0; s < c->slots_; ++s) {
    const CounterSet::Slot& slot = first.slots()[s];
    if (!slot.supported) continue;
    // The ladder is deterministic, but a thread could differ (a hybrid CPU's core type): an
    // event counts only when every thread has it.
    bool everywhere = true;
    for (const CounterSet& set : c->step_sets_) everywhere &= set.slots()[s].supported;
    for (const CounterSet& set : c->whole_sets_) everywhere &= set.slots()[s].supported;
    if (!everywhere) {
      c->degradations_.push_back(slot.requested +
                                 " could not be counted on every thread: left out");
      continue;
    }
    c->slot_of_event_.push_back(static_cast<int>(s));
    c->names_.push_back(slot.spec.name);
    c->is_time_.push_back(slot.spec.IsTime());
  }
  const size_t cells = c->tids_.size() * c->slots_;
  c->begin_.assign(cells, {});
  c->begin_stack_.assign(kMaxNesting, std::vector<RawCount>(cells));
  c->end_.assign(cells, {});
  c->run_begin_.assign(cells, {});
  c->run_end_.assign(cells, {});
  c->step_acc_.assign(static_cast<size_t>(o.num_steps) * c->names_.size(), 0);
  c->whole_acc_.assign(c->names_.size(), 0);
  c->min_fraction_.assign(c->names_.size(), 1.0);
  return c;
}

int OpCounters::SelfIndex() {
  if (self_index_ == -2) {
    const pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
    auto it = std::find(tids_.begin(), tids_.end(), self);
    self_index_ = it == tids_.end() ? -1 : static_cast<int>(it - tids_.begin());
  }
  return self_index_;
}

void OpCounters::ReadAll(std::vector<CounterSet>& sets, std::vector<RawCount>& out,
                         bool allow_rdpmc) {
  const int self = allow_rdpmc && use_rdpmc_ ? SelfIndex() : -1;
  for (size_t t = 0; t < sets.size(); ++t) {
    std::span<RawCount> row(out.data() + t * slots_, slots_);
    if (static_cast<int>(t) == self) {
      int rdpmc_groups = 0;
      if (!sets[t].ReadOwn(row, &rdpmc_groups).ok()) ++read_errors_;
      if (rdpmc_groups > 0)
        ++rdpmc_reads_;
      else
        ++syscall_reads_;
      continue;
    }
    if (!sets[t].Read(row).ok()) ++read_errors_;
  }
}

void OpCounters::OnRunBegin(int) { ReadAll(whole_sets_, run_begin_, /*allow_rdpmc=*/false); }

void OpCounters::OnRunEnd(int) {
  ReadAll(whole_sets_, run_end_, /*allow_rdpmc=*/false);
  for (size_t e = 0; e < names_.size(); ++e) {
    const size_t s = static_cast<size_t>(slot_of_event_[e]);
    for (size_t t = 0; t < tids_.size(); ++t) {
      double fraction = 1;
      whole_acc_[e] += ScaledDelta(run_begin_[t * slots_ + s], run_end_[t * slots_ + s], &fraction);
    }
  }
  ++runs_;
}

void OpCounters::OnStepBegin(int step) {
  const int64_t t0 = NowNs();
  if (depth_ < kMaxNesting) ReadAll(step_sets_, begin_stack_[depth_], /*allow_rdpmc=*/true);
  ++depth_;
  read_ns_ += NowNs() - t0;
}

void OpCounters::OnStepEnd(int step) {
  const int64_t t0 = NowNs();
  if (depth_ > 0) --depth_;
  if (depth_ >= kMaxNesting) {
    ++nested_too_deep_;
    return;
  }
  const std::vector<RawCount>& begin = begin_stack_[depth_];
  ReadAll(step_sets_, end_, /*allow_rdpmc=*/true);
  read_ns_ += NowNs() - t0;
  ++step_reads_;
  if (step < 0 || step >= num_steps_) return;
  double* acc = step_acc_.data() + static_cast<size_t>(step) * names_.size();
  for (size_t e = 0; e < names_.size(); ++e) {
    const size_t s = static_cast<size_t>(slot_of_event_[e]);
    for (size_t t = 0; t < tids_.size(); ++t) {
      double fraction = 1;
      acc[e] += ScaledDelta(begin[t * slots_ + s], end_[t * slots_ + s], &fraction);
      min_fraction_[e] = std::min(min_fraction_[e], fraction);
    }
  }
}

double OpCounters::StepTotal(int step, int event) const {
  if (step < 0 || step >= num_steps_ || event < 0 || event >= static_cast<int>(names_.size()))
    return 0;
  return step_acc_[static_cast<size_t>(step) * names_.size() + static_cast<size_t>(event)];
}

double OpCounters::StepsTotal(int event) const {
  double sum = 0;
  for (int s = 0; s < num_steps_; ++s) sum += StepTotal(s, event);
  return sum;
}

double OpCounters::WholeRunTotal(int event) const {
  if (event < 0 || event >= static_cast<int>(names_.size())) return 0;
  return whole_acc_[static_cast<size_t>(event)];
}

std::map<std::string, double> OpCounters::StepCounters(int step) const {
  std::map<std::string, double> out;
  const double runs = std::max(1, runs_);
  for (size_t e = 0; e < names_.size(); ++e) {
    const double v = StepTotal(step, static_cast<int>(e)) / runs;
    out[names_[e]] = is_time_[e] ? v / 1e6 : v;
  }
  return out;
}

double OpCounters::MinRunningFraction(int event) const {
  if (event < 0 || event >= static_cast<int>(names_.size())) return 0;
  return min_fraction_[static_cast<size_t>(event)];
}

double OpCounters::ReadNsPerStep() const {
  return step_reads_ > 0 ? static_cast<double>(read_ns_) / static_cast<double>(step_reads_) : 0;
}

void WriteOpCounters(const OpCounters& c, const std::vector<int>& step_of_op, profile::Profile* p) {
  for (size_t i = 0; i < p->ops.size() && i < step_of_op.size(); ++i)
    if (step_of_op[i] >= 0 && step_of_op[i] < c.num_steps())
      p->ops[i].counters = c.StepCounters(step_of_op[i]);
  for (const std::string& d : c.degradations())
    if (std::find(p->meta.degradations.begin(), p->meta.degradations.end(), d) ==
        p->meta.degradations.end())
      p->meta.degradations.push_back(d);
  std::string names;
  double min_fraction = 1;
  for (size_t e = 0; e < c.event_names().size(); ++e) {
    names += (names.empty() ? "" : ",") + c.event_names()[e];
    min_fraction = std::min(min_fraction, c.MinRunningFraction(static_cast<int>(e)));
  }
  p->meta.extra["counters_events"] = names;
  p->meta.extra["counters_read"] = c.rdpmc_reads() > 0 ? "rdpmc+read()" : "read()";
  p->meta.extra["counters_read_ns_per_step"] = fmt::format("{:.0f}", c.ReadNsPerStep());
  p->meta.extra["counters_min_running_pct"] = fmt::format("{:.1f}", min_fraction * 100);
  if (min_fraction < 0.9995)
    p->meta.degradations.push_back(
        fmt::format("per-operator counters multiplexed (down to {:.1f}% of a step): values are "
                    "scaled estimates",
                    min_fraction * 100));
}

double CounterOverheadPct(const OpCounters& c, double measured_ms) {
  if (measured_ms <= 0) return 0;
  return static_cast<double>(c.TotalReadNs()) / 1e6 / measured_ms * 100;
}

}  // namespace opscope::collect
