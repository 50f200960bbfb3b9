// End-to-end tests of `opscope run`: the example pipeline, every output format, argument
// pass-through, the C header, NVTX injection, and the build-type check of the target.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "analysis/range_stats.h"
#include "diag_cli_util.h"
#include "profile/profile_io.h"
#include "sections/telemetry/telemetry_section.h"

namespace opscope {
namespace {

using testing::Opscope;
using testing::RunShell;

std::string Tmp() { return testing::PerTestTempDir("opscope_run_cli"); }
std::string Bin(const std::string& name) {
  return std::string(OPSCOPE_BINARY_DIR) + "/tests/bin/" + name;
}

// `expected_exit`: opscope exits with the program's own status (128+N for signal N).
profile::Profile RunJson(const std::string& args, std::string* err = nullptr,
                         int expected_exit = 0) {
  std::string tmp = Tmp();
  std::string out = tmp + "/run.json";
  unlink(out.c_str());
  auto r = RunShell(Opscope() + " run -o " + out + " " + args);
  EXPECT_EQ(r.exit_code, expected_exit) << args << "\n" << r.err;
  if (err) *err = r.err;
  auto p = profile::LoadProfile(out);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? *p : profile::Profile{};
}

const profile::Finding* FindRule(const profile::Profile& p, const std::string& id) {
  for (const auto& f : p.findings)
    if (f.rule == id) return &f;
  return nullptr;
}

// `run --sysroot`: the board is sampled after each measured run (not after the warm-up), so the
// trace has its counter tracks beside the ranges.
TEST(RunCli, BoardTelemetryIsSampledAfterEachMeasuredRun) {
  auto p = RunJson("-w 1 -r 3 --sysroot " OPSCOPE_SOURCE_DIR "/tests/boards/rk3588 -- " +
                   std::string(OPSCOPE_BINARY_DIR "/examples/pipeline_example 1"));
  const auto* t = p.sections.Find<telemetry::TelemetrySection>();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->sample_runs, (std::vector<int32_t>{0, 1, 2}));
  ASSERT_NE(t->Find("npu load core2"), nullptr);
  EXPECT_EQ(t->Find("npu load core2")->values, (std::vector<double>{47, 47, 47}));
}

TEST(RunCli, PipelineExampleShowsThreeStagesPreprocessingFirst) {
  std::string tmp = Tmp();
  std::string json = tmp + "/pipeline.json";
  auto r = RunShell(Opscope() + " run -r 2 -o " + json + " -- " +
                    OPSCOPE_BINARY_DIR "/examples/pipeline_example 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The first thing shown is the stage headline, pre-processing first (the order the stages ran).
  EXPECT_TRUE(r.out.find("pipeline") != std::string::npos);
  size_t headline = r.out.find("pipeline (per run, mean of 2 runs): pre-processing ");
  EXPECT_NE(headline, std::string::npos) << r.out;
  EXPECT_LT(r.out.find("network"), r.out.find("post-processing"));

  auto p = profile::LoadProfile(json);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->meta.kind, "run");
  EXPECT_EQ(p->e2e.runs_ms.size(), 2u);
  EXPECT_EQ(p->clocks.size(), 2u);
  analysis::RangeReport rep = analysis::SummarizeRanges(*p);
  std::map<std::string, double> top;
  for (const auto& s : rep.ranges)
    if (s.depth == 0) top[s.name] = s.share_of_top;
  ASSERT_EQ(top.size(), 3u) << rep.headline;
  ASSERT_TRUE(top.count("pre-processing") && top.count("network") && top.count("post-processing"));
  // By construction (work amount), pre-processing dominates; no time is asserted.
  EXPECT_GT(top["pre-processing"], top["network"]);
  EXPECT_GT(top["pre-processing"], top["post-processing"]);
  bool resize_nested = false;
  for (const auto& s : rep.ranges)
    resize_nested |= s.path == "pre-processing/resize" && s.calls == 2;
  EXPECT_TRUE(resize_nested);
  const auto* f = FindRule(*p, "pipeline-bottleneck");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ops, std::vector<std::string>{"pre-processing"});
}

TEST(RunCli, CsvAndChromeTrace) {
  std::string tmp = Tmp();
  std::string app = Bin("run_annotate_c_app");
  auto csv = RunShell(Opscope() + " run --format csv -- " + app);
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_TRUE(csv.out.starts_with("path,name,domain,depth,calls,total_ms")) << csv.out;
  EXPECT_NE(csv.out.find("\nouter/inner,inner,opscope,1,3,"), std::string::npos) << csv.out;
  EXPECT_EQ(csv.out.find("annotate_c_app done"), std::string::npos)
      << "program output must go to stderr";

  std::string trace = tmp + "/t.trace.json";
  auto tr = RunShell(Opscope() + " run -o " + trace + " -- " + app);
  ASSERT_EQ(tr.exit_code, 0) << tr.err;
  auto j = nlohmann::json::parse(testing::ReadAll(trace), nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  int complete = 0, runs = 0;
  bool named = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      ++complete;
      runs += e["cat"] == "run";
      EXPECT_GT(e["tid"].get<int>(), 0);
      EXPECT_EQ(e["pid"], 1) << "run 0 is process 1";
    }
    named |= e["ph"] == "M" && e["name"] == "thread_name";
  }
  EXPECT_EQ(complete, 3 + 3 + 1 + 1);  // outer ×3, inner ×3, left-open, the run's slice
  EXPECT_EQ(testing::TraceProblems(trace), "");
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(named);
  EXPECT_FALSE(j.contains("displayTimeUnit"));
  // Status lines go to stderr, the table to stdout.
  EXPECT_NE(tr.err.find("opscope: wrote " + trace + " (chrome)"), std::string::npos) << tr.err;
  EXPECT_EQ(tr.out.find("opscope: wrote"), std::string::npos) << tr.out;
}

// `opscope report` renders a saved run profile: the range table (it once said "no samples").
TEST(RunCli, ReportRendersRunProfiles) {
  std::string json = Tmp() + "/r.json", csv = Tmp() + "/r.csv";
  auto r = RunShell(Opscope() + " run -r 2 -o " + json + " -o " + csv + " -- " +
                    Bin("run_annotate_c_app"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(testing::ReadAll(csv).empty());
  auto rep = RunShell(Opscope() + " report " + json);
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_NE(rep.out.find("pipeline (per run, mean of 2 runs)"), std::string::npos) << rep.out;
  EXPECT_EQ(rep.out.find("no samples"), std::string::npos) << rep.out;
  auto same = RunShell(Opscope() + " report " + json + " --format csv");
  EXPECT_EQ(same.out, testing::ReadAll(csv));
  auto trace = RunShell(Opscope() + " report " + json + " --format chrome");
  auto j = nlohmann::json::parse(trace.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  std::set<int> pids;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X") pids.insert(e["pid"].get<int>());
  EXPECT_EQ(pids, (std::set<int>{1, 2})) << "one process per run";
}

TEST(RunCli, CHeaderNestingAndUnclosedRange) {
  std::string err;
  auto p = RunJson("-- " + Bin("run_annotate_c_app"), &err);
  int outer = 0, inner = 0, open = 0;
  for (const auto& r : p.ranges) {
    if (r.name == "outer") {
      ++outer;
      EXPECT_EQ(r.depth, 0);
    } else if (r.name == "inner") {
      ++inner;
      ASSERT_GE(r.parent, 0);
      EXPECT_EQ(p.ranges[r.parent].name, "outer");
    } else if (r.name == "left-open") {
      ++open;
    }
    EXPECT_EQ(r.domain, "opscope");
  }
  EXPECT_EQ(outer, 3);
  EXPECT_EQ(inner, 3);
  EXPECT_EQ(open, 1);
  bool noted = false;
  for (const auto& d : p.meta.degradations)
    noted |= d.find("still open at exit") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(RunCli, ProgramRunsWithoutOpscope) {
  auto r = RunShell(Bin("run_annotate_c_app"));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "annotate_c_app done\n");
}

TEST(RunCli, ArgumentsAfterDoubleDashReachTheProgram) {
  auto p = RunJson("-- sh -c 'test \"$1\" = -l' sh -l");
  for (const auto& d : p.meta.degradations)
    EXPECT_EQ(d.find("exited with status"), std::string::npos) << d;
  auto q = RunJson("-- sh -c 'test \"$1\" = -l' sh -x", nullptr, 1);
  bool failed = false;
  for (const auto& d : q.meta.degradations)
    failed |= d.find("exited with status 1") != std::string::npos;
  EXPECT_TRUE(failed);
}

TEST(RunCli, MissingCommandIsAOneLineError) {
  auto r = RunShell(Opscope() + " run -- /nonexistent/prog");
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.err.find("opscope: error: command not found: '/nonexistent/prog' (no such file)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

// One exit-status rule for every command that runs a target (README "Exit codes").
TEST(RunCli, ExitsWithTheProgramsStatus) {
  EXPECT_EQ(RunShell(Opscope() + " run -- false").exit_code, 1);
  EXPECT_EQ(RunShell(Opscope() + " run -- sh -c 'exit 3'").exit_code, 3);
  EXPECT_EQ(RunShell(Opscope() + " run -- sh -c 'kill -SEGV $$'").exit_code, 128 + SIGSEGV);
  EXPECT_EQ(RunShell(Opscope() + " run -- opscope-no-such-command-xyz").exit_code, 127);
  const std::string noexec = Tmp() + "/noexec.sh";
  std::ofstream(noexec) << "#!/bin/sh\necho should not run\n";
  chmod(noexec.c_str(), 0644);
  auto r = RunShell(Opscope() + " run -- " + noexec);
  EXPECT_EQ(r.exit_code, 126);
  EXPECT_NE(r.err.find("cannot run '" + noexec + "': not executable"), std::string::npos) << r.err;
}

TEST(RunCli, DebugBuiltTargetIsReported) {
  auto dbg = RunJson("-- " + Bin("run_target_O0"));
  ASSERT_TRUE(dbg.meta.target.has_value());
  EXPECT_EQ(dbg.meta.target->kind, "debug");
  EXPECT_EQ(dbg.meta.target->opt_level, "-O0");
  const auto* f = FindRule(dbg, "debug-build");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, profile::Severity::kCritical);
  EXPECT_NE(f->evidence.find("-O0"), std::string::npos) << f->evidence;

  auto rel = RunJson("-- " + Bin("run_target_O2"));
  ASSERT_TRUE(rel.meta.target.has_value());
  EXPECT_EQ(rel.meta.target->kind, "release");
  EXPECT_EQ(rel.meta.target->opt_level, "-O2");
  EXPECT_EQ(FindRule(rel, "debug-build"), nullptr);
}

TEST(RunCli, NvtxRangesAreRecorded) {
  std::string app = Bin("run_nvtx_app");
  if (access(app.c_str(), X_OK) != 0) GTEST_SKIP() << "built without the NVTX v3 headers";
  auto p = RunJson("-- " + app);
  std::map<std::string, int> count;
  for (const auto& r : p.ranges) {
    count[r.domain + ":" + r.name]++;
    if (r.name == "decode" || r.name == "infer") {
      ASSERT_GE(r.parent, 0) << r.name;
      EXPECT_EQ(p.ranges[r.parent].name, "frame");
    }
  }
  EXPECT_EQ(count["nvtx:frame"], 2);
  EXPECT_EQ(count["camera:decode"], 2);
  EXPECT_EQ(count["nvtx:infer"], 2);
  EXPECT_EQ(count["nvtx:whole-run"], 1);
  // --no-nvtx: nothing recorded, and said so.
  auto q = RunJson("--no-nvtx -- " + app);
  EXPECT_TRUE(q.ranges.empty());
}

}  // namespace
}  // namespace opscope

namespace opscope {
namespace {

// The example pipeline before and after removing its deliberate bottleneck (the naive resize):
// `diff` of the two `run` profiles puts the pre-processing change first.
TEST(RunCli, DiffOfPipelineBeforeAfterFastPreprocess) {
  std::string tmp = Tmp();
  std::string app = std::string(OPSCOPE_BINARY_DIR) + "/examples/pipeline_example 1";
  ASSERT_EQ(RunShell(Opscope() + " run -o " + tmp + "/b.json -- " + app).exit_code, 0);
  ASSERT_EQ(
      RunShell(Opscope() + " run -o " + tmp + "/a.json -- " + app + " --fast-preprocess").exit_code,
      0);
  auto r = RunShell(Opscope() + " diff --format json " + tmp + "/b.json " + tmp + "/a.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_GE(j["ranges"].size(), 3u);
  std::string first = j["ranges"][0]["name"];
  EXPECT_TRUE(first == "pre-processing" || first == "pre-processing/resize") << first;
  EXPECT_LT(j["ranges"][0]["delta_ms"].get<double>(), 0);
}

}  // namespace
}  // namespace opscope

namespace opscope {
namespace {

TEST(RunCli, ThreadsAndReusedNameBuffers) {
  auto p = RunJson("-- " + Bin("run_threads_app"));
  std::map<std::string, int> count;
  std::set<int32_t> tids;
  for (const auto& r : p.ranges) {
    count[r.name]++;
    tids.insert(r.tid);
    if (r.name.starts_with("thread-")) {
      ASSERT_GE(r.parent, 0);
      EXPECT_TRUE(p.ranges[r.parent].name.starts_with("job-"));
      EXPECT_EQ(p.ranges[r.parent].tid, r.tid);
    }
  }
  EXPECT_EQ(tids.size(), 4u);
  EXPECT_EQ(count["job-0"], 100);
  EXPECT_EQ(count["job-1"], 100);
  for (int t = 0; t < 4; ++t) EXPECT_EQ(count["thread-" + std::to_string(t)], 50) << t;
}

}  // namespace
}  // namespace opscope

namespace opscope {
namespace {

int CountRanges(const profile::Profile& p, const std::string& name) {
  int n = 0;
  for (const auto& r : p.ranges) n += r.name == name;
  return n;
}

bool HasDegradation(const profile::Profile& p, const std::string& text) {
  for (const auto& d : p.meta.degradations)
    if (d.find(text) != std::string::npos) return true;
  return false;
}

// The recorder inside the program writes its closed ranges when the program dies of a signal.
TEST(RunCli, CrashedProgramKeepsItsClosedRangesAndIsCalledCrashed) {
  // overflow: a stack overflow leaves no stack for the handler; it runs on the recorder's
  // alternate stack (overflow-thread: the one installed for a second thread when it recorded).
  for (const std::string how : {"crash", "abort", "overflow", "overflow-thread"}) {
    std::string err;
    auto p = RunJson("-- sh -c 'ulimit -c 0; exec " + Bin("run_signal_app") + " " + how + "'", &err,
                     128 + (how == "abort" ? SIGABRT : SIGSEGV));
    EXPECT_EQ(CountRanges(p, "frame"), 3) << how << "\n" << err;
    EXPECT_EQ(CountRanges(p, "doomed"), 1) << how << ": the open range ends at the crash";
    if (how == "overflow-thread") EXPECT_EQ(CountRanges(p, "thread_frame"), 1) << err;
    EXPECT_TRUE(HasDegradation(p, how == "abort" ? "crashed (SIGABRT" : "crashed (SIGSEGV")) << err;
    EXPECT_FALSE(HasDegradation(p, "annotate the program")) << err;
  }
}

TEST(RunCli, ProgramThatDiesBeforeAnyRangeIsNotToldToAnnotate) {
  std::string err;
  auto p = RunJson("-- sh -c 'kill -TERM $$'", &err, 128 + SIGTERM);
  EXPECT_TRUE(p.ranges.empty());
  EXPECT_TRUE(HasDegradation(p, "no ranges recorded: the program was killed by SIGTERM")) << err;
  EXPECT_FALSE(HasDegradation(p, "annotate the program")) << err;
}

// A program killed by SIGKILL runs no handler at all: the ranges it closed reach opscope because
// the recorder writes them as they close (every 100 ms); the one still open is said to be missing.
TEST(RunCli, SigkilledProgramKeepsTheRangesItHadClosed) {
  std::string err;
  auto p = RunJson("-- " + Bin("run_signal_app") + " sigkill", &err, 128 + SIGKILL);
  EXPECT_EQ(CountRanges(p, "frame"), 3) << err;
  EXPECT_EQ(CountRanges(p, "many"), 1000) << err;
  EXPECT_EQ(CountRanges(p, "doomed"), 0) << "its end is not known\n" << err;
  EXPECT_TRUE(HasDegradation(p, "was killed by SIGKILL")) << err;
  EXPECT_TRUE(HasDegradation(p, "1 range(s) open at its last write")) << err;
  EXPECT_FALSE(HasDegradation(p, "before any range was recorded")) << err;
}

// Children that end with _exit() run no exit handlers: the recorder catches _exit itself (and
// stays out of a vfork()ed child, which shares its parent's memory).
TEST(RunCli, ChildThatEndsWithUnderscoreExitKeepsItsRanges) {
  std::string err;
  auto p = RunJson("-- " + Bin("run_signal_app") + " fork-exit", &err);
  EXPECT_EQ(CountRanges(p, "child_frame"), 5) << err;
  EXPECT_EQ(CountRanges(p, "frame"), 3) << "the parent's, once: the children record their own\n"
                                        << err;
  EXPECT_EQ(CountRanges(p, "doomed"), 1) << err;
  EXPECT_FALSE(HasDegradation(p, "still open")) << err;
  // The NVTX library, loaded by NVTX's dlopen, has the annotate runtime end its file too.
  const std::string nvtx_app = Bin("run_nvtx_app");
  if (access(nvtx_app.c_str(), X_OK) != 0) return;
  p = RunJson("-- " + nvtx_app + " fork-exit", &err);
  EXPECT_EQ(CountRanges(p, "child_frame"), 3) << err;
  EXPECT_EQ(CountRanges(p, "parent_frame"), 1) << err;
}

// Signals sent to opscope while the program runs: forwarded to its process group, what was
// recorded is printed and written, and opscope exits with 128+signal.
struct SignalledRun {
  int exit_code = -1;
  std::string out, err;
  profile::Profile p;
};

SignalledRun RunAndSignal(const std::string& name, int sig, bool whole_group) {
  const std::string dir = Tmp() + "/" + name;
  mkdir(dir.c_str(), 0755);
  const std::string ready = dir + "/ready", json = dir + "/run.json";
  unlink(ready.c_str());
  unlink(json.c_str());
  int pid = testing::StartInOwnGroup(
      {Opscope(), "run", "-o", json, "--", Bin("run_signal_app"), "wait", ready}, dir + "/out.txt",
      dir + "/err.txt");
  SignalledRun s;
  EXPECT_GT(pid, 0);
  EXPECT_TRUE(testing::WaitForFile(ready));
  kill(whole_group ? -pid : pid, sig);
  s.exit_code = testing::WaitForExit(pid, 20);
  s.out = testing::ReadAll(dir + "/out.txt");
  s.err = testing::ReadAll(dir + "/err.txt");
  auto p = profile::LoadProfile(json);
  EXPECT_TRUE(p.ok()) << p.status().message() << "\n" << s.err;
  if (p.ok()) s.p = *p;
  return s;
}

TEST(RunCli, SigtermToOpscopeReportsTheRangesRecordedSoFar) {
  SignalledRun s = RunAndSignal("sigterm", SIGTERM, false);
  EXPECT_EQ(s.exit_code, 128 + SIGTERM) << s.err;
  EXPECT_EQ(CountRanges(s.p, "frame"), 3) << s.err;
  EXPECT_NE(s.out.find("frame"), std::string::npos) << "the table is printed\n" << s.out;
  EXPECT_TRUE(HasDegradation(s.p, "received SIGTERM")) << s.err;
}

TEST(RunCli, SigintToOpscopesPidOrToTheWholeGroupReportsTheRanges) {
  SignalledRun pid_only = RunAndSignal("sigint_pid", SIGINT, false);
  // (Dying of SIGINT reads as 130 too: the printed table tells opscope finished.)
  EXPECT_EQ(pid_only.exit_code, 128 + SIGINT) << pid_only.err;
  EXPECT_NE(pid_only.out.find("frame"), std::string::npos) << pid_only.out;
  EXPECT_EQ(CountRanges(pid_only.p, "frame"), 3) << pid_only.err;
  SignalledRun ctrl_c = RunAndSignal("sigint_group", SIGINT, true);
  EXPECT_EQ(ctrl_c.exit_code, 128 + SIGINT) << ctrl_c.err;
  EXPECT_NE(ctrl_c.out.find("frame"), std::string::npos) << ctrl_c.out;
  EXPECT_EQ(CountRanges(ctrl_c.p, "frame"), 3) << ctrl_c.err;
  EXPECT_EQ(CountRanges(ctrl_c.p, "doomed"), 1) << ctrl_c.err;
}

}  // namespace
}  // namespace opscope
