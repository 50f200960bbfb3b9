// Where an attachable program keeps its attach channels (ranges_recorder.h): one rule, shared by
// the recorder inside the program and by `opscope run -p` looking for it (range_attach.h), so the
// two agree without being told. Header-only and libc-only: the recorder libraries link nothing
// else.
//
//   1. $OPSCOPE_ATTACH_DIR, when set: any folder the program can create private folders in;
//   2. else $XDG_RUNTIME_DIR, when set and private to the program's user (an absolute folder it
//      owns, no group or other permissions: systemd's /run/user/UID);
//   3. else /tmp.
//
// The channel itself is always `<folder>/opscope-attach-<pid>-<source>`, mode 0700, owned by the
// program's uid, whatever the folder. A private /tmp (a container, systemd's PrivateTmp) is another
// mount namespace: opscope reaches it through /proc/PID/root.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>

namespace opscope::collect {

inline constexpr char kAttachDirEnv[] = "OPSCOPE_ATTACH_DIR";

// True when `path` (looked up under `root`, "" or "/proc/PID/root") is an absolute folder owned
// by `uid` with no group or other permissions.
inline bool IsPrivateFolderOf(const std::string& root, const std::string& path, uid_t uid) {
  struct stat st {};
  return !path.empty() && path[0] == '/' && stat((root + path).c_str(), &st) == 0 &&
         S_ISDIR(st.st_mode) && st.st_uid == uid && (st.st_mode & 077) == 0;
}

// The folder by the rule above, from the program's OPSCOPE_ATTACH_DIR and XDG_RUNTIME_DIR (null
// when unset), its uid, and the `root` its paths are seen under.
inline std::string AttachBaseDir(const char* attach_dir, const char* runtime_dir, uid_t uid,
                                 const std::string& root = "") {
  if (attach_dir != nullptr && attach_dir[0] != '\0') {
    std::string dir = attach_dir;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    return dir;
  }
  if (runtime_dir != nullptr && IsPrivateFolderOf(root, runtime_dir, uid)) {
    std::string dir = runtime_dir;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    return dir;
  }
  return "/tmp";
}

inline std::string AttachChannelName(long pid, const std::string& source) {
  return "opscope-attach-" + std::to_string(pid) + "-" + source;
}

}  // namespace opscope::collect
