// The in-process sampler behind `opscope profile --sample` (sampler.h): one event per thread of
// this process, rescanned every drain round, records assembled in memory.
#include <dirent.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>
#include <set>
#include <thread>

#include "base/strings.h"
#include "collect/attach.h"
#include "collect/sampler_internal.h"
#include "collect/symbolize.h"

namespace opscope::collect {

using sampler_internal::BaseMeta;
using sampler_internal::CheckOptions;
using sampler_internal::EventSet;
using sampler_internal::SynthesizeMmaps;

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
      if (!ParseInt64(e->d_name, &tid) || tid == drain_tid ||
          watched.count(static_cast<pid_t>(tid)))
        continue;
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
  OPSCOPE_ASSIGN_OR_RETURN(RecordReader reader,
                           RecordReader::FromBytes(std::move(st.bytes), "in-process samples"));
  OPSCOPE_ASSIGN_OR_RETURN(profile::SampleSection section, Symbolize(reader));
  section.lost = st.set.lost;
  for (const auto& d : st.meta.degradations) section.warnings.push_back(d);
  return section;
}

}  // namespace opscope::collect
