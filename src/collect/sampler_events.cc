// The sampling events (sampler.h): the perf_event_attr of a sampling session and opening it on
// the target's tasks or CPUs through the one fallback ladder (perf_event.h).
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/strings.h"
#include "collect/perf_event.h"
#include "collect/sampler.h"

namespace opscope::collect {

uint64_t UserRegsMask() {
#if defined(__x86_64__)
  // perf_regs x86: AX BX CX DX SI DI BP SP IP (bits 0-8), R8-R15 (bits 16-23).
  return 0x1ffULL | (0xffULL << 16);
#elif defined(__aarch64__)
  return (1ULL << 33) - 1;  // X0-X30, SP, PC
#else
  return 0;
#endif
}

perf_event_attr MakeSampleAttr(const SamplerOptions& opt, bool cycles, bool inherit,
                               bool enable_on_exec) {
  perf_event_attr a{};
  a.size = sizeof a;
  if (cycles) {
    a.type = PERF_TYPE_HARDWARE;
    a.config = PERF_COUNT_HW_CPU_CYCLES;
  } else {
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK;
  }
  a.freq = 1;
  a.sample_freq = static_cast<uint64_t>(opt.frequency_hz);
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD;
  if (opt.call_graph == CallGraph::kDwarf) {
    a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
    a.sample_regs_user = UserRegsMask();
    a.sample_stack_user = opt.stack_bytes;
  } else {
    a.sample_type |= PERF_SAMPLE_CALLCHAIN;
    a.exclude_callchain_kernel = 1;
  }
  a.disabled = 1;
  a.inherit = inherit ? 1 : 0;
  a.enable_on_exec = enable_on_exec ? 1 : 0;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.mmap = 1;
  a.mmap2 = 1;
  a.comm = 1;
  a.comm_exec = 1;
  a.task = 1;
  a.sample_id_all = 1;
  a.use_clockid = 1;
  a.clockid = CLOCK_MONOTONIC;
  a.watermark = 1;
  a.wakeup_watermark = static_cast<uint32_t>(opt.ring_pages * 4096 / 4);
  return a;
}

StatusOr<std::vector<int>> OpenSampleEvents(const SamplerOptions& opt, const SampleTarget& target,
                                            perf_event_attr* attr, RecordMeta* meta) {
  PerfEventOpener& opener = opt.opener ? *opt.opener : SystemOpener();
  if (target.tasks.empty()) return InvalidArgument("nothing to sample: no process, thread or CPU");
  *attr = MakeSampleAttr(opt, opt.try_cycles, target.inherit, target.enable_on_exec);
  const std::vector<int> cpus = target.cpus.empty() ? std::vector<int>{-1} : target.cpus;
  std::vector<int> fds;
  auto close_all = [&] {
    for (int fd : fds) close(fd);
  };
  for (size_t t = 0; t < target.tasks.size(); ++t) {
    for (int cpu : cpus) {
      const pid_t task = target.tasks[t];
      if (fds.empty()) {  // the first open climbs the ladder and decides the event
        auto fd = OpenWithFallback(opener, attr, task, cpu, opt.try_cycles ? "cycles" : "cpu-clock",
                                   &meta->degradations, nullptr);
        if (!fd.ok()) return fd.status();
        fds.push_back(*fd);
        continue;
      }
      const int fd = opener.Open(*attr, task, cpu, -1, PERF_FLAG_FD_CLOEXEC);
      if (fd == -ESRCH && t > 0) break;  // that thread or process has exited meanwhile
      if (fd < 0) {
        close_all();
        EventSpec spec;
        spec.name = attr->type == PERF_TYPE_HARDWARE ? "cycles" : "cpu-clock";
        spec.type = attr->type;
        const std::string on_cpu = cpu >= 0 ? " on CPU " + std::to_string(cpu) : "";
        const std::string where =
            task == -1 ? "CPU " + std::to_string(cpu) : "task " + std::to_string(task) + on_cpu;
        const std::string text = PerfErrorText(-fd, spec, opener) + " (" + where + ")";
        if (fd == -EACCES || fd == -EPERM) return PermissionDenied(text);
        if (fd == -ESRCH) return NotFound(text);
        return Unavailable(text);
      }
      fds.push_back(fd);
    }
  }
  const bool cycles = attr->type == PERF_TYPE_HARDWARE;
  meta->event = cycles ? "cycles" : "cpu-clock";
  meta->unit = cycles ? "cycles" : "ns";
  return fds;
}

}  // namespace opscope::collect
