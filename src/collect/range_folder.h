// The folder a recorder writes its files into, as opscope holds it (`run`'s private folder in
// /tmp, `run -p`'s output folder next to the program's channel).
//
// `run -p` hands the folder to the program's user (root's opscope chowns it), and from then on
// that user may put anything in it, or rename the folder itself away (in sticky /tmp the owner
// of an entry may) and put a symbolic link in its place. So the folder is made and opened once,
// and everything after goes through that descriptor and never through its path again: existence
// checks (fstatat, never following), reads (collect/trusted_file.h: regular files of the expected
// owner, one link, capped), listing (a duplicate of the descriptor) and removal (unlinkat of its
// entries, which never follows; the folder itself only when its name still names it).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "collect/trusted_file.h"

namespace opscope::collect {

class RangeFolder {
 public:
  // Makes `<parent>/<prefix>XXXXXX` (six random characters, mode 0700) and opens it. `parent` is
  // reached as given (it may go through /proc/PID/root or links of the program's own folders);
  // it is opened once, and the new folder is made and checked relative to it: a folder of
  // opscope's uid, private, on the parent's mount, empty. The path names it in messages.
  static StatusOr<std::unique_ptr<RangeFolder>> Make(const std::string& parent,
                                                     const std::string& prefix);
  ~RangeFolder();  // Remove(), if not done
  RangeFolder(const RangeFolder&) = delete;
  RangeFolder& operator=(const RangeFolder&) = delete;

  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }
  int fd() const { return fd_; }
  // Whose files it holds: opscope's effective uid, or the uid it was handed to.
  uid_t owner() const { return owner_; }

  // Hands the folder to `uid` (fchown on the descriptor): from then on its files must be that
  // uid's, and nothing in it is trusted further than collect/trusted_file.h's rule.
  Status HandTo(uid_t uid, gid_t gid);
  // Whether `name` exists in it (of any type; a link is not followed).
  bool Has(const std::string& name) const;
  // Reads `name` by the trust rule (owner() its owner).
  FileTrust Read(const std::string& name, size_t max_bytes, std::string* text,
                 std::string* why) const;
  // The names in it ("." and ".." left out), sorted.
  std::vector<std::string> Names() const;
  // Removes its entries (unlinkat through the descriptor: a link is removed, never followed)
  // and the folder itself when its name in the parent still names it. Returns "" or one line
  // saying what was left and why. Idempotent.
  std::string Remove();

 private:
  RangeFolder() = default;
  int parent_fd_ = -1, fd_ = -1;
  std::string path_, name_;
  uid_t owner_ = 0;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  bool removed_ = false;
};

}  // namespace opscope::collect
