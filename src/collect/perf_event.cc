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

#include "base/strings.h"
#include "collect/perf_event_internal.h"

namespace opscope::collect {

using perf_internal::AddOnce;
using perf_internal::ErrnoName;

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
  int sw_group = -1;  // index into groups_
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
        slot.note =
            "not supported (" + ErrnoName(-fd) + "): no hardware PMU here, or the CPU lacks it";
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

}  // namespace opscope::collect
