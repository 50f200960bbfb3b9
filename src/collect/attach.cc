#include "collect/attach.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>

#include "base/clock.h"
#include "base/files.h"
#include "base/launch.h"
#include "base/strings.h"
#include "collect/perf_access.h"

namespace opscope::collect {
StatusOr<std::vector<pid_t>> ParsePidList(std::string_view text, const std::string& flag) {
  std::vector<pid_t> out;
  for (const std::string& part : Split(text, ',')) {
    int64_t v = 0;
    if (!ParseInt64(Trim(part), &v) || v <= 0 || v > (1 << 22))
      return InvalidArgument(flag + " '" + std::string(text) +
                             "': expected process or thread ids separated by commas (e.g. " + flag +
                             " 1234,5678)");
    if (std::find(out.begin(), out.end(), static_cast<pid_t>(v)) == out.end())
      out.push_back(static_cast<pid_t>(v));
  }
  return out;
}

std::vector<int> OnlineCpus() {
  std::vector<int> cpus;
  const std::string online = Trim(ReadSysFile("/sys/devices/system/cpu/online"));
  for (const auto& part : Split(online, ',', true)) {
    auto range = Split(part, '-');
    int64_t a = 0, b = 0;
    if (!ParseInt64(range[0], &a)) continue;
    b = a;
    if (range.size() == 2 && !ParseInt64(range[1], &b)) continue;
    for (int64_t c = a; c <= b; ++c) cpus.push_back(static_cast<int>(c));
  }
  if (cpus.empty()) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < std::max(1L, n); ++c) cpus.push_back(static_cast<int>(c));
  }
  return cpus;
}

StatusOr<std::vector<int>> ParseCpuList(std::string_view text, const std::vector<int>& online,
                                        const std::string& flag) {
  std::set<int> cpus;
  const std::string bad = flag + " '" + std::string(text) +
                          "': expected CPUs like 0-3,6 among the online CPUs " + CpuRanges(online);
  for (const std::string& part : Split(text, ',')) {
    auto range = Split(Trim(part), '-');
    int64_t a = 0, b = 0;
    if (range.size() > 2 || !ParseInt64(range[0], &a)) return InvalidArgument(bad);
    b = a;
    if (range.size() == 2 && !ParseInt64(range[1], &b)) return InvalidArgument(bad);
    // Compared as written: a CPU number past int must not wrap onto CPU 0.
    if (a < 0 || b < a || b > std::numeric_limits<int>::max()) return InvalidArgument(bad);
    for (int64_t c = a; c <= b; ++c) {
      if (std::find(online.begin(), online.end(), static_cast<int>(c)) == online.end())
        return InvalidArgument(flag + " '" + std::string(text) + "': CPU " + std::to_string(c) +
                               " is not online (online: " + CpuRanges(online) + ")");
      cpus.insert(static_cast<int>(c));
    }
  }
  return std::vector<int>(cpus.begin(), cpus.end());
}

Status PinProcess(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (c < 0 || c >= CPU_SETSIZE)
      return InvalidArgument("CPU " + std::to_string(c) + " is past the " +
                             std::to_string(CPU_SETSIZE) + " CPUs opscope can pin to");
    CPU_SET(c, &set);
  }
  for (pid_t tid : ThreadsOf(getpid()))
    if (sched_setaffinity(tid, sizeof set, &set) != 0 && errno != ESRCH)
      return Internal(
          std::string("cannot pin to the CPUs given (sched_setaffinity: ") + std::strerror(errno) +
          "); a cgroup's cpuset may forbid them: see /proc/self/status Cpus_allowed_list");
  return Status::Ok();
}

std::vector<pid_t> ThreadsOf(pid_t pid) {
  std::vector<pid_t> tids;
  if (DIR* d = opendir(("/proc/" + std::to_string(pid) + "/task").c_str())) {
    while (dirent* e = readdir(d)) {
      int64_t tid = 0;
      if (ParseInt64(e->d_name, &tid) && tid > 0) tids.push_back(static_cast<pid_t>(tid));
    }
    closedir(d);
  }
  std::sort(tids.begin(), tids.end());
  return tids;
}

pid_t ProcessOf(pid_t tid) {
  std::ifstream in("/proc/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (StartsWith(line, "Tgid:")) {
      int64_t v = 0;
      return ParseInt64(Trim(line.substr(5)), &v) ? static_cast<pid_t>(v) : 0;
    }
  return 0;
}

std::string CommOf(pid_t tid) {
  std::string comm = ReadSysFile("/proc/" + std::to_string(tid) + "/comm");
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm;
}

bool ProcessAlive(pid_t pid) {
  if (kill(pid, 0) != 0 && errno != EPERM) return false;
  // A zombie (exited, not yet reaped by its parent) no longer runs.
  const std::string stat = ReadSysFile("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] != 'Z';
}

StatusOr<ResolvedAttach> ResolveAttachFlags(const AttachFlags& flags, AttachSpec* spec) {
  const std::vector<int> online = OnlineCpus();
  if (!flags.pids.empty()) {
    OPSCOPE_ASSIGN_OR_RETURN(spec->pids, ParsePidList(flags.pids, "-p"));
  }
  if (!flags.tids.empty()) {
    OPSCOPE_ASSIGN_OR_RETURN(spec->tids, ParsePidList(flags.tids, "-t"));
  }
  if (!flags.cpus.empty()) {
    OPSCOPE_ASSIGN_OR_RETURN(spec->cpus, ParseCpuList(flags.cpus, online));
  }
  if (spec->any() && flags.have_command)
    return InvalidArgument("give a command to run or -p/-t/-a/-C to attach, not both");
  if (!spec->any() && !flags.have_command)
    return InvalidArgument("no command given: " + flags.usage +
                           ", or attach with -p PID, -t TID, -a or -C CPUS");
  if (!spec->any() && spec->duration_s > 0)
    return InvalidArgument("--duration applies to -p/-t/-a/-C; a command runs until it exits");
  if (!spec->any()) return ResolvedAttach{};
  return ResolveAttach(*spec, online);
}

StatusOr<ResolvedAttach> ResolveAttach(const AttachSpec& spec, const std::vector<int>& online) {
  ResolvedAttach r;
  if (spec.system_wide() && (!spec.pids.empty() || !spec.tids.empty()))
    return InvalidArgument(
        "choose one of -a/-C (every task on the CPUs) and -p/-t (processes, "
        "threads)");
  if (spec.all_cpus && !spec.cpus.empty())
    return InvalidArgument("-a and -C: -a already means every CPU; give one of them");
  if (!(spec.duration_s >= 0) || spec.duration_s > 1e7)
    return InvalidArgument("--duration must be a number of seconds >= 0");
  AccessNeeds needs;
  needs.system_wide = spec.system_wide();
  if (spec.system_wide()) {
    r.cpus = spec.all_cpus ? online : spec.cpus;
    r.description = "system-wide (CPUs " + CpuRanges(r.cpus) + ")";
  }
  for (pid_t pid : spec.pids) {
    OPSCOPE_ASSIGN_OR_RETURN(uid_t uid, ProcessOwner(pid));
    if (!ProcessAlive(pid)) return NotFound("process " + std::to_string(pid) + " has exited");
    needs.attach_pids.push_back(pid);
    needs.attach_uids.push_back(uid);
    for (pid_t tid : ThreadsOf(pid)) r.tasks.push_back({pid, tid, CommOf(tid)});
  }
  for (pid_t tid : spec.tids) {
    const pid_t pid = ProcessOf(tid);
    if (pid == 0)
      return NotFound("no thread " + std::to_string(tid) + " (check it with `ps -eLf`)");
    OPSCOPE_ASSIGN_OR_RETURN(uid_t uid, ProcessOwner(pid));
    needs.attach_pids.push_back(pid);
    needs.attach_uids.push_back(uid);
    r.tasks.push_back({pid, tid, CommOf(tid)});
  }
  OPSCOPE_RETURN_IF_ERROR(CheckPerfAccess(ReadPerfAccess(), needs));
  if (!spec.system_wide()) {
    std::vector<std::string> parts;
    for (pid_t pid : spec.pids) {
      size_t n = 0;
      for (const auto& t : r.tasks) n += t.pid == pid;
      parts.push_back("pid " + std::to_string(pid) + " (" + CommOf(pid) + ", " + std::to_string(n) +
                      (n == 1 ? " thread)" : " threads)"));
    }
    for (pid_t tid : spec.tids)
      parts.push_back("tid " + std::to_string(tid) + " (" + CommOf(tid) + ")");
    r.description = Join(parts, ", ");
  }
  return r;
}

StopReason WaitForStop(const AttachSpec& spec, const ResolvedAttach& what,
                       const TargetSignals& signals, const std::function<void()>& tick) {
  const int64_t end =
      spec.duration_s > 0 ? NowNs() + static_cast<int64_t>(spec.duration_s * 1e9) : 0;
  for (;;) {
    if (signals.received() != 0) return StopReason::kSignal;
    if (end != 0 && NowNs() >= end) return StopReason::kDuration;
    if (!spec.system_wide()) {
      bool any = false;
      for (const auto& t : what.tasks)
        any = any || (t.tid == t.pid ? ProcessAlive(t.pid) : kill(t.tid, 0) == 0 || errno == EPERM);
      for (pid_t pid : spec.pids) any = any || ProcessAlive(pid);
      if (!any) return StopReason::kTargetsExited;
    }
    if (tick) tick();
    int64_t wait_ns = 50'000'000;
    if (end != 0) wait_ns = std::min(wait_ns, std::max<int64_t>(0, end - NowNs()));
    if (wait_ns > 0) usleep(static_cast<useconds_t>(wait_ns / 1000));
  }
}

std::string DescribeStop(StopReason reason, const AttachSpec& spec, int sig) {
  switch (reason) {
    case StopReason::kDuration:
      return fmt::format("for {:g} s (--duration)", spec.duration_s);
    case StopReason::kSignal:
      return "until " + SignalName(sig);
    case StopReason::kTargetsExited:
      return "until the processes exited";
  }
  return "";
}

}  // namespace opscope::collect
