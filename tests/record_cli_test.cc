// End-to-end tests of `opscope record` and `opscope report`: accuracy against a program whose
// profile is known by construction, in both call-graph modes, and clear errors on bad input.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli_util.h"

namespace {

const std::string kOpscope = opscope::testing::OpscopeBinary();
const std::string kTests = OPSCOPE_BINARY_DIR "/tests";

using Result = opscope::testing::CommandResult;

// stdout and stderr interleaved in `out`, as a user sees them.
Result Shell(const std::string& cmd) { return opscope::testing::RunShell(cmd + " 2>&1"); }

std::string TempPath(const std::string& name) {
  return testing::TempDir() + "/opscope_rec_" + std::to_string(getpid()) + "_" + name;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}
struct Shares {
  double heavy_self = 0, light_self = 0, heavy_incl = 0, light_incl = 0, work_incl = 0;
  uint64_t samples = 0;
};

Shares ReadShares(const std::string& rec) {
  Result r = Shell(kOpscope + " report " + rec + " --format hot-json --threshold 0 --top 0");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  Shares s;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (j.is_discarded()) {
    ADD_FAILURE() << "report JSON does not parse: " << r.out;
    return s;
  }
  s.samples = j["samples"].get<uint64_t>();
  for (const auto& row : j["rows"]) {
    std::string fn = row["function"];
    if (fn == "heavy") {
      s.heavy_self = row["self_pct"];
      s.heavy_incl = row["inclusive_pct"];
    } else if (fn == "light") {
      s.light_self = row["self_pct"];
      s.light_incl = row["inclusive_pct"];
    } else if (fn == "work") {
      s.work_incl = row["inclusive_pct"];
    }
  }
  return s;
}

// The split program spends 3/4 of its work in heavy() and 1/4 in light(), both called from
// work(), on two threads. The profile must say so within 5 points, by self and inclusive time.
void CheckAccuracy(const std::string& mode, const std::string& binary) {
  std::string rec = TempPath(mode + ".rec");
  // A fixed amount of work (not a fixed time), so the sample count does not depend on how busy
  // the machine is: ~1 CPU-second at 1999 Hz gives ~2000 samples, a binomial standard error of
  // about 1 point on a 75 % share.
  Result r = Shell(kOpscope + " record -q -F 1999 --call-graph " + mode + " -o " + rec + " -- " +
                   kTests + "/" + binary + " n1200");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  Shares s = ReadShares(rec);
  ASSERT_GT(s.samples, 1000u) << "too few samples to judge accuracy";
  std::printf(
      "%s: %llu samples; heavy self %.1f%% incl %.1f%%, light self %.1f%% incl %.1f%%, work incl "
      "%.1f%%\n",
      mode.c_str(), static_cast<unsigned long long>(s.samples), s.heavy_self, s.heavy_incl,
      s.light_self, s.light_incl, s.work_incl);
  EXPECT_NEAR(s.heavy_self, 75, 5) << mode;
  EXPECT_NEAR(s.light_self, 25, 5) << mode;
  EXPECT_NEAR(s.heavy_incl, 75, 5) << mode;
  EXPECT_NEAR(s.light_incl, 25, 5) << mode;
  EXPECT_NEAR(s.work_incl, 100, 5) << mode << ": the common parent must hold nearly all samples";
  // Source lines are shown (the binary has debug info).
  Result table = Shell(kOpscope + " report " + rec);
  EXPECT_NE(table.out.find("split.cc:"), std::string::npos) << table.out;
  // Both threads were followed (the second one was created after exec).
  Result by_thread = Shell(kOpscope + " report " + rec + " --group thread --format hot-json");
  auto j = nlohmann::json::parse(by_thread.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["threads"].get<int>(), 2);
  std::remove(rec.c_str());
}

TEST(RecordAccuracy, FramePointerCallGraphs) { CheckAccuracy("fp", "record_split_fp"); }
TEST(RecordAccuracy, DwarfCallGraphsWithoutFramePointers) {
  CheckAccuracy("dwarf", "record_split_dwarf");
}

TEST(RecordCli, PassesArgumentsAfterDashDash) {
  std::string rec = TempPath("ls.rec");
  Result r = Shell(kOpscope + " record -q -o " + rec + " -- ls -l -d /");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("dr"), std::string::npos) << "ls did not get -l: " << r.out;
  std::remove(rec.c_str());
}

// perf's spellings: -g (frame-pointer call graphs; --call-graph still picks the mode) and
// -F max (the kernel's perf_event_max_sample_rate, capped at 100000 like a number).
TEST(RecordCli, PerfSpellingsDashGAndFrequencyMax) {
  auto meta = [](const std::string& rec) {
    Result rep = Shell(kOpscope + " report " + rec + " --format json");
    auto j = nlohmann::json::parse(rep.out, nullptr, false);
    return j.is_discarded() ? nlohmann::json() : j["samples"];
  };
  std::ifstream sysctl("/proc/sys/kernel/perf_event_max_sample_rate");
  double max_rate = 0;
  ASSERT_TRUE(sysctl >> max_rate) << "no perf_event_max_sample_rate on this kernel";
  std::string rec = TempPath("g.rec");
  Result r = Shell(kOpscope + " record -g -F max -o " + rec + " -- true");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("-F max: "), std::string::npos) << r.out;
  nlohmann::json s = meta(rec);
  ASSERT_TRUE(s.is_object()) << r.out;
  EXPECT_EQ(s["frequency_hz"].get<double>(), std::min(max_rate, 100000.0));
  EXPECT_EQ(s["call_graph"], "fp");
  r = Shell(kOpscope + " record -q -g --call-graph dwarf -o " + rec + " -- true");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(meta(rec)["call_graph"], "dwarf");
  r = Shell(kOpscope + " record -F fast -o " + rec + " -- true");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--freq: must be a number from 1 to 100000 (got 'fast') or max"),
            std::string::npos)
      << r.out;
  std::remove(rec.c_str());
}

TEST(RecordCli, LibraryLoadedLaterIsSymbolized) {
  for (const char* mode : {"fp", "dwarf"}) {
    std::string rec = TempPath(std::string("dlopen-") + mode + ".rec");
    Result r = Shell(kOpscope + " record -q --call-graph " + mode + " -o " + rec + " -- " + kTests +
                     "/record_dlopen " + kTests + "/librecord_late.so 400");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    Result rep = Shell(kOpscope + " report " + rec + " --format hot-json --threshold 0");
    auto j = nlohmann::json::parse(rep.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << rep.out;
    double share = 0;
    std::string module, file;
    for (const auto& row : j["rows"])
      if (row["function"] == "late_library_spin") {
        share = row["self_pct"];
        module = row["module"];
        file = row["file"];
      }
    EXPECT_GT(share, 50) << mode << ": " << rep.out;
    EXPECT_EQ(module, "librecord_late.so") << mode;
    EXPECT_NE(file.find("late_lib.cc"), std::string::npos) << mode;
    std::remove(rec.c_str());
  }
}

TEST(RecordCli, CommandNotFound) {
  std::string rec = TempPath("nf.rec");
  Result r = Shell(kOpscope + " record -o " + rec + " -- no-such-command-opscope-xyz");
  EXPECT_EQ(r.exit_code, 127) << r.out;
  EXPECT_NE(r.out.find("command not found: 'no-such-command-opscope-xyz'"), std::string::npos)
      << r.out;
  EXPECT_EQ(access(rec.c_str(), F_OK), -1) << "no file should be left behind";
}

TEST(RecordCli, CrashingCommandStillGivesAProfile) {
  std::string rec = TempPath("crash.rec");
  Result r = Shell(kOpscope + " record -o " + rec + " -- sh -c 'kill -SEGV $$'");
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV) << r.out;
  EXPECT_NE(r.out.find("killed by signal 11"), std::string::npos) << r.out;
  Result rep = Shell(kOpscope + " report " + rec);
  EXPECT_EQ(rep.exit_code, 0) << rep.out;
  std::remove(rec.c_str());
}

TEST(RecordCli, KilledRecorderLeavesAReadableFile) {
  std::string rec = TempPath("killed.rec");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setpgid(0, 0);
    int fd = open("/dev/null", O_WRONLY);
    dup2(fd, 1);
    dup2(fd, 2);
    std::string bin = kTests + "/record_split_fp";
    execl(kOpscope.c_str(), "opscope", "record", "-o", rec.c_str(), "--", bin.c_str(), "3000",
          nullptr);
    _exit(127);
  }
  usleep(1200 * 1000);  // long enough for at least one events chunk (written every ~100 ms)
  kill(-pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  Result rep = Shell(kOpscope + " report " + rec + " --format hot-json --threshold 0");
  ASSERT_EQ(rep.exit_code, 0) << rep.out;
  auto j = nlohmann::json::parse(rep.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << rep.out;
  EXPECT_GT(j["samples"].get<int>(), 0);
  bool said_unfinished = false;
  for (const auto& d : j["degradations"])
    said_unfinished |= d.get<std::string>().find("did not finish") != std::string::npos;
  EXPECT_TRUE(said_unfinished) << rep.out;
  std::remove(rec.c_str());
}

TEST(ReportCli, BadFiles) {
  std::string good = TempPath("good.rec");
  ASSERT_EQ(Shell(kOpscope + " record -q -o " + good + " -- " + kTests + "/record_split_fp 300")
                .exit_code,
            0);
  std::string bytes = opscope::testing::ReadAll(good);
  ASSERT_GT(bytes.size(), 100u);

  // Truncated in the middle of the last chunk: still readable, says what was dropped.
  std::string cut = TempPath("cut.rec");
  WriteFile(cut, bytes.substr(0, bytes.size() - 7));
  Result r = Shell(kOpscope + " report " + cut);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("truncated"), std::string::npos) << r.out;

  // Truncated inside the header.
  WriteFile(cut, bytes.substr(0, 5));
  r = Shell(kOpscope + " report " + cut);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("truncated"), std::string::npos) << r.out;

  // Corrupt bytes in the last chunk (the symbols, written last): the checksum catches them, and
  // the raw events before it are used instead.
  std::string bad = bytes;
  bad[bad.size() - 20] ^= 0x5a;
  WriteFile(cut, bad);
  r = Shell(kOpscope + " report " + cut);
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.out;
  EXPECT_TRUE(r.out.find("corrupt") != std::string::npos ||
              r.out.find("checksum") != std::string::npos)
      << r.out;

  // A foreign file.
  WriteFile(cut,
            "\x7f"
            "ELF not a profile at all");
  r = Shell(kOpscope + " report " + cut);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("error:"), std::string::npos) << r.out;

  // A missing file.
  r = Shell(kOpscope + " report " + TempPath("missing.rec"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  std::remove(cut.c_str());
  std::remove(good.c_str());
}

// A recording whose first events chunk was damaged on disk and whose symbol chunk is gone (so
// report must read the raw events): every format says the file is corrupt, the table does not
// blame the command, and the events chunks after the damaged one are still used.
TEST(ReportCli, CorruptEventsChunkIsReportedInEveryFormat) {
  std::string good = TempPath("ev_good.rec");
  ASSERT_EQ(Shell(kOpscope + " record -q -o " + good + " -- " + kTests + "/record_split_fp 300")
                .exit_code,
            0);
  std::string bytes = opscope::testing::ReadAll(good);
  ASSERT_GT(bytes.size(), 100u);
  auto u32 = [&](size_t at) {
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k)
      v |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + k])) << (8 * k);
    return v;
  };
  std::string damaged = bytes.substr(0, 8);
  bool flipped = false;
  for (size_t pos = 8; pos + 12 <= bytes.size();) {
    uint32_t type = u32(pos), len = u32(pos + 4);
    ASSERT_LE(pos + 12 + len, bytes.size());
    std::string chunk = bytes.substr(pos, 12 + len);
    if (type == 2 && !flipped && len > 4) {
      chunk[12 + len / 2] ^= 0x55;
      flipped = true;
    }
    if (type != 3) damaged += chunk;  // drop the symbol chunk
    pos += 12 + len;
  }
  ASSERT_TRUE(flipped);
  std::string path = TempPath("ev_bad.rec");
  WriteFile(path, damaged);

  Result table = Shell(kOpscope + " report " + path);
  EXPECT_EQ(table.exit_code, 0) << table.out;
  EXPECT_NE(table.out.find("fails its checksum"), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("the command ended before the first sample"), std::string::npos)
      << table.out;
  for (const char* format : {"folded", "svg"}) {
    Result r = opscope::testing::RunShell(kOpscope + " report " + path + " --format " + format +
                                          " >/dev/null");
    EXPECT_NE(r.err.find("opscope: warning: corrupt record file"), std::string::npos)
        << format << ": " << r.err;
  }
  std::string pb = TempPath("ev_bad.pb.gz");
  Result r = opscope::testing::RunShell(kOpscope + " report " + path + " -o " + pb);
  EXPECT_NE(r.err.find("opscope: warning: corrupt record file"), std::string::npos) << r.err;
  std::remove(pb.c_str());
  r = opscope::testing::RunShell(kOpscope + " report " + path + " --format hot-json");
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  bool warned = false;
  for (const auto& w : j["warnings"])
    warned |= w.get<std::string>().find("fails its checksum") != std::string::npos;
  EXPECT_TRUE(warned) << r.out;
  std::remove(path.c_str());
  std::remove(good.c_str());
}

TEST(ReportCli, ProfileWithOpsButNoSamples) {
  std::string path = TempPath("ops.json");
  WriteFile(path,
            R"({"schema": "opscope.profile/1", "meta": {"kind": "profile", "source": "m.onnx"},
    "ops": [{"name": "relu_1", "op_type": "Relu", "stats": {"median": 0.5}, "share": 0.2},
            {"name": "conv_0", "op_type": "Conv", "stats": {"median": 2.5}, "share": 0.8}]})");
  Result r = Shell(kOpscope + " report " + path);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  // The ops section (the same table `opscope profile` prints), hottest first.
  EXPECT_NE(r.out.find("Hot operators"), std::string::npos) << r.out;
  EXPECT_LT(r.out.find("conv_0"), r.out.find("relu_1")) << r.out;
  // Flame-graph formats work without samples: the op scopes weighted by time.
  Result svg = Shell(kOpscope + " report " + path + " --format svg");
  EXPECT_EQ(svg.exit_code, 0) << svg.out;
  EXPECT_NE(svg.out.find("<svg"), std::string::npos) << svg.out;
  Result folded = Shell(kOpscope + " report " + path + " --format folded");
  EXPECT_EQ(folded.exit_code, 0) << folded.out;
  // -f needs samples: one clear line.
  Result f = Shell(kOpscope + " report " + path + " -f conv");
  EXPECT_EQ(f.exit_code, 2) << f.out;
  EXPECT_NE(f.out.find("needs call-stack samples"), std::string::npos) << f.out;
  std::remove(path.c_str());
}

TEST(ReportCli, MissingDebugInfoStillNamesFunctions) {
  std::string stripped = TempPath("split_nodebug");
  ASSERT_EQ(Shell("objcopy --strip-debug " + kTests + "/record_split_fp " + stripped).exit_code, 0);
  std::string rec = TempPath("nodebug.rec");
  ASSERT_EQ(Shell(kOpscope + " record -q -o " + rec + " -- " + stripped + " 300").exit_code, 0);
  Result r = Shell(kOpscope + " report " + rec + " --threshold 0");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("heavy"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no debug info"), std::string::npos) << r.out;
  std::remove(rec.c_str());
  std::remove(stripped.c_str());
}

TEST(ReportCli, OutputFormatsByExtension) {
  std::string rec = TempPath("fmt.rec");
  ASSERT_EQ(
      Shell(kOpscope + " record -q -o " + rec + " -- " + kTests + "/record_split_fp 300").exit_code,
      0);
  for (const char* ext : {".svg", ".folded", ".pb.gz", ".json", ".hot.json", ".txt",
                          ".profile.json", ".trace.json"}) {
    std::string out = TempPath(std::string("out") + ext);
    Result r = Shell(kOpscope + " report " + rec + " -o " + out);
    EXPECT_EQ(r.exit_code, 0) << ext << ": " << r.out;
    std::string bytes = opscope::testing::ReadAll(out);
    EXPECT_FALSE(bytes.empty()) << ext;
    if (std::string(ext) == ".svg") {
      EXPECT_NE(bytes.find("<svg"), std::string::npos);
    }
    if (std::string(ext) == ".folded") {
      EXPECT_NE(bytes.find(";work;heavy "), std::string::npos) << bytes;
    }
    if (std::string(ext) == ".pb.gz") {
      EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);
    }
    if (std::string(ext) == ".trace.json") {
      // The samples, as instant events on their threads (it was `"traceEvents": []`).
      EXPECT_EQ(opscope::testing::TraceProblems(out), "");
      EXPECT_NE(bytes.find("\"ph\":\"i\""), std::string::npos);
    }
    std::remove(out.c_str());
  }
  // The whole profile written as JSON is itself reportable (report works on every profile).
  std::string pj = TempPath("again.profile.json");
  ASSERT_EQ(Shell(kOpscope + " report " + rec + " -o " + pj).exit_code, 0);
  Result again = Shell(kOpscope + " report " + pj + " --threshold 0");
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("heavy"), std::string::npos) << again.out;
  Result callers = Shell(kOpscope + " report " + rec + " -f heavy");
  EXPECT_NE(callers.out.find("work"), std::string::npos) << callers.out;
  Result bad = Shell(kOpscope + " report " + rec + " -o out.unknownext");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  std::remove(pj.c_str());
  std::remove(rec.c_str());
}

// Signals sent to opscope while recording: forwarded to the command's process group, the file
// finished, and opscope exits with 128+signal. The command writes its pid and a "ready" file,
// then sleeps (bounded, so a broken opscope fails the test instead of hanging it).
struct SignalledRecord {
  int exit_code = -1;
  std::string err, rec;
  bool target_alive = false;
};

// `to_target_group`: the signal goes to the command's own process group and not to opscope, as
// a terminal's Ctrl-C does while opscope has handed the terminal to the command.
SignalledRecord RecordAndSignal(const std::string& name, int sig, bool whole_group,
                                bool to_target_group = false) {
  SignalledRecord s;
  const std::string dir = TempPath(name);
  mkdir(dir.c_str(), 0755);
  const std::string ready = dir + "/ready", pidfile = dir + "/pid";
  s.rec = dir + "/sig.rec";
  // A ready file left by an earlier run in this folder (--gtest_repeat, a reused pid) would send
  // the signal before opscope has installed its handlers.
  std::remove(ready.c_str());
  std::remove(pidfile.c_str());
  int pid = opscope::testing::StartInOwnGroup(
      {kOpscope, "record", "-o", s.rec, "--", "/bin/sh", "-c",
       "echo $$ > " + pidfile + " && touch " + ready + " && exec sleep 20"},
      dir + "/out.txt", dir + "/err.txt");
  EXPECT_GT(pid, 0);
  EXPECT_TRUE(opscope::testing::WaitForFile(ready));
  if (to_target_group)
    kill(-static_cast<pid_t>(std::atoi(opscope::testing::ReadAll(pidfile).c_str())), sig);
  else
    kill(whole_group ? -pid : pid, sig);
  s.exit_code = opscope::testing::WaitForExit(pid, 10);
  s.err = opscope::testing::ReadAll(dir + "/err.txt");
  const pid_t target = static_cast<pid_t>(std::atoi(opscope::testing::ReadAll(pidfile).c_str()));
  if (target > 0 && kill(target, 0) == 0) {
    s.target_alive = true;
    kill(target, SIGKILL);
  }
  return s;
}

TEST(RecordCli, SigintToOpscopesPidAloneStopsTheCommandAndFinishesTheFile) {
  SignalledRecord s = RecordAndSignal("sigint_pid", SIGINT, false);
  EXPECT_EQ(s.exit_code, 128 + SIGINT) << s.err;
  EXPECT_NE(s.err.find("received SIGINT"), std::string::npos) << s.err;
  EXPECT_FALSE(s.target_alive) << "the command must not outlive opscope";
  Result rep = Shell(kOpscope + " report " + s.rec + " --format hot-json --threshold 0");
  EXPECT_EQ(rep.exit_code, 0) << rep.out;
  EXPECT_EQ(rep.out.find("did not finish"), std::string::npos) << "the file is complete\n"
                                                               << rep.out;
}

TEST(RecordCli, SigtermAndCtrlCExitWith128PlusTheSignal) {
  SignalledRecord term = RecordAndSignal("sigterm", SIGTERM, false);
  EXPECT_EQ(term.exit_code, 128 + SIGTERM) << term.err;
  EXPECT_FALSE(term.target_alive);
  EXPECT_EQ(Shell(kOpscope + " report " + term.rec).exit_code, 0);
  SignalledRecord group = RecordAndSignal("sigint_group", SIGINT, true);
  EXPECT_EQ(group.exit_code, 128 + SIGINT) << group.err;
  EXPECT_FALSE(group.target_alive);
  EXPECT_EQ(Shell(kOpscope + " report " + group.rec).exit_code, 0);
}

TEST(RecordCli, TerminalCtrlCThatReachesOnlyTheCommandStillExits130) {
  SignalledRecord s = RecordAndSignal("sigint_target_group", SIGINT, false, true);
  EXPECT_EQ(s.exit_code, 128 + SIGINT) << s.err;
  EXPECT_NE(s.err.find("killed by signal 2 (SIGINT"), std::string::npos) << s.err;
  EXPECT_EQ(Shell(kOpscope + " report " + s.rec).exit_code, 0);
}

// One exit-status rule for every command that runs a target (README "Exit codes").
TEST(RecordCli, ExitsWithTheCommandsStatus) {
  const std::string rec = TempPath("status.rec");
  EXPECT_EQ(Shell(kOpscope + " record -q -o " + rec + " -- false").exit_code, 1);
  EXPECT_EQ(Shell(kOpscope + " record -q -o " + rec + " -- sh -c 'exit 3'").exit_code, 3);
  const std::string noexec = TempPath("noexec.sh");
  std::ofstream(noexec) << "#!/bin/sh\necho should not run\n";
  chmod(noexec.c_str(), 0644);
  Result r = Shell(kOpscope + " record -q -o " + rec + " -- " + noexec);
  EXPECT_EQ(r.exit_code, 126) << r.out;
  EXPECT_NE(r.out.find("cannot run '" + noexec + "': not executable"), std::string::npos) << r.out;
  std::remove(rec.c_str());
}

// A full disk (here: a file size limit, which gives the same short write) keeps the readable
// prefix and says how much was kept.
TEST(RecordCli, FullDiskKeepsTheReadablePrefix) {
  const std::string rec = TempPath("full.rec");
  // 32 blocks of 512 bytes: the meta chunk (~400 bytes), the first events (~1 KiB of mmaps) and
  // a drain round of samples (~100 ms: at most ~9 KiB with two busy threads at 997 Hz) fit; the
  // events of a 6-second run do not (over 20 KiB even on a loaded machine: measured ~45 bytes per
  // sample, 120+ samples per second at load 24 on 2 cores).
  Result r = Shell("ulimit -f 32; " + kOpscope + " record -o " + rec + " -- " + kTests +
                   "/record_split_fp 6000");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("file size limit"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kept the readable part"), std::string::npos) << r.out;
  struct stat st {};
  ASSERT_EQ(stat(rec.c_str(), &st), 0) << "the partial file is kept";
  EXPECT_LE(st.st_size, 32 * 512);
  EXPECT_GT(st.st_size, 8);
  Result rep = Shell(kOpscope + " report " + rec + " --format hot-json --threshold 0");
  EXPECT_EQ(rep.exit_code, 0) << rep.out;
  // Whole chunks only: the reader has nothing to skip.
  EXPECT_EQ(rep.out.find("recording is incomplete"), std::string::npos) << rep.out;
  std::remove(rec.c_str());
}

TEST(RecordCli, AlreadyFullDiskLeavesNoEmptyFile) {
  const std::string rec = TempPath("nothing.rec");
  Result r = Shell("ulimit -f 0; " + kOpscope + " record -o " + rec + " -- true");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("nothing could be written"), std::string::npos) << r.out;
  EXPECT_EQ(access(rec.c_str(), F_OK), -1) << "no 0-byte file pretending to be a profile";
  // A device or a FIFO is refused before the command runs (a recording is cut back to its last
  // whole chunk, which only a regular file allows; a FIFO without a reader blocked the open), and
  // the device is of course neither truncated nor removed.
  r = Shell(kOpscope + " record -o /dev/full -- true");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("/dev/full: not a regular file"), std::string::npos) << r.out;
  EXPECT_EQ(access("/dev/full", F_OK), 0);
  const std::string fifo = TempPath("fifo.rec");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  r = Shell("timeout 60 " + kOpscope + " record -o " + fifo + " -- true");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("not a regular file"), std::string::npos) << r.out;
  std::remove(fifo.c_str());
  // Room for the header and metadata but not for a sample: no file either.
  r = Shell("ulimit -f 1; " + kOpscope + " record -o " + rec + " -- " + kTests +
            "/record_split_fp 50");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("could be written"), std::string::npos) << r.out;
  EXPECT_EQ(access(rec.c_str(), F_OK), -1) << r.out;
}

}  // namespace
