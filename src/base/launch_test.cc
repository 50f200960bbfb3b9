// The launcher's contract, on real programs: exit statuses and signals map to one exit code,
// start and exec errors are told apart from programs that ran, and the environment changes
// reach the target.
#include "base/launch.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace opscope {
namespace {

std::string TempPath(const std::string& name) {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/opscope_launch_test_XXXXXX";
    return std::string(mkdtemp(tmpl));
  }();
  return dir + "/" + name;
}

struct Ran {
  Status start;
  TargetExit exit;
};

Ran RunArgv(std::vector<std::string> argv, LaunchOptions o = {}) {
  TargetSignals signals;
  o.argv = std::move(argv);
  Ran r;
  r.start = RunTarget(o, &signals, &r.exit);
  return r;
}

TEST(LaunchTest, ExitStatusIsTheTargets) {
  Ran r = RunArgv({"true"});
  ASSERT_TRUE(r.start.ok()) << r.start.message();
  EXPECT_EQ(r.exit.exit_code, 0);
  r = RunArgv({"false"});
  EXPECT_EQ(r.exit.exit_code, 1);
  EXPECT_EQ(TargetExitCode(r.exit.exit_code, 0), 1);
  r = RunArgv({"sh", "-c", "exit 3"});
  EXPECT_EQ(r.exit.exit_code, 3);
  EXPECT_EQ(r.exit.term_signal, 0);
  EXPECT_EQ(r.exit.Describe(), "exited with status 3");
}

TEST(LaunchTest, DeathBySignalIs128PlusTheSignal) {
  Ran r = RunArgv({"sh", "-c", "kill -SEGV $$"});
  ASSERT_TRUE(r.start.ok()) << r.start.message();
  EXPECT_EQ(r.exit.term_signal, SIGSEGV);
  EXPECT_EQ(r.exit.exit_code, 128 + SIGSEGV);
  EXPECT_EQ(TargetExitCode(r.exit.exit_code, 0), 139);
  EXPECT_NE(r.exit.Describe().find("killed by signal 11 (SIGSEGV"), std::string::npos)
      << r.exit.Describe();
  // A signal opscope received and passed on wins over the target's own status.
  EXPECT_EQ(TargetExitCode(0, SIGINT), 130);
}

TEST(LaunchTest, NotFoundIs127AndNamesTheCommand) {
  Ran r = RunArgv({"opscope-no-such-command-xyz"});
  EXPECT_EQ(r.start.code(), StatusCode::kNotFound);
  EXPECT_EQ(ExitCodeForStartError(r.start), 127);
  EXPECT_NE(r.start.message().find("command not found: 'opscope-no-such-command-xyz' (not in PATH"),
            std::string::npos)
      << r.start.message();
  r = RunArgv({"/nonexistent/dir/prog"});
  EXPECT_EQ(ExitCodeForStartError(r.start), 127);
  EXPECT_NE(r.start.message().find("'/nonexistent/dir/prog' (no such file)"), std::string::npos)
      << r.start.message();
}

TEST(LaunchTest, NotExecutableIs126WithThePath) {
  const std::string path = TempPath("plain.sh");
  std::ofstream(path) << "#!/bin/sh\necho should not run\n";
  chmod(path.c_str(), 0644);
  Ran r = RunArgv({path});
  EXPECT_EQ(r.start.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(ExitCodeForStartError(r.start), 126);
  EXPECT_NE(r.start.message().find("cannot run '" + path + "': not executable"), std::string::npos)
      << r.start.message();
  r = RunArgv({"/tmp"});
  EXPECT_EQ(ExitCodeForStartError(r.start), 126);
  EXPECT_NE(r.start.message().find("is a directory"), std::string::npos) << r.start.message();
}

TEST(LaunchTest, ExecFailureAfterForkComesBackThroughThePipe) {
  // Executable, but what its #! line names does not exist: exec fails with ENOENT after the fork;
  // the error must not look like a program that ran and exited 127.
  const std::string path = TempPath("bad_interp.sh");
  std::ofstream(path) << "#!/nonexistent/interpreter\necho should not run\n";
  chmod(path.c_str(), 0755);
  Ran r = RunArgv({path});
  EXPECT_EQ(r.start.code(), StatusCode::kInvalidArgument) << r.start.message();
  EXPECT_EQ(ExitCodeForStartError(r.start), 126);
  EXPECT_NE(r.start.message().find("cannot run '" + path + "': its #! interpreter"),
            std::string::npos)
      << r.start.message();
}

TEST(LaunchTest, ScriptWithoutShebangRunsWithSh) {
  // As execvp: the kernel refuses it (ENOEXEC), /bin/sh runs it, with the arguments.
  const std::string path = TempPath("plain_script");
  const std::string out = TempPath("plain_script.out");
  std::ofstream(path) << "echo \"$1\" > " << out << "\nexit 4\n";
  chmod(path.c_str(), 0755);
  Ran r = RunArgv({path, "arg1"});
  ASSERT_TRUE(r.start.ok()) << r.start.message();
  EXPECT_EQ(r.exit.exit_code, 4);
  std::stringstream ss;
  ss << std::ifstream(out).rdbuf();
  EXPECT_EQ(ss.str(), "arg1\n");
}

TEST(LaunchTest, EnvironmentChangesAndPreloadReachTheTarget) {
  setenv("OPSCOPE_LAUNCH_TEST_KEEP", "kept", 1);
  setenv("OPSCOPE_LAUNCH_TEST_DROP", "dropped", 1);
  setenv("OPSCOPE_LAUNCH_TEST_SET", "old", 1);
  setenv("LD_PRELOAD", "", 1);
  const std::string out = TempPath("env.txt");
  LaunchOptions o;
  o.set_env = {{"OPSCOPE_LAUNCH_TEST_SET", "new"}};
  o.unset_env = {"OPSCOPE_LAUNCH_TEST_DROP"};
  // A preload that does not exist only makes ld.so print a warning; the variable is what we test.
  o.preload = {"/nonexistent/libfirst.so"};
  Ran r = RunArgv({"sh", "-c", "env > " + out}, o);
  ASSERT_TRUE(r.start.ok()) << r.start.message();
  std::stringstream ss;
  ss << std::ifstream(out).rdbuf();
  const std::string env = ss.str();
  EXPECT_NE(env.find("OPSCOPE_LAUNCH_TEST_KEEP=kept\n"), std::string::npos) << env;
  EXPECT_EQ(env.find("OPSCOPE_LAUNCH_TEST_DROP"), std::string::npos) << env;
  EXPECT_NE(env.find("OPSCOPE_LAUNCH_TEST_SET=new\n"), std::string::npos) << env;
  EXPECT_EQ(env.find("OPSCOPE_LAUNCH_TEST_SET=old"), std::string::npos) << env;
  EXPECT_NE(env.find("LD_PRELOAD=/nonexistent/libfirst.so\n"), std::string::npos) << env;
  unsetenv("LD_PRELOAD");
}

TEST(LaunchTest, TargetWaitsForGoAndGetsItsOwnProcessGroup) {
  TargetSignals signals;
  const std::string marker = TempPath("started");
  LaunchOptions o;
  o.argv = {"sh", "-c", "touch " + marker};
  auto t = LaunchedTarget::Start(o, &signals);
  ASSERT_TRUE(t.ok()) << t.status().message();
  usleep(50 * 1000);
  EXPECT_NE(access(marker.c_str(), F_OK), 0) << "the target must not run before Go()";
  EXPECT_EQ(getpgid(t->pid()), t->pid());
  ASSERT_TRUE(t->Go().ok());
  EXPECT_EQ(t->Wait().exit_code, 0);
  EXPECT_EQ(access(marker.c_str(), F_OK), 0);
}

TEST(LaunchTest, AbandonedTargetNeverRuns) {
  TargetSignals signals;
  const std::string marker = TempPath("never");
  LaunchOptions o;
  o.argv = {"sh", "-c", "touch " + marker};
  {
    auto t = LaunchedTarget::Start(o, &signals);
    ASSERT_TRUE(t.ok());
    t->Abandon();
  }
  {
    auto t = LaunchedTarget::Start(o, &signals);  // destroyed without Go(): abandoned too
    ASSERT_TRUE(t.ok());
  }
  EXPECT_NE(access(marker.c_str(), F_OK), 0);
}

TEST(LaunchTest, StdoutToStderr) {
  const std::string err = TempPath("stderr.txt");
  // The test's own stderr is redirected around the run.
  fflush(stderr);
  const int saved = dup(2);
  FILE* f = std::fopen(err.c_str(), "w");
  dup2(fileno(f), 2);
  LaunchOptions o;
  o.stdout_to_stderr = true;
  Ran r = RunArgv({"echo", "to-stderr"}, o);
  dup2(saved, 2);
  close(saved);
  std::fclose(f);
  ASSERT_TRUE(r.start.ok());
  std::stringstream ss;
  ss << std::ifstream(err).rdbuf();
  EXPECT_EQ(ss.str(), "to-stderr\n");
}

}  // namespace
}  // namespace opscope
