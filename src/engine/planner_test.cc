// The planner (planner.cc): after the planning run, shapes and costs are recorded, Reshape-like
// steps are views, and the arena gives values whose lifetimes overlap disjoint memory.
#include <gtest/gtest.h>

#include "engine/testing/kernel_runner.h"
#include "engine/testing/model_builder.h"
#include "engine/testing/session_peer.h"

namespace opscope::engine {
namespace {

using P = SessionImplPeer;
using testing::ModelBuilder;

std::unique_ptr<Session> LoadAndRun(ModelBuilder& b, const std::string& file, bool fuse = true) {
  SessionOptions o;
  o.threads = 1;
  o.fuse = fuse;
  auto s = Session::Load(b.Save(file), o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return nullptr;
  EXPECT_TRUE((*s)->FillRandomInputs(9).ok());
  EXPECT_TRUE((*s)->Run().ok());
  return std::move(*s);
}

// A chain of unary steps with a long skip: t0 = Relu(x), t1..t5 = Neg(previous), y = t5 + t0.
// t0 lives until the last step, so it may share memory with none of t1..t5; the others live
// two steps each and can reuse each other's buffers.
TEST(Planner, OverlappingLifetimesNeverShareMemory) {
  ModelBuilder b;
  b.Input("x", {64, 64});
  b.Node("Relu", {"x"}, {"t0"}, "relu");
  for (int i = 1; i <= 5; ++i)
    b.Node("Neg", {"t" + std::to_string(i - 1)}, {"t" + std::to_string(i)},
           "neg" + std::to_string(i));
  b.Node("Add", {"t5", "t0"}, {"y"}, "add");
  b.Output("y", {64, 64});
  std::unique_ptr<Session> s = LoadAndRun(b, "plan_lifetimes.onnx", /*fuse=*/false);
  ASSERT_TRUE(s);
  auto& impl = static_cast<SessionImpl&>(*s);
  ASSERT_TRUE(P::planned(impl));
  struct Live {
    std::string name;
    int64_t begin, end;  // bytes
    int first, last;     // steps
  };
  std::vector<Live> planned;
  const auto& values = P::values(impl);
  for (size_t v = 0; v < values.size(); ++v) {
    const Value& val = values[v];
    if (val.arena_offset < 0) continue;
    planned.push_back({val.name, val.arena_offset,
                       val.arena_offset + static_cast<int64_t>(val.arena_bytes),
                       s->Nodes()[val.producer].step, val.last_step});
  }
  ASSERT_EQ(planned.size(), 6u);  // t0..t5; x is an input, y an output
  for (const Live& a : planned) {
    EXPECT_EQ(a.end - a.begin, 64 * 64 * 4) << a.name;
    for (const Live& b2 : planned) {
      if (&a == &b2) continue;
      const bool live_together = a.first <= b2.last && b2.first <= a.last;
      const bool share = a.begin < b2.end && b2.begin < a.end;
      EXPECT_FALSE(live_together && share) << a.name << " and " << b2.name;
    }
  }
  EXPECT_EQ(values[P::ValueId(impl, "y")].arena_offset, -1);
  EXPECT_EQ(s->NaiveActivationBytes(), 6u * 64 * 64 * 4);
  EXPECT_LT(s->ArenaBytes(), s->NaiveActivationBytes());  // t1..t5 take turns
  // The planned runs compute what the planning run did.
  const Tensor first = *s->Output("y");
  ASSERT_TRUE(s->Run().ok());
  EXPECT_EQ(testing::CompareFloat(*s->Output("y"), first, 0, 0), "");
}

// r = Reshape(t) is a view of t (no copy, no bytes); a Reshape to a graph output is not.
TEST(Planner, ReshapeStepsBecomeViewsAndCostsAreRecorded) {
  ModelBuilder b;
  b.Input("x", {2, 3, 4});
  b.InitI64("shape", {2}, {6, 4});
  b.Node("Relu", {"x"}, {"t"}, "relu");
  b.Node("Reshape", {"t", "shape"}, {"r"}, "reshape");
  b.Node("Neg", {"r"}, {"y"}, "neg");
  b.Node("Reshape", {"t", "shape"}, {"z"}, "reshape_out");
  b.Output("y", {6, 4});
  b.Output("z", {6, 4});
  std::unique_ptr<Session> s = LoadAndRun(b, "plan_views.onnx");
  ASSERT_TRUE(s);
  auto& impl = static_cast<SessionImpl&>(*s);
  const auto& values = P::values(impl);
  const Step& view = P::steps(impl)[s->Nodes()[P::NodeId(impl, "reshape")].step];
  const Step& copy = P::steps(impl)[s->Nodes()[P::NodeId(impl, "reshape_out")].step];
  EXPECT_TRUE(view.view);
  EXPECT_FALSE(copy.view);
  EXPECT_EQ(values[P::ValueId(impl, "r")].alias_root, P::ValueId(impl, "t"));
  EXPECT_EQ(s->Nodes()[P::NodeId(impl, "reshape")].bytes, 0);
  const NodeInfo& neg = s->Nodes()[P::NodeId(impl, "neg")];
  EXPECT_EQ(neg.input_shapes, std::vector<std::vector<int64_t>>({{6, 4}}));
  EXPECT_EQ(neg.output_shapes, std::vector<std::vector<int64_t>>({{6, 4}}));
  EXPECT_GT(neg.bytes, 0);
  ASSERT_TRUE(s->Run().ok());
  for (int64_t i = 0; i < 24; ++i)
    EXPECT_FLOAT_EQ(s->Output("y")->data<float>()[i], -s->Output("z")->data<float>()[i]);
}

}  // namespace
}  // namespace opscope::engine
