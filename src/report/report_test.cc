// Golden-file tests for every op-profile output format, plus a linter pass over each output:
// valid JSON, rectangular CSV, well-formed Chrome trace events. Regenerate the goldens with
//   OPSCOPE_UPDATE_GOLDEN=1 build/release/src/report/report_test
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "base/strings.h"
#include "base/testing/fuzz_corpus.h"
#include "base/testing/golden.h"
#include "profile/profile.h"
#include "profile/profile_io.h"
#include "report/format.h"
#include "report/op_stacks.h"
#include "report/output.h"
#include "report/trace_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace opscope::report {
namespace {

// A small, fully deterministic model profile: a fused Conv+BN+Relu step, a Transpose, a folded
// Shape node; three runs.
profile::Profile SmallProfile() {
  profile::Profile p;
  p.meta.kind = "profile";
  p.meta.tool_version = "0.1.0";
  p.meta.build_type = "Release";
  p.meta.source = "models/small.onnx";
  p.meta.host = "testhost";
  p.meta.cpu_model = "Test CPU @ 2.0GHz";
  p.meta.logical_cpus = 2;
  p.meta.governor = "performance";
  p.meta.cpu_mhz = 2000;
  p.meta.threads = 2;
  p.meta.warmup = 1;
  p.meta.runs = 3;
  p.e2e.runs_ms = {10.0, 11.0, 10.5};
  auto add = [&](std::string name, std::string type, std::vector<double> ms, double flops,
                 double bytes) {
    profile::OpRecord op;
    op.name = std::move(name);
    op.op_type = std::move(type);
    op.index = static_cast<int>(p.ops.size());
    op.runs_ms = std::move(ms);
    op.flops = flops;
    op.bytes = bytes;
    op.input_shapes = {{1, 3, 32, 32}, {8, 3, 3, 3}};
    op.output_shapes = {{1, 8, 32, 32}};
    p.ops.push_back(op);
    return p.ops.size() - 1;
  };
  size_t conv = add("conv1", "Conv", {4.0, 4.4, 4.2}, 442368, 40000);
  size_t bn = add("bn1", "BatchNormalization", {1.0, 1.1, 1.05}, 16384, 65536);
  size_t relu = add("relu1", "Relu", {0.5, 0.55, 0.52}, 8192, 65536);
  for (size_t i : {conv, bn, relu}) {
    p.ops[i].status = profile::OpStatus::kFused;
    p.ops[i].step = "conv1";
    p.ops[i].attribution = "split by estimated cost";
  }
  p.ops[conv].fused_with = {"bn1", "relu1"};
  p.ops[bn].fused_with = {"conv1", "relu1"};
  p.ops[relu].fused_with = {"conv1", "bn1"};
  size_t tr = add("to_nhwc", "Transpose", {3.5, 3.6, 3.55}, 0, 65536);
  p.ops[tr].output_shapes = {{1, 32, 32, 8}};
  p.ops[tr].step = "to_nhwc";
  size_t shape = add("shape", "Shape", {0, 0, 0}, 0, 32);
  p.ops[shape].status = profile::OpStatus::kFolded;
  p.ops[shape].attribution = "folded: computed once at load time, no run time";
  for (int r = 0; r < 3; ++r) {
    int64_t t = 1000000 + r * 20000000;
    p.op_events.push_back({static_cast<int32_t>(conv), r, 4242, t, 4000000});
    p.op_events.push_back({static_cast<int32_t>(bn), r, 4242, t + 4000000, 1000000});
    p.op_events.push_back({static_cast<int32_t>(relu), r, 4242, t + 5000000, 500000});
    p.op_events.push_back({static_cast<int32_t>(tr), r, 4242, t + 5500000, 3500000});
  }
  profile::Overhead ov;
  ov.baseline_median_ms = 10.4;
  ov.observed_median_ms = 10.5;
  ov.pct = 0.96;
  ov.method = "interleaved";
  p.overhead = ov;
  profile::FinalizeStats(p);
  return p;
}

std::string Golden(const std::string& name) {
  return std::string(OPSCOPE_SOURCE_DIR) + "/src/report/testdata/" + name;
}

void CheckGolden(const std::string& name, const std::string& actual) {
  ::opscope::testing::ExpectMatchesGolden(Golden(name), actual);
}

std::string Render(const std::string& format) {
  const Format* f = FindFormat(format);
  EXPECT_NE(f, nullptr) << format;
  std::string out;
  ReportOptions o;
  o.top = 10;
  EXPECT_TRUE(f->write(SmallProfile(), o, &out).ok());
  return out;
}

// RFC 4180 field splitter for the CSV lint.
std::vector<std::vector<std::string>> ParseCsv(const std::string& text, bool* ok) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  *ok = true;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"')
        quoted = false;
      else
        field += c;
    } else if (c == '"') {
      if (!field.empty()) *ok = false;
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field);
      field.clear();
    } else if (c == '\n') {
      rows.back().push_back(field);
      field.clear();
      rows.emplace_back();
    } else {
      field += c;
    }
  }
  if (quoted) *ok = false;
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

TEST(ReportTest, TableGolden) { CheckGolden("small.top10.txt", Render("table")); }

// An overhead inside the run-to-run noise, or a negative one, is not printed as a measurement.
TEST(ReportTest, OverheadBelowTheNoiseIsNotAMeasurement) {
  profile::Profile p = SmallProfile();
  p.overhead->pct = -19.86;
  p.overhead->measurable = false;
  p.overhead->noise_low_pct = -25.1;
  p.overhead->noise_high_pct = 8.4;
  std::string out;
  ReportOptions o;
  ASSERT_TRUE(FindFormat("table")->write(p, o, &out).ok());
  EXPECT_EQ(out.find("-19.86%"), std::string::npos) << out;
  EXPECT_NE(out.find("opscope overhead: not measurable (below the noise)"), std::string::npos)
      << out;
  EXPECT_NE(out.find("-25.10%…+8.40%"), std::string::npos) << out;
  // A file written before the noise rule (measurable defaults to true) with a negative value.
  p.overhead->measurable = true;
  p.overhead->noise_low_pct = p.overhead->noise_high_pct = 0;
  out.clear();
  ASSERT_TRUE(FindFormat("table")->write(p, o, &out).ok());
  EXPECT_NE(out.find("not measurable (below the noise)"), std::string::npos) << out;
}
TEST(ReportTest, CsvGolden) { CheckGolden("small.csv", Render("csv")); }
TEST(ReportTest, ChromeGolden) { CheckGolden("small.trace.json", Render("chrome")); }
TEST(ReportTest, JsonGolden) { CheckGolden("small.json", Render("json")); }

TEST(ReportTest, JsonLintAndRoundTrip) {
  std::string out = Render("json");
  auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["schema"], "opscope.profile/1");
  for (const char* key : {"meta", "e2e", "ops"}) EXPECT_TRUE(j.contains(key)) << key;
  for (const auto& op : j["ops"]) {
    for (const char* key : {"name", "op_type", "input_shapes", "output_shapes", "flops", "bytes",
                            "runs_ms", "stats", "share"})
      EXPECT_TRUE(op.contains(key)) << key;
    for (const char* key : {"mean", "median", "trimmed_mean", "min", "max", "p90", "stddev"})
      EXPECT_TRUE(op["stats"].contains(key)) << key;
  }
  auto back = profile::FromJsonString(out, "golden");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(profile::ToJsonString(*back), out);
}

TEST(ReportTest, CsvLint) {
  bool ok;
  auto rows = ParseCsv(Render("csv"), &ok);
  ASSERT_TRUE(ok);
  ASSERT_EQ(rows.size(), SmallProfile().ops.size() + 1);
  for (const auto& r : rows) EXPECT_EQ(r.size(), rows[0].size());
  EXPECT_EQ(rows[0][1], "name");
  // A name with a comma and a quote must survive quoting.
  profile::Profile p = SmallProfile();
  p.ops[0].name = "a,\"b\"";
  std::string out;
  ASSERT_TRUE(FindFormat("csv")->write(p, {}, &out).ok());
  rows = ParseCsv(out, &ok);
  ASSERT_TRUE(ok);
  EXPECT_EQ(rows[1][1], "a,\"b\"");
}

TEST(ReportTest, ChromeTraceLint) {
  const std::string text = Render("chrome");
  auto check = CheckChromeTrace(text);
  ASSERT_TRUE(check.ok()) << check.status().message();
  // 4 nodes x 3 runs (the folded node never runs), 3 fused steps and 3 run slices.
  EXPECT_EQ(check->slices, 12 + 3 + 3);
  EXPECT_EQ(check->zero_length, 0);
  EXPECT_EQ(check->max_depth, 3);  // run > fused step > node
  auto j = nlohmann::json::parse(text);
  for (const auto& e : j["traceEvents"]) EXPECT_TRUE(e["ph"] == "X" || e["ph"] == "M") << e;
}

// Real timings: a step starts where the last one ended, at ts values whose sum ts + dur in
// doubles is not the next ts (268.208 + 203.102 = 471.31000000000006 > 471.31). Written as they
// were, 57 of the demo's 1,700 slices ended after their parent for speedscope and
// chrome://tracing (their "staircase"). Every reader must see exact nesting.
TEST(ReportTest, ChromeTraceNestsAsEveryReaderReadsIt) {
  profile::Profile p = SmallProfile();
  p.op_events.clear();
  std::mt19937_64 rng(44);
  const int64_t t0 = 1'000'000'000'123;
  // The demo's numbers first: 268.208 + 203.102 in doubles is past 471.31.
  p.op_events.push_back({3, 0, 4242, t0 + 268'208, 203'102});
  p.op_events.push_back({3, 0, 4242, t0 + 471'310, 599});
  int64_t t = t0 + 471'909, steps = 0;
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 300; ++k) {
      auto add = [&](int op) {
        const int64_t d = 1 + static_cast<int64_t>(rng() % 400'000);
        p.op_events.push_back({op, r, 4242, t, d});
        t += d;  // back to back
      };
      if (rng() % 2) {
        for (int op : {0, 1, 2}) add(op);  // the fused step conv1 + bn1 + relu1
        ++steps;
      } else {
        add(3);
      }
    }
  std::string out;
  ASSERT_TRUE(FindFormat("chrome")->write(p, {}, &out).ok());
  auto check = CheckChromeTrace(out);
  ASSERT_TRUE(check.ok()) << check.status().message();
  EXPECT_EQ(check->slices, static_cast<int64_t>(p.op_events.size()) + steps + 3);
  EXPECT_EQ(check->max_depth, 3);
}

// A fused step is a slice (its measured time) holding its nodes' estimated split; a node
// estimated at no time of its own is an instant inside it, not a zero-length slice.
TEST(ReportTest, ChromeTraceShowsFusedStepsAndTheirSplit) {
  profile::Profile p = SmallProfile();
  for (auto& e : p.op_events) {
    if (e.op == 1) e.dur_ns = 0;  // bn1: folded into the conv by the estimate
    if (e.op == 2) e.start_ns -= 1000000;
    if (e.op == 3) e.start_ns -= 1000000;
  }
  std::string out;
  ASSERT_TRUE(FindFormat("chrome")->write(p, {}, &out).ok());
  auto check = CheckChromeTrace(out);
  ASSERT_TRUE(check.ok()) << check.status().message();
  EXPECT_EQ(check->zero_length, 0);
  EXPECT_EQ(check->instants, 3);
  auto j = nlohmann::json::parse(out);
  int steps = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["cat"] == "fused step") {
      ++steps;
      EXPECT_EQ(e["name"], "conv1 (fused: Conv+BatchNormalization+Relu)");
      EXPECT_EQ(e["dur"], 4500.0);  // conv1 4 ms + bn1 0 + relu1 0.5 ms, back to back
      EXPECT_EQ(e["args"]["split"], "conv1 88.9%, bn1 0.0%, relu1 11.1%");
    }
    if (e["ph"] == "i") {
      EXPECT_EQ(e["name"], "bn1");
      EXPECT_EQ(e["args"]["estimated"], true);
    }
  }
  EXPECT_EQ(steps, 3);
}

// A child range that ends after its parent (two clocks, a late end record) is clamped into it,
// and says by how much.
TEST(ReportTest, ChromeTraceClampsChildrenIntoTheirParent) {
  profile::Profile p;
  p.meta.kind = "run";
  p.meta.source = "./app";
  p.ranges.push_back({"stage", "opscope", 100, 5'000'000, 9'000'000, 0, -1, {}, 0});
  profile::Range inner{"step", "opscope", 100, 8'000'000, 9'000'015, 1, 0, {}, 0};
  p.ranges.push_back(inner);
  std::string out;
  ASSERT_TRUE(FindFormat("chrome")->write(p, {}, &out).ok());
  auto check = CheckChromeTrace(out);
  ASSERT_TRUE(check.ok()) << check.status().message();
  auto j = nlohmann::json::parse(out);
  bool seen = false;
  for (const auto& e : j["traceEvents"])
    if (e["name"] == "step") {
      seen = true;
      EXPECT_EQ(e["ts"], 3000.0);
      EXPECT_EQ(e["dur"], 1000.0);
      EXPECT_EQ(e["args"]["clamped_ns"], 15);
    }
  EXPECT_TRUE(seen);
}

// A profile with nothing on a timeline (a stat profile's counter totals) is refused with the
// reason; it was written as `"traceEvents": []` while saying "wrote".
TEST(ReportTest, ChromeTraceWithNothingToShowIsRefused) {
  profile::Profile p;
  p.meta.kind = "stat";
  p.meta.source = "true";
  p.stat.emplace();
  std::string out;
  Status st = FindFormat("chrome")->write(p, {}, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_NE(st.message().find("nothing to draw: this stat profile has no timed events"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("counter totals only"), std::string::npos) << st.message();
  EXPECT_TRUE(out.empty());
}

// What Perfetto and chrome://tracing need (report/chrome.cc's header).
TEST(ReportTest, ChromeTraceInterop) {
  profile::Profile p = SmallProfile();
  p.clocks = {{0, 2400, 55}, {1, 2300, 56}, {2, 2350, 57}};
  std::string out;
  ASSERT_TRUE(FindFormat("chrome")->write(p, {}, &out).ok());
  auto j = nlohmann::json::parse(out);
  EXPECT_FALSE(j.contains("displayTimeUnit"));
  int runs = 0, counters = 0, estimated = 0, thread_names = 0, process_names = 0;
  double min_ts = 1e300;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") ++thread_names;
    if (e["ph"] == "M" && e["name"] == "process_name") ++process_names;
    if (e["ph"] == "C") ++counters;
    if (e["ph"] == "X") min_ts = std::min(min_ts, e["ts"].get<double>());
    if (e["ph"] == "X" && e["cat"] == "run") ++runs;
    if (e["ph"] == "X" && e["args"].contains("estimated")) {
      ++estimated;
      EXPECT_EQ(e["args"]["attribution"], "split by estimated cost");
    }
    if (e["ph"] == "X" && e["cat"] == "Conv")
      EXPECT_NE(e["args"]["thread"].get<std::string>().find("dispatched"), std::string::npos);
  }
  EXPECT_EQ(runs, 3);
  EXPECT_EQ(counters, 6);   // MHz and temperature per run
  EXPECT_EQ(estimated, 9);  // conv1, bn1, relu1 in 3 runs
  EXPECT_EQ(thread_names, 1);
  EXPECT_EQ(process_names, 1);
  EXPECT_EQ(min_ts, 0);
}

// `opscope run` traces: one process per run, each with its run slice.
TEST(ReportTest, ChromeTraceOfRangesHasOneProcessPerRun) {
  profile::Profile p;
  p.meta.kind = "run";
  p.meta.source = "./app";
  for (int run = 0; run < 2; ++run) {
    int64_t b = 5000000000 + run * 1000000000LL;
    profile::Range outer{"stage", "opscope", 100 + run, b, b + 4000000, 0, -1, {}, run};
    profile::Range inner{"step", "opscope", 100 + run, b + 1000000, b + 2000000, 1, -1, {}, run};
    inner.parent = static_cast<int32_t>(p.ranges.size());
    p.ranges.push_back(outer);
    p.ranges.push_back(inner);
  }
  std::string out;
  ASSERT_TRUE(FindFormat("chrome")->write(p, {}, &out).ok());
  auto j = nlohmann::json::parse(out);
  std::set<int> pids;
  int run_slices = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") pids.insert(e["pid"].get<int>());
    if (e["ph"] == "X" && e["cat"] == "run") ++run_slices;
    if (e["ph"] == "X" && e["name"] == "stage" && e["pid"] == 1) EXPECT_EQ(e["ts"], 0);
  }
  EXPECT_EQ(pids, (std::set<int>{1, 2}));
  EXPECT_EQ(run_slices, 2);
}

TEST(ReportTest, CsvWritesIntegersWhole) {
  profile::Profile p = SmallProfile();
  p.ops[0].flops = 1234567891;
  std::string out;
  ASSERT_TRUE(FindFormat("csv")->write(p, {}, &out).ok());
  EXPECT_NE(out.find(",1234567891,"), std::string::npos) << out;
  EXPECT_EQ(out.find("e+"), std::string::npos) << out;
}

// Names are bytes from other people's files: none may abort a writer (nlohmann's dump threw
// type_error 316 on byte 0xFF), every text format is valid UTF-8 with U+FFFD for what was not,
// and no CSV text cell starts a spreadsheet formula.
TEST(ReportTest, HostileNamesInEveryFormat) {
  profile::Profile p = SmallProfile();
  p.ops[0].name = "conv\xff\xfe";
  p.ops[1].name = "=HYPERLINK(\"http://x\",\"y\")";
  p.ops[2].name = "+cmd|' /C calc'!A0";
  p.ops[3].name = "@SUM(1)";
  p.ops[3].op_type = "-Transpose";
  p.ops[4].name = "\tlead tab";
  p.meta.source = "model\xc3\x28.onnx";
  for (const Format& f : Formats()) {
    std::string out;
    Status st = f.write(p, {}, &out);
    if (!st.ok()) continue;  // a format for a section this profile lacks
    if (f.binary) continue;
    EXPECT_TRUE(IsValidUtf8(out)) << f.name;
  }
  std::string json;
  ASSERT_TRUE(FindFormat("json")->write(p, {}, &json).ok());
  auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["ops"][0]["name"], "conv\xEF\xBF\xBD\xEF\xBF\xBD");
  std::string csv;
  ASSERT_TRUE(FindFormat("csv")->write(p, {}, &csv).ok());
  EXPECT_NE(csv.find(",\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\","), std::string::npos) << csv;
  EXPECT_NE(csv.find(",'+cmd|' /C calc'!A0,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",'@SUM(1),'-Transpose,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",'\tlead tab,"), std::string::npos) << csv;
  // Numbers stay numbers, negative ones too.
  EXPECT_EQ(CsvText("-1.5"), "'-1.5");  // a text cell that looks like one is still text
  EXPECT_EQ(CsvText("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvText("a;b", ";"), "\"a;b\"");
  EXPECT_EQ(CsvText("plain"), "plain");
  std::string table;
  ASSERT_TRUE(FindFormat("table")->write(p, {}, &table).ok());
  EXPECT_NE(table.find("conv\xEF\xBF\xBD\xEF\xBF\xBD"), std::string::npos) << table;
}

TEST(ReportTest, WritersFuzzRegressionCorpus) {
  int n = ::opscope::testing::ReplayFuzzCorpus("writers_fuzz", [](const std::string& b) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  });
  EXPECT_GE(n, 3);
}

TEST(ReportTest, TableEscapesControlCharactersAndWideShowsNamesWhole) {
  profile::Profile p = SmallProfile();
  p.ops[3].name = "evil\x1b[31mname\nnext";
  std::string out;
  ASSERT_TRUE(FindFormat("table")->write(p, {}, &out).ok());
  EXPECT_EQ(out.find('\x1b'), std::string::npos);
  EXPECT_NE(out.find("evil\\x1b[31mname\\nnext"), std::string::npos) << out;
  EXPECT_EQ(ClipName(std::string(50, 'a'), 20, false), std::string(17, 'a') + "...");
  EXPECT_EQ(ClipName(std::string(50, 'a'), 20, true), std::string(50, 'a'));
  EXPECT_EQ(EscapeControl("a\tb\x01"), "a\\tb\\x01");
}

// Op profiles without samples get op-level stacks: scope;...;node weighted by time.
TEST(ReportTest, OpStacksFromNodeNames) {
  EXPECT_EQ(ScopeOf("/backbone/layer1/conv/Conv"),
            (std::vector<std::string>{"backbone", "layer1", "conv", "Conv"}));
  EXPECT_EQ(ScopeOf("head.cls.fc"), (std::vector<std::string>{"head", "cls", "fc"}));
  EXPECT_EQ(ScopeOf("conv1"), (std::vector<std::string>{"conv1"}));
  profile::Profile p = SmallProfile();
  p.ops[0].name = "/backbone/conv1";
  std::string folded;
  ReportOptions o;
  ASSERT_TRUE(FindFormat("folded")->write(p, o, &folded).ok());
  CheckGolden("small.op-scope.folded", folded);
  EXPECT_NE(folded.find("backbone;conv1 "), std::string::npos) << folded;
  std::string svg;
  ASSERT_TRUE(FindFormat("svg")->write(p, o, &svg).ok());
  EXPECT_NE(svg.find("data-n=\"backbone\""), std::string::npos);
  CheckGolden("small.op-scope.svg", svg);
  // The Search and Reset controls are clickable (text has pointer-events:none otherwise).
  EXPECT_NE(svg.find("#search,#reset{cursor:pointer;pointer-events:all}"), std::string::npos);
  EXPECT_NE(svg.find("id=\"details\""), std::string::npos);
  std::string pb;
  ASSERT_TRUE(FindFormat("pprof")->write(p, o, &pb).ok());
  EXPECT_EQ(static_cast<unsigned char>(pb[0]), 0x1f);
}

// Every section of a profile is rendered by `table`, the primary one first.
TEST(ReportTest, TableRendersEverySectionPrimaryFirst) {
  profile::Profile p = SmallProfile();
  p.ranges.push_back({"stage", "opscope", 1, 0, 1000000, 0, -1, {}});
  std::string out;
  ASSERT_TRUE(FindFormat("table")->write(p, {}, &out).ok());
  size_t ops = out.find("Hot operators"), ranges = out.find("pipeline");
  ASSERT_NE(ops, std::string::npos) << out;
  ASSERT_NE(ranges, std::string::npos) << out;
  EXPECT_LT(ops, ranges);
  ReportOptions only;
  only.only = {"ranges"};
  ASSERT_TRUE(FindFormat("table")->write(p, only, &out).ok());
  EXPECT_EQ(out.find("Hot operators"), std::string::npos) << out;
  p.meta.kind = "run";
  ASSERT_TRUE(FindFormat("table")->write(p, {}, &out).ok());
  EXPECT_LT(out.find("pipeline"), out.find("Hot operators")) << out;
}

TEST(ReportTest, PlanOutputs) {
  auto plan = PlanOutputs({"/tmp/p.json", "/tmp/p.trace.json", "/tmp/p.csv"}, "", "table");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->size(), 3u);
  EXPECT_STREQ((*plan)[0].format->name, "json");
  EXPECT_STREQ((*plan)[1].format->name, "chrome");
  EXPECT_STREQ((*plan)[2].format->name, "csv");
  EXPECT_FALSE(PlanOutputs({"/tmp/a.json", "/tmp/a.json"}, "", "table").ok());
  auto stream = PlanOutputs({}, "hot-json", "table");
  ASSERT_TRUE(stream.ok());
  EXPECT_TRUE(WritesToStream(*stream));
  // "-" is standard output, beside files; twice is refused.
  auto dash = PlanOutputs({"-", "/tmp/p.json"}, "", "table");
  ASSERT_TRUE(dash.ok()) << dash.status().message();
  EXPECT_TRUE(WritesToStream(*dash));
  EXPECT_STREQ((*dash)[0].format->name, "table");
  EXPECT_STREQ((*dash)[1].format->name, "json");
  EXPECT_FALSE(PlanOutputs({"-", "-"}, "", "table").ok());
}

TEST(ReportTest, ChooseFormat) {
  EXPECT_EQ(std::string((*ChooseFormat("p.trace.json", "", "table"))->name), "chrome");
  EXPECT_EQ(std::string((*ChooseFormat("p.json", "", "table"))->name), "json");
  EXPECT_EQ(std::string((*ChooseFormat("p.csv", "", "table"))->name), "csv");
  EXPECT_EQ(std::string((*ChooseFormat("", "", "table"))->name), "table");
  EXPECT_FALSE(ChooseFormat("p.xyz", "", "table").ok());
  EXPECT_FALSE(ChooseFormat("", "yaml", "table").ok());
  // An extension that contradicts the format is refused; one of the same kind is not.
  auto bad = ChooseFormat("a.json", "csv", "table");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("the .json extension means json, not csv"),
            std::string::npos)
      << bad.status().message();
  EXPECT_TRUE(ChooseFormat("hot.json", "hot-json", "table").ok());
  EXPECT_TRUE(ChooseFormat("s.csv", "stat-csv", "table").ok());
  EXPECT_TRUE(ChooseFormat("a.trace.json", "json", "table").ok());
  EXPECT_TRUE(ChooseFormat("out.data", "csv", "table").ok());
  EXPECT_STREQ((*ChooseFormat("p.pprof", "", "table"))->name, "pprof");
  EXPECT_STREQ((*ChooseFormat("p.hot.json", "", "table"))->name, "hot-json");
}

}  // namespace
}  // namespace opscope::report

namespace opscope::report {
namespace {

// `report x.rec -o x.trace.json`: the samples of a record profile are on the timeline, one
// instant event per sample on its thread, named by the leaf, with the stack; the process is
// named by its command.
TEST(ReportTest, ChromeTraceHasTheSamplesOfARecordProfile) {
  profile::Profile p;
  p.meta.kind = "record";
  profile::SampleSection s;
  s.unit = "ns";
  s.frames = {{"leaf<fn>", "a.so"}, {"main", "app"}};
  s.thread_names = {{40, "app"}, {41, "worker"}};
  s.samples = {{{0, 1}, 40, 41, 5'000'000, 1e6, -1}, {{1}, 40, 40, 6'000'000, 1e6, -1}};
  p.samples = s;
  ASSERT_TRUE(profile::Validate(p).ok());
  std::string out;
  ASSERT_TRUE(FindFormat("chrome")->write(p, ReportOptions{}, &out).ok());
  auto j = nlohmann::json::parse(out);
  std::vector<nlohmann::json> instants;
  std::set<std::string> names;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "i") instants.push_back(e);
    if (e["ph"] == "M" && e["args"].contains("name"))
      names.insert(e["args"]["name"].get<std::string>());
  }
  ASSERT_EQ(instants.size(), 2u);
  EXPECT_EQ(instants[0]["name"], "leaf<fn>");
  EXPECT_EQ(instants[0]["tid"], 41);
  EXPECT_EQ(instants[0]["pid"], 40);
  EXPECT_EQ(instants[0]["ts"], 0.0);
  EXPECT_EQ(instants[1]["ts"], 1000.0);
  EXPECT_EQ(instants[0]["args"]["stack"], "leaf<fn> (a.so)\nmain (app)");
  EXPECT_TRUE(names.count("app (pid 40, call-stack samples)"));
  EXPECT_TRUE(names.count("worker"));
}

}  // namespace
}  // namespace opscope::report
