#include "collect/perf_access.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "base/files.h"
#include "base/strings.h"
#include "collect/perf_event.h"

namespace opscope::collect {
namespace {

int ReadIntFile(const std::string& path, int fallback) {
  int64_t v = 0;
  return ParseInt64(Trim(ReadSysFile(path)), &v) ? static_cast<int>(v) : fallback;
}

constexpr const char* kPrivilegeFix =
    "give opscope CAP_PERFMON (`sudo setcap cap_perfmon+ep $(command -v opscope)`) or run it as "
    "root";

}  // namespace

PerfAccess ReadPerfAccess() {
  PerfAccess a;
  a.paranoid = ReadIntFile("/proc/sys/kernel/perf_event_paranoid", 2);
  a.kptr_restrict = ReadIntFile("/proc/sys/kernel/kptr_restrict", -1);
  a.ptrace_scope = ReadIntFile("/proc/sys/kernel/yama/ptrace_scope", -1);
  a.uid = geteuid();
  a.root = a.uid == 0;
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (!StartsWith(line, "CapEff:")) continue;
    const uint64_t caps = std::strtoull(line.c_str() + 7, nullptr, 16);
    constexpr int kCapSysPtrace = 19, kCapSysAdmin = 21, kCapPerfmon = 38;
    a.cap_sys_ptrace = caps >> kCapSysPtrace & 1;
    a.cap_sys_admin = caps >> kCapSysAdmin & 1;
    a.cap_perfmon = caps >> kCapPerfmon & 1;
  }
  return a;
}

PerfAccess AccessOf(const PerfEventOpener& opener) {
  PerfAccess a = ReadPerfAccess();
  a.paranoid = opener.Paranoid();
  a.root = false;
  a.cap_perfmon = opener.Privileged();
  a.cap_sys_admin = false;
  return a;
}

StatusOr<uid_t> ProcessOwner(pid_t pid) {
  struct stat st;
  if (pid <= 0 || ::stat(("/proc/" + std::to_string(pid)).c_str(), &st) != 0)
    return NotFound("no process " + std::to_string(pid) + " (check the PID with `ps -p " +
                    std::to_string(pid) + "`)");
  return st.st_uid;
}

Status CheckPerfAccess(const PerfAccess& a, const AccessNeeds& needs) {
  const std::string level = "kernel.perf_event_paranoid=" + std::to_string(a.paranoid);
  if (!a.PerfPrivileged() && a.paranoid >= 3)
    return PermissionDenied(
        level +
        " forbids every perf event to unprivileged users: run `sudo "
        "sysctl kernel.perf_event_paranoid=2` (own processes, user space), or " +
        kPrivilegeFix);
  if (needs.system_wide && !a.PerfPrivileged() && a.paranoid >= 1)
    return PermissionDenied(level +
                            " forbids system-wide (-a/-C) profiling to unprivileged "
                            "users: run `sudo sysctl kernel.perf_event_paranoid=0`, or " +
                            kPrivilegeFix);
  for (size_t i = 0; i < needs.attach_pids.size(); ++i) {
    if (i >= needs.attach_uids.size()) break;
    if (needs.attach_uids[i] != a.uid && !a.root && !a.cap_sys_ptrace)
      return PermissionDenied(
          "process " + std::to_string(needs.attach_pids[i]) + " belongs to uid " +
          std::to_string(needs.attach_uids[i]) + ", not to you (uid " + std::to_string(a.uid) +
          "): attaching needs CAP_SYS_PTRACE (`sudo setcap cap_sys_ptrace,cap_perfmon+ep "
          "$(command -v opscope)`) or root");
  }
  return Status::Ok();
}

std::string DescribeParanoid(const PerfAccess& a) {
  std::string s = "kernel.perf_event_paranoid=" + std::to_string(a.paranoid);
  if (a.PerfPrivileged())
    return s + " (does not apply: " + (a.root ? "root" : "CAP_PERFMON/CAP_SYS_ADMIN") +
           "): everything allowed";
  if (a.paranoid >= 3) return s + ": every perf event refused (stat, record, profile counters)";
  if (a.paranoid == 2)
    return s + ": own processes, user space only (kernel time not counted; -a/-C refused)";
  if (a.paranoid == 1) return s + ": own processes, user and kernel space (-a/-C refused)";
  if (a.paranoid == 0) return s + ": own processes and system-wide (-a/-C) allowed";
  return s + ": no restriction";
}

std::string DescribeKptrRestrict(const PerfAccess& a) {
  if (a.kptr_restrict < 0) return "kernel.kptr_restrict unreadable";
  std::string s = "kernel.kptr_restrict=" + std::to_string(a.kptr_restrict);
  if (a.kptr_restrict == 0) return s + ": kernel symbols readable";
  return s + ": kernel addresses hidden" +
         (a.kptr_restrict == 1 && a.root ? std::string(" (not from root)") : "") +
         "; only kernel frames would be unnamed (opscope samples user space)";
}

std::string DescribePtraceScope(const PerfAccess& a) {
  if (a.ptrace_scope < 0) return "no Yama ptrace_scope: attaching to own processes allowed";
  std::string s = "kernel.yama.ptrace_scope=" + std::to_string(a.ptrace_scope);
  return s + ": restricts PTRACE_ATTACH (debuggers) only; perf attach (-p) needs the same uid " +
         "or CAP_SYS_PTRACE" + (a.cap_sys_ptrace || a.root ? " (you have it)" : "");
}

}  // namespace opscope::collect
