// Constant folding (passes_fold.cc): at load, on a graph just built; after the planning run,
// the static-shape marks and the Shape chains it folds.
#include <gtest/gtest.h>

#include "engine/testing/model_builder.h"
#include "engine/testing/session_peer.h"

namespace opscope::engine {
namespace {

using P = SessionImplPeer;
using testing::ModelBuilder;

// k = Mul(Add(a, b), 2) depends on constants only and folds; y = x + k does not.
TEST(FoldPass, FoldsConstantNodesAtLoad) {
  ModelBuilder b;
  b.Input("x", {3});
  b.Init("a", {3}, {1, 2, 3});
  b.Init("b", {3}, {10, 20, 30});
  b.Init("two", {}, {2});
  b.Node("Add", {"a", "b"}, {"s"}, "add_c");
  b.Node("Mul", {"s", "two"}, {"k"}, "mul_c");
  b.Node("Add", {"x", "k"}, {"y"}, "add_x");
  b.Output("y", {3});
  SessionImpl s;
  ASSERT_TRUE(P::LoadGraph(s, b.Save("fold_load.onnx")).ok());
  const int k = P::ValueId(s, "k");
  EXPECT_FALSE(P::values(s)[k].is_const);
  ASSERT_TRUE(P::FoldConstantsAtLoad(s).ok());
  const auto& infos = P::node_infos(s);
  EXPECT_EQ(infos[P::NodeId(s, "add_c")].status, "folded");
  EXPECT_EQ(infos[P::NodeId(s, "mul_c")].status, "folded");
  EXPECT_EQ(infos[P::NodeId(s, "add_x")].status, "executed");
  EXPECT_FALSE(P::HasKernel(s, P::NodeId(s, "mul_c")));
  const Value& kv = P::values(s)[k];
  ASSERT_TRUE(kv.is_const);
  ASSERT_EQ(kv.tensor.numel(), 3);
  EXPECT_FLOAT_EQ(kv.tensor.data<float>()[0], 22.f);
  EXPECT_FLOAT_EQ(kv.tensor.data<float>()[2], 66.f);
  EXPECT_EQ(infos[P::NodeId(s, "mul_c")].output_shapes[0], std::vector<int64_t>({3}));
  P::MakeSteps(s);
  EXPECT_EQ(P::ActiveSteps(s), std::vector<std::vector<std::string>>({{"add_x"}}));
}

// y = Reshape(x, Concat(Gather(Shape(x), 0), [-1])): after the planning run Shape(x) of a
// static x, the Gather and the Concat are folded; the Reshape still runs. NonZero's output
// shape depends on data: it never becomes static, nor does what follows from it.
TEST(FoldPass, FoldsShapeChainsAfterThePlanningRun) {
  ModelBuilder b;
  b.Input("x", {2, 3, 4});
  b.InitI64("zero", {}, {0});
  b.InitI64("minus1", {1}, {-1});
  b.Node("Shape", {"x"}, {"shp"}, "shape");
  b.Node("Gather", {"shp", "zero"}, {"n"}, "gather");
  b.Node("Unsqueeze", {"n", "zero"}, {"n1"}, "unsq");
  auto* axis = b.Node("Concat", {"n1", "minus1"}, {"target"}, "concat")->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  b.Node("Reshape", {"x", "target"}, {"y"}, "reshape");
  b.Node("NonZero", {"x"}, {"nz"}, "nonzero");
  b.Node("Shape", {"nz"}, {"nz_shape"}, "nz_shape");
  b.Output("y", {2, 12});
  auto* nz_out = b.model().mutable_graph()->add_output();
  nz_out->set_name("nz_shape");
  nz_out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  nz_out->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(2);
  SessionOptions o;
  o.threads = 1;
  auto loaded = Session::Load(b.Save("fold_shape.onnx"), o);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto& s = static_cast<SessionImpl&>(**loaded);
  ASSERT_TRUE(s.FillRandomInputs(1).ok());
  for (const char* n : {"shape", "gather", "unsq", "concat", "reshape", "nonzero", "nz_shape"})
    EXPECT_EQ(P::node_infos(s)[P::NodeId(s, n)].status, "executed") << n;
  ASSERT_TRUE(s.Run().ok());
  for (const char* n : {"shape", "gather", "unsq", "concat"})
    EXPECT_EQ(P::node_infos(s)[P::NodeId(s, n)].status, "folded") << n;
  for (const char* n : {"reshape", "nonzero", "nz_shape"})
    EXPECT_EQ(P::node_infos(s)[P::NodeId(s, n)].status, "executed") << n;
  EXPECT_TRUE(P::values(s)[P::ValueId(s, "target")].is_const);
  EXPECT_TRUE(P::values(s)[P::ValueId(s, "target")].shape_static);
  EXPECT_TRUE(P::values(s)[P::ValueId(s, "shp")].shape_static);  // Shape of a static x
  EXPECT_FALSE(P::values(s)[P::ValueId(s, "nz")].shape_static);
  EXPECT_FALSE(P::values(s)[P::ValueId(s, "nz_shape")].shape_static);
  ASSERT_TRUE(s.Run().ok());
  EXPECT_EQ(s.Output("y")->shape(), std::vector<int64_t>({2, 12}));
}

}  // namespace
}  // namespace opscope::engine
