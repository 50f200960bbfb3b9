// Counting with perf_event_open: event names, the kernel call, counter groups, the fallback ladder.
//
// Design. Every counter opscope reads goes through three pieces:
//
//  * EventSpec: one event resolved from what the user typed ("cycles", "page-faults", "r01c2",
//    "L1-dcache-load-misses", a libpfm4 name such as "perf::instructions" or the CPU's own
//    "RETIRED_INSTRUCTIONS") into the (type, config) pair the kernel understands.
//  * PerfEventOpener: the kernel call, behind an interface. The real one calls
//    syscall(__NR_perf_event_open); RecordingPerfEventOpener captures every perf_event_attr (with
//    pid, cpu, group_fd and flags) and can play a machine without a PMU or with
//    perf_event_paranoid=2, so the attr tests check the exact requests of the hardware path on a
//    machine that lacks the hardware (the idea of perf's tests/attr).
//  * CounterSet: the events opened for one target (a child process with inherit, or one thread),
//    split into groups (software events in one group, hardware events in groups of at most
//    kMaxHardwareGroup so a group fits the PMU's counters), read with one
//    PERF_FORMAT_GROUP|TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING|ID read() per group, or with rdpmc
//    from the mmap'd page for the calling thread's own hardware counters where the kernel allows.
//
// The fallback ladder (as perf's evsel__fallback), applied per event when the kernel refuses:
//   1. hardware event, ENOENT/EOPNOTSUPP/ENODEV/EINVAL (no PMU: VMs, containers):
//      cycles -> cpu-clock; any other hardware event is marked "not supported".
//   2. EACCES/EPERM while counting kernel space: retry user-only (exclude_kernel=1,
//      exclude_hv=1); said once ("perf_event_paranoid=2: counting user space only").
//   3. still refused: a PermissionDenied status that names kernel.perf_event_paranoid and
//      CAP_PERFMON and how to change them.
// Every rung taken is written, in words, into the `degradations` list the caller passes (and from
// there into meta.degradations and StatSection::degradations). The same ladder (NextFallback,
// OpenWithFallback) opens the sampler's events, and the same attr tests cover both.
#pragma once

#include <linux/perf_event.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace opscope::collect {

struct EventSpec {
  std::string name;  // what is counted, as shown to the user ("cycles", "r01c2", "cpu-clock")
  uint32_t type = PERF_TYPE_SOFTWARE;
  uint64_t config = 0, config1 = 0, config2 = 0;
  bool exclude_user = false, exclude_kernel = false, exclude_hv = false;  // ":u" / ":k" modifiers

  // Needs a hardware PMU (hardware, hw-cache, raw or a PMU-specific type).
  bool NeedsPmu() const;
  // task-clock and cpu-clock count nanoseconds.
  bool IsTime() const;
};

// Resolves one event name. Accepts perf's generic names (and aliases such as "faults", "cs"),
// hw-cache names ("L1-dcache-load-misses", "LLC-load-misses", "dTLB-load-misses", ...),
// raw codes "rNNNN" (hex), an optional ":u" / ":k" / ":uk" modifier, and, when opscope is built
// with libpfm4, any name libpfm4 knows for this CPU. An unknown name is an InvalidArgument that
// says how to list the names.
StatusOr<EventSpec> ParseEvent(std::string_view name);
// A comma-separated list, as `-e` takes it.
StatusOr<std::vector<EventSpec>> ParseEventList(std::string_view list);

// `opscope stat`'s default events: task-clock, context-switches, cpu-migrations, page-faults,
// cycles, instructions, branches, branch-misses, cache-references, cache-misses,
// L1-dcache-load-misses, LLC-load-misses (the last two are dropped silently, as perf does, on a
// CPU that lacks them).
std::vector<EventSpec> DefaultStatEvents();
// Events counted per operator by default: the hardware set that gives IPC and MPKI, plus the
// software stand-ins that are all a machine without a PMU has.
std::vector<EventSpec> DefaultOpEvents();

// The kernel call. Implementations return the new fd, or -errno.
class PerfEventOpener {
 public:
  virtual ~PerfEventOpener() = default;
  virtual int Open(const perf_event_attr& attr, pid_t pid, int cpu, int group_fd,
                   unsigned long flags) = 0;
  // kernel.perf_event_paranoid (for error messages and the user-only rung).
  virtual int Paranoid() const = 0;
  // Root, CAP_PERFMON or CAP_SYS_ADMIN: paranoid does not apply.
  virtual bool Privileged() const = 0;
};

class SystemPerfEventOpener : public PerfEventOpener {
 public:
  int Open(const perf_event_attr& attr, pid_t pid, int cpu, int group_fd,
           unsigned long flags) override;
  int Paranoid() const override;
  bool Privileged() const override;
};
// The process-wide real opener.
PerfEventOpener& SystemOpener();

// A fake kernel for attr tests. Every call is recorded; the answer follows the machine it plays:
//  - paranoid >= 3 and not privileged: everything fails with EACCES;
//  - paranoid >= 2 and not privileged: events that count kernel space fail with EACCES;
//  - no_pmu: hardware/hw-cache/raw/PMU-type events fail with ENOENT;
//  - no_syscall: every call fails with ENOSYS (qemu-user; checked first);
//  - no_extended_type: hardware/hw-cache events naming a PMU in config's upper bits: ENOENT;
// checked in that order, as the kernel does (pmu_first swaps the last two, to check that the
// ladder does not depend on the order).
// Successful calls return a real fd (of /dev/null) so the caller can close it as usual; reading
// it yields nothing.
class RecordingPerfEventOpener : public PerfEventOpener {
 public:
  struct Call {
    perf_event_attr attr;
    pid_t pid;
    int cpu;
    int group_fd;
    unsigned long flags;
    int result;  // fd or -errno
  };
  bool no_pmu = false;
  bool no_syscall = false;
  // A kernel without the extended hardware type (Arm before it had one): a generic event with a
  // PMU type in config's upper 32 bits fails with ENOENT.
  bool no_extended_type = false;
  int paranoid = -1;
  bool privileged = true;
  bool pmu_first = false;

  ~RecordingPerfEventOpener() override;
  int Open(const perf_event_attr& attr, pid_t pid, int cpu, int group_fd,
           unsigned long flags) override;
  int Paranoid() const override { return paranoid; }
  bool Privileged() const override { return privileged; }

  const std::vector<Call>& calls() const { return calls_; }
  // One block per call, `key=value` per line, group_fd given as the index of the call that
  // returned it, so the text does not depend on fd numbers:
  //   [event 1]
  //   pid=4242
  //   group_fd=event 0
  //   type=0
  //   config=0x1 ...
  std::string Dump() const;

 private:
  std::vector<Call> calls_;
};

// A CPU PMU of a machine with several core types: one per cluster on big.LITTLE
// (armv8_cortex_a55, armv8_cortex_a76), cpu_core and cpu_atom on x86 hybrids.
struct CorePmu {
  std::string name;
  uint32_t type = 0;  // /sys/bus/event_source/devices/NAME/type
  std::string cpus;   // its CPUs, "0-3"
  bool arm = false;   // an Arm PMU (takes the Armv8 common event numbers as its own config)
};
// The CPU PMUs the kernel registered (/sys/bus/event_source/devices: armv8_*, armv7_*,
// arm_cortex*, cpu_core, cpu_atom; x86's plain `cpu` is not listed), read through base/host.h
// HostPath so --sysroot fakes them. `type` is 0 where unreadable.
std::vector<CorePmu> CorePmus();
// The core PMUs with a type when there are several; empty on a machine with one core type,
// where a generic event needs no PMU named.
std::vector<CorePmu> HybridCorePmus();
// The Armv8 PMUv3 common event number for a generic hardware event (PERF_COUNT_HW_*), as the
// kernel's arm_pmuv3 driver maps it; -1 when there is none.
int64_t Armv8CommonEvent(uint64_t hw_id);

// Where a CounterSet counts.
struct CounterTarget {
  pid_t pid = 0;  // 0: the calling thread; a tid counts that thread only
  int cpu = -1;
  bool inherit = false;         // count the target's future threads and children too
  bool enable_on_exec = false;  // start counting at the target's next execve()
  bool map_for_rdpmc = false;   // mmap each hardware event's page for user-space reads
};
// What `opscope stat` asks for: the forked child, inherit, enabled at exec.
CounterTarget StatTarget(pid_t child);

// One counter reading: the raw count and the times the event was enabled and actually counting.
struct RawCount {
  uint64_t value = 0;
  uint64_t enabled_ns = 0;
  uint64_t running_ns = 0;
};
// value * enabled / running (the estimate for a multiplexed counter); 0 when it never ran.
double ScaledValue(const RawCount& c);

inline constexpr size_t kMaxHardwareGroup = 4;

class CounterSet {
 public:
  // One requested event and what became of it. On a machine with several core PMUs a generic
  // hardware event is opened once per PMU (as perf does on hybrids: an event of one PMU does not
  // count while its thread runs on another cluster) and read as one: counts and running times
  // summed, so a thread that moved between clusters is not extrapolated as if multiplexed.
  struct Slot {
    std::string requested;   // the name the caller asked for
    EventSpec spec;          // what is counted (cpu-clock when it stands in for cycles)
    bool supported = false;  // false: nothing is counted; `note` says why
    std::string note;
    int group = -1;                 // the group of its first member
    std::vector<std::string> pmus;  // the core PMUs it is counted on (empty: not per PMU)
  };

  CounterSet() = default;
  CounterSet(CounterSet&&) noexcept;
  CounterSet& operator=(CounterSet&&) noexcept;
  CounterSet(const CounterSet&) = delete;
  CounterSet& operator=(const CounterSet&) = delete;
  ~CounterSet();

  // Opens every event for `target`, climbing the fallback ladder where the kernel refuses, and
  // appends each degradation (once) to *degradations. Fails only when a permission problem
  // remains after the user-only rung, or when no event at all could be opened.
  static StatusOr<CounterSet> Open(PerfEventOpener& opener, const std::vector<EventSpec>& events,
                                   const CounterTarget& target,
                                   std::vector<std::string>* degradations);

  const std::vector<Slot>& slots() const { return slots_; }
  bool user_only() const { return user_only_; }

  Status Enable();
  Status Disable();

  // Reads every slot into out[i] (zeros for unsupported slots); out.size() == slots().size().
  // One read() per group. Safe to call from any thread; never allocates.
  Status Read(std::span<RawCount> out) const;
  // Like Read(), but each group whose every member is on the PMU and readable from user space
  // (cap_user_rdpmc, mmap'd page, x86) is read with rdpmc instead of a read() system call. Only
  // valid on the thread being counted: rdpmc reads the counters of the CPU this thread runs on,
  // which hold this thread's events only while it runs. *rdpmc_groups counts the groups read
  // that way (software groups never are).
  Status ReadOwn(std::span<RawCount> out, int* rdpmc_groups) const;

 private:
  struct Group {
    int leader_fd = -1;
    std::vector<int> members;   // member index (fds_) in read order
    std::vector<uint64_t> ids;  // kernel ids, same order
    size_t buffer_words = 0;
  };
  void CloseAll();
  Status ReadGroup(const Group& g, std::span<RawCount> out) const;
  bool ReadGroupRdpmc(const Group& g, std::span<RawCount> out) const;

  // Adds one member's reading into its slot's (count and running time summed, enabled maxed).
  void Accumulate(size_t member, const RawCount& c, std::span<RawCount> out) const;

  std::vector<Slot> slots_;
  // Members: one opened event each (one per slot, or one per core PMU of a hybrid slot).
  std::vector<int> fds_;      // its fd
  std::vector<void*> pages_;  // its mmap'd page or nullptr
  std::vector<int> slot_of_;  // its slot
  std::vector<Group> groups_;
  mutable std::vector<uint64_t> buffer_;
  bool user_only_ = false;
};

// Human text for an errno from perf_event_open, for messages.
std::string PerfErrorText(int err, const EventSpec& spec, const PerfEventOpener& opener);
// Why nothing of perf works when perf_event_open itself is missing (ENOSYS), and what does.
std::string NoPerfEventsText();
// Opens a disabled event of `type`/`config` on this thread, user space only, and closes it: 0 when
// the kernel took it, else -errno. What doctor and the tests ask the real kernel.
int ProbePerfEvent(uint32_t type, uint64_t config);
// False where the perf_event_open system call itself is missing (ENOSYS: qemu-user, a kernel
// without CONFIG_PERF_EVENTS, a seccomp filter), found by probing task-clock. Tests of the real
// kernel skip then, with NoPerfEventsText() as the reason.
bool PerfEventOpenImplemented();

// The fallback ladder, one rung at a time, shared by CounterSet (which also regroups an event
// that changed rungs) and the sampler (OpenWithFallback). Given what the kernel answered for
// `attr`, what comes next:
enum class Fallback {
  kNone,         // it opened
  kUserOnly,     // rung 2: EACCES/EPERM while counting kernel space -> exclude_kernel, exclude_hv
  kCpuClock,     // rung 1: cycles without a PMU -> cpu-clock
  kUnsupported,  // rung 1: another hardware event without a PMU -> not counted
  kRefused,      // rung 3: still refused: PermissionDenied(PerfErrorText)
  kFailed,       // any other error
};
Fallback NextFallback(int fd_or_errno, const perf_event_attr& attr);
// The degradation recorded for each rung taken (the words reports show).
std::string UserOnlyDegradation(const PerfEventOpener& opener);
std::string CpuClockDegradation(const std::string& requested, int err);
// Switches a hardware-cycles attr to the software cpu-clock in place (the rest is kept).
void SwitchToCpuClock(perf_event_attr* attr);

// One event without a group, through the whole ladder: the sampler's opener. Each rung taken is
// appended (once) to *degradations; *user_only is set when rung 2 was taken. Returns the fd, or
// PermissionDenied (paranoid, with the fix), NotFound (ESRCH: the task is gone), Unavailable
// (an event that cannot be opened here).
StatusOr<int> OpenWithFallback(PerfEventOpener& opener, perf_event_attr* attr, pid_t pid, int cpu,
                               const std::string& requested, std::vector<std::string>* degradations,
                               bool* user_only);

}  // namespace opscope::collect
