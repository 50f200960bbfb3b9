#include "collect/sampler.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "base/clock.h"
#include "base/files.h"
#include "base/host.h"
#include "base/launch.h"
#include "collect/attach.h"
#include "collect/perf_access.h"
#include "collect/ring_buffer.h"
#include "base/strings.h"
#include "collect/symbolize.h"

namespace opscope::collect {
namespace {

const char* CStr(const char* p, const char* end) {
  // Ensures the string is terminated inside the record.
  for (const char* q = p; q < end; ++q)
    if (*q == '\0') return p;
  return nullptr;
}

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
      e->ring.Drain([&](const perf_event_header* h) { DecodePerfRecord(h, attr, batch, &samples, &lost); });
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

RecordMeta BaseMeta(const SamplerOptions& opt) {
  RecordMeta m;
  m.call_graph = opt.call_graph;
  m.frequency_hz = opt.frequency_hz;
  if (opt.call_graph == CallGraph::kDwarf) {
    m.regs_mask = UserRegsMask();
    m.stack_bytes = opt.stack_bytes;
  }
  HostInfo h = ReadHostInfo();
  m.host = h.hostname;
  m.kernel = h.kernel;
  m.arch = h.arch;
  m.cpu_model = h.cpu_model;
  m.logical_cpus = h.logical_cpus;
  m.uid = static_cast<int64_t>(::geteuid());
  m.created = IsoTimeNow();
  return m;
}

Status CheckOptions(const SamplerOptions& opt) {
  if (!(opt.frequency_hz >= 1 && opt.frequency_hz <= 100000))
    return InvalidArgument("sampling frequency " + fmt::format("{:g}", opt.frequency_hz) +
                           " Hz is out of range (1..100000); try -F 997");
  if (opt.call_graph == CallGraph::kDwarf) {
    if (UserRegsMask() == 0)
      return Unsupported("--call-graph dwarf is not supported on this architecture; use fp");
    if (opt.stack_bytes < 512 || opt.stack_bytes > 65000 || opt.stack_bytes % 8)
      return InvalidArgument("DWARF stack copy size must be a multiple of 8 in 512..65000 bytes");
  }
  if (opt.ring_pages == 0 || (opt.ring_pages & (opt.ring_pages - 1)))
    return InvalidArgument("ring buffer pages must be a power of two");
  return Status::Ok();
}

}  // namespace

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
        const std::string where = task == -1 ? "CPU " + std::to_string(cpu)
                                              : "task " + std::to_string(task) + on_cpu;
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

bool ParseSample(const perf_event_header* rec, const perf_event_attr& attr, RawSample* out) {
  const char* p = reinterpret_cast<const char*>(rec) + sizeof(perf_event_header);
  const char* end = reinterpret_cast<const char*>(rec) + rec->size;
  auto u64 = [&](uint64_t* v) {
    if (end - p < 8) return false;
    std::memcpy(v, p, 8);
    p += 8;
    return true;
  };
  uint64_t v = 0, ip = 0;
  const uint64_t st = attr.sample_type;
  out->ips.clear();
  out->regs.clear();
  out->stack.clear();
  if (st & PERF_SAMPLE_IDENTIFIER && !u64(&v)) return false;
  if (st & PERF_SAMPLE_IP && !u64(&ip)) return false;
  if (st & PERF_SAMPLE_TID) {
    if (!u64(&v)) return false;
    out->pid = static_cast<int32_t>(v & 0xffffffff);
    out->tid = static_cast<int32_t>(v >> 32);
  }
  if (st & PERF_SAMPLE_TIME) {
    if (!u64(&v)) return false;
    out->time_ns = static_cast<int64_t>(v);
  }
  if (st & PERF_SAMPLE_ADDR && !u64(&v)) return false;
  if (st & PERF_SAMPLE_ID && !u64(&v)) return false;
  if (st & PERF_SAMPLE_STREAM_ID && !u64(&v)) return false;
  if (st & PERF_SAMPLE_CPU && !u64(&v)) return false;
  out->period = 1;
  if (st & PERF_SAMPLE_PERIOD && !u64(&out->period)) return false;
  if (st & PERF_SAMPLE_CALLCHAIN) {
    uint64_t nr = 0;
    if (!u64(&nr) || nr > static_cast<uint64_t>(end - p) / 8) return false;
    for (uint64_t i = 0; i < nr; ++i) {
      u64(&v);
      if (v >= static_cast<uint64_t>(PERF_CONTEXT_MAX)) continue;  // context markers
      out->ips.push_back(v);
    }
  }
  if (out->ips.empty()) out->ips.push_back(ip);
  if (st & PERF_SAMPLE_REGS_USER) {
    uint64_t abi = 0;
    if (!u64(&abi)) return false;
    if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
      int n = __builtin_popcountll(attr.sample_regs_user);
      out->regs.resize(static_cast<size_t>(n));
      for (auto& r : out->regs)
        if (!u64(&r)) return false;
    }
  }
  if (st & PERF_SAMPLE_STACK_USER) {
    uint64_t size = 0;
    if (!u64(&size)) return false;
    if (size) {
      if (size > static_cast<uint64_t>(end - p)) return false;
      const char* data = p;
      p += size;
      uint64_t dyn = 0;
      if (!u64(&dyn)) return false;
      out->stack.assign(data, std::min(dyn, size));
    }
  }
  return true;
}

bool DecodePerfRecord(const perf_event_header* rec, const perf_event_attr& attr, EventBatch* batch,
                      uint64_t* samples, uint64_t* lost) {
  const char* p = reinterpret_cast<const char*>(rec) + sizeof(perf_event_header);
  const char* end = reinterpret_cast<const char*>(rec) + rec->size;
  // With sample_id_all, non-sample records end with {pid, tid, time} (TID then TIME).
  auto trailer_time = [&]() -> int64_t {
    if (end - p < 16) return 0;
    uint64_t t;
    std::memcpy(&t, end - 8, 8);
    return static_cast<int64_t>(t);
  };
  switch (rec->type) {
    case PERF_RECORD_SAMPLE: {
      thread_local RawSample s;
      if (!ParseSample(rec, attr, &s)) return false;
      batch->AddSample(s);
      ++*samples;
      return true;
    }
    case PERF_RECORD_MMAP:
    case PERF_RECORD_MMAP2: {
      struct {
        uint32_t pid, tid;
        uint64_t addr, len, pgoff;
      } h;
      // MMAP2 adds {maj, min, ino, ino_generation} (24 bytes) and {prot, flags} before the name.
      size_t fixed = sizeof h + (rec->type == PERF_RECORD_MMAP2 ? 32 : 0);
      if (end - p < static_cast<ptrdiff_t>(fixed)) return false;
      std::memcpy(&h, p, sizeof h);
      if (rec->type == PERF_RECORD_MMAP2) {
        uint32_t prot;
        std::memcpy(&prot, p + sizeof h + 24, 4);
        if (!(prot & 4 /*PROT_EXEC*/)) return false;
      }
      const char* name = CStr(p + fixed, end);
      if (!name) return false;
      RawMmap m{static_cast<int32_t>(h.pid), static_cast<int32_t>(h.tid), trailer_time(),
                h.addr, h.len, h.pgoff, name};
      batch->AddMmap(m);
      return true;
    }
    case PERF_RECORD_COMM: {
      if (end - p < 8) return false;
      uint32_t ids[2];
      std::memcpy(ids, p, 8);
      const char* name = CStr(p + 8, end);
      if (!name) return false;
      RawComm c{static_cast<int32_t>(ids[0]), static_cast<int32_t>(ids[1]), trailer_time(),
                (rec->misc & PERF_RECORD_MISC_COMM_EXEC) != 0, name};
      batch->AddComm(c);
      return true;
    }
    case PERF_RECORD_FORK: {
      if (end - p < 24) return false;
      uint32_t ids[4];
      uint64_t t;
      std::memcpy(ids, p, 16);
      std::memcpy(&t, p + 16, 8);
      batch->AddFork({static_cast<int32_t>(ids[0]), static_cast<int32_t>(ids[1]),
                      static_cast<int32_t>(ids[2]), static_cast<int32_t>(ids[3]),
                      static_cast<int64_t>(t)});
      return true;
    }
    case PERF_RECORD_LOST: {
      if (end - p < 16) return false;
      uint64_t n;
      std::memcpy(&n, p + 8, 8);
      *lost += n;
      batch->AddLost(n);
      return true;
    }
    case 13: {  // PERF_RECORD_LOST_SAMPLES
      if (end - p < 8) return false;
      uint64_t n;
      std::memcpy(&n, p, 8);
      *lost += n;
      batch->AddLost(n);
      return true;
    }
    default:
      return false;
  }
}

namespace {

// Executable mappings that existed before sampling started (the kernel reports only new ones):
// read from /proc/PID/maps, as MMAP records of `pid`. A process that is gone or unreadable adds
// nothing.
void SynthesizeMmaps(pid_t pid, EventBatch* batch) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string range, perms, off, dev, inode, path;
    ls >> range >> perms >> off >> dev >> inode;
    std::getline(ls, path);
    path = Trim(path);
    if (perms.size() < 3 || perms[2] != 'x' || path.empty()) continue;
    auto dash = range.find('-');
    if (dash == std::string::npos) continue;
    RawMmap m;
    m.pid = m.tid = pid;
    m.start = std::strtoull(range.substr(0, dash).c_str(), nullptr, 16);
    m.len = std::strtoull(range.substr(dash + 1).c_str(), nullptr, 16) - m.start;
    m.pgoff = std::strtoull(off.c_str(), nullptr, 16);
    m.filename = path;
    batch->AddMmap(m);
  }
}

// The names of threads that existed before sampling started, as COMM records.
void SynthesizeComms(pid_t pid, const std::vector<pid_t>& tids, EventBatch* batch) {
  for (pid_t tid : tids) {
    RawComm c;
    c.pid = pid;
    c.tid = tid;
    c.comm = CommOf(tid);
    if (!c.comm.empty()) batch->AddComm(c);
  }
}

// Drains `set` into `writer` on its own thread until Stop(). `round` runs on that thread before
// each drain round (the attach recorder adds the threads created meanwhile there, so the event
// list is only touched by one thread). After a failed write (disk full) sampling stops: the rings
// are still drained, so the target never blocks on them, but nothing more is written.
class DrainThread {
 public:
  DrainThread(EventSet* set, RecordWriter* writer, std::function<void()> round)
      : set_(set), writer_(writer), round_(std::move(round)), t0_(NowNs()) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~DrainThread() { Stop(); }
  void Stop() {
    if (!thread_.joinable()) return;
    done_.store(true, std::memory_order_release);
    thread_.join();
  }
  // Samples, lost counts and the write error, once stopped.
  void Fill(RecordResult* r) const {
    r->samples = set_->samples;
    r->lost = set_->lost;
    if (!status_.ok()) {
      r->write_error = status_;
      r->samples = samples_kept_;
      r->kept_ns = kept_ns_;
    }
  }

 private:
  void Write() {
    if (batch_.size() > 0 && status_.ok()) {
      Status s = writer_->WriteEvents(batch_);
      if (s.ok()) {
        samples_kept_ = set_->samples;
      } else {
        status_ = s;
        kept_ns_ = NowNs() - t0_;
        set_->DisableAll();
      }
    }
    batch_.clear();
  }
  void Loop() {
    while (!done_.load(std::memory_order_acquire)) {
      set_->Wait(100);
      if (round_) round_();
      set_->DrainAll(&batch_);
      Write();
    }
    set_->DrainAll(&batch_);
    Write();
  }

  EventSet* set_;
  RecordWriter* writer_;
  std::function<void()> round_;
  int64_t t0_;
  std::atomic<bool> done_{false};
  EventBatch batch_;
  Status status_;
  uint64_t samples_kept_ = 0;
  int64_t kept_ns_ = 0;
  std::thread thread_;
};

}  // namespace

StatusOr<RecordResult> RecordCommand(const std::vector<std::string>& argv, const RecordOptions& opt,
                                     RecordWriter* writer, TargetSignals* signals) {
  OPSCOPE_RETURN_IF_ERROR(CheckOptions(opt.sampler));
  std::optional<TargetSignals> local_signals;
  if (signals == nullptr) signals = &local_signals.emplace();
  if (argv.empty()) return InvalidArgument("no command given: use `opscope record -- CMD [ARGS]`");
  // A refusal that no rung of the ladder can get around is said before the command starts.
  OPSCOPE_RETURN_IF_ERROR(
      CheckPerfAccess(AccessOf(opt.sampler.opener ? *opt.sampler.opener : SystemOpener()), {}));
  RecordResult result;
  result.meta = BaseMeta(opt.sampler);
  result.meta.command = ShellJoin(argv);

  // The target waits on the launcher's ready pipe until the events are attached.
  LaunchOptions launch;
  launch.argv = argv;
  auto started = LaunchedTarget::Start(launch, signals);
  if (!started.ok() && started.status().code() == StatusCode::kInternal) return started.status();
  if (!started.ok()) {
    result.exec_error = started.status();
    return result;
  }
  LaunchedTarget& target = *started;
  const pid_t child = target.pid();
  auto abort_child = [&](Status st) -> StatusOr<RecordResult> {
    target.Abandon();
    return st;
  };

  EventSet set;
  SampleTarget what;
  what.tasks = {child};
  what.cpus = OnlineCpus();
  what.inherit = true;
  what.enable_on_exec = true;
  auto fds = OpenSampleEvents(opt.sampler, what, &set.attr, &result.meta);
  if (!fds.ok()) return abort_child(fds.status());
  for (size_t i = 0; i < fds->size(); ++i) {
    Status st = set.Add((*fds)[i], child, opt.sampler.ring_pages);
    if (!st.ok()) {
      for (size_t j = i + 1; j < fds->size(); ++j) close((*fds)[j]);
      return abort_child(st);
    }
  }
  result.meta.pid = child;
  if (Status st = writer->WriteMeta(result.meta); !st.ok()) return abort_child(st);

  DrainThread drain(&set, writer, nullptr);
  Status exec = target.Go();
  const TargetExit end = target.Wait();
  result.wall_ns = end.wall_ns;
  drain.Stop();
  set.CloseAll();
  if (!exec.ok()) {
    result.exec_error = exec;
    return result;
  }
  result.exit = end.Describe();
  result.exit_code = end.exit_code;
  result.term_signal = end.term_signal;
  drain.Fill(&result);
  return result;
}

StatusOr<RecordResult> RecordAttached(const AttachSpec& spec, const ResolvedAttach& what,
                                      const RecordOptions& opt, RecordWriter* writer,
                                      const TargetSignals& signals) {
  OPSCOPE_RETURN_IF_ERROR(CheckOptions(opt.sampler));
  RecordResult result;
  result.meta = BaseMeta(opt.sampler);
  result.meta.command = "attached to " + what.description;
  result.meta.pid = what.tasks.empty() ? -1 : what.tasks.front().pid;

  EventSet set;
  SampleTarget target;
  std::set<pid_t> watched;
  if (spec.system_wide()) {
    target.tasks = {-1};
    target.cpus = what.cpus;
  } else {
    for (const auto& t : what.tasks) target.tasks.push_back(t.tid);
  }
  OPSCOPE_ASSIGN_OR_RETURN(std::vector<int> fds,
                           OpenSampleEvents(opt.sampler, target, &set.attr, &result.meta));
  for (size_t i = 0; i < fds.size(); ++i) {
    Status st = set.Add(fds[i], -1, opt.sampler.ring_pages);
    if (!st.ok()) {
      for (size_t j = i + 1; j < fds.size(); ++j) close(fds[j]);
      return st;
    }
  }
  for (pid_t t : target.tasks) watched.insert(t);
  OPSCOPE_RETURN_IF_ERROR(writer->WriteMeta(result.meta));

  // What the processes had mapped and were called before we came: the kernel only reports
  // changes from now on.
  EventBatch initial;
  std::set<pid_t> pids;
  if (spec.system_wide()) {
    if (DIR* d = opendir("/proc")) {
      while (dirent* e = readdir(d)) {
        int64_t pid = 0;
        if (ParseInt64(e->d_name, &pid) && pid > 0) pids.insert(static_cast<pid_t>(pid));
      }
      closedir(d);
    }
  } else {
    for (const auto& t : what.tasks) pids.insert(t.pid);
  }
  for (pid_t pid : pids) {
    SynthesizeMmaps(pid, &initial);
    std::vector<pid_t> tids;
    if (spec.system_wide()) {
      tids = ThreadsOf(pid);
    } else {
      for (const auto& t : what.tasks)
        if (t.pid == pid) tids.push_back(t.tid);
    }
    SynthesizeComms(pid, tids, &initial);
  }
  OPSCOPE_RETURN_IF_ERROR(writer->WriteEvents(initial));

  // Threads the -p processes create from now on get their own event (inherit events cannot be
  // mmapped per thread), found by rescanning /proc/PID/task each drain round.
  PerfEventOpener& opener = opt.sampler.opener ? *opt.sampler.opener : SystemOpener();
  auto rescan = [&] {
    for (pid_t pid : spec.pids)
      for (pid_t tid : ThreadsOf(pid)) {
        if (!watched.insert(tid).second) continue;
        const int fd = opener.Open(set.attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) continue;  // it ended meanwhile
        if (set.Add(fd, tid, opt.sampler.ring_pages).ok())
          ioctl(set.events.back()->fd, PERF_EVENT_IOC_ENABLE, 0);
      }
  };
  set.EnableAll();
  const int64_t t0 = NowNs();
  DrainThread drain(&set, writer, rescan);
  const StopReason stop = WaitForStop(spec, what, signals, nullptr);
  set.DisableAll();
  drain.Stop();
  result.wall_ns = NowNs() - t0;
  set.CloseAll();
  result.exit = "attached " + DescribeStop(stop, spec, signals.received());
  drain.Fill(&result);
  return result;
}

// ---- In-process sampler -------------------------------------------------------------------

struct Sampler::State {
  SamplerOptions opt;
  RecordMeta meta;
  EventSet set;
  std::mutex mu;
  std::string bytes;  // record-file bytes assembled in memory
  std::set<pid_t> watched;
  pid_t drain_tid = 0;
  std::atomic<bool> done{false};
  std::thread drainer;
  Status status;

  void AddNewThreads() {
    DIR* d = opendir("/proc/self/task");
    if (!d) return;
    while (dirent* e = readdir(d)) {
      int64_t tid = 0;
      if (!ParseInt64(e->d_name, &tid) || tid == drain_tid || watched.count(static_cast<pid_t>(tid))) continue;
      watched.insert(static_cast<pid_t>(tid));
      PerfEventOpener& opener = opt.opener ? *opt.opener : SystemOpener();
      const int fd = opener.Open(set.attr, static_cast<pid_t>(tid), -1, -1, PERF_FLAG_FD_CLOEXEC);
      if (fd < 0) continue;
      if (set.Add(fd, static_cast<pid_t>(tid), opt.ring_pages).ok())
        ioctl(set.events.back()->fd, PERF_EVENT_IOC_ENABLE, 0);
      // A thread that exited between readdir and open is not an error.
    }
    closedir(d);
  }
};

Sampler::~Sampler() {
  if (state_ && state_->drainer.joinable()) {
    state_->done = true;
    state_->drainer.join();
  }
}

const std::vector<std::string>& Sampler::degradations() const { return state_->meta.degradations; }

StatusOr<std::unique_ptr<Sampler>> Sampler::Start(const SamplerOptions& opt) {
  OPSCOPE_RETURN_IF_ERROR(CheckOptions(opt));
  auto s = std::unique_ptr<Sampler>(new Sampler);
  s->state_ = std::make_unique<State>();
  State& st = *s->state_;
  st.opt = opt;
  st.meta = BaseMeta(opt);
  st.meta.pid = getpid();
  st.meta.command = "(this process)";
  {
    // Decides the event (the ladder) on the calling thread; the drain thread then opens one per
    // thread with the same attr.
    SampleTarget self;
    self.tasks = {0};
    auto fds = OpenSampleEvents(opt, self, &st.set.attr, &st.meta);
    if (!fds.ok()) return fds.status();
    for (int fd : *fds) close(fd);
  }
  st.set.attr.disabled = 1;
  st.bytes.assign(kRecordMagic, sizeof kRecordMagic);
  st.bytes += MakeChunk(ChunkType::kMeta, MetaChunkPayload(st.meta));
  EventBatch initial;
  SynthesizeMmaps(getpid(), &initial);
  st.bytes += MakeChunk(ChunkType::kEvents, initial.bytes());
  std::atomic<bool> started{false};
  st.drainer = std::thread([&st, &started] {
    st.drain_tid = static_cast<pid_t>(syscall(SYS_gettid));
    st.AddNewThreads();
    started = true;
    EventBatch batch;
    while (!st.done.load(std::memory_order_acquire)) {
      st.set.Wait(50);
      st.AddNewThreads();
      st.set.DrainAll(&batch);
      if (!batch.empty()) {
        st.bytes += MakeChunk(ChunkType::kEvents, batch.bytes());
        batch.clear();
      }
    }
    st.set.DisableAll();
    st.set.DrainAll(&batch);
    SynthesizeMmaps(getpid(), &batch);  // JIT code and libraries loaded while sampling
    st.bytes += MakeChunk(ChunkType::kEvents, batch.bytes());
    st.set.CloseAll();
  });
  while (!started) std::this_thread::yield();
  if (st.set.events.empty()) {
    st.done = true;
    st.drainer.join();
    return PermissionDenied("could not open a sampling event on any thread of this process");
  }
  return s;
}

StatusOr<profile::SampleSection> Sampler::Stop() {
  State& st = *state_;
  if (!st.drainer.joinable()) return Internal("Sampler::Stop called twice");
  st.done = true;
  st.drainer.join();
  OPSCOPE_ASSIGN_OR_RETURN(RecordReader reader, RecordReader::FromBytes(std::move(st.bytes), "in-process samples"));
  OPSCOPE_ASSIGN_OR_RETURN(profile::SampleSection section, Symbolize(reader));
  section.lost = st.set.lost;
  for (const auto& d : st.meta.degradations) section.warnings.push_back(d);
  return section;
}

}  // namespace opscope::collect
