// Reading files that another user could have planted, without following what they planted.
//
// Both sides of `opscope run -p` read files from folders another uid can write to: the recorder
// inside the program reads opscope's `request` from its channel, and opscope (often root) reads
// the recorder's `attached`, `done` and `ranges` files from an output folder it handed to the
// program's user. Whoever can write a folder can put a symbolic link (to /etc/shadow, /dev/zero),
// a FIFO (open() blocks forever), a hard link to someone else's file, or a file that grows without
// end in it. The one rule, for both sides: open relative to a folder descriptor with O_NOFOLLOW
// and O_NONBLOCK, then check the open file (fstat, so the check and the read see the same file):
// a regular file, owned by the expected uid, not writable by group or others, one link, and no
// larger than a cap the caller chooses (the read stops at cap + 1 bytes, so a file growing during
// the read cannot make it unbounded).
//
// libc and libstdc++ only: compiled into the recorder libraries (which link nothing else) and
// into opscope.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <string>

namespace opscope::collect {

enum class FileTrust {
  kTrusted,
  kMissing,         // no such name
  kSymlink,         // a symbolic link (never followed)
  kWrongType,       // a FIFO, socket, device or folder where a file was expected, or the reverse
  kWrongOwner,      // owned by another uid than the expected one
  kOthersCanWrite,  // writable by group or others
  kOthersCanRead,   // a folder that must be private has group or other permissions
  kHardLinks,       // a file with more than one link
  kTooLarge,        // larger than the caller's cap
  kUnreadable,      // open or read failed otherwise (the reason says errno's text)
};

// Checks an fstat of an open file (`folder`: of an open folder; `private_folder` also refuses
// group and other permissions) against the rule above. On refusal `why` completes "<name> is ...":
// "a symbolic link", "a FIFO, not a regular file", "owned by uid 0, not by the program's uid
// 1000" (`owner_what` names the owner: "the program's uid", "this program's uid"),
// "writable by other users", "a file with 2 hard links".
FileTrust CheckTrusted(const struct stat& st, uid_t owner, const char* owner_what, bool folder,
                       bool private_folder, std::string* why);

// Opens `name` in `dirfd` for reading (O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) and checks it as a
// file. Returns the descriptor, or -1 with `trust` and `why` set (kMissing: `why` empty).
int OpenTrustedFile(int dirfd, const char* name, uid_t owner, const char* owner_what,
                    FileTrust* trust, std::string* why);

// Opens, checks and reads `name` whole; kTooLarge (and no text) when it holds more than
// `max_bytes`.
FileTrust ReadTrustedFile(int dirfd, const char* name, uid_t owner, const char* owner_what,
                          size_t max_bytes, std::string* text, std::string* why);

// A folder in `parentfd` (O_NOFOLLOW | O_DIRECTORY), checked with CheckTrusted as a folder.
int OpenTrustedFolder(int parentfd, const char* name, uid_t owner, const char* owner_what,
                      bool private_folder, FileTrust* trust, std::string* why);

// The small marker and request files of the attach protocol are at most this long.
inline constexpr size_t kMaxMarkerBytes = 4096;

}  // namespace opscope::collect
