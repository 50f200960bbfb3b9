// The attach folder rule (collect/attach_dir.h) and where `run -p` looks (range_attach.h).
#include "collect/attach_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "collect/range_attach.h"

namespace opscope::collect {
namespace {

std::string Folder(const std::string& name, mode_t mode) {
  const std::string d = ::testing::TempDir() + "/attach_dir_test_" + name;
  mkdir(d.c_str(), 0700);
  chmod(d.c_str(), mode);
  return d;
}

TEST(AttachDir, ChosenFolderThenPrivateRuntimeDirThenTmp) {
  const std::string priv = Folder("private", 0700), open = Folder("open", 0755);
  const uid_t me = geteuid();
  EXPECT_EQ(AttachBaseDir("/srv/x//", priv.c_str(), me), "/srv/x");
  EXPECT_EQ(AttachBaseDir("", priv.c_str(), me), priv) << "empty is unset";
  EXPECT_EQ(AttachBaseDir(nullptr, priv.c_str(), me), priv);
  EXPECT_EQ(AttachBaseDir(nullptr, open.c_str(), me), "/tmp") << "group/other permissions";
  EXPECT_EQ(AttachBaseDir(nullptr, priv.c_str(), me + 1), "/tmp") << "another user's";
  EXPECT_EQ(AttachBaseDir(nullptr, "relative/dir", me), "/tmp");
  EXPECT_EQ(AttachBaseDir(nullptr, nullptr, me), "/tmp");
  EXPECT_EQ(AttachChannelName(42, "nvtx"), "opscope-attach-42-nvtx");
  // Seen through a root prefix (/proc/PID/root): the folder is looked up under it.
  EXPECT_EQ(AttachBaseDir(nullptr, "/attach_dir_test_private", me, ::testing::TempDir()),
            "/attach_dir_test_private");
  EXPECT_EQ(AttachBaseDir(nullptr, "/attach_dir_test_open", me, ::testing::TempDir()), "/tmp");
}

TEST(AttachDir, OpscopeSearchesItsOwnChoiceThenTheProgramsThenTmp) {
  const std::string priv = Folder("private2", 0700);
  const uid_t me = geteuid();
  const std::map<std::string, std::string> env = {{"OPSCOPE_ATTACH_DIR", "/srv/chosen/"},
                                                  {"XDG_RUNTIME_DIR", priv}};
  EXPECT_EQ(AttachDirCandidates("/mine", env, me, ""),
            (std::vector<std::string>{"/mine", "/srv/chosen", priv, "/tmp"}));
  EXPECT_EQ(AttachDirCandidates(nullptr, {{"XDG_RUNTIME_DIR", priv}}, me, ""),
            (std::vector<std::string>{priv, "/tmp"}));
  EXPECT_EQ(AttachDirCandidates(nullptr, {}, me, ""), (std::vector<std::string>{"/tmp"}));
  EXPECT_EQ(AttachDirCandidates("relative", {{"XDG_RUNTIME_DIR", priv}}, me + 1, ""),
            (std::vector<std::string>{"/tmp"}))
      << "a relative folder and another user's runtime folder are not searched";
}

}  // namespace
}  // namespace opscope::collect
