#include "collect/op_timer.h"

#include <sys/syscall.h>
#include <unistd.h>

#include "base/clock.h"

namespace opscope::collect {

OpTimer::OpTimer(int steps, int max_runs)
    : steps_(steps),
      max_runs_(max_runs),
      start_(static_cast<size_t>(steps) * max_runs, 0),
      end_(static_cast<size_t>(steps) * max_runs, 0),
      total_(static_cast<size_t>(steps) * max_runs, 0),
      count_(static_cast<size_t>(steps) * max_runs, 0),
      begin_(static_cast<size_t>(steps), 0),
      run_start_(max_runs, 0),
      run_end_(max_runs, 0) {}

void OpTimer::OnRunBegin(int) {
  recording_ = runs_ < max_runs_;
  if (recording_) {
    tid_ = static_cast<int>(syscall(SYS_gettid));
    run_start_[runs_] = NowNs();
  }
}

void OpTimer::OnStepBegin(int step) {
  if (!recording_) return;
  const int64_t now = NowNs();
  const size_t i = Index(runs_, step);
  if (count_[i]++ == 0) start_[i] = now;
  begin_[step] = now;
}

void OpTimer::OnStepEnd(int step) {
  if (!recording_) return;
  const int64_t now = NowNs();
  const size_t i = Index(runs_, step);
  end_[i] = now;
  if (now > begin_[step]) total_[i] += now - begin_[step];
}

void OpTimer::OnRunEnd(int) {
  if (!recording_) return;
  run_end_[runs_] = NowNs();
  ++runs_;
  recording_ = false;
}

}  // namespace opscope::collect
