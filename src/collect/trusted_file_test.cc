// The one rule for files another uid could have planted (collect/trusted_file.h).
#include "collect/trusted_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace opscope::collect {
namespace {

class TrustedFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = ::testing::TempDir() + "/trusted_file_test_" + info->name();
    std::system(("rm -rf " + dir_).c_str());
    ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
    dirfd_ = open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(dirfd_, 0);
  }
  void TearDown() override {
    close(dirfd_);
    std::system(("rm -rf " + dir_).c_str());
  }
  void Write(const std::string& name, const std::string& text, mode_t mode = 0600) {
    std::ofstream(dir_ + "/" + name) << text;
    ASSERT_EQ(chmod((dir_ + "/" + name).c_str(), mode), 0);
  }
  FileTrust Read(const std::string& name, size_t max = 100, uid_t owner = geteuid()) {
    return ReadTrustedFile(dirfd_, name.c_str(), owner, "the program's uid", max, &text_, &why_);
  }
  std::string dir_, text_, why_;
  int dirfd_ = -1;
};

TEST_F(TrustedFileTest, ARegularFileOfTheOwnerIsReadWhole) {
  Write("ok", "stop 0 12\n");
  EXPECT_EQ(Read("ok"), FileTrust::kTrusted) << why_;
  EXPECT_EQ(text_, "stop 0 12\n");
  Write("exact", std::string(100, 'x'));
  EXPECT_EQ(Read("exact"), FileTrust::kTrusted) << "the cap itself is allowed";
  EXPECT_EQ(text_.size(), 100u);
  Write("big", std::string(200000, 'x'));  // more than one read
  EXPECT_EQ(Read("big", 200000), FileTrust::kTrusted);
  EXPECT_EQ(text_.size(), 200000u);
}

TEST_F(TrustedFileTest, AMissingFileSaysNothingElse) {
  EXPECT_EQ(Read("absent"), FileTrust::kMissing);
  EXPECT_EQ(why_, "");
}

TEST_F(TrustedFileTest, SymbolicLinksAreNeverFollowed) {
  Write("target", "secret\n");
  ASSERT_EQ(symlink((dir_ + "/target").c_str(), (dir_ + "/link").c_str()), 0);
  ASSERT_EQ(symlink("/dev/zero", (dir_ + "/zero").c_str()), 0);
  for (const char* name : {"link", "zero"}) {
    EXPECT_EQ(Read(name), FileTrust::kSymlink) << name;
    EXPECT_EQ(why_, "a symbolic link");
    EXPECT_EQ(text_, "");
  }
  // A link to a folder, where a folder is expected.
  ASSERT_EQ(mkdir((dir_ + "/sub").c_str(), 0700), 0);
  ASSERT_EQ(symlink((dir_ + "/sub").c_str(), (dir_ + "/sublink").c_str()), 0);
  FileTrust trust = FileTrust::kTrusted;
  EXPECT_EQ(OpenTrustedFolder(dirfd_, "sublink", geteuid(), "uid", true, &trust, &why_), -1);
  EXPECT_EQ(trust, FileTrust::kSymlink) << why_;
}

TEST_F(TrustedFileTest, AFifoIsRefusedWithoutWaitingForAWriter) {
  ASSERT_EQ(mkfifo((dir_ + "/fifo").c_str(), 0600), 0);
  EXPECT_EQ(Read("fifo"), FileTrust::kWrongType);  // (a blocking open would hang the test)
  EXPECT_EQ(why_, "a FIFO, not a regular file");
  ASSERT_EQ(mkdir((dir_ + "/sub").c_str(), 0700), 0);
  EXPECT_EQ(Read("sub"), FileTrust::kWrongType);
  EXPECT_EQ(why_, "a folder, not a regular file");
}

TEST_F(TrustedFileTest, ADeviceNodeIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "mknod of a character device needs root";
  ASSERT_EQ(mknod((dir_ + "/zero").c_str(), S_IFCHR | 0600, makedev(1, 5)), 0);
  EXPECT_EQ(Read("zero"), FileTrust::kWrongType);
  EXPECT_EQ(why_, "a device, not a regular file");
}

TEST_F(TrustedFileTest, AHardLinkedFileIsRefused) {
  Write("one", "x\n");
  ASSERT_EQ(link((dir_ + "/one").c_str(), (dir_ + "/two").c_str()), 0);
  EXPECT_EQ(Read("one"), FileTrust::kHardLinks);
  EXPECT_EQ(why_, "a file with 2 hard links");
}

TEST_F(TrustedFileTest, AnotherOwnerOrOthersWritingIsRefused) {
  Write("mine", "x\n");
  EXPECT_EQ(Read("mine", 100, geteuid() + 1), FileTrust::kWrongOwner);
  EXPECT_EQ(why_, "owned by uid " + std::to_string(geteuid()) + ", not by the program's uid " +
                      std::to_string(geteuid() + 1));
  Write("open", "x\n", 0622);
  EXPECT_EQ(Read("open"), FileTrust::kOthersCanWrite);
  EXPECT_EQ(why_, "writable by other users");
  // A folder that must be private.
  ASSERT_EQ(mkdir((dir_ + "/shared").c_str(), 0700), 0);
  ASSERT_EQ(chmod((dir_ + "/shared").c_str(), 0755), 0);
  FileTrust trust = FileTrust::kTrusted;
  EXPECT_EQ(OpenTrustedFolder(dirfd_, "shared", geteuid(), "uid", true, &trust, &why_), -1);
  EXPECT_EQ(trust, FileTrust::kOthersCanRead);
  const int fd = OpenTrustedFolder(dirfd_, "shared", geteuid(), "uid", false, &trust, &why_);
  EXPECT_GE(fd, 0) << why_;
  if (fd >= 0) close(fd);
}

TEST_F(TrustedFileTest, AFileOverTheCapIsRefusedNotTruncated) {
  Write("big", std::string(101, 'x'));
  EXPECT_EQ(Read("big"), FileTrust::kTooLarge);
  EXPECT_EQ(why_, "larger than 100 bytes");
  EXPECT_EQ(text_, "") << "no partial text";
}

}  // namespace
}  // namespace opscope::collect
