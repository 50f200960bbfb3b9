// The build-id reader on binaries built in the tree: one linked with a known id, one linked
// without any, this test binary itself (against `readelf -n` when binutils is there), and files
// that are not ELF.
#include "collect/build_id.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <regex>

namespace opscope::collect {
namespace {

TEST(BuildId, KnownLinkTimeId) {
  auto id = ReadGnuBuildId(OPSCOPE_BUILD_ID_FIXTURE);
  ASSERT_TRUE(id.ok()) << id.status().message();
  EXPECT_EQ(*id, OPSCOPE_BUILD_ID_FIXTURE_ID);
}

TEST(BuildId, NoteAbsent) {
  auto id = ReadGnuBuildId(OPSCOPE_BUILD_ID_NONE_FIXTURE);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), StatusCode::kNotFound);
  EXPECT_NE(id.status().message().find("no GNU build-id note"), std::string::npos)
      << id.status().message();
}

TEST(BuildId, ThisBinaryMatchesReadelf) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  ASSERT_GT(n, 0);
  self[n] = 0;
  auto id = ReadGnuBuildId(self);
  ASSERT_TRUE(id.ok()) << id.status().message();
  EXPECT_TRUE(std::regex_match(*id, std::regex("[0-9a-f]{16,}"))) << *id;
  if (access("/usr/bin/readelf", X_OK) != 0) GTEST_SKIP() << "readelf (binutils) is not installed";
  std::unique_ptr<FILE, int (*)(FILE*)> p(
      popen(("/usr/bin/readelf -n '" + std::string(self) + "' 2>/dev/null").c_str(), "r"), pclose);
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (size_t k = fread(buf, 1, sizeof(buf), p.get())) out.append(buf, k);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("Build ID: ([0-9a-f]+)"))) << out;
  EXPECT_EQ(*id, m[1].str());
}

TEST(BuildId, NotElfOrNotARegularFile) {
  const std::string dir = ::testing::TempDir();
  const std::string text = dir + "/build_id_text.txt";
  std::ofstream(text) << "#!/bin/sh\necho not elf\n";
  auto a = ReadGnuBuildId(text);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("not an ELF file"), std::string::npos);
  const std::string fifo = dir + "/build_id_fifo";
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto b = ReadGnuBuildId(fifo);  // must not block on the open
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("not a regular file"), std::string::npos);
  unlink(fifo.c_str());
  EXPECT_EQ(ReadGnuBuildId(dir + "/no/such/file").status().code(), StatusCode::kNotFound);
  unlink(text.c_str());
}

}  // namespace
}  // namespace opscope::collect
