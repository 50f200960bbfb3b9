#include "collect/counter_run.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "collect/perf_skip_testing.h"

namespace opscope::collect {
namespace {

std::vector<EventSpec> SoftwareEvents() {
  return *ParseEventList("task-clock,page-faults,context-switches,cpu-migrations");
}

double Value(const profile::StatRun& run, const std::string& event) {
  for (const auto& c : run.counters)
    if (c.event == event) return c.value;
  return -1;
}

TEST(RunCountedTest, CountsAndPassesExitStatus) {
  OPSCOPE_SKIP_WITHOUT_PERF_EVENTS();
  auto r = RunCounted({"sh", "-c", "exit 3"}, SoftwareEvents(), SystemOpener());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->exec_error.ok());
  EXPECT_EQ(r->run.exit_code, 3);
  EXPECT_EQ(r->run.term_signal, 0);
  EXPECT_GT(Value(r->run, "task-clock"), 0);
  EXPECT_GT(Value(r->run, "page-faults"), 0);
  EXPECT_GT(r->run.wall_ms, 0);
}

TEST(RunCountedTest, ChildrenOfTheCommandAreCounted) {
  OPSCOPE_SKIP_WITHOUT_PERF_EVENTS();
  // dd touches its 16 MiB buffer: >= 4096 page faults, in a child of sh (`; true` keeps sh from
  // exec'ing dd in place).
  auto big =
      RunCounted({"sh", "-c", "dd if=/dev/zero of=/dev/null bs=16M count=1 2>/dev/null; true"},
                 SoftwareEvents(), SystemOpener());
  auto small =
      RunCounted({"sh", "-c", "dd if=/dev/zero of=/dev/null bs=1k count=1 2>/dev/null; true"},
                 SoftwareEvents(), SystemOpener());
  ASSERT_TRUE(big.ok() && small.ok());
  EXPECT_GE(Value(big->run, "page-faults") - Value(small->run, "page-faults"), 2000);
}

TEST(RunCountedTest, SignalIsReportedWithCounts) {
  OPSCOPE_SKIP_WITHOUT_PERF_EVENTS();
  auto r = RunCounted({"sh", "-c", "kill -SEGV $$"}, SoftwareEvents(), SystemOpener());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->run.term_signal, SIGSEGV);
  EXPECT_EQ(r->run.exit_code, 128 + SIGSEGV);
  EXPECT_NE(r->run.note.find("SIGSEGV"), std::string::npos);
  EXPECT_GT(Value(r->run, "task-clock"), 0);
}

TEST(RunCountedTest, CommandNotFound) {
  auto r = RunCounted({"opscope-no-such-command-xyz"}, SoftwareEvents(), SystemOpener());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exec_error.code(), StatusCode::kNotFound);
  EXPECT_NE(r->exec_error.message().find("command not found"), std::string::npos);
  EXPECT_EQ(r->run.exit_code, 127);
  r = RunCounted({"/nonexistent/dir/cmd"}, SoftwareEvents(), SystemOpener());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exec_error.code(), StatusCode::kNotFound);
}

TEST(RunCountedTest, NotExecutable) {
  char path[] = "/tmp/opscope_stat_noexec_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  (void)!write(fd, "#!/bin/sh\n", 10);
  close(fd);
  chmod(path, 0644);
  auto r = RunCounted({path}, SoftwareEvents(), SystemOpener());
  unlink(path);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exec_error.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(r->exec_error.message().find("not executable"), std::string::npos);
  EXPECT_EQ(r->run.exit_code, 126);
}

TEST(RunCountedTest, PermissionErrorDoesNotRunTheCommand) {
  RecordingPerfEventOpener fake;
  fake.paranoid = 3;
  fake.privileged = false;
  char marker[] = "/tmp/opscope_stat_marker_XXXXXX";
  int fd = mkstemp(marker);
  close(fd);
  unlink(marker);
  auto r = RunCounted({"sh", "-c", std::string("touch ") + marker}, SoftwareEvents(), fake);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(access(marker, F_OK), 0) << "the command ran although counting failed";
}

TEST(RunCountedTest, NoPmuFallbackIsRecorded) {
  OPSCOPE_SKIP_WITHOUT_PERF_EVENTS();
  // On a machine without a PMU the real kernel refuses cycles; with one it counts them. Either
  // way the run succeeds and, when it fell back, says so.
  auto r = RunCounted({"true"}, *ParseEventList("cycles,task-clock"), SystemOpener());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& c = r->run.counters[0];
  EXPECT_TRUE(c.supported);
  if (c.event == "cpu-clock") {
    EXPECT_EQ(c.requested, "cycles");
    ASSERT_FALSE(r->degradations.empty());
  } else {
    EXPECT_EQ(c.event, "cycles");
  }
}

}  // namespace
}  // namespace opscope::collect
