// The folder opscope reads range files from, through its descriptor only (collect/range_folder.h).
#include "collect/range_folder.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace opscope::collect {
namespace {

std::string Parent(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/range_folder_test_" + name;
  std::system(("rm -rf " + d).c_str());
  mkdir(d.c_str(), 0755);
  return d;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

TEST(RangeFolder, IsMadePrivateReadThroughItsDescriptorAndRemoved) {
  const std::string parent = Parent("basic");
  auto made = RangeFolder::Make(parent, "opscope-run-");
  ASSERT_TRUE(made.ok()) << made.status().message();
  RangeFolder& f = **made;
  EXPECT_EQ(f.path().rfind(parent + "/opscope-run-", 0), 0u) << f.path();
  EXPECT_EQ(f.name().size(), std::string("opscope-run-XXXXXX").size());
  struct stat st {};
  ASSERT_EQ(stat(f.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(f.owner(), geteuid());
  std::ofstream(f.path() + "/run0.annotate.1") << "opscope-ranges 1\n";
  chmod((f.path() + "/run0.annotate.1").c_str(), 0600);
  EXPECT_TRUE(f.Has("run0.annotate.1"));
  EXPECT_FALSE(f.Has("run0.nvtx.1"));
  std::string text, why;
  EXPECT_EQ(f.Read("run0.annotate.1", 100, &text, &why), FileTrust::kTrusted) << why;
  EXPECT_EQ(text, "opscope-ranges 1\n");
  EXPECT_EQ(f.Names(), std::vector<std::string>{"run0.annotate.1"});
  EXPECT_EQ(f.Names(), std::vector<std::string>{"run0.annotate.1"}) << "a second listing too";
  EXPECT_EQ(f.Remove(), "");
  EXPECT_FALSE(Exists(f.path()));
  EXPECT_EQ(f.Remove(), "") << "idempotent";
}

// The folder renamed away and a link to another folder put in its place (what the program's user
// can do once the folder is handed over): opscope reads and empties the folder it made, and leaves
// the link and what it points to alone.
TEST(RangeFolder, ASwappedFolderIsNeitherFollowedNorEmptied) {
  const std::string parent = Parent("swap");
  const std::string victim = parent + "/victim";
  mkdir(victim.c_str(), 0700);
  std::ofstream(victim + "/precious") << "keep\n";
  auto made = RangeFolder::Make(parent, "opscope-attach-out-");
  ASSERT_TRUE(made.ok()) << made.status().message();
  RangeFolder& f = **made;
  std::ofstream(f.path() + "/done.annotate") << "stop 0 1\n";
  chmod((f.path() + "/done.annotate").c_str(), 0600);
  const std::string moved = f.path() + ".moved";
  ASSERT_EQ(rename(f.path().c_str(), moved.c_str()), 0);
  ASSERT_EQ(symlink(victim.c_str(), f.path().c_str()), 0);
  EXPECT_TRUE(f.Has("done.annotate"));
  EXPECT_FALSE(f.Has("precious"));
  std::string text, why;
  EXPECT_EQ(f.Read("done.annotate", 100, &text, &why), FileTrust::kTrusted) << why;
  EXPECT_EQ(text, "stop 0 1\n");
  const std::string note = f.Remove();
  EXPECT_NE(note.find(f.path() + " was moved or replaced while in use"), std::string::npos) << note;
  EXPECT_TRUE(Exists(victim + "/precious"));
  EXPECT_TRUE(Exists(f.path())) << "the link is left";
  EXPECT_FALSE(Exists(moved + "/done.annotate")) << "the moved folder was emptied";
  std::system(("rm -rf " + parent).c_str());
}

TEST(RangeFolder, HandedToAnotherUidItsFilesMustBeThatUids) {
  if (geteuid() != 0) GTEST_SKIP() << "handing a folder to another uid needs root";
  const std::string parent = Parent("hand");
  auto made = RangeFolder::Make(parent, "opscope-attach-out-");
  ASSERT_TRUE(made.ok()) << made.status().message();
  RangeFolder& f = **made;
  ASSERT_TRUE(f.HandTo(65534, 65534).ok());
  EXPECT_EQ(f.owner(), 65534u);
  struct stat st {};
  ASSERT_EQ(stat(f.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);
  std::ofstream(f.path() + "/attached.annotate") << "attached 1\n";  // root's: not the program's
  std::string text, why;
  EXPECT_EQ(f.Read("attached.annotate", 100, &text, &why), FileTrust::kWrongOwner);
  EXPECT_EQ(why, "owned by uid 0, not by the program's uid 65534");
  chown((f.path() + "/attached.annotate").c_str(), 65534, 65534);
  EXPECT_EQ(f.Read("attached.annotate", 100, &text, &why), FileTrust::kTrusted) << why;
  EXPECT_EQ(f.Remove(), "");
  EXPECT_FALSE(Exists(f.path()));
}

TEST(RangeFolder, AMissingParentIsAClearError) {
  auto made = RangeFolder::Make("/nonexistent-opscope-parent", "x-");
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().message(),
            "cannot create a temporary folder in /nonexistent-opscope-parent: No such file or "
            "directory");
}

}  // namespace
}  // namespace opscope::collect
