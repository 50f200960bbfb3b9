// `opscope import` end to end, per format: import (with the model join where the format has
// per-layer rows), then `report` and `diff` on the foreign file directly and on the import.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>

#include "tests/cli_util.h"

namespace opscope::testing {
namespace {

std::string Data(const std::string& f) {
  return std::string(OPSCOPE_SOURCE_DIR) + "/src/importers/testdata/" + f;
}
std::string Model() { return std::string(OPSCOPE_SOURCE_DIR) + "/models/bev_demo.onnx"; }

nlohmann::json Load(const std::string& path) {
  return nlohmann::json::parse(ReadAll(path), nullptr, false);
}

struct Case {
  const char* file;
  const char* format;
  bool join;
};
// How GoogleTest (and CTest's test list) names a case: the fixture, not 24 raw bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.file << " (" << c.format << ")"; }

class ImportCli : public ::testing::TestWithParam<Case> {};

TEST_P(ImportCli, ImportsReportsAndDiffs) {
  const Case& c = GetParam();
  std::string dir = TempDir();
  std::string out = dir + "/a.json";
  std::vector<std::string> argv = {OpscopeBinary(), "import", Data(c.file), "-o", out};
  if (c.join) {
    argv.push_back("--model");
    argv.push_back(Model());
    argv.push_back("--device");
    argv.push_back("orin-nx");
  }
  CommandResult r = RunCommand(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // What was read goes to stderr; stdout holds the tables.
  EXPECT_NE(r.err.find(std::string("opscope: imported ") + Data(c.file) + " (" + c.format + ")"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("opscope "), std::string::npos) << r.out;
  nlohmann::json j = Load(out);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["schema"], "opscope.profile/1");
  EXPECT_EQ(j["meta"]["kind"], std::string("import/") + c.format);
  if (c.join) {
    EXPECT_NE(r.err.find("opscope: model join:"), std::string::npos) << r.err;
    EXPECT_EQ(j["meta"]["machine"]["method"], "device table: orin-nx (data-sheet peaks)");
  }
  // report reads both the foreign file (detected by content) and the import.
  CommandResult rep = RunCommand({OpscopeBinary(), "report", Data(c.file)});
  EXPECT_EQ(rep.exit_code, 0) << rep.err;
  // Its Chrome trace keeps every rule (report/trace_check.h), or, for totals without a timeline,
  // is refused with the reason; the GPU traces always have one.
  const std::string trace = TempDir() + "/import.trace.json";
  CommandResult tr = RunCommand({OpscopeBinary(), "report", Data(c.file), "-o", trace});
  const bool timeline = std::string(c.format) == "nsys" || std::string(c.format) == "pytorch" ||
                        std::string(c.file) == "nvprof_trace.csv";
  if (timeline || tr.exit_code == 0) {
    EXPECT_EQ(tr.exit_code, 0) << tr.err;
    EXPECT_EQ(TraceProblems(trace), "");
  } else {
    EXPECT_EQ(tr.exit_code, 2) << tr.err;
    EXPECT_NE(tr.err.find("nothing to draw"), std::string::npos) << tr.err;
  }
  std::remove(trace.c_str());
  CommandResult rep2 = RunCommand({OpscopeBinary(), "report", out});
  EXPECT_EQ(rep2.exit_code, 0) << rep2.err;
  // diff of the foreign file against its own import: nothing changed.
  CommandResult d =
      RunCommand({OpscopeBinary(), "diff", Data(c.file), Data(c.file), "--format", "json"});
  if (std::string(c.format) == "perf-script" || std::string(c.format) == "nsys" ||
      std::string(c.file) == "nvprof_trace.csv") {
    // No per-op rows: diff has nothing per node but must not fail.
    EXPECT_EQ(d.exit_code, 0) << d.err;
  } else {
    ASSERT_EQ(d.exit_code, 0) << d.err;
    nlohmann::json dj = nlohmann::json::parse(d.out, nullptr, false);
    ASSERT_FALSE(dj.is_discarded()) << d.out;
    for (const auto& n : dj["nodes"]) EXPECT_EQ(n["delta_ms"].get<double>(), 0.0) << n.dump();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Formats, ImportCli,
    ::testing::Values(
        Case{"ort_bev_all.json", "ort", true}, Case{"ort_2019.json", "ort", false},
        Case{"trt8_bev.json", "tensorrt", true}, Case{"trt7_bev.json", "tensorrt", true},
        Case{"perf_script_python.txt", "perf-script", false},
        Case{"nsys_small.sqlite", "nsys", false}, Case{"pytorch_gpu.json", "pytorch", false},
        Case{"tflite_v2.txt", "tflite", true}, Case{"tflite_v1.txt", "tflite", false},
        Case{"armnn_cpuacc.json", "armnn", true},
        Case{"armnn_executenetwork_gpuacc.log", "armnn", false},
        Case{"nvprof_summary.csv", "nvprof", false}, Case{"nvprof_trace.csv", "nvprof", false},
        Case{"nsys_stats_sum.csv", "nsys-stats", false},
        Case{"real/trt10_trtexec_windows.json", "tensorrt", false},
        Case{"real/nsys_stats_2024_default.csv", "nsys-stats", false},
        Case{"real/tflite_csv_mode.txt", "tflite", false},
        Case{"real/armnn_1902_no_ids.json", "armnn", false}),
    [](const ::testing::TestParamInfo<Case>& i) {
      std::string s = i.param.file;
      for (char& ch : s)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return s;
    });

TEST(ImportCliDiff, TwoRuntimesOfTheSameModelNodeByNode) {
  std::string dir = TempDir();
  CommandResult a = RunCommand({OpscopeBinary(), "import", Data("ort_bev_basic.json"), "--model",
                                Model(), "-o", dir + "/ort.json"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  CommandResult b =
      RunCommand({OpscopeBinary(), "import", Data("trt8_bev.json"), "--layer-info",
                  Data("trt8_bev_layers.json"), "--model", Model(), "-o", dir + "/trt.json"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  CommandResult d = RunCommand(
      {OpscopeBinary(), "diff", dir + "/ort.json", dir + "/trt.json", "--format", "json"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  nlohmann::json dj = nlohmann::json::parse(d.out, nullptr, false);
  ASSERT_FALSE(dj.is_discarded());
  int changed = 0;
  for (const auto& n : dj["nodes"]) changed += n["change"] == "changed";
  EXPECT_GE(changed, 20) << d.out;  // the ONNX nodes both runtimes ran
}

// Two TensorRT engines of one model that fused it differently: the layers are compared through
// their ONNX nodes, as groups, straight from the foreign files.
TEST(ImportCliDiff, TensorRtLayersFusedDifferentlyAreComparedAsGroups) {
  CommandResult d = RunCommand({OpscopeBinary(), "diff", Data("trt8_bev.json"),
                                Data("trt8_bev_split.json"), "--format", "json"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  nlohmann::json dj = nlohmann::json::parse(d.out, nullptr, false);
  ASSERT_FALSE(dj.is_discarded()) << d.out;
  ASSERT_EQ(dj["groups"].size(), 2u) << dj["groups"].dump();
  bool conv = false, head = false;
  for (const auto& g : dj["groups"]) {
    if (g["before_layers"][0] == "backbone.conv1 + backbone.conv1.bn + backbone.conv1.relu") {
      conv = true;
      EXPECT_EQ(g["after_layers"], nlohmann::json::array({"backbone.conv1 + backbone.conv1.bn",
                                                          "backbone.conv1.relu"}));
      EXPECT_NEAR(g["before_ms"].get<double>(), 0.15, 1e-9);
      EXPECT_NEAR(g["after_ms"].get<double>(), 0.17, 1e-9);
    }
    if (g["before_layers"][0] == "head.heatmap + PWN(head.heatmap.sigmoid)") {
      head = true;
      EXPECT_EQ(g["nodes"], nlohmann::json::array({"head.heatmap", "head.heatmap.sigmoid"}));
    }
  }
  EXPECT_TRUE(conv && head) << dj["groups"].dump();
  for (const auto& n : dj["nodes"]) {
    EXPECT_NE(n["name"], "backbone.conv1.relu") << "a grouped layer listed as appeared";
    EXPECT_NE(n["name"], "head.heatmap + PWN(head.heatmap.sigmoid)");
  }
  CommandResult t =
      RunCommand({OpscopeBinary(), "diff", Data("trt8_bev.json"), Data("trt8_bev_split.json")});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("layers compared as groups"), std::string::npos) << t.out;
}

TEST(ImportCliOrt, ThreadPoolStatsAreShownPerNode) {
  std::string dir = TempDir();
  CommandResult r = RunCommand(
      {OpscopeBinary(), "import", Data("real/ort_threadpool_stats.json"), "-o", dir + "/tp.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("thread pool (ONNX Runtime thread_scheduling_stats, per run)"),
            std::string::npos)
      << r.out;
  // conv: 2.5 loops, 3.5 threads on average (4 at most), 55.5 us waiting per run.
  EXPECT_NE(r.out.find("2.5      3.5 (  4)        3.5     11.0 us    295.0 us     55.5 us"),
            std::string::npos)
      << r.out;
  nlohmann::json j = Load(dir + "/tp.json");
  ASSERT_FALSE(j.is_discarded());
  bool found = false;
  for (const auto& op : j["ops"])
    if (op["name"] == "conv") found = op["counters"]["ort.threads_used"].get<double>() == 3.5;
  EXPECT_TRUE(found) << j["ops"].dump();
}

// An ONNX Runtime profile whose node names are an attacker's: markup, a spreadsheet formula,
// bytes that are not UTF-8.
std::string HostileOrtProfile(const std::string& dir) {
  const std::string path = dir + "/hostile_ort.json";
  std::string events = "[\n";
  // As they appear in the JSON text (the quotes escaped).
  const char* names[] = {"<img src=x onerror=alert(1)>", "=HYPERLINK(\\\"http://x\\\")",
                         "conv\xff\xfe", "@SUM(A1)"};
  int ts = 100;
  for (int run = 0; run < 2; ++run) {
    events += "{\"cat\":\"Session\",\"pid\":1,\"tid\":1,\"dur\":900,\"ts\":" + std::to_string(ts) +
              ",\"ph\":\"X\",\"name\":\"model_run\",\"args\":{}},\n";
    for (const char* n : names)
      events +=
          "{\"cat\":\"Node\",\"pid\":1,\"tid\":1,\"dur\":100,\"ts\":" + std::to_string(ts += 150) +
          ",\"ph\":\"X\",\"name\":\"" + n + "_kernel_time\",\"args\":{\"op_name\":\"Conv\"}},\n";
    ts += 1000;
  }
  events.resize(events.size() - 2);
  events += "\n]\n";
  std::ofstream(path, std::ios::binary) << events;
  return path;
}

// `import` writes through the output registry: the file is what its extension says (the stored
// XSS: an .html file holding the profile JSON, hostile names unescaped), an unknown extension is
// refused, and nothing is left in the working folder unless asked.
TEST(ImportCliOutputs, EveryFileIsWhatItsNameSays) {
  const std::string dir = TempDir();
  const std::string ort = HostileOrtProfile(dir);
  CommandResult r = RunCommand({OpscopeBinary(), "import", ort, "-o", dir + "/x.html", "-o",
                                dir + "/x.csv", "-o", dir + "/x.svg", "-o", dir + "/x.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = ReadAll(dir + "/x.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u) << html.substr(0, 200);
  EXPECT_EQ(html.find("<img src=x"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  const std::string csv = ReadAll(dir + "/x.csv");
  EXPECT_EQ(csv.rfind("index,name,op_type", 0), 0u) << csv;
  EXPECT_NE(csv.find(",'@SUM(A1),"), std::string::npos) << csv;
  EXPECT_EQ(csv.find(",=HYPERLINK"), std::string::npos) << csv;
  EXPECT_EQ(csv.find(",\"=HYPERLINK"), std::string::npos) << csv;
  EXPECT_EQ(ReadAll(dir + "/x.svg").rfind("<?xml", 0), 0u);
  nlohmann::json j = Load(dir + "/x.json");
  ASSERT_FALSE(j.is_discarded());
  bool replaced = false;
  for (const auto& op : j["ops"])
    replaced = replaced || op["name"] == "conv\xEF\xBF\xBD\xEF\xBF\xBD";
  EXPECT_TRUE(replaced) << j["ops"].dump();
  // An extension no format has is refused before anything is read.
  CommandResult xyz = RunCommand({OpscopeBinary(), "import", ort, "-o", dir + "/x.xyz"});
  EXPECT_EQ(xyz.exit_code, 2) << xyz.err;
  EXPECT_NE(xyz.err.find("cannot tell the format of"), std::string::npos) << xyz.err;
  // No -o: the tables on stdout, no file left behind.
  CommandResult plain =
      RunShell("cd '" + dir + "' && '" + OpscopeBinary() + "' import '" + ort + "' && ls");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("Hot operators"), std::string::npos) << plain.out;
  EXPECT_EQ(plain.out.find("opscope-import.json"), std::string::npos) << plain.out;
  // --format json to stdout is the profile.
  CommandResult js = RunCommand({OpscopeBinary(), "import", ort, "--format", "json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  EXPECT_FALSE(nlohmann::json::parse(js.out, nullptr, false).is_discarded());
}

// `report --machine FILE` diagnoses an old profile again: every op with FLOPs or bytes gets its
// stored roofline verdict and its time at the roof in the JSON, and the findings are redone.
TEST(ImportCliOutputs, ReportWithMachineCeilingsStoresTheVerdictPerOp) {
  const std::string dir = TempDir();
  const std::string imported = dir + "/ort.json";
  ASSERT_EQ(RunCommand({OpscopeBinary(), "import", Data("ort_bev_basic.json"), "--model", Model(),
                        "-o", imported})
                .exit_code,
            0);
  nlohmann::json before = Load(imported);
  for (const auto& op : before["ops"]) EXPECT_FALSE(op.contains("bound")) << op["name"];
  std::ofstream(dir + "/m.json") << R"({"schema": "opscope.machine/2", "peak_gflops_all": 100,
    "peak_gflops_one": 40, "triad_gbps": 10, "threads": 2, "cpu_model": "Test CPU",
    "method": "manual"})";
  CommandResult r = RunCommand(
      {OpscopeBinary(), "report", imported, "--machine", dir + "/m.json", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json after = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(after.is_discarded()) << r.out.substr(0, 300);
  int stored = 0;
  for (const auto& op : after["ops"]) {
    if (!op.contains("bound")) continue;
    if (op["expected_ms"].get<double>() == 0) {  // a Reshape moves no bytes: no time at a roof
      EXPECT_EQ(op["measured_over_expected"].get<double>(), 0) << op.dump();
      continue;
    }
    ++stored;
    EXPECT_NEAR(op["measured_over_expected"].get<double>(),
                op["stats"]["trimmed_mean"].get<double>() / op["expected_ms"].get<double>(),
                1e-9 * op["measured_over_expected"].get<double>())
        << op.dump();
  }
  EXPECT_GE(stored, 20);
  bool memory_bound_finding = false;
  for (const auto& f : after["findings"])
    memory_bound_finding = memory_bound_finding || f["rule"] == "memory-bound-hot";
  EXPECT_TRUE(memory_bound_finding) << after["findings"].dump();
  CommandResult bad = RunCommand({OpscopeBinary(), "report", imported, "--machine", Model()});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("not valid JSON"), std::string::npos) << bad.err;
}

// A failed write is exit 1 naming the output, never "wrote" and exit 0; special files as inputs
// are refused, not waited on forever.
TEST(ImportCliOutputs, WriteFailuresAndSpecialFiles) {
  const std::string dir = TempDir();
  const std::string ort = Data("ort_2019.json");
  CommandResult full =
      RunCommand({OpscopeBinary(), "import", ort, "-o", "/dev/full", "--format", "json"});
  EXPECT_EQ(full.exit_code, 1) << full.err;
  EXPECT_NE(full.err.find("/dev/full: write failed: No space left on device"), std::string::npos)
      << full.err;
  EXPECT_EQ(full.err.find("wrote"), std::string::npos) << full.err;
  struct stat st {};
  ASSERT_EQ(stat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/full was replaced";
  CommandResult piped =
      RunShell("'" + OpscopeBinary() + "' import '" + ort + "' --format json > /dev/full");
  EXPECT_EQ(piped.exit_code, 1) << piped.err;
  EXPECT_NE(piped.err.find("standard output: write failed"), std::string::npos) << piped.err;
  CommandResult null =
      RunCommand({OpscopeBinary(), "import", ort, "-o", "/dev/null", "--format", "json"});
  EXPECT_EQ(null.exit_code, 0) << null.err;
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null was replaced";
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<std::vector<std::string>> special = {{"import", fifo},
                                                         {"import", "/dev/zero"},
                                                         {"import", ort, "--model", fifo},
                                                         {"import", ort, "--model", "/dev/zero"},
                                                         {"report", fifo},
                                                         {"diff", fifo, ort},
                                                         {"profile", fifo},
                                                         {"profile", "/dev/zero"}};
  for (const auto& args : special) {
    std::vector<std::string> argv = {"timeout", "60", OpscopeBinary()};
    argv.insert(argv.end(), args.begin(), args.end());
    CommandResult r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << args.back() << ": " << r.err;
    EXPECT_TRUE(r.err.find("is a FIFO (named pipe), not a regular file") != std::string::npos ||
                r.err.find("is a character device, not a regular file") != std::string::npos)
        << r.err;
  }
}

TEST(ImportCliErrors, OneLineAndNonZeroExit) {
  std::string dir = TempDir();
  struct Bad {
    std::vector<std::string> args;
    const char* says;
  };
  const Bad bad[] = {
      {{"import", Data("ort_2019.json"), "--model", Model(), "-o", dir + "/x.json"},
       "is this the model"},
      {{"import", Data("trt8_bev.json"), "--layer-info", Data("trt8_names_only.json"), "-o",
        dir + "/x.json"},
       "another engine"},
      {{"import", Data("trt8_bev_layers.json"), "-o", dir + "/x.json"}, "--layer-info"},
      {{"import", Data("ort_2019.json"), "--layer-info", Data("trt8_bev_layers.json"), "-o",
        dir + "/x.json"},
       "TensorRT's"},
      {{"import", Data("ort_2019.json"), "--from", "nope", "-o", dir + "/x.json"},
       "unknown format"},
      {{"import", Data("ort_2019.json"), "--device", "pdp11", "-o", dir + "/x.json"},
       "not in the table"},
      {{"import", Data("make_nsys_fixture.py"), "-o", dir + "/x.json"},
       "not a format opscope can import"},
  };
  for (const Bad& b : bad) {
    std::vector<std::string> argv = {OpscopeBinary()};
    argv.insert(argv.end(), b.args.begin(), b.args.end());
    CommandResult r = RunCommand(argv);
    EXPECT_NE(r.exit_code, 0) << b.args[1];
    EXPECT_NE(r.err.find(b.says), std::string::npos) << r.err;
    EXPECT_LE(std::count(r.err.begin(), r.err.end(), '\n'), 2) << r.err;
  }
  // A truncated file through report: one line.
  std::string text = ReadAll(Data("pytorch_gpu.json"));
  std::string cut = dir + "/cut.json";
  RunShell("head -c " + std::to_string(text.size() / 2) + " '" + Data("pytorch_gpu.json") + "' > " +
           cut);
  CommandResult r = RunCommand({OpscopeBinary(), "report", cut});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
}

// Every error of `import` and `report` (the commands return their Status; main() prints it):
// the whole stderr is the one line, byte for byte, and the exit status is the usage status 2 for
// bad arguments and input, 1 for a failure while working.
TEST(ImportCliErrors, ExactLineAndExitStatus) {
  const std::string dir = TempDir();
  const std::string out = dir + "/x.json";
  const std::string ort = Data("ort_2019.json");
  const std::string perf = Data("perf_script_threads.txt");
  ASSERT_EQ(RunCommand({OpscopeBinary(), "import", ort, "-o", out}).exit_code, 0);
  struct Bad {
    std::vector<std::string> args;
    int exit_code;
    std::string line;
  };
  const Bad bad[] = {
      {{"import", ort, "--device", "orin-agx", "--peak-gflops", "1", "-o", out},
       2,
       "--device and --peak-gflops/--peak-gbps both give the roofs: use one of them"},
      {{"import", ort, "--peak-gflops", "1", "-o", out},
       2,
       "--peak-gflops and --peak-gbps go together (a roofline needs both roofs)"},
      {{"import", ort, "--model", Model(), "--shape", "images", "-o", out},
       2,
       "--shape 'images': expected NAME=DIMS such as images=1x3x224x224"},
      {{"import", ort, "--shape", "images=1x3", "-o", out},
       2,
       "--shape applies to --model: give the model too"},
      {{"import", ort, "-o", dir + "/no/such/x.json"},
       2,
       dir + "/no/such/x.json: folder '" + dir + "/no/such' does not exist"},
      {{"import", ort, Data("trt8_bev.json"), "-o", out},
       2,
       Data("trt8_bev.json") + " is tensorrt but " + ort + " is ort: import them separately"},
      {{"import", perf, "--model", Model(), "-o", out},
       2,
       "--model: " + perf + " (perf-script) has no per-layer rows to join with a model"},
      {{"import", dir + "/missing.json", "-o", out}, 2, ""},
      {{"report", out, "--children", "--no-children"},
       2,
       "choose one of --children and --no-children"},
      {{"report", out, "--sections", "ops,nope"},
       2,
       "--sections 'nope': expected ops, stat, ranges, gpu, memory, samples, threadpool or "
       "telemetry"},
      {{"report", out, "--group", "nope"},
       2,
       "--group 'nope': expected function, thread, module or op"},
      {{"report", out, "--sort", "nope"}, 2, ""},
      {{"report", out, "-f", "main"},
       2,
       out + ": -f needs call-stack samples, and this profile has none"},
      {{"report", dir + "/missing.json"}, 2, dir + "/missing.json: no such file"},
      {{"report", out, "-o", dir + "/r.json", "--format", "csv"}, 2, ""},
  };
  for (const Bad& b : bad) {
    std::vector<std::string> argv = {OpscopeBinary()};
    argv.insert(argv.end(), b.args.begin(), b.args.end());
    CommandResult r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, b.exit_code) << b.args[0] << " " << b.args[2] << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    if (!b.line.empty()) {
      EXPECT_EQ(r.err, "opscope: error: " + b.line + "\n");
    } else {
      EXPECT_EQ(r.err.rfind("opscope: error: ", 0), 0u) << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
  }
}

}  // namespace
}  // namespace opscope::testing
