#include "collect/range_folder.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace opscope::collect {
namespace {

// Six characters as mkdtemp's XXXXXX.
std::string RandomSuffix() {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  unsigned char bytes[6];
  if (getrandom(bytes, sizeof bytes, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof bytes)) {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t x = static_cast<uint64_t>(ts.tv_nsec) * 0x9e3779b97f4a7c15ULL ^ getpid();
    for (unsigned char& b : bytes) b = static_cast<unsigned char>(x >>= 7);
  }
  std::string s;
  for (unsigned char b : bytes) s += kChars[b % (sizeof kChars - 1)];
  return s;
}

// The mount a descriptor is on (0 when the kernel does not say: before Linux 5.8).
uint64_t MountId(int fd) {
#ifdef STATX_MNT_ID
  struct statx sx {};
  if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0 && (sx.stx_mask & STATX_MNT_ID))
    return sx.stx_mnt_id;
#else
  (void)fd;
#endif
  return 0;
}

}  // namespace

StatusOr<std::unique_ptr<RangeFolder>> RangeFolder::Make(const std::string& parent,
                                                         const std::string& prefix) {
  std::unique_ptr<RangeFolder> f(new RangeFolder);
  f->parent_fd_ = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (f->parent_fd_ < 0)
    return PermissionDenied(
        fmt::format("cannot create a temporary folder in {}: {}", parent, std::strerror(errno)));
  f->removed_ = true;  // until it exists
  for (int attempt = 0;; ++attempt) {
    f->name_ = prefix + RandomSuffix();
    if (mkdirat(f->parent_fd_, f->name_.c_str(), 0700) == 0) break;
    if (errno != EEXIST || attempt >= 100)
      return PermissionDenied(
          fmt::format("cannot create a temporary folder in {}: {}", parent, std::strerror(errno)));
  }
  f->path_ = parent + "/" + f->name_;
  f->owner_ = geteuid();
  FileTrust trust = FileTrust::kTrusted;
  std::string why;
  f->fd_ = OpenTrustedFolder(f->parent_fd_, f->name_.c_str(), geteuid(), "opscope's uid", true,
                             &trust, &why);
  struct stat st {
  }, pst{};
  // What opscope made, and not something put in its place since (in a folder the program's user
  // may write to, or a mount namespace of its own where it may mount): opscope's, private, on the
  // parent's mount, empty.
  const bool same_mount = f->fd_ >= 0 && fstat(f->fd_, &st) == 0 &&
                          fstat(f->parent_fd_, &pst) == 0 && st.st_dev == pst.st_dev &&
                          MountId(f->fd_) == MountId(f->parent_fd_);
  if (f->fd_ < 0 || !same_mount || !f->Names().empty())
    return PermissionDenied(
        fmt::format("{} was replaced between its creation and opscope opening it{}: not using it",
                    f->path_, why.empty() ? "" : " (it is " + why + ")"));
  f->dev_ = st.st_dev;
  f->ino_ = st.st_ino;
  f->removed_ = false;
  fchmod(f->fd_, 0700);  // whatever the umask made of it: the recorder must be able to write
  return f;
}

RangeFolder::~RangeFolder() {
  Remove();
  if (fd_ >= 0) ::close(fd_);
  if (parent_fd_ >= 0) ::close(parent_fd_);
}

Status RangeFolder::HandTo(uid_t uid, gid_t gid) {
  if (fchown(fd_, uid, gid) != 0)
    return PermissionDenied(
        fmt::format("cannot hand {} to uid {}: {}", path_, uid, std::strerror(errno)));
  owner_ = uid;
  return Status::Ok();
}

bool RangeFolder::Has(const std::string& name) const {
  struct stat st {};
  return fstatat(fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

FileTrust RangeFolder::Read(const std::string& name, size_t max_bytes, std::string* text,
                            std::string* why) const {
  return ReadTrustedFile(fd_, name.c_str(), owner_,
                         owner_ == geteuid() ? "opscope's uid" : "the program's uid", max_bytes,
                         text, why);
}

std::vector<std::string> RangeFolder::Names() const {
  std::vector<std::string> names;
  const int dup_fd = fcntl(fd_, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return names;
  DIR* d = fdopendir(dup_fd);
  if (d == nullptr) {
    ::close(dup_fd);
    return names;
  }
  rewinddir(d);  // the duplicate shares the offset of an earlier listing
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::string RangeFolder::Remove() {
  if (removed_ || fd_ < 0) return "";
  removed_ = true;
  size_t kept = 0;
  for (const std::string& n : Names())
    if (unlinkat(fd_, n.c_str(), 0) != 0 && unlinkat(fd_, n.c_str(), AT_REMOVEDIR) != 0) ++kept;
  struct stat st {};
  const bool still_here = fstatat(parent_fd_, name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                          S_ISDIR(st.st_mode) && st.st_dev == dev_ && st.st_ino == ino_;
  if (!still_here)
    return fmt::format(
        "{} was moved or replaced while in use (by uid {}): its files were read and removed "
        "through the folder opscope made, wherever it went; what is at that path now was left "
        "alone",
        path_, owner_);
  if (unlinkat(parent_fd_, name_.c_str(), AT_REMOVEDIR) != 0)
    return fmt::format("{} could not be removed ({}{})", path_, std::strerror(errno),
                       kept > 0 ? fmt::format("; {} entries in it were left", kept) : "");
  return "";
}

}  // namespace opscope::collect
