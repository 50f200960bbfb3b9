// The layout pass (passes_layout.cc) run by itself after an all-NCHW planning run: which
// values it stores channels-last, and that the runs after it still compute the NCHW result.
#include <gtest/gtest.h>

#include "engine/testing/kernel_runner.h"
#include "engine/testing/model_builder.h"
#include "engine/testing/session_peer.h"

namespace opscope::engine {
namespace {

using P = SessionImplPeer;
using testing::ModelBuilder;

onnx::NodeProto* Conv3x3(ModelBuilder& b, const std::string& x, const std::string& w,
                         const std::string& y, const std::string& name) {
  auto* n = b.Node("Conv", {x, w}, {y}, name);
  ModelBuilder::IntsAttr(n, "pads", {1, 1, 1, 1});
  return n;
}

std::unique_ptr<Session> LoadNchw(const std::string& path) {
  SessionOptions o;
  o.threads = 1;
  o.channels_last = false;
  auto s = Session::Load(path, o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return nullptr;
  EXPECT_TRUE((*s)->FillRandomInputs(3).ok());
  return std::move(*s);
}

int StepOf(const Session& s, const std::string& node) {
  for (const NodeInfo& n : s.Nodes())
    if (n.name == node) return n.step;
  return -1;
}

// conv1+Relu -> r; conv2(r) -> c2; a = Add(c2, r); conv3(a) -> y. Every activation between
// the convolutions goes channels-last, the residual Add runs on NHWC, y (an output) stays NCHW.
TEST(LayoutPass, ConvChainWithResidualAddGoesChannelsLast) {
  ModelBuilder b;
  b.Input("x", {1, 4, 8, 8});
  for (const char* w : {"w1", "w2", "w3"}) b.Init(w, {4, 4, 3, 3}, testing::RandomFloats(144, 5));
  Conv3x3(b, "x", "w1", "c1", "conv1");
  b.Node("Relu", {"c1"}, {"r"}, "relu");
  Conv3x3(b, "r", "w2", "c2", "conv2");
  b.Node("Add", {"c2", "r"}, {"a"}, "add");
  Conv3x3(b, "a", "w3", "y", "conv3");
  b.Output("y", {1, 4, 8, 8});
  const std::string path = b.Save("layout_residual.onnx");
  std::unique_ptr<Session> ref = LoadNchw(path);
  std::unique_ptr<Session> s = LoadNchw(path);
  ASSERT_TRUE(ref && s);
  ASSERT_TRUE(ref->Run().ok());
  ASSERT_TRUE(s->Run().ok());  // the planning run: all NCHW
  auto& impl = static_cast<SessionImpl&>(*s);
  for (const StepInfo& st : s->Steps()) EXPECT_FALSE(st.channels_last_in || st.channels_last_out);
  P::AssignChannelsLast(impl);
  const auto& steps = s->Steps();
  const int c1 = StepOf(*s, "conv1"), c2 = StepOf(*s, "conv2"), c3 = StepOf(*s, "conv3");
  ASSERT_EQ(StepOf(*s, "relu"), c1);         // fused
  EXPECT_FALSE(steps[c1].channels_last_in);  // a graph input
  EXPECT_TRUE(steps[c1].channels_last_out);
  EXPECT_TRUE(steps[c2].channels_last_in && steps[c2].channels_last_out);
  EXPECT_TRUE(steps[c3].channels_last_in);    // a = Add(c2, r) is NHWC
  EXPECT_FALSE(steps[c3].channels_last_out);  // a graph output
  ASSERT_TRUE(s->Run().ok());
  ASSERT_TRUE(ref->Run().ok());
  EXPECT_EQ(testing::CompareFloat(*s->Output("y"), *ref->Output("y")), "");
}

// A value that a Reshape also reads stays NCHW: the Reshape sees its bytes.
TEST(LayoutPass, ValueReadByReshapeStaysNchw) {
  ModelBuilder b;
  b.Input("x", {1, 4, 8, 8});
  b.Init("w1", {4, 4, 3, 3}, testing::RandomFloats(144, 6));
  b.Init("w2", {4, 4, 3, 3}, testing::RandomFloats(144, 7));
  b.InitI64("flat", {2}, {1, -1});
  Conv3x3(b, "x", "w1", "c1", "conv1");
  Conv3x3(b, "c1", "w2", "y", "conv2");
  b.Node("Reshape", {"c1", "flat"}, {"f"}, "reshape");
  b.Output("y", {1, 4, 8, 8});
  b.Output("f", {1, 256});
  std::unique_ptr<Session> s = LoadNchw(b.Save("layout_reshape.onnx"));
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->Run().ok());
  P::AssignChannelsLast(static_cast<SessionImpl&>(*s));
  EXPECT_FALSE(s->Steps()[StepOf(*s, "conv1")].channels_last_out);
  EXPECT_FALSE(s->Steps()[StepOf(*s, "conv2")].channels_last_in);
}

}  // namespace
}  // namespace opscope::engine
