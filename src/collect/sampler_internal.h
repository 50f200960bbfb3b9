// What the files of the sampler (sampler.h) share; not part of collect's interface:
// sampler_events.cc (the sampling attrs and opening the events), sampler_decode.cc (kernel ring
// records into raw events), sampler.cc (`record -- CMD` and `record -p`) and
// sampler_inprocess.cc (the in-process sampler of `profile --sample`).
#pragma once

#include <poll.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <unistd.h>

#include <memory>
#include <vector>

#include "base/status.h"
#include "collect/record_file.h"
#include "collect/ring_buffer.h"
#include "collect/sampler.h"

namespace opscope::collect::sampler_internal {

// One opened event with its ring.
struct Event {
  int fd = -1;
  pid_t tid = 0;  // per-thread events only
  bool hung_up = false;
  PerfRing ring;
};

// The events of a session, their attr, and the drain loop.
class EventSet {
 public:
  ~EventSet() { CloseAll(); }
  perf_event_attr attr{};
  std::vector<std::unique_ptr<Event>> events;
  uint64_t samples = 0, lost = 0;

  // Takes `fd` (an opened sampling event of task `tid`) and maps its ring.
  Status Add(int fd, pid_t tid, size_t ring_pages) {
    auto e = std::make_unique<Event>();
    e->fd = fd;
    e->tid = tid;
    Status st = e->ring.Map(e->fd, ring_pages);
    if (!st.ok()) {
      close(e->fd);
      return st;
    }
    events.push_back(std::move(e));
    return Status::Ok();
  }
  void EnableAll() {
    for (auto& e : events) ioctl(e->fd, PERF_EVENT_IOC_ENABLE, 0);
  }
  void DisableAll() {
    for (auto& e : events) ioctl(e->fd, PERF_EVENT_IOC_DISABLE, 0);
  }
  void DrainAll(EventBatch* batch) {
    for (auto& e : events)
      e->ring.Drain(
          [&](const perf_event_header* h) { DecodePerfRecord(h, attr, batch, &samples, &lost); });
  }
  // Waits until some ring passed its watermark or `timeout_ms` passed. An event whose task has
  // exited reports POLLHUP forever: it is still drained but no longer polled, or the drain
  // thread would spin.
  void Wait(int timeout_ms) {
    std::vector<pollfd> fds;
    std::vector<Event*> polled;
    for (auto& e : events)
      if (!e->hung_up) {
        fds.push_back({e->fd, POLLIN, 0});
        polled.push_back(e.get());
      }
    if (fds.empty()) {
      usleep(static_cast<useconds_t>(timeout_ms) * 1000);
      return;
    }
    if (poll(fds.data(), fds.size(), timeout_ms) <= 0) return;
    for (size_t i = 0; i < fds.size(); ++i)
      if (fds[i].revents & (POLLHUP | POLLERR)) polled[i]->hung_up = true;
  }
  void CloseAll() {
    for (auto& e : events)
      if (e->fd >= 0) close(e->fd);
    events.clear();
  }
};

// The record file's metadata every session starts with (options, host, time).
RecordMeta BaseMeta(const SamplerOptions& opt);
// The options' ranges (frequency, DWARF stack size, ring pages), as one line each.
Status CheckOptions(const SamplerOptions& opt);
// Executable mappings that existed before sampling started (the kernel reports only new ones):
// read from /proc/PID/maps, as MMAP records of `pid`. A process that is gone or unreadable adds
// nothing.
void SynthesizeMmaps(pid_t pid, EventBatch* batch);

}  // namespace opscope::collect::sampler_internal
