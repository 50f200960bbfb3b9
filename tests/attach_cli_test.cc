// `stat` and `record` attached to programs opscope did not start (-p, -t, -a, -C, --duration,
// stopping by signal), on real processes: a busy two-thread program (record_split_fp) and a
// shell loop.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli_util.h"

namespace opscope {
namespace {

const std::string kTests = std::string(OPSCOPE_BINARY_DIR) + "/tests";

std::string Opscope() { return testing::OpscopeBinary(); }

// A program to attach to, killed (and reaped) when the test is done with it.
struct Target {
  pid_t pid = -1;
  explicit Target(const std::vector<std::string>& argv, const std::string& name) {
    const std::string dir = testing::TempDir();
    pid = testing::StartInOwnGroup(argv, dir + "/" + name + ".out", dir + "/" + name + ".err");
    usleep(200 * 1000);  // let it start its threads
  }
  ~Target() {
    if (pid > 0) {
      kill(-pid, SIGKILL);
      testing::WaitForExit(pid, 10);
    }
  }
  bool alive() const { return kill(pid, 0) == 0; }
};

nlohmann::json LoadJson(const std::string& path) {
  const std::string text = testing::ReadAll(path);
  return nlohmann::json::parse(text, nullptr, false);
}

TEST(AttachCli, StatPidCountsEachThreadWithItsName) {
  Target t({kTests + "/record_split_fp", "20000"}, "split_stat");
  const std::string out = testing::TempDir() + "/stat_p.json";
  auto r = testing::RunShell(Opscope() + " stat -e task-clock,context-switches -p " +
                             std::to_string(t.pid) + " --duration 0.5 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("Performance counter stats for 'pid " + std::to_string(t.pid) +
                       " (record_split_f"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("Per thread:"), std::string::npos) << r.err;
  EXPECT_TRUE(t.alive()) << "an attached process is not signalled";
  auto j = LoadJson(out);
  ASSERT_TRUE(j.is_object()) << testing::ReadAll(out);
  const auto& run = j["stat"]["runs"][0];
  ASSERT_GE(run["tasks"].size(), 2u) << "the main thread and a worker";
  double sum = 0;
  for (const auto& task : run["tasks"]) {
    EXPECT_EQ(task["pid"], t.pid);
    EXPECT_FALSE(task["comm"].get<std::string>().empty());
    sum += task["counters"][0]["value"].get<double>();
  }
  const double total = run["counters"][0]["value"];
  EXPECT_NEAR(sum, total, 1e-6 * std::max(1.0, total)) << "the run's counts are the threads' sums";
  EXPECT_GT(total, 0.0) << "busy threads were counted\n" << run.dump();
  EXPECT_EQ(j["stat"]["attached"].get<std::string>().find("pid " + std::to_string(t.pid)), 0u);
}

TEST(AttachCli, StatStopsWhenTheProcessExits) {
  Target t({"/bin/sh", "-c", "sleep 1.5"}, "short");
  auto r = testing::RunShell(Opscope() + " stat -e task-clock -p " + std::to_string(t.pid));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("task-clock"), std::string::npos) << r.err;
}

TEST(AttachCli, SigintToOpscopeStopsTheCountAndLeavesTheProcessRunning) {
  Target t({"/bin/sh", "-c", "while :; do :; done"}, "loop");
  const std::string dir = testing::TempDir() + "/attach_sigint";
  mkdir(dir.c_str(), 0755);
  const std::string out = dir + "/stat.json";
  int pid = testing::StartInOwnGroup(
      {Opscope(), "stat", "-e", "task-clock", "-p", std::to_string(t.pid), "-o", out},
      dir + "/out.txt", dir + "/err.txt");
  ASSERT_GT(pid, 0);
  usleep(400 * 1000);
  kill(pid, SIGINT);
  EXPECT_EQ(testing::WaitForExit(pid, 10), 0) << testing::ReadAll(dir + "/err.txt");
  EXPECT_NE(testing::ReadAll(dir + "/err.txt").find("received SIGINT: stopped counting"),
            std::string::npos);
  EXPECT_TRUE(LoadJson(out).is_object());
  EXPECT_TRUE(t.alive());
}

TEST(AttachCli, RecordPidSamplesTheRunningThreadsByName) {
  Target t({kTests + "/record_split_fp", "20000"}, "split_rec");
  const std::string rec = testing::TempDir() + "/attach.rec";
  auto r = testing::RunShell(Opscope() + " record -p " + std::to_string(t.pid) +
                             " --duration 1 -o " + rec + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("attached for 1 s (--duration)"), std::string::npos) << r.out;
  EXPECT_TRUE(t.alive());
  auto rep = testing::RunShell(Opscope() + " report " + rec + " --group thread");
  ASSERT_EQ(rep.exit_code, 0) << rep.out << rep.err;
  EXPECT_NE(rep.out.find("[" + std::to_string(t.pid)), std::string::npos) << rep.out;
  // The threads' code is symbolized from mappings that existed before opscope came.
  auto fn = testing::RunShell(Opscope() + " report " + rec);
  EXPECT_NE(fn.out.find("heavy"), std::string::npos) << fn.out;
}

TEST(AttachCli, RecordSystemWideOnOneCpu) {
  Target t({kTests + "/record_split_fp", "20000"}, "split_sys");
  const std::string rec = testing::TempDir() + "/system.rec";
  auto r = testing::RunShell(Opscope() + " record -C 0 --duration 0.5 -o " + rec + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("system-wide (CPUs 0)"), std::string::npos) << r.out;
  auto rep = testing::RunShell(Opscope() + " report " + rec + " --group thread");
  EXPECT_EQ(rep.exit_code, 0) << rep.out << rep.err;
}

TEST(AttachCli, BadAttachRequestsAreOneLineUsageErrors) {
  auto r = testing::RunShell(Opscope() + " stat -p 0x12");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-p '0x12': expected process or thread ids"), std::string::npos) << r.err;
  r = testing::RunShell(Opscope() + " record -p 4194000 -o /dev/null");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no process 4194000"), std::string::npos) << r.err;
  r = testing::RunShell(Opscope() + " stat -p 1 -- true");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not both"), std::string::npos) << r.err;
  r = testing::RunShell(Opscope() + " stat -C 99999 --duration 0.1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is not online"), std::string::npos) << r.err;
  r = testing::RunShell(Opscope() + " stat --duration 1 -- true");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--duration applies to -p/-t/-a/-C"), std::string::npos) << r.err;
  r = testing::RunShell(Opscope() + " stat -a -p 1");
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace opscope
