#include "profile/profile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/testing/fuzz_corpus.h"
#include "profile/profile_io.h"
#include "profile/profile_json.h"

namespace opscope::profile {
namespace {

Profile Sample() {
  Profile p;
  p.meta.kind = "profile";
  p.meta.source = "m.onnx";
  p.meta.runs = 3;
  p.e2e.runs_ms = {2, 3, 4};
  OpRecord a;
  a.name = "conv";
  a.op_type = "Conv";
  a.runs_ms = {1, 1.5, 2};
  a.input_shapes = {{1, 3, 8, 8}, {4, 3, 3, 3}};
  a.flops = 1000;
  OpRecord b;
  b.name = "relu";
  b.op_type = "Relu";
  b.status = profile::OpStatus::kFused;
  b.step = "conv";
  b.runs_ms = {0.5, 0.5, 0.5};
  p.ops = {a, b};
  p.op_events.push_back({0, 0, 123, 1000, 500});
  SampleSection s;
  s.frames.push_back({"main", "a.out", "a.c", 3, 0x10, false});
  s.samples.push_back({{0}, 1, 1, 5, 1.0, 0});
  p.samples = s;
  FinalizeStats(p);
  return p;
}

TEST(ProfileTest, RoundTrip) {
  Profile p = Sample();
  ASSERT_TRUE(Validate(p).ok());
  auto back = FromJsonString(ToJsonString(p), "mem");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->ops.size(), 2u);
  EXPECT_EQ(back->ops[0].input_shapes, p.ops[0].input_shapes);
  EXPECT_DOUBLE_EQ(back->ops[1].share, p.ops[1].share);
  EXPECT_EQ(back->op_events[0].tid, 123);
  ASSERT_TRUE(back->samples.has_value());
  EXPECT_EQ(back->samples->frames[0].function, "main");
  EXPECT_EQ(ToJsonString(*back), ToJsonString(p));
}

TEST(ProfileTest, TypedMetaRoundTripsAndLegacyKeysLoadIntoIt) {
  Profile p = Sample();
  p.meta.machine.emplace();
  p.meta.machine->peak_gflops_all = 120.5;
  p.meta.machine->triad_gbps = 11;
  p.meta.machine->verification = "same CPU";
  p.meta.target = TargetBuild{"/usr/bin/app", "debug", "-O0", "GNU C++17 -O0"};
  p.meta.attached = "pid 7 (app)";
  p.meta.import.emplace();
  p.meta.import->format = "ort";
  p.meta.import->files = {"a b.json", "c.json"};  // a space in a name stays one file
  p.meta.import->model = "m.onnx";
  p.meta.import->rows = 12;
  p.meta.import->matched_rows = 11;
  p.meta.import->matched_share = 0.981;
  p.meta.import->model_nodes = 34;
  p.meta.import->model_nodes_timed = 33;
  p.meta.import->unmatched = {"'x' 1.9%"};
  const std::string text = ToJsonString(p);
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["meta"]["machine"]["peak_gflops_all"], 120.5);
  EXPECT_EQ(j["meta"]["target"]["kind"], "debug");
  EXPECT_EQ(j["meta"]["import"]["files"][0], "a b.json");
  EXPECT_FALSE(j["meta"].contains("extra") && !j["meta"]["extra"].empty());
  auto back = FromJsonString(text, "t.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_TRUE(back->meta.machine && back->meta.target && back->meta.import);
  EXPECT_EQ(back->meta.machine->verification, "same CPU");
  EXPECT_EQ(back->meta.target->path, "/usr/bin/app");
  EXPECT_EQ(back->meta.attached, "pid 7 (app)");
  EXPECT_EQ(back->meta.import->files.size(), 2u);
  EXPECT_EQ(back->meta.import->model_nodes_timed, 33);

  // A profile written before these were typed: the same facts as strings in meta.extra.
  auto old = nlohmann::json::parse(text);
  for (const char* k : {"machine", "target", "attached", "import"}) old["meta"].erase(k);
  old["meta"]["extra"] = {{"machine.peak_gflops_all", "120.5"},
                          {"machine.triad_gbps", "11"},
                          {"machine.threads", "4"},
                          {"machine.verification", "same CPU"},
                          {"target.build", "debug"},
                          {"target.opt_level", "-O0"},
                          {"target.build_evidence", "GNU C++17 -O0"},
                          {"attached", "pid 7 (app)"},
                          {"import.format", "ort"},
                          {"import.file", "a b.json"},
                          {"import.model", "m.onnx"},
                          {"import.matched_rows", "11 of 12"},
                          {"import.matched_share", "98.1%"},
                          {"import.model_nodes_timed", "33 of 34"},
                          {"import.unmatched", "'x' 1.9%, 'y' 0.1%"},
                          {"seed", "1"}};
  auto legacy = FromJsonString(old.dump(), "old.json");
  ASSERT_TRUE(legacy.ok()) << legacy.status().message();
  const Meta& m = legacy->meta;
  ASSERT_TRUE(m.machine && m.target && m.import);
  EXPECT_EQ(m.machine->peak_gflops_all, 120.5);
  EXPECT_EQ(m.machine->threads, 4);
  EXPECT_EQ(m.target->kind, "debug");
  EXPECT_EQ(m.target->evidence, "GNU C++17 -O0");
  EXPECT_EQ(m.attached, "pid 7 (app)");
  EXPECT_EQ(m.import->files, std::vector<std::string>{"a b.json"});
  EXPECT_EQ(m.import->rows, 12);
  EXPECT_EQ(m.import->matched_rows, 11);
  EXPECT_NEAR(m.import->matched_share, 0.981, 1e-9);
  EXPECT_EQ(m.import->unmatched, (std::vector<std::string>{"'x' 1.9%", "'y' 0.1%"}));
  // Only the free-form key is left in extra.
  EXPECT_EQ(m.extra.size(), 1u);
  EXPECT_EQ(m.extra.at("seed"), "1");

  // Typed fields are checked like every number of a profile.
  Profile bad = Sample();
  bad.meta.machine.emplace();
  bad.meta.machine->triad_gbps = std::numeric_limits<double>::infinity();
  EXPECT_NE(Validate(bad).message().find("meta.machine.triad_gbps"), std::string::npos);
  bad = Sample();
  bad.meta.import.emplace();
  bad.meta.import->rows = 1;
  bad.meta.import->matched_rows = 2;
  EXPECT_FALSE(Validate(bad).ok());
}

TEST(ProfileTest, SharesSumToOne) {
  Profile p = Sample();
  double sum = 0;
  for (auto& op : p.ops) sum += op.share;
  EXPECT_NEAR(sum, 1.0, 1e-9);
  EXPECT_NEAR(p.ops[0].share, 1.5 / 2.0, 1e-9);
}

// Times that no run can take (negative, beyond a day) are refused when a profile is loaded, with
// the field named, instead of flowing into reports as hundreds of digits. (JSON itself cannot
// hold NaN or infinity: the parser refuses those, and numbers that overflow a double.)
TEST(ProfileTest, LoadRejectsImplausibleTimesNamingTheField) {
  auto load_with = [](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = nlohmann::json::parse(ToJsonString(Sample()));
    edit(j);
    return FromJsonString(j.dump(), "t.json");
  };
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string field;
  };
  const Case cases[] = {
      {[](nlohmann::json& j) { j["e2e"]["runs_ms"][1] = -3.0; }, "e2e.runs_ms[1] = -3 ms"},
      {[](nlohmann::json& j) { j["e2e"]["runs_ms"][0] = 1e300; }, "e2e.runs_ms[0] = 1e+300 ms"},
      {[](nlohmann::json& j) { j["e2e"]["stats"]["median"] = 1e300; }, "e2e.stats.median"},
      {[](nlohmann::json& j) { j["ops"][0]["stats"]["trimmed_mean"] = 1e300; },
       "ops[0] ('conv').stats.trimmed_mean"},
      {[](nlohmann::json& j) { j["ops"][1]["runs_ms"][2] = -0.5; }, "ops[1] ('relu').runs_ms[2]"},
      {[](nlohmann::json& j) { j["ops"][0]["stats"]["min"] = -1e-3; }, "ops[0] ('conv').stats.min"},
      {[](nlohmann::json& j) {
         j["overhead"] = {{"baseline_median_ms", -1.0}};
       },
       "overhead.baseline_median_ms"},
  };
  for (const Case& c : cases) {
    auto r = load_with(c.edit);
    ASSERT_FALSE(r.ok()) << c.field;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(r.status().message().find(c.field), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("t.json: "), std::string::npos) << r.status().message();
  }
}

TEST(ProfileTest, RecordFileIsNamedAsSuch) {
  auto r = FromJsonString(std::string("OPSREC\0\1", 8) + "binary", "x.rec");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().find("not valid JSON"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("record file"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("opscope report x.rec"), std::string::npos)
      << r.status().message();
}

TEST(ProfileTest, RejectsBadInput) {
  EXPECT_EQ(FromJsonString("{\"schema\": \"opscope.pro", "t").status().code(),
            StatusCode::kDataLoss);
  EXPECT_EQ(FromJsonString("{\"traceEvents\": []}", "t").status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(FromJsonString("{\"schema\": \"opscope.profile/9\"}", "t").status().code(),
            StatusCode::kUnsupported);
  EXPECT_EQ(FromJsonString("{\"schema\": \"opscope.profile/1\", \"ops\": 5}", "t").status().code(),
            StatusCode::kDataLoss);
  Profile p = Sample();
  p.op_events.push_back({7, 0, 0, 0, 1});
  EXPECT_FALSE(Validate(p).ok());
  p = Sample();
  p.samples->samples[0].stack = {9};
  EXPECT_FALSE(Validate(p).ok());
  p = Sample();
  p.ops[1].name = "conv";
  EXPECT_FALSE(Validate(p).ok());
}

}  // namespace
}  // namespace opscope::profile

namespace opscope::profile {
namespace {

// The streaming writer (the gpu section's record arrays spliced in one record at a time) writes
// exactly what the document tree's dump writes, pretty and compact, empty arrays included.
TEST(ProfileJsonStreaming, GpuArraysSplicedAsTheTreeWouldDumpThem) {
  Profile p;
  p.meta.kind = "import/pytorch";
  OpRecord op;
  op.name = "a";
  op.runs_ms = {1.0};
  p.ops.push_back(op);
  p.gpu.emplace();
  p.gpu->device_name = "dev \"0\"";
  for (int i = 0; i < 3; ++i) {
    GpuKernel k;
    k.name = "k" + std::to_string(i) + "<float>\n";
    k.start_ns = i * 10;
    k.end_ns = i * 10 + 5;
    k.grid[0] = 7;
    k.block[2] = 3;
    k.occupancy = 0.375 * i;
    k.sm_throughput_pct = i == 1 ? 12.5 : -1;
    k.metrics_duration_ns = 1e-5 * i;
    k.bound = i == 2 ? "memory" : "";
    k.tid = 40 + i;
    k.correlation_id = 4000000000u;
    p.gpu->kernels.push_back(k);
  }
  GpuApiCall a;
  a.name = "cudaLaunchKernel";
  a.api = "runtime";
  a.start_ns = -5;
  a.end_ns = 9000000000000000000;
  p.gpu->api_calls.push_back(a);
  a.name = "cu\xc3\xa9\"q\"";
  p.gpu->api_calls.push_back(a);
  GpuMemcpy m;
  m.kind = "HtoD";
  m.bytes = 42;
  p.gpu->memcpys.push_back(m);
  // memsets stays empty: "[]".
  for (int indent : {1, 2, -1}) {
    nlohmann::json tree = p;
    EXPECT_EQ(ToJsonString(p, indent), tree.dump(indent) + "\n") << "indent " << indent;
  }
  Profile no_gpu = p;
  no_gpu.gpu.reset();
  nlohmann::json tree = no_gpu;
  EXPECT_EQ(ToJsonString(no_gpu), tree.dump(1) + "\n");
}

// The other big arrays (ops, op events, ranges, the samples' samples) are spliced in too, each
// record as the tree dumps it; a name equal to a slot stays the string it is (the slot carries a
// nonce of each write).
TEST(ProfileJsonStreaming, OpsEventsRangesAndSamplesSplicedAsTheTreeWouldDumpThem) {
  Profile p;
  p.meta.kind = "record";
  for (int i = 0; i < 3; ++i) {
    OpRecord op;
    op.name = i == 1 ? std::string(kRecordArraySlot) + "ops" : "op" + std::to_string(i);
    op.index = i;
    op.runs_ms = {1.0 + i, 2.5};
    op.counters["cycles"] = 1e9;
    op.input_shapes = {{1, 3}, {}};
    p.ops.push_back(op);
    p.op_events.push_back({i, 0, 7, 100 * i, 50});
  }
  p.meta.extra["samples"] = std::string(kRecordArraySlot) + "samples";
  Range r;
  r.name = "stage \"1\"";
  r.end_ns = 10;
  r.counters["thread_cpu_ms"] = 0.25;
  p.ranges.push_back(r);
  p.samples.emplace();
  p.samples->event = "cpu-clock";
  p.samples->frames.push_back({"main", "app", "", 0, 0x10, false});
  p.samples->frames.push_back({"f\xc3\xa9", "app", "a.cc", 3, 0x20, true});
  for (int i = 0; i < 4; ++i) {
    ::opscope::profile::Sample smp;
    smp.stack = i == 3 ? std::vector<uint32_t>{} : std::vector<uint32_t>{1, 0};
    smp.tid = 7;
    smp.time_ns = 1000000000000 + i;
    smp.weight = i == 2 ? 0.5 : 250000;
    smp.op = i == 1 ? 2 : -1;
    p.samples->samples.push_back(smp);
  }
  p.samples->thread_names[7] = "worker";
  for (int indent : {1, 2, -1}) {
    nlohmann::json tree = p;
    EXPECT_EQ(ToJsonString(p, indent), tree.dump(indent) + "\n") << "indent " << indent;
  }
  auto back = FromJsonString(ToJsonString(p), "t.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->ops[1].name, p.ops[1].name);
  EXPECT_EQ(back->meta.extra["samples"], p.meta.extra["samples"]);
  ASSERT_EQ(back->samples->samples.size(), 4u);
  EXPECT_EQ(back->samples->samples[1].op, 2);
  EXPECT_EQ(back->samples->samples[0].stack, (std::vector<uint32_t>{1, 0}));
  EXPECT_EQ(ToJsonString(*back), ToJsonString(p));
  Profile empty = p;
  empty.ops.clear();
  empty.op_events.clear();
  empty.ranges.clear();
  empty.samples->samples.clear();
  nlohmann::json tree = empty;
  EXPECT_EQ(ToJsonString(empty), tree.dump(1) + "\n");
}

}  // namespace
}  // namespace opscope::profile

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace opscope::profile {
namespace {

// The streamed reader (profile_stream.cc) against its whole-tree twin: the same message or the
// same profile.
void ExpectSameAsWholeTree(const std::string& text, const std::string& what) {
  auto streamed = FromJsonString(text, "t.json");
  auto whole = FromJsonStringWholeTree(text, "t.json");
  ASSERT_EQ(streamed.ok(), whole.ok())
      << what << ": " << (streamed.ok() ? whole : streamed).status().message();
  if (!streamed.ok())
    EXPECT_EQ(streamed.status().message(), whole.status().message()) << what;
  else
    EXPECT_EQ(ToJsonString(*streamed), ToJsonString(*whole)) << what;
}

std::vector<std::pair<std::string, std::string>> Seeds() {
  std::vector<std::pair<std::string, std::string>> seeds;
  const std::string dir = std::string(OPSCOPE_SOURCE_DIR) + "/tests/fuzz_corpus/profile_json_fuzz";
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    seeds.emplace_back(e.path().filename().string(),
                       std::string(std::istreambuf_iterator<char>(in), {}));
  }
  std::sort(seeds.begin(), seeds.end());
  return seeds;
}

TEST(ProfileStreamedReader, RecordsAndErrorsAsTheWholeTreeReadsThem) {
  const auto seeds = Seeds();
  ASSERT_GE(seeds.size(), 10u);
  for (const auto& [name, text] : seeds) ExpectSameAsWholeTree(text, name);
  // What the seeds are for: each is read, or refused with the message its twin gives.
  auto seed = [&](const std::string& name) {
    for (const auto& [n, text] : seeds)
      if (n == name) return text;
    ADD_FAILURE() << "no seed " << name;
    return std::string();
  };
  auto valid = FromJsonString(seed("valid_gpu"), "t.json");
  ASSERT_TRUE(valid.ok()) << valid.status().message();
  ASSERT_TRUE(valid->gpu.has_value());
  EXPECT_EQ(valid->gpu->kernels.size(), 2u);
  EXPECT_EQ(valid->gpu->kernels[1].start_ns, 210);
  EXPECT_EQ(valid->gpu->kernels[0].grid[2], 3);
  EXPECT_EQ(valid->gpu->memcpys.size(), 1u);
  EXPECT_EQ(valid->gpu->memsets.size(), 1u);
  EXPECT_EQ(valid->gpu->api_calls.size(), 1u);
  EXPECT_EQ(valid->gpu->syncs.size(), 1u);
  EXPECT_EQ(valid->ranges.size(), 1u);
  auto samples = FromJsonString(seed("valid_samples"), "t.json");
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  ASSERT_EQ(samples->samples->samples.size(), 2u);
  EXPECT_EQ(samples->samples->samples[0].stack, (std::vector<uint32_t>{1, 0}));
  EXPECT_EQ(samples->ops.size(), 2u);
  auto dup = FromJsonString(seed("duplicate_samples_and_ops"), "t.json");
  ASSERT_TRUE(dup.ok()) << dup.status().message();
  EXPECT_EQ(dup->samples->event, "cycles") << "a repeated key replaces the earlier value";
  EXPECT_EQ(dup->samples->samples.size(), 1u);
  EXPECT_TRUE(dup->ops.empty());
  auto meta_first = FromJsonString(seed("bad_kernel_and_meta"), "t.json");
  EXPECT_EQ(meta_first.status().message(),
            "t.json: malformed profile: [json.exception.type_error.302] type must be number, but "
            "is string")
      << "meta is read before the gpu section, as in the whole tree";
}

// Every truncation and every single-bit flip of every seed.
TEST(ProfileStreamedReader, TruncationsAndBitFlipsAgreeWithTheWholeTree) {
  for (const auto& [name, text] : Seeds()) {
    for (size_t n = 0; n < text.size(); n += 3) ExpectSameAsWholeTree(text.substr(0, n), name);
    for (size_t i = 0; i < text.size(); ++i)
      for (int b : {0, 1, 5}) {
        std::string f = text;
        f[i] = static_cast<char>(f[i] ^ (1 << b));
        ExpectSameAsWholeTree(f, name + " bit " + std::to_string(i) + "." + std::to_string(b));
      }
  }
}

TEST(ProfileStreamedReader, LoadProfileReadsTheFileAsFromJsonStringReadsItsText) {
  const std::string dir = ::testing::TempDir();
  for (const auto& [name, text] : Seeds()) {
    const std::string path = dir + "/profile_stream_" + name;
    std::ofstream(path, std::ios::binary) << text;
    auto from_file = LoadProfile(path);
    auto from_text = FromJsonString(text, path);
    ASSERT_EQ(from_file.ok(), from_text.ok()) << name;
    if (from_file.ok())
      EXPECT_EQ(ToJsonString(*from_file), ToJsonString(*from_text)) << name;
    else
      EXPECT_EQ(from_file.status().message(), from_text.status().message()) << name;
    std::remove(path.c_str());
  }
  EXPECT_EQ(LoadProfile(dir + "/profile_stream_missing").status().message(),
            dir + "/profile_stream_missing: no such file");
  EXPECT_EQ(LoadProfile(dir).status().message(), dir + ": is a directory");
  const std::string rec = dir + "/profile_stream_rec";
  std::ofstream(rec, std::ios::binary) << "OPSREC\x01";
  EXPECT_NE(LoadProfile(rec).status().message().find("this is a record file"), std::string::npos);
  std::remove(rec.c_str());
}

// A floating-point number where an integer is read: refused when it does not fit (the cast
// would be undefined behaviour; profile_json_fuzz found it), read as before when it does.
TEST(ProfileStreamedReader, FloatsThatDoNotFitAnIntegerFieldAreRefused) {
  const std::string head = R"({"schema": "opscope.profile/1", "meta": {"runs": 1}, )";
  auto big = FromJsonString(head + R"("ops": [{"name": "a", "runs_ms": [1]}],
      "op_events": [[0, 0, 1.2e73, 2, 3]]})",
                            "t.json");
  EXPECT_EQ(big.status().message(),
            "t.json: malformed profile: [json.exception.type_error.302] number 1.2e+73 does not "
            "fit the integer field it is read into");
  auto index = FromJsonString(head + R"("ops": [{"name": "a", "index": -3e9}]})", "t.json");
  EXPECT_NE(index.status().message().find("number -3000000000.0 does not fit"), std::string::npos)
      << index.status().message();
  auto shape =
      FromJsonString(head + R"("ops": [{"name": "a", "input_shapes": [[1, 1e19]]}]})", "t.json");
  EXPECT_NE(shape.status().message().find("does not fit"), std::string::npos)
      << shape.status().message();
  auto fits = FromJsonString(head + R"("ops": [{"name": "a", "index": 0.0, "runs_ms": [1]}],
      "op_events": [[0, 0, 7.0, 2, 3]]})",
                             "t.json");
  ASSERT_TRUE(fits.ok()) << fits.status().message();
  EXPECT_EQ(fits->op_events[0].tid, 7);
}

TEST(ProfileStreamedReader, RegressionCorpus) {
  int n = opscope::testing::ReplayFuzzCorpus("profile_json_fuzz", [](const std::string& b) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  });
  EXPECT_GE(n, 10);
}

}  // namespace
}  // namespace opscope::profile
