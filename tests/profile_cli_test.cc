// End-to-end tests of `opscope profile`: bad input gets clear errors before any work, the
// measured numbers are right on a model built for the purpose, every node appears once.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

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

  std::string unsupported = WriteModel("unsupported.onnx", TinyModel({{"", "Relu"}, {"com.example", "FancyOp"}, {"", "Hardmax"}}));
  auto r = Profile({unsupported});
  ExpectError(r, "2 unsupported nodes");
  EXPECT_NE(r.err.find("node 'n1' (com.example::FancyOp)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("node 'n2' (Hardmax)"), std::string::npos) << r.err;

  onnx::ModelProto bad = TinyModel({{"", "Relu"}});
  bad.mutable_graph()->mutable_node(0)->set_input(0, "undefined_tensor");
  ExpectError(Profile({WriteModel("checker.onnx", bad)}), "checker");
}

TEST(ProfileCliTest, WrongInputFile) {
  std::string model = kSrc + "/tests/models/twin_matmul.onnx";
  std::string dir = TempDir() + "/outs";
  // Save real outputs, then feed an output (shape 256x128) as the input x (256x256).
  auto r = Profile({model, "--runs", "1", "--warmup", "1", "--save-outputs", dir, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectError(Profile({model, "--input", "x=" + dir + "/output_0.pb", "--runs", "1"}), "x");
  ExpectError(Profile({model, "--input", "x=" + TempDir() + "/none.pb"}), "no such file");
}

TEST(ProfileCliTest, FourTimesTheWorkMeasuresThreeToFiveTimesSlower) {
  auto r = Profile({kSrc + "/tests/models/twin_matmul.onnx", "--threads", "1", "--warmup", "5", "--runs", "40",
                    "--no-overhead", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto p = profile::FromJsonString(r.out, "stdout");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const profile::OpRecord* light = nullptr;
  const profile::OpRecord* heavy = nullptr;
  for (const auto& op : p->ops) (op.name == "light" ? light : heavy) = &op;
  ASSERT_TRUE(light && heavy);
  EXPECT_DOUBLE_EQ(heavy->flops, 4 * light->flops);
  double ratio = heavy->stats.median / light->stats.median;
  EXPECT_GE(ratio, 3.0);
  EXPECT_LE(ratio, 5.0);
  double sum = light->stats.median + heavy->stats.median;
  EXPECT_NEAR(sum / p->e2e.stats.median, 1.0, 0.10) << "per-op sum " << sum << " vs e2e " << p->e2e.stats.median;
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

// The demo model with and without channels-last regions: the flag is honoured and recorded,
// and the outputs agree (the convolutions accumulate in a different order, hence a tolerance).
TEST(ProfileCliTest, DemoModelOutputsAgreeWithAndWithoutChannelsLast) {
  std::string model = kSrc + "/models/bev_demo.onnx";
  std::string on = TempDir() + "/cl_on", off = TempDir() + "/cl_off";
  auto a = Profile({model, "--runs", "2", "--warmup", "2", "--no-overhead", "--save-outputs", on,
                    "--format", "json"});
  auto b = Profile({model, "--runs", "2", "--warmup", "2", "--no-overhead", "--save-outputs", off,
                    "--no-channels-last", "--format", "json"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  auto pa = profile::FromJsonString(a.out, "stdout"), pb = profile::FromJsonString(b.out, "stdout");
  ASSERT_TRUE(pa.ok() && pb.ok());
  EXPECT_EQ(pa->meta.extra["channels_last"], "on");
  EXPECT_EQ(pb->meta.extra["channels_last"], "off");
  // The demo backbone is a conv chain: its first conv reads the NCHW input and writes NHWC.
  std::map<std::string, std::string> layout_a;
  for (const auto& op : pa->ops)
    if (!op.layout.empty()) layout_a[op.name] = op.layout;
  for (const auto& op : pb->ops) EXPECT_EQ(op.layout, "") << op.name;
  EXPECT_EQ(layout_a["backbone.conv1"], "NCHW in, NHWC out");
  EXPECT_GE(layout_a.size(), 3u);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(on)) {
    std::vector<float> x = ReadFloats(e.path().string());
    std::vector<float> y = ReadFloats(off + "/" + e.path().filename().string());
    ASSERT_EQ(x.size(), y.size()) << e.path();
    ASSERT_FALSE(x.empty()) << e.path();
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_NEAR(x[i], y[i], 1e-3f + 1e-3f * std::fabs(y[i])) << e.path() << " element " << i;
    ++files;
  }
  EXPECT_GT(files, 0);
}

TEST(ProfileCliTest, DemoModelEveryNodeOnceInEveryFormat) {
  std::string model = kSrc + "/models/bev_demo.onnx";
  onnx::ModelProto m;
  auto bytes = ReadFile(model);
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(m.ParseFromString(*bytes));
  std::string json = TempDir() + "/demo.json", csv = TempDir() + "/demo.csv", trace = TempDir() + "/demo.trace.json";
  auto r = Profile({model, "--threads", "2", "--warmup", "1", "--runs", "3", "-o", json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Hot operators"), std::string::npos);
  EXPECT_NE(r.out.find("By operator type"), std::string::npos);
  EXPECT_NE(r.out.find("coverage:"), std::string::npos);
  EXPECT_NE(r.out.find("opscope overhead:"), std::string::npos);
  auto p = profile::LoadProfile(json);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->ops.size(), static_cast<size_t>(m.graph().node_size()));
  for (int i = 0; i < m.graph().node_size(); ++i) EXPECT_EQ(p->ops[i].name, m.graph().node(i).name());
  int folded = 0, fused = 0;
  for (const auto& op : p->ops) {
    folded += op.status == "folded";
    fused += op.status == "fused";
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
}

}  // namespace
}  // namespace opscope::testing

namespace opscope::testing {
namespace {

// `profile --counters --sample`: counters per node (software stand-ins on machines without a
// PMU), samples attributed to nodes, and `report --group op` opens them.
TEST(ProfileCliTest, CountersAndSamplesPerNode) {
  std::string json = TempDir() + "/sampled.json";
  auto r = Profile({kSrc + "/tests/models/twin_matmul.onnx", "--threads", "1", "--warmup", "2", "--runs", "30",
                    "--counters", "--sample", "-F", "2003", "-o", json});
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

}  // namespace
}  // namespace opscope::testing
