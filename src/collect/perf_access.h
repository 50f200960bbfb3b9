// What the kernel will let opscope measure, said before anything starts.
//
// The facts (PerfAccess) are read from /proc: kernel.perf_event_paranoid, kernel.kptr_restrict,
// kernel.yama.ptrace_scope and the effective capabilities. CheckPerfAccess turns them and what a
// command is about to ask for (AccessNeeds) into one line with the fix, so a refused request
// fails up front rather than half-way (after a target was started, or with a bare EACCES).
//
// What each setting blocks (kernel/events/core.c, Documentation/admin-guide/perf-security.rst):
//   perf_event_paranoid  -1: nothing; 0: raw tracepoints for unprivileged users; 1: CPU-wide
//                        (system-wide, -a / -C) events; 2: also kernel-space counting and
//                        sampling (opscope then counts user space only, recorded as a
//                        degradation); 3 and above (Debian, Android): every perf event.
//                        CAP_PERFMON (or CAP_SYS_ADMIN, or root) lifts all of them.
//   attaching (-p, -t)   the target must pass ptrace_may_access(PTRACE_MODE_READ): the same uid
//                        and a dumpable process, or CAP_SYS_PTRACE. Yama's ptrace_scope restricts
//                        PTRACE_ATTACH only, so it does not block perf events (it blocks gdb).
//   kptr_restrict        1: kernel addresses hidden from users without CAP_SYSLOG; 2: from
//                        everyone. Only kernel symbols suffer; opscope samples user space.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace opscope::collect {

struct PerfAccess {
  int paranoid = 2;        // kernel.perf_event_paranoid (2 when unreadable: the kernel default)
  int kptr_restrict = -1;  // -1: unreadable
  int ptrace_scope = -1;   // -1: no Yama
  bool root = false;
  bool cap_perfmon = false, cap_sys_admin = false, cap_sys_ptrace = false;
  uid_t uid = 0;

  bool PerfPrivileged() const { return root || cap_perfmon || cap_sys_admin; }
};

// This process's view of the machine.
PerfAccess ReadPerfAccess();
// The same, with paranoid and the perf privilege as `opener` plays them (a test's fake kernel).
class PerfEventOpener;
PerfAccess AccessOf(const PerfEventOpener& opener);

struct AccessNeeds {
  bool system_wide = false;        // -a / -C: CPU-wide events
  std::vector<pid_t> attach_pids;  // -p / -t: processes not started by opscope
  // The uid owning each attach pid (same order); filled by the caller or read from /proc.
  std::vector<uid_t> attach_uids;
};

// The owner uid of a process; NotFound ("no process N") when it does not exist.
StatusOr<uid_t> ProcessOwner(pid_t pid);

// OK, or PermissionDenied with one line: what is refused, by which setting, and the fix.
Status CheckPerfAccess(const PerfAccess& access, const AccessNeeds& needs);

// One line per setting, for `opscope doctor`: what it is here and what it blocks.
std::string DescribeParanoid(const PerfAccess& access);
std::string DescribeKptrRestrict(const PerfAccess& access);
std::string DescribePtraceScope(const PerfAccess& access);

}  // namespace opscope::collect
