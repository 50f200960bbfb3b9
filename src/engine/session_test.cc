// Session behaviour on small models built here: fusion keeps results and source nodes,
// constant folding (at load and after the planning run), the arena, observers, input checks,
// external data.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "engine/memory_limit.h"
#include "engine/ops/common.h"
#include "engine/ops/region_layout.h"
#include "engine/testing/kernel_runner.h"
#include "engine/testing/model_builder.h"
#include "opscope/engine.h"

namespace opscope::engine {
namespace {

namespace fs = std::filesystem;

using testing::ModelBuilder;

std::vector<float> Rand(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

std::string ConvBnRelu(ModelBuilder& b) {
  b.Input("x", {1, 3, 9, 9});
  b.Init("w", {4, 3, 3, 3}, Rand(4 * 27, 1));
  b.Init("scale", {4}, {1.5f, 0.5f, 2.f, 1.f});
  b.Init("bias", {4}, {0.1f, -0.2f, 0.3f, 0.f});
  b.Init("mean", {4}, {0.05f, 0.1f, -0.1f, 0.2f});
  b.Init("var", {4}, {1.f, 0.5f, 2.f, 0.9f});
  auto* c = b.Node("Conv", {"x", "w"}, {"c"}, "conv");
  ModelBuilder::IntsAttr(c, "pads", {1, 1, 1, 1});
  b.Node("BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"bn"}, "bn");
  b.Node("Relu", {"bn"}, {"y"}, "relu");
  b.Output("y", {1, 4, 9, 9});
  return b.Save("conv_bn_relu.onnx");
}

class CountingObserver : public OpObserver {
 public:
  void OnRunBegin(int) override { ++runs; }
  void OnStepBegin(int s) override { begins.push_back(s); }
  void OnStepEnd(int s) override { ends.push_back(s); }
  int runs = 0;
  std::vector<int> begins, ends;
};

TEST(SessionTest, ConvBatchNormReluFusesAndMatchesUnfused) {
  ModelBuilder b;
  std::string path = ConvBnRelu(b);
  SessionOptions fused, plain;
  plain.fuse = false;
  auto s1 = Session::Load(path, fused);
  auto s2 = Session::Load(path, plain);
  ASSERT_TRUE(s1.ok()) << s1.status().message();
  ASSERT_TRUE(s2.ok()) << s2.status().message();
  ASSERT_EQ((*s1)->Steps().size(), 1u);
  EXPECT_EQ((*s1)->Steps()[0].op_type, "Conv+BatchNormalization+Relu");
  EXPECT_EQ((*s1)->Steps()[0].nodes, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ((*s2)->Steps().size(), 3u);
  Tensor x = testing::RandomTensor({1, 3, 9, 9}, 5);
  for (auto* s : {&*s1, &*s2}) {
    ASSERT_TRUE((*s)->SetInput("x", x).ok());
    for (int r = 0; r < 2; ++r) ASSERT_TRUE((*s)->Run().ok());
  }
  EXPECT_EQ(testing::CompareFloat(*(*s1)->Output("y"), *(*s2)->Output("y"), 1e-4f, 1e-4f), "");
  EXPECT_EQ((*s1)->Nodes()[1].status, "fused");
  EXPECT_GT((*s1)->Nodes()[0].flops, 2.0 * 4 * 81 * 27 * 0.99);  // 2*OC*OH*OW*IC*KH*KW
}

TEST(SessionTest, ShapeSubgraphFoldsAfterPlanningRun) {
  // y = Reshape(Relu(x), Concat(Gather(Shape(x), 0), [-1]))  with x [2,3,4]
  ModelBuilder b;
  b.Input("x", {2, 3, 4});
  b.InitI64("idx", {1}, {0});
  b.InitI64("minus1", {1}, {-1});
  b.Node("Relu", {"x"}, {"r"}, "relu");
  b.Node("Shape", {"x"}, {"s"}, "shape");
  b.Node("Gather", {"s", "idx"}, {"g"}, "gather");
  auto* cat = b.Node("Concat", {"g", "minus1"}, {"newshape"}, "concat");
  auto* a = cat->add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(0);
  b.Node("Reshape", {"r", "newshape"}, {"y"}, "reshape");
  b.Output("y", {2, 12});
  auto s = Session::Load(b.Save("shape_fold.onnx"), {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE((*s)->FillRandomInputs(1).ok());
  CountingObserver obs;
  (*s)->SetObserver(&obs);
  ASSERT_TRUE((*s)->Run().ok());
  size_t first_run_steps = obs.begins.size();
  EXPECT_EQ(first_run_steps, 5u);
  obs.begins.clear();
  obs.ends.clear();
  ASSERT_TRUE((*s)->Run().ok());
  EXPECT_EQ(obs.begins.size(), 2u) << "Shape, Gather, Concat fold after the planning run";
  EXPECT_EQ(obs.begins, obs.ends);
  EXPECT_EQ((*s)->Output("y")->shape(), (std::vector<int64_t>{2, 12}));
  for (const char* n : {"shape", "gather", "concat"}) {
    bool found = false;
    for (const auto& info : (*s)->Nodes())
      if (info.name == n) {
        found = true;
        EXPECT_EQ(info.status, "folded") << n;
      }
    EXPECT_TRUE(found);
  }
}

TEST(SessionTest, ArenaReusesBuffersAndResultsStayCorrect) {
  ModelBuilder b;
  b.Input("x", {64, 64});
  std::string prev = "x";
  for (int i = 0; i < 8; ++i) {
    std::string out = i == 7 ? "y" : "t" + std::to_string(i);
    b.Node(i % 2 ? "Neg" : "Exp", {prev}, {out}, "n" + std::to_string(i));
    prev = out;
  }
  b.Output("y", {64, 64});
  SessionOptions opt;
  opt.fuse = false;
  auto s = Session::Load(b.Save("chain.onnx"), opt);
  ASSERT_TRUE(s.ok()) << s.status().message();
  Tensor x = testing::RandomTensor({64, 64}, 9, -0.1f, 0.1f);
  ASSERT_TRUE((*s)->SetInput("x", x).ok());
  ASSERT_TRUE((*s)->Run().ok());
  Tensor first = *(*s)->Output("y");
  Tensor copy(first.dtype(), first.shape());
  std::memcpy(copy.raw(), first.raw(), first.nbytes());
  EXPECT_GT((*s)->NaiveActivationBytes(), 0u);
  EXPECT_LT((*s)->ArenaBytes(), (*s)->NaiveActivationBytes());
  ASSERT_TRUE((*s)->Run().ok());
  EXPECT_EQ(testing::CompareFloat(*(*s)->Output("y"), copy, 0, 0), "");
}

// A graph output is not in the arena; its buffer is the previous run's when nothing else holds
// it (a fresh one was zero-filled and page-faulted on every run), and a fresh one when the
// caller kept a copy, which must not change under it.
TEST(SessionTest, GraphOutputBuffersAreReusedUnlessTheCallerHoldsThem) {
  ModelBuilder b;
  b.Input("x", {1, 2, 64, 64});
  b.Init("k", {1, 1, 1, 1}, {0.5f});
  b.Node("Add", {"x", "k"}, {"t"}, "add");
  b.Node("Sigmoid", {"t"}, {"y"}, "sig");
  b.Output("y", {1, 2, 64, 64});
  auto s = Session::Load(b.Save("graph_output_reuse.onnx"), SessionOptions{});
  ASSERT_TRUE(s.ok()) << s.status().message();
  Tensor x = testing::RandomTensor({1, 2, 64, 64}, 3, -4.f, 4.f);
  ASSERT_TRUE((*s)->SetInput("x", x).ok());
  ASSERT_TRUE((*s)->Run().ok());  // the planning run
  ASSERT_TRUE((*s)->Run().ok());
  const void* second = (*s)->Output("y")->raw();
  ASSERT_TRUE((*s)->Run().ok());
  EXPECT_EQ((*s)->Output("y")->raw(), second);
  for (int64_t i = 0; i < x.numel(); ++i)
    ASSERT_NEAR((*s)->Output("y")->data<float>()[i],
                1.f / (1.f + std::exp(-(x.data<float>()[i] + 0.5f))), 1e-6f);
  Tensor held = *(*s)->Output("y");  // shares the buffer
  const float before = held.data<float>()[5];
  Tensor x2 = testing::RandomTensor({1, 2, 64, 64}, 4, -4.f, 4.f);
  ASSERT_TRUE((*s)->SetInput("x", x2).ok());
  ASSERT_TRUE((*s)->Run().ok());
  EXPECT_NE((*s)->Output("y")->raw(), held.raw());
  EXPECT_EQ(held.data<float>()[5], before);
  EXPECT_NEAR((*s)->Output("y")->data<float>()[5],
              1.f / (1.f + std::exp(-(x2.data<float>()[5] + 0.5f))), 1e-6f);
}

// A dynamically quantized convolution as ORT's quantizer writes it (DynamicQuantizeLinear ->
// ConvInteger -> Cast -> Mul(x_scale * w_scale)): zero points and scales are runtime values, but
// every shape is known after the planning run, so the intermediates live in the arena (they were
// allocated and page-faulted on every run when the quantized ops were not known to have
// shape-only outputs).
// The chain of ORT's dynamic quantizer with a bias and a Relu; `bias_shape` empty: no bias.
void DynamicQuantConvModel(ModelBuilder& b, std::vector<int64_t> bias_shape, bool relu) {
  b.Input("x", {1, 8, 16, 16});
  auto* w = b.model().mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::UINT8);
  for (int64_t d : {4, 8, 3, 3}) w->add_dims(d);
  std::string wd(4 * 8 * 9, '\0');
  for (size_t i = 0; i < wd.size(); ++i) wd[i] = static_cast<char>((i * 37) & 255);
  w->set_raw_data(wd);
  auto* wz = b.model().mutable_graph()->add_initializer();
  wz->set_name("wz");
  wz->set_data_type(onnx::TensorProto::UINT8);
  wz->set_raw_data(std::string(1, static_cast<char>(128)));
  b.Init("ws", {}, {0.01f});
  b.Node("DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xz"}, "dql");
  auto* conv = b.Node("ConvInteger", {"xq", "w", "xz", "wz"}, {"acc"}, "conv");
  ModelBuilder::IntsAttr(conv, "pads", {1, 1, 1, 1});
  auto* cast = b.Node("Cast", {"acc"}, {"accf"}, "cast");
  auto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  b.Node("Mul", {"xs", "ws"}, {"scale"}, "scale_mul");
  std::string out = "scaled";
  b.Node("Mul", {"accf", "scale"}, {out}, "out_mul");
  if (!bias_shape.empty()) {
    int64_t n = 1;
    for (int64_t d : bias_shape) n *= d;
    b.Init("bias", bias_shape, Rand(n, 17));
    b.Node("Add", {out, "bias"}, {"biased"}, "bias_add");
    out = "biased";
  }
  if (relu) {
    b.Node("Relu", {out}, {"relu"}, "relu");
    out = "relu";
  }
  b.Node("Identity", {out}, {"y"}, "id");
  b.Output("y", {1, 4, 16, 16});
}

TEST(SessionTest, DynamicQuantChainIsArenaPlanned) {
  ModelBuilder b;
  DynamicQuantConvModel(b, {}, false);
  SessionOptions opt;
  opt.fuse = false;
  auto s = Session::Load(b.Save("dynquant.onnx"), opt);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE((*s)->SetInput("x", testing::RandomTensor({1, 8, 16, 16}, 3, -1.f, 1.f)).ok());
  ASSERT_TRUE((*s)->Run().ok());
  Tensor first = *(*s)->Output("y");
  Tensor copy(first.dtype(), first.shape());
  std::memcpy(copy.raw(), first.raw(), first.nbytes());
  // xq (2 KiB) + acc and accf (4 KiB each) at least: all runtime values of the chain.
  EXPECT_GE((*s)->NaiveActivationBytes(), size_t{2048 + 4096 + 4096});
  ASSERT_TRUE((*s)->Run().ok());
  EXPECT_EQ(testing::CompareFloat(*(*s)->Output("y"), copy, 0, 0), "");
}

// ConvInteger -> Cast -> Mul(scale) [-> Add(bias)] [-> Relu] runs as one step (the int32 and
// float intermediates never written) and gives what the unfused nodes give, bit for bit; a bias
// that does not broadcast per channel stays a node of its own.
TEST(SessionTest, ConvIntegerToFloatFusionMatchesUnfused) {
  struct Case {
    std::vector<int64_t> bias;
    bool relu;
    size_t fused;  // nodes reported "fused" (into the ConvInteger's step, but for the last case)
  };
  // The last: a [16] bias broadcasts along W, so the Add stays (and takes the Relu as a post-op).
  for (const Case& c : {Case{{}, false, 2}, Case{{4, 1, 1}, false, 3}, Case{{1, 4, 1, 1}, true, 4},
                        Case{{1}, true, 4}, Case{{}, true, 3}, Case{{16}, true, 3}}) {
    std::vector<Tensor> outs;
    for (bool fuse : {false, true}) {
      ModelBuilder b;
      DynamicQuantConvModel(b, c.bias, c.relu);
      SessionOptions opt;
      opt.fuse = fuse;
      auto s = Session::Load(b.Save("dynquant_fuse.onnx"), opt);
      ASSERT_TRUE(s.ok()) << s.status().message();
      ASSERT_TRUE((*s)->SetInput("x", testing::RandomTensor({1, 8, 16, 16}, 5, -2.f, 3.f)).ok());
      for (int run = 0; run < 2; ++run) ASSERT_TRUE((*s)->Run().ok());
      Tensor y = *(*s)->Output("y");
      Tensor copy(y.dtype(), y.shape());
      std::memcpy(copy.raw(), y.raw(), y.nbytes());
      outs.push_back(std::move(copy));
      if (!fuse) continue;
      size_t fused = 0;
      for (const auto& info : (*s)->Nodes()) fused += info.status == "fused";
      EXPECT_EQ(fused, c.fused) << ShapeString(c.bias) << " relu " << c.relu;
    }
    EXPECT_EQ(testing::CompareFloat(outs[1], outs[0], 0, 0), "")
        << ShapeString(c.bias) << " relu " << c.relu;
  }
}

TEST(SessionTest, InputChecks) {
  ModelBuilder b;
  std::string path = ConvBnRelu(b);
  auto s = Session::Load(path, {});
  ASSERT_TRUE(s.ok());
  Status st = (*s)->SetInput("x", testing::RandomTensor({1, 3, 8, 8}, 1));
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("has shape 1x3x8x8, the model expects 1x3x9x9"), std::string::npos)
      << st.message();
  st = (*s)->SetInput("x", testing::IntTensor({1, 3, 9, 9}, {}));
  EXPECT_NE(st.message().find("type int64"), std::string::npos) << st.message();
  st = (*s)->SetInput("nope", testing::RandomTensor({1}, 1));
  EXPECT_NE(st.message().find("no input 'nope'"), std::string::npos) << st.message();
  EXPECT_FALSE((*s)->Run().ok()) << "running without inputs must fail cleanly";
}

// The step FLOP limit (memory_limit.h; the model fuzzers set it) checks each step's cost at the
// shapes of the run, when the kernel asks for its output: over it, the run fails naming the node.
TEST(SessionTest, StepFlopLimitStopsAStepBeforeItComputes) {
  ModelBuilder b;
  b.Input("a", {64, 64});
  b.Input("w", {64, 64});
  b.Node("MatMul", {"a", "w"}, {"y"}, "mm");
  b.Output("y", {64, 64});
  auto s = Session::Load(b.Save("step_flops.onnx"), {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE((*s)->FillRandomInputs(1).ok());
  struct Reset {
    ~Reset() { SetStepFlopLimit(0); }
  } reset;
  SetStepFlopLimit(1e5);  // the MatMul does 2 * 64^3 = 524,288
  Status st = (*s)->Run();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("node 'mm' (MatMul): would do 5.24e+05 FLOPs, more than the step "
                              "limit of 1e+05"),
            std::string::npos)
      << st.message();
  EXPECT_EQ(st.message().find('\n'), std::string::npos);
  SetStepFlopLimit(1e6);
  EXPECT_TRUE((*s)->Run().ok());
  SetStepFlopLimit(0);
  EXPECT_TRUE((*s)->Run().ok());
  // The fuzzer's 107-second unit: ConvTransposes whose weight is their own [1, 1, 65535] input,
  // shapes known only when it runs. With the fuzzers' limit it stops at the first one.
  // An input of tests/fuzz_corpus/model_struct_fuzz/, loaded, its inputs filled; with `trim`,
  // cut to the outputs its operators have first (ModelBuilder::TrimExtraOutputs).
  auto corpus = [](const char* name, bool trim = false) {
    std::string path =
        std::string(OPSCOPE_SOURCE_DIR) + "/tests/fuzz_corpus/model_struct_fuzz/" + name;
    if (trim) {
      ModelBuilder t = ModelBuilder::FromFile(path);
      t.TrimExtraOutputs();
      path = t.Save(std::string("trimmed-") + name);
    }
    auto m = Session::Load(path, {});
    if (m.ok() && !(*m)->FillRandomInputs(1).ok()) m = Internal("cannot fill its inputs");
    return m;
  };
  // Its second ConvTranspose names two outputs, refused at load since that null read was found
  // (ANodesExtraOutputsAreRefusedBeforeAnythingReadsThem); the first is the slow one.
  EXPECT_FALSE(corpus("slow-convtranspose-own-weight.onnx").ok());
  auto slow = corpus("slow-convtranspose-own-weight.onnx", /*trim=*/true);
  ASSERT_TRUE(slow.ok()) << slow.status().message();
  SetStepFlopLimit(2e7);
  st = (*slow)->Run();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("node 'ConvTranspose_0' (ConvTranspose): would do 8.59e+09 FLOPs"),
            std::string::npos)
      << st.message();
  // Multi-output steps are checked too (at output 0): the same ConvTranspose given a second
  // output (an opset-21 model, so libonnx's checker is skipped) passed unchecked and ran 110 s.
  // That input is now refused at load, for the output ConvTranspose does not have; a
  // LayerNormalization with its Mean and InvStdDev outputs is a multi-output step of a valid
  // model.
  EXPECT_FALSE(corpus("slow-convtranspose-second-output.onnx").ok());
  ModelBuilder ln(17);
  ln.Input("x", {512, 1024});
  ln.Init("scale", {1024}, std::vector<float>(1024, 1.f));
  ln.Node("LayerNormalization", {"x", "scale"}, {"y", "mean", "inv"}, "ln");
  ln.Output("y", {512, 1024});
  ln.Output("mean", {512, 1});
  ln.Output("inv", {512, 1});
  auto two = Session::Load(ln.Save("step_flops_ln.onnx"), {});
  ASSERT_TRUE(two.ok()) << two.status().message();
  ASSERT_TRUE((*two)->FillRandomInputs(1).ok());
  SetStepFlopLimit(1e6);  // below its cost, a few FLOPs for each of the 524,288 elements
  st = (*two)->Run();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("node 'ln' (LayerNormalization): would do "), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("FLOPs, more than the step limit of 1e+06"), std::string::npos)
      << st.message();
  SetStepFlopLimit(2e7);
  // An empty tensor costs no FLOPs, but its rows count: the fuzzer's 131-second unit, a
  // BatchNormalization of an empty [2147483647, 4, 0, 0] input (8.6e9 rows).
  auto rows = corpus("timeout-batchnorm-empty-2pow31-rows.onnx");
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  st = (*rows)->Run();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("(BatchNormalization): would walk the 8.59e+09 rows of an empty "
                              "output of shape 2147483647x4x0x0, more than the step limit of "
                              "2e+07"),
            std::string::npos)
      << st.message();
  SetStepFlopLimit(0);  // no limit: the kernel itself walks nothing
  EXPECT_TRUE((*rows)->Run().ok());
  // Any op, not only those that walk: a Relu of an empty input (its output, checked first).
  ModelBuilder e;
  e.Input("x", {int64_t{1} << 30, 0});
  e.Node("Relu", {"x"}, {"y"}, "relu");
  e.Output("y", {int64_t{1} << 30, 0});
  auto empty = Session::Load(e.Save("step_rows.onnx"), {});
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  ASSERT_TRUE((*empty)->FillRandomInputs(1).ok());
  EXPECT_TRUE((*empty)->Run().ok());
  SetStepFlopLimit(1e6);
  st = (*empty)->Run();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("node 'relu' (Relu): would walk the 1.07e+09 rows of an empty output "
                              "of shape 1073741824x0"),
            std::string::npos)
      << st.message();
}

// The run work limit (memory_limit.h; the model fuzzers set it) adds each step's FLOPs, or the
// elements of its output where it computes fewer, over the whole run, loop bodies included.
TEST(SessionTest, RunWorkLimitStopsTheStepThatTakesTheRunPastIt) {
  struct Reset {
    ~Reset() {
      SetRunWorkLimit(0);
      SetLoopIterationLimit(0);
    }
  } reset;
  // Three Relus of 1,000 elements: 1,000 units each (a Relu counts no FLOPs), 3,000 in all.
  ModelBuilder b;
  b.Input("x", {1000});
  b.Node("Relu", {"x"}, {"a"}, "r1");
  b.Node("Relu", {"a"}, {"b"}, "r2");
  b.Node("Relu", {"b"}, {"y"}, "r3");
  b.Output("y", {1000});
  auto s = Session::Load(b.Save("run_work.onnx"), {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE((*s)->FillRandomInputs(1).ok());
  SetRunWorkLimit(2500);
  Status st = (*s)->Run();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("node 'r3' (Relu): would take the run's work to 3e+03"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("more than the run limit of 2.5e+03"), std::string::npos)
      << st.message();
  SetRunWorkLimit(3000);  // each run starts from zero: the planning run, then a planned one
  EXPECT_TRUE((*s)->Run().ok());
  EXPECT_TRUE((*s)->Run().ok());
  // The fuzzer's 88-second unit: a Loop (trip count 7e16, 10 k under the fuzzers' loop limit)
  // whose body adds a [2] accumulator to a [65535, 1] input, every step well under the step
  // limit. It stops in the body once the run has done 1e7 (the fuzzers allow 1e8, ~3 s here).
  auto loop = Session::Load(std::string(OPSCOPE_SOURCE_DIR) +
                                "/tests/fuzz_corpus/model_struct_fuzz/"
                                "slow-loop-10k-iterations-of-1e5-flops.onnx",
                            {});
  ASSERT_TRUE(loop.ok()) << loop.status().message();
  ASSERT_TRUE((*loop)->FillRandomInputs(1).ok());
  SetLoopIterationLimit(10000);
  SetRunWorkLimit(1e7);
  st = (*loop)->Run();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("more than the run limit of 1e+07"), std::string::npos)
      << st.message();
}

TEST(SessionTest, RandomInputsAreSeededAndInTheirRanges) {
  // x (float) -> Identity -> y; k (int64) -> Cast -> z: the filled values come back as outputs.
  ModelBuilder b;
  b.Input("x", {4096});
  b.Input("k", {4096}, onnx::TensorProto::INT64);
  b.Node("Identity", {"x"}, {"y"}, "id");
  auto* cast = b.Node("Cast", {"k"}, {"z"}, "cast");
  auto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  b.Output("y", {4096});
  b.Output("z", {4096});
  const std::string path = b.Save("random_inputs.onnx");
  auto fill = [&](uint64_t seed) {
    auto s = Session::Load(path, {});
    EXPECT_TRUE(s.ok()) << s.status().message();
    EXPECT_TRUE((*s)->FillRandomInputs(seed).ok());
    EXPECT_TRUE((*s)->Run().ok());
    std::vector<float> out;
    for (const char* name : {"y", "z"}) {
      const Tensor* t = (*s)->Output(name);
      out.insert(out.end(), t->data<float>(), t->data<float>() + t->numel());
    }
    return out;
  };
  const std::vector<float> a = fill(1), again = fill(1), other = fill(2);
  EXPECT_EQ(a, again) << "the same seed gives the same inputs";
  EXPECT_NE(a, other) << "another seed gives other inputs";
  double sum = 0, lo = 1, hi = -1;
  std::set<float> ints;
  for (size_t i = 0; i < 4096; ++i) {
    EXPECT_GE(a[i], -1.f);
    EXPECT_LT(a[i], 1.f);
    sum += a[i];
    lo = std::min<double>(lo, a[i]);
    hi = std::max<double>(hi, a[i]);
    ints.insert(a[4096 + i]);
  }
  EXPECT_NEAR(sum / 4096, 0.0, 0.05) << "uniform around 0";
  EXPECT_LT(lo, -0.99);
  EXPECT_GT(hi, 0.99);
  EXPECT_EQ(ints, (std::set<float>{0, 1, 2, 3, 4, 5, 6, 7})) << "integers are 0..7, each one seen";
}

TEST(SessionTest, SymbolicDimsFromOptionsOrDefaulted) {
  ModelBuilder b;
  b.Input("x", {-1, 4});
  b.Node("Relu", {"x"}, {"y"}, "relu");
  b.Output("y", {-1, 4});
  std::string path = b.Save("symbolic.onnx");
  auto s = Session::Load(path, {});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->Inputs()[0].shape, (std::vector<int64_t>{1, 4}));
  ASSERT_FALSE((*s)->Warnings().empty());
  EXPECT_NE((*s)->Warnings()[0].find("'batch'"), std::string::npos);
  SessionOptions o;
  o.shapes["x"] = {5, 4};
  auto s2 = Session::Load(path, o);
  ASSERT_TRUE(s2.ok());
  EXPECT_EQ((*s2)->Inputs()[0].shape, (std::vector<int64_t>{5, 4}));
  o.shapes["x"] = {5, 3};
  auto s3 = Session::Load(path, o);
  EXPECT_FALSE(s3.ok());
  EXPECT_NE(s3.status().message().find("conflicts"), std::string::npos) << s3.status().message();
}

TEST(SessionTest, ExternalDataAndMissingExternalData) {
  ModelBuilder b;
  b.Input("x", {4});
  auto* t = b.model().mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(4);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = t->add_external_data();
  kv->set_key("location");
  kv->set_value("weights.bin");
  b.Node("Add", {"x", "w"}, {"y"}, "add");
  b.Output("y", {4});
  std::string path = b.Save("external.onnx");
  std::string bin = fs::path(path).parent_path() / "weights.bin";
  fs::remove(bin);
  auto missing = Session::Load(path, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("weights.bin"), std::string::npos)
      << missing.status().message();
  float w[4] = {1, 2, 3, 4};
  std::ofstream(bin, std::ios::binary).write(reinterpret_cast<const char*>(w), sizeof w);
  auto s = Session::Load(path, {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE((*s)->SetInput("x", testing::FloatTensor({4}, {1, 1, 1, 1})).ok());
  ASSERT_TRUE((*s)->Run().ok());
  EXPECT_EQ(testing::CompareFloat(*(*s)->Output("y"), testing::FloatTensor({4}, {2, 3, 4, 5})), "");
}

// ReduceMean with axes as an input and Split with num_outputs (both opset 18), then Add.
std::string Opset18Model(ModelBuilder& b, const std::string& file) {
  b.Input("x", {2, 3, 4});
  b.InitI64("axes", {1}, {1});
  auto* r = b.Node("ReduceMean", {"x", "axes"}, {"r"}, "mean");
  auto* kd = r->add_attribute();
  kd->set_name("keepdims");
  kd->set_type(onnx::AttributeProto::INT);
  kd->set_i(0);
  auto* sp = b.Node("Split", {"r"}, {"s0", "s1"}, "split");
  auto* a = sp->add_attribute();
  a->set_name("num_outputs");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(2);
  auto* ax = sp->add_attribute();
  ax->set_name("axis");
  ax->set_type(onnx::AttributeProto::INT);
  ax->set_i(1);
  b.Node("Add", {"s0", "s1"}, {"y"}, "add");
  b.Output("y", {2, 2});
  return b.Save(file);
}

TEST(SessionTest, Opset18To21ModelsLoadOnTheEnginesOwnChecks) {
  std::vector<float> xv(24);
  for (int i = 0; i < 24; ++i) xv[i] = static_cast<float>(i);
  // mean over axis 1 of x[n][c][w] = 12n + 4c + w is 12n + 4 + w; y = r[:, :2] + r[:, 2:].
  Tensor want = testing::FloatTensor({2, 2}, {10, 12, 34, 36});
  for (int opset : {18, 19, 20, 21}) {
    ModelBuilder b(opset);
    auto s = Session::Load(Opset18Model(b, "opset" + std::to_string(opset) + ".onnx"), {});
    ASSERT_TRUE(s.ok()) << opset << ": " << s.status().message();
    ASSERT_TRUE((*s)->SetInput("x", testing::FloatTensor({2, 3, 4}, xv)).ok());
    ASSERT_TRUE((*s)->Run().ok());
    EXPECT_EQ(testing::CompareFloat(*(*s)->Output("y"), want), "") << opset;
    const auto& checks = (*s)->LoadChecks();
    ASSERT_EQ(checks.count("onnx_checker"), 1u);
    const std::string want_note = "skipped: opset " + std::to_string(opset) + " > 17";
    EXPECT_EQ(checks.at("onnx_checker").rfind(want_note, 0), 0u) << checks.at("onnx_checker");
    EXPECT_EQ(checks.at("onnx_shape_inference"), checks.at("onnx_checker"));
  }
  // Up to 17 libonnx's checks run (and would reject this opset-18 ReduceMean signature).
  ModelBuilder old(17);
  auto s17 = Session::Load(Opset18Model(old, "opset17.onnx"), {});
  ASSERT_FALSE(s17.ok());
  EXPECT_NE(s17.status().message().find("ONNX checker"), std::string::npos)
      << s17.status().message();
  ModelBuilder ok17(17);
  ok17.Input("x", {2});
  ok17.Node("Relu", {"x"}, {"y"}, "relu");
  ok17.Output("y", {2});
  auto s = Session::Load(ok17.Save("relu17.onnx"), {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_NE((*s)->LoadChecks().at("onnx_checker").find("(opset<=17)"), std::string::npos);
  // The engine's own graph checks still reject a broken opset-18 graph.
  ModelBuilder broken(18);
  broken.Input("x", {2});
  broken.Node("Relu", {"nowhere"}, {"y"}, "relu");
  broken.Output("y", {2});
  auto sb = Session::Load(broken.Save("broken18.onnx"), {});
  ASSERT_FALSE(sb.ok());
  EXPECT_NE(sb.status().message().find("'nowhere' is not produced"), std::string::npos)
      << sb.status().message();
  // Past the newest opset the engine knows: a clear refusal.
  ModelBuilder future(22);
  future.Input("x", {2});
  future.Node("Relu", {"x"}, {"y"}, "relu");
  future.Output("y", {2});
  auto sf = Session::Load(future.Save("opset22.onnx"), {});
  ASSERT_FALSE(sf.ok());
  EXPECT_NE(sf.status().message().find("opset 22"), std::string::npos) << sf.status().message();
}

// Past opset 17 libonnx's checker does not run, and kernels compute only the outputs their
// operator defines. A Transpose named three outputs, the second read by a Mul, was a null read
// in the Mul (model_struct_fuzz, opset 21). An operator libonnx knows is refused at load; one it
// does not know (Gelu-20) is refused when the output nobody computed is read; an extra output
// that nothing reads is left alone.
TEST(SessionTest, ANodesExtraOutputsAreRefusedBeforeAnythingReadsThem) {
  ModelBuilder t(21);
  t.Input("x", {2, 3});
  t.Node("Transpose", {"x"}, {"t0", "t1", "t2"}, "tr");
  t.Node("Mul", {"t1", "t1"}, {"y"}, "mul");
  t.Output("y", {3, 2});
  auto st = Session::Load(t.Save("transpose3.onnx"), {});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(
      st.status().message().find("node 'tr' (Transpose) names 3 outputs, but Transpose-13 has 1"),
      std::string::npos)
      << st.status().message();

  auto gelu = [](const std::string& file, bool read, bool as_output) {
    ModelBuilder b(20);
    b.Input("x", {2, 3});
    b.Node("Gelu", {"x"}, {"g0", "g1"}, "gelu");
    if (read) b.Node("Add", {"g1", "x"}, {"a"}, "add");
    b.Node("Relu", {"g0"}, {"y"}, "relu");
    b.Output("y", {2, 3});
    if (read) b.Output("a", {2, 3});
    if (as_output) b.Output("g1", {2, 3});
    return b.Save(file);
  };
  const Tensor x = testing::FloatTensor({2, 3}, {-1, 0, 1, 2, 3, 4});
  for (auto [read, as_output] : {std::pair{true, false}, std::pair{false, true}}) {
    auto s = Session::Load(gelu("gelu2_" + std::to_string(read) + ".onnx", read, as_output), {});
    ASSERT_TRUE(s.ok()) << s.status().message();
    ASSERT_TRUE((*s)->SetInput("x", x).ok());
    Status r = (*s)->Run();
    ASSERT_FALSE(r.ok()) << read;
    EXPECT_EQ(r.code(), StatusCode::kUnsupported) << r.message();
    EXPECT_NE(r.message().find("node 'gelu' (Gelu): its output 1 'g1' is read, but Gelu does "
                               "not produce it (the node names 2 outputs)"),
              std::string::npos)
        << r.message();
  }
  auto s = Session::Load(gelu("gelu2_unread.onnx", false, false), {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE((*s)->SetInput("x", x).ok());
  ASSERT_TRUE((*s)->Run().ok());
  ASSERT_TRUE((*s)->Run().ok());  // the planned run too
  EXPECT_EQ((*s)->Output("y")->shape(), (std::vector<int64_t>{2, 3}));
}

TEST(SessionTest, KernelErrorsNameFileAndNode) {
  ModelBuilder b;
  b.Input("x", {2, 3});
  b.Input("y", {4, 5});
  b.Node("Add", {"x", "y"}, {"z"}, "bad_add");
  b.Output("z", {2, 3});
  auto s = Session::Load(b.Save("bcast.onnx"), {});
  if (!s.ok()) {
    EXPECT_NE(s.status().message().find("bcast.onnx"), std::string::npos) << s.status().message();
    return;
  }
  ASSERT_TRUE((*s)->FillRandomInputs(1).ok());
  Status st = (*s)->Run();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("bcast.onnx: node 'bad_add' (Add)"), std::string::npos)
      << st.message();
}

TEST(SessionTest, ResidualAddReluFusesAndMatchesUnfused) {
  ModelBuilder b;
  b.Input("x", {2, 3, 5});
  b.Input("r", {2, 3, 5});
  b.Node("Add", {"x", "r"}, {"s"}, "add");
  b.Node("Relu", {"s"}, {"y"}, "relu");
  b.Output("y", {2, 3, 5});
  std::string path = b.Save("add_relu.onnx");
  SessionOptions plain;
  plain.fuse = false;
  auto s1 = Session::Load(path, {});
  auto s2 = Session::Load(path, plain);
  ASSERT_TRUE(s1.ok() && s2.ok());
  ASSERT_EQ((*s1)->Steps().size(), 1u);
  EXPECT_EQ((*s1)->Steps()[0].op_type, "Add+Relu");
  for (auto* s : {&*s1, &*s2}) {
    ASSERT_TRUE((*s)->SetInput("x", testing::RandomTensor({2, 3, 5}, 1)).ok());
    ASSERT_TRUE((*s)->SetInput("r", testing::RandomTensor({2, 3, 5}, 2)).ok());
    for (int r = 0; r < 2; ++r) ASSERT_TRUE((*s)->Run().ok());
  }
  EXPECT_EQ(testing::CompareFloat(*(*s1)->Output("y"), *(*s2)->Output("y"), 0, 0), "");
}

// Channels-last regions: a conv chain with a depthwise stride-2 conv, a 1x1 conv, a residual
// Add and a scalar Mul stays NHWC inside; a per-channel broadcast Add, a GlobalAveragePool and
// graph outputs force NCHW at the region's edges. Results must equal the all-NCHW session's,
// fused and unfused (unfused, the Clip is an elementwise step inside the region), and the
// planning run (always NCHW) must agree with the later runs.
// ResNet's basic blocks: Conv -> BatchNormalization -> Add(shortcut) -> Relu. After the planning
// run the Add and its Relu join the convolution's step (a oneDNN binary post-op in channels-last
// regions, one pass after the convolution in NCHW); with a downsampling shortcut the later of the
// two convolutions takes it. Not fused: a convolution output that something else reads, a
// broadcast (per-channel) addend. Results match the unfused session in every run.
TEST(SessionTest, ResidualAddsJoinTheirConvolution) {
  enum Variant { kIdentity, kDownsample, kConvReadTwice, kBroadcast };
  for (bool channels_last : {true, false}) {
    for (Variant v : {kIdentity, kDownsample, kConvReadTwice, kBroadcast}) {
      ModelBuilder b(13);
      const int64_t c = 16;
      b.Input("x", {1, c, 10, 10});
      b.Init("w1", {c, c, 3, 3}, Rand(c * c * 9, 41));
      b.Init("w2", {c, c, 3, 3}, Rand(c * c * 9, 42));
      b.Init("b2", {c}, Rand(c, 43));
      auto* c1 = b.Node("Conv", {"x", "w1"}, {"t1"}, "conv1");
      ModelBuilder::IntsAttr(c1, "pads", {1, 1, 1, 1});
      b.Node("Relu", {"t1"}, {"r1"}, "relu1");
      auto* c2 = b.Node("Conv", {"r1", "w2", "b2"}, {"t2"}, "conv2");
      ModelBuilder::IntsAttr(c2, "pads", {1, 1, 1, 1});
      std::string shortcut = "x";
      if (v == kDownsample) {  // after conv2 in the graph's order
        b.Init("wd", {c, c, 1, 1}, Rand(c * c, 44));
        b.Node("Conv", {"x", "wd"}, {"d"}, "down");
        shortcut = "d";
      } else if (v == kBroadcast) {
        b.Init("pc", {1, c, 1, 1}, Rand(c, 45));
        b.Node("Mul", {"x", "pc"}, {"m"}, "scale");
        b.Node("ReduceMean", {"m"}, {"gap"}, "gap")->add_attribute()->CopyFrom([] {
          onnx::AttributeProto a;
          a.set_name("axes");
          a.set_type(onnx::AttributeProto::INTS);
          a.add_ints(2);
          a.add_ints(3);
          return a;
        }());
        shortcut = "gap";  // [1, C, 1, 1]
      }
      b.Node("Add", {"t2", shortcut}, {"s"}, "add");
      b.Node("Relu", {"s"}, {"y"}, "relu");
      std::vector<std::string> outs = {"y"};
      b.Output("y", {1, c, 10, 10});
      if (v == kConvReadTwice) {
        b.Node("Neg", {"t2"}, {"n"}, "second_reader");
        b.Output("n", {1, c, 10, 10});
        outs.push_back("n");
      }
      const std::string path = b.Save("residual.onnx");
      SessionOptions fo, uo;
      fo.channels_last = uo.channels_last = channels_last;
      fo.threads = uo.threads = 1;
      uo.fuse = false;
      auto fused = Session::Load(path, fo);
      auto unfused = Session::Load(path, uo);
      ASSERT_TRUE(fused.ok()) << fused.status().message();
      ASSERT_TRUE(unfused.ok()) << unfused.status().message();
      ASSERT_TRUE((*fused)->FillRandomInputs(3).ok());
      ASSERT_TRUE((*unfused)->FillRandomInputs(3).ok());
      for (int run = 0; run < 3; ++run) {
        ASSERT_TRUE((*fused)->Run().ok());
        ASSERT_TRUE((*unfused)->Run().ok());
        for (const auto& o : outs)
          EXPECT_EQ(
              testing::CompareFloat(*(*fused)->Output(o), *(*unfused)->Output(o), 1e-5f, 1e-5f), "")
              << "variant " << v << " channels-last " << channels_last << " run " << run;
      }
      std::map<std::string, int> step;
      for (const NodeInfo& n : (*fused)->Nodes()) step[n.name] = n.step;
      const std::string conv = v == kDownsample ? "down" : "conv2";
      const bool want = v == kIdentity || v == kDownsample;
      EXPECT_EQ(step["add"] == step[conv], want) << "variant " << v;
      EXPECT_EQ(step["relu"] == step[conv], want) << "variant " << v;
      if (want) {
        const StepInfo& info = (*fused)->Steps()[step[conv]];
        EXPECT_NE(info.op_type.find("+Add+Relu"), std::string::npos) << info.op_type;
      }
    }
  }
}

TEST(SessionTest, ChannelsLastRegionsMatchNchw) {
  ModelBuilder b;
  b.Input("x", {2, 5, 9, 9});
  b.Init("w1", {8, 5, 3, 3}, Rand(8 * 5 * 9, 11));
  b.Init("b1", {8}, Rand(8, 12));
  b.Init("lo", {}, {0.f});
  b.Init("hi", {}, {0.7f});
  b.Init("wdw", {8, 1, 3, 3}, Rand(8 * 9, 13));
  b.Init("w3", {8, 8, 1, 1}, Rand(64, 14));
  b.Init("b3", {8}, Rand(8, 15));
  b.Init("half", {}, {0.5f});
  b.Init("wg", {12, 4, 3, 3}, Rand(12 * 4 * 9, 16));
  b.Init("wh", {6, 8, 1, 1}, Rand(48, 17));
  b.Init("ch", {6, 1, 1}, Rand(6, 18));
  auto* c1 = b.Node("Conv", {"x", "w1", "b1"}, {"c1pre"}, "conv1");
  ModelBuilder::IntsAttr(c1, "pads", {1, 1, 1, 1});
  b.Node("Clip", {"c1pre", "lo", "hi"}, {"c1"}, "clip1");
  auto* dw = b.Node("Conv", {"c1", "wdw"}, {"c2"}, "dw");
  ModelBuilder::IntsAttr(dw, "pads", {1, 1, 1, 1});
  ModelBuilder::IntsAttr(dw, "strides", {2, 2});
  auto* g = dw->add_attribute();
  g->set_name("group");
  g->set_type(onnx::AttributeProto::INT);
  g->set_i(8);
  b.Node("Conv", {"c2", "w3", "b3"}, {"c3"}, "pw");
  b.Node("Add", {"c2", "c3"}, {"a"}, "residual");
  b.Node("Mul", {"a", "half"}, {"m"}, "scale");
  auto* cg = b.Node("Conv", {"m", "wg"}, {"y"}, "grouped");
  ModelBuilder::IntsAttr(cg, "pads", {1, 1, 1, 1});
  auto* gg = cg->add_attribute();
  gg->set_name("group");
  gg->set_type(onnx::AttributeProto::INT);
  gg->set_i(2);
  auto* ch = b.Node("Conv", {"c1", "wh"}, {"h"}, "branch");
  ModelBuilder::IntsAttr(ch, "strides", {2, 2});
  b.Node("Add", {"h", "ch"}, {"hb"}, "per_channel_add");
  b.Node("Relu", {"hb"}, {"y2"}, "relu2");
  b.Node("GlobalAveragePool", {"h"}, {"y3"}, "pool");
  b.Init("wk", {4, 8, 1, 1}, Rand(32, 20));
  b.Node("Conv", {"c1", "wk"}, {"k"}, "viewed");
  b.Node("Flatten", {"k"}, {"kf"}, "flatten");  // becomes a view of k after the planning run
  b.Node("Relu", {"kf"}, {"y4"}, "relu4");
  // Pools inside a region stay NHWC: conv1 -> MaxPool 3x3 s2 -> 1x1 conv -> AveragePool 2x2
  // (padded at the end, count_include_pad 0) -> 1x1 conv -> graph output; a pool whose output
  // is a graph output keeps its input NCHW.
  b.Init("wpm", {6, 8, 1, 1}, Rand(48, 21));
  b.Init("wap", {3, 6, 1, 1}, Rand(18, 22));
  auto* mp = b.Node("MaxPool", {"c1"}, {"pm"}, "mpool");
  ModelBuilder::IntsAttr(mp, "kernel_shape", {3, 3});
  ModelBuilder::IntsAttr(mp, "strides", {2, 2});
  ModelBuilder::IntsAttr(mp, "pads", {1, 1, 1, 1});
  b.Node("Conv", {"pm", "wpm"}, {"pmc"}, "pmc");
  auto* ap = b.Node("AveragePool", {"pmc"}, {"pa"}, "apool");
  ModelBuilder::IntsAttr(ap, "kernel_shape", {2, 2});
  ModelBuilder::IntsAttr(ap, "pads", {0, 0, 1, 1});
  b.Node("Conv", {"pa", "wap"}, {"y5"}, "after_pool");
  auto* ep = b.Node("MaxPool", {"k"}, {"y6"}, "edge_pool");
  ModelBuilder::IntsAttr(ep, "kernel_shape", {2, 2});
  b.Output("y", {2, 12, 5, 5});
  b.Output("y2", {2, 6, 5, 5});
  b.Output("y3", {2, 6, 1, 1});
  b.Output("y4", {2, 324});
  // A squeeze-excitation block on the region's m [2, 8, 5, 5]: GlobalAveragePool reads NHWC,
  // two 1x1 convs on [2, 8, 1, 1], HardSigmoid, Mul(m, s) and a per-channel constant Mul stay
  // NHWC, then a conv to a graph output.
  b.Init("wse1", {4, 8, 1, 1}, Rand(32, 23));
  b.Init("wse2", {8, 4, 1, 1}, Rand(32, 24));
  b.Init("chs", {8, 1, 1}, Rand(8, 25));
  b.Init("wout", {3, 8, 1, 1}, Rand(24, 26));
  b.Node("GlobalAveragePool", {"m"}, {"sq"}, "se_gap");
  b.Node("Conv", {"sq", "wse1"}, {"e1"}, "se_conv1");
  b.Node("Relu", {"e1"}, {"e1r"}, "se_relu");
  b.Node("Conv", {"e1r", "wse2"}, {"e2"}, "se_conv2");
  b.Node("HardSigmoid", {"e2"}, {"sg"}, "se_gate");
  b.Node("Mul", {"sg", "m"}, {"ex"}, "se_mul");
  b.Node("Mul", {"ex", "chs"}, {"exc"}, "ch_scale");
  b.Node("Conv", {"exc", "wout"}, {"y7"}, "se_out");
  b.Output("y5", {2, 3, 5, 5});
  b.Output("y6", {2, 4, 8, 8});
  b.Output("y7", {2, 3, 5, 5});
  std::string path = b.Save("channels_last.onnx");
  Tensor x = testing::RandomTensor({2, 5, 9, 9}, 19);

  SessionOptions nchw;
  nchw.channels_last = false;
  auto ref = Session::Load(path, nchw);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  ASSERT_TRUE((*ref)->SetInput("x", x).ok());
  ASSERT_TRUE((*ref)->Run().ok());
  for (const StepInfo& st : (*ref)->Steps())
    EXPECT_FALSE(st.channels_last_in || st.channels_last_out);

  // Both region layouts on any CPU (region_layout.h): the values with 8 channels are nChw8c
  // when that is forced, the others (3, 4, 6, 12 channels) NHWC either way.
  for (RegionLayout forced : {RegionLayout::kNhwc, RegionLayout::kNChw8c})
    for (bool fuse : {true, false}) {
      SetRegionLayoutForTesting(forced);
      SessionOptions o;
      o.fuse = fuse;
      auto s = Session::Load(path, o);
      ASSERT_TRUE(s.ok()) << s.status().message();
      ASSERT_TRUE((*s)->SetInput("x", x).ok());
      for (int r = 0; r < 3; ++r) {
        ASSERT_TRUE((*s)->Run().ok());
        for (const char* out : {"y", "y2", "y3", "y4", "y5", "y6", "y7"})
          EXPECT_EQ(testing::CompareFloat(*(*s)->Output(out), *(*ref)->Output(out), 1e-4f, 1e-4f),
                    "")
              << out << " run " << r << (fuse ? " fused " : " unfused ")
              << RegionLayoutName(forced);
      }
      SetRegionLayoutForTesting(std::nullopt);
      const char* eight = RegionLayoutName(forced);  // the layout of the 8-channel values
      for (const StepInfo& st : (*s)->Steps()) {
        if (st.name == "conv1") EXPECT_EQ(st.layout_out, eight);
        if (st.name == "dw")
          EXPECT_EQ(st.layout_in + " " + st.layout_out, std::string(eight) + " " + eight);
        if (st.name == "mpool") EXPECT_EQ(st.layout_in, eight);
        if (st.name == "pmc") EXPECT_EQ(st.layout_out, "NHWC");  // 6 channels
        if (st.name == "grouped")
          EXPECT_EQ(st.layout_in + "|" + st.layout_out, std::string(eight) + "|");
      }
      std::map<std::string, std::pair<bool, bool>> layout;
      for (const StepInfo& st : (*s)->Steps())
        layout[st.name] = {st.channels_last_in, st.channels_last_out};
      using P = std::pair<bool, bool>;
      EXPECT_EQ(layout["conv1"], P(false, true));  // graph input in, NHWC out
      EXPECT_EQ(layout["dw"], P(true, true));
      EXPECT_EQ(layout["pw"], P(true, true));
      EXPECT_EQ(layout["grouped"], P(true, false));  // graph output
      EXPECT_EQ(layout["branch"], P(true, false));   // read by a broadcast Add and a pool
      EXPECT_EQ(layout["viewed"], P(true, false));   // read through a view
      EXPECT_EQ(layout["mpool"], P(true, true));
      EXPECT_EQ(layout["pmc"], P(true, true));
      EXPECT_EQ(layout["apool"], P(true, true));
      EXPECT_EQ(layout["after_pool"], P(true, false));
      EXPECT_EQ(layout["edge_pool"], P(false, false));
      EXPECT_EQ(layout["se_gap"], P(true, false));
      EXPECT_EQ(layout["se_mul"], P(true, true));
      EXPECT_EQ(layout["se_out"], P(true, false));
      if (!fuse) EXPECT_EQ(layout["ch_scale"], P(true, true));
    }
}

// MatMul and Gemm with constant B hand it to oneDNN prepacked (reordered once, reused); the
// same graph with B as a graph input takes the plain path. Both must agree, on every run.
TEST(SessionTest, ConstantMatMulAndGemmWeightsMatchRuntimeWeights) {
  std::vector<float> wm = Rand(24 * 40, 31), wg = Rand(40 * 24, 32), c = Rand(40, 33);
  auto build = [&](bool constant, const std::string& file) {
    ModelBuilder b;
    b.Input("x", {3, 7, 24});
    b.Input("x2", {5, 24});
    if (constant) {
      b.Init("wm", {24, 40}, wm);
      b.Init("wg", {40, 24}, wg);
    } else {
      b.Input("wm", {24, 40});
      b.Input("wg", {40, 24});
    }
    b.Init("c", {40}, c);
    b.Node("MatMul", {"x", "wm"}, {"y"}, "matmul");
    auto* g = b.Node("Gemm", {"x2", "wg", "c"}, {"y2"}, "gemm");
    auto* t = g->add_attribute();
    t->set_name("transB");
    t->set_type(onnx::AttributeProto::INT);
    t->set_i(1);
    b.Output("y", {3, 7, 40});
    b.Output("y2", {5, 40});
    return b.Save(file);
  };
  auto sc = Session::Load(build(true, "const_weights.onnx"), {});
  auto sr = Session::Load(build(false, "runtime_weights.onnx"), {});
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  ASSERT_TRUE(sr.ok()) << sr.status().message();
  Tensor wmt(DataType::kFloat32, {24, 40}), wgt(DataType::kFloat32, {40, 24});
  std::copy(wm.begin(), wm.end(), wmt.data<float>());
  std::copy(wg.begin(), wg.end(), wgt.data<float>());
  ASSERT_TRUE((*sr)->SetInput("wm", wmt).ok());
  ASSERT_TRUE((*sr)->SetInput("wg", wgt).ok());
  for (int r = 0; r < 3; ++r) {
    Tensor x = testing::RandomTensor({3, 7, 24}, 40 + r),
           x2 = testing::RandomTensor({5, 24}, 50 + r);
    for (auto* s : {&*sc, &*sr}) {
      ASSERT_TRUE((*s)->SetInput("x", x).ok());
      ASSERT_TRUE((*s)->SetInput("x2", x2).ok());
      ASSERT_TRUE((*s)->Run().ok());
    }
    for (const char* out : {"y", "y2"})
      EXPECT_EQ(testing::CompareFloat(*(*sc)->Output(out), *(*sr)->Output(out), 1e-5f, 1e-5f), "")
          << out << " run " << r;
  }
}

// MatMul + Add(constant bias) + activation, the chain of the engine issue: the fusion pass
// used to revisit the absorbed Add step and deactivate the live MatMul step, so nothing computed
// the chain (an empty output, "scalar operands" from a following MatMul, or a crash).
TEST(SessionTest, MatMulBiasActivationFusesIntoOneStepAndIsComputed) {
  for (const char* act : {"Relu", "Sigmoid", "Tanh", "HardSwish"}) {
    ModelBuilder b(14);
    b.Input("x", {2, 5, 4});
    b.Init("w", {4, 6}, Rand(24, 3));
    b.Init("b", {6}, Rand(6, 4));
    b.Node("MatMul", {"x", "w"}, {"m"}, "mm");
    b.Node("Add", {"m", "b"}, {"a"}, "bias");
    b.Node(act, {"a"}, {"y"}, "act");
    b.Output("y", {2, 5, 6});
    std::string path = b.Save(std::string("mm_bias_") + act + ".onnx");
    SessionOptions plain;
    plain.fuse = false;
    auto s1 = Session::Load(path, {});
    auto s2 = Session::Load(path, plain);
    ASSERT_TRUE(s1.ok()) << s1.status().message();
    ASSERT_TRUE(s2.ok()) << s2.status().message();
    ASSERT_EQ((*s1)->Steps().size(), 1u) << act;
    EXPECT_EQ((*s1)->Steps()[0].op_type, std::string("MatMul+Add+") + act);
    EXPECT_EQ((*s1)->Steps()[0].nodes, (std::vector<int>{0, 1, 2}));
    for (auto* s : {&*s1, &*s2}) {
      ASSERT_TRUE((*s)->SetInput("x", testing::RandomTensor({2, 5, 4}, 9)).ok());
      for (int r = 0; r < 2; ++r) ASSERT_TRUE((*s)->Run().ok());
    }
    ASSERT_EQ((*s1)->Output("y")->shape(), (std::vector<int64_t>{2, 5, 6})) << act;
    EXPECT_EQ(testing::CompareFloat(*(*s1)->Output("y"), *(*s2)->Output("y"), 1e-6f, 1e-6f), "")
        << act;
  }
}

// Differential test of every fusion rule: for each anchor Fuse() accepts, chains of 1 to 3
// post-ops it can absorb, and each kind of consumer of the chain, the default (fused) session
// must compute what the --no-fuse session computes on the same random inputs, in the planning
// run and in the arena run after it.
enum class Consumer { kOutput, kMatMul, kConv, kAddInput, kAddSelf, kFanOut };

// Adds the anchor node, reading graph input "x" and writing "a" (of shape AnchorShape(op)).
void AddAnchor(ModelBuilder& b, const std::string& op) {
  auto consts = [&](const std::string& name, int64_t n, float lo, float hi, uint32_t seed) {
    std::vector<float> v = Rand(static_cast<size_t>(n), seed);
    for (float& f : v) f = lo + (f + 1) / 2 * (hi - lo);
    b.Init(name, {n}, v);
  };
  if (op == "Conv") {
    b.Input("x", {1, 3, 6, 6});
    b.Init("w", {4, 3, 3, 3}, Rand(108, 21));
    b.Init("wb", {4}, Rand(4, 22));
    ModelBuilder::IntsAttr(b.Node("Conv", {"x", "w", "wb"}, {"a"}, "anchor"), "pads", {1, 1, 1, 1});
  } else if (op == "ConvTranspose") {
    b.Input("x", {1, 3, 5, 5});
    b.Init("w", {3, 4, 3, 3}, Rand(108, 23));
    b.Init("wb", {4}, Rand(4, 24));
    b.Node("ConvTranspose", {"x", "w", "wb"}, {"a"}, "anchor");
  } else if (op == "MatMul2D") {
    b.Input("x", {5, 4});
    b.Init("w", {4, 6}, Rand(24, 29));
    b.Node("MatMul", {"x", "w"}, {"a"}, "anchor");
  } else if (op == "MatMul") {
    b.Input("x", {2, 5, 4});
    b.Init("w", {4, 6}, Rand(24, 25));
    b.Node("MatMul", {"x", "w"}, {"a"}, "anchor");
  } else if (op == "Gemm") {
    b.Input("x", {5, 4});
    b.Init("w", {4, 6}, Rand(24, 26));
    b.Init("wb", {6}, Rand(6, 27));
    b.Node("Gemm", {"x", "w", "wb"}, {"a"}, "anchor");
  } else {  // elementwise: x [2,5,6] with a constant [6] in [0.5, 1.5] (no division by ~0)
    b.Input("x", {2, 5, 6});
    consts("k", 6, 0.5f, 1.5f, 28);
    b.Node(op, {"x", "k"}, {"a"}, "anchor");
  }
}

std::vector<int64_t> AnchorShape(const std::string& op) {
  if (op == "Conv") return {1, 4, 6, 6};
  if (op == "ConvTranspose") return {1, 4, 7, 7};
  if (op == "Gemm" || op == "MatMul2D") return {5, 6};
  return {2, 5, 6};
}

// Post-op `kind` reading `in`, writing `out`; `shape` is the chain's (unchanging) shape.
// Returns the node's name.
std::string AddPostOpNode(ModelBuilder& b, const std::string& kind, const std::string& in,
                          const std::string& out, const std::vector<int64_t>& shape, int i) {
  std::string id = std::to_string(i);
  if (kind == "BiasAdd" || kind == "BiasAddRank3") {
    // BiasAddRank3: a [1, 1, N] bias, which makes a 2-D chain 3-D.
    std::vector<int64_t> bs = {shape.back()};
    if (kind == "BiasAddRank3") bs = {1, 1, shape.back()};
    b.Init("bias" + id, bs, Rand(static_cast<size_t>(shape.back()), 40 + i));
    return b.Node("Add", {in, "bias" + id}, {out}, "bias" + id)->name();
  } else if (kind == "BatchNormalization") {
    int64_t c = shape[1];
    std::vector<float> var = Rand(static_cast<size_t>(c), 50 + i);
    for (float& v : var) v = 0.5f + std::abs(v);
    b.Init("g" + id, {c}, Rand(static_cast<size_t>(c), 51 + i));
    b.Init("be" + id, {c}, Rand(static_cast<size_t>(c), 52 + i));
    b.Init("mu" + id, {c}, Rand(static_cast<size_t>(c), 53 + i));
    b.Init("var" + id, {c}, var);
    return b
        .Node("BatchNormalization", {in, "g" + id, "be" + id, "mu" + id, "var" + id}, {out},
              "bn" + id)
        ->name();
  } else if (kind == "MaxConst" || kind == "MinConst" || kind == "MaxConstRank4") {
    // A one-sided Clip: Max(x, scalar) / Min([1]-shaped constant, x) / Max(x, [1,1,1,1]
    // constant), which fuses only after a convolution (whose output rank is known) and makes
    // the other chains 4-D.
    const bool max = kind != "MinConst";
    std::vector<int64_t> ks = kind == "MaxConst"   ? std::vector<int64_t>{}
                              : kind == "MinConst" ? std::vector<int64_t>{1}
                                                   : std::vector<int64_t>{1, 1, 1, 1};
    b.Init("k" + id, ks, {max ? -0.3f : 0.4f});
    std::vector<std::string> in2 = {in, "k" + id};
    if (!max) std::swap(in2[0], in2[1]);
    return b.Node(max ? "Max" : "Min", in2, {out}, kind + id)->name();
  } else if (kind == "ScaleC" || kind == "ShiftScalar" || kind == "SubC" || kind == "DivScalar") {
    // Affine constants a Conv folds into its weights: per channel [C,1,1] / [1,C,1,1] or scalar.
    const int64_t c = shape[1];
    const bool per_channel = kind == "ScaleC" || kind == "SubC";
    std::vector<int64_t> ks = kind == "ScaleC" ? std::vector<int64_t>{c, 1, 1}
                              : kind == "SubC" ? std::vector<int64_t>{1, c, 1, 1}
                                               : std::vector<int64_t>{1};
    std::vector<float> kv = per_channel ? Rand(static_cast<size_t>(c), 70 + i)
                                        : std::vector<float>{kind == "DivScalar" ? 2.5f : 0.3f};
    b.Init("aff" + id, ks, kv);
    const char* op = kind == "ScaleC"        ? "Mul"
                     : kind == "ShiftScalar" ? "Add"
                     : kind == "SubC"        ? "Sub"
                                             : "Div";
    std::vector<std::string> in2 = {in, "aff" + id};
    if (kind == "ShiftScalar") std::swap(in2[0], in2[1]);  // constant first
    return b.Node(op, in2, {out}, kind + id)->name();
  } else if (kind == "MulScalar" || kind == "RSubScalar" || kind == "MulScalarRank4") {
    // One constant value after an activation: the linear post-op alpha * x + beta.
    b.Init("lin" + id,
           kind == "MulScalarRank4" ? std::vector<int64_t>{1, 1, 1, 1} : std::vector<int64_t>{},
           {kind == "RSubScalar" ? 0.75f : -1.7f});
    std::vector<std::string> in2 = {in, "lin" + id};
    if (kind == "RSubScalar") std::swap(in2[0], in2[1]);  // c - x
    return b.Node(kind == "RSubScalar" ? "Sub" : "Mul", in2, {out}, kind + id)->name();
  } else if (kind == "Clip") {
    b.Init("lo" + id, {}, {-0.5f});
    b.Init("hi" + id, {}, {0.5f});
    return b.Node("Clip", {in, "lo" + id, "hi" + id}, {out}, "clip" + id)->name();
  }
  auto* n = b.Node(kind, {in}, {out}, kind + id);
  if (kind == "LeakyRelu") ModelBuilder::FloatAttr(n, "alpha", 0.1f);
  if (kind == "HardSigmoid") ModelBuilder::FloatAttr(n, "alpha", 0.25f);
  return n->name();
}

TEST(SessionTest, EveryFusionRuleMatchesUnfused) {
  const std::vector<std::string> anchors = {"Conv", "ConvTranspose", "MatMul", "MatMul2D", "Gemm",
                                            "Add",  "Sub",           "Mul",    "Div",      "Sum",
                                            "Mean", "Max",           "Min",    "PRelu"};
  const std::vector<std::string> acts = {"Relu",        "LeakyRelu", "Sigmoid", "Tanh",
                                         "HardSigmoid", "HardSwish", "Clip"};
  std::vector<std::string> post = acts;
  post.push_back("BiasAdd");
  post.push_back("BatchNormalization");
  post.push_back("MaxConst");
  post.push_back("MinConst");
  // Every single post-op, every pair that starts with a bias or a BatchNormalization (the
  // absorbable prefixes) or two activations in a row, and triples of each shape.
  std::vector<std::vector<std::string>> chains;
  for (const auto& p : post) chains.push_back({p});
  for (const auto& a : acts) {
    chains.push_back({"BiasAdd", a});
    chains.push_back({"BatchNormalization", a});
  }
  for (size_t i = 0; i < acts.size(); ++i) {
    chains.push_back({acts[i], acts[(i + 1) % acts.size()]});
    chains.push_back({"BiasAdd", acts[i], acts[(i + 3) % acts.size()]});
    chains.push_back({"BatchNormalization", acts[(i + 2) % acts.size()], acts[i]});
    chains.push_back({acts[i], acts[(i + 5) % acts.size()], acts[(i + 1) % acts.size()]});
  }
  chains.push_back({"BiasAdd", "BiasAdd", "Relu"});
  chains.push_back({"Clip", "HardSigmoid"});        // oneDNN would reuse the Clip's bounds
  chains.push_back({"LeakyRelu", "Tanh", "Relu"});  // ... or the LeakyRelu's slope
  chains.push_back({"BiasAddRank3"});
  chains.push_back({"BiasAddRank3", "Tanh"});
  chains.push_back({"Relu", "BiasAdd"});
  chains.push_back({"BatchNormalization", "BatchNormalization", "Relu"});
  chains.push_back({"LeakyRelu", "MaxConst"});  // tf2onnx's Conv + LeakyRelu + Maximum
  chains.push_back({"BiasAdd", "MinConst", "MaxConst"});
  chains.push_back({"MaxConst", "Sigmoid"});
  chains.push_back({"MaxConstRank4"});
  for (const char* aff : {"ScaleC", "ShiftScalar", "SubC", "DivScalar"}) {
    chains.push_back({aff});
    chains.push_back({aff, "Relu"});
    chains.push_back({"Relu", aff});  // after an activation: must not fold
  }
  chains.push_back({"BatchNormalization", "ScaleC", "ShiftScalar", "HardSwish"});
  chains.push_back({"ScaleC", "BatchNormalization"});
  chains.push_back({"LeakyRelu", "MaxConstRank4"});
  // Scalar Mul/Add/Sub/Div as linear post-ops, two in a row composed into one.
  chains.push_back({"MulScalar"});
  chains.push_back({"Relu", "MulScalar", "ShiftScalar"});
  chains.push_back({"HardSwish", "MulScalar", "ShiftScalar"});  // PP-LCNet's affine block
  chains.push_back({"Sigmoid", "RSubScalar"});
  chains.push_back({"Tanh", "DivScalar", "MulScalarRank4"});
  chains.push_back({"HardSigmoid", "MulScalar"});  // oneDNN's HardSigmoid is linear + clip
  chains.push_back({"MulScalarRank4"});
  chains.push_back({"BiasAdd", "RSubScalar", "Relu"});
  const std::vector<Consumer> consumers = {Consumer::kOutput,  Consumer::kMatMul,
                                           Consumer::kConv,    Consumer::kAddInput,
                                           Consumer::kAddSelf, Consumer::kFanOut};
  int cases = 0, fused_cases = 0;
  for (const std::string& anchor : anchors) {
    const std::vector<int64_t> shape = AnchorShape(anchor);
    for (const auto& chain : chains) {
      bool has_bn = false;
      for (const auto& k : chain)
        has_bn |= k == "BatchNormalization" || k == "ScaleC" || k == "SubC";
      if (has_bn && shape.size() != 4) continue;  // per-channel constants need N x C x ...
      for (Consumer consumer : consumers) {
        if (consumer == Consumer::kConv && shape.size() != 4) continue;
        ModelBuilder b(14);
        AddAnchor(b, anchor);
        std::string name = anchor, prev = "a", pre_last = "a";
        std::vector<std::string> node_names = {"anchor"};
        size_t rank = shape.size(), pre_last_rank = rank;
        for (size_t i = 0; i < chain.size(); ++i) {
          std::string out = "p" + std::to_string(i);
          pre_last = prev;
          pre_last_rank = rank;
          if (chain[i] == "BiasAddRank3") rank = std::max<size_t>(rank, 3);
          if (chain[i] == "MaxConstRank4" || chain[i] == "MulScalarRank4")
            rank = std::max<size_t>(rank, 4);
          node_names.push_back(AddPostOpNode(b, chain[i], prev, out, shape, static_cast<int>(i)));
          name += "+" + chain[i];
          prev = out;
        }
        std::vector<std::string> outs = {"y"};
        switch (consumer) {
          case Consumer::kOutput:
            outs = {prev};
            break;
          case Consumer::kMatMul:
            b.Init("w2", {shape.back(), 3}, Rand(static_cast<size_t>(shape.back()) * 3, 60));
            b.Node("MatMul", {prev, "w2"}, {"y"}, "next_matmul");
            break;
          case Consumer::kConv:
            b.Init("w3", {2, shape[1], 1, 1}, Rand(static_cast<size_t>(2 * shape[1]), 61));
            b.Node("Conv", {prev, "w3"}, {"y"}, "next_conv");
            break;
          case Consumer::kAddInput:
            b.Input("x2", shape);
            b.Node("Add", {prev, "x2"}, {"y"}, "next_add");
            break;
          case Consumer::kAddSelf:
            b.Node("Add", {prev, prev}, {"y"}, "next_add_self");
            break;
          case Consumer::kFanOut:  // the value before the last post-op is read twice
            b.Node("Neg", {pre_last}, {"y2"}, "second_reader");
            outs = {prev, "y2"};
            break;
        }
        for (const auto& o : outs)
          b.OutputAnyShape(o, o == "y2" ? pre_last_rank : consumer == Consumer::kConv ? 4 : rank);
        name += " -> consumer " + std::to_string(static_cast<int>(consumer));
        SCOPED_TRACE(name);
        std::string path = b.Save("fusion_diff.onnx");
        // One thread: the matrix is large, and the results do not depend on the thread count.
        SessionOptions opts, plain;
        opts.threads = plain.threads = 1;
        plain.fuse = false;
        auto fused = Session::Load(path, opts);
        auto unfused = Session::Load(path, plain);
        ASSERT_TRUE(fused.ok()) << fused.status().message();
        ASSERT_TRUE(unfused.ok()) << unfused.status().message();
        ++cases;
        if ((*fused)->Steps().size() < (*unfused)->Steps().size()) ++fused_cases;
        // Fan-out blocks fusion of the value read twice: the step that computes it must not
        // have absorbed its last post-op.
        if (consumer == Consumer::kFanOut) {
          auto step_of = [&](const std::string& node) {
            for (const NodeInfo& n : (*fused)->Nodes())
              if (n.name == node) return n.step;
            return -2;
          };
          const std::string& producer = node_names[node_names.size() - 2];
          EXPECT_NE(step_of(producer), step_of(node_names.back()))
              << producer << " absorbed " << node_names.back()
              << " though its output is read twice";
        }
        ASSERT_TRUE((*fused)->FillRandomInputs(7).ok());
        ASSERT_TRUE((*unfused)->FillRandomInputs(7).ok());
        for (int run = 0; run < 2; ++run) {
          Status sf = (*fused)->Run();
          Status su = (*unfused)->Run();
          ASSERT_TRUE(su.ok()) << su.message();
          ASSERT_TRUE(sf.ok()) << sf.message();
          for (const auto& o : outs) {
            const Tensor* f = (*fused)->Output(o);
            const Tensor* u = (*unfused)->Output(o);
            ASSERT_TRUE(f && u) << o;
            ASSERT_EQ(f->shape(), u->shape()) << o << " run " << run;
            ASSERT_GT(u->numel(), 0) << o;
            EXPECT_EQ(testing::CompareFloat(*f, *u, 2e-6f, 2e-6f), "") << o << " run " << run;
          }
        }
      }
    }
  }
  // Sanity: the matrix was built and most of it fused something.
  EXPECT_GT(cases, 1000);
  EXPECT_GT(fused_cases, cases / 2);
}

// tf2onnx's clamped LeakyRelu: Conv -> LeakyRelu -> Max(x, [1,1,1,1] constant) is one step
// (the Max a one-sided Clip post-op); a Max whose constant would widen a 2-D MatMul output to
// rank 4 stays a step of its own.
TEST(SessionTest, MaxWithAConstantFusesIntoTheConvolutionAsAOneSidedClip) {
  for (bool conv : {true, false}) {
    ModelBuilder b(13);
    if (conv) {
      b.Input("x", {1, 4, 6, 6});
      b.Init("w", {4, 4, 3, 3}, Rand(144, 3));
      b.Node("Conv", {"x", "w"}, {"c"}, "conv");
    } else {
      b.Input("x", {5, 4});
      b.Init("w", {4, 6}, Rand(24, 4));
      b.Node("MatMul", {"x", "w"}, {"c"}, "matmul");
    }
    ModelBuilder::FloatAttr(b.Node("LeakyRelu", {"c"}, {"l"}, "lrelu"), "alpha", 0.2f);
    b.Init("k", {1, 1, 1, 1}, {-0.4f});
    b.Node("Max", {"l", "k"}, {"y"}, "clamp");
    b.OutputAnyShape("y", 4);
    SessionOptions o;
    o.threads = 1;
    auto s = Session::Load(b.Save("max_clip.onnx"), o);
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ((*s)->Steps().size(), conv ? 1u : 2u) << (conv ? "Conv" : "MatMul");
  }
}

// Loads `path` fused and unfused (one thread each), runs both on the same seeded inputs and
// checks that every output in `outs` agrees. Returns the fused session's step count and, in
// `fused_count`, how many of its nodes are fused into another's step (0 steps on a failure).
size_t CheckFusedMatchesUnfused(const std::string& path, const std::vector<std::string>& outs,
                                const std::string& where, int* fused_count = nullptr) {
  SessionOptions opts, plain;
  opts.threads = plain.threads = 1;
  plain.fuse = false;
  auto fused = Session::Load(path, opts);
  auto unfused = Session::Load(path, plain);
  if (!fused.ok() || !unfused.ok()) {
    ADD_FAILURE() << where << ": " << (fused.ok() ? unfused.status() : fused.status()).message();
    return 0;
  }
  if (!(*fused)->FillRandomInputs(3).ok() || !(*unfused)->FillRandomInputs(3).ok() ||
      !(*fused)->Run().ok() || !(*unfused)->Run().ok()) {
    ADD_FAILURE() << where << ": a run failed";
    return 0;
  }
  for (const auto& o : outs)
    EXPECT_EQ(testing::CompareFloat(*(*fused)->Output(o), *(*unfused)->Output(o), 2e-6f, 2e-6f), "")
        << o << " " << where;
  if (fused_count) {
    *fused_count = 0;
    for (const NodeInfo& n : (*fused)->Nodes()) *fused_count += n.status == "fused";
  }
  return (*fused)->Steps().size();
}

// The erf form of Gelu in its exporter variants is one step and computes what the five nodes
// do; a pattern whose intermediate is read elsewhere, or whose constant is not 0.5, is left.
TEST(SessionTest, ErfGeluPatternsBecomeOneStepAndMatchUnfused) {
  enum Variant { kPyTorch, kMulInvSqrt2, kHalfTheSum, kHalfX, kLeakedSum, kWrongHalf };
  for (Variant v : {kPyTorch, kMulInvSqrt2, kHalfTheSum, kHalfX, kLeakedSum, kWrongHalf}) {
    ModelBuilder b(13);
    b.Input("x0", {3, 40});
    b.Node("Relu", {"x0"}, {"x"}, "producer");  // x is an intermediate, read twice
    b.Init("sqrt2", {}, {1.41421356f});
    b.Init("inv_sqrt2", {}, {0.70710678f});
    b.Init("one", {}, {1.f});
    b.Init("half", {}, {v == kWrongHalf ? 0.6f : 0.5f});
    if (v == kMulInvSqrt2)
      b.Node("Mul", {"x", "inv_sqrt2"}, {"u"}, "scale");
    else
      b.Node("Div", {"x", "sqrt2"}, {"u"}, "scale");
    b.Node("Erf", {"u"}, {"e"}, "erf");
    b.Node("Add", {"one", "e"}, {"a"}, "add");
    std::vector<std::string> outs = {"y"};
    if (v == kHalfTheSum) {
      b.Node("Mul", {"a", "half"}, {"m"}, "mul_half");
      b.Node("Mul", {"x", "m"}, {"y"}, "mul_x");
    } else if (v == kHalfX) {
      b.Node("Mul", {"x", "half"}, {"h"}, "mul_half");
      b.Node("Mul", {"h", "a"}, {"y"}, "mul_x");
    } else {
      b.Node("Mul", {"x", "a"}, {"m"}, "mul_x");
      b.Node("Mul", {"m", "half"}, {"y"}, "mul_half");
    }
    if (v == kLeakedSum) {
      b.Node("Neg", {"a"}, {"n"}, "second_reader");
      outs.push_back("n");
    }
    for (const auto& o : outs) b.Output(o, {3, 40});
    const bool want_fused = v != kLeakedSum && v != kWrongHalf;
    int fused_nodes = 0;
    const size_t steps = CheckFusedMatchesUnfused(b.Save("gelu_pattern.onnx"), outs,
                                                  "variant " + std::to_string(v), &fused_nodes);
    // Relu + one Gelu step; unfused the pattern keeps its five steps (plus Neg).
    EXPECT_EQ(steps == 2, want_fused) << "variant " << v;
    if (want_fused) EXPECT_EQ(fused_nodes, 4) << "variant " << v;
  }
}

// HardSwish written as x * Clip(x + 3, 0, 6) / 6 (paddle2onnx): after a Conv+BatchNormalization
// whose output nothing else reads it joins the conv's step as a post-op; after a graph input, or
// when x has another reader, it is one HardSwish step; a wrong constant leaves it alone.
// in [1, 3, H, W] -> Conv "conv" (4 filters, 3x3) -> BatchNormalization "bn" -> out.
void AddConvBn(ModelBuilder& b, const std::string& in, const std::string& out) {
  b.Init("w", {4, 3, 3, 3}, Rand(108, 5));
  b.Node("Conv", {in, "w"}, {"c"}, "conv");
  b.Init("g", {4}, {1.f, 0.5f, 2.f, 1.5f});
  b.Init("be", {4}, {0.1f, -0.2f, 0.3f, 0.f});
  b.Init("mu", {4}, {0.f, 0.1f, -0.1f, 0.2f});
  b.Init("var", {4}, {1.f, 2.f, 0.5f, 1.f});
  b.Node("BatchNormalization", {"c", "g", "be", "mu", "var"}, {out}, "bn");
}

TEST(SessionTest, DecomposedHardSwishJoinsItsProducerOrBecomesOneStep) {
  enum Variant { kConvBn, kConvBnSixthFirst, kInput, kSharedX, kWrongConstant };
  for (Variant v : {kConvBn, kConvBnSixthFirst, kInput, kSharedX, kWrongConstant}) {
    ModelBuilder b(13);
    b.Input("in", {1, 3, 6, 6});
    std::string x = "in";
    std::vector<std::string> outs = {"y"};
    if (v != kInput) {
      AddConvBn(b, "in", "x");
      x = "x";
    }
    b.Init("three", {}, {v == kWrongConstant ? 3.5f : 3.f});
    b.Init("zero", {}, {0.f});
    b.Init("six", {}, {6.f});
    b.Init("sixth", {}, {1.f / 6.f});
    b.Node("Add", {x, "three"}, {"a"}, "add3");
    b.Node("Clip", {"a", "zero", "six"}, {"r"}, "relu6");
    if (v == kConvBnSixthFirst) {
      b.Node("Mul", {"r", "sixth"}, {"m"}, "sixth_mul");
      b.Node("Mul", {x, "m"}, {"y"}, "mul_x");
    } else {
      b.Node("Mul", {x, "r"}, {"m"}, "mul_x");
      b.Node("Div", {"m", "six"}, {"y"}, "div6");
    }
    if (v == kSharedX) {
      b.Node("Neg", {x}, {"n"}, "second_reader");
      outs.push_back("n");
    }
    for (const auto& o : outs)
      b.Output(o,
               v == kInput ? std::vector<int64_t>{1, 3, 6, 6} : std::vector<int64_t>{1, 4, 4, 4});
    size_t want_steps = 0;
    switch (v) {
      case kConvBn:
      case kConvBnSixthFirst:
        want_steps = 1;
        break;  // conv+bn+4
      case kInput:
        want_steps = 1;
        break;  // one HardSwish step
      case kSharedX:
        want_steps = 3;
        break;  // conv+bn, HardSwish, Neg
      case kWrongConstant:
        want_steps = 3;
        break;  // conv+bn, Add+Clip, Mul+Div (the Div by a constant: a linear post-op)
    }
    EXPECT_EQ(CheckFusedMatchesUnfused(b.Save("hardswish_pattern.onnx"), outs,
                                       "variant " + std::to_string(v)),
              want_steps)
        << "variant " << v;
  }
}

// PaddleOCR's learnable affine block, Conv -> Mul(scalar) -> Add(scalar), and a per-channel
// scale fold into the Conv (one step); after a Relu the scale must stay a step of its own.
// PP-LCNet (PaddleOCR's v3/v4 backbones): Conv + BatchNormalization + a decomposed HardSwish, then
// a learnable affine block, a scalar Mul and a scalar Add. The Mul and Add join the convolution's
// step as one linear post-op (they were two full passes over the activation); they are found in
// a second post-op pass after the HardSwish has joined the step.
TEST(SessionTest, ScalarAffineAfterADecomposedHardSwishJoinsTheConvolution) {
  ModelBuilder b(13);
  b.Input("in", {1, 3, 6, 6});
  AddConvBn(b, "in", "x");
  b.Init("three", {}, {3.f});
  b.Init("zero", {}, {0.f});
  b.Init("six", {}, {6.f});
  b.Node("Add", {"x", "three"}, {"a"}, "add3");
  b.Node("Clip", {"a", "zero", "six"}, {"r"}, "relu6");
  b.Node("Mul", {"x", "r"}, {"m"}, "mul_x");
  b.Node("Div", {"m", "six"}, {"h"}, "div6");
  b.Init("scale", {1}, {0.8f});
  b.Init("shift", {1}, {-0.25f});
  b.Node("Mul", {"scale", "h"}, {"s"}, "lab_scale");
  b.Node("Add", {"s", "shift"}, {"t"}, "lab_shift");
  b.Init("w2", {2, 4, 1, 1}, Rand(8, 6));
  b.Node("Conv", {"t", "w2"}, {"y"}, "next_conv");
  b.Output("y", {1, 2, 4, 4});
  const std::string path = b.Save("lcnet_affine.onnx");
  EXPECT_EQ(CheckFusedMatchesUnfused(path, {"y"}, "lcnet"), 2u);  // conv+bn+hs+mul+add, conv
  auto s = Session::Load(path, SessionOptions{});
  ASSERT_TRUE(s.ok()) << s.status().message();
  std::map<std::string, int> step;
  for (const NodeInfo& n : (*s)->Nodes()) step[n.name] = n.step;
  EXPECT_EQ(step["lab_scale"], step["conv"]);
  EXPECT_EQ(step["lab_shift"], step["conv"]);
}

// DBNet's head (PP-OCR detectors): ConvTranspose 2x2 s2 -> Add(per-channel bias) ->
// BatchNormalization -> Relu. With group 1 the bias and the BatchNormalization fold into the
// transposed convolution's weights ([IC, OC, k...]: scaled along OC) and the Relu is its post-op:
// one step instead of four full passes. Grouped, the weights are not folded.
TEST(SessionTest, ConvTransposeAbsorbsBiasBatchNormAndRelu) {
  for (int group : {1, 2}) {
    ModelBuilder b(13);
    b.Input("x", {1, 4, 5, 6});
    b.Init("w", {4, 6 / group, 2, 2}, Rand(static_cast<size_t>(4 * 6 / group * 4), 21));
    auto* ct = b.Node("ConvTranspose", {"x", "w"}, {"c"}, "deconv");
    ModelBuilder::IntsAttr(ct, "strides", {2, 2});
    ModelBuilder::IntsAttr(ct, "kernel_shape", {2, 2});
    if (group > 1) ModelBuilder::IntAttr(ct, "group", group);
    b.Init("bias", {1, 6, 1, 1}, Rand(6, 22));
    b.Node("Add", {"c", "bias"}, {"a"}, "bias_add");
    b.Init("g", {6}, {1.f, 0.5f, 2.f, 1.5f, -1.f, 0.7f});
    b.Init("be", {6}, {0.1f, -0.2f, 0.3f, 0.f, 0.5f, -0.4f});
    b.Init("mu", {6}, {0.f, 0.1f, -0.1f, 0.2f, 0.3f, -0.3f});
    b.Init("var", {6}, {1.f, 2.f, 0.5f, 1.f, 0.25f, 3.f});
    b.Node("BatchNormalization", {"a", "g", "be", "mu", "var"}, {"n"}, "bn");
    b.Node("Relu", {"n"}, {"y"}, "relu");
    b.Output("y", {1, 6, 10, 12});
    EXPECT_EQ(
        CheckFusedMatchesUnfused(b.Save("deconv_bn.onnx"), {"y"}, "group " + std::to_string(group)),
        group == 1 ? 1u : 4u)  // grouped: deconv, Add, BatchNormalization, Relu
        << "group " << group;
  }
}

TEST(SessionTest, ConvAffineConstantsFoldIntoTheWeights) {
  for (bool after_relu : {false, true}) {
    ModelBuilder b(13);
    b.Input("x", {1, 3, 6, 6});
    b.Init("w", {4, 3, 3, 3}, Rand(108, 8));
    b.Init("s", {1}, {0.7f});
    b.Init("t", {1}, {-0.2f});
    b.Init("sc", {4, 1, 1}, {1.f, 2.f, -1.f, 0.5f});
    b.Node("Conv", {"x", "w"}, {"c"}, "conv");
    std::string prev = "c";
    if (after_relu) {
      b.Node("Relu", {"c"}, {"r"}, "relu");
      prev = "r";
    }
    b.Node("Mul", {prev, "s"}, {"m"}, "scale");
    b.Node("Add", {"m", "t"}, {"a"}, "shift");
    b.Node("Mul", {"sc", "a"}, {"y"}, "per_channel");
    b.Output("y", {1, 4, 4, 4});
    EXPECT_EQ(CheckFusedMatchesUnfused(b.Save("conv_affine.onnx"), {"y"},
                                       after_relu ? "after Relu" : "before any activation"),
              after_relu ? 2u : 1u);  // after a Relu: conv+relu+linear, per-channel Mul
  }
}

// Big quantized models have hundreds of unsupported nodes: one line grouped by operator, most
// frequent first, with counts, the first node names, and the opset or domain asked for.
TEST(SessionTest, UnsupportedNodesAreGroupedByOperatorOnOneLine) {
  ModelBuilder b(13);
  auto* ms = b.model().add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  b.Input("x", {4});
  std::string prev = "x";
  auto add = [&](const std::string& op, const std::string& name, const std::string& domain) {
    auto* n = b.Node(op, {prev}, {name + "_out"}, name);
    n->set_domain(domain);
    prev = name + "_out";
  };
  add("Relu", "r", "");
  for (int i = 0; i < 5; ++i) add("Gelu", "g" + std::to_string(i), "com.microsoft");
  for (int i = 0; i < 7; ++i) add("Hardmax", "h" + std::to_string(i), "");
  add("Hardmax", "", "");  // unnamed: named by op type and index
  add("Det", "d", "");
  b.Output(prev, {4});
  std::string path = b.Save("unsupported.onnx");
  auto s = Session::Load(path, {});
  ASSERT_FALSE(s.ok());
  const std::string msg = s.status().message();  // a copy: status() returns by value
  EXPECT_EQ(s.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(msg, path +
                     ": 14 unsupported nodes (ai.onnx opset 13, com.microsoft domain opset 1): "
                     "Hardmax ×8 (first: 'h0', 'h1', 'h2', …), com.microsoft::Gelu ×5 (first: "
                     "'g0', 'g1', 'g2', …), Det ×1 (node 'd'); run `opscope ops` for the "
                     "supported operators");
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST(SessionTest, ThreadsOptionIsHonoured) {
  ModelBuilder b;
  std::string path = ConvBnRelu(b);
  for (int threads : {1, 2}) {
    SessionOptions o;
    o.threads = threads;
    auto s = Session::Load(path, o);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ((*s)->Threads(), threads);
    EXPECT_EQ((*s)->WorkerThreadIds().size(), static_cast<size_t>(threads));
  }
}

}  // namespace
}  // namespace opscope::engine

namespace opscope::engine {
namespace {

// tests/models/qdq_convnet.onnx (tools/gen_quant_models.py): every DQ -> Conv/Gemm -> Q group is
// one integer step with its source nodes listed; the result matches the unfused float chain
// within a quantization step of the output; integer ops are counted.
TEST(SessionTest, QdqGraphRunsAsOneInt8StepPerOp) {
  const std::string path = std::string(OPSCOPE_SOURCE_DIR) + "/tests/models/qdq_convnet.onnx";
  SessionOptions fused, plain;
  plain.fuse = false;
  auto s1 = Session::Load(path, fused);
  auto s2 = Session::Load(path, plain);
  ASSERT_TRUE(s1.ok()) << s1.status().message();
  ASSERT_TRUE(s2.ok()) << s2.status().message();
  std::map<std::string, std::string> step_of;
  for (const StepInfo& st : (*s1)->Steps()) step_of[st.name] = st.op_type;
  EXPECT_EQ(step_of["conv1"], "Conv+DequantizeLinear+Relu+QuantizeLinear");
  EXPECT_EQ(step_of["conv2"], "Conv+DequantizeLinear+QuantizeLinear");
  EXPECT_EQ(step_of["fc"], "Gemm+DequantizeLinear");
  Tensor x = testing::RandomTensor({1, 3, 32, 32}, 9);
  for (auto* s : {&*s1, &*s2}) {
    ASSERT_TRUE((*s)->SetInput("x", x).ok());
    for (int r = 0; r < 2; ++r) ASSERT_TRUE((*s)->Run().ok());
  }
  // The logits come from a float Gemm on int8 inputs quantized with 3/127: a one-step change of
  // an input moves a logit by far less than 0.05.
  EXPECT_EQ(testing::CompareFloat(*(*s1)->Output("logits"), *(*s2)->Output("logits"), 0.05f, 0.f),
            "");
  const auto& nodes = (*s1)->Nodes();
  for (const NodeInfo& n : nodes) {
    if (n.name == "conv1") {
      EXPECT_EQ(n.status, "executed");
      EXPECT_EQ(n.flops, 0);
      EXPECT_NEAR(n.int_ops, 2.0 * 16 * 32 * 32 * 27, 1);
      // uint8 x, int8 W, float bias, uint8 y.
      EXPECT_NEAR(n.bytes, 3 * 32 * 32 + 16 * 27 + 16 * 4 + 16 * 32 * 32, 1);
    }
    if (n.name == "conv1.relu" || n.name == "x.dq" || n.name == "conv1.out.q")
      EXPECT_EQ(n.status, "fused") << n.name;
    if (n.name == "x.dq") EXPECT_EQ(n.output_shapes[0], (std::vector<int64_t>{1, 3, 32, 32}));
  }
}

}  // namespace
}  // namespace opscope::engine
