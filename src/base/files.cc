#include "base/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <streambuf>
#include <string_view>

#include "base/strings.h"

namespace opscope {
namespace {

std::string Errno(int err) { return std::strerror(err); }

// An ostream buffer over a file descriptor that remembers the first write error (a full disk,
// /dev/full, a pipe whose reader left) instead of dropping it.
class FdBuffer : public std::streambuf {
 public:
  explicit FdBuffer(int fd) : fd_(fd) { setp(buf_, buf_ + sizeof buf_); }
  ~FdBuffer() override { Flush(); }
  // Writes what is buffered; false (and error() set) when a write failed now or before.
  bool Flush() {
    const char* p = pbase();
    while (error_ == 0 && p < pptr()) {
      const ssize_t n = ::write(fd_, p, static_cast<size_t>(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = n < 0 ? errno : EIO;
        break;
      }
      p += n;
    }
    setp(buf_, buf_ + sizeof buf_);
    return error_ == 0;
  }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!Flush()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return Flush() ? 0 : -1; }

 private:
  int fd_;
  int error_ = 0;
  char buf_[1 << 16];
};

// Streams `fill` into `fd`; the first write error, or 0.
int FillFd(int fd, const std::function<void(std::ostream&)>& fill) {
  FdBuffer buf(fd);
  std::ostream out(&buf);
  fill(out);
  buf.Flush();
  return buf.error();
}

// Something that is written in place rather than replaced: a device (/dev/null, /dev/full, a
// terminal), a FIFO or a socket, or a path into /proc (/dev/stdout links to /proc/self/fd/1, and
// /dev/fd/1 goes through /dev/fd -> /proc/self/fd): that names whatever standard output is, a
// regular file included, and replacing the link would be wrong. A new file in /dev/shm is an
// ordinary file.
bool WrittenInPlace(const std::string& path) {
  if (StartsWith(path, "/proc/")) return true;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) return true;
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    char target[PATH_MAX];
    const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
    if (n > 0 && std::string_view(target, static_cast<size_t>(n)).rfind("/proc/", 0) == 0)
      return true;
  }
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    char real[PATH_MAX];
    if (::realpath(path.substr(0, slash).c_str(), real) != nullptr &&
        std::string_view(real).rfind("/proc/", 0) == 0)
      return true;
  }
  return false;
}

Status WriteInPlace(const std::string& path, const std::function<void(std::ostream&)>& fill) {
  // O_NONBLOCK for the open alone: a FIFO without a reader fails (ENXIO) instead of blocking.
  int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENXIO) return Unavailable(path + ": a FIFO with no reader: nothing to write to");
    return PermissionDenied(path + ": cannot write: " + Errno(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::ftruncate(fd, 0) != 0 && errno != EINVAL) {
    const int err = errno;
    ::close(fd);
    return PermissionDenied(path + ": cannot truncate: " + Errno(err));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  int err = FillFd(fd, fill);
  if (::close(fd) != 0 && err == 0 && errno != EINTR) err = errno;
  if (err != 0) return ResourceExhausted(path + ": write failed: " + Errno(err));
  return Status::Ok();
}

}  // namespace

StatusOr<int> OpenRegularFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO does not wait for a writer; the fstat below refuses it.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return NotFound(path + ": no such file");
    if (err == EISDIR) return InvalidArgument(path + ": is a directory");
    return PermissionDenied(path + ": cannot open: " + Errno(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return PermissionDenied(path + ": cannot stat: " + Errno(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    const char* what = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    if (S_ISDIR(st.st_mode)) return InvalidArgument(path + ": is a directory");
    return InvalidArgument(path + ": is " + what +
                           ", not a regular file: opscope reads its inputs whole; save the data "
                           "to a file first");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

StatusOr<std::string> ReadFile(const std::string& path) {
  OPSCOPE_ASSIGN_OR_RETURN(int fd, OpenRegularFile(path));
  std::string out;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return DataLoss(path + ": read error: " + Errno(err));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

Status WriteFileAtomic(const std::string& path, const std::string& contents) {
  return WriteFileAtomicStreamed(path, [&](std::ostream& out) {
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  });
}

Status WriteFileAtomicStreamed(const std::string& path,
                               const std::function<void(std::ostream&)>& fill) {
  if (WrittenInPlace(path)) return WriteInPlace(path, fill);
  // A fresh, unpredictable temporary name beside the file (mkostemp: O_CREAT|O_EXCL, so a link
  // another user planted in a shared folder is never followed), then renamed into place.
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string tmp = dir + "." + base + ".opscope-XXXXXX";
  int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return PermissionDenied(path + ": cannot write: " + Errno(errno));
  // mkostemp makes the file 0600; give it the mode a plain create would (0666 less the umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  int err = FillFd(fd, fill);
  if (::close(fd) != 0 && err == 0 && errno != EINTR) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    return ResourceExhausted(path + ": write failed: " + Errno(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    ::unlink(tmp.c_str());
    return PermissionDenied(path + ": cannot rename into place: " + Errno(err));
  }
  return Status::Ok();
}

Status CheckWritable(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p(path);
  if (fs::is_directory(p, ec)) return InvalidArgument(path + ": is a directory, expected a file");
  if (WrittenInPlace(path)) {
    if (access(path.c_str(), W_OK) != 0)
      return PermissionDenied(path + ": not writable: " + Errno(errno));
    return Status::Ok();
  }
  fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    return NotFound(path + ": folder '" + dir.string() + "' does not exist");
  if (access(dir.c_str(), W_OK) != 0)
    return PermissionDenied(path + ": folder '" + dir.string() + "' is not writable");
  if (fs::exists(p, ec) && access(p.c_str(), W_OK) != 0)
    return PermissionDenied(path + ": file exists and is not writable");
  return Status::Ok();
}

std::string ReadSysFile(const std::string& path) {
  // Regular files only (OpenRegularFile): a FIFO or device planted in a --sysroot tree, or a
  // sysfs path that is not an attribute, reads as absent, never waited on.
  auto fd = OpenRegularFile(path);
  if (!fd.ok()) return "";
  std::string out;
  constexpr size_t kMax = size_t{1} << 20;  // sysfs attributes are a page; cpuinfo is small
  char buf[4096];
  while (out.size() < kMax) {
    ssize_t n = read(*fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(*fd);
  return Trim(out);
}

std::vector<std::string> ListDirectory(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != ".." && StartsWith(n, prefix)) names.push_back(n);
    }
    closedir(d);
  }
  // Shorter first, so thermal_zone2 comes before thermal_zone10 and cpu2 before cpu10.
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return names;
}

}  // namespace opscope
