#include "collect/trusted_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace opscope::collect {
namespace {

const char* KindOf(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "of an unknown type";
}

// What open(O_NOFOLLOW) failing says about `name`.
FileTrust FromOpenError(int err, std::string* why) {
  if (err == ENOENT) {
    why->clear();
    return FileTrust::kMissing;
  }
  if (err == ELOOP) {
    *why = "a symbolic link";
    return FileTrust::kSymlink;
  }
  if (err == ENOTDIR) {
    *why = "not a folder";
    return FileTrust::kWrongType;
  }
  *why = std::string("not openable (") + std::strerror(err) + ")";
  return FileTrust::kUnreadable;
}

}  // namespace

FileTrust CheckTrusted(const struct stat& st, uid_t owner, const char* owner_what, bool folder,
                       bool private_folder, std::string* why) {
  if (folder ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
    *why = std::string(KindOf(st.st_mode)) + (folder ? ", not a folder" : ", not a regular file");
    return S_ISLNK(st.st_mode) ? FileTrust::kSymlink : FileTrust::kWrongType;
  }
  if (st.st_uid != owner) {
    *why = "owned by uid " + std::to_string(st.st_uid) + ", not by " + owner_what + " " +
           std::to_string(owner);
    return FileTrust::kWrongOwner;
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    *why = "writable by other users";
    return FileTrust::kOthersCanWrite;
  }
  if (folder && private_folder && (st.st_mode & 077) != 0) {
    *why = "readable by other users";
    return FileTrust::kOthersCanRead;
  }
  if (!folder && st.st_nlink != 1) {
    *why = "a file with " + std::to_string(st.st_nlink) + " hard links";
    return FileTrust::kHardLinks;
  }
  why->clear();
  return FileTrust::kTrusted;
}

// The checks on an open descriptor (fstat, so they see the file that will be read): `fd` when
// trusted, else -1 (closed) with `trust` and `why` set.
static int KeepIfTrusted(int fd, uid_t owner, const char* owner_what, bool folder,
                         bool private_folder, FileTrust* trust, std::string* why) {
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    *trust = FileTrust::kUnreadable;
    *why = std::string("not readable (") + std::strerror(errno) + ")";
    ::close(fd);
    return -1;
  }
  *trust = CheckTrusted(st, owner, owner_what, folder, private_folder, why);
  if (*trust != FileTrust::kTrusted) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int OpenTrustedFile(int dirfd, const char* name, uid_t owner, const char* owner_what,
                    FileTrust* trust, std::string* why) {
  // O_NONBLOCK: a FIFO opens at once (and is refused below) instead of waiting for a writer.
  const int fd = ::openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    *trust = FromOpenError(errno, why);
    return -1;
  }
  return KeepIfTrusted(fd, owner, owner_what, /*folder=*/false, /*private_folder=*/false, trust,
                       why);
}

FileTrust ReadTrustedFile(int dirfd, const char* name, uid_t owner, const char* owner_what,
                          size_t max_bytes, std::string* text, std::string* why) {
  text->clear();
  FileTrust trust = FileTrust::kTrusted;
  const int fd = OpenTrustedFile(dirfd, name, owner, owner_what, &trust, why);
  if (fd < 0) return trust;
  struct stat st {};
  if (fstat(fd, &st) == 0 && st.st_size > 0 && static_cast<size_t>(st.st_size) <= max_bytes)
    text->reserve(static_cast<size_t>(st.st_size));
  // Until the end of the file, or one byte past the cap: a file that grows while it is read (or
  // claims a small size and holds more) cannot make this unbounded.
  char buf[65536];
  for (;;) {
    const size_t want = std::min(sizeof buf, max_bytes + 1 - text->size());
    const ssize_t n = ::read(fd, buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *why = std::string("not readable (") + std::strerror(errno) + ")";
      ::close(fd);
      text->clear();
      return FileTrust::kUnreadable;
    }
    if (n == 0) break;
    text->append(buf, static_cast<size_t>(n));
    if (text->size() > max_bytes) {
      *why = "larger than " + std::to_string(max_bytes) + " bytes";
      ::close(fd);
      text->clear();
      return FileTrust::kTooLarge;
    }
  }
  ::close(fd);
  return FileTrust::kTrusted;
}

int OpenTrustedFolder(int parentfd, const char* name, uid_t owner, const char* owner_what,
                      bool private_folder, FileTrust* trust, std::string* why) {
  const int fd = ::openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    struct stat lst {};
    // With O_DIRECTORY a link fails as ENOTDIR, like a file: say which it is.
    if ((err == ENOTDIR || err == ELOOP) &&
        fstatat(parentfd, name, &lst, AT_SYMLINK_NOFOLLOW) == 0) {
      *trust = S_ISLNK(lst.st_mode) ? FileTrust::kSymlink : FileTrust::kWrongType;
      *why = S_ISLNK(lst.st_mode) ? "a symbolic link"
                                  : std::string(KindOf(lst.st_mode)) + ", not a folder";
      return -1;
    }
    *trust = FromOpenError(err, why);
    return -1;
  }
  return KeepIfTrusted(fd, owner, owner_what, /*folder=*/true, private_folder, trust, why);
}

}  // namespace opscope::collect
