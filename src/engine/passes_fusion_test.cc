// The fusion passes (passes_fusion.cc, passes_patterns.cc) run by themselves on graphs just
// built and folded: which nodes end up in one step, what the folds rewrote. (session_test
// checks that every fused result matches --no-fuse.)
#include <gtest/gtest.h>

#include <cmath>

#include "engine/testing/model_builder.h"
#include "engine/testing/session_peer.h"

namespace opscope::engine {
namespace {

using P = SessionImplPeer;
using testing::ModelBuilder;
using Steps = std::vector<std::vector<std::string>>;

// LoadGraph, FoldConstantsAtLoad and MakeSteps: the steps as Fuse finds them.
void Prepare(SessionImpl& s, ModelBuilder& b, const std::string& file) {
  Status st = P::LoadGraph(s, b.Save(file));
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(P::FoldConstantsAtLoad(s).ok());
  P::MakeSteps(s);
}

void ConvInputs(ModelBuilder& b, int c) {
  b.Input("x", {1, c, 6, 6});
  b.Init("w", {c, c, 3, 3}, testing::RandomFloats(c * c * 9, 1));
  b.Init("bias", {c}, testing::RandomFloats(c, 2));
}

TEST(FusionPass, ConvBatchNormActivationBecomeOneStep) {
  ModelBuilder b;
  ConvInputs(b, 2);
  b.Init("g", {2}, {1.5f, 0.5f});
  b.Init("be", {2}, {0.1f, -0.2f});
  b.Init("m", {2}, {0.3f, 0.4f});
  b.Init("v", {2}, {1.f, 4.f});
  b.Node("Conv", {"x", "w", "bias"}, {"c"}, "conv");
  b.Node("BatchNormalization", {"c", "g", "be", "m", "v"}, {"n"}, "bn");
  b.Node("LeakyRelu", {"n"}, {"y"}, "act");
  b.Output("y", {1, 2, 4, 4});
  SessionImpl s;
  Prepare(s, b, "fuse_conv_bn.onnx");
  EXPECT_EQ(P::ActiveSteps(s), Steps({{"conv"}, {"bn"}, {"act"}}));
  P::Fuse(s);
  EXPECT_EQ(P::ActiveSteps(s), Steps({{"conv", "bn", "act"}}));
  EXPECT_EQ(P::node_infos(s)[P::NodeId(s, "bn")].status, "fused");
  EXPECT_EQ(P::node_infos(s)[P::NodeId(s, "act")].status, "fused");
  // The BatchNormalization is folded into new weight and bias constants of the Conv.
  const Node& conv = P::nodes(s)[P::NodeId(s, "conv")];
  EXPECT_EQ(P::values(s)[conv.inputs[1]].name, "conv/W_bn_folded");
  EXPECT_EQ(P::values(s)[conv.inputs[2]].name, "conv/B_bn_folded");
  const float s0 = 1.5f / std::sqrt(1.f + 1e-5f);
  const Tensor& w0 = P::values(s)[P::ValueId(s, "w")].tensor;
  EXPECT_FLOAT_EQ(P::values(s)[conv.inputs[1]].tensor.data<float>()[0], w0.data<float>()[0] * s0);
  EXPECT_EQ(P::steps(s)[0].outputs, std::vector<int>({P::ValueId(s, "y")}));
  P::IndexSteps(s);
  EXPECT_TRUE(P::CheckPlan(s).ok());
}

// A residual Add anchors a chain (kPostOpAnchor); a Relu does not, and a Pow (elementwise but
// no anchor) is not absorbed by one.
TEST(FusionPass, OnlyAnchorsStartChains) {
  ModelBuilder b;
  b.Input("x", {1, 8});
  b.Input("r", {1, 8});
  b.Init("two", {}, {2});
  b.Node("Add", {"x", "r"}, {"a"}, "add");
  b.Node("Relu", {"a"}, {"b"}, "relu");
  b.Node("Sigmoid", {"b"}, {"c"}, "sig");
  b.Node("Pow", {"c", "two"}, {"y"}, "pow");
  b.Output("y", {1, 8});
  SessionImpl s;
  Prepare(s, b, "fuse_anchor.onnx");
  P::Fuse(s);
  // Add takes Relu then Sigmoid as post-ops; Pow is no activation, so it stays a step.
  EXPECT_EQ(P::ActiveSteps(s), Steps({{"add", "relu", "sig"}, {"pow"}}));
}

// Mul by a per-channel constant right after a Conv folds into the weights ("affine_folded");
// a second reader of the Conv's output keeps everything apart.
TEST(FusionPass, ConvAffineFoldsOnlyForSoleConsumer) {
  for (bool shared : {false, true}) {
    ModelBuilder b;
    ConvInputs(b, 2);
    b.Init("scale", {1, 2, 1, 1}, {2.f, -1.f});
    b.Node("Conv", {"x", "w", "bias"}, {"c"}, "conv");
    b.Node("Mul", {"c", "scale"}, {"y"}, "mul");
    b.Output("y", {1, 2, 4, 4});
    if (shared) b.Output("c", {1, 2, 4, 4});
    SessionImpl s;
    Prepare(s, b, shared ? "fuse_affine_shared.onnx" : "fuse_affine.onnx");
    P::Fuse(s);
    if (shared) {
      EXPECT_EQ(P::ActiveSteps(s), Steps({{"conv"}, {"mul"}}));
      continue;
    }
    EXPECT_EQ(P::ActiveSteps(s), Steps({{"conv", "mul"}}));
    const Node& conv = P::nodes(s)[P::NodeId(s, "conv")];
    EXPECT_EQ(P::values(s)[conv.inputs[1]].name, "conv/W_affine_folded");
    const Tensor& nb = P::values(s)[conv.inputs[2]].tensor;
    const Tensor& ob = P::values(s)[P::ValueId(s, "bias")].tensor;
    EXPECT_FLOAT_EQ(nb.data<float>()[0], ob.data<float>()[0] * 2.f);
    EXPECT_FLOAT_EQ(nb.data<float>()[1], -ob.data<float>()[1]);
  }
}

// A Conv whose constant bias does not hold one value per output channel (1 or 3 for 2
// channels, or a [2, 1]) absorbs neither a Mul nor a BatchNormalization: folding read the bias
// past its end (ASan, a model_struct_fuzz finding); the kernel refuses such a bias when it runs.
TEST(FusionPass, ConvWithAWrongBiasFoldsNothing) {
  for (const std::vector<int64_t>& bias_shape :
       {std::vector<int64_t>{1}, std::vector<int64_t>{3}, std::vector<int64_t>{2, 1}}) {
    for (bool bn : {false, true}) {
      SCOPED_TRACE(std::to_string(bias_shape[0]) + (bn ? " bn" : " mul"));
      ModelBuilder b;
      b.Input("x", {1, 2, 6, 6});
      b.Init("w", {2, 2, 3, 3}, testing::RandomFloats(36, 1));
      int64_t n = 1;
      for (int64_t d : bias_shape) n *= d;
      b.Init("bias", bias_shape, testing::RandomFloats(n, 2));
      b.Node("Conv", {"x", "w", "bias"}, {"c"}, "conv");
      if (bn) {
        for (const char* p : {"g", "be", "m", "v"}) b.Init(p, {2}, {1.f, 2.f});
        b.Node("BatchNormalization", {"c", "g", "be", "m", "v"}, {"y"}, "next");
      } else {
        b.Init("scale", {1, 2, 1, 1}, {2.f, -1.f});
        b.Node("Mul", {"c", "scale"}, {"y"}, "next");
      }
      b.Output("y", {1, 2, 4, 4});
      SessionImpl s;
      Prepare(s, b, "fuse_wrong_bias.onnx");
      P::Fuse(s);
      EXPECT_EQ(P::ActiveSteps(s), Steps({{"conv"}, {"next"}}));
    }
  }
}

// A Conv or ConvTranspose over an empty weight absorbs neither a Mul nor a BatchNormalization:
// a fused [2^31, 0, 3] weight made the affine fold allocate 8 GB for its scale vector
// (model_struct_fuzz, out-of-memory), and a weight with no output channels (Conv) or no input
// channels (ConvTranspose) was folded through an integer division by zero (undefined behaviour
// that a release build happens to skip: this test sees the fold itself).
TEST(FusionPass, ConvOverAnEmptyWeightFoldsNothing) {
  struct Case {
    const char* op;
    std::vector<int64_t> x, w, y;
    bool bn;
  };
  for (const Case& c : {Case{"Conv", {1, 0, 6, 6}, {3, 0, 3, 3}, {1, 3, 4, 4}, false},
                        Case{"Conv", {1, 0, 6, 6}, {3, 0, 3, 3}, {1, 3, 4, 4}, true},
                        Case{"Conv", {1, 2, 6, 6}, {0, 2, 3, 3}, {1, 0, 4, 4}, false},
                        Case{"ConvTranspose", {1, 0, 6, 6}, {0, 2, 3, 3}, {1, 2, 8, 8}, false}}) {
    SCOPED_TRACE(std::string(c.op) + " w[0]=" + std::to_string(c.w[0]) + (c.bn ? " bn" : " mul"));
    ModelBuilder b;
    b.Input("x", c.x);
    b.Init("w", c.w, {});
    b.Node(c.op, {"x", "w"}, {"c"}, "conv");
    if (c.bn) {
      for (const char* p : {"g", "be", "m", "v"}) b.Init(p, {3}, {1.f, 2.f, 3.f});
      b.Node("BatchNormalization", {"c", "g", "be", "m", "v"}, {"y"}, "next");
    } else {
      b.Init("scale", {}, {2.f});
      b.Node("Mul", {"c", "scale"}, {"y"}, "next");
    }
    b.Output("y", c.y);
    SessionImpl s;
    Prepare(s, b, "fuse_empty_weight.onnx");
    P::Fuse(s);
    // The weights stay the model's (a fold names them conv/W_*_folded); a scalar Mul may still
    // join the step as a linear post-op, a BatchNormalization stays a step of its own.
    const Node& conv = P::nodes(s)[P::NodeId(s, "conv")];
    EXPECT_EQ(P::values(s)[conv.inputs[1]].name, "w");
    EXPECT_TRUE(conv.inputs.size() < 3 || conv.inputs[2] < 0);
    if (c.bn) EXPECT_EQ(P::ActiveSteps(s), Steps({{"conv"}, {"next"}}));
  }
}

// The erf Gelu, PyTorch's grouping: Div(x, sqrt 2) -> Erf -> Add 1 -> Mul x -> Mul 0.5.
TEST(FusionPass, GeluPatternBecomesOneStep) {
  ModelBuilder b;
  b.Input("x", {2, 5});
  b.Init("sqrt2", {}, {1.4142135f});
  b.Init("one", {}, {1.f});
  b.Init("half", {}, {0.5f});
  b.Node("Div", {"x", "sqrt2"}, {"d"}, "div");
  b.Node("Erf", {"d"}, {"e"}, "erf");
  b.Node("Add", {"e", "one"}, {"a"}, "add");
  b.Node("Mul", {"x", "a"}, {"m"}, "mul");
  b.Node("Mul", {"m", "half"}, {"y"}, "half_mul");
  b.Output("y", {2, 5});
  SessionImpl s;
  Prepare(s, b, "fuse_gelu.onnx");
  P::FuseGelu(s);
  EXPECT_EQ(P::ActiveSteps(s), Steps({{"div", "erf", "add", "mul", "half_mul"}}));
  const Step& st = P::steps(s)[0];
  EXPECT_EQ(st.inputs, std::vector<int>({P::ValueId(s, "x")}));
  EXPECT_EQ(st.outputs, std::vector<int>({P::ValueId(s, "y")}));
}

}  // namespace
}  // namespace opscope::engine
