#include "collect/perf_event.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/files.h"
#include "base/strings.h"

#ifdef OPSCOPE_HAVE_LIBPFM
#include <perfmon/pfmlib_perf_event.h>
#endif

namespace opscope::collect {
namespace {

struct NamedConfig {
  const char* name;
  uint32_t type;
  uint64_t config;
};

constexpr NamedConfig kGenericEvents[] = {
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    {"bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES},
    {"stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND},
    {"idle-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND},
    {"stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND},
    {"idle-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND},
    {"ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {"faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
    {"alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS},
    {"emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS},
};

constexpr std::pair<const char*, uint64_t> kCaches[] = {
    {"L1-dcache", PERF_COUNT_HW_CACHE_L1D}, {"L1-icache", PERF_COUNT_HW_CACHE_L1I},
    {"LLC", PERF_COUNT_HW_CACHE_LL},        {"dTLB", PERF_COUNT_HW_CACHE_DTLB},
    {"iTLB", PERF_COUNT_HW_CACHE_ITLB},     {"branch", PERF_COUNT_HW_CACHE_BPU},
    {"node", PERF_COUNT_HW_CACHE_NODE},
};
constexpr std::pair<const char*, uint64_t> kCacheOps[] = {
    {"load", PERF_COUNT_HW_CACHE_OP_READ},       {"loads", PERF_COUNT_HW_CACHE_OP_READ},
    {"store", PERF_COUNT_HW_CACHE_OP_WRITE},     {"stores", PERF_COUNT_HW_CACHE_OP_WRITE},
    {"prefetch", PERF_COUNT_HW_CACHE_OP_PREFETCH}, {"prefetches", PERF_COUNT_HW_CACHE_OP_PREFETCH},
};

// "L1-dcache-load-misses" -> (L1D, READ, MISS); "LLC-loads" -> (LL, READ, ACCESS).
bool ParseCacheEvent(std::string_view name, uint64_t* config) {
  for (const auto& [cache, cache_id] : kCaches) {
    std::string prefix = std::string(cache) + "-";
    if (!StartsWith(name, prefix)) continue;
    std::string_view rest = name.substr(prefix.size());
    uint64_t result = PERF_COUNT_HW_CACHE_RESULT_ACCESS;
    if (EndsWith(rest, "-misses")) {
      result = PERF_COUNT_HW_CACHE_RESULT_MISS;
      rest.remove_suffix(7);
    } else if (EndsWith(rest, "-miss")) {
      result = PERF_COUNT_HW_CACHE_RESULT_MISS;
      rest.remove_suffix(5);
    }
    for (const auto& [op, op_id] : kCacheOps) {
      if (rest == op) {
        *config = cache_id | (op_id << 8) | (result << 16);
        return true;
      }
    }
  }
  return false;
}

#ifdef OPSCOPE_HAVE_LIBPFM
bool ResolveWithLibpfm(const std::string& name, EventSpec* spec, std::string* error) {
  static const int init = pfm_initialize();
  if (init != PFM_SUCCESS) {
    *error = std::string("libpfm4 failed to initialize: ") + pfm_strerror(init);
    return false;
  }
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  pfm_perf_encode_arg_t arg;
  std::memset(&arg, 0, sizeof(arg));
  arg.attr = &attr;
  arg.size = sizeof(arg);
  int rc = pfm_get_os_event_encoding(name.c_str(), PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT, &arg);
  if (rc != PFM_SUCCESS) {
    *error = pfm_strerror(rc);
    return false;
  }
  spec->type = attr.type;
  spec->config = attr.config;
  spec->config1 = attr.config1;
  spec->config2 = attr.config2;
  return true;
}
#endif

bool IsHex(std::string_view s) {
  return !s.empty() && s.size() <= 16 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

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

bool IsNoPmuError(int err) {
  return err == ENOENT || err == EOPNOTSUPP || err == ENODEV || err == EINVAL || err == ENOSYS;
}

std::string ErrnoName(int err) {
  switch (err) {
    case ENOENT: return "ENOENT";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case ENODEV: return "ENODEV";
    case EINVAL: return "EINVAL";
    case ESRCH: return "ESRCH";
    case EMFILE: return "EMFILE";
    case EBUSY: return "EBUSY";
    default: return std::to_string(err);
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

}  // namespace

bool EventSpec::NeedsPmu() const {
  return type == PERF_TYPE_HARDWARE || type == PERF_TYPE_HW_CACHE || type == PERF_TYPE_RAW ||
         type >= PERF_TYPE_MAX;
}

bool EventSpec::IsTime() const {
  return type == PERF_TYPE_SOFTWARE &&
         (config == PERF_COUNT_SW_TASK_CLOCK || config == PERF_COUNT_SW_CPU_CLOCK);
}

StatusOr<EventSpec> ParseEvent(std::string_view input) {
  std::string text = Trim(input);
  if (text.empty()) return InvalidArgument("empty event name in the event list");
  EventSpec spec;
  std::string base = text;
  // A trailing ":u", ":k", ":uk" is perf's privilege-level modifier. libpfm names use ':' for
  // their own attributes ("RETIRED_UOPS:u=1"), so only these exact suffixes are taken here.
  for (std::string_view mod : {":uk", ":ku", ":u", ":k"}) {
    if (EndsWith(base, mod)) {
      base = base.substr(0, base.size() - mod.size());
      bool u = mod.find('u') != std::string_view::npos, k = mod.find('k') != std::string_view::npos;
      spec.exclude_user = !u;
      spec.exclude_kernel = !k;
      spec.exclude_hv = true;
      break;
    }
  }
  spec.name = text;
  for (const NamedConfig& e : kGenericEvents) {
    if (base == e.name) {
      spec.type = e.type;
      spec.config = e.config;
      return spec;
    }
  }
  uint64_t cache_config = 0;
  if (ParseCacheEvent(base, &cache_config)) {
    spec.type = PERF_TYPE_HW_CACHE;
    spec.config = cache_config;
    return spec;
  }
  if (base.size() > 1 && base[0] == 'r' && IsHex(std::string_view(base).substr(1))) {
    spec.type = PERF_TYPE_RAW;
    spec.config = std::strtoull(base.c_str() + 1, nullptr, 16);
    return spec;
  }
  std::string pfm_error = "opscope was built without libpfm4, so CPU-specific names are unknown";
#ifdef OPSCOPE_HAVE_LIBPFM
  spec.exclude_user = spec.exclude_kernel = spec.exclude_hv = false;
  spec.name = text;
  if (ResolveWithLibpfm(text, &spec, &pfm_error)) return spec;
#endif
  return InvalidArgument("unknown event '" + text + "' (" + pfm_error +
                         "); use a generic name (cycles, instructions, cache-misses, "
                         "task-clock, page-faults, ...), a hw-cache name "
                         "(L1-dcache-load-misses), a raw code rNNNN, or see `perf list`");
}

StatusOr<std::vector<EventSpec>> ParseEventList(std::string_view list) {
  std::vector<EventSpec> out;
  for (const std::string& part : Split(list, ',', /*skip_empty=*/true)) {
    OPSCOPE_ASSIGN_OR_RETURN(EventSpec spec, ParseEvent(part));
    out.push_back(std::move(spec));
  }
  if (out.empty()) return InvalidArgument("empty event list: give -e with at least one event");
  return out;
}

static std::vector<EventSpec> ParseFixed(std::initializer_list<const char*> names) {
  std::vector<EventSpec> out;
  for (const char* n : names) out.push_back(*ParseEvent(n));
  return out;
}

std::vector<EventSpec> DefaultStatEvents() {
  return ParseFixed({"task-clock", "context-switches", "cpu-migrations", "page-faults", "cycles",
                     "instructions", "branches", "branch-misses", "cache-references",
                     "cache-misses", "L1-dcache-load-misses", "LLC-load-misses"});
}

std::vector<EventSpec> DefaultOpEvents() {
  return ParseFixed({"cycles", "instructions", "cache-misses", "branch-misses", "task-clock",
                     "page-faults", "context-switches"});
}

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
  if (!privileged && paranoid >= 3) {
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
    out << "pid=" << c.pid << "\ncpu=" << c.cpu << "\ngroup_fd=" << group << "\nflags=" << Hex(c.flags)
        << "\nresult=";
    if (c.result >= 0) out << "fd\n";
    else out << '-' << ErrnoName(-c.result) << '\n';
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
  return requested + " unavailable (" + (IsNoPmuError(err) ? std::string("no hardware PMU")
                                                           : ErrnoName(err)) +
         "): using cpu-clock";
}

void SwitchToCpuClock(perf_event_attr* attr) {
  attr->type = PERF_TYPE_SOFTWARE;
  attr->config = PERF_COUNT_SW_CPU_CLOCK;
}

StatusOr<int> OpenWithFallback(PerfEventOpener& opener, perf_event_attr* attr, pid_t pid, int cpu,
                               const std::string& requested,
                               std::vector<std::string>* degradations, bool* user_only) {
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

// ---------------------------------------------------------------------------------------------
// CounterSet

CounterSet::CounterSet(CounterSet&& o) noexcept { *this = std::move(o); }
CounterSet& CounterSet::operator=(CounterSet&& o) noexcept {
  if (this != &o) {
    CloseAll();
    slots_ = std::move(o.slots_);
    fds_ = std::move(o.fds_);
    pages_ = std::move(o.pages_);
    groups_ = std::move(o.groups_);
    buffer_ = std::move(o.buffer_);
    user_only_ = o.user_only_;
    o.fds_.clear();
    o.pages_.clear();
    o.groups_.clear();
  }
  return *this;
}
CounterSet::~CounterSet() { CloseAll(); }

void CounterSet::CloseAll() {
  const long page = sysconf(_SC_PAGESIZE);
  for (void* p : pages_)
    if (p) munmap(p, page);
  for (int fd : fds_)
    if (fd >= 0) close(fd);
  pages_.clear();
  fds_.clear();
  groups_.clear();
}

StatusOr<CounterSet> CounterSet::Open(PerfEventOpener& opener, const std::vector<EventSpec>& events,
                                      const CounterTarget& target,
                                      std::vector<std::string>* degradations) {
  CounterSet set;
  set.slots_.resize(events.size());
  set.fds_.assign(events.size(), -1);
  set.pages_.assign(events.size(), nullptr);
  int sw_group = -1;                  // index into groups_
  int hw_group = -1;
  std::vector<std::string> no_pmu_names;
  const long page = sysconf(_SC_PAGESIZE);

  auto open_one = [&](const EventSpec& spec, int group) -> int {
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof(attr));
    attr.size = sizeof(attr);
    attr.type = spec.type;
    attr.config = spec.config;
    attr.config1 = spec.config1;
    attr.config2 = spec.config2;
    attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED |
                       PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID;
    const bool leader = group < 0 || set.groups_[group].leader_fd < 0;
    // The leader is created disabled and enabled by exec (stat) so the command's own startup is
    // counted and opscope's fork/wait is not; members follow their leader.
    attr.disabled = leader && target.enable_on_exec;
    attr.enable_on_exec = leader && target.enable_on_exec;
    attr.inherit = target.inherit;
    attr.exclude_user = spec.exclude_user;
    attr.exclude_kernel = spec.exclude_kernel || set.user_only_;
    attr.exclude_hv = spec.exclude_hv || set.user_only_;
    int group_fd = leader ? -1 : set.groups_[group].leader_fd;
    return opener.Open(attr, target.pid, target.cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
  };

  for (size_t i = 0; i < events.size(); ++i) {
    Slot& slot = set.slots_[i];
    slot.requested = events[i].name;
    slot.spec = events[i];
    int* group_index = slot.spec.NeedsPmu() ? &hw_group : &sw_group;
    if (slot.spec.NeedsPmu() && hw_group >= 0 &&
        set.groups_[hw_group].slot_of_member.size() >= kMaxHardwareGroup)
      hw_group = -1;
    if (*group_index < 0) {
      set.groups_.emplace_back();
      *group_index = static_cast<int>(set.groups_.size()) - 1;
    }
    int fd = -1;
    bool dropped = false;
    // Climb the ladder until the kernel accepts, or the event is dropped. Each rung is taken at
    // most once per event, whatever order the kernel reports the problems in.
    for (;;) {
      fd = open_one(slot.spec, *group_index);
      perf_event_attr asked{};
      asked.type = slot.spec.type;
      asked.config = slot.spec.config;
      asked.exclude_kernel = slot.spec.exclude_kernel || set.user_only_;
      const Fallback next = NextFallback(fd, asked);
      // Rung 2: kernel counting refused -> user space only, for this and every later event.
      if (next == Fallback::kUserOnly) {
        set.user_only_ = true;
        AddOnce(degradations, UserOnlyDegradation(opener));
        continue;
      }
      if (next == Fallback::kRefused)
        return PermissionDenied(PerfErrorText(-fd, slot.spec, opener));
      // Rung 1: no PMU (or not this event) -> cycles becomes cpu-clock; others are not counted.
      if (next == Fallback::kCpuClock) {
        EventSpec clock = *ParseEvent("cpu-clock");
        clock.exclude_user = slot.spec.exclude_user;
        clock.exclude_kernel = slot.spec.exclude_kernel;
        clock.exclude_hv = slot.spec.exclude_hv;
        slot.spec = clock;
        slot.note = "cpu-clock stands in for " + slot.requested + " (no hardware PMU)";
        AddOnce(degradations, CpuClockDegradation(slot.requested, -fd));
        if (sw_group < 0) {
          set.groups_.emplace_back();
          sw_group = static_cast<int>(set.groups_.size()) - 1;
        }
        group_index = &sw_group;
        continue;
      }
      if (next == Fallback::kUnsupported) {
        slot.note = "not supported (" + ErrnoName(-fd) + "): no hardware PMU here, or the CPU lacks it";
        no_pmu_names.push_back(slot.requested);
        dropped = true;
      }
      break;
    }
    if (dropped) continue;
    if (fd == -ESRCH) return NotFound(PerfErrorText(ESRCH, slot.spec, opener));
    if (fd == -EMFILE || fd == -ENFILE)
      return ResourceExhausted(PerfErrorText(-fd, slot.spec, opener));
    if (fd < 0) {
      slot.note = PerfErrorText(-fd, slot.spec, opener);
      AddOnce(degradations, slot.requested + " not counted: " + slot.note);
      continue;
    }
    Group& g = set.groups_[*group_index];
    if (g.leader_fd < 0) g.leader_fd = fd;
    uint64_t id = 0;
    if (ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0) id = ~0ull - i;  // fake fds (tests)
    g.slot_of_member.push_back(static_cast<int>(i));
    g.ids.push_back(id);
    slot.supported = true;
    slot.group = *group_index;
    set.fds_[i] = fd;
    if (target.map_for_rdpmc && slot.spec.NeedsPmu()) {
      void* p = mmap(nullptr, page, PROT_READ, MAP_SHARED, fd, 0);
      set.pages_[i] = p == MAP_FAILED ? nullptr : p;
    }
  }
  if (!no_pmu_names.empty())
    AddOnce(degradations, "not counted (no hardware PMU here, or the CPU lacks them): " +
                              Join(no_pmu_names, ", "));
  // Drop groups that ended up empty (every member refused).
  std::vector<Group> kept;
  for (Group& g : set.groups_) {
    if (g.leader_fd < 0) continue;
    for (int s : g.slot_of_member) set.slots_[s].group = static_cast<int>(kept.size());
    g.buffer_words = 3 + 2 * g.slot_of_member.size();
    kept.push_back(std::move(g));
  }
  set.groups_ = std::move(kept);
  size_t words = 0;
  for (const Group& g : set.groups_) words = std::max(words, g.buffer_words);
  set.buffer_.assign(words, 0);
  if (set.groups_.empty()) {
    std::vector<std::string> names;
    for (const Slot& s : set.slots_) names.push_back(s.requested);
    return Unavailable("none of the events could be counted here (" + Join(names, ", ") +
                       "); try software events: -e task-clock,page-faults,context-switches");
  }
  return set;
}

Status CounterSet::Enable() {
  for (const Group& g : groups_)
    if (ioctl(g.leader_fd, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP) != 0)
      return Internal(std::string("enabling a counter group failed: ") + std::strerror(errno));
  return Status::Ok();
}

Status CounterSet::Disable() {
  for (const Group& g : groups_)
    if (ioctl(g.leader_fd, PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP) != 0)
      return Internal(std::string("disabling a counter group failed: ") + std::strerror(errno));
  return Status::Ok();
}

Status CounterSet::ReadGroup(const Group& g, std::span<RawCount> out) const {
  const size_t bytes = g.buffer_words * sizeof(uint64_t);
  ssize_t n = ::read(g.leader_fd, buffer_.data(), bytes);
  if (n < 0) return Internal(std::string("reading a counter group failed: ") + std::strerror(errno));
  if (static_cast<size_t>(n) < 3 * sizeof(uint64_t))
    return Internal("reading a counter group returned " + std::to_string(n) + " bytes");
  const uint64_t nr = buffer_[0];
  const uint64_t enabled = buffer_[1], running = buffer_[2];
  for (uint64_t k = 0; k < nr && 3 + 2 * k + 1 < g.buffer_words; ++k) {
    const uint64_t value = buffer_[3 + 2 * k], id = buffer_[4 + 2 * k];
    // Members come back in the order they joined; the id confirms it.
    size_t m = k;
    if (m >= g.ids.size() || g.ids[m] != id) {
      auto it = std::find(g.ids.begin(), g.ids.end(), id);
      if (it == g.ids.end()) continue;
      m = static_cast<size_t>(it - g.ids.begin());
    }
    out[static_cast<size_t>(g.slot_of_member[m])] = RawCount{value, enabled, running};
  }
  return Status::Ok();
}

Status CounterSet::Read(std::span<RawCount> out) const {
  if (out.size() != slots_.size()) return Internal("CounterSet::Read: wrong output size");
  for (RawCount& c : out) c = RawCount{};
  for (const Group& g : groups_) OPSCOPE_RETURN_IF_ERROR(ReadGroup(g, out));
  return Status::Ok();
}

#if defined(__x86_64__) || defined(__i386__)
static inline uint64_t Rdpmc(uint32_t counter) {
  uint32_t low, high;
  asm volatile("rdpmc" : "=a"(low), "=d"(high) : "c"(counter));
  return low | (static_cast<uint64_t>(high) << 32);
}
static inline uint64_t Rdtsc() {
  uint32_t low, high;
  asm volatile("rdtsc" : "=a"(low), "=d"(high));
  return low | (static_cast<uint64_t>(high) << 32);
}

// The self-monitoring protocol documented in linux/perf_event.h (perf_event_mmap_page): a
// seqlock around index/offset, the hardware counter sign-extended from pmc_width bits, and the
// enabled/running times advanced with the TSC conversion the kernel publishes.
static bool ReadOne(const perf_event_mmap_page* pc, RawCount* out) {
  uint32_t seq;
  uint64_t count, enabled, running;
  do {
    seq = pc->lock;
    asm volatile("" ::: "memory");
    enabled = pc->time_enabled;
    running = pc->time_running;
    const uint32_t idx = pc->index;
    if (!pc->cap_user_rdpmc || idx == 0) return false;
    count = pc->offset;
    const uint16_t width = pc->pmc_width;
    int64_t pmc = static_cast<int64_t>(Rdpmc(idx - 1));
    pmc <<= 64 - width;
    pmc >>= 64 - width;
    count += static_cast<uint64_t>(pmc);
    if (pc->cap_user_time) {
      const uint64_t cyc = Rdtsc();
      const uint16_t shift = pc->time_shift;
      const uint64_t quot = cyc >> shift, rem = cyc & ((uint64_t{1} << shift) - 1);
      const uint64_t delta = pc->time_offset + quot * pc->time_mult + ((rem * pc->time_mult) >> shift);
      enabled += delta;
      running += delta;  // the event is on the PMU (idx != 0), so it is running
    }
    asm volatile("" ::: "memory");
  } while (pc->lock != seq);
  *out = RawCount{count, enabled, running};
  return true;
}
#endif

bool CounterSet::ReadGroupRdpmc(const Group& g, std::span<RawCount> out) const {
#if defined(__x86_64__) || defined(__i386__)
  for (int s : g.slot_of_member) {
    const void* page = pages_[static_cast<size_t>(s)];
    if (!page || !ReadOne(static_cast<const perf_event_mmap_page*>(page), &out[static_cast<size_t>(s)]))
      return false;
  }
  return true;
#else
  (void)g;
  (void)out;
  return false;
#endif
}

Status CounterSet::ReadOwn(std::span<RawCount> out, int* rdpmc_groups) const {
  if (out.size() != slots_.size()) return Internal("CounterSet::ReadOwn: wrong output size");
  for (RawCount& c : out) c = RawCount{};
  *rdpmc_groups = 0;
  for (const Group& g : groups_) {
    if (ReadGroupRdpmc(g, out)) {
      ++*rdpmc_groups;
      continue;
    }
    OPSCOPE_RETURN_IF_ERROR(ReadGroup(g, out));
  }
  return Status::Ok();
}

}  // namespace opscope::collect
