#include "collect/range_attach.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <utility>

#include "base/clock.h"
#include "base/files.h"
#include "base/host.h"
#include "base/launch.h"
#include "base/strings.h"
#include "collect/attach.h"
#include "collect/attach_dir.h"
#include "collect/perf_access.h"
#include "collect/range_folder.h"
#include "collect/range_run.h"
#include "collect/ranges_reader.h"
#include "collect/trusted_file.h"
#include "profile/attached.h"

namespace opscope::collect {
namespace {

constexpr const char* kSources[] = {"annotate", "nvtx"};
constexpr double kAnswerTimeoutS = 5;

// A descriptor closed with its owner.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// Effective capabilities CAP_CHOWN (0) and CAP_DAC_OVERRIDE (1): what handing another user's
// program a request and an output folder of its own takes.
bool CanActForOtherUsers() {
  if (geteuid() == 0) return true;
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (StartsWith(line, "CapEff:")) {
      const uint64_t caps = std::strtoull(line.c_str() + 7, nullptr, 16);
      return (caps & 3) == 3;
    }
  return false;
}

// Which of opscope's recorder libraries the process has mapped (/proc/PID/maps).
std::vector<std::string> LoadedRecorders(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  bool rt = false, nvtx = false;
  while (std::getline(in, line)) {
    rt = rt || line.find("/libopscope_ranges_rt.so") != std::string::npos;
    nvtx = nvtx || line.find("/libopscope_ranges_nvtx.so") != std::string::npos;
  }
  std::vector<std::string> out;
  if (rt) out.push_back("annotate");
  if (nvtx) out.push_back("nvtx");
  return out;
}

// Writes `text` into the folder `dirfd` (`dir` in messages) as `name`, atomically: a private
// temporary file (owned by `uid` when opscope acts for another user), then renamed into place
// (`exclusive`: RENAME_NOREPLACE, which fails when `name` exists; a hard link would leave the
// request with two links for a moment, which the recorder refuses). Only through the descriptor:
// the folder is the program's user's, who may have replaced its path since it was checked.
Status PlaceFile(int dirfd, const std::string& dir, const std::string& name,
                 const std::string& text, uid_t uid, gid_t gid, bool exclusive) {
  const std::string tmp = fmt::format(".{}.{}.tmp", name, getpid());
  unlinkat(dirfd, tmp.c_str(), 0);
  int fd = ::openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return PermissionDenied(fmt::format("cannot write {}/{}: {}", dir, tmp, std::strerror(errno)));
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (ok && uid != geteuid()) ok = fchown(fd, uid, gid) == 0;
  ::close(fd);
  const int placed =
      ok ? renameat2(dirfd, tmp.c_str(), dirfd, name.c_str(), exclusive ? RENAME_NOREPLACE : 0)
         : -1;
  const int err = errno;
  unlinkat(dirfd, tmp.c_str(), 0);
  const std::string path = dir + "/" + name;
  if (placed != 0 && exclusive && err == EEXIST)
    return Unavailable(fmt::format(
        "{} exists: another opscope is attached to this program; wait for it to finish", path));
  if (placed != 0)
    return PermissionDenied(fmt::format("cannot write {}: {}", path, std::strerror(err)));
  return Status::Ok();
}

// Polls every 20 ms until `done()` or `timeout_s`; false on timeout.
template <typename Fn>
bool PollFor(double timeout_s, Fn done) {
  const int64_t end = NowNs() + static_cast<int64_t>(timeout_s * 1e9);
  while (!done()) {
    if (NowNs() >= end) return false;
    usleep(20000);
  }
  return true;
}

struct Channel {
  std::string source;
  std::string base;  // the attach folder, as the program sees it
  std::string dir;   // the channel, as opscope reaches it (under /proc/PID/root when it must)
  Fd fd;             // opened once (O_NOFOLLOW) and checked: everything in it goes through this
  bool attached = false;
  bool Has(const char* name) const {
    struct stat st {};
    return fstatat(fd.get(), name, &st, AT_SYMLINK_NOFOLLOW) == 0;
  }
};

// Reads a marker the recorder wrote (`attached.<source>`, `done.<source>`) by the trust rule,
// waiting a moment while it has two links (on a file system without RENAME_NOREPLACE the
// recorder links it in, then removes its temporary name).
FileTrust ReadMarker(const RangeFolder& folder, const std::string& name, std::string* text,
                     std::string* why) {
  FileTrust trust = folder.Read(name, kMaxMarkerBytes, text, why);
  for (int i = 0; i < 50 && trust == FileTrust::kHardLinks; ++i) {
    usleep(20000);
    trust = folder.Read(name, kMaxMarkerBytes, text, why);
  }
  return trust;
}

// The target of a symbolic link, "" when unreadable.
std::string ReadLink(const std::string& path) {
  char buf[4096];
  const ssize_t n = readlink(path.c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// The bytes of a file, "" when unreadable.
std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The program's environment at its start (what the recorder's constructor saw).
std::map<std::string, std::string> EnvironOf(pid_t pid) {
  std::map<std::string, std::string> env;
  const std::string text = ReadFileOrEmpty(fmt::format("/proc/{}/environ", pid));
  for (const std::string& kv : Split(text, '\0', true))
    if (size_t eq = kv.find('='); eq != std::string::npos && eq > 0)
      env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  return env;
}

// "" when the program sees the file system as opscope does (the same mount namespace and root);
// else /proc/PID/root, through which its private /tmp (a container, systemd's PrivateTmp) is seen.
std::string RootOf(pid_t pid) {
  const std::string proc = fmt::format("/proc/{}", pid);
  struct stat mine {
  }, theirs{};
  const bool same_ns = ReadLink("/proc/self/ns/mnt") == ReadLink(proc + "/ns/mnt");
  const bool same_root = stat("/", &mine) == 0 && stat((proc + "/root").c_str(), &theirs) == 0 &&
                         mine.st_dev == theirs.st_dev && mine.st_ino == theirs.st_ino;
  return same_ns && same_root ? std::string() : proc + "/root";
}

}  // namespace

std::vector<std::string> AttachDirCandidates(const char* opscope_dir,
                                             const std::map<std::string, std::string>& env,
                                             uid_t uid, const std::string& root) {
  std::vector<std::string> dirs;
  auto add = [&](std::string d) {
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    if (!d.empty() && d[0] == '/' && std::find(dirs.begin(), dirs.end(), d) == dirs.end())
      dirs.push_back(std::move(d));
  };
  if (opscope_dir != nullptr) add(opscope_dir);
  auto get = [&](const char* k) {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  // What the program's recorder chose (attach_dir.h), then the other places it may have chosen
  // when its environment changed before the recorder read it.
  add(AttachBaseDir(get(kAttachDirEnv), get("XDG_RUNTIME_DIR"), uid, root));
  if (const char* x = get("XDG_RUNTIME_DIR"); x != nullptr && IsPrivateFolderOf(root, x, uid))
    add(x);
  add("/tmp");
  return dirs;
}

StatusOr<RangeAttachResult> AttachRanges(const RangeAttachOptions& o, const TargetSignals& signals,
                                         profile::Profile* p) {
  auto note = [&](const std::string& what, bool degradation) {
    if (degradation) p->meta.degradations.push_back(what);
    if (o.on_note) o.on_note(what);
  };
  const pid_t pid = o.pid;
  OPSCOPE_ASSIGN_OR_RETURN(uid_t uid, ProcessOwner(pid));
  if (!ProcessAlive(pid)) return NotFound(fmt::format("process {} has exited", pid));
  const std::string comm = CommOf(pid);
  RangeAttachResult result;
  result.description = fmt::format("pid {} ({})", pid, comm);
  if (uid != geteuid() && !CanActForOtherUsers())
    return PermissionDenied(fmt::format(
        "process {} belongs to uid {}, not to you (uid {}): attaching to its ranges needs root "
        "(opscope writes into the program's private channel folder and hands it files of its "
        "own: CAP_DAC_OVERRIDE and CAP_CHOWN)",
        pid, uid, geteuid()));

  // The channels: only folders of the program's uid, private to it, in the attach folder the
  // program chose (attach_dir.h), seen through its own mount namespace.
  const std::string lib_dir = RuntimeLibDir();
  const std::vector<std::string> loaded = LoadedRecorders(pid);
  const std::map<std::string, std::string> env = EnvironOf(pid);
  const std::string root = RootOf(pid);
  const std::vector<std::string> bases =
      AttachDirCandidates(std::getenv(kAttachDirEnv), env, uid, root);
  std::vector<Channel> channels;
  gid_t gid = getegid();
  for (const char* source : kSources) {
    bool mapped = false;
    for (const auto& l : loaded) mapped |= l == source;
    if (!mapped) continue;  // a channel would be left behind by an earlier process with this pid
    for (const std::string& base : bases) {
      const std::string name = AttachChannelName(pid, source);
      const std::string dir = root + base + "/" + name;
      const Fd base_fd(::open((root + base).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (base_fd.get() < 0) continue;
      FileTrust trust = FileTrust::kTrusted;
      std::string why;
      Fd fd(OpenTrustedFolder(base_fd.get(), name.c_str(), uid, "the program's uid", true, &trust,
                              &why));
      if (trust == FileTrust::kMissing) continue;
      if (fd.get() < 0)
        return PermissionDenied(fmt::format(
            "{} is not a private folder of uid {} (the program's): it is {}; not trusting it; "
            "remove it and start the program again",
            dir, uid, why));
      struct stat st {};
      if (fstat(fd.get(), &st) == 0) gid = st.st_gid;
      channels.push_back({source, base, dir, std::move(fd)});
      break;
    }
  }
  auto env_is = [&](const char* key, const std::string& value) {
    auto it = env.find(key);
    return it != env.end() && it->second == value;
  };
  auto env_has = [&](const char* key, const std::string& part) {
    auto it = env.find(key);
    return it != env.end() && it->second.find(part) != std::string::npos;
  };
  if (channels.empty()) {
    const std::string how = fmt::format(
        "start it with `OPSCOPE_ATTACHABLE=1 LD_PRELOAD={0}/libopscope_ranges_rt.so PROGRAM` "
        "(NVTX ranges: LD_PRELOAD={0}/libopscope_ranges_rt.so:{0}/libopscope_ranges_nvtx.so "
        "NVTX_INJECTION64_PATH={0}/libopscope_ranges_nvtx.so), or profile it with `opscope run "
        "-- PROGRAM`",
        lib_dir);
    if (loaded.empty() && env_is("OPSCOPE_ATTACHABLE", "1") &&
        env_has("NVTX_INJECTION64_PATH", "libopscope_ranges_nvtx.so"))
      return NotFound(fmt::format(
          "process {0} ({1}) has not loaded opscope's NVTX recorder yet: NVTX opens "
          "NVTX_INJECTION64_PATH at the program's first NVTX call; to make it attachable from its "
          "start, put the library in LD_PRELOAD too "
          "(LD_PRELOAD={2}/libopscope_ranges_nvtx.so, next to NVTX_INJECTION64_PATH)",
          pid, comm, lib_dir));
    if (loaded.empty())
      return NotFound(fmt::format(
          "process {} ({}) has no opscope range recorder loaded (libopscope_ranges_rt.so or "
          "libopscope_ranges_nvtx.so): {}",
          pid, comm, how));
    if (!env.empty() && !env_is("OPSCOPE_ATTACHABLE", "1"))
      return NotFound(
          fmt::format("process {} ({}) has opscope's range recorder but was not started attachable "
                      "(OPSCOPE_ATTACHABLE=1 unset): {}",
                      pid, comm, how));
    std::vector<std::string> where, names;
    for (const auto& b : bases) where.push_back(root + b);
    for (const auto& l : loaded) names.push_back(AttachChannelName(pid, l));
    return NotFound(fmt::format(
        "process {} ({}) has opscope's range recorder but no attach channel ({}) in {}: if the "
        "program keeps it elsewhere, set {} to that folder for opscope too; if the recorder "
        "could not make its channel, the program's stderr says why",
        pid, comm, Join(names, " or "), Join(where, ", "), kAttachDirEnv));
  }
  const bool nvtx_loaded =
      std::find(loaded.begin(), loaded.end(), std::string("nvtx")) != loaded.end();
  if (!nvtx_loaded && env_has("NVTX_INJECTION64_PATH", "libopscope_ranges_nvtx.so"))
    note(fmt::format("opscope's NVTX recorder is not loaded in process {} yet (NVTX loads "
                     "NVTX_INJECTION64_PATH at the program's first NVTX call): this span has no "
                     "NVTX ranges; preload libopscope_ranges_nvtx.so to have them from the start",
                     pid),
         true);
  for (const auto& c : channels)
    if (c.source == "nvtx" && !env_has("NVTX_INJECTION64_PATH", "libopscope_ranges_nvtx.so") &&
        !env.empty())
      note(fmt::format("NVTX_INJECTION64_PATH does not name libopscope_ranges_nvtx.so in process "
                       "{}: NVTX does not call the recorder, its NVTX ranges are not recorded",
                       pid),
           true);

  // The output folder: private, the program's, next to its channel (a folder it can see). Once
  // handed to the program's user, only its descriptor is used (collect/range_folder.h).
  const std::string out_base = channels[0].base;
  OPSCOPE_ASSIGN_OR_RETURN(std::unique_ptr<RangeFolder> out,
                           RangeFolder::Make(root + out_base, "opscope-attach-out-"));
  const std::string out_seen = out_base + "/" + out->name();  // as the program sees it
  auto fail = [&](Status st) -> Status {
    for (const auto& c : channels)
      if (c.attached) (void)PlaceFile(c.fd.get(), c.dir, "stop", "stop\n", uid, gid, false);
    out->Remove();
    return st;
  };
  if (uid != geteuid())
    if (Status st = out->HandTo(uid, gid); !st.ok()) return fail(st);
  int64_t window_start = 0, window_end = INT64_MAX;  // when every recorder was attached
  const std::string request = fmt::format("opscope-attach 1\nopscope-pid {}\nout {}\ncpu {}\n",
                                          getpid(), out_seen, o.cpu_time ? 1 : 0);
  for (auto& c : channels) {
    if (Status st = PlaceFile(c.fd.get(), c.dir, "request", request, uid, gid, true); !st.ok())
      return fail(st);
    const std::string ack = "attached." + c.source;
    const bool answered = PollFor(
        kAnswerTimeoutS, [&] { return out->Has(ack) || !c.Has("request") || !ProcessAlive(pid); });
    if (!out->Has(ack)) {
      if (!ProcessAlive(pid)) return fail(NotFound(fmt::format("process {} has exited", pid)));
      unlinkat(c.fd.get(), "request", 0);
      return fail(Unavailable(
          answered ? fmt::format("the {} recorder in process {} refused the attach request (its "
                                 "stderr says why)",
                                 c.source, pid)
                   : fmt::format("the {} recorder in process {} did not answer within {:g} s (is "
                                 "the program stopped?)",
                                 c.source, pid, kAnswerTimeoutS)));
    }
    c.attached = true;
    std::string text, why;
    if (ReadMarker(*out, ack, &text, &why) != FileTrust::kTrusted)
      return fail(PermissionDenied(
          fmt::format("{}/{} is {}: not reading it (the program's user may have put it there)",
                      out->path(), ack, why)));
    int64_t since = 0;
    const std::string answer = Trim(text), prefix = "attached ";
    if (StartsWith(answer, prefix) && ParseInt64(answer.substr(prefix.size()), &since))
      window_start = std::max(window_start, since);
  }
  const int64_t t0 = NowNs();
  AttachSpec spec;
  spec.pids = {pid};
  spec.duration_s = o.duration_s;
  ResolvedAttach what;
  what.tasks = {{pid, pid, comm}};
  note(fmt::format("attached to {}: recording ranges {}", result.description,
                   o.duration_s > 0 ? fmt::format("for {:g} s", o.duration_s)
                                    : std::string("until Ctrl-C or the program exits")),
       false);
  const StopReason reason = WaitForStop(spec, what, signals, nullptr);
  // Stop: each recorder writes its records and `done`; one that exited did so at exit.
  if (reason != StopReason::kTargetsExited)
    for (const auto& c : channels)
      if (Status st = PlaceFile(c.fd.get(), c.dir, "stop", "stop\n", uid, gid, false);
          !st.ok() && ProcessAlive(pid))
        note(st.message(), true);
  std::vector<std::string> missing;
  int64_t left_open = 0;
  std::vector<std::string> refused;
  for (const auto& c : channels) {
    const std::string done = "done." + c.source;
    PollFor(kAnswerTimeoutS, [&] { return out->Has(done) || !ProcessAlive(pid); });
    if (!out->Has(done)) {
      missing.push_back(c.source);
      continue;
    }
    std::string text, why;
    if (ReadMarker(*out, done, &text, &why) != FileTrust::kTrusted) {
      refused.push_back(done + " is " + why + ": not reading it");
      continue;
    }
    const std::vector<std::string> answer = Split(Trim(text), ' ', true);
    int64_t n = 0, t = 0;
    if (answer.empty() || answer[0] != "stop") result.program_exited = true;
    if (answer.size() == 3 && answer[0] == "stop" && ParseInt64(answer[1], &n)) left_open += n;
    if (answer.size() >= 2 && ParseInt64(answer.back(), &t)) window_end = std::min(window_end, t);
  }
  const double ms = static_cast<double>(NowNs() - t0) / 1e6;
  if (!ProcessAlive(pid)) result.program_exited = true;
  if (reason == StopReason::kSignal)
    note(fmt::format("opscope received {} and detached; the program keeps running",
                     SignalName(signals.received())),
         true);
  if (result.program_exited)
    note(fmt::format("the program exited while attached, after {:.1f} s; reporting the ranges "
                     "it recorded",
                     ms / 1000),
         true);
  if (left_open > 0)
    note(fmt::format("{} range(s) still open when opscope detached are left out (their end is "
                     "not known)",
                     left_open),
         true);
  for (const auto& s : missing)
    note(ProcessAlive(pid)
             ? fmt::format("the {} recorder did not answer the stop request within {:g} s: its "
                           "ranges are missing",
                           s, kAnswerTimeoutS)
             : fmt::format("the program ended without writing its {} ranges (killed by SIGKILL?)",
                           s),
         true);

  std::vector<profile::Range> ranges;
  std::vector<RangeFileInfo> infos;
  if (Status st = ReadRangeFiles(*out, "ranges", &ranges, &infos, &refused); !st.ok())
    return fail(st);
  for (const std::string& r : refused)
    note(fmt::format("{} (in {}; the program's user may have put it there)", r, out->path()), true);
  if (const std::string left = out->Remove(); !left.empty()) note(left, true);
  // Only what every recorder saw whole: a stage one of them recorded only partly takes the ranges
  // of the others inside it along.
  const size_t dropped = DropPartialRanges(window_start, window_end, infos, &ranges);
  if (dropped > 0 && channels.size() > 1)
    note(fmt::format("{} range(s) left out: part of a stage that began before or ended after the "
                     "span all recorders ({}) were attached",
                     dropped, channels.size()),
         false);
  int unclosed = 0;
  for (const auto& inf : infos) unclosed += inf.unclosed;
  if (unclosed > 0)
    note(fmt::format("{} range(s) were still open when the program ended and end then", unclosed),
         true);
  AssignNesting(&ranges);
  for (auto& r : ranges) {
    r.run = 0;
    p->ranges.push_back(std::move(r));
  }
  p->e2e.runs_ms.push_back(ms);
  p->meta.attached = result.description;
  ThermalSample ts = ReadThermalSample();
  p->clocks.push_back(profile::ClockSample{0, ts.cpu_mhz_avg, ts.max_temp_c});
  p->meta.runs = 1;
  if (p->ranges.empty())
    note(
        "no ranges recorded while attached: ranges that were already open when opscope "
        "attached are not recorded; attach for longer than one stage takes",
        true);
  profile::FinalizeStats(*p);
  EstimateRecorderOverhead(o.cpu_time, 1, p);
  return result;
}

}  // namespace opscope::collect
