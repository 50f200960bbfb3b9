// Tests of the sampling reports: hot functions, caller/callee, folded stacks, flame SVG and pprof.
// Golden files live in testdata/ (<input>.<options>.<format>); regenerate them with
// OPSCOPE_UPDATE_GOLDEN=1 after an intended change and review the diff.
#include "report/samples_report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "base/testing/golden.h"
#include "profile/profile_io.h"
#include "report/flame_svg.h"
#include "report/folded_stacks.h"
#include "report/format.h"
#include "report/pprof_encode.h"
#include "report/profile.pb.h"

namespace opscope::report {
namespace {

namespace pb = perftools::profiles;

const std::string kData = OPSCOPE_SOURCE_DIR "/src/report/testdata/";

// main -> work -> {heavy (3 samples, one with an inlined frame), light (1)} on two threads, plus
// a recursive function to check that inclusive time counts a function once per sample.
profile::Profile Synthetic() {
  profile::Profile p;
  p.meta.kind = "record";
  p.meta.source = "./split";
  p.ops.resize(1);
  p.ops[0].name = "Conv_0";
  p.ops[0].op_type = "Conv";
  auto& s = p.samples.emplace();
  s.event = "cpu-clock";
  s.unit = "ns";
  s.call_graph = "dwarf";
  s.frequency_hz = 997;
  s.frames = {
      {"main", "split", "/src/split.cc", 50, 0x1000, false},   // 0
      {"work", "split", "/src/split.cc", 40, 0x1100, false},   // 1
      {"heavy", "split", "/src/split.cc", 20, 0x1200, false},  // 2
      {"light", "split", "/src/split.cc", 30, 0x1300, false},  // 3
      {"mix", "split", "/src/mix.h", 5, 0x1210, true},         // 4 inlined into heavy at 0x1210
      {"heavy", "split", "/src/split.cc", 22, 0x1210, false},  // 5
      {"rec", "split", "/src/split.cc", 60, 0x1400, false},    // 6
      {"[unknown]", "libjit.so", "", 0, 0x99, false},          // 7
  };
  auto add = [&](std::vector<uint32_t> stack, int32_t tid, double w, int32_t op = -1) {
    profile::Sample x;
    x.stack = std::move(stack);
    x.pid = 1;
    x.tid = tid;
    x.time_ns = 1000 * static_cast<int64_t>(s.samples.size());
    x.weight = w;
    x.op = op;
    s.samples.push_back(x);
  };
  add({2, 1, 0}, 1, 1e6, 0);
  add({2, 1, 0}, 2, 1e6, 0);
  add({4, 5, 1, 0}, 1, 1e6);
  add({3, 1, 0}, 2, 1e6);
  add({6, 6, 6, 0}, 1, 1e6);
  add({7, 0}, 2, 1e6);
  s.thread_names = {{1, "split"}, {2, "worker"}};
  s.warnings = {"libjit.so: no symbol table (stripped binary); its functions show as [unknown]"};
  // What `opscope record` stores for each sampled file (libjit.so: recorded without a build id).
  s.modules = {{"split", "/opt/app/bin/split", "0123456789abcdef0123456789abcdef01234567"},
               {"libjit.so", "/opt/app/lib/libjit.so", ""}};
  return p;
}

void CheckGolden(const std::string& name, const std::string& actual) {
  ::opscope::testing::ExpectMatchesGolden(kData + name, actual);
}

const HotRow* Find(const HotFunctions& h, const std::string& fn, const std::string& group = "") {
  for (const auto& r : h.rows)
    if (r.function == fn && r.group == group) return &r;
  return nullptr;
}

TEST(HotFunctions, SelfInclusiveAndRecursion) {
  profile::Profile p = Synthetic();
  SampleReportOptions o;
  o.threshold_pct = 0;
  HotFunctions h = ComputeHotFunctions(p, o);
  EXPECT_EQ(h.samples, 6u);
  EXPECT_EQ(h.threads, 2u);
  const HotRow* heavy = Find(h, "heavy");
  ASSERT_NE(heavy, nullptr);
  EXPECT_NEAR(heavy->self_pct, 100.0 * 2 / 6, 1e-9);  // the inlined sample's leaf is mix
  EXPECT_NEAR(heavy->inclusive_pct, 100.0 * 3 / 6, 1e-9);
  EXPECT_EQ(heavy->line, 20);  // hottest self line
  const HotRow* rec = Find(h, "rec");
  ASSERT_NE(rec, nullptr);
  EXPECT_NEAR(rec->inclusive_pct, 100.0 / 6, 1e-9) << "recursion counted once per sample";
  EXPECT_NEAR(Find(h, "main")->inclusive_pct, 100, 1e-9);
  EXPECT_EQ(h.rows[0].function, "heavy");  // sorted by self
  o.sort = SampleSort::kInclusive;
  EXPECT_EQ(ComputeHotFunctions(p, o).rows[0].function, "main");
  o.top = 2;
  HotFunctions top2 = ComputeHotFunctions(p, o);
  EXPECT_EQ(top2.rows.size(), 2u);
  EXPECT_GT(top2.hidden, 0u);
}

TEST(HotFunctions, Groupings) {
  profile::Profile p = Synthetic();
  SampleReportOptions o;
  o.threshold_pct = 0;
  o.group = SampleGroup::kThread;
  HotFunctions h = ComputeHotFunctions(p, o);
  ASSERT_NE(Find(h, "light", "worker [2]"), nullptr);
  EXPECT_EQ(Find(h, "light", "split [1]"), nullptr);
  o.group = SampleGroup::kOp;
  h = ComputeHotFunctions(p, o);
  ASSERT_NE(Find(h, "heavy", "Conv_0 (Conv)"), nullptr);
  EXPECT_NEAR(Find(h, "heavy", "Conv_0 (Conv)")->self_pct, 100.0 * 2 / 6, 1e-9);
  o.group = SampleGroup::kModule;
  h = ComputeHotFunctions(p, o);
  ASSERT_NE(Find(h, "libjit.so"), nullptr);
  EXPECT_NEAR(Find(h, "split")->self_pct, 100.0 * 5 / 6, 1e-9);
  EXPECT_FALSE(ParseSampleGroup("bogus").ok());
  EXPECT_FALSE(ParseSampleSort("bogus").ok());
}

TEST(CallerCallee, OfWork) {
  profile::Profile p = Synthetic();
  auto c = ComputeCallerCallee(p, "work");
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->callers.size(), 1u);
  EXPECT_EQ(c->callers[0].function, "main");
  EXPECT_NEAR(c->callers[0].pct, 100, 1e-9);
  std::map<std::string, double> callees;
  for (const auto& e : c->callees) callees[e.function] = e.pct;
  EXPECT_NEAR(callees["heavy"], 75, 1e-9);
  EXPECT_NEAR(callees["light"], 25, 1e-9);
  EXPECT_FALSE(ComputeCallerCallee(p, "nosuchfunction").ok());
}

TEST(SamplesGolden, TableJsonFolded) {
  // The input is kept as a golden too, so a change of the JSON schema shows up here.
  profile::Profile p = Synthetic();
  CheckGolden("synthetic.profile.json", profile::ToJsonString(p));
  auto loaded = profile::LoadProfile(kData + "synthetic.profile.json");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  SampleReportOptions o;
  HotFunctions h = ComputeHotFunctions(*loaded, o);
  CheckGolden("synthetic.default.txt", RenderHotTable(*loaded, h, o, false));
  CheckGolden("synthetic.default.json", RenderHotJson(*loaded, h));
  CheckGolden("synthetic.default.folded", RenderFolded(*loaded));
  CheckGolden("synthetic.group-thread.folded", RenderFolded(*loaded, SampleGroup::kThread));
  auto cc = ComputeCallerCallee(*loaded, "work");
  ASSERT_TRUE(cc.ok());
  CheckGolden("synthetic.function-work.txt", RenderCallerCallee(*cc));
}

TEST(FlameSvg, DrawsEveryFrameAndIsSelfContained) {
  profile::Profile p = Synthetic();
  std::string svg = RenderFlameSvg(p, "test <&> title");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("test &lt;&amp;&gt; title"), std::string::npos);
  for (const char* fn : {"\"main\"", "\"work\"", "\"heavy\"", "\"light\"", "\"mix\"", "\"rec\""})
    EXPECT_NE(svg.find(std::string("data-n=") + fn), std::string::npos) << fn;
  EXPECT_EQ(svg.find("http://", svg.find("<script")), std::string::npos) << "no external resources";
  // The root is the full width.
  EXPECT_NE(svg.find("data-x=\"0.000000\" data-wd=\"1.000000\" data-d=\"0\""), std::string::npos);
}

// What EncodePprof wrote, read back with the classes protoc generated from profile.proto.
pb::Profile Decode(const profile::Profile& p) {
  pb::Profile out;
  auto gz = RenderPprof(p);
  EXPECT_TRUE(gz.ok());
  if (!gz.ok()) return out;
  EXPECT_EQ(static_cast<unsigned char>((*gz)[0]), 0x1f);
  auto raw = Gunzip(*gz);
  EXPECT_TRUE(raw.ok());
  if (raw.ok()) EXPECT_TRUE(out.ParseFromString(*raw));
  return out;
}

const std::string& Str(const pb::Profile& d, int64_t i) {
  static const std::string bad = "<bad string index>";
  return i >= 0 && i < d.string_table_size() ? d.string_table(static_cast<int>(i)) : bad;
}

// location id -> function names of its lines (innermost first)
std::map<uint64_t, std::vector<std::string>> LocationFunctions(const pb::Profile& d) {
  std::map<uint64_t, std::string> fn_name;
  for (const auto& f : d.function()) fn_name[f.id()] = Str(d, f.name());
  std::map<uint64_t, std::vector<std::string>> out;
  for (const auto& l : d.location())
    for (const auto& ln : l.line()) out[l.id()].push_back(fn_name.at(ln.function_id()));
  return out;
}

TEST(Pprof, DecodesToTheSameProfile) {
  const pb::Profile d = Decode(Synthetic());
  ASSERT_GT(d.string_table_size(), 0);
  EXPECT_EQ(d.string_table(0), "") << "string_table[0] must be empty";
  EXPECT_EQ(d.sample_type_size(), 2);
  EXPECT_EQ(d.sample_size(), 6);
  EXPECT_EQ(d.mapping_size(), 2);  // split, libjit.so
  auto loc_fns = LocationFunctions(d);
  // The third sample: leaf location holds mix inlined into heavy, then work, then main.
  const auto& third = d.sample(2);
  ASSERT_EQ(third.location_id_size(), 3);
  EXPECT_EQ(loc_fns[third.location_id(0)], (std::vector<std::string>{"mix", "heavy"}));
  EXPECT_EQ(loc_fns[third.location_id(1)], (std::vector<std::string>{"work"}));
  EXPECT_EQ(loc_fns[third.location_id(2)], (std::vector<std::string>{"main"}));
  EXPECT_EQ(std::vector<int64_t>(third.value().begin(), third.value().end()),
            (std::vector<int64_t>{1, 1000000}));
  EXPECT_EQ(Str(d, d.default_sample_type()), "cpu");
  EXPECT_EQ(d.period(), static_cast<int64_t>(1e9 / 997));
}

// What symbolization by pprof needs: each Mapping covers the addresses of its locations, the
// profile has a time, and unknown symbols at different addresses stay different Functions.
TEST(Pprof, MappingsTimeAndUnknownSymbols) {
  profile::Profile p = Synthetic();
  p.meta.created = "2026-12-01T07:35:12Z";
  auto& sec = *p.samples;
  sec.frames.push_back({"[unknown]", "libx.so", "", 0, 0x4000, false});
  sec.frames.push_back({"[unknown]", "libx.so", "", 0, 0x5000, false});
  profile::Sample a, b;
  a.stack = {static_cast<uint32_t>(sec.frames.size() - 2)};
  b.stack = {static_cast<uint32_t>(sec.frames.size() - 1)};
  sec.samples.push_back(a);
  sec.samples.push_back(b);
  const pb::Profile d = Decode(p);
  EXPECT_EQ(d.time_nanos(), 1796110512ll * 1000000000ll);
  std::map<uint64_t, uint64_t> limit;  // mapping id -> memory_limit
  for (const auto& m : d.mapping()) limit[m.id()] = m.memory_limit();
  for (const auto& l : d.location()) {
    ASSERT_TRUE(limit.count(l.mapping_id())) << "location names a missing mapping";
    EXPECT_LT(l.address(), limit[l.mapping_id()]);
  }
  int unknown = 0;
  for (const auto& f : d.function())
    unknown += Str(d, f.name()).rfind("[unknown] libx.so+0x", 0) == 0;
  EXPECT_EQ(unknown, 2);
}

// The Mapping table as text: id, memory range, file offset, filename, build id.
std::string MappingTable(const profile::Profile& p) {
  const pb::Profile d = Decode(p);
  std::string out;
  for (const auto& m : d.mapping())
    out += fmt::format("mapping {} [0x{:x}, 0x{:x}) offset 0x{:x} file {} build_id {}\n", m.id(),
                       m.memory_start(), m.memory_limit(), m.file_offset(), Str(d, m.filename()),
                       m.build_id() ? Str(d, m.build_id()) : "-");
  return out;
}

// pprof's Mapping carries the recorded full path and build id (what `pprof -symbolize` and
// debuginfod look binaries up by); a profile written before they were recorded keeps the names.
TEST(Pprof, MappingFilenameAndBuildId) {
  profile::Profile p = Synthetic();
  CheckGolden("synthetic.mappings.txt", MappingTable(p));
  const std::string with = MappingTable(p);
  EXPECT_NE(with.find("file /opt/app/bin/split build_id 0123456789abcdef0123456789abcdef01234567"),
            std::string::npos)
      << with;
  EXPECT_NE(with.find("file /opt/app/lib/libjit.so build_id -"), std::string::npos) << with;
  // An older profile: no "modules" in its JSON.
  nlohmann::json j = nlohmann::json::parse(profile::ToJsonString(p));
  j["samples"].erase("modules");
  auto old = profile::FromJsonString(j.dump(), "old.json");
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_TRUE(old->samples->modules.empty());
  const std::string without = MappingTable(*old);
  EXPECT_NE(without.find("file split build_id -"), std::string::npos) << without;
  EXPECT_NE(without.find("file libjit.so build_id -"), std::string::npos) << without;
  // The other formats keep the basename.
  EXPECT_EQ(RenderFolded(p), RenderFolded(*old));
}

// pprof prints the first Mapping as the profile's "File:". It was the module that sorted first
// by name ("[anon]", "libc.so.6" before "split"); it is the main binary.
TEST(Pprof, FirstMappingIsTheMainBinary) {
  profile::Profile p = Synthetic();
  auto& sec = *p.samples;
  sec.frames.push_back({"[unknown]", "[anon]", "", 0, 0x10, false});
  sec.frames.push_back({"memcpy", "libc.so.6", "", 0, 0x20, false});
  sec.samples[0].stack.insert(sec.samples[0].stack.begin(), sec.frames.size() - 2);
  sec.samples[1].stack.insert(sec.samples[1].stack.begin(), sec.frames.size() - 1);
  auto first = [](const profile::Profile& q) {
    const pb::Profile d = Decode(q);
    return d.mapping_size() ? Str(d, d.mapping(0).filename()) : std::string("<none>");
  };
  EXPECT_EQ(first(p), "/opt/app/bin/split");  // the command's program ("./split")
  {
    pb::Profile d = Decode(p);
    ASSERT_EQ(d.mapping_size(), 4);
    EXPECT_EQ(d.mapping(0).id(), 1u);
    for (const auto& l : d.location()) EXPECT_LE(l.mapping_id(), 4u);
  }
  // A command that is not the sampled program (an interpreter's script, a shell): the module
  // that holds main().
  p.meta.source = "sh -c './split --fast'";
  EXPECT_EQ(first(p), "/opt/app/bin/split");
  // No main() either (stacks cut short): the module most stacks start in.
  for (auto& f : sec.frames)
    if (f.function == "main") f.function = "start_app";
  EXPECT_EQ(first(p), "/opt/app/bin/split");
  // Only pseudo modules sampled: one of them, rather than no File at all.
  profile::Profile anon = Synthetic();
  anon.samples->samples = {anon.samples->samples[0]};
  anon.samples->frames = {{"[unknown]", "[anon]", "", 0, 0x10, false}};
  anon.samples->samples[0].stack = {0};
  EXPECT_EQ(first(anon), "[anon]");
}

// Op stacks (no samples): the leaf is the full node name, so two nodes whose names end alike
// stay two rows in `pprof -top`; the first Mapping is the model.
TEST(Pprof, OpStacksKeepFullNodeNames) {
  profile::Profile p;
  p.meta.kind = "profile";
  p.meta.source = "models/bev_demo.onnx";
  for (const char* name : {"backbone.conv1", "bev_encoder.conv1", "/head/cls/Conv", "plain"}) {
    profile::OpRecord op;
    op.name = name;
    op.op_type = "Conv";
    op.index = static_cast<int>(p.ops.size());
    op.runs_ms = {1.0 + static_cast<double>(p.ops.size())};
    p.ops.push_back(op);
  }
  profile::FinalizeStats(p);
  std::string gz;
  ASSERT_TRUE(FindFormat("pprof")->write(p, ReportOptions{}, &gz).ok());
  pb::Profile d;
  ASSERT_TRUE(d.ParseFromString(*Gunzip(gz)));
  std::set<std::string> functions;
  for (const auto& f : d.function()) functions.insert(Str(d, f.name()));
  EXPECT_EQ(functions,
            (std::set<std::string>{"backbone", "backbone.conv1", "bev_encoder", "bev_encoder.conv1",
                                   "/head", "/head/cls", "/head/cls/Conv", "plain"}));
  ASSERT_EQ(d.mapping_size(), 1);
  EXPECT_EQ(Str(d, d.mapping(0).filename()), "models/bev_demo.onnx");
  ASSERT_EQ(d.sample_size(), 4);
  auto loc_fns = LocationFunctions(d);
  const auto& s = d.sample(1);
  ASSERT_EQ(s.location_id_size(), 2);
  EXPECT_EQ(loc_fns[s.location_id(0)], (std::vector<std::string>{"bev_encoder.conv1"}));
  EXPECT_EQ(loc_fns[s.location_id(1)], (std::vector<std::string>{"bev_encoder"}));
  std::map<std::string, std::string> labels;
  for (const auto& l : s.label()) labels[Str(d, l.key())] = Str(d, l.str());
  EXPECT_EQ(labels["op"], "bev_encoder.conv1");
  EXPECT_EQ(labels["op_type"], "Conv");
  EXPECT_EQ(s.value(1), 2000000);  // ns per run
  // The folded stacks and flame graph keep the short labels under their scopes.
  std::string folded;
  ASSERT_TRUE(FindFormat("folded")->write(p, ReportOptions{}, &folded).ok());
  EXPECT_NE(folded.find("bev_encoder;conv1 2000\n"), std::string::npos) << folded;
}

// The real reader: Go's `go tool pprof` (Debian's golang-go ships it; install-deps.sh installs
// it) prints the profile's File and a -top row per node.
TEST(Pprof, GoToolPprofReadsItBack) {
  if (std::system("go version >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no `go` on PATH: Debian's golang-go (in scripts/install-deps.sh) ships "
                    "`go tool pprof`, the reader this test runs";
  const std::string dir = ::testing::TempDir() + "/pprof_go_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  auto run = [&](const profile::Profile& p, const std::string& name) {
    std::string gz;
    EXPECT_TRUE(FindFormat("pprof")->write(p, ReportOptions{}, &gz).ok());
    const std::string file = dir + "/" + name + ".pb.gz";
    std::ofstream(file, std::ios::binary) << gz;
    const std::string cmd = "cd " + dir + " && HOME=" + dir +
                            " go tool pprof -top -nodecount=100 -symbolize=none " + file + " > " +
                            file + ".txt 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream in(file + ".txt");
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string rec = run(Synthetic(), "record");
  EXPECT_NE(rec.find("File: split\n"), std::string::npos) << rec;
  EXPECT_NE(rec.find(" heavy\n"), std::string::npos) << rec;
  profile::Profile ops;
  ops.meta.kind = "profile";
  ops.meta.source = "models/bev_demo.onnx";
  for (const char* name : {"backbone.conv1", "bev_encoder.conv1"}) {
    profile::OpRecord op;
    op.name = name;
    op.op_type = "Conv";
    op.index = static_cast<int>(ops.ops.size());
    op.runs_ms = {2.0};
    ops.ops.push_back(op);
  }
  profile::FinalizeStats(ops);
  const std::string top = run(ops, "ops");
  EXPECT_NE(top.find("File: bev_demo.onnx\n"), std::string::npos) << top;
  EXPECT_NE(top.find(" backbone.conv1\n"), std::string::npos) << top;
  EXPECT_NE(top.find(" bev_encoder.conv1\n"), std::string::npos) << top;
  std::filesystem::remove_all(dir);
}

TEST(Pprof, GzipRoundTripAndBadInput) {
  std::string data(10000, 'x');
  auto gz = Gzip(data);
  ASSERT_TRUE(gz.ok());
  EXPECT_EQ(*Gunzip(*gz), data);
  EXPECT_FALSE(Gunzip("not gzip").ok());
}

TEST(Reports, EmptySampleSection) {
  profile::Profile p;
  p.samples.emplace();
  SampleReportOptions o;
  HotFunctions h = ComputeHotFunctions(p, o);
  EXPECT_NE(RenderHotTable(p, h, o, false).find("no samples"), std::string::npos);
  EXPECT_EQ(RenderFolded(p), "");
  EXPECT_NE(RenderFlameSvg(p, "t").find("</svg>"), std::string::npos);
  EXPECT_TRUE(RenderPprof(p).ok());
}

// A damaged recording with no readable sample: the table shows the warnings and does not blame
// the command.
TEST(Reports, NoSamplesBecauseTheFileIsDamaged) {
  profile::Profile p;
  p.samples.emplace().warnings = {
      "corrupt record file x.rec: the events chunk at byte 100 fails "
      "its checksum; the other 0 events chunk(s) were read"};
  SampleReportOptions o;
  std::string t = RenderHotTable(p, ComputeHotFunctions(p, o), o, false);
  EXPECT_EQ(t.find("the command ended before the first sample"), std::string::npos) << t;
  EXPECT_NE(t.find("the record file is damaged"), std::string::npos) << t;
  EXPECT_NE(t.find("fails its checksum"), std::string::npos) << t;

  p.samples->warnings = {"symbolized at report time"};
  t = RenderHotTable(p, ComputeHotFunctions(p, o), o, false);
  EXPECT_NE(t.find("the command ended before the first sample"), std::string::npos) << t;
  EXPECT_NE(t.find("symbolized at report time"), std::string::npos) << t;
}

}  // namespace
}  // namespace opscope::report
