#include "collect/sampler.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

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
#include "base/strings.h"
#include "collect/attach.h"
#include "collect/perf_access.h"
#include "collect/ring_buffer.h"
#include "collect/sampler_internal.h"
#include "collect/symbolize.h"

// `opscope record -- CMD` and `record -p/-t/-a/-C` (sampler.h); the events are opened by
// sampler_events.cc, their records decoded by sampler_decode.cc, and the in-process sampler is
// sampler_inprocess.cc.
namespace opscope::collect {

namespace sampler_internal {

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

}  // namespace sampler_internal

namespace {

using sampler_internal::BaseMeta;
using sampler_internal::CheckOptions;
using sampler_internal::EventSet;
using sampler_internal::SynthesizeMmaps;

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

}  // namespace opscope::collect
