// End-to-end tests of `opscope run -p PID` (collect/range_attach.h, the recorder's attach mode in
// collect/ranges_recorder.h): attaching twice to one program, the program exiting while attached,
// Ctrl-C, requests the recorder must not obey, and programs that cannot be attached to.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "diag_cli_util.h"
#include "profile/attached.h"
#include "profile/profile_io.h"

namespace opscope {
namespace {

using testing::Opscope;
using testing::RunShell;

std::string Tmp() { return testing::PerTestTempDir("opscope_run_attach_cli"); }
std::string Bin(const std::string& name) {
  return std::string(OPSCOPE_BINARY_DIR) + "/tests/bin/" + name;
}
std::string Lib(const std::string& name) {
  return std::string(OPSCOPE_BINARY_DIR) + "/lib/" + name;
}
bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

int Count(const profile::Profile& p, const std::string& name) {
  int n = 0;
  for (const auto& r : p.ranges) n += r.name == name;
  return n;
}
bool HasDegradation(const profile::Profile& p, const std::string& part) {
  for (const auto& d : p.meta.degradations)
    if (d.find(part) != std::string::npos) return true;
  return false;
}

// tests/run_attach_app, started with the recorder preloaded (attachable unless told otherwise);
// it runs until `exit_file` exists.
// Its attach folder is /tmp (OPSCOPE_ATTACH_DIR and XDG_RUNTIME_DIR unset) unless `env` sets them;
// `prefix` runs before it (e.g. `unshare`).
struct App {
  int pid = -1;
  std::string dir, exit_file, err_file;
  std::string base = "/tmp";  // where its channels are
  explicit App(const std::string& d, bool attachable = true, const std::string& gate = "",
               bool nvtx = false, const std::vector<std::string>& env = {},
               const std::vector<std::string>& prefix = {}, const std::string& preload = "")
      : dir(d) {
    const std::string ready = dir + "/ready";
    exit_file = dir + "/exit";
    err_file = dir + "/app.err";
    unlink(ready.c_str());
    unlink(exit_file.c_str());
    std::vector<std::string> argv = prefix;
    for (const auto& a :
         {std::string("/usr/bin/env"), std::string("-u"), std::string("OPSCOPE_ATTACH_DIR"),
          std::string("-u"), std::string("XDG_RUNTIME_DIR"),
          "LD_PRELOAD=" + (preload.empty() ? Lib("libopscope_ranges_rt.so") : preload)})
      argv.push_back(a);
    for (const auto& e : env) argv.push_back(e);
    if (attachable) argv.push_back("OPSCOPE_ATTACHABLE=1");
    if (nvtx) argv.push_back("NVTX_INJECTION64_PATH=" + Lib("libopscope_ranges_nvtx.so"));
    for (const auto& a : {Bin(nvtx ? "run_attach_nvtx_app" : "run_attach_app"), ready, exit_file})
      argv.push_back(a);
    if (!gate.empty()) argv.push_back(gate);
    pid = testing::StartInOwnGroup(argv, dir + "/app.out", err_file);
    EXPECT_GT(pid, 0);
    EXPECT_TRUE(testing::WaitForFile(ready));
  }
  // Tells the program to exit and returns its status.
  int Finish() {
    std::ofstream(exit_file) << "";
    const int status = testing::WaitForExit(pid, 30);
    pid = -1;
    return status;
  }
  ~App() {
    if (pid > 0) Finish();
  }
  std::string Channel(const std::string& source = "annotate") const {
    return base + "/opscope-attach-" + std::to_string(pid) + "-" + source;
  }
};

profile::Profile Load(const std::string& path) {
  auto p = profile::LoadProfile(path);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? *p : profile::Profile{};
}

TEST(RunAttachCli, AttachesTwiceInARowAndTheProgramKeepsRunning) {
  const std::string dir = Tmp();
  App app(dir);
  ASSERT_TRUE(Exists(app.Channel())) << testing::ReadAll(app.err_file);
  std::vector<profile::Profile> profiles;
  for (int i = 0; i < 2; ++i) {
    const std::string json = dir + "/attach" + std::to_string(i) + ".json";
    auto r =
        RunShell(Opscope() + " run -p " + std::to_string(app.pid) + " --duration 0.3 -o " + json);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("attached to pid " + std::to_string(app.pid) + " (run_attach_app)"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.out.find("frame"), std::string::npos) << "the table is printed\n" << r.out;
    profiles.push_back(Load(json));
    const auto& p = profiles.back();
    EXPECT_EQ(p.meta.kind, "run");
    EXPECT_EQ(p.meta.runs, 1);
    ASSERT_EQ(p.e2e.runs_ms.size(), 1u);
    EXPECT_GT(Count(p, "frame"), 2) << r.err;
    EXPECT_EQ(Count(p, "last"), 0);
    // "work" nests in "frame" on every frame (a frame open at attach is dropped whole).
    for (const auto& w : p.ranges)
      if (w.name == "work") {
        ASSERT_GE(w.parent, 0);
        EXPECT_EQ(p.ranges[w.parent].name, "frame");
      }
  }
  // The second session starts empty: nothing from the first one is reported again.
  int64_t first_end = 0, second_start = INT64_MAX;
  for (const auto& r : profiles[0].ranges) first_end = std::max(first_end, r.end_ns);
  for (const auto& r : profiles[1].ranges) second_start = std::min(second_start, r.start_ns);
  EXPECT_LT(first_end, second_start);
  EXPECT_EQ(app.Finish(), 0);
  EXPECT_FALSE(Exists(app.Channel())) << "the channel is removed at exit";
  EXPECT_EQ(testing::ReadAll(app.err_file), "") << "attaching is silent in the program";
}

// NVTX frames (libopscope_ranges_nvtx.so's channel) around annotate.h work (the runtime's):
// both recorders are attached and detached together, and their ranges nest.
TEST(RunAttachCli, NvtxAndAnnotateRecordersAreAttachedTogether) {
  if (access(Bin("run_attach_nvtx_app").c_str(), X_OK) != 0)
    GTEST_SKIP() << "built without the NVTX v3 headers";
  const std::string dir = Tmp();
  App app(dir, true, "", /*nvtx=*/true);
  const std::string nvtx_channel = "/tmp/opscope-attach-" + std::to_string(app.pid) + "-nvtx";
  ASSERT_TRUE(Exists(nvtx_channel)) << testing::ReadAll(app.err_file);
  const std::string json = dir + "/nvtx.json";
  auto r =
      RunShell(Opscope() + " run -p " + std::to_string(app.pid) + " --duration 0.3 -o " + json);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  profile::Profile p = Load(json);
  int frames = 0, nested = 0;
  for (const auto& x : p.ranges) {
    if (x.name == "frame") {
      ++frames;
      EXPECT_EQ(x.domain, "nvtx");
    }
    if (x.name == "work" && x.parent >= 0 && p.ranges[x.parent].name == "frame") ++nested;
  }
  EXPECT_GT(frames, 2) << r.err;
  EXPECT_EQ(nested, Count(p, "work")) << "every work inside an NVTX frame\n" << r.err;
  EXPECT_EQ(app.Finish(), 0);
  EXPECT_FALSE(Exists(nvtx_channel));
}

TEST(RunAttachCli, ProgramExitingWhileAttachedKeepsWhatWasRecorded) {
  const std::string dir = Tmp();
  App app(dir);
  const std::string json = dir + "/exit.json", err = dir + "/opscope.err";
  unlink(err.c_str());  // (a file of an earlier run would end the wait below at once)
  unlink(json.c_str());
  const int opscope = testing::StartInOwnGroup(
      {Opscope(), "run", "-p", std::to_string(app.pid), "-o", json}, dir + "/opscope.out", err);
  ASSERT_GT(opscope, 0);
  for (int i = 0; i < 500 && testing::ReadAll(err).find("attached to") == std::string::npos; ++i)
    usleep(10000);
  usleep(100000);
  EXPECT_EQ(app.Finish(), 0);
  EXPECT_EQ(testing::WaitForExit(opscope, 30), 0) << testing::ReadAll(err);
  const std::string e = testing::ReadAll(err);
  EXPECT_NE(e.find("the program exited while attached"), std::string::npos) << e;
  profile::Profile p = Load(json);
  EXPECT_TRUE(HasDegradation(p, "the program exited while attached")) << e;
  EXPECT_GT(Count(p, "frame"), 0) << e;
  EXPECT_EQ(Count(p, "last"), 1) << "open at exit, ended at exit\n" << e;
}

// Starts `opscope run -p` on the app in the background and waits until it has attached.
int StartAttached(const App& app, const std::string& json, const std::string& err,
                  const std::vector<std::string>& extra = {}) {
  unlink(err.c_str());  // (a file of an earlier run would end the wait below at once)
  unlink(json.c_str());
  std::vector<std::string> argv = {Opscope(), "run", "-p", std::to_string(app.pid), "-o", json};
  argv.insert(argv.end(), extra.begin(), extra.end());
  const int pid = testing::StartInOwnGroup(argv, err + ".out", err);
  for (int i = 0; i < 500 && testing::ReadAll(err).find("attached to") == std::string::npos; ++i)
    usleep(10000);
  return pid;
}

// A frame that began before the attach and ends after it is not recorded, and neither is its
// "work" (recorded after the attach): the inside of a stage is not reported without the stage.
TEST(RunAttachCli, RangesInsideARangeOpenedBeforeTheAttachAreLeftOut) {
  const std::string dir = Tmp();
  const std::string gate = dir + "/gate";
  unlink(gate.c_str());
  App app(dir, true, gate);  // holds its first frame open until `gate` exists
  const std::string json = dir + "/gate.json", err = dir + "/opscope.err";
  const int opscope = StartAttached(app, json, err, {"--duration", "0.4"});
  ASSERT_GT(opscope, 0);
  std::ofstream(gate) << "";
  EXPECT_EQ(testing::WaitForExit(opscope, 30), 0) << testing::ReadAll(err);
  profile::Profile p = Load(json);
  EXPECT_GT(Count(p, "frame"), 0) << testing::ReadAll(err);
  EXPECT_EQ(Count(p, "work"), Count(p, "frame")) << testing::ReadAll(err);
  for (const auto& r : p.ranges)
    if (r.name == "work") {
      EXPECT_GE(r.parent, 0) << "a work range without its frame";
    }
}

TEST(RunAttachCli, CtrlCDetachesAndASecondOpscopeIsRefusedMeanwhile) {
  const std::string dir = Tmp();
  App app(dir);
  const std::string json = dir + "/int.json", err = dir + "/opscope.err";
  unlink(err.c_str());  // (a file of an earlier run would end the wait below at once)
  unlink(json.c_str());
  const int opscope = testing::StartInOwnGroup(
      {Opscope(), "run", "-p", std::to_string(app.pid), "-o", json}, dir + "/opscope.out", err);
  ASSERT_GT(opscope, 0);
  for (int i = 0; i < 500 && testing::ReadAll(err).find("attached to") == std::string::npos; ++i)
    usleep(10000);
  auto second = RunShell(Opscope() + " run -p " + std::to_string(app.pid) + " --duration 1");
  EXPECT_EQ(second.exit_code, 1) << second.err;
  EXPECT_NE(second.err.find("another opscope is attached to this program"), std::string::npos)
      << second.err;
  kill(-opscope, SIGINT);  // Ctrl-C on opscope's terminal: the program is not in that group
  EXPECT_EQ(testing::WaitForExit(opscope, 30), 0) << testing::ReadAll(err);
  profile::Profile p = Load(json);
  EXPECT_TRUE(HasDegradation(p, "received SIGINT and detached")) << testing::ReadAll(err);
  EXPECT_GT(Count(p, "frame"), 0);
  EXPECT_EQ(kill(app.pid, 0), 0) << "the program keeps running";
  EXPECT_EQ(app.Finish(), 0);
}

// Writes a request into the program's channel as opscope would, owned by `uid`, naming `out`.
void PlaceRequest(const App& app, const std::string& out, uid_t uid) {
  const std::string tmp = app.Channel() + "/.request.test", req = app.Channel() + "/request";
  std::ofstream(tmp) << "opscope-attach 1\nopscope-pid " << getpid() << "\nout " << out
                     << "\ncpu 1\n";
  ASSERT_EQ(chown(tmp.c_str(), uid, uid), 0) << std::strerror(errno);
  ASSERT_EQ(chmod(tmp.c_str(), 0600), 0);
  ASSERT_EQ(rename(tmp.c_str(), req.c_str()), 0) << std::strerror(errno);
  for (int i = 0; i < 500 && Exists(req); ++i) usleep(10000);
  EXPECT_FALSE(Exists(req)) << "the recorder removes a request it does not obey";
}

TEST(RunAttachCli, RequestsOfAnotherUidOrNamingAWritableFolderAreIgnored) {
  if (geteuid() != 0)
    GTEST_SKIP() << "needs root: a file owned by another uid cannot be placed in the program's "
                    "private channel folder otherwise";
  const std::string dir = Tmp();
  App app(dir);
  const std::string out = dir + "/out";
  mkdir(out.c_str(), 0700);
  chmod(out.c_str(), 0700);
  PlaceRequest(app, out, 65534);  // nobody's request
  EXPECT_FALSE(Exists(out + "/attached.annotate"));
  std::string err = testing::ReadAll(app.err_file);
  EXPECT_NE(err.find("ignored an attach request: " + app.Channel() +
                     "/request is owned by uid 65534, not by this program's uid 0"),
            std::string::npos)
      << err;
  chmod(out.c_str(), 0777);  // a folder others could plant links in
  PlaceRequest(app, out, 0);
  EXPECT_FALSE(Exists(out + "/attached.annotate"));
  err = testing::ReadAll(app.err_file);
  EXPECT_NE(err.find("its output folder " + out + " is writable by other users"), std::string::npos)
      << err;
  DIR* d = opendir(out.c_str());
  int entries = 0;
  while (dirent* e = readdir(d)) entries += e->d_name[0] != '.';
  closedir(d);
  EXPECT_EQ(entries, 0) << "nothing was written where the requests pointed";
  // The program is still attachable the proper way.
  auto r = RunShell(Opscope() + " run -p " + std::to_string(app.pid) + " --duration 0.2");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("frame"), std::string::npos) << r.out;
}

TEST(RunAttachCli, ProgramsThatCannotBeAttachedToSayWhatIsMissing) {
  // No recorder at all.
  const std::string dir = Tmp();
  const int sleeper =
      testing::StartInOwnGroup({"/bin/sleep", "30"}, dir + "/s.out", dir + "/s.err");
  ASSERT_GT(sleeper, 0);
  usleep(50000);
  auto r = RunShell(Opscope() + " run -p " + std::to_string(sleeper));
  kill(sleeper, SIGKILL);
  testing::WaitForExit(sleeper, 10);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("opscope: error: process " + std::to_string(sleeper) +
                       " (sleep) has no opscope range recorder loaded"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("OPSCOPE_ATTACHABLE=1 LD_PRELOAD="), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // The recorder, but not attachable.
  App app(dir, /*attachable=*/false);
  r = RunShell(Opscope() + " run -p " + std::to_string(app.pid));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("has opscope's range recorder but was not started attachable"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(Exists(app.Channel()));
  // Usage.
  r = RunShell(Opscope() + " run -p 99999999");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("opscope: error: -p '99999999'", 0), 0u) << r.err;
  r = RunShell(Opscope() + " run -p " + std::to_string(app.pid) + " -- true");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = RunShell(Opscope() + " run --duration 1 -- true");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--duration applies to -p"), std::string::npos) << r.err;
  r = RunShell(Opscope() + " run");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no command given: use `opscope run -- CMD [ARGS]`, or attach with -p PID"),
            std::string::npos)
      << r.err;
}

// The attach folder (collect/attach_dir.h): OPSCOPE_ATTACH_DIR when the program has it, a
// private XDG_RUNTIME_DIR, else /tmp; opscope finds it from the program's environment alone.
TEST(RunAttachCli, TheAttachFolderFollowsTheProgramsEnvironment) {
  const std::string dir = Tmp();
  const std::string chosen = dir + "/chosen", xdg = dir + "/xdg";
  mkdir(chosen.c_str(), 0755);
  mkdir(xdg.c_str(), 0700);
  chmod(xdg.c_str(), 0700);
  struct Case {
    std::vector<std::string> env;
    std::string base;
  };
  const Case cases[] = {
      {{"OPSCOPE_ATTACH_DIR=" + chosen + "/", "XDG_RUNTIME_DIR=" + xdg}, chosen},
      {{"XDG_RUNTIME_DIR=" + xdg}, xdg},
      {{"XDG_RUNTIME_DIR=" + chosen}, "/tmp"},  // not private (0755): not used
  };
  for (const Case& c : cases) {
    App app(dir, true, "", false, c.env);
    app.base = c.base;
    ASSERT_TRUE(Exists(app.Channel())) << c.base << ": " << testing::ReadAll(app.err_file);
    if (c.base != "/tmp") {
      EXPECT_FALSE(Exists("/tmp/opscope-attach-" + std::to_string(app.pid) + "-annotate"));
    }
    const std::string json = dir + "/folder.json";
    auto r = RunShell("env -u OPSCOPE_ATTACH_DIR " + Opscope() + " run -p " +
                      std::to_string(app.pid) + " --duration 0.3 -o " + json);
    EXPECT_EQ(r.exit_code, 0) << c.base << ": " << r.err;
    EXPECT_GT(Count(Load(json), "frame"), 0) << r.err;
    // The output folder was made next to the channel, and removed.
    DIR* d = opendir(c.base.c_str());
    int outs = 0;
    while (dirent* e = readdir(d))
      outs += std::string(e->d_name).rfind("opscope-attach-out-", 0) == 0 && c.base != "/tmp";
    closedir(d);
    EXPECT_EQ(outs, 0);
    EXPECT_EQ(app.Finish(), 0);
    EXPECT_FALSE(Exists(app.Channel()));
    EXPECT_EQ(testing::ReadAll(app.err_file), "");
  }
}

// A recorder that could not make its channel, and opscope that cannot find one: each says where
// and which variable to set.
TEST(RunAttachCli, AChannelThatCannotBeFoundSaysWhereOpscopeLooked) {
  const std::string dir = Tmp();
  App app(dir, true, "", false, {"OPSCOPE_ATTACH_DIR=" + dir + "/missing"});
  const std::string pid = std::to_string(app.pid);
  EXPECT_EQ(testing::ReadAll(app.err_file),
            "opscope recorder (pid " + pid + "): OPSCOPE_ATTACH_DIR=" + dir +
                "/missing is not an existing folder given by its absolute path: not attachable\n");
  auto r = RunShell("env -u OPSCOPE_ATTACH_DIR " + Opscope() + " run -p " + pid);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "opscope: error: process " + pid +
                       " (run_attach_app) has opscope's range recorder but no attach channel "
                       "(opscope-attach-" +
                       pid + "-annotate) in " + dir +
                       "/missing, /tmp: if the program keeps it elsewhere, set OPSCOPE_ATTACH_DIR "
                       "to that folder for opscope too; if the recorder could not make its "
                       "channel, the program's stderr says why\n");
  // opscope's own OPSCOPE_ATTACH_DIR is searched first.
  r = RunShell("OPSCOPE_ATTACH_DIR=" + dir + "/elsewhere " + Opscope() + " run -p " + pid);
  EXPECT_NE(r.err.find("in " + dir + "/elsewhere, " + dir + "/missing, /tmp:"), std::string::npos)
      << r.err;
}

// A private /tmp (another mount namespace: containers, systemd's PrivateTmp): opscope reaches the
// program's channel and hands it an output folder through /proc/PID/root.
TEST(RunAttachCli, AProgramWithAPrivateTmpIsAttachable) {
  if (RunShell("unshare -Urm true").exit_code != 0)
    GTEST_SKIP() << "unprivileged user and mount namespaces are not allowed here (unshare -Urm)";
  // Its files outside /tmp, which the program cannot see.
  const std::string dir = std::string(OPSCOPE_BINARY_DIR) + "/tests/private_tmp_attach";
  if (dir.rfind("/tmp/", 0) == 0)
    GTEST_SKIP() << "the build folder " << OPSCOPE_BINARY_DIR
                 << " is under /tmp, which the program's private /tmp hides (its binary too)";
  mkdir(dir.c_str(), 0755);
  // unshare and sh exec: the program keeps the pid StartInOwnGroup returned.
  App app(dir, true, "", false, {},
          {"/usr/bin/unshare", "-Urm", "/bin/sh", "-c",
           "mount -t tmpfs none /tmp && exec \"$0\" \"$@\""});
  ASSERT_GT(app.pid, 0);
  const int target = app.pid;
  EXPECT_FALSE(Exists("/tmp/opscope-attach-" + std::to_string(target) + "-annotate"))
      << "the channel is in the program's own /tmp";
  const std::string json = dir + "/private.json";
  auto r = RunShell(Opscope() + " run -p " + std::to_string(target) + " --duration 0.3 -o " + json);
  EXPECT_EQ(r.exit_code, 0) << r.err << testing::ReadAll(app.err_file);
  EXPECT_GT(Count(Load(json), "frame"), 0) << r.err;
  EXPECT_EQ(app.Finish(), 0);
}

// libopscope_ranges_nvtx.so in LD_PRELOAD: its channel is there from load, before any NVTX call;
// without it the NVTX recorder appears only at the first call, and opscope says so.
TEST(RunAttachCli, PreloadedNvtxRecorderIsAttachableFromLoad) {
  if (access(Lib("libopscope_ranges_nvtx.so").c_str(), R_OK) != 0)
    GTEST_SKIP() << "built without the NVTX v3 headers";
  const std::string dir = Tmp();
  const std::string nvtx = Lib("libopscope_ranges_nvtx.so");
  // A program that never calls NVTX.
  const int preloaded =
      testing::StartInOwnGroup({"/usr/bin/env", "-u", "OPSCOPE_ATTACH_DIR", "-u", "XDG_RUNTIME_DIR",
                                "OPSCOPE_ATTACHABLE=1", "LD_PRELOAD=" + nvtx, "/bin/sleep", "30"},
                               dir + "/p.out", dir + "/p.err");
  ASSERT_GT(preloaded, 0);
  const std::string channel = "/tmp/opscope-attach-" + std::to_string(preloaded) + "-nvtx";
  for (int i = 0; i < 500 && !Exists(channel); ++i) usleep(10000);
  EXPECT_TRUE(Exists(channel)) << testing::ReadAll(dir + "/p.err");
  auto r = RunShell(Opscope() + " run -p " + std::to_string(preloaded) + " --duration 0.2");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("NVTX_INJECTION64_PATH does not name libopscope_ranges_nvtx.so"),
            std::string::npos)
      << r.err;
  kill(preloaded, SIGTERM);
  testing::WaitForExit(preloaded, 10);
  // Only NVTX_INJECTION64_PATH, before the first NVTX call.
  const int later = testing::StartInOwnGroup(
      {"/usr/bin/env", "OPSCOPE_ATTACHABLE=1", "NVTX_INJECTION64_PATH=" + nvtx, "/bin/sleep", "30"},
      dir + "/l.out", dir + "/l.err");
  ASSERT_GT(later, 0);
  usleep(100000);
  r = RunShell(Opscope() + " run -p " + std::to_string(later));
  kill(later, SIGTERM);
  testing::WaitForExit(later, 10);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("has not loaded opscope's NVTX recorder yet: NVTX opens "
                       "NVTX_INJECTION64_PATH at the program's first NVTX call"),
            std::string::npos)
      << r.err;
  // The annotate recorder preloaded, NVTX's only injected and not loaded yet: attached, and said.
  const int half = testing::StartInOwnGroup(
      {"/usr/bin/env", "-u", "OPSCOPE_ATTACH_DIR", "-u", "XDG_RUNTIME_DIR", "OPSCOPE_ATTACHABLE=1",
       "LD_PRELOAD=" + Lib("libopscope_ranges_rt.so"), "NVTX_INJECTION64_PATH=" + nvtx,
       "/bin/sleep", "30"},
      dir + "/h.out", dir + "/h.err");
  ASSERT_GT(half, 0);
  const std::string half_channel = "/tmp/opscope-attach-" + std::to_string(half) + "-annotate";
  for (int i = 0; i < 500 && !Exists(half_channel); ++i) usleep(10000);
  r = RunShell(Opscope() + " run -p " + std::to_string(half) + " --duration 0.2");
  kill(half, SIGTERM);
  testing::WaitForExit(half, 10);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("opscope's NVTX recorder is not loaded in process " + std::to_string(half) +
                       " yet"),
            std::string::npos)
      << r.err;
  // A real NVTX program with the library preloaded and injected: one recorder, ranges nest.
  if (access(Bin("run_attach_nvtx_app").c_str(), X_OK) != 0) return;
  App app(dir, true, "", /*nvtx=*/true, {}, {}, Lib("libopscope_ranges_rt.so") + ":" + nvtx);
  ASSERT_TRUE(Exists(app.Channel("nvtx")));
  const std::string json = dir + "/both.json";
  r = RunShell(Opscope() + " run -p " + std::to_string(app.pid) + " --duration 0.3 -o " + json);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("NVTX_INJECTION64_PATH does not name"), std::string::npos) << r.err;
  profile::Profile p = Load(json);
  EXPECT_GT(Count(p, "frame"), 2) << r.err;
  for (const auto& x : p.ranges)
    if (x.name == "work") {
      ASSERT_GE(x.parent, 0);
      EXPECT_EQ(p.ranges[x.parent].name, "frame");
      EXPECT_EQ(p.ranges[x.parent].domain, "nvtx");
    }
  EXPECT_EQ(app.Finish(), 0);
}

// An attached span is reported as one: not "whole program: 1 runs".
TEST(RunAttachCli, AnAttachedSpanIsReportedAsSuch) {
  const std::string dir = Tmp();
  App app(dir);
  const std::string json = dir + "/span.json", trace = dir + "/span.trace.json";
  auto r = RunShell(Opscope() + " run -p " + std::to_string(app.pid) + " --duration 0.3 -o " +
                    json + " -o " + trace);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string desc = "pid " + std::to_string(app.pid) + " (run_attach_app)";
  profile::Profile p = Load(json);
  EXPECT_EQ(p.meta.attached, desc);
  for (const std::string& text : {r.out, RunShell(Opscope() + " report " + json).out}) {
    EXPECT_EQ(text.find("whole program"), std::string::npos) << text;
    EXPECT_EQ(text.find("too few runs"), std::string::npos) << "no -r to advise\n" << text;
    const size_t at = text.find("\nattached span: ");
    ASSERT_NE(at, std::string::npos) << text;
    EXPECT_NE(
        text.find(" of " + desc + " (one span of a running program, not repeated runs)\n", at),
        std::string::npos)
        << text;
  }
  const std::string t = testing::ReadAll(trace);
  EXPECT_EQ(testing::TraceProblems(trace), "");
  EXPECT_NE(t.find("\"name\":\"attached span\""), std::string::npos);
  EXPECT_EQ(t.find("\"name\":\"run 0\""), std::string::npos);
  EXPECT_NE(t.find("(attached span)"), std::string::npos);
  EXPECT_EQ(app.Finish(), 0);
}

// ---- Root attaching to another user's program: what that user plants is never followed --------

constexpr uid_t kNobody = 65534;

// tests/run_attach_impostor_app as uid 65534: it answers opscope's request as a recorder would and
// plants `mode` (see the program) in the output folder opscope hands it.
struct Impostor {
  int pid = -1;
  std::string dir, channel;
  Impostor(const std::string& d, const std::string& mode) : dir(d) {
    pid = testing::StartInOwnGroup(
        {"/usr/bin/env", "-u", "OPSCOPE_ATTACHABLE", "-u", "OPSCOPE_RANGES_OUT", "-u",
         "OPSCOPE_ATTACH_DIR", "-u", "XDG_RUNTIME_DIR",
         "LD_PRELOAD=" + Lib("libopscope_ranges_rt.so"), Bin("run_attach_impostor_app"),
         std::to_string(kNobody), mode, dir},
        dir + "/impostor.out", dir + "/impostor.err");
    channel = "/tmp/opscope-attach-" + std::to_string(pid) + "-annotate";
    for (int i = 0; i < 1000 && !Exists(channel); ++i) usleep(10000);
    EXPECT_TRUE(Exists(channel)) << testing::ReadAll(dir + "/impostor.err");
  }
  ~Impostor() {
    kill(pid, SIGKILL);
    testing::WaitForExit(pid, 10);
    // Its channel, and in swap mode the link and the moved (emptied) output folder.
    std::string out = testing::ReadAll(dir + "/impostor.out");
    out = out.substr(0, out.find('\n'));
    if (out.rfind("/tmp/opscope-attach-out-", 0) != 0 ||
        out.find_first_of(" '\"$;`") != std::string::npos)
      out.clear();
    RunShell("rm -rf " + channel + (out.empty() ? "" : " " + out + " " + out + ".moved"));
  }
  // `opscope run -p`, bounded: a hang is killed (exit 137) and reading /dev/zero runs out of
  // address space instead of memory.
  testing::CommandResult Attach(const std::string& json) const {
    unlink(json.c_str());
    return RunShell("ulimit -v 4194304; timeout -s KILL 60 " + Opscope() + " run -p " +
                    std::to_string(pid) + " --duration 0.3 -o " + json);
  }
};

// A root-only file the planted links point at: not a range file, so reading it would fail loudly.
void PlantSecret(const std::string& dir) {
  const std::string secret = dir + "/secret";
  std::ofstream(secret) << "root-only secret\n";
  ASSERT_EQ(chmod(secret.c_str(), 0600), 0);
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);  // the impostor must reach it to link to it
}

TEST(RunAttachCli, RootReadsNothingTheProgramsUserPlantsInTheOutputFolder) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: the program runs as uid 65534";
  struct Case {
    std::string mode, why;
  };
  const Case cases[] = {{"symlink", "is a symbolic link"},
                        {"fifo", "is a FIFO, not a regular file"},
                        {"devzero", "is a symbolic link"},
                        {"hardlink", "is a file with 2 hard links"}};
  for (const Case& c : cases) {
    const std::string dir = Tmp() + "/" + c.mode;
    mkdir(dir.c_str(), 0755);
    PlantSecret(dir);
    Impostor imp(dir, c.mode);
    const std::string json = dir + "/planted.json";
    auto r = imp.Attach(json);
    EXPECT_EQ(r.exit_code, 0) << c.mode << " (137: opscope hung or ran out of memory)\n" << r.err;
    const std::string file = "ranges.annotate." + std::to_string(imp.pid);
    EXPECT_NE(r.err.find(file + " " + c.why + ": not reading it"), std::string::npos)
        << c.mode << "\n"
        << r.err;
    EXPECT_EQ(r.err.find("not an opscope range file"), std::string::npos)
        << c.mode << ": the secret was read\n"
        << r.err;
    profile::Profile p = Load(json);
    EXPECT_EQ(Count(p, "planted"), 0) << c.mode;
    EXPECT_TRUE(HasDegradation(p, c.why)) << c.mode;
    EXPECT_EQ(testing::ReadAll(dir + "/secret"), "root-only secret\n");
  }
}

TEST(RunAttachCli, AnAnswerMarkerThatIsAFifoIsRefusedWithoutHanging) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: the program runs as uid 65534";
  const std::string dir = Tmp();
  Impostor imp(dir, "marker-fifo");
  auto r = imp.Attach(dir + "/marker.json");
  EXPECT_EQ(r.exit_code, 1) << "(137: opscope hung)\n" << r.err;
  EXPECT_NE(r.err.find("attached.annotate is a FIFO, not a regular file: not reading it"),
            std::string::npos)
      << r.err;
}

// The output folder is the program's user's once handed over, in sticky /tmp: renamed away and
// replaced by a link to a root folder, opscope keeps reading (and emptying) the folder it made.
TEST(RunAttachCli, AnOutputFolderSwappedForASymlinkIsNeitherFollowedNorEmptied) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: the program runs as uid 65534";
  const std::string dir = Tmp();
  PlantSecret(dir);
  const std::string victim = dir + "/victim";
  mkdir(victim.c_str(), 0700);
  std::ofstream(victim + "/precious") << "keep me\n";
  std::ofstream(victim + "/done.annotate") << "stop 0 9000000000000000000\n";
  std::ofstream(victim + "/ranges.annotate.1") << "root-only secret\n";
  Impostor imp(dir, "swap");
  const std::string json = dir + "/swap.json";
  auto r = imp.Attach(json);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("not an opscope range file"), std::string::npos) << r.err;
  EXPECT_EQ(testing::ReadAll(victim + "/precious"), "keep me\n") << r.err;
  EXPECT_TRUE(Exists(victim + "/ranges.annotate.1")) << r.err;
  EXPECT_EQ(Count(Load(json), "planted"), 1) << "read from the folder opscope made\n" << r.err;
  EXPECT_NE(r.err.find("was moved or replaced while in use"), std::string::npos) << r.err;
}

// ---- The channel folder's end ----------------------------------------------------------------

TEST(RunAttachCli, ASigtermedProgramLeavesNoChannelAndStaleOnesAreReclaimed) {
  const std::string dir = Tmp();
  {
    App app(dir);
    const std::string channel = app.Channel();
    ASSERT_TRUE(Exists(channel));
    kill(app.pid, SIGTERM);
    EXPECT_EQ(testing::WaitForExit(app.pid, 30), 128 + SIGTERM);
    app.pid = -1;
    EXPECT_FALSE(Exists(channel)) << "removed by the recorder's SIGTERM handler";
  }
  // A channel whose process is gone (a SIGKILL leaves one), one of a live process, and a
  // non-channel folder with a similar name: the next attachable program reclaims the first only.
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_GT(dead, 0);
  waitpid(dead, nullptr, 0);
  const std::string stale = "/tmp/opscope-attach-" + std::to_string(dead) + "-annotate";
  const std::string live = "/tmp/opscope-attach-" + std::to_string(getpid()) + "-nvtx";
  const std::string other = "/tmp/opscope-attach-" + std::to_string(dead) + "-annotate-keep";
  for (const auto& d : {stale, live, other}) ASSERT_EQ(mkdir(d.c_str(), 0700), 0) << d;
  std::ofstream(stale + "/request") << "opscope-attach 1\n";
  App app(dir);
  EXPECT_FALSE(Exists(stale)) << testing::ReadAll(app.err_file);
  EXPECT_TRUE(Exists(live));
  EXPECT_TRUE(Exists(other));
  EXPECT_EQ(app.Finish(), 0);
  rmdir(live.c_str());
  rmdir(other.c_str());
}

}  // namespace
}  // namespace opscope
