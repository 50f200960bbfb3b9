#include "collect/perf_map.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

namespace opscope::collect {

TEST(PerfMap, ParsesFindsAndPrefersNewerEntries) {
  PerfMap m = PerfMap::Parse(
      "7f0000001000 100 jit_avx2_conv_fwd\n"
      "0x7f0000002000 0x80 brgemm kernel with spaces\n"
      "garbage line\n"
      "7f0000001040 10 newer_overlapping\n"
      "\n");
  EXPECT_EQ(m.bad_lines(), 1u);
  ASSERT_NE(m.Find(0x7f0000002010), nullptr);
  EXPECT_EQ(m.Find(0x7f0000002010)->name, "brgemm kernel with spaces");
  EXPECT_EQ(m.Find(0x7f0000002080), nullptr);
  EXPECT_EQ(m.Find(0x7f0000000fff), nullptr);
  ASSERT_NE(m.Find(0x7f0000001045), nullptr);
  EXPECT_EQ(m.Find(0x7f0000001045)->name, "newer_overlapping");
}

TEST(PerfMap, MissingFileIsAnError) { EXPECT_FALSE(PerfMap::Load("/nonexistent/perf-1.map").ok()); }

// /tmp/perf-PID.map is in a folder every user can write: a map another user planted (or could
// still change) must not put names into a profile.
TEST(PerfMap, LoadTrustedReadsOnlyMapsOfTheRecordedUser) {
  char tmpl[] = "/tmp/opscope_perfmap_XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string good = dir + "/good.map";
  auto write = [](const std::string& path, mode_t mode) {
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fprintf(f, "7f0000001000 200 jit:conv_fwd_avx2\n");
    fclose(f);
    ASSERT_EQ(chmod(path.c_str(), mode), 0);
  };
  write(good, 0644);
  const uint32_t me = geteuid();
  auto ok = PerfMap::LoadTrusted(good, me);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->size(), 1u);

  auto refused = [&](const std::string& path, uint32_t owner, const std::string& why) {
    auto r = PerfMap::LoadTrusted(path, owner);
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
  };
  // Writable by anyone: whoever wrote it, someone else may have changed it.
  const std::string open_map = dir + "/world.map";
  write(open_map, 0666);
  refused(open_map, me, "writable by other users");
  // A link (to a good map) is not followed.
  const std::string link = dir + "/link.map";
  std::filesystem::create_symlink(good, link);
  refused(link, me, "symbolic link");
  // Not a regular file (a FIFO must not block either).
  const std::string fifo = dir + "/fifo.map";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  refused(fifo, me, "not a regular file");
  // Owned by another user: as root, give the map away; otherwise expect another owner.
  if (me == 0) {
    const std::string theirs = dir + "/theirs.map";
    write(theirs, 0644);
    ASSERT_EQ(chown(theirs.c_str(), 54321, 54321), 0);
    refused(theirs, 0, "owned by uid 54321, not by the recorded process's uid 0 or root");
    // Root-owned maps are trusted for any recorded user.
    EXPECT_TRUE(PerfMap::LoadTrusted(good, 1000).ok());
  } else {
    refused(good, me + 1, "owned by uid " + std::to_string(me));
  }
  EXPECT_EQ(PerfMap::LoadTrusted(dir + "/none.map", me).status().code(), StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

}  // namespace opscope::collect
