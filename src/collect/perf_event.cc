// CounterSet (perf_event.h): the attrs built for one target, split into groups and opened
// through the fallback ladder (perf_event_open.cc); reading them is perf_event_read.cc.
#include "collect/perf_event.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/files.h"
#include "base/host.h"
#include "base/strings.h"
#include "collect/perf_event_internal.h"

namespace opscope::collect {

using perf_internal::AddOnce;
using perf_internal::ErrnoName;
using perf_internal::IsNoPmuError;

// ---------------------------------------------------------------------------------------------
// CounterSet

CounterSet::CounterSet(CounterSet&& o) noexcept { *this = std::move(o); }
CounterSet& CounterSet::operator=(CounterSet&& o) noexcept {
  if (this != &o) {
    CloseAll();
    slots_ = std::move(o.slots_);
    fds_ = std::move(o.fds_);
    pages_ = std::move(o.pages_);
    slot_of_ = std::move(o.slot_of_);
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
  slot_of_.clear();
  groups_.clear();
}

std::vector<CorePmu> CorePmus() {
  const std::string dir = HostPath("/sys/bus/event_source/devices/");
  std::vector<CorePmu> out;
  for (const std::string& d : ListDirectory(dir)) {
    const bool arm =
        StartsWith(d, "armv8") || StartsWith(d, "armv7") || StartsWith(d, "arm_cortex");
    if (!arm && d != "cpu_core" && d != "cpu_atom") continue;
    int64_t type = 0;
    if (!ParseInt64(Trim(ReadSysFile(dir + d + "/type")), &type) || type < 0 || type > 0xffffffffLL)
      type = 0;
    out.push_back({d, static_cast<uint32_t>(type), Trim(ReadSysFile(dir + d + "/cpus")), arm});
  }
  return out;
}

std::vector<CorePmu> HybridCorePmus() {
  std::vector<CorePmu> out;
  for (CorePmu& p : CorePmus())
    if (p.type > 0 && !p.cpus.empty()) out.push_back(std::move(p));
  if (out.size() < 2) out.clear();
  return out;
}

int64_t Armv8CommonEvent(uint64_t hw_id) {
  switch (hw_id) {
    case PERF_COUNT_HW_CPU_CYCLES:
      return 0x11;  // CPU_CYCLES
    case PERF_COUNT_HW_INSTRUCTIONS:
      return 0x08;  // INST_RETIRED
    case PERF_COUNT_HW_CACHE_REFERENCES:
      return 0x04;  // L1D_CACHE
    case PERF_COUNT_HW_CACHE_MISSES:
      return 0x03;  // L1D_CACHE_REFILL
    case PERF_COUNT_HW_BRANCH_INSTRUCTIONS:
      return 0x21;  // BR_RETIRED
    case PERF_COUNT_HW_BRANCH_MISSES:
      return 0x10;  // BR_MIS_PRED
    case PERF_COUNT_HW_BUS_CYCLES:
      return 0x1d;  // BUS_CYCLES
    case PERF_COUNT_HW_STALLED_CYCLES_FRONTEND:
      return 0x23;  // STALL_FRONTEND
    case PERF_COUNT_HW_STALLED_CYCLES_BACKEND:
      return 0x24;  // STALL_BACKEND
    default:
      return -1;
  }
}

StatusOr<CounterSet> CounterSet::Open(PerfEventOpener& opener, const std::vector<EventSpec>& events,
                                      const CounterTarget& target,
                                      std::vector<std::string>* degradations) {
  CounterSet set;
  set.slots_.resize(events.size());
  const std::vector<CorePmu> pmus = HybridCorePmus();
  int sw_group = -1;  // index into groups_
  // Hardware groups: [0] for events of the one PMU (and raw or PMU-typed ones), [1 + p] for the
  // members on core PMU p of a hybrid machine.
  std::vector<int> hw_group(pmus.size() + 1, -1);
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
  // The group a new member joins: the current one of its kind while it has room.
  auto group_for = [&](bool hardware, size_t pmu_key) -> int {
    int* g = hardware ? &hw_group[pmu_key] : &sw_group;
    if (hardware && *g >= 0 && set.groups_[*g].members.size() >= kMaxHardwareGroup) *g = -1;
    if (*g < 0) {
      set.groups_.emplace_back();
      *g = static_cast<int>(set.groups_.size()) - 1;
    }
    return *g;
  };
  auto add_member = [&](size_t slot, int fd, int group) {
    Group& g = set.groups_[group];
    if (g.leader_fd < 0) g.leader_fd = fd;
    const size_t m = set.fds_.size();
    uint64_t id = 0;
    if (ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0) id = ~0ull - m;  // fake fds (tests)
    g.members.push_back(static_cast<int>(m));
    g.ids.push_back(id);
    set.fds_.push_back(fd);
    set.slot_of_.push_back(static_cast<int>(slot));
    void* pg = nullptr;
    if (target.map_for_rdpmc && set.slots_[slot].spec.NeedsPmu()) {
      pg = mmap(nullptr, page, PROT_READ, MAP_SHARED, fd, 0);
      if (pg == MAP_FAILED) pg = nullptr;
    }
    set.pages_.push_back(pg);
    Slot& s = set.slots_[slot];
    if (!s.supported) s.group = group;
    s.supported = true;
  };
  // What the ladder does next for `fd`, the result of opening `spec`.
  auto rung = [&](int fd, const EventSpec& spec) {
    perf_event_attr asked{};
    asked.type = spec.type;
    asked.config = spec.config;
    asked.exclude_kernel = spec.exclude_kernel || set.user_only_;
    return NextFallback(fd, asked);
  };
  // Rung 2: kernel counting refused -> user space only, for this and every later event.
  auto go_user_only = [&] {
    set.user_only_ = true;
    AddOnce(degradations, UserOnlyDegradation(opener));
  };
  // Errors after the ladder that end the whole set.
  auto fatal = [&](int fd, const EventSpec& spec) -> Status {
    // No system call at all: every other event fails the same way, software ones included, so
    // say that once instead of "try software events".
    if (fd == -ENOSYS) return Unavailable(PerfErrorText(ENOSYS, spec, opener));
    if (fd == -ESRCH) return NotFound(PerfErrorText(ESRCH, spec, opener));
    if (fd == -EMFILE || fd == -ENFILE) return ResourceExhausted(PerfErrorText(-fd, spec, opener));
    return Status::Ok();
  };

  for (size_t i = 0; i < events.size(); ++i) {
    Slot& slot = set.slots_[i];
    slot.requested = events[i].name;
    slot.spec = events[i];
    // Several core PMUs: a generic hardware event once on each (the extended type, the PMU's in
    // config's upper 32 bits, PERF_PMU_TYPE_SHIFT; on an Arm kernel without it, the PMU's own
    // type with the Armv8 common event number).
    const bool generic =
        (slot.spec.type == PERF_TYPE_HARDWARE || slot.spec.type == PERF_TYPE_HW_CACHE) &&
        (slot.spec.config >> 32) == 0;
    if (!pmus.empty() && generic) {
      std::vector<std::string> refused;
      for (size_t p = 0; p < pmus.size(); ++p) {
        const int group = group_for(true, p + 1);
        EventSpec spec = slot.spec;
        int fd = -1;
        for (;;) {
          spec = slot.spec;
          spec.config |= uint64_t{pmus[p].type} << 32;
          fd = open_one(spec, group);
          const int64_t arm_event =
              slot.spec.type == PERF_TYPE_HARDWARE ? Armv8CommonEvent(slot.spec.config) : -1;
          if (fd < 0 && IsNoPmuError(-fd) && pmus[p].arm && arm_event >= 0) {
            spec.type = pmus[p].type;
            spec.config = static_cast<uint64_t>(arm_event);
            fd = open_one(spec, group);
          }
          const Fallback next = rung(fd, spec);
          if (next == Fallback::kUserOnly) {
            go_user_only();
            continue;
          }
          if (next == Fallback::kRefused)
            return PermissionDenied(PerfErrorText(-fd, slot.spec, opener));
          break;
        }
        OPSCOPE_RETURN_IF_ERROR(fatal(fd, slot.spec));
        if (fd < 0) {
          refused.push_back(pmus[p].name + " (" + ErrnoName(-fd) + ")");
          continue;
        }
        add_member(i, fd, group);
        slot.pmus.push_back(pmus[p].name);
      }
      if (slot.supported) {
        if (!refused.empty()) {
          slot.note = "counted on " + Join(slot.pmus, ", ") + " only; refused by " +
                      Join(refused, ", ") + ": it misses the time its threads ran there";
          AddOnce(degradations, slot.requested + " " + slot.note);
        }
        continue;
      }
      // No core PMU took it: the ladder below, as on a machine with one PMU, and the kernel
      // binds it to one of them.
      slot.note = "not per core PMU (" + Join(refused, ", ") +
                  "): counted by the one PMU the kernel picks, which stops while its threads run "
                  "on another cluster, and scaled as if multiplexed";
    }
    const std::string hybrid_note = slot.note;
    int group = group_for(slot.spec.NeedsPmu(), 0);
    int fd = -1;
    bool dropped = false;
    // Climb the ladder until the kernel accepts, or the event is dropped. Each rung is taken at
    // most once per event, whatever order the kernel reports the problems in.
    for (;;) {
      fd = open_one(slot.spec, group);
      const Fallback next = rung(fd, slot.spec);
      if (next == Fallback::kUserOnly) {
        go_user_only();
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
        group = group_for(false, 0);
        continue;
      }
      if (next == Fallback::kUnsupported) {
        slot.note =
            "not supported (" + ErrnoName(-fd) + "): no hardware PMU here, or the CPU lacks it";
        no_pmu_names.push_back(slot.requested);
        dropped = true;
      }
      break;
    }
    if (dropped) continue;
    OPSCOPE_RETURN_IF_ERROR(fatal(fd, slot.spec));
    if (fd < 0) {
      slot.note = PerfErrorText(-fd, slot.spec, opener);
      AddOnce(degradations, slot.requested + " not counted: " + slot.note);
      continue;
    }
    add_member(i, fd, group);
    if (!hybrid_note.empty() && slot.note == hybrid_note)
      AddOnce(degradations, slot.requested + ": " + hybrid_note);
  }
  if (!no_pmu_names.empty())
    AddOnce(degradations, "not counted (no hardware PMU here, or the CPU lacks them): " +
                              Join(no_pmu_names, ", "));
  // Drop groups that ended up empty (every member refused).
  std::vector<Group> kept;
  std::vector<int> index_of(set.groups_.size(), -1);
  for (size_t k = 0; k < set.groups_.size(); ++k) {
    Group& g = set.groups_[k];
    if (g.leader_fd < 0) continue;
    index_of[k] = static_cast<int>(kept.size());
    g.buffer_words = 3 + 2 * g.members.size();
    kept.push_back(std::move(g));
  }
  for (Slot& s : set.slots_)
    if (s.group >= 0) s.group = index_of[static_cast<size_t>(s.group)];
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

}  // namespace opscope::collect
