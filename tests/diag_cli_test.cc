// End-to-end tests of `opscope diff` and `opscope machine`.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "base/strings.h"
#include "diag_cli_util.h"

namespace opscope {
namespace {

using testing::Opscope;
using testing::RunShell;

std::string Tmp() { return testing::PerTestTempDir("opscope_diag_cli"); }
std::string Data(const std::string& n) {
  return std::string(OPSCOPE_SOURCE_DIR) + "/src/analysis/testdata/" + n;
}

TEST(DiagCli, DiffTableHeadline) {
  auto r =
      RunShell(Opscope() + " diff " + Data("model_before.json") + " " + Data("model_after.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string first = r.out.substr(0, r.out.find('\n'));
  EXPECT_NE(first.find("end-to-end 40.230 ms → 20.115 ms (-50.0%"), std::string::npos) << first;
  EXPECT_NE(first.find("2.00× faster"), std::string::npos) << first;
  EXPECT_NE(r.out.find("to_nhwc"), std::string::npos);
}

TEST(DiagCli, DiffJsonToFile) {
  std::string out = Tmp() + "/d.json";
  auto r = RunShell(Opscope() + " diff -o " + out + " " + Data("model_before.json") + " " +
                    Data("model_after.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(testing::ReadAll(out));
  EXPECT_EQ(j["schema"], "opscope.diff/1");
  EXPECT_TRUE(j["e2e"]["significant"].get<bool>());
  EXPECT_EQ(j["nodes"][0]["name"], "to_nhwc");
}

// diff writes through the output path like every command: -o repeatable (table, json, csv,
// html, chrome), --format to stdout, -o - beside files; a format meant for one profile is refused
// before any work, naming the file.
TEST(DiagCli, DiffWritesEveryDiffFormat) {
  const std::string dir = Tmp();
  // The test profiles with one op event each, so both sides have a timeline.
  auto with_event = [&](const std::string& name) {
    auto j = nlohmann::json::parse(testing::ReadAll(Data(name)));
    j["op_events"] = nlohmann::json::array({nlohmann::json::array({0, 0, 7, 1000, 500})});
    const std::string path = dir + "/" + name;
    std::ofstream(path) << j.dump();
    return path;
  };
  const std::string before = with_event("model_before.json"),
                    after = with_event("model_after.json");
  auto r =
      RunShell(Opscope() + " diff " + before + " " + after + " -o " + dir + "/d.csv -o " + dir +
               "/d.trace.json -o " + dir + "/d.html -o " + dir + "/d.json -o " + dir + "/d.txt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;  // the headline
  EXPECT_NE(r.err.find("wrote " + dir + "/d.trace.json (chrome)"), std::string::npos) << r.err;
  const std::string csv = testing::ReadAll(dir + "/d.csv");
  EXPECT_EQ(csv.rfind("kind,name,op_type,change,unit,before,after,delta,delta_pct", 0), 0u) << csv;
  EXPECT_NE(csv.find("\nnode,"), std::string::npos) << csv;
  EXPECT_EQ(testing::TraceProblems(dir + "/d.trace.json"), "");
  auto trace = nlohmann::json::parse(testing::ReadAll(dir + "/d.trace.json"));
  std::set<std::string> sides;
  for (const auto& e : trace["traceEvents"])
    if (e["name"] == "process_name")
      sides.insert(e["args"]["name"].get<std::string>().substr(0, 6));
  EXPECT_TRUE(sides.count("before") && sides.count("after:")) << trace.dump().substr(0, 400);
  EXPECT_EQ(nlohmann::json::parse(testing::ReadAll(dir + "/d.json"))["schema"], "opscope.diff/1");
  EXPECT_NE(testing::ReadAll(dir + "/d.html").find("<html"), std::string::npos);
  EXPECT_NE(testing::ReadAll(dir + "/d.txt").find("op type"), std::string::npos);

  r = RunShell(Opscope() + " diff " + before + " " + after + " --format csv");
  EXPECT_EQ(r.out.rfind("kind,name", 0), 0u) << r.out;
  r = RunShell(Opscope() + " diff " + before + " " + after + " -o - -o " + dir + "/e.json");
  EXPECT_NE(r.out.find("op type"), std::string::npos) << r.out;
  r = RunShell(Opscope() + " diff " + before + " " + after + " -o " + dir + "/d.svg");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-o " + dir + "/d.svg: diff cannot write svg"), std::string::npos) << r.err;
  const size_t at = r.err.find("its formats: ");
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string listed = r.err.substr(at);
  for (const char* f : {"table", "json", "csv", "chrome", "html"})
    EXPECT_NE(listed.find(f), std::string::npos) << f << ": " << r.err;
  EXPECT_EQ(listed.find("svg"), std::string::npos) << r.err;
  EXPECT_FALSE(std::ifstream(dir + "/d.svg").good());
}

TEST(DiagCli, DiffBadInputs) {
  std::string bad = Tmp() + "/bad.json";
  { std::ofstream(bad) << "{\"schema\": \"opscope.profile/1\", \"ops\": [{\"name\": \"\"}"; }
  auto r = RunShell(Opscope() + " diff " + bad + " " + Data("model_after.json"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not valid JSON"), std::string::npos) << r.err;
  auto m = RunShell(Opscope() + " diff /nonexistent.json " + Data("model_after.json"));
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_EQ(std::count(m.err.begin(), m.err.end(), '\n'), 1) << m.err;
}

// diff names a record file for what it is, refuses profiles of different kinds unless forced, and
// refuses implausible times at load with the field named.
TEST(DiagCli, DiffRefusesWhatItCannotCompareHonestly) {
  const std::string before = Data("model_before.json"), after = Data("model_after.json");
  std::string rec = Tmp() + "/x.rec";
  { std::ofstream(rec, std::ios::binary) << std::string("OPSREC\0\1", 8) << std::string(40, '\0'); }
  auto r = RunShell(Opscope() + " diff " + rec + " " + after);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.find("not valid JSON"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("record file"), std::string::npos) << r.err;

  auto j = nlohmann::json::parse(testing::ReadAll(after));
  j["meta"]["kind"] = "run";
  std::string run = Tmp() + "/run.json";
  { std::ofstream(run) << j.dump(); }
  r = RunShell(Opscope() + " diff " + before + " " + run);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("different things"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  r = RunShell(Opscope() + " diff --force " + before + " " + run);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("note: before is a model profile"), std::string::npos) << r.out;

  j = nlohmann::json::parse(testing::ReadAll(after));
  j["e2e"]["runs_ms"][2] = 1e300;
  std::string absurd = Tmp() + "/absurd.json";
  { std::ofstream(absurd) << j.dump(); }
  r = RunShell(Opscope() + " diff " + before + " " + absurd);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("e2e.runs_ms[2] = 1e+300 ms is not a plausible time"), std::string::npos)
      << r.err;
}

// Every numeric option of every subcommand refuses negative, zero (where it makes no sense),
// NaN, infinite and out-of-range values, and -x refuses an empty separator: one line naming the
// option, exit status 2, before any work starts.
TEST(DiagCli, BadNumericOptionsAreOneLineUsageErrors) {
  const std::string prof = Data("model_before.json");
  struct Case {
    std::string args, option;
  };
  const Case cases[] = {
      {"machine --peak-gflops -5 --peak-gbps 10 --machine /nonexistent/m.json", "--peak-gflops"},
      {"machine --peak-gflops 100 --peak-gbps 0 --machine /nonexistent/m.json", "--peak-gbps"},
      {"machine --peak-gflops nan --peak-gbps 10 --machine /nonexistent/m.json", "--peak-gflops"},
      {"machine --peak-gflops 100 --peak-gbps inf --machine /nonexistent/m.json", "--peak-gbps"},
      {"profile /nonexistent.onnx --peak-gflops -5", "--peak-gflops"},
      {"profile /nonexistent.onnx --peak-gbps 0", "--peak-gbps"},
      {"profile /nonexistent.onnx --peak-gflops nan", "--peak-gflops"},
      {"profile /nonexistent.onnx --peak-gbps inf", "--peak-gbps"},
      {"profile /nonexistent.onnx --runs 0", "--runs"},
      {"profile /nonexistent.onnx --warmup -1", "--warmup"},
      {"profile /nonexistent.onnx --top -1", "--top"},
      {"profile /nonexistent.onnx -F 0", "--freq"},
      {"profile /nonexistent.onnx -F nan", "--freq"},
      {"profile /nonexistent.onnx --seed -1", "--seed"},
      {"report " + prof + " --threshold nan", "--threshold"},
      {"report " + prof + " --threshold -1", "--threshold"},
      {"report " + prof + " --top -1", "--top"},
      {"report " + prof + " --top 1.5", "--top"},
      {"record -F 0 -o /nonexistent/x.rec -- true", "--freq"},
      {"record -F inf -o /nonexistent/x.rec -- true", "--freq"},
      {"record -m -1 -o /nonexistent/x.rec -- true", "--mmap-pages"},
      {"record --call-graph dwarf,-8 -o /nonexistent/x.rec -- true", "dwarf,-8"},
      {"stat -r 0 -- true", "--repeat"},
      {"stat -x '' -- true", "--field-separator"},
      {"run -r 0 -- true", "--runs"},
      {"run -w -1 -- true", "--warmup"},
      {"diff --rows -1 " + prof + " " + prof, "--rows"},
      {"diff --rows nan " + prof + " " + prof, "--rows"},
      {"machine --threads 0 --machine /nonexistent/m.json", "--threads"},
      {"bogus --flag", "unknown command 'bogus' (commands: diff, doctor,"},
      {"", "give a command: diff, doctor,"},
      {"report " + prof + " --bogus", "unexpected argument '--bogus'"},
      {"report " + prof + " extra1 extra2", "unexpected arguments: extra1 extra2"},
      {"report " + prof + " --top", "--top needs a value: a whole number"},
      {"stat -e", "--event needs a value"},
  };
  for (const Case& c : cases) {
    auto r = RunShell(Opscope() + " " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("opscope: error: ", 0), 0u) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.option), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args << "\n" << r.out;
  }
}

// perf-grade habits (#44): perf's spellings, opscope's words for every usage error, only the
// formats a command can write, -o /dev/null, -q, and each status line said once.
TEST(DiagCli, CommandLineHabits) {
  const std::string prof = Data("model_before.json");
  // `report --stdio` (perf report's flag) prints the tables, as without it.
  auto plain = RunShell(Opscope() + " report " + prof);
  auto stdio = RunShell(Opscope() + " report " + prof + " --stdio");
  EXPECT_EQ(stdio.exit_code, 0) << stdio.err;
  EXPECT_EQ(stdio.out, plain.out);
  // Usage says `opscope`, not the path it was started by; --format lists what the command makes.
  auto help = RunShell(Opscope() + " profile --help");
  EXPECT_NE(help.out.find("Usage: opscope profile"), std::string::npos) << help.out;
  const size_t fmt_at = help.out.find("--format");
  ASSERT_NE(fmt_at, std::string::npos) << help.out;
  const std::string fmt_line = help.out.substr(fmt_at, help.out.find('\n', fmt_at) - fmt_at);
  for (const char* f : {"table", "json", "chrome", "html", "pprof", "ops-csv"})
    EXPECT_NE(fmt_line.find(f), std::string::npos) << f << ": " << fmt_line;
  for (const char* f : {"stat-csv", "ranges-csv"})
    EXPECT_EQ(fmt_line.find(f), std::string::npos) << f << ": " << fmt_line;
  // Subcommand descriptions in one voice: a lower-case verb phrase each.
  auto top = RunShell(Opscope() + " --help");
  const size_t subs = top.out.find("Subcommands:");
  ASSERT_NE(subs, std::string::npos) << top.out;
  int described = 0;
  for (const std::string& line : Split(top.out.substr(subs), '\n')) {
    if (line.rfind("  ", 0) != 0) continue;
    const size_t text = line.find_first_not_of(' ', line.find(' ', 2));
    ASSERT_NE(text, std::string::npos) << line;
    EXPECT_TRUE(std::islower(static_cast<unsigned char>(line[text]))) << line;
    ++described;
  }
  EXPECT_GE(described, 12);
  auto refused = RunShell(Opscope() + " profile /nonexistent.onnx --format stat-csv");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("profile cannot write stat-csv"), std::string::npos) << refused.err;
  // -e/--event/--events everywhere: each spelling reaches the event check (nothing is counted,
  // so no perf_event_open is needed).
  const std::string model = std::string(OPSCOPE_SOURCE_DIR) + "/models/bev_demo.onnx";
  for (const std::string& cmd :
       {std::string("stat % -- true"), std::string("record -o /nonexistent/x.rec % -- true"),
        "profile " + model + " --runs 1 --warmup 0 %"})
    for (const char* spelling : {"-e", "--event", "--events"}) {
      std::string args = cmd;
      args.replace(args.find('%'), 1, std::string(spelling) + " bogus-event-xyz");
      auto r = RunShell(Opscope() + " " + args);
      EXPECT_EQ(r.exit_code, 2) << cmd << " " << spelling;
      EXPECT_EQ(r.err.find("unexpected"), std::string::npos) << cmd << " " << spelling << r.err;
      EXPECT_NE(r.err.find("bogus-event-xyz"), std::string::npos)
          << cmd << " " << spelling << r.err;
    }
  // -o /dev/null: no extension to go by, the default format.
  auto null_out = RunShell(Opscope() + " report " + prof + " -o /dev/null");
  EXPECT_EQ(null_out.exit_code, 0) << null_out.err;
  // Each status line once: the samples' warning is not repeated for every stack format.
  const std::string dir = Tmp();
  const std::string synthetic =
      std::string(OPSCOPE_SOURCE_DIR) + "/src/report/testdata/synthetic.profile.json";
  auto many = RunShell(Opscope() + " report " + synthetic + " -o " + dir + "/a.folded -o " + dir +
                       "/b.svg -o " + dir + "/c.pb.gz");
  EXPECT_EQ(many.exit_code, 0) << many.err;
  size_t warned = 0;
  for (size_t at = many.err.find("no symbol table"); at != std::string::npos;
       at = many.err.find("no symbol table", at + 1))
    ++warned;
  EXPECT_EQ(warned, 1u) << many.err;
  EXPECT_NE(many.err.find("wrote " + dir + "/c.pb.gz (pprof)"), std::string::npos) << many.err;
  // -q/--quiet, before or after the command: nothing but data and errors.
  for (const std::string& cmd :
       {Opscope() + " -q report " + synthetic + " -o " + dir + "/q.svg",
        Opscope() + " report " + synthetic + " --quiet -o " + dir + "/q2.svg"}) {
    auto q = RunShell(cmd);
    EXPECT_EQ(q.exit_code, 0) << cmd << "\n" << q.err;
    EXPECT_TRUE(q.err.empty()) << cmd << "\n" << q.err;
  }
  auto q_err = RunShell(Opscope() + " -q report /nonexistent.json");
  EXPECT_EQ(q_err.exit_code, 2);
  EXPECT_EQ(q_err.err.rfind("opscope: error: ", 0), 0u) << q_err.err;
}

// Reading a big profile shows how far it got (the streaming readers' progress, #44 item 9).
TEST(DiagCli, ReadingABigProfileShowsProgress) {
  const std::string big = Tmp() + "/big.json";
  {
    std::ofstream f(big);
    f << "{\"schema\": \"opscope.profile/1\", \"meta\": {\"kind\": \"profile\", \"runs\": 1},"
         " \"e2e\": {\"runs_ms\": [10]}, \"ops\": [";
    for (int i = 0; i < 40000; ++i)
      f << (i ? "," : "") << "{\"name\": \"node_" << i
        << "\", \"op_type\": \"Relu\", \"index\": " << i
        << ", \"output_shapes\": [[1, 64, 56, 56]], \"runs_ms\": [0.0001]}";
    f << "]}";
  }
  auto r = RunShell("OPSCOPE_PROGRESS_SECONDS=0 " + Opscope() + " report " + big + " -o /dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("opscope: reading " + big + " (MB) ["), std::string::npos) << r.err;
  auto q =
      RunShell("OPSCOPE_PROGRESS_SECONDS=0 " + Opscope() + " -q report " + big + " -o /dev/null");
  EXPECT_EQ(q.err.find("reading"), std::string::npos) << q.err;
}

TEST(DiagCli, MachineByHandAndShow) {
  std::string f = Tmp() + "/cfg/opscope/machine.json";
  auto r = RunShell(
      Opscope() + " machine --peak-gflops 200 --peak-gbps 50 --cpu-model 'Jetson Orin' --machine " +
      f);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(testing::ReadAll(f));
  EXPECT_EQ(j["method"], "manual");
  EXPECT_EQ(j["peak_gflops_all"], 200.0);
  EXPECT_EQ(j["cpu_model"], "Jetson Orin");
  auto s = RunShell(Opscope() + " machine --show --format json --machine " + f);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(nlohmann::json::parse(s.out)["triad_gbps"], 50.0);
  auto missing = RunShell(Opscope() + " machine --show --machine " + Tmp() + "/none.json");
  EXPECT_EQ(missing.exit_code, 2);
}

TEST(DiagCli, MachineMeasuresToXdgConfig) {
  std::string cfg = Tmp() + "/xdg";
  std::string file = cfg + "/opscope/machine.json";
  std::remove(file.c_str());
  auto r = RunShell("XDG_CONFIG_HOME=" + cfg + " " + Opscope() + " machine --quick --threads 1");
  // The noise check decides (a shared machine may be noisy): stored, or refused with the reason
  // and nothing written.
  if (r.exit_code != 0) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("ceilings not stored"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("quiet machine"), std::string::npos) << r.err;
    EXPECT_NE(access(file.c_str(), F_OK), 0) << "refused ceilings were stored";
    r = RunShell("XDG_CONFIG_HOME=" + cfg + " " + Opscope() +
                 " machine --quick --threads 1 --force");
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(testing::ReadAll(file));
  EXPECT_EQ(j["method"], "measured");
  EXPECT_GT(j["peak_gflops_one"].get<double>(), 0);
  EXPECT_GT(j["triad_gbps"].get<double>(), 0);
  EXPECT_FALSE(j["cpu_model"].get<std::string>().empty());
  // The CPU stamp and the noise figure are stored with the ceilings.
  EXPECT_GT(j["cpus"].get<int>(), 0);
  EXPECT_EQ(j["repeats"].get<int>(), 3);
  EXPECT_GE(j["spread_pct"].get<double>(), 0);
  EXPECT_EQ(j["schema"], "opscope.machine/2");
}

// `machine --cpus`: the measurement pinned to the CPUs given, one all-core thread per CPU, and the
// file says which CPUs (one file per cluster on a big.LITTLE board). A CPU that is not online is
// a usage error naming the flag.
TEST(DiagCli, MachineCpusPinsTheMeasurement) {
  const std::string file = Tmp() + "/machine_cpu0.json";
  auto r = RunShell(Opscope() + " machine --quick --force --cpus 0 --machine " + file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(testing::ReadAll(file));
  EXPECT_EQ(j["pinned_cpus"], "0");
  EXPECT_EQ(j["threads"], 1);
  EXPECT_NE(r.out.find("measured on cpus                   0"), std::string::npos) << r.out;
  auto bad = RunShell(Opscope() + " machine --quick --cpus 0-4095 --machine " + file);
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--cpus '0-4095': CPU "), std::string::npos) << bad.err;
}

// Stamped ceilings from another CPU are refused by `profile`, naming the file and both CPUs.
TEST(DiagCli, ProfileRefusesCeilingsFromAnotherCpu) {
  std::string f = Tmp() + "/other_cpu_machine.json";
  {
    std::ofstream(f) << R"({"schema": "opscope.machine/2", "peak_gflops_all": 500,
      "peak_gflops_one": 60, "triad_gbps": 100, "threads": 64, "cpus": 64,
      "cpu_model": "Some Other CPU 9000", "cpu_flags": "avx2 avx512f fma",
      "method": "measured"})";
  }
  auto r = RunShell(Opscope() + " profile " + std::string(OPSCOPE_SOURCE_DIR) +
                    "/tests/models/twin_matmul.onnx --runs 1 --warmup 0 --machine " + f);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(f + ": machine ceilings were measured on 'Some Other CPU 9000'"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("but this CPU is"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("run `opscope machine` again"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace opscope
