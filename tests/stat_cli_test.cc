// `opscope stat` end to end: the real binary, real programs with known counts.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "base/strings.h"
#include "profile/profile_io.h"
#include "tests/cli_util.h"

namespace opscope {
namespace {

using Result = testing::CommandResult;

// Runs `opscope ARGS` through sh, capturing stdout and stderr.
Result Opscope(const std::string& args) {
  return testing::RunShell(testing::OpscopeBinary() + " " + args);
}

// event -> mean, from `-x,` output.
std::map<std::string, double> ParseSeparated(const std::string& text) {
  std::map<std::string, double> m;
  for (const std::string& line : Split(text, '\n', true)) {
    auto f = Split(line, ',');
    double v;
    if (f.size() >= 3 && ParseDouble(f[0], &v)) m[f[2]] = v;
  }
  return m;
}

TEST(StatCliTest, CountsThreadsOfTheCommand) {
  const std::string csv = testing::TempDir() + "/faults.csv";
  Result r =
      Opscope("stat -e page-faults,task-clock -o " + csv + " -- " STAT_WORKLOAD " faults 3000 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto m = ParseSeparated(testing::ReadAll(csv));
  EXPECT_GE(m["page-faults"], 6000) << testing::ReadAll(csv);
  EXPECT_GT(m["task-clock"], 0);
  EXPECT_NE(r.err.find("Performance counter stats for"), std::string::npos) << "table on stderr";
}

TEST(StatCliTest, CountsChildProcesses) {
  Result r = Opscope("stat -x, -e page-faults -- " STAT_WORKLOAD " fork-faults 4000");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(ParseSeparated(r.err)["page-faults"], 4000) << r.err;
}

TEST(StatCliTest, PassesArgumentsAndLeavesStdoutAlone) {
  Result r = Opscope("stat -e task-clock -- sh -c 'echo hello; echo \"$1\"' sh -l");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "hello\n-l\n");
}

TEST(StatCliTest, ExitStatusAndSignals) {
  EXPECT_EQ(Opscope("stat -e task-clock -- sh -c 'exit 5'").exit_code, 5);
  Result r = Opscope("stat -e task-clock,page-faults -- sh -c 'kill -TERM $$'");
  EXPECT_EQ(r.exit_code, 128 + 15);
  EXPECT_NE(r.err.find("terminated by signal SIGTERM"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("page-faults"), std::string::npos) << "counts still reported";
}

TEST(StatCliTest, CommandNotFoundAndNotExecutable) {
  Result r = Opscope("stat -- opscope-no-such-command-xyz");
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.err.find("command not found"), std::string::npos) << r.err;
  const std::string noexec = testing::TempDir() + "/noexec.sh";
  std::ofstream(noexec) << "#!/bin/sh\necho should not run\n";
  chmod(noexec.c_str(), 0644);
  r = Opscope("stat -- " + noexec);
  EXPECT_EQ(r.exit_code, 126);
  EXPECT_NE(r.err.find("not executable"), std::string::npos) << r.err;
  r = Opscope("stat");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no command given"), std::string::npos) << r.err;
}

TEST(StatCliTest, BadEventIsAOneLineError) {
  Result r = Opscope("stat -e cycles,bogus-event -- true");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown event 'bogus-event'"), std::string::npos) << r.err;
}

// -C names CPUs as written: 2^32 does not wrap onto CPU 0, and an empty list is an empty list,
// not "no command given".
TEST(StatCliTest, CpuListsAreCheckedAsWritten) {
  for (const char* cpus : {"4294967296", "0-4294967296", "-1"}) {
    Result r =
        testing::RunCommand({testing::OpscopeBinary(), "stat", "-C", cpus, "--duration", "0.1"});
    EXPECT_EQ(r.exit_code, 2) << cpus << ": " << r.err;
    EXPECT_NE(r.err.find(std::string("-C '") + cpus + "'"), std::string::npos) << r.err;
  }
  for (const char* flag : {"-C", "-p", "-t"}) {
    for (const char* cmd : {"stat", "record"}) {
      Result r =
          testing::RunCommand({testing::OpscopeBinary(), cmd, flag, "", "--duration", "0.1"});
      EXPECT_EQ(r.exit_code, 2) << cmd << " " << flag << ": " << r.err;
      EXPECT_EQ(r.err.find("no command given"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("empty"), std::string::npos) << r.err;
    }
  }
}

TEST(StatCliTest, RepeatedRunsToAProfileFile) {
  const std::string path = testing::TempDir() + "/stat.json";
  Result r = Opscope("stat -r 4 -o " + path + " -- " STAT_WORKLOAD " faults 500 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto p = profile::LoadProfile(path);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->meta.kind, "stat");
  ASSERT_TRUE(p->stat.has_value());
  EXPECT_EQ(p->stat->runs.size(), 4u);
  ASSERT_TRUE(p->stat->summary.count("page-faults"));
  EXPECT_EQ(p->stat->summary.at("page-faults").n, 4);
  EXPECT_GE(p->stat->summary.at("page-faults").min, 500);
  EXPECT_FALSE(p->stat->verdict.empty());
  // Whatever this machine lacks is said in the profile, the same way as on stderr.
  EXPECT_EQ(p->meta.degradations, p->stat->degradations);
  for (const std::string& d : p->meta.degradations)
    EXPECT_NE(r.err.find(d), std::string::npos) << d;
  EXPECT_NE(r.err.find("trimmed mean"), std::string::npos) << r.err;
  // Counter totals have no timeline: a Chrome trace of them is refused with the reason, not
  // written as `"traceEvents": []` next to a "wrote" line; the other outputs still are.
  const std::string trace = testing::TempDir() + "/stat.trace.json",
                    txt = testing::TempDir() + "/stat.txt";
  Result t = Opscope("report " + path + " -o " + trace + " -o " + txt);
  EXPECT_EQ(t.exit_code, 2) << t.err;
  EXPECT_NE(t.err.find("nothing to draw: this stat profile has no timed events"), std::string::npos)
      << t.err;
  EXPECT_EQ(t.err.find("wrote " + trace), std::string::npos) << t.err;
  EXPECT_NE(t.err.find("wrote " + txt), std::string::npos) << t.err;
  EXPECT_NE(access(txt.c_str(), F_OK), -1);
  EXPECT_EQ(access(trace.c_str(), F_OK), -1) << "no empty trace left behind";
}

TEST(StatCliTest, JsonOnStderr) {
  Result r = Opscope("stat --json -e task-clock -- true");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto p = profile::FromJsonString(r.err, "stderr");
  ASSERT_TRUE(p.ok()) << p.status().message() << "\n" << r.err;
  EXPECT_EQ(p->stat->command, std::vector<std::string>{"true"});
}

// The real kernel's paranoid=2 refusal and the user-only rung, as an unprivileged user.
TEST(StatCliTest, UnprivilegedUnderParanoid2CountsUserSpaceOnly) {
  const std::string paranoid = testing::ReadAll("/proc/sys/kernel/perf_event_paranoid");
  if (geteuid() != 0 || std::system("command -v setpriv >/dev/null 2>&1") != 0 ||
      Trim(paranoid) != "2")
    GTEST_SKIP() << "needs root (to drop to nobody), setpriv, and kernel.perf_event_paranoid=2";
  // nobody may not be able to read the build tree: run a copy from the temp dir.
  const std::string bin = testing::TempDir() + "/opscope";
  ASSERT_EQ(std::system(("cp " + std::string(OPSCOPE_BINARY_DIR) + "/opscope " + bin +
                         " && chmod 755 " + testing::TempDir() + " " + bin)
                            .c_str()),
            0);
  const std::string out = testing::TempDir() + "/nobody.err";
  int status = std::system(("setpriv --reuid=65534 --regid=65534 --clear-groups " + bin +
                            " stat -e task-clock,page-faults -- true 2>" + out)
                               .c_str());
  ASSERT_TRUE(WIFEXITED(status));
  const std::string err = testing::ReadAll(out);
  EXPECT_EQ(WEXITSTATUS(status), 0) << err;
  EXPECT_NE(err.find("counting user space only"), std::string::npos) << err;
  EXPECT_NE(err.find("page-faults"), std::string::npos) << err;
}

}  // namespace
}  // namespace opscope

namespace opscope {
namespace {

// Measurement hygiene: a target built with -O0 is called out (debug-build rule), one built with
// -O2 is not.
TEST(StatCliTest, DebugBuiltTargetIsCalledOut) {
  Result debug = Opscope("stat -- " OPSCOPE_BINARY_DIR "/tests/bin/run_target_O0");
  EXPECT_EQ(debug.exit_code, 0) << debug.err;
  EXPECT_NE(debug.err.find("debug-build"), std::string::npos) << debug.err;
  EXPECT_NE(debug.err.find("-O0"), std::string::npos) << debug.err;
  Result release = Opscope("stat -- " OPSCOPE_BINARY_DIR "/tests/bin/run_target_O2");
  EXPECT_EQ(release.exit_code, 0) << release.err;
  EXPECT_EQ(release.err.find("[critical] debug-build"), std::string::npos) << release.err;
}

}  // namespace
}  // namespace opscope

namespace opscope {
namespace {

// Signals sent to opscope while the command runs: forwarded to the command's process group,
// waited for, the counts printed and written, and opscope exits with 128+signal. The command
// writes its pid and then a "ready" file, and waits (a bounded sleep, so a broken opscope fails
// the test instead of hanging it).
struct SignalledStat {
  int exit_code = -1;
  std::string err;
  std::string json;  // what -o wrote
  bool target_alive = false;
};

// `to_target_group`: the signal goes to the command's own process group and not to opscope, as
// a terminal's Ctrl-C does while opscope has handed the terminal to the command.
SignalledStat StatAndSignal(const std::string& name, int sig, bool whole_group,
                            bool to_target_group = false) {
  const std::string dir = testing::TempDir() + "/" + name;
  mkdir(dir.c_str(), 0755);
  const std::string ready = dir + "/ready", pidfile = dir + "/pid", out = dir + "/stat.json";
  int pid = testing::StartInOwnGroup(
      {testing::OpscopeBinary(), "stat", "-e", "task-clock,page-faults", "-o", out, "--", "sh",
       "-c", "echo $$ > " + pidfile + " && touch " + ready + " && exec sleep 20"},
      dir + "/out.txt", dir + "/err.txt");
  SignalledStat s;
  EXPECT_GT(pid, 0);
  EXPECT_TRUE(testing::WaitForFile(ready));
  int64_t target = 0;
  if (to_target_group) {
    EXPECT_TRUE(ParseInt64(Trim(testing::ReadAll(pidfile)), &target) && target > 0);
    kill(-static_cast<pid_t>(target), sig);
  } else {
    kill(whole_group ? -pid : pid, sig);
  }
  s.exit_code = testing::WaitForExit(pid, 10);
  s.err = testing::ReadAll(dir + "/err.txt");
  s.json = testing::ReadAll(out);
  if (ParseInt64(Trim(testing::ReadAll(pidfile)), &target) && target > 0) {
    s.target_alive = kill(static_cast<pid_t>(target), 0) == 0;
    if (s.target_alive) kill(static_cast<pid_t>(target), SIGKILL);
  }
  return s;
}

TEST(StatCliTest, SigtermToOpscopeStopsTheCommandAndReportsWhatWasCounted) {
  SignalledStat s = StatAndSignal("sigterm", SIGTERM, false);
  EXPECT_EQ(s.exit_code, 128 + SIGTERM) << s.err;
  EXPECT_NE(s.err.find("received SIGTERM"), std::string::npos) << s.err;
  EXPECT_NE(s.err.find("task-clock"), std::string::npos) << "the table is printed\n" << s.err;
  EXPECT_NE(s.json.find("\"stat\""), std::string::npos) << "-o is written";
  EXPECT_FALSE(s.target_alive) << "the command must not outlive opscope";
}

TEST(StatCliTest, SighupToOpscopeIsForwardedToo) {
  SignalledStat s = StatAndSignal("sighup", SIGHUP, false);
  EXPECT_EQ(s.exit_code, 128 + SIGHUP) << s.err;
  EXPECT_NE(s.json.find("\"stat\""), std::string::npos) << s.err;
  EXPECT_FALSE(s.target_alive);
}

TEST(StatCliTest, SigintToOpscopesPidAloneStopsIt) {
  // A supervisor or script signals opscope only: it must not wait for the command forever.
  SignalledStat s = StatAndSignal("sigint_pid", SIGINT, false);
  EXPECT_EQ(s.exit_code, 128 + SIGINT) << s.err;
  EXPECT_NE(s.json.find("\"stat\""), std::string::npos) << s.err;
  EXPECT_FALSE(s.target_alive);
}

TEST(StatCliTest, TerminalCtrlCThatReachesOnlyTheCommandStillExits130) {
  SignalledStat s = StatAndSignal("sigint_target_group", SIGINT, false, true);
  EXPECT_EQ(s.exit_code, 128 + SIGINT) << s.err;
  EXPECT_NE(s.err.find("terminated by signal SIGINT"), std::string::npos) << s.err;
  EXPECT_NE(s.json.find("\"stat\""), std::string::npos) << s.err;
}

TEST(StatCliTest, CtrlCToTheWholeGroupReportsWhatWasCounted) {
  SignalledStat s = StatAndSignal("sigint_group", SIGINT, true);
  EXPECT_EQ(s.exit_code, 128 + SIGINT) << s.err;
  EXPECT_NE(s.err.find("task-clock"), std::string::npos) << s.err;
  EXPECT_NE(s.json.find("\"stat\""), std::string::npos) << s.err;
  EXPECT_FALSE(s.target_alive);
}

}  // namespace
}  // namespace opscope

namespace opscope {
namespace {

// On a terminal, the command runs in a process group of its own that is handed the terminal, so
// an interactive command can still read it (a background group would be stopped by SIGTTIN).
TEST(StatCliTest, CommandCanReadTheTerminal) {
  if (testing::RunShell("command -v script").exit_code != 0) GTEST_SKIP() << "no script(1)";
  Result r =
      testing::RunShell("printf 'hello\\n' | timeout 20 script -qec \"" + testing::OpscopeBinary() +
                        " stat -e task-clock -- sh -c 'read x && echo got-\\$x'\" /dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("got-hello"), std::string::npos) << r.out << r.err;
}

// `stat -x,` is read by scripts written for `perf stat -x,`: the same columns, units and metric
// names, line for line, as the perf on this machine writes for the same events.
TEST(StatCliTest, SeparatedValuesMatchPerfColumns) {
  Result perf = testing::RunShell("perf stat -x, -r 2 -e task-clock,page-faults true");
  if (perf.exit_code != 0 || perf.err.find("task-clock") == std::string::npos)
    GTEST_SKIP() << "perf stat does not work here: " << perf.err;
  Result ours = Opscope("stat -x, -r 2 -e task-clock,page-faults -- true");
  ASSERT_EQ(ours.exit_code, 0) << ours.err;
  auto lines = [](const std::string& text) {
    std::vector<std::vector<std::string>> out;
    for (const std::string& line : Split(text, '\n', true))
      if (line.find(",task-clock,") != std::string::npos ||
          line.find(",page-faults,") != std::string::npos)
        out.push_back(Split(line, ','));
    return out;
  };
  auto p = lines(perf.err), o = lines(ours.err);
  ASSERT_EQ(p.size(), 2u) << perf.err;
  ASSERT_EQ(o.size(), 2u) << ours.err;
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_EQ(o[i].size(), p[i].size()) << ours.err << "\nperf:\n" << perf.err;
    for (size_t c : {1, 2, 7})
      EXPECT_EQ(o[i][c], p[i][c]) << "column " << c;  // unit, event, metric unit
    EXPECT_TRUE(o[i][3].ends_with("%")) << "variance column with -r: " << o[i][3];
    double v;
    for (size_t c : {0, 4, 5, 6})
      EXPECT_TRUE(ParseDouble(o[i][c], &v)) << "column " << c << ": " << o[i][c];
  }
}

}  // namespace
}  // namespace opscope
