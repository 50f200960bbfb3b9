// Tests of the sampling reports: hot functions, caller/callee, folded stacks, flame SVG and pprof.
// Golden files live in testdata/ (<input>.<options>.<format>); regenerate them with
// OPSCOPE_UPDATE_GOLDEN=1 after an intended change and review the diff.
#include "report/samples_report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "base/testing/golden.h"
#include "profile/profile_io.h"
#include "report/flame_svg.h"
#include "report/folded_stacks.h"
#include "report/pprof_encode.h"

namespace opscope::report {
namespace {

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

// A tiny protobuf reader: enough to check the structure of what EncodePprof wrote.
struct Field {
  int number, wire;
  uint64_t varint;
  std::string bytes;
};
bool ReadVarint(const std::string& b, size_t& pos, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && pos < b.size(); shift += 7) {
    uint8_t c = static_cast<uint8_t>(b[pos++]);
    *v |= static_cast<uint64_t>(c & 0x7f) << shift;
    if (!(c & 0x80)) return true;
  }
  return false;
}
std::vector<Field> Parse(const std::string& b) {
  std::vector<Field> out;
  size_t pos = 0;
  while (pos < b.size()) {
    uint64_t key;
    if (!ReadVarint(b, pos, &key)) {
      ADD_FAILURE() << "bad key";
      break;
    }
    Field f{static_cast<int>(key >> 3), static_cast<int>(key & 7), 0, ""};
    if (f.wire == 0) {
      ReadVarint(b, pos, &f.varint);
    } else if (f.wire == 2) {
      uint64_t len;
      ReadVarint(b, pos, &len);
      if (len > b.size() - pos) {
        ADD_FAILURE() << "length past end";
        break;
      }
      f.bytes = b.substr(pos, len);
      pos += len;
    } else {
      ADD_FAILURE() << "unexpected wire type " << f.wire;
      break;
    }
    out.push_back(f);
  }
  return out;
}
std::vector<uint64_t> Packed(const std::string& b) {
  std::vector<uint64_t> v;
  size_t pos = 0;
  uint64_t x;
  while (pos < b.size() && ReadVarint(b, pos, &x)) v.push_back(x);
  return v;
}

TEST(Pprof, DecodesToTheSameProfile) {
  profile::Profile p = Synthetic();
  auto gz = RenderPprof(p);
  ASSERT_TRUE(gz.ok());
  EXPECT_EQ(static_cast<unsigned char>((*gz)[0]), 0x1f);
  auto raw = Gunzip(*gz);
  ASSERT_TRUE(raw.ok());
  std::vector<std::string> strings;
  std::vector<Field> samples, locations, functions, mappings, sample_types;
  for (const auto& f : Parse(*raw)) {
    if (f.number == 6) strings.push_back(f.bytes);
    if (f.number == 2) samples.push_back(f);
    if (f.number == 4) locations.push_back(f);
    if (f.number == 5) functions.push_back(f);
    if (f.number == 3) mappings.push_back(f);
    if (f.number == 1) sample_types.push_back(f);
  }
  ASSERT_FALSE(strings.empty());
  EXPECT_EQ(strings[0], "") << "string_table[0] must be empty";
  EXPECT_EQ(sample_types.size(), 2u);
  EXPECT_EQ(samples.size(), 6u);
  EXPECT_EQ(mappings.size(), 2u);  // split, libjit.so
  // function id -> name
  std::map<uint64_t, std::string> fn_name;
  for (const auto& f : functions) {
    uint64_t id = 0, name = 0;
    for (const auto& x : Parse(f.bytes)) {
      if (x.number == 1) id = x.varint;
      if (x.number == 2) name = x.varint;
    }
    ASSERT_LT(name, strings.size());
    fn_name[id] = strings[name];
  }
  // location id -> function names of its lines (innermost first)
  std::map<uint64_t, std::vector<std::string>> loc_fns;
  for (const auto& l : locations) {
    uint64_t id = 0;
    std::vector<std::string> names;
    for (const auto& x : Parse(l.bytes)) {
      if (x.number == 1) id = x.varint;
      if (x.number == 4)
        for (const auto& y : Parse(x.bytes))
          if (y.number == 1) names.push_back(fn_name.at(y.varint));
    }
    loc_fns[id] = names;
  }
  // The third sample: leaf location holds mix inlined into heavy, then work, then main.
  std::vector<uint64_t> locs, values;
  for (const auto& x : Parse(samples[2].bytes)) {
    if (x.number == 1) locs = Packed(x.bytes);
    if (x.number == 2) values = Packed(x.bytes);
  }
  ASSERT_EQ(locs.size(), 3u);
  EXPECT_EQ(loc_fns[locs[0]], (std::vector<std::string>{"mix", "heavy"}));
  EXPECT_EQ(loc_fns[locs[1]], (std::vector<std::string>{"work"}));
  EXPECT_EQ(loc_fns[locs[2]], (std::vector<std::string>{"main"}));
  EXPECT_EQ(values, (std::vector<uint64_t>{1, 1000000}));
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
  auto raw = Gunzip(*RenderPprof(p));
  ASSERT_TRUE(raw.ok());
  std::vector<std::string> strings;
  std::map<uint64_t, uint64_t> limit;  // mapping id -> memory_limit
  std::vector<std::pair<uint64_t, uint64_t>> loc_map_addr;
  uint64_t time_nanos = 0;
  std::vector<std::string> fn_names;
  std::vector<uint64_t> fn_name_ids;
  for (const auto& f : Parse(*raw)) {
    if (f.number == 6) strings.push_back(f.bytes);
    if (f.number == 9) time_nanos = f.varint;
    if (f.number == 3) {
      uint64_t id = 0, lim = 0;
      for (const auto& x : Parse(f.bytes)) {
        if (x.number == 1) id = x.varint;
        if (x.number == 3) lim = x.varint;
      }
      limit[id] = lim;
    }
    if (f.number == 4) {
      uint64_t m = 0, addr = 0;
      for (const auto& x : Parse(f.bytes)) {
        if (x.number == 2) m = x.varint;
        if (x.number == 3) addr = x.varint;
      }
      loc_map_addr.emplace_back(m, addr);
    }
    if (f.number == 5)
      for (const auto& x : Parse(f.bytes))
        if (x.number == 2) fn_name_ids.push_back(x.varint);
  }
  EXPECT_EQ(time_nanos, 1796110512ull * 1000000000ull);
  for (const auto& [m, addr] : loc_map_addr) {
    ASSERT_TRUE(limit.count(m)) << "location names a missing mapping";
    EXPECT_LT(addr, limit[m]);
  }
  int unknown = 0;
  for (uint64_t id : fn_name_ids) unknown += strings.at(id).rfind("[unknown] libx.so+0x", 0) == 0;
  EXPECT_EQ(unknown, 2);
}

// The Mapping table as text: id, memory range, file offset, filename, build id.
std::string MappingTable(const profile::Profile& p) {
  auto raw = Gunzip(*RenderPprof(p));
  if (!raw.ok()) return "gunzip failed";
  std::vector<std::string> strings;
  std::vector<std::string> maps;
  for (const auto& f : Parse(*raw)) {
    if (f.number == 6) strings.push_back(f.bytes);
    if (f.number == 3) maps.push_back(f.bytes);
  }
  std::string out;
  for (const auto& m : maps) {
    uint64_t v[11] = {};
    for (const auto& x : Parse(m)) v[x.number < 11 ? x.number : 0] = x.varint;
    auto str = [&](uint64_t i) { return i < strings.size() ? strings[i] : "<bad string index>"; };
    out += fmt::format("mapping {} [0x{:x}, 0x{:x}) offset 0x{:x} file {} build_id {}\n", v[1],
                       v[2], v[3], v[4], str(v[5]), v[6] ? str(v[6]) : "-");
  }
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
