// Board telemetry on fake /sys, /proc and /etc trees laid out as JetPack 6 on a Jetson AGX Orin
// and Rockchip's BSP on an RK3588 lay them out: discovery, sampling, a planted FIFO that must not
// hang, the section's JSON and Validate, its renderers and findings, and `profile` under
// --sysroot sampling it once per measured run.
#include "sections/telemetry/telemetry_section.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../../../tests/cli_util.h"
#include "analysis/rules.h"
#include "base/host.h"
#include "base/strings.h"
#include "collect/model_profiler.h"
#include "profile/profile_io.h"
#include "report/format.h"
#include "report/trace_check.h"
#include "sections/telemetry/board_probe.h"

namespace opscope::telemetry {
namespace {

namespace fs = std::filesystem;

class FakeTree {
 public:
  explicit FakeTree(const std::string& name)
      : root_(::testing::TempDir() + "/opscope_telemetry_" + name) {
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~FakeTree() {
    SetSysroot("");
    fs::remove_all(root_);
  }
  void Put(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(root_ + path).parent_path());
    std::ofstream(root_ + path, std::ios::binary) << text;
  }
  void Fifo(const std::string& path) {
    fs::create_directories(fs::path(root_ + path).parent_path());
    ASSERT_EQ(mkfifo((root_ + path).c_str(), 0600), 0);
  }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

// The committed trees (tests/boards/), copied so a test may change them.
void CopyBoard(FakeTree& t, const std::string& board) {
  fs::copy(std::string(OPSCOPE_SOURCE_DIR) + "/tests/boards/" + board, t.root(),
           fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}
void Orin(FakeTree& t) { CopyBoard(t, "jetson_agx_orin"); }

TEST(TelemetryTest, JetsonOrinTreeIsDescribedAndSampled) {
  FakeTree t("orin");
  Orin(t);
  t.Fifo("/sys/class/thermal/thermal_zone1/temp");  // must be skipped, not waited on
  t.Put("/sys/devices/system/cpu/cpufreq/policy0/scaling_cur_freq", "729600\n");
  SetSysroot(t.root());
  const BoardProbe probe = BoardProbe::Discover();
  TelemetrySection s = probe.Describe();
  EXPECT_EQ(s.board, "NVIDIA Jetson AGX Orin Developer Kit");
  EXPECT_EQ(s.platform, "jetson");
  EXPECT_EQ(s.environment["power mode"], "MODE_30W (nvpmodel 2)");
  EXPECT_EQ(s.environment["jetson_clocks"].rfind("off (GPU clock floor 306 MHz", 0), 0u)
      << s.environment["jetson_clocks"];
  EXPECT_EQ(s.environment["gpu governor"], "nvhost_podgov");
  std::vector<std::string> names;
  for (const Channel& c : s.channels) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"cpu clock (cpus 0,1,2,3)", "gpu clock", "emc clock",
                                             "dla0 clock", "thermal cpu-thermal",
                                             "power VDD_GPU_SOC", "power VDD_CPU_CV"}));
  probe.Sample(&s, 0, 1000);
  t.Put("/sys/class/devfreq/17000000.ga10b/cur_freq", "1300500000\n");
  t.Put("/sys/class/hwmon/hwmon1/curr1_input", "garbage\n");  // unreadable: previous value
  probe.Sample(&s, 1, 2000);
  const Channel* gpu = s.Find("gpu clock");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->values, (std::vector<double>{306, 1300.5}));
  EXPECT_EQ(gpu->max, 1300.5);
  EXPECT_EQ(s.Find("thermal cpu-thermal")->max, 99);  // the passive trip, not the critical one
  EXPECT_EQ(s.Find("thermal cpu-thermal")->values[0], 45.5);
  EXPECT_EQ(s.Find("power VDD_GPU_SOC")->values, (std::vector<double>{6000, 6000}));
  EXPECT_EQ(s.Find("power VDD_GPU_SOC")->gaps, 1);
  EXPECT_EQ(s.Find("emc clock")->values[0], 3199);

  profile::Profile p;
  p.meta.kind = "profile";
  p.sections.Get<TelemetrySection>() = s;
  ASSERT_TRUE(profile::Validate(p).ok());
  const auto findings = analysis::RunRules(p, nullptr);
  std::string rules;
  for (const auto& f : findings) rules += f.rule + ": " + f.title + "\n";
  EXPECT_NE(rules.find("board-power-mode: the board was not at full speed: power mode "
                       "MODE_30W (nvpmodel 2); jetson_clocks off"),
            std::string::npos)
      << rules;
  // The CPU cluster at a third of its ceiling is news; the idle GPU of a CPU profile is not.
  EXPECT_NE(rules.find("clock-below-ceiling: 1 clock(s)"), std::string::npos) << rules;
  for (const auto& f : findings)
    if (f.rule == "clock-below-ceiling")
      EXPECT_EQ(f.evidence.rfind("cpu clock (cpus 0,1,2,3) median 730 of 2202 MHz", 0), 0u)
          << f.evidence;

  // JSON round trip, and Validate on a broken one.
  const std::string text = profile::ToJsonString(p);
  auto back = profile::FromJsonString(text, "t.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->sections.Find<TelemetrySection>()->Find("gpu clock")->values[1], 1300.5);
  auto j = nlohmann::json::parse(text);
  j["telemetry"]["channels"][0]["values"] = {1.0};
  auto bad = profile::FromJsonString(j.dump(), "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("telemetry section: channel #0"), std::string::npos)
      << bad.status().message();

  // Renderers.
  report::ReportOptions o;
  std::string table, csv, html, trace;
  ASSERT_TRUE(report::RenderTables(p, o, &table).ok());
  EXPECT_NE(table.find("power mode: MODE_30W (nvpmodel 2)"), std::string::npos) << table;
  EXPECT_NE(table.find("gpu clock"), std::string::npos) << table;
  o.only = {"telemetry"};
  ASSERT_TRUE(report::FindFormat("csv")->write(p, o, &csv).ok());
  EXPECT_NE(csv.find("1,1,2000,gpu clock,MHz,1300.5"), std::string::npos) << csv;
  ASSERT_TRUE(report::FindFormat("html")->write(p, report::ReportOptions{}, &html).ok());
  EXPECT_NE(html.find("<section id=\"telemetry\">"), std::string::npos);
  ASSERT_TRUE(report::FindFormat("chrome")->write(p, report::ReportOptions{}, &trace).ok());
  auto check = report::CheckChromeTrace(trace);
  EXPECT_TRUE(check.ok()) << check.status().message();
  int counters = 0;
  const auto doc = nlohmann::json::parse(trace);
  for (const auto& e : doc["traceEvents"])
    counters += e["ph"] == "C" && e["name"] == "gpu clock (MHz)";
  EXPECT_EQ(counters, 2) << trace.substr(0, 1500);
}

TEST(TelemetryTest, Rk3588TreeHasClustersNpuLoadAndDevfreq) {
  FakeTree t("rk3588");
  CopyBoard(t, "rk3588");
  SetSysroot(t.root());
  const BoardProbe probe = BoardProbe::Discover();
  TelemetrySection s = probe.Describe();
  probe.Sample(&s, 0, 10);
  EXPECT_EQ(s.platform, "rockchip");
  EXPECT_EQ(s.environment["rknpu driver"], "RKNPU driver: v0.9.6");
  // big.LITTLE: core types from MIDR_EL1 with their capacities, and one PMU per core type.
  EXPECT_EQ(s.environment["cores"],
            "4x Cortex-A55 (cpus 0-3, capacity 414), 4x Cortex-A76 (cpus 4-7, capacity 1024)");
  EXPECT_EQ(s.environment["cpu PMUs"], "armv8_cortex_a55 (cpus 0-3), armv8_cortex_a76 (cpus 4-7)");
  std::vector<std::string> names;
  for (const Channel& c : s.channels) names.push_back(c.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"cpu clock (cpus 0,1,2,3)", "cpu clock (cpus 4,5)",
                                      "cpu clock (cpus 6,7)", "dmc clock", "gpu clock", "npu clock",
                                      "npu load core0", "npu load core1", "npu load core2"}));
  EXPECT_EQ(s.Find("npu load core2")->values[0], 47);
  EXPECT_EQ(s.Find("cpu clock (cpus 4,5)")->values[0], 408);
  EXPECT_EQ(s.Find("cpu clock (cpus 4,5)")->max, 2400);
  EXPECT_EQ(s.Find("dmc clock")->values[0], 2112);
}

// `profile` under --sysroot: one sample per measured run, at the run's end, in the profile.
TEST(TelemetryTest, ProfileSamplesTheBoardOncePerRun) {
  FakeTree t("orin_profile");
  Orin(t);
  SetSysroot(t.root());
  collect::ModelProfileOptions opt;
  opt.model_path = std::string(OPSCOPE_SOURCE_DIR) + "/models/bev_demo.onnx";
  opt.warmup = 0;
  opt.runs = 3;
  opt.measure_overhead = false;
  auto p = collect::ProfileModel(opt);
  ASSERT_TRUE(p.ok()) << p.status().message();
  const TelemetrySection* s = p->sections.Find<TelemetrySection>();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->sample_runs, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(s->Find("gpu clock")->values.size(), 3u);
  // Host facts follow --sysroot: the Orin tree's cpuinfo names its cores by part number only.
  EXPECT_EQ(p->meta.cpu_model, "Cortex-A78AE");
}

// The command line: `doctor --sysroot` names the board and warns about its power mode;
// `profile --sysroot` carries the telemetry into the JSON and the Chrome trace; a --sysroot that
// is not a folder is a usage error.
TEST(TelemetryTest, SysrootOptionOnDoctorAndProfile) {
  FakeTree t("orin_cli");
  Orin(t);
  using opscope::testing::OpscopeBinary;
  using opscope::testing::RunCommand;
  auto d = RunCommand({OpscopeBinary(), "doctor", "--sysroot", t.root()});
  EXPECT_NE(d.out.find("NVIDIA Jetson AGX Orin Developer Kit (jetson): 4 clock, 2 power, 1 "
                       "temperature channel(s); cores 4x Cortex-A78AE (cpus 0-3); PMUs "
                       "armv8_pmuv3_0 (cpus 0-3); power mode MODE_30W (nvpmodel 2)"),
            std::string::npos)
      << d.out << d.err;
  const std::string json = t.root() + "/p.json", trace = t.root() + "/p.trace.json";
  auto p = RunCommand({OpscopeBinary(), "profile",
                       std::string(OPSCOPE_SOURCE_DIR) + "/models/bev_demo.onnx", "--sysroot",
                       t.root() + "/", "--runs", "2", "--warmup", "0", "--no-overhead", "-o", json,
                       "-o", trace});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  auto j = nlohmann::json::parse(opscope::testing::ReadAll(json));
  EXPECT_EQ(j["telemetry"]["environment"]["power mode"], "MODE_30W (nvpmodel 2)");
  EXPECT_EQ(j["telemetry"]["sample_runs"].size(), 2u);
  bool board_finding = false;
  for (const auto& f : j["findings"]) board_finding |= f["rule"] == "board-power-mode";
  EXPECT_TRUE(board_finding) << j["findings"].dump();
  EXPECT_NE(opscope::testing::ReadAll(trace).find("\"gpu clock (MHz)\""), std::string::npos);
  EXPECT_EQ(opscope::testing::TraceProblems(trace), "");
  auto bad = RunCommand({OpscopeBinary(), "doctor", "--sysroot", t.root() + "/nope"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--sysroot"), std::string::npos) << bad.err;
}

// The process's own affinity, and whether it leaves out online CPUs (a cpuset may do that).
std::vector<int> Allowed() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}
bool ProcessIsPinned() {
  std::string online;
  std::getline(std::ifstream("/sys/devices/system/cpu/online"), online);
  return CpuRanges(Allowed()) != online;
}

// Nothing to describe (this VM): no section, unless this process is pinned to some of the CPUs,
// which the section then says and nothing else.
TEST(TelemetryTest, AnEmptyTreeMakesNoSection) {
  FakeTree t("empty");
  SetSysroot(t.root());
  EXPECT_EQ(BoardProbe::Discover().empty(), !ProcessIsPinned());
  profile::Profile p;
  DescribeInto(&p);
  const TelemetrySection* s = p.sections.Find<TelemetrySection>();
  if (!ProcessIsPinned()) {
    EXPECT_EQ(s, nullptr);
  } else {
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->pinned_cpus, CpuRanges(Allowed()));
    EXPECT_TRUE(s->channels.empty());
  }
}

// big.LITTLE: the RK3588 tree's clusters, structured (MIDR and cpu_capacity), and the core types
// of a subset of its CPUs as `machine --cpus` records them.
TEST(TelemetryTest, CoreClustersFromMidrAndCapacity) {
  FakeTree t("rk3588_clusters");
  CopyBoard(t, "rk3588");
  SetSysroot(t.root());
  const std::vector<CoreCluster> c = ReadCoreClusters();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].name, "Cortex-A55");
  EXPECT_EQ(c[0].cpus, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(c[0].capacity, 414);
  EXPECT_EQ(c[1].name, "Cortex-A76");
  EXPECT_EQ(c[1].capacity, 1024);
  EXPECT_EQ(DescribeCores(c, {5, 6}), "2x Cortex-A76 (cpus 5-6, capacity 1024)");
  TelemetrySection s = BoardProbe::Discover().Describe();
  EXPECT_TRUE(s.Heterogeneous());
  EXPECT_TRUE(s.IsLittle(s.clusters[0]));
  EXPECT_FALSE(s.IsLittle(s.clusters[1]));
  EXPECT_EQ(s.ClusterOf(6)->name, "Cortex-A76");
  EXPECT_EQ(s.ClusterOf(8), nullptr);
  // An x86 hybrid names its core types through its two CPU PMUs; without capacities the E-cores
  // are the little ones by name.
  FakeTree x("x86_hybrid");
  x.Put("/sys/bus/event_source/devices/cpu_core/cpus", "0-7\n");
  x.Put("/sys/bus/event_source/devices/cpu_atom/cpus", "8-15\n");
  SetSysroot(x.root());
  TelemetrySection h;
  h.clusters = ReadCoreClusters();
  ASSERT_EQ(h.clusters.size(), 2u);
  EXPECT_EQ(h.clusters[1].name, "E-core");
  EXPECT_EQ(h.clusters[1].cpus.size(), 8u);
  EXPECT_TRUE(h.IsLittle(h.clusters[1]));
  EXPECT_FALSE(h.IsLittle(h.clusters[0]));
}

// A section with the RK3588's clusters and three threads over four samples.
TelemetrySection PlacedThreads(std::vector<std::vector<int32_t>> rows) {
  TelemetrySection s;
  s.source = "sysfs";
  s.clusters = {{"Cortex-A55", {0, 1, 2, 3}, 414}, {"Cortex-A76", {4, 5, 6, 7}, 1024}};
  s.threads = {"100 opscope", "101 opscope", "102 opscope"};
  for (size_t i = 0; i < rows.size(); ++i) {
    s.sample_ns.push_back(static_cast<int64_t>(i) * 1000);
    s.sample_runs.push_back(static_cast<int32_t>(i));
  }
  s.thread_cpus = std::move(rows);
  return s;
}

std::vector<profile::Finding> FindingsOf(TelemetrySection s) {
  profile::Profile p;
  p.sections.Get<TelemetrySection>() = std::move(s);
  std::vector<profile::Finding> out;
  for (const profile::Finding& f : analysis::RunRules(p, nullptr))
    if (f.rule == "little-cores" || f.rule == "cluster-migration") out.push_back(f);
  return out;
}

// Threads on the A55s are a warning naming them, with the big cores to pin to; a thread that
// changed cluster between runs is a note; all on the A76s is nothing to say.
TEST(TelemetryTest, LittleCoreAndMigrationFindings) {
  auto f = FindingsOf(PlacedThreads({{4, 1, -1}, {5, 1, 6}, {4, 2, 6}, {0, 3, 7}}));
  ASSERT_EQ(f.size(), 2u);
  const profile::Finding& little = f[0].rule == "little-cores" ? f[0] : f[1];
  const profile::Finding& moved = f[0].rule == "little-cores" ? f[1] : f[0];
  EXPECT_EQ(little.rule, "little-cores");
  EXPECT_EQ(little.title, "2 thread(s) ran on the little cores");
  EXPECT_NE(little.evidence.find("thread 101 opscope on Cortex-A55 (cpu 1), Cortex-A55 (cpu 2), "
                                 "Cortex-A55 (cpu 3) after 4 of 4 runs"),
            std::string::npos)
      << little.evidence;
  EXPECT_NE(little.evidence.find("thread 100 opscope on Cortex-A55 (cpu 0) after 1 of 4 runs"),
            std::string::npos)
      << little.evidence;
  EXPECT_NE(little.suggestion.find("--cpus 4-7"), std::string::npos) << little.suggestion;
  EXPECT_DOUBLE_EQ(little.numbers.at("little_share"), 5.0 / 11);
  EXPECT_EQ(moved.rule, "cluster-migration");
  EXPECT_NE(moved.evidence.find("thread 100 opscope moved 1 time(s) (Cortex-A76 -> Cortex-A55)"),
            std::string::npos)
      << moved.evidence;
  EXPECT_EQ(moved.numbers.at("threads_moved"), 1);
  EXPECT_TRUE(FindingsOf(PlacedThreads({{4, 5, 6}, {5, 4, 7}})).empty());
  // One core type (or no core types at all): nothing to say about placement.
  TelemetrySection one = PlacedThreads({{0, 1, 2}, {3, 0, 1}});
  one.clusters.pop_back();
  EXPECT_TRUE(FindingsOf(one).empty());
}

// The placement fields survive JSON, and Validate refuses rows that do not match.
TEST(TelemetryTest, PlacementJsonAndValidate) {
  TelemetrySection s = PlacedThreads({{4, 1, -1}, {5, 1, 6}});
  s.pinned_cpus = "1,4-7";
  profile::Profile p;
  p.sections.Get<TelemetrySection>() = s;
  auto back = profile::FromJsonString(profile::ToJsonString(p), "t.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  const TelemetrySection* r = back->sections.Find<TelemetrySection>();
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->thread_cpus, s.thread_cpus);
  EXPECT_EQ(r->threads, s.threads);
  EXPECT_EQ(r->pinned_cpus, "1,4-7");
  EXPECT_EQ(r->clusters[1].capacity, 1024);
  EXPECT_TRUE(s.Validate(p).ok());
  TelemetrySection short_row = s;
  short_row.thread_cpus[1].pop_back();
  EXPECT_NE(short_row.Validate(p).message().find("a row of thread_cpus has 2 CPUs for 3 threads"),
            std::string::npos);
  TelemetrySection extra_row = s;
  extra_row.thread_cpus.push_back({4, 4, 4});
  EXPECT_FALSE(extra_row.Validate(p).ok());
  TelemetrySection bad_cluster = s;
  bad_cluster.clusters[0].cpus.clear();
  EXPECT_FALSE(bad_cluster.Validate(p).ok());
  // Rendered: the pinning and each thread's CPUs.
  std::string table;
  report::ReportOptions o;
  o.only = {"telemetry"};
  ASSERT_TRUE(report::RenderTables(p, o, &table).ok());
  EXPECT_NE(table.find("  pinned to cpus: 1,4-7\n"), std::string::npos) << table;
  EXPECT_NE(table.find("  thread 101 opscope: Cortex-A55 cpu 1 x2\n"), std::string::npos) << table;
}

// This process's threads: each with the CPU it last ran on, which the process may use.
TEST(TelemetryTest, ThreadCpusOfThisProcess) {
  std::vector<std::string> names;
  const std::vector<int32_t> cpus = ThreadCpus(&names);
  ASSERT_FALSE(cpus.empty());
  ASSERT_EQ(names.size(), cpus.size());
  EXPECT_EQ(names[0].substr(0, names[0].find(' ')), std::to_string(getpid()));
  const std::vector<int> allowed = Allowed();
  EXPECT_NE(std::find(allowed.begin(), allowed.end(), cpus[0]), allowed.end());
  // Sampled into a section that tracks placement: one row per sample, new threads get columns.
  TelemetrySection s;
  s.pinned_cpus = "0";
  s.sample_ns = {1};
  s.sample_runs = {0};
  SamplePlacement(&s);
  SamplePlacement(&s);  // a second call for the same sample adds nothing
  ASSERT_EQ(s.thread_cpus.size(), 1u);
  EXPECT_EQ(s.thread_cpus[0].size(), s.threads.size());
}

// `profile --cpus`: every engine thread pinned, which the profile records with where each ran;
// under the RK3588 tree the CPU used is one of its A55s, so little-cores fires. A CPU that is not
// online is a usage error naming the flag.
TEST(TelemetryTest, ProfileCpusPinsAndRecordsPlacement) {
  const std::vector<int> allowed = Allowed();
  if (allowed.empty()) GTEST_SKIP() << "sched_getaffinity failed";
  const int cpu = allowed.back();
  if (cpu > 3) GTEST_SKIP() << "needs one of CPUs 0-3 (the RK3588 tree's little cores) allowed";
  FakeTree t("rk3588_pinned");
  CopyBoard(t, "rk3588");
  using opscope::testing::OpscopeBinary;
  using opscope::testing::RunCommand;
  const std::string json = t.root() + "/p.json";
  auto p = RunCommand({OpscopeBinary(), "profile",
                       std::string(OPSCOPE_SOURCE_DIR) + "/tests/models/twin_matmul.onnx", "--cpus",
                       std::to_string(cpu), "--sysroot", t.root(), "--runs", "3", "--warmup", "1",
                       "--no-overhead", "-o", json});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  auto j = nlohmann::json::parse(opscope::testing::ReadAll(json));
  EXPECT_EQ(j["meta"]["threads"], 1);
  const auto& tele = j["telemetry"];
  EXPECT_EQ(tele["pinned_cpus"], std::to_string(cpu));
  ASSERT_EQ(tele["thread_cpus"].size(), 3u);
  int seen = 0;
  for (const auto& row : tele["thread_cpus"])
    for (const auto& c : row) {
      if (c.get<int>() < 0) continue;
      EXPECT_EQ(c.get<int>(), cpu);
      ++seen;
    }
  EXPECT_GE(seen, 3);
  bool little = false;
  for (const auto& f : j["findings"]) little |= f["rule"] == "little-cores";
  EXPECT_TRUE(little) << j["findings"].dump();
  auto bad = RunCommand({OpscopeBinary(), "profile",
                         std::string(OPSCOPE_SOURCE_DIR) + "/tests/models/twin_matmul.onnx",
                         "--cpus", "4095"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--cpus '4095': CPU 4095 is not online"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace opscope::telemetry
