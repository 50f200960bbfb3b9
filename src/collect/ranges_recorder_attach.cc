#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "collect/attach_dir.h"
#include "collect/attach_request.h"
#include "collect/ranges_recorder_internal.h"
#include "collect/trusted_file.h"

namespace opscope::collect::rec::internal {

void WriteLine(FILE* f, const char* tag, size_t id, const std::string& text) {
  std::string clean = text;
  for (char& c : clean)
    if (c == '\n' || c == '\r') c = ' ';
  std::fprintf(f, "%s %zu %s\n", tag, id, clean.c_str());
}

// The whole file through stdio (the caller holds g->mu). `at_exit` (and always outside attach
// mode): ranges still open are written as ending now (U). Otherwise (detaching from a running
// program) ranges still open are left out, and each thread's partial ranges are told as `cut`
// lines (ranges_reader.h ThreadCut), which opscope applies over every recorder's ranges: B, when
// a range opened before the attach ended (ThreadBuf::horizon); A, the start of the oldest range
// still open. At exit no cuts are written: the ranges ending then are often the lifetime ranges
// (a whole main(), a thread's whole loop), and dropping everything inside them would leave
// nothing. Returns how many ranges were open.
size_t WriteAllLocked(FILE* f, int64_t now, bool at_exit = true) {
  const bool with_open = at_exit;
  size_t open = g->started.size();
  std::fprintf(f, "opscope-ranges 1\npid %d\nsource %s\n", getpid(), g->source.c_str());
  for (size_t i = 0; i < g->names.size(); ++i) WriteLine(f, "name", i, g->names[i]);
  for (size_t i = 0; i < g->domains.size(); ++i) WriteLine(f, "domain", i, g->domains[i]);
  for (ThreadBuf* b : g->bufs) {
    std::lock_guard<std::mutex> bl(b->mu);
    b->done.ForEach([&](const Record& r) {
      std::fprintf(f, "range %c %d %lld %lld %u %u %u %lld\n", r.kind, b->tid,
                   static_cast<long long>(r.start), static_cast<long long>(r.end), r.name,
                   static_cast<unsigned>(r.domain), static_cast<unsigned>(r.depth),
                   static_cast<long long>(r.cpu_ns));
    });
    int64_t oldest_open = INT64_MAX;
    for (const auto& st : b->stacks)
      if (!st.empty()) oldest_open = std::min(oldest_open, st.front().start);
    if (!at_exit && b->horizon > 0)
      std::fprintf(f, "cut B %d %lld\n", b->tid, static_cast<long long>(b->horizon));
    if (!at_exit && oldest_open != INT64_MAX)
      std::fprintf(f, "cut A %d %lld\n", b->tid, static_cast<long long>(oldest_open));
    for (size_t domain = 0; domain < b->stacks.size(); ++domain)
      for (size_t d = 0, n = b->stacks[domain].size(); d < n; ++d) {
        ++open;
        if (!with_open) continue;
        const auto& st = b->stacks[domain];
        std::fprintf(f, "range U %d %lld %lld %u %zu %zu -1\n", b->tid,
                     static_cast<long long>(st[d].start), static_cast<long long>(now), st[d].name,
                     domain, d);
      }
  }
  for (const Ended& e : g->ended)
    std::fprintf(f, "range S %d %lld %lld %u %u 0 -1\n", e.s.tid, static_cast<long long>(e.s.start),
                 static_cast<long long>(e.end), e.s.name, e.s.domain);
  if (with_open)
    for (const auto& [id, s] : g->started)
      std::fprintf(f, "range U %d %lld %lld %u %u 0 -1\n", s.tid, static_cast<long long>(s.start),
                   static_cast<long long>(now), s.name, s.domain);
  return open;
}

// ---- Attach mode (OPSCOPE_ATTACHABLE=1; protocol in ranges_recorder.h) -----------------------

std::mutex g_attach_mu;  // serializes the listener thread and the exit-time detach
bool g_exiting = false;

// Channels of this uid whose process is gone (killed by SIGKILL, or ended through a signal
// handler of its own that called _exit) are removed by the next attachable program that makes its
// channel in the same folder. Gone: kill(pid, 0) says ESRCH, and nobody holds the folder's lock
// (each recorder holds a flock on its channel while it runs: a process with that pid in another
// pid namespace sharing the folder, or a forked child still holding the descriptor, keeps it).
// Only folders named like a channel, this uid's and private, and only the files the protocol puts
// there are removed; a folder holding anything else stays.
void ReclaimStaleChannels(int base_fd) {
  const int list_fd = fcntl(base_fd, F_DUPFD_CLOEXEC, 0);
  DIR* d = list_fd >= 0 ? fdopendir(list_fd) : nullptr;
  if (d == nullptr) {
    if (list_fd >= 0) ::close(list_fd);
    return;
  }
  static constexpr char kPrefix[] = "opscope-attach-";
  std::vector<std::string> stale;
  while (dirent* e = readdir(d)) {
    const char* n = e->d_name;
    if (std::strncmp(n, kPrefix, sizeof kPrefix - 1) != 0) continue;
    const char* digits = n + sizeof kPrefix - 1;
    const char* q = digits;
    long pid = 0;
    while (*q >= '0' && *q <= '9' && pid < (1L << 31)) pid = pid * 10 + (*q++ - '0');
    if (q == digits || *q != '-' || q[1] == '\0' || pid <= 0 || pid == getpid()) continue;
    bool source_word = true;  // "annotate", "nvtx"
    for (const char* c = q + 1; *c; ++c) source_word = source_word && *c >= 'a' && *c <= 'z';
    if (!source_word) continue;
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    stale.push_back(n);
  }
  closedir(d);
  for (const std::string& name : stale) {
    FileTrust trust = FileTrust::kTrusted;
    std::string why;
    const int fd = OpenTrustedFolder(base_fd, name.c_str(), geteuid(), "this program's uid", true,
                                     &trust, &why);
    if (fd < 0) continue;  // another user's, or not a channel
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
      ::close(fd);
      continue;
    }
    unlinkat(fd, "request", 0);
    unlinkat(fd, "stop", 0);
    // opscope's temporary files (range_attach.cc PlaceFile), left by an opscope killed meanwhile.
    const int inner_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (DIR* in = inner_fd >= 0 ? fdopendir(inner_fd) : nullptr) {
      std::vector<std::string> temps;
      while (dirent* e = readdir(in)) {
        const std::string f = e->d_name;
        if ((f.rfind(".request.", 0) == 0 || f.rfind(".stop.", 0) == 0) && f.size() > 4 &&
            f.compare(f.size() - 4, 4, ".tmp") == 0)
          temps.push_back(f);
      }
      closedir(in);
      for (const std::string& f : temps) unlinkat(fd, f.c_str(), 0);
    } else if (inner_fd >= 0) {
      ::close(inner_fd);
    }
    ::close(fd);
    unlinkat(base_fd, name.c_str(), AT_REMOVEDIR);  // fails, leaving it, if anything else is in it
  }
}

// Creates (or takes back, after an earlier process with this pid) the channel folder, after
// reclaiming the stale channels next to it.
bool OpenChannel() {
  const char* chosen = std::getenv(kAttachDirEnv);
  const std::string base = AttachBaseDir(chosen, std::getenv("XDG_RUNTIME_DIR"), geteuid());
  if (chosen != nullptr && chosen[0] != '\0') {
    struct stat bst {};
    if (base[0] != '/' || stat(base.c_str(), &bst) != 0 || !S_ISDIR(bst.st_mode)) {
      Say(std::string(kAttachDirEnv) + "=" + base +
          " is not an existing folder given by its absolute path: not attachable");
      return false;
    }
  }
  const std::string name = AttachChannelName(getpid(), g->source);
  g->channel = base + "/" + name;
  const int base_fd = ::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (base_fd < 0) {
    Say("cannot open " + base + " (" + std::strerror(errno) + "): not attachable");
    return false;
  }
  ReclaimStaleChannels(base_fd);
  if (mkdirat(base_fd, name.c_str(), 0700) != 0 && errno != EEXIST) {
    Say("cannot create " + g->channel + " (" + std::strerror(errno) + "): not attachable");
    ::close(base_fd);
    return false;
  }
  FileTrust trust = FileTrust::kTrusted;
  std::string why;
  const int fd =
      OpenTrustedFolder(base_fd, name.c_str(), geteuid(), "this program's uid", true, &trust, &why);
  ::close(base_fd);
  if (fd < 0) {
    Say(g->channel + " is " + why + ": not attachable (remove it and start the program again)");
    return false;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    Say(g->channel +
        " is held by another running process (one with this pid in another pid namespace?): not "
        "attachable");
    ::close(fd);
    return false;
  }
  unlinkat(fd, "request", 0);  // stale: from an earlier process with this pid
  unlinkat(fd, "stop", 0);
  g->channel_fd = fd;
  return true;
}

bool ChannelHas(const char* name) {
  struct stat st {};
  return fstatat(g->channel_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

// Reads `name` from the channel if it is to be obeyed (collect/trusted_file.h: a regular file of
// this uid, one link, not writable by others, at most 4 KiB); otherwise *why says why not (""
// when it is not there at all).
bool ReadChannelFile(const char* name, std::string* text, std::string* why) {
  return ReadTrustedFile(g->channel_fd, name, geteuid(), "this program's uid", kMaxMarkerBytes,
                         text, why) == FileTrust::kTrusted;
}

void ClearBuffersLocked() {
  for (ThreadBuf* b : g->bufs) {
    std::lock_guard<std::mutex> bl(b->mu);
    b->done.Clear();
    b->stacks.clear();
    b->horizon = 0;
  }
  g->started.clear();
  g->ended.clear();
}

// The listener saw a request: check it, its output folder, and switch to recording.
void TryAttach() {
  std::string text, why;
  if (!ReadChannelFile("request", &text, &why)) {
    if (!why.empty()) {
      Say("ignored an attach request: " + g->channel + "/request is " + why);
      unlinkat(g->channel_fd, "request", 0);
    }
    return;
  }
  const AttachRequest request = ParseAttachRequest(text);
  if (!request.Valid()) {
    Say("ignored a malformed attach request in " + g->channel);
    unlinkat(g->channel_fd, "request", 0);
    return;
  }
  const std::string& out = request.out;
  const long opscope_pid = request.opscope_pid;
  const bool cpu = request.cpu;
  int ofd = ::open(out.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st {};
  if (ofd < 0 || fstat(ofd, &st) != 0 ||
      CheckTrusted(st, geteuid(), "this program's uid", true, false, &why) != FileTrust::kTrusted) {
    Say("ignored an attach request: its output folder " + out + " is " +
        (ofd < 0 ? std::string("not openable (") + std::strerror(errno) + ")" : why));
    if (ofd >= 0) ::close(ofd);
    unlinkat(g->channel_fd, "request", 0);
    return;
  }
  int64_t since = 0;
  {
    std::lock_guard<std::mutex> lock(g->mu);
    ClearBuffersLocked();
    since = Now(CLOCK_MONOTONIC);
    g->out_fd = ofd;
    g->opscope_pid = static_cast<pid_t>(opscope_pid);
    g->out_file = "ranges." + g->source + "." + std::to_string(getpid());
    g->done_file = "done." + g->source;
    g_cpu_time = cpu;
    g_session.fetch_add(1, std::memory_order_relaxed);
    g->attached = true;
  }
  g_active.store(true, std::memory_order_release);
  // When recording began (CLOCK_MONOTONIC ns): opscope keeps what all recorders saw.
  const std::string ack = "attached " + std::to_string(since) + "\n";
  WriteMarker(("attached." + g->source).c_str(), ack.c_str());
}

// Ends the attach session: writes what was recorded (when `done` is given: "stop", "exit") and
// the `done.<source>` marker ("stop N T": N ranges still open were left out, their end unknown;
// "exit T": they end at exit; T the CLOCK_MONOTONIC ns of the end), clears the buffers and goes
// dormant again.
void Detach(const char* done) {
  g_active.store(false, std::memory_order_release);
  const int64_t now = Now(CLOCK_MONOTONIC);
  std::lock_guard<std::mutex> lock(g->mu);
  if (!g->attached) return;
  if (done != nullptr) {
    const bool at_exit = std::strcmp(done, "exit") == 0;
    size_t open = 0;
    int fd = OpenInOutFolder(g->out_file.c_str());
    FILE* f = fd >= 0 ? fdopen(fd, "w") : nullptr;
    if (f != nullptr) {
      open = WriteAllLocked(f, now, at_exit);
      std::fclose(f);
    } else {
      Say("cannot write the ranges into the attach folder: " + std::string(std::strerror(errno)));
      if (fd >= 0) ::close(fd);
    }
    const std::string text =
        at_exit ? "exit " + std::to_string(now) + "\n"
                : "stop " + std::to_string(open) + " " + std::to_string(now) + "\n";
    WriteMarker(g->done_file.c_str(), text.c_str());
  }
  ClearBuffersLocked();
  ::close(g->out_fd);
  g->out_fd = -1;
  g->attached = false;
  unlinkat(g->channel_fd, "stop", 0);
  unlinkat(g->channel_fd, "request", 0);
}

// The listener: blocks on inotify while dormant (no cost), checks every 250 ms while attached
// (a stop request, or opscope gone without one: then the records are dropped).
void* Listen(void*) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, nullptr);  // the program's signals go to its own threads
  prctl(PR_SET_NAME, "opscope-listen", 0, 0, 0);
  int ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (ino >= 0 && inotify_add_watch(ino, g->channel.c_str(),
                                    IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ATTRIB) < 0) {
    ::close(ino);
    ino = -1;
  }
  for (;;) {
    bool attached;
    {
      std::lock_guard<std::mutex> lock(g_attach_mu);
      if (g_exiting) break;
      if (!g->attached)
        TryAttach();
      else if (ChannelHas("stop"))
        Detach("stop");
      else if (!ChannelHas("request") || (kill(g->opscope_pid, 0) != 0 && errno == ESRCH))
        Detach(nullptr);  // opscope went away without a stop: nobody will read the records
      attached = g->attached;
    }
    if (ino >= 0) {
      pollfd p{ino, POLLIN, 0};
      if (poll(&p, 1, attached ? 250 : -1) > 0) {
        char buf[4096];
        while (::read(ino, buf, sizeof buf) > 0) {
        }
      }
    } else {
      usleep(200000);
    }
  }
  if (ino >= 0) ::close(ino);
  return nullptr;
}

void StartListener() {
  if (!OpenChannel()) return;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  if (pthread_create(&t, &attr, Listen, nullptr) != 0) Say("cannot start the attach listener");
  pthread_attr_destroy(&attr);
}

// At exit: a session still attached writes its records ("exit"), and the channel is removed.
void AttachAtExit() {
  if (g->owner_pid != getpid()) return;  // a forked child: the channel is its parent's
  std::lock_guard<std::mutex> lock(g_attach_mu);
  g_exiting = true;
  if (g->attached) Detach("exit");
  if (g->channel_fd >= 0) {
    unlinkat(g->channel_fd, "request", 0);
    unlinkat(g->channel_fd, "stop", 0);
    ::close(g->channel_fd);
    g->channel_fd = -1;
    rmdir(g->channel.c_str());
  }
}

}  // namespace opscope::collect::rec::internal
