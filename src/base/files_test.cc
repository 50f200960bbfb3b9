#include "base/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace opscope {
namespace {

std::string FreshDir(const char* where = "/tmp") {
  std::string tmpl = std::string(where) + "/opscope_files_test_XXXXXX";
  return mkdtemp(tmpl.data()) != nullptr ? tmpl : std::string();
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(FilesTest, WritesThroughAFreshTemporaryAndNeverFollowsAPlantedLink) {
  const std::string dir = FreshDir();
  ASSERT_FALSE(dir.empty());
  const std::string victim = dir + "/victim", out = dir + "/p.json";
  std::ofstream(victim) << "keep";
  // The old temporary name was predictable (PATH.tmp): another user could plant a link there.
  ASSERT_EQ(symlink(victim.c_str(), (out + ".tmp").c_str()), 0);
  ASSERT_TRUE(WriteFileAtomic(out, "{}\n").ok());
  EXPECT_EQ(Slurp(out), "{}\n");
  EXPECT_EQ(Slurp(victim), "keep");
  struct stat st {};
  ASSERT_EQ(stat(out.c_str(), &st), 0);
  const mode_t mask = umask(0);
  umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask) << "the mode a plain create gives";
  // A link at the name itself is replaced, not written through.
  const std::string linked = dir + "/linked.json";
  ASSERT_EQ(symlink(victim.c_str(), linked.c_str()), 0);
  ASSERT_TRUE(WriteFileAtomic(linked, "new").ok());
  EXPECT_EQ(Slurp(victim), "keep");
  EXPECT_EQ(Slurp(linked), "new");
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST(FilesTest, DevicesAndFifosAreWrittenInPlaceAndFailuresAreReported) {
  Status full = WriteFileAtomic("/dev/full", std::string(100000, 'x'));
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.message(), "/dev/full: write failed: No space left on device");
  EXPECT_TRUE(WriteFileAtomic("/dev/null", "x").ok());
  struct stat st {};
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null was replaced";
  const std::string dir = FreshDir();
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Status no_reader = WriteFileAtomic(fifo, "x");  // must not wait for a reader
  ASSERT_FALSE(no_reader.ok());
  EXPECT_NE(no_reader.message().find("a FIFO with no reader"), std::string::npos);
  ASSERT_EQ(stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  // A new file in /dev is an ordinary file where /dev is an ordinary tmpfs folder (/dev/shm).
  if (access("/dev/shm", W_OK) == 0) {
    const std::string shm = FreshDir("/dev/shm");
    ASSERT_FALSE(shm.empty());
    ASSERT_TRUE(WriteFileAtomic(shm + "/p.json", "{}").ok());
    EXPECT_EQ(Slurp(shm + "/p.json"), "{}");
    std::system(("rm -rf '" + shm + "'").c_str());
  }
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST(FilesTest, ReadFileRefusesWhatIsNotARegularFileSayingWhat) {
  const std::string dir = FreshDir();
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto f = ReadFile(fifo);  // must not wait for a writer
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message(),
            fifo +
                ": is a FIFO (named pipe), not a regular file: opscope reads its inputs whole; "
                "save the data to a file first");
  auto z = ReadFile("/dev/zero");
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.status().message().find("/dev/zero: is a character device"), std::string::npos);
  EXPECT_EQ(ReadFile(dir).status().message(), dir + ": is a directory");
  EXPECT_EQ(ReadFile(dir + "/none").status().message(), dir + "/none: no such file");
  std::ofstream(dir + "/f") << "bytes";
  EXPECT_EQ(ReadFile(dir + "/f").value(), "bytes");
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace opscope
