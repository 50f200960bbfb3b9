#include "collect/counter_run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "base/clock.h"
#include "base/strings.h"

namespace opscope::collect {
namespace {

ssize_t ReadFull(int fd, void* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, static_cast<char*>(buf) + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return got > 0 ? static_cast<ssize_t>(got) : r;
    got += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(got);
}

void WriteFull(int fd, const void* buf, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, buf, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    buf = static_cast<const char*>(buf) + w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

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
  int go[2], err[2];
  if (pipe2(go, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
    return Internal(std::string("pipe() failed: ") + std::strerror(errno));

  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  const pid_t child = fork();
  if (child < 0) {
    int e = errno;
    close(go[0]), close(go[1]), close(err[0]), close(err[1]);
    return Internal(std::string("fork() failed: ") + std::strerror(e));
  }
  if (child == 0) {
    // Only async-signal-safe calls from here on.
    signals->PrepareChild();
    close(go[1]);
    close(err[0]);
    char byte;
    ssize_t r;
    do r = ::read(go[0], &byte, 1);
    while (r < 0 && errno == EINTR);
    if (r != 1) _exit(127);  // the parent gave up (counters could not be opened)
    close(go[0]);
    execvp(cargv[0], cargv.data());
    int e = errno;
    WriteFull(err[1], &e, sizeof(e));
    _exit(e == ENOENT ? 127 : 126);
  }
  close(go[0]);
  close(err[1]);
  signals->Attach(child);

  CountedRun out;
  auto fail = [&](Status s) -> StatusOr<CountedRun> {
    close(go[1]);  // the child sees EOF and exits without running the command
    close(err[0]);
    int status;
    TargetSignals::Wait(child, &status);
    signals->Detach();
    return s;
  };
  StatusOr<CounterSet> set_or = CounterSet::Open(opener, events, StatTarget(child), &out.degradations);
  if (!set_or.ok()) return fail(set_or.status());
  CounterSet set = std::move(set_or).value();
  out.user_only = set.user_only();

  const int64_t t0 = NowNs();
  WriteFull(go[1], "g", 1);
  close(go[1]);
  int exec_errno = 0;
  ssize_t n = ReadFull(err[0], &exec_errno, sizeof(exec_errno));
  close(err[0]);
  int status = 0;
  const pid_t waited = TargetSignals::Wait(child, &status);
  const int64_t t1 = NowNs();
  signals->Detach();
  if (waited < 0) return Internal(std::string("waitpid() failed: ") + std::strerror(errno));
  if (n == static_cast<ssize_t>(sizeof(exec_errno))) {
    const std::string cmd = ShellQuote(argv[0]);
    out.run.exit_code = exec_errno == ENOENT ? 127 : 126;
    if (exec_errno == ENOENT)
      out.exec_error = NotFound("command not found: " + cmd +
                                (argv[0].find('/') == std::string::npos ? " (not in PATH)" : " (no such file)"));
    else if (exec_errno == EACCES || exec_errno == EPERM)
      out.exec_error = PermissionDenied("cannot run " + cmd + ": not executable (permission denied); "
                                        "check its mode (`chmod +x`) and the mount's noexec flag");
    else if (exec_errno == ENOEXEC)
      out.exec_error = InvalidArgument("cannot run " + cmd + ": not an executable format (a script "
                                       "without a #! line?)");
    else
      out.exec_error = Internal("cannot run " + cmd + ": " + std::strerror(exec_errno));
    out.run.note = out.exec_error.message();
    return out;
  }
  std::vector<RawCount> raw(set.slots().size());
  OPSCOPE_RETURN_IF_ERROR(set.Read(raw));
  profile::StatRun& run = out.run;
  run.wall_ms = static_cast<double>(t1 - t0) / 1e6;
  if (WIFEXITED(status)) {
    run.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    run.term_signal = WTERMSIG(status);
    run.exit_code = 128 + run.term_signal;
    run.note = "terminated by signal " + SignalName(run.term_signal) + " (" +
               std::to_string(run.term_signal) + "); counts are up to that point";
  }
  for (size_t i = 0; i < raw.size(); ++i) run.counters.push_back(MakeReading(set.slots()[i], raw[i]));
  return out;
}

}  // namespace opscope::collect
