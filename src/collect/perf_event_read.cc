// Reading a CounterSet (perf_event.h): one group read() per group, or rdpmc from the mmap'd
// page for the calling thread's own hardware counters.
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "collect/perf_event.h"

namespace opscope::collect {

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
  if (n < 0)
    return Internal(std::string("reading a counter group failed: ") + std::strerror(errno));
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
    Accumulate(static_cast<size_t>(g.members[m]), RawCount{value, enabled, running}, out);
  }
  return Status::Ok();
}

void CounterSet::Accumulate(size_t member, const RawCount& c, std::span<RawCount> out) const {
  RawCount& o = out[static_cast<size_t>(slot_of_[member])];
  o.value += c.value;
  o.enabled_ns = std::max(o.enabled_ns, c.enabled_ns);
  o.running_ns += c.running_ns;
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
      const uint64_t delta =
          pc->time_offset + quot * pc->time_mult + ((rem * pc->time_mult) >> shift);
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
  // All or nothing: a group that falls back to read() must not have been added in part.
  RawCount counts[kMaxHardwareGroup];
  if (g.members.size() > kMaxHardwareGroup) return false;
  for (size_t k = 0; k < g.members.size(); ++k) {
    const void* page = pages_[static_cast<size_t>(g.members[k])];
    if (!page || !ReadOne(static_cast<const perf_event_mmap_page*>(page), &counts[k])) return false;
  }
  for (size_t k = 0; k < g.members.size(); ++k)
    Accumulate(static_cast<size_t>(g.members[k]), counts[k], out);
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
