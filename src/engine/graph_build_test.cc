// Graph building (graph_build.cc) on its own: LoadGraph stops after BuildGraph, so these tests
// see values, nodes, names, consumers, kernels and subgraph scopes before any pass ran.
#include <gtest/gtest.h>

#include "engine/testing/model_builder.h"
#include "engine/testing/session_peer.h"

namespace opscope::engine {
namespace {

using P = SessionImplPeer;
using testing::ModelBuilder;

TEST(GraphBuild, ValuesNodesAndConsumers) {
  ModelBuilder b;
  b.Input("x", {1, 4});
  b.Init("c", {4}, {1, 2, 3, 4});
  b.Node("Relu", {"x"}, {"r"}, "relu");
  b.Node("Add", {"r", "c"}, {"y"}, "");
  b.Node("Mul", {"r", "y"}, {"z"}, "");
  b.Output("z", {1, 4});
  SessionImpl s;
  ASSERT_TRUE(P::LoadGraph(s, b.Save("gb_values.onnx")).ok());
  const auto& nodes = P::nodes(s);
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0].name, "relu");
  EXPECT_EQ(nodes[1].name, "Add_1");  // unnamed: op type and index
  EXPECT_EQ(nodes[2].name, "Mul_2");
  const auto& values = P::values(s);
  const int x = P::ValueId(s, "x"), c = P::ValueId(s, "c"), r = P::ValueId(s, "r"),
            z = P::ValueId(s, "z");
  ASSERT_GE(x, 0);
  EXPECT_TRUE(values[x].is_input);
  EXPECT_FALSE(values[x].is_const);
  EXPECT_TRUE(values[c].is_const);
  EXPECT_EQ(values[c].tensor.shape(), std::vector<int64_t>({4}));
  EXPECT_TRUE(values[z].is_output);
  EXPECT_EQ(values[r].producer, 0);
  EXPECT_EQ(values[r].consumers, std::vector<int>({1, 2}));
  EXPECT_EQ(nodes[1].inputs, std::vector<int>({r, c}));
  for (int n = 0; n < 3; ++n) EXPECT_TRUE(P::HasKernel(s, n)) << n;
  for (const NodeInfo& info : P::node_infos(s)) EXPECT_EQ(info.status, "executed");
  EXPECT_TRUE(P::steps(s).empty());  // steps come after folding
}

TEST(GraphBuild, DuplicateNodeNamesAreMadeUnique) {
  ModelBuilder b;
  b.Input("x", {2});
  b.Node("Relu", {"x"}, {"a"}, "n");
  b.Node("Relu", {"a"}, {"y"}, "n");
  b.Output("y", {2});
  SessionImpl s;
  ASSERT_TRUE(P::LoadGraph(s, b.Save("gb_dup.onnx")).ok());
  EXPECT_EQ(P::nodes(s)[0].name, "n");
  EXPECT_EQ(P::nodes(s)[1].name, "n_1");
}

// Opset 18: libonnx's checker (which would refuse these first) does not run, so the
// engine's own graph checks are what answers.
TEST(GraphBuild, RefusesValuesDefinedTwiceAndUnknownInputs) {
  {
    ModelBuilder b(18);
    b.Input("x", {2});
    b.Node("Relu", {"x"}, {"y"}, "a");
    b.Node("Neg", {"x"}, {"y"}, "b");
    b.Output("y", {2});
    SessionImpl s;
    Status st = P::LoadGraph(s, b.Save("gb_ssa.onnx"));
    EXPECT_NE(st.message().find("node 'b' (Neg): output 'y' is already defined"), std::string::npos)
        << st.message();
  }
  {
    ModelBuilder b(18);
    b.Input("x", {2});
    b.Node("Add", {"x", "nowhere"}, {"y"}, "a");
    b.Output("y", {2});
    SessionImpl s;
    Status st = P::LoadGraph(s, b.Save("gb_unknown.onnx"));
    EXPECT_NE(st.message().find("node 'a' (Add): input 'nowhere' is not produced by any earlier"),
              std::string::npos)
        << st.message();
  }
}

// y = If(c) then Mul(x, w) else Neg(x): the branches' nodes are session nodes named under
// the If, and the outer values they read are captures of the If node.
TEST(GraphBuild, SubgraphsHaveScopesAndCaptures) {
  ModelBuilder b;
  b.Input("x", {3});
  b.Input("c", {1}, onnx::TensorProto::BOOL);
  b.Init("w", {3}, {1, 2, 3});
  auto* n = b.Node("If", {"c"}, {"y"}, "If_0");
  auto branch = [](const std::string& op, std::vector<std::string> in, const std::string& name) {
    onnx::GraphProto g;
    g.set_name(name);
    auto* node = g.add_node();
    node->set_op_type(op);
    node->set_name(op + "_t");
    for (auto& i : in) node->add_input(i);
    node->add_output(name + "_out");
    auto* o = g.add_output();
    o->set_name(name + "_out");
    o->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    o->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(3);
    return g;
  };
  auto* then_a = n->add_attribute();
  then_a->set_name("then_branch");
  then_a->set_type(onnx::AttributeProto::GRAPH);
  *then_a->mutable_g() = branch("Mul", {"x", "w"}, "then");
  auto* else_a = n->add_attribute();
  else_a->set_name("else_branch");
  else_a->set_type(onnx::AttributeProto::GRAPH);
  *else_a->mutable_g() = branch("Neg", {"x"}, "else");
  b.Output("y", {3});
  SessionImpl s;
  Status st = P::LoadGraph(s, b.Save("gb_if.onnx"));
  ASSERT_TRUE(st.ok()) << st.message();
  const int if_node = P::NodeId(s, "If_0");
  const int mul = P::NodeId(s, "If_0/then_branch/Mul_t");
  ASSERT_GE(if_node, 0);
  ASSERT_GE(mul, 0);
  EXPECT_GE(P::NodeId(s, "If_0/else_branch/Neg_t"), 0);
  ASSERT_EQ(P::subgraphs(s).size(), 2u);
  EXPECT_EQ(P::subgraphs(s)[0].name, "If_0/then_branch");
  EXPECT_EQ(P::subgraphs(s)[0].owner, if_node);
  // x and w are read inside the branches: captures of the If, which counts as their reader.
  const int x = P::ValueId(s, "x"), w = P::ValueId(s, "w");
  const auto& caps = P::node_captures(s)[if_node];
  EXPECT_NE(std::find(caps.begin(), caps.end(), x), caps.end());
  EXPECT_NE(std::find(caps.begin(), caps.end(), w), caps.end());
  const auto& xc = P::values(s)[x].consumers;
  EXPECT_NE(std::find(xc.begin(), xc.end(), if_node), xc.end());
  EXPECT_EQ(P::values(s)[P::nodes(s)[mul].outputs[0]].subgraph, 0);
}

}  // namespace
}  // namespace opscope::engine
