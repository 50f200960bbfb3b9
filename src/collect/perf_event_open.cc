// The kernel call behind an interface (the system opener and the recording one the attr tests
// use) and the fallback ladder (perf_event.h): NextFallback, the degradation texts, the error
// text for a refused event, and OpenWithFallback, which the sampler's events go through too.
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/files.h"
#include "base/strings.h"
#include "collect/perf_event.h"
#include "collect/perf_event_internal.h"

namespace opscope::collect {

namespace perf_internal {

// ENOSYS is not one: the system call itself is missing (qemu-user, a kernel without
// CONFIG_PERF_EVENTS, a seccomp filter), so software events fail too and no fallback helps.
bool IsNoPmuError(int err) {
  return err == ENOENT || err == EOPNOTSUPP || err == ENODEV || err == EINVAL;
}

std::string ErrnoName(int err) {
  switch (err) {
    case ENOENT:
      return "ENOENT";
    case EACCES:
      return "EACCES";
    case EPERM:
      return "EPERM";
    case EOPNOTSUPP:
      return "EOPNOTSUPP";
    case ENODEV:
      return "ENODEV";
    case EINVAL:
      return "EINVAL";
    case ESRCH:
      return "ESRCH";
    case EMFILE:
      return "EMFILE";
    case EBUSY:
      return "EBUSY";
    default:
      return std::to_string(err);
  }
}

std::string Hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

void AddOnce(std::vector<std::string>* list, const std::string& s) {
  if (list && std::find(list->begin(), list->end(), s) == list->end()) list->push_back(s);
}

}  // namespace perf_internal

namespace {

using perf_internal::AddOnce;
using perf_internal::ErrnoName;
using perf_internal::Hex;
using perf_internal::IsNoPmuError;

int ReadParanoid() {
  std::string s = Trim(ReadSysFile("/proc/sys/kernel/perf_event_paranoid"));
  int64_t v = 2;
  if (!ParseInt64(s, &v)) return 2;
  return static_cast<int>(v);
}

bool HasPerfCapability() {
  if (geteuid() == 0) return true;
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (!StartsWith(line, "CapEff:")) continue;
    uint64_t caps = std::strtoull(line.c_str() + 7, nullptr, 16);
    constexpr int kCapSysAdmin = 21, kCapPerfmon = 38;
    return (caps >> kCapSysAdmin & 1) || (caps >> kCapPerfmon & 1);
  }
  return false;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Openers

int SystemPerfEventOpener::Open(const perf_event_attr& attr, pid_t pid, int cpu, int group_fd,
                                unsigned long flags) {
  perf_event_attr copy = attr;
  long fd = syscall(__NR_perf_event_open, &copy, pid, cpu, group_fd, flags);
  return fd < 0 ? -errno : static_cast<int>(fd);
}
int SystemPerfEventOpener::Paranoid() const { return ReadParanoid(); }
bool SystemPerfEventOpener::Privileged() const { return HasPerfCapability(); }

PerfEventOpener& SystemOpener() {
  static SystemPerfEventOpener opener;
  return opener;
}

RecordingPerfEventOpener::~RecordingPerfEventOpener() = default;

int RecordingPerfEventOpener::Open(const perf_event_attr& attr, pid_t pid, int cpu, int group_fd,
                                   unsigned long flags) {
  EventSpec probe;
  probe.type = attr.type;
  int result;
  // The kernel checks privilege (perf_allow_kernel) before it looks the PMU up.
  const bool kernel_refused = !privileged && paranoid >= 2 && !attr.exclude_kernel;
  const bool pmu_missing = no_pmu && probe.NeedsPmu();
  const bool extended = (attr.type == PERF_TYPE_HARDWARE || attr.type == PERF_TYPE_HW_CACHE) &&
                        (attr.config >> 32) != 0;
  if (no_syscall) {
    result = -ENOSYS;
  } else if (no_extended_type && extended) {
    result = -ENOENT;
  } else if (!privileged && paranoid >= 3) {
    result = -EACCES;
  } else if (kernel_refused || pmu_missing) {
    result = (pmu_missing && (pmu_first || !kernel_refused)) ? -ENOENT : -EACCES;
  } else {
    result = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (result < 0) result = -errno;
  }
  calls_.push_back({attr, pid, cpu, group_fd, flags, result});
  return result;
}

std::string RecordingPerfEventOpener::Dump() const {
  std::ostringstream out;
  for (size_t i = 0; i < calls_.size(); ++i) {
    const Call& c = calls_[i];
    const perf_event_attr& a = c.attr;
    std::string group = "-1";
    if (c.group_fd >= 0) {
      group = "?";
      for (size_t j = 0; j < i; ++j)
        if (calls_[j].result == c.group_fd) group = "event " + std::to_string(j);
    }
    out << "[event " << i << "]\n";
    out << "pid=" << c.pid << "\ncpu=" << c.cpu << "\ngroup_fd=" << group
        << "\nflags=" << Hex(c.flags) << "\nresult=";
    if (c.result >= 0)
      out << "fd\n";
    else
      out << '-' << ErrnoName(-c.result) << '\n';
    out << "type=" << a.type << "\nsize=" << a.size << "\nconfig=" << Hex(a.config)
        << "\nconfig1=" << Hex(a.config1) << "\nconfig2=" << Hex(a.config2)
        << "\nsample_period=" << a.sample_period << "\nsample_type=" << Hex(a.sample_type)
        << "\nread_format=" << Hex(a.read_format) << "\ndisabled=" << a.disabled
        << "\ninherit=" << a.inherit << "\npinned=" << a.pinned << "\nexclusive=" << a.exclusive
        << "\nexclude_user=" << a.exclude_user << "\nexclude_kernel=" << a.exclude_kernel
        << "\nexclude_hv=" << a.exclude_hv << "\nexclude_idle=" << a.exclude_idle
        << "\nenable_on_exec=" << a.enable_on_exec << "\ninherit_stat=" << a.inherit_stat << "\n";
    // Sampling events (the sampler's): the fields a counting event leaves at zero.
    if (a.sample_type != 0 || a.freq)
      out << "freq=" << a.freq << "\nexclude_callchain_kernel=" << a.exclude_callchain_kernel
          << "\nsample_regs_user=" << Hex(a.sample_regs_user)
          << "\nsample_stack_user=" << a.sample_stack_user << "\nmmap=" << a.mmap
          << "\nmmap2=" << a.mmap2 << "\ncomm=" << a.comm << "\ncomm_exec=" << a.comm_exec
          << "\ntask=" << a.task << "\nsample_id_all=" << a.sample_id_all
          << "\nuse_clockid=" << a.use_clockid << "\nclockid=" << a.clockid
          << "\nwatermark=" << a.watermark << "\nwakeup_watermark=" << a.wakeup_watermark << "\n";
    out << "\n";
  }
  return out.str();
}

CounterTarget StatTarget(pid_t child) {
  CounterTarget t;
  t.pid = child;
  t.cpu = -1;
  t.inherit = true;
  t.enable_on_exec = true;
  return t;
}

double ScaledValue(const RawCount& c) {
  if (c.running_ns == 0) return 0;
  if (c.running_ns >= c.enabled_ns) return static_cast<double>(c.value);
  return static_cast<double>(c.value) * static_cast<double>(c.enabled_ns) /
         static_cast<double>(c.running_ns);
}

std::string NoPerfEventsText() {
  return "perf_event_open is not implemented here (ENOSYS): an emulator such as qemu-user, a "
         "kernel built without CONFIG_PERF_EVENTS, or a seccomp filter blocking it (a container "
         "runtime's profile: allow perf_event_open, or run with --security-opt "
         "seccomp=unconfined). No counter, software or hardware, and no sampling works here; "
         "`opscope profile` without --counters/--sample, `run`'s ranges, `gpu` and `import` "
         "still do";
}

int ProbePerfEvent(uint32_t type, uint64_t config) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = type;
  attr.config = config;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const int fd = SystemOpener().Open(attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) return fd;
  close(fd);
  return 0;
}

bool PerfEventOpenImplemented() {
  return ProbePerfEvent(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK) != -ENOSYS;
}

std::string PerfErrorText(int err, const EventSpec& spec, const PerfEventOpener& opener) {
  std::string ev = "perf_event_open for '" + spec.name + "'";
  if (err == EACCES || err == EPERM) {
    int p = opener.Paranoid();
    std::string level = "kernel.perf_event_paranoid=" + std::to_string(p);
    std::string meaning =
        p >= 3   ? " forbids perf events to unprivileged users"
        : p >= 2 ? " allows unprivileged users user-space counting of their own processes only"
        : p >= 1 ? " forbids unprivileged CPU-wide counting"
                 : "";
    return ev + " was refused (" + ErrnoName(err) + "): " + level + meaning +
           "; run `sudo sysctl kernel.perf_event_paranoid=1` (or -1), run as root, or give opscope "
           "CAP_PERFMON (`sudo setcap cap_perfmon+ep $(command -v opscope)`)";
  }
  if (err == ENOSYS) return ev + " failed: " + NoPerfEventsText();
  if (IsNoPmuError(err) && spec.NeedsPmu())
    return ev + " failed (" + ErrnoName(err) +
           "): this machine has no hardware PMU for it (VM, container) or the CPU lacks the event";
  if (err == ESRCH) return ev + " failed (ESRCH): the process or thread to count no longer exists";
  if (err == EMFILE)
    return ev + " failed (EMFILE): too many open files; raise the limit with `ulimit -n 65536`";
  return ev + " failed (" + ErrnoName(err) + "): " + std::strerror(err);
}

Fallback NextFallback(int fd, const perf_event_attr& attr) {
  if (fd >= 0) return Fallback::kNone;
  const int err = -fd;
  if ((err == EACCES || err == EPERM) && !attr.exclude_kernel) return Fallback::kUserOnly;
  if (err == EACCES || err == EPERM) return Fallback::kRefused;
  EventSpec probe;
  probe.type = attr.type;
  if (probe.NeedsPmu() && IsNoPmuError(err))
    return attr.type == PERF_TYPE_HARDWARE && attr.config == PERF_COUNT_HW_CPU_CYCLES
               ? Fallback::kCpuClock
               : Fallback::kUnsupported;
  return Fallback::kFailed;
}

std::string UserOnlyDegradation(const PerfEventOpener& opener) {
  return "kernel.perf_event_paranoid=" + std::to_string(opener.Paranoid()) +
         " and no CAP_PERFMON: counting user space only (exclude_kernel); kernel time and "
         "faults taken in the kernel are not counted. Run `sudo sysctl "
         "kernel.perf_event_paranoid=1` or give opscope CAP_PERFMON to count them";
}

std::string CpuClockDegradation(const std::string& requested, int err) {
  return requested + " unavailable (" +
         (IsNoPmuError(err) ? std::string("no hardware PMU") : ErrnoName(err)) +
         "): using cpu-clock";
}

void SwitchToCpuClock(perf_event_attr* attr) {
  attr->type = PERF_TYPE_SOFTWARE;
  attr->config = PERF_COUNT_SW_CPU_CLOCK;
}

StatusOr<int> OpenWithFallback(PerfEventOpener& opener, perf_event_attr* attr, pid_t pid, int cpu,
                               const std::string& requested, std::vector<std::string>* degradations,
                               bool* user_only) {
  EventSpec spec;
  spec.name = requested;
  spec.type = attr->type;
  spec.config = attr->config;
  for (;;) {  // each rung changes attr so that it cannot be taken twice
    const int fd = opener.Open(*attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    switch (NextFallback(fd, *attr)) {
      case Fallback::kNone:
        return fd;
      case Fallback::kUserOnly:
        attr->exclude_kernel = 1;
        attr->exclude_hv = 1;
        if (user_only) *user_only = true;
        AddOnce(degradations, UserOnlyDegradation(opener));
        continue;
      case Fallback::kCpuClock:
        SwitchToCpuClock(attr);
        AddOnce(degradations, CpuClockDegradation(requested, -fd));
        continue;
      case Fallback::kRefused:
        return PermissionDenied(PerfErrorText(-fd, spec, opener));
      case Fallback::kUnsupported:
      case Fallback::kFailed:
        if (fd == -ESRCH) return NotFound(PerfErrorText(ESRCH, spec, opener));
        if (fd == -EMFILE || fd == -ENFILE)
          return ResourceExhausted(PerfErrorText(-fd, spec, opener));
        return Unavailable(PerfErrorText(-fd, spec, opener));
    }
  }
}

}  // namespace opscope::collect
