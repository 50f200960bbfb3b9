#include "base/launch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/clock.h"
#include "base/strings.h"

extern char** environ;

namespace opscope {
namespace {

ssize_t ReadFull(int fd, void* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, static_cast<char*>(buf) + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return got > 0 ? static_cast<ssize_t>(got) : r;
    got += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(got);
}

void WriteFull(int fd, const void* buf, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, buf, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    buf = static_cast<const char*>(buf) + w;
    n -= static_cast<size_t>(w);
  }
}

std::string Quoted(const std::string& s) {
  std::string q = ShellQuote(s);
  return q.front() == '\'' ? q : "'" + q + "'";
}

// The environment the target gets (built before fork: the child must not allocate).
std::vector<std::string> TargetEnvironment(const LaunchOptions& o) {
  std::vector<std::string> env;
  std::string user_preload;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    const std::string name = kv.substr(0, kv.find('='));
    if (name == "LD_PRELOAD") {
      user_preload = kv.substr(11);
      continue;
    }
    bool drop = false;
    for (const auto& u : o.unset_env) drop = drop || u == name;
    for (const auto& [k, v] : o.set_env) drop = drop || k == name;
    if (!drop) env.push_back(std::move(kv));
  }
  std::string preload = Join(o.preload, " ");
  if (!user_preload.empty()) preload += (preload.empty() ? "" : " ") + user_preload;
  if (!preload.empty()) env.push_back("LD_PRELOAD=" + preload);
  for (const auto& [k, v] : o.set_env) env.push_back(k + "=" + v);
  return env;
}

}  // namespace

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string TargetExit::Describe() const {
  if (term_signal != 0) {
    const char* what = strsignal(term_signal);
    return "killed by signal " + std::to_string(term_signal) + " (" + SignalName(term_signal) +
           (what ? std::string(", ") + what : std::string()) + ")";
  }
  return "exited with status " + std::to_string(exit_code);
}

Status ExecErrorStatus(int err, const std::string& path) {
  const std::string q = Quoted(path);
  switch (err) {
    case ENOENT:
      // The file is there but exec said ENOENT: what it names to run it is missing.
      if (access(path.c_str(), F_OK) == 0)
        return InvalidArgument(
            "cannot run " + q +
            ": its #! interpreter or ELF loader does not "
            "exist (check the first line, or the architecture it was built for)");
      return NotFound("command not found: " + q + " (no such file)");
    case EACCES:
    case EPERM:
      return PermissionDenied("cannot run " + q +
                              ": not executable (permission denied); check its "
                              "mode (`chmod +x`) and the mount's noexec flag");
    case EISDIR:
      return PermissionDenied("cannot run " + q + ": is a directory");
    case ENOEXEC:
      return InvalidArgument("cannot run " + q +
                             ": not an executable format (a script without a "
                             "#! line?)");
    default:
      return PermissionDenied("cannot run " + q + ": " + std::strerror(err));
  }
}

StatusOr<std::string> ResolveCommand(const std::string& argv0) {
  if (argv0.empty()) return NotFound("command not found: '' (an empty program name)");
  auto check = [](const std::string& path) -> int {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return errno;
    if (S_ISDIR(st.st_mode)) return EISDIR;
    if (access(path.c_str(), X_OK) != 0) return errno;
    return 0;
  };
  if (argv0.find('/') != std::string::npos) {
    if (int err = check(argv0); err != 0) return ExecErrorStatus(err, argv0);
    return argv0;
  }
  const char* env_path = std::getenv("PATH");
  const std::string path = env_path ? env_path : "/usr/local/bin:/usr/bin:/bin";
  std::string refused;  // a match that exists but cannot be executed (execvp reports EACCES)
  int refused_err = 0;
  for (const std::string& dir : Split(path, ':', true)) {
    const std::string full = dir + "/" + argv0;
    const int err = check(full);
    if (err == 0) return full;
    if (err != ENOENT && err != ENOTDIR && refused.empty()) refused = full, refused_err = err;
  }
  if (!refused.empty()) return ExecErrorStatus(refused_err, refused);
  return NotFound("command not found: " + Quoted(argv0) + " (not in PATH: " + path + ")");
}

int ExitCodeForStartError(const Status& st) {
  return st.code() == StatusCode::kNotFound ? 127 : 126;
}

int TargetExitCode(int target_exit_code, int received) {
  return received != 0 ? TargetSignals::ExitCodeFor(received) : target_exit_code;
}

StatusOr<LaunchedTarget> LaunchedTarget::Start(const LaunchOptions& o, TargetSignals* signals) {
  if (o.argv.empty()) return InvalidArgument("no command given");
  OPSCOPE_ASSIGN_OR_RETURN(std::string path, ResolveCommand(o.argv[0]));
  std::vector<std::string> env = TargetEnvironment(o);
  std::vector<char*> cargv, cenv, sh_argv;
  for (const std::string& a : o.argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  // As execvp does: an executable file without #! that the kernel refuses (ENOEXEC) is a script
  // for /bin/sh.
  static char kSh[] = "sh";
  sh_argv.push_back(kSh);
  sh_argv.push_back(path.data());
  for (size_t i = 1; i < o.argv.size(); ++i) sh_argv.push_back(cargv[i]);
  sh_argv.push_back(nullptr);
  for (std::string& kv : env) cenv.push_back(kv.data());
  cenv.push_back(nullptr);

  int go[2], err[2];
  if (pipe2(go, O_CLOEXEC) != 0) return Internal(std::string("pipe: ") + std::strerror(errno));
  if (pipe2(err, O_CLOEXEC) != 0) {
    const int e = errno;
    close(go[0]), close(go[1]);
    return Internal(std::string("pipe: ") + std::strerror(e));
  }
  const pid_t child = fork();
  if (child < 0) {
    const int e = errno;
    close(go[0]), close(go[1]), close(err[0]), close(err[1]);
    return Internal(std::string("fork: ") + std::strerror(e));
  }
  if (child == 0) {
    // Only async-signal-safe calls from here on.
    signals->PrepareChild();
    signal(SIGXFSZ,
           SIG_DFL);  // opscope's record writer ignores it; the target must not inherit that
    signal(SIGPIPE, SIG_DFL);
    close(go[1]);
    close(err[0]);
    if (o.stdout_to_stderr) dup2(STDERR_FILENO, STDOUT_FILENO);
    char byte;
    ssize_t r;
    do r = ::read(go[0], &byte, 1);
    while (r < 0 && errno == EINTR);
    if (r != 1) _exit(127);  // the parent gave up before Go()
    execve(path.c_str(), cargv.data(), cenv.data());
    int e = errno;
    if (e == ENOEXEC) {
      execve("/bin/sh", sh_argv.data(), cenv.data());
      e = ENOEXEC;  // report the program's refusal, not the shell's
    }
    WriteFull(err[1], &e, sizeof e);
    _exit(e == ENOENT ? 127 : 126);
  }
  close(go[0]);
  close(err[1]);
  signals->Attach(child);
  LaunchedTarget t;
  t.pid_ = child;
  t.go_fd_ = go[1];
  t.err_fd_ = err[0];
  t.path_ = std::move(path);
  t.signals_ = signals;
  return t;
}

LaunchedTarget::LaunchedTarget(LaunchedTarget&& o) noexcept
    : pid_(o.pid_),
      go_fd_(o.go_fd_),
      err_fd_(o.err_fd_),
      t0_(o.t0_),
      reaped_(o.reaped_),
      path_(std::move(o.path_)),
      signals_(o.signals_) {
  o.pid_ = -1;
  o.go_fd_ = o.err_fd_ = -1;
  o.reaped_ = true;
}

LaunchedTarget::~LaunchedTarget() {
  if (pid_ > 0 && !reaped_) Abandon();
  if (go_fd_ >= 0) close(go_fd_);
  if (err_fd_ >= 0) close(err_fd_);
}

Status LaunchedTarget::Go() {
  t0_ = NowNs();
  WriteFull(go_fd_, "g", 1);
  close(go_fd_);
  go_fd_ = -1;
  int exec_errno = 0;
  const ssize_t n = ReadFull(err_fd_, &exec_errno, sizeof exec_errno);
  close(err_fd_);
  err_fd_ = -1;
  if (n == static_cast<ssize_t>(sizeof exec_errno)) return ExecErrorStatus(exec_errno, path_);
  return Status::Ok();
}

TargetExit LaunchedTarget::Wait() {
  TargetExit e;
  int status = 0;
  const pid_t r = TargetSignals::Wait(pid_, &status);
  e.wall_ns = NowNs() - t0_;
  reaped_ = true;
  signals_->Detach();
  if (r < 0) {
    e.exit_code = 1;
  } else if (WIFEXITED(status)) {
    e.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    e.term_signal = WTERMSIG(status);
    e.exit_code = 128 + e.term_signal;
  }
  return e;
}

void LaunchedTarget::Abandon() {
  if (pid_ <= 0 || reaped_) return;
  if (go_fd_ >= 0) close(go_fd_), go_fd_ = -1;  // a child still waiting exits on EOF
  kill(pid_, SIGKILL);
  int status;
  TargetSignals::Wait(pid_, &status);
  reaped_ = true;
  signals_->Detach();
}

Status RunTarget(const LaunchOptions& options, TargetSignals* signals, TargetExit* exit) {
  OPSCOPE_ASSIGN_OR_RETURN(LaunchedTarget t, LaunchedTarget::Start(options, signals));
  Status st = t.Go();
  *exit = t.Wait();
  return st;
}

}  // namespace opscope
