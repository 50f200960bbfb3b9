// End-to-end tests of `opscope profile`: bad input gets clear errors before any work, the
// measured numbers are right on a model built for the purpose, every node appears once.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "profile/profile_io.h"
#include "tests/cli_util.h"

namespace opscope::testing {
namespace {

const std::string kSrc = OPSCOPE_SOURCE_DIR;

std::string WriteModel(const std::string& name, const onnx::ModelProto& m) {
  std::string path = TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  return path;
}

onnx::ModelProto TinyModel(const std::vector<std::pair<std::string, std::string>>& ops) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* imp = m.add_opset_import();
  imp->set_domain("");
  imp->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("tiny");
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(4);
  std::string prev = "x";
  int i = 0;
  for (const auto& [domain, op] : ops) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_domain(domain);
    n->set_name("n" + std::to_string(i));
    n->add_input(prev);
    prev = "y" + std::to_string(i++);
    n->add_output(prev);
    if (!domain.empty()) {
      auto* d = m.add_opset_import();
      d->set_domain(domain);
      d->set_version(1);
    }
  }
  auto* out = g->add_output();
  out->set_name(prev);
  auto* ot = out->mutable_type()->mutable_tensor_type();
  ot->set_elem_type(onnx::TensorProto::FLOAT);
  ot->mutable_shape()->add_dim()->set_dim_value(4);
  return m;
}

CommandResult Profile(std::vector<std::string> args) {
  args.insert(args.begin(), {OpscopeBinary(), "profile"});
  return RunCommand(args);
}

void ExpectError(const CommandResult& r, const std::string& needle) {
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.exit_code, 128) << "crashed: " << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "stderr: " << r.err;
  EXPECT_NE(r.err.find("opscope: error:"), std::string::npos) << r.err;
}

TEST(ProfileCliTest, BadCountsAndOutputsFailBeforeWork) {
  std::string model = kSrc + "/tests/models/twin_matmul.onnx";
  ExpectError(Profile({model, "--runs", "0"}), "--runs: must be a whole number from 1");
  ExpectError(Profile({model, "--warmup", "-3"}), "--warmup: must be a whole number from 0");
  ExpectError(Profile({model, "--format", "yaml"}), "unknown format 'yaml'");
  ExpectError(Profile({model, "-o", "out.xyz"}), "cannot tell the format");
  ExpectError(Profile({model, "-o", "/nonexistent-dir/p.json"}), "does not exist");
  ExpectError(Profile({model, "--shape", "x=1xbad"}), "expected NAME=DxDxD");
  ExpectError(Profile({model, "--shape", "nosuch=1x2"}), "not an input of the model");
  ExpectError(Profile({model, "--shape", "x=1x2x3"}), "rank");
}

// Progress (#44): when stderr is not a terminal (a CI log), plain lines with the phase, done/total
// and an ETA, at most every $OPSCOPE_PROGRESS_SECONDS (0 here: every step); none with -q.
TEST(ProfileCliTest, ProgressLinesNameThePhasesWhenStderrIsALog) {
  const std::string model = kSrc + "/tests/models/twin_matmul.onnx";
  const std::string cmd = "OPSCOPE_PROGRESS_SECONDS=0 " + OpscopeBinary() + " profile " + model +
                          " --runs 4 --warmup 3 --format json -o /dev/null";
  auto r = RunShell(cmd);  // stderr is a pipe here, as in a CI log
  EXPECT_EQ(r.exit_code, 0) << r.err;
  size_t at = 0;
  for (const char* phase : {"opscope: loading", "opscope: planning", "opscope: warm-up [",
                            "opscope: measuring [", "100% (8/8)"}) {
    const size_t found = r.err.find(phase, at);
    ASSERT_NE(found, std::string::npos) << phase << " after byte " << at << ":\n" << r.err;
    at = found;
  }
  EXPECT_NE(r.err.find("ETA "), std::string::npos) << r.err;
  auto quiet = RunShell(cmd + " -q");
  EXPECT_EQ(quiet.exit_code, 0);
  EXPECT_TRUE(quiet.err.empty()) << quiet.err;
}

TEST(ProfileCliTest, BadModelFiles) {
  ExpectError(Profile({TempDir() + "/missing.onnx"}), "no such file");
  auto bytes = ReadFile(kSrc + "/models/bev_demo.onnx");
  ASSERT_TRUE(bytes.ok());
  std::string trunc = TempDir() + "/truncated.onnx";
  std::ofstream(trunc, std::ios::binary) << bytes->substr(0, bytes->size() / 3);
  ExpectError(Profile({trunc}), "truncated.onnx");
  std::string text = TempDir() + "/text.onnx";
  std::ofstream(text) << "this is not a model\n";
  ExpectError(Profile({text}), "not a valid ONNX model");

  std::string unsupported = WriteModel(
      "unsupported.onnx", TinyModel({{"", "Relu"}, {"com.example", "FancyOp"}, {"", "Hardmax"}}));
  auto r = Profile({unsupported});
  ExpectError(r, "2 unsupported nodes (ai.onnx opset 13, com.example domain opset 1): ");
  EXPECT_NE(r.err.find("com.example::FancyOp ×1 (node 'n1'), Hardmax ×1 (node 'n2')"),
            std::string::npos)
      << r.err;

  onnx::ModelProto bad = TinyModel({{"", "Relu"}});
  bad.mutable_graph()->mutable_node(0)->set_input(0, "undefined_tensor");
  auto checker = Profile({WriteModel("checker.onnx", bad)});
  ExpectError(checker, "checker");
  // libonnx's message spans lines; the node's name (on a later line) must reach the user.
  EXPECT_NE(checker.err.find("n0"), std::string::npos) << checker.err;
  EXPECT_EQ(checker.err.find('\n'), checker.err.size() - 1) << "not one line: " << checker.err;
}

TEST(ProfileCliTest, Opset20ModelRunsAndTheProfileSaysWhichOnnxChecksRan) {
  // Gelu exists from opset 20, beyond libonnx 1.12 (17): its checker and shape inference are
  // skipped and the profile says so.
  onnx::ModelProto m = TinyModel({{"", "Gelu"}, {"", "Mish"}});
  m.mutable_opset_import(0)->set_version(20);
  auto r =
      Profile({WriteModel("gelu20.onnx", m), "--runs", "2", "--warmup", "1", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto p = profile::FromJsonString(r.out, "stdout");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->meta.extra["onnx_checker"], "skipped: opset 20 > 17 known to libonnx 1.12.0");
  EXPECT_EQ(p->meta.extra["onnx_shape_inference"], p->meta.extra["onnx_checker"]);
  ASSERT_EQ(p->ops.size(), 2u);
  EXPECT_EQ(p->ops[0].op_type, "Gelu");
  EXPECT_DOUBLE_EQ(p->ops[0].flops, 5 * 4);  // 5 per element
  EXPECT_EQ(p->ops[1].output_shapes, (std::vector<std::vector<int64_t>>{{4}}));
  auto old = Profile({WriteModel("relu13.onnx", TinyModel({{"", "Relu"}})), "--runs", "1",
                      "--warmup", "1", "--format", "json"});
  ASSERT_EQ(old.exit_code, 0) << old.err;
  auto q = profile::FromJsonString(old.out, "stdout");
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->meta.extra["onnx_checker"], "libonnx 1.12.0 (opset<=17)");
}

// An int8 model listed 238 nodes on one unreadable line: now grouped by operator with counts
// and the first few names, still one line and the same exit code (2, as for every model the
// engine cannot run).
TEST(ProfileCliTest, ManyUnsupportedNodesAreGroupedByOperator) {
  std::vector<std::pair<std::string, std::string>> ops;
  for (int i = 0; i < 119; ++i) {
    ops.push_back({"", "Hardmax"});
    ops.push_back({"com.microsoft", "QGemm"});
  }
  onnx::ModelProto m = TinyModel(ops);
  // TinyModel imports a domain once per node that uses it; keep one import.
  while (m.opset_import_size() > 2) m.mutable_opset_import()->RemoveLast();
  auto r = Profile({WriteModel("int8ish.onnx", m)});
  ExpectError(r,
              "int8ish.onnx: 238 unsupported nodes (ai.onnx opset 13, com.microsoft domain "
              "opset 1): Hardmax ×119 (first: 'n0', 'n2', 'n4', …), com.microsoft::QGemm "
              "×119 (first: 'n1', 'n3', 'n5', …); run `opscope ops`");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_LT(r.err.size(), 300u) << r.err;
}

TEST(ProfileCliTest, WrongInputFile) {
  std::string model = kSrc + "/tests/models/twin_matmul.onnx";
  std::string dir = TempDir() + "/outs";
  // Save real outputs, then feed an output (shape 256x128) as the input x (256x256).
  auto r =
      Profile({model, "--runs", "1", "--warmup", "1", "--save-outputs", dir, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectError(Profile({model, "--input", "x=" + dir + "/output_0.pb", "--runs", "1"}), "x");
  ExpectError(Profile({model, "--input", "x=" + TempDir() + "/none.pb"}), "no such file");
}

// The model_struct_fuzz findings (libonnx crashes, UB in opscope before the fixes): each is one
// error line naming the model and the initializer (or node), exit status 2.
TEST(ProfileCliTest, FuzzFoundCorruptModelsAreOneLineErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"crash-split-scalar-initializer-short-raw-data.onnx", "initializer 'sp': raw_data holds"},
      {"crash-parsedata-heap-overflow.onnx", "initializer 'sp': raw_data holds"},
      {"crash-slice-axes-initializer-long-raw-data.onnx", "initializer 'ax': raw_data holds"},
      {"crash-convtranspose-rank2-input-no-attributes.onnx", "initializer 'w': raw_data holds"},
      {"crash-tensor-numel-signed-overflow.onnx",
       "node 'Conv_0' (Conv): input 'x' has rank 8 but weight 'w' has rank 5"},
  };
  for (const auto& [f, what] : cases) {
    std::string model = kSrc + "/tests/fuzz_corpus/model_struct_fuzz/" + f;
    auto r = Profile({model, "--runs", "1"});
    EXPECT_EQ(r.exit_code, 2) << f << ": " << r.err;
    ExpectError(r, std::string(f) + ": " + what);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// --threads outside 1..MaxThreads() is a usage error; more threads than CPUs is allowed but
// warned about on stderr and recorded in the profile (the times include waiting for a CPU).
TEST(ProfileCliTest, ThreadCounts) {
  std::string model = kSrc + "/tests/models/twin_matmul.onnx";
  for (const char* t : {"0", "-1", "100000"}) {
    auto r = Profile({model, "--threads", t, "--runs", "1"});
    EXPECT_EQ(r.exit_code, 2) << t << ": " << r.err;
    ExpectError(r, "--threads must be between 1 and");
    EXPECT_NE(r.err.find(std::string("got ") + t + ")"), std::string::npos) << r.err;
  }
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  const int cpus = CPU_COUNT(&set);
  auto r = Profile({model, "--threads", std::to_string(cpus + 1), "--runs", "1", "--warmup", "0",
                    "--no-overhead", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string warning = std::to_string(cpus + 1) + " threads on " + std::to_string(cpus) +
                        " usable CPUs: oversubscribed";
  EXPECT_NE(r.err.find("opscope: warning: " + warning), std::string::npos) << r.err;
  auto p = profile::FromJsonString(r.out, "stdout");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->meta.threads, cpus + 1);
  bool recorded = false;
  for (const auto& d : p->meta.degradations) recorded |= d.find(warning) != std::string::npos;
  EXPECT_TRUE(recorded) << r.out.substr(0, 2000);
}

// A model whose initializer's external data is a system file must not load, so no byte of that
// file can reach --save-outputs.
TEST(ProfileCliTest, ExternalDataOutsideTheModelFolderIsRefused) {
  onnx::ModelProto m = TinyModel({{"", "Relu"}});
  auto* g = m.mutable_graph();
  auto* w = g->add_initializer();
  w->set_name("stolen");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = w->add_external_data();
  kv->set_key("location");
  kv->set_value("../../../../../../../../etc/passwd");
  kv = w->add_external_data();
  kv->set_key("length");
  kv->set_value("16");
  auto* add = g->add_node();
  add->set_op_type("Add");
  add->set_name("leak");
  add->add_input(g->node(0).output(0));
  add->add_input("stolen");
  add->add_output("leaked");
  g->mutable_output(0)->set_name("leaked");
  std::string outs = TempDir() + "/leak_outs";
  auto r = Profile({WriteModel("leak.onnx", m), "--runs", "1", "--warmup", "0", "--save-outputs",
                    outs, "--format", "json"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  ExpectError(r,
              "leak.onnx: initializer 'stolen': external data location "
              "'../../../../../../../../etc/passwd' leads out of the model's folder");
  EXPECT_FALSE(std::filesystem::exists(outs + "/output_0.pb"));
}

// Writes a TensorProto .pb by hand (any type, even ones the engine does not run).
std::string WriteTensorProto(const std::string& name, const onnx::TensorProto& t) {
  std::string path = TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << t.SerializeAsString();
  return path;
}

// Every --input error names the input and the file.
TEST(ProfileCliTest, InputFileErrorsNameTheInputAndTheFile) {
  std::string model = kSrc + "/tests/models/twin_matmul.onnx";
  onnx::TensorProto good;
  good.set_data_type(onnx::TensorProto::FLOAT);
  good.add_dims(256);
  good.add_dims(256);
  good.set_raw_data(std::string(256 * 256 * sizeof(float), '\0'));
  std::string good_pb = WriteTensorProto("good.pb", good);

  auto r = Profile({model, "--input", "nosuch=" + good_pb, "--runs", "1"});
  EXPECT_EQ(r.exit_code, 2);
  ExpectError(r, "--input nosuch=" + good_pb +
                     " names 'nosuch', which is not an input of the "
                     "model (inputs: x)");
  EXPECT_EQ(r.err.find("--shape"), std::string::npos) << r.err;

  std::string empty = TempDir() + "/empty.pb";
  std::ofstream(empty).close();
  r = Profile({model, "--input", "x=" + empty, "--runs", "1"});
  EXPECT_EQ(r.exit_code, 2);
  ExpectError(r, "--input 'x': " + empty + ": empty file");

  onnx::TensorProto str;
  str.set_data_type(onnx::TensorProto::STRING);
  str.add_dims(1);
  str.add_string_data("hello");
  std::string str_pb = WriteTensorProto("string.pb", str);
  r = Profile({model, "--input", "x=" + str_pb, "--runs", "1"});
  EXPECT_EQ(r.exit_code, 2);
  ExpectError(r, "--input 'x': " + str_pb + ": tensor data type STRING is not supported");

  onnx::TensorProto small = good;
  small.set_dims(1, 128);
  small.set_raw_data(std::string(256 * 128 * sizeof(float), '\0'));
  std::string small_pb = WriteTensorProto("small.pb", small);
  r = Profile({model, "--input", "x=" + small_pb, "--runs", "1"});
  EXPECT_EQ(r.exit_code, 2);
  ExpectError(r, "--input x=" + small_pb);
  EXPECT_NE(r.err.find("input 'x'"), std::string::npos) << r.err;

  r = Profile({model, "--input", "x=" + good_pb, "--input", "x=" + small_pb, "--runs", "1"});
  EXPECT_EQ(r.exit_code, 2);
  ExpectError(r, "input 'x' is already given by --input x=" + good_pb);
}

TEST(ProfileCliTest, FourTimesTheWorkMeasuresClearlySlower) {
  auto r = Profile({kSrc + "/tests/models/twin_matmul.onnx", "--threads", "1", "--warmup", "5",
                    "--runs", "40", "--no-overhead", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto p = profile::FromJsonString(r.out, "stdout");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const profile::OpRecord* light = nullptr;
  const profile::OpRecord* heavy = nullptr;
  for (const auto& op : p->ops) (op.name == "light" ? light : heavy) = &op;
  ASSERT_TRUE(light && heavy);
  EXPECT_DOUBLE_EQ(heavy->flops, 4 * light->flops);
  // Attribution, not speed: the heavy node must get clearly more time than the light one. The
  // band is wide because the ratio depends on the CPU (the 512 KiB heavy weight misses a 512 KiB
  // L2 where the light one fits: 5.2-5.9 on an AVX2 EPYC, 3-5 on others) and on load.
  double ratio = heavy->stats.median / light->stats.median;
  EXPECT_GE(ratio, 2.0);
  EXPECT_LE(ratio, 8.0);
  // The two nodes' times add up to the end-to-end time (none lost, none counted twice). Compared
  // on the fastest run of each: under load the medians drift apart (a preemption between the two
  // nodes lands in e2e only; CI on a 2-core VM beside fuzzers saw 1.58 vs 2.22 ms), the minimum is
  // the undisturbed run (1.15-1.39 vs 1.16-1.40 ms idle on an AMD EPYC).
  double sum = light->stats.min + heavy->stats.min;
  EXPECT_NEAR(sum / p->e2e.stats.min, 1.0, 0.10)
      << "per-op sum of minimums " << sum << " vs e2e minimum " << p->e2e.stats.min;
}

// Control flow: every node of a Loop body and of an If inside it is a row of its own, named
// after its parents; the loop's row is exclusive of its body, so no time is counted twice; a
// branch's node costs what its iterations cost (2 of 4 iterations take each branch here).
TEST(ProfileCliTest, SubgraphNodesAreRowsOfTheirOwnAndParentsAreExclusive) {
  auto r = Profile({kSrc + "/tests/models/control_flow.onnx", "--threads", "1", "--warmup", "1",
                    "--runs", "3", "--no-overhead", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto p = profile::FromJsonString(r.out, "stdout");
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::map<std::string, const profile::OpRecord*> by_name;
  for (const auto& op : p->ops) by_name[op.name] = &op;
  for (const char* n :
       {"lstm", "Loop_0", "Loop_0/body/early", "Loop_0/body/If_0",
        "Loop_0/body/If_0/then_branch/fast_mm", "Loop_0/body/If_0/then_branch/fast_tanh",
        "Loop_0/body/If_0/else_branch/slow_mm", "Loop_0/body/scan_copy"})
    ASSERT_TRUE(by_name.count(n)) << n;
  EXPECT_EQ(by_name["Loop_0"]->attribution,
            "measured, exclusive of its subgraph nodes (listed as 'Loop_0/...')");
  EXPECT_EQ(by_name["Loop_0/body/If_0"]->attribution, "measured inside 'Loop_0'");
  EXPECT_EQ(by_name["Loop_0/body/If_0/then_branch/fast_mm"]->attribution,
            "measured inside 'Loop_0/body/If_0'");
  // 2 iterations x 2*64*64 FLOPs in each branch's MatMul.
  EXPECT_DOUBLE_EQ(by_name["Loop_0/body/If_0/then_branch/fast_mm"]->flops, 2 * 2 * 64 * 64);
  EXPECT_DOUBLE_EQ(by_name["Loop_0/body/If_0/else_branch/slow_mm"]->flops, 2 * 2 * 64 * 64);
  // Nested intervals: in every run the rows (exclusive parents) add up to no more than the run.
  for (size_t run = 0; run < p->e2e.runs_ms.size(); ++run) {
    double sum = 0;
    for (const auto& op : p->ops) sum += op.runs_ms[run];
    EXPECT_LE(sum, p->e2e.runs_ms[run]) << "run " << run;
    EXPECT_GT(by_name["Loop_0/body/If_0/then_branch/fast_mm"]->runs_ms[run], 0) << run;
  }
}

// The float values of a TensorProto file as --save-outputs writes them.
std::vector<float> ReadFloats(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  onnx::TensorProto t;
  EXPECT_TRUE(t.ParseFromString(bytes)) << path;
  std::vector<float> v(t.float_data().begin(), t.float_data().end());
  if (v.empty() && !t.raw_data().empty()) {
    v.resize(t.raw_data().size() / sizeof(float));
    std::memcpy(v.data(), t.raw_data().data(), v.size() * sizeof(float));
  }
  return v;
}

// --max-loop-iterations: a Loop past the limit fails naming the node (the test model's Loop
// runs 4 iterations); the limit itself is checked; at the limit the model runs.
TEST(ProfileCliTest, MaxLoopIterationsStopsALoopNamingTheNode) {
  const std::string model = kSrc + "/tests/models/control_flow.onnx";
  ExpectError(Profile({model, "--runs", "1", "--warmup", "0", "--max-loop-iterations", "3"}),
              "node 'Loop_0' (Loop): stopped after 3 iterations, the loop iteration limit");
  ExpectError(Profile({model, "--max-loop-iterations", "-1"}),
              "--max-loop-iterations: must be a whole number of at least 0");
  auto ok = Profile({model, "--runs", "1", "--warmup", "0", "--max-loop-iterations", "4"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// The demo model with and without channels-last regions, in both region layouts (NHWC, and the
// nChw8c that AVX2 CPUs get; OPSCOPE_REGION_LAYOUT picks one on any CPU): the flag is honoured
// and recorded, the layout named, and the outputs agree (the convolutions accumulate in a
// different order, hence a tolerance).
TEST(ProfileCliTest, DemoModelOutputsAgreeWithAndWithoutChannelsLast) {
  std::string model = kSrc + "/models/bev_demo.onnx";
  std::string off = TempDir() + "/cl_off";
  auto b = Profile({model, "--runs", "2", "--warmup", "2", "--no-overhead", "--save-outputs", off,
                    "--no-channels-last", "--format", "json"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  auto pb = profile::FromJsonString(b.out, "stdout");
  ASSERT_TRUE(pb.ok());
  EXPECT_EQ(pb->meta.extra["channels_last"], "off");
  for (const auto& op : pb->ops) EXPECT_EQ(op.layout, "") << op.name;
  int files = 0;
  for (const char* layout : {"nhwc", "nchw8c"}) {
    SCOPED_TRACE(layout);
    std::string on = TempDir() + "/cl_on_" + layout;
    auto a = RunCommand({"/usr/bin/env", std::string("OPSCOPE_REGION_LAYOUT=") + layout,
                         OpscopeBinary(), "profile", model, "--runs", "2", "--warmup", "2",
                         "--no-overhead", "--save-outputs", on, "--format", "json"});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    auto pa = profile::FromJsonString(a.out, "stdout");
    ASSERT_TRUE(pa.ok());
    EXPECT_EQ(pa->meta.extra["channels_last"], "on");
    // The demo backbone is a conv chain: its first conv reads the NCHW input and writes the
    // region layout (its 16 channels are a multiple of 8).
    std::map<std::string, std::string> layout_a;
    for (const auto& op : pa->ops)
      if (!op.layout.empty()) layout_a[op.name] = op.layout;
    EXPECT_EQ(
        layout_a["backbone.conv1"],
        std::string("NCHW in, ") + (layout == std::string("nhwc") ? "NHWC" : "nChw8c") + " out");
    EXPECT_GE(layout_a.size(), 3u);
    for (const auto& e : std::filesystem::directory_iterator(on)) {
      std::vector<float> x = ReadFloats(e.path().string());
      std::vector<float> y = ReadFloats(off + "/" + e.path().filename().string());
      ASSERT_EQ(x.size(), y.size()) << e.path();
      ASSERT_FALSE(x.empty()) << e.path();
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_NEAR(x[i], y[i], 1e-3f + 1e-3f * std::fabs(y[i])) << e.path() << " element " << i;
      ++files;
    }
  }
  EXPECT_GT(files, 0);
}

TEST(ProfileCliTest, DemoModelEveryNodeOnceInEveryFormat) {
  std::string model = kSrc + "/models/bev_demo.onnx";
  onnx::ModelProto m;
  auto bytes = ReadFile(model);
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(m.ParseFromString(*bytes));
  std::string json = TempDir() + "/demo.json", csv = TempDir() + "/demo.csv",
              trace = TempDir() + "/demo.trace.json";
  auto r = Profile({model, "--threads", "2", "--warmup", "1", "--runs", "3", "-o", json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Hot operators"), std::string::npos);
  EXPECT_NE(r.out.find("By operator type"), std::string::npos);
  EXPECT_NE(r.out.find("coverage:"), std::string::npos);
  EXPECT_NE(r.out.find("opscope overhead:"), std::string::npos);
  auto p = profile::LoadProfile(json);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->ops.size(), static_cast<size_t>(m.graph().node_size()));
  for (int i = 0; i < m.graph().node_size(); ++i)
    EXPECT_EQ(p->ops[i].name, m.graph().node(i).name());
  int folded = 0, fused = 0;
  for (const auto& op : p->ops) {
    folded += op.status == profile::OpStatus::kFolded;
    fused += op.status == profile::OpStatus::kFused;
    EXPECT_EQ(op.runs_ms.size(), 3u);
  }
  EXPECT_GT(folded, 0) << "ConstantOfShape should be folded at load";
  EXPECT_GT(fused, 0) << "Conv+BatchNormalization+Relu should be fused";
  ASSERT_TRUE(p->overhead.has_value());

  ASSERT_EQ(Profile({model, "--warmup", "1", "--runs", "2", "-o", csv}).exit_code, 0);
  ASSERT_EQ(Profile({model, "--warmup", "1", "--runs", "2", "-o", trace}).exit_code, 0);
  auto c = ReadFile(csv);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(std::count(c->begin(), c->end(), '\n'), m.graph().node_size() + 1);
  auto t = ReadFile(trace);
  ASSERT_TRUE(t.ok());
  auto j = nlohmann::json::parse(*t, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_GT(j["traceEvents"].size(), 2u * 20);
  // Exact nesting as every viewer reads it; fused steps hold their nodes' split.
  EXPECT_EQ(TraceProblems(trace), "");
  int steps = 0;
  for (const auto& e : j["traceEvents"]) steps += e.value("cat", "") == "fused step";
  EXPECT_GE(steps, 2 * fused / 3) << "a slice per fused step per run";
}

// `--sort mem`: the memory table instead of the hotspots, on `profile` and on `report` of the
// saved profile (alone, and with a samples key beside it); an unknown key is still refused.
TEST(ProfileCliTest, SortMemShowsTheMemoryTable) {
  std::string model = kSrc + "/models/bev_demo.onnx", json = TempDir() + "/mem.json";
  auto r = Profile({model, "--warmup", "0", "--runs", "2", "--sort", "mem", "-o", json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("memory (", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("tensors alive at the peak"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Hot operators"), std::string::npos) << r.out;
  for (const char* keys : {"mem", "memory,self"}) {
    auto rep = RunShell(OpscopeBinary() + " report " + json + " --sort " + keys);
    EXPECT_EQ(rep.exit_code, 0) << rep.err;
    EXPECT_EQ(rep.out.rfind("memory (", 0), 0u) << keys << ": " << rep.out;
  }
  auto bad = Profile({model, "--sort", "size"});
  EXPECT_EQ(bad.exit_code, 2);
}

}  // namespace
}  // namespace opscope::testing

namespace opscope::testing {
namespace {

// `profile --counters --sample`: counters per node (software stand-ins on machines without a
// PMU), samples attributed to nodes, and `report --group op` opens them.
TEST(ProfileCliTest, CountersAndSamplesPerNode) {
  std::string json = TempDir() + "/sampled.json";
  auto r = Profile({kSrc + "/tests/models/twin_matmul.onnx", "--threads", "1", "--warmup", "2",
                    "--runs", "30", "--counters", "--sample", "-F", "2003", "-o", json});
  if (r.exit_code != 0 && r.err.find("(ENOSYS)") != std::string::npos)
    GTEST_SKIP() << "no perf_event_open here (qemu-user?): " << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto p = profile::LoadProfile(json);
  ASSERT_TRUE(p.ok()) << p.status().message();
  for (const auto& op : p->ops) {
    ASSERT_TRUE(op.counters.count("task-clock")) << op.name;
    EXPECT_GT(op.counters.at("task-clock"), 0) << op.name;
  }
  ASSERT_TRUE(p->samples.has_value());
  ASSERT_FALSE(p->samples->samples.empty());
  int attributed = 0;
  for (const auto& s : p->samples->samples) attributed += s.op >= 0;
  EXPECT_GT(attributed, 0);
  auto rep = RunCommand({OpscopeBinary(), "report", json, "--group", "op"});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_NE(rep.out.find("heavy (MatMul)"), std::string::npos) << rep.out;
}

// `opscope ops --format json`: the operator list for scripts, the same list as the table.
TEST(ProfileCliTest, OpsAsJson) {
  auto table = RunCommand({OpscopeBinary(), "ops"});
  auto json = RunCommand({OpscopeBinary(), "ops", "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto j = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << json.out;
  EXPECT_EQ(j["schema"], "opscope.ops/1");
  ASSERT_TRUE(j["operators"].is_array());
  for (const auto& op : j["operators"])
    EXPECT_NE(table.out.find("  " + op.get<std::string>() + "\n"), std::string::npos) << op;
  EXPECT_NE(table.out.find(std::to_string(j["operators"].size()) + " ONNX operators"),
            std::string::npos);
}

// Several -o in one pass, status lines on stderr, and a contradicting extension refused before
// any work.
TEST(ProfileCliTest, SeveralOutputsInOnePass) {
  std::string model = kSrc + "/tests/models/twin_matmul.onnx";
  std::string dir = TempDir();
  ExpectError(Profile({model, "-o", dir + "/a.json", "--format", "csv"}),
              "the .json extension means json");
  auto r = Profile({model, "--runs", "2", "--warmup", "0", "--no-overhead", "-o", dir + "/p.json",
                    "-o", dir + "/p.trace.json", "-o", dir + "/p.csv", "-o", dir + "/p.folded"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* f : {"p.json", "p.trace.json", "p.csv", "p.folded"}) {
    EXPECT_FALSE(ReadAll(dir + "/" + f).empty()) << f;
    EXPECT_NE(r.err.find(std::string("opscope: wrote ") + dir + "/" + f), std::string::npos)
        << r.err;
  }
  EXPECT_EQ(r.out.find("wrote"), std::string::npos) << "status lines belong on stderr";
  EXPECT_NE(r.out.find("Hot operators"), std::string::npos)
      << "the table still goes to the terminal";
  EXPECT_TRUE(nlohmann::json::parse(ReadAll(dir + "/p.trace.json"), nullptr, false).is_object());
  EXPECT_EQ(TraceProblems(dir + "/p.trace.json"), "");
}

}  // namespace
}  // namespace opscope::testing
