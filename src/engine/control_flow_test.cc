// Control flow in the session: If, Loop and Scan on models built here, against values computed
// by hand or by a naive twin; outer-scope captures; nesting; the names and nesting of subgraph
// steps; bad input (one clear line naming the node).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "engine/memory_limit.h"
#include "engine/testing/kernel_runner.h"
#include "opscope/engine.h"

namespace opscope::engine {
namespace {

using onnx::AttributeProto;
using onnx::GraphProto;
using onnx::NodeProto;
using onnx::TensorProto;

void AddValue(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
              const std::string& name, int type, std::vector<int64_t> shape,
              bool with_shape = true) {
  auto* v = list->Add();
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  auto* sh = t->mutable_shape();
  if (!with_shape) {  // rank 2, dims left to shape inference
    sh->add_dim()->set_dim_param("n");
    sh->add_dim()->set_dim_param("m");
    return;
  }
  for (int64_t d : shape) sh->add_dim()->set_dim_value(d);
}

NodeProto* AddNode(GraphProto* g, const std::string& op, std::vector<std::string> in,
                   std::vector<std::string> out, const std::string& name) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& i : in) n->add_input(i);
  for (auto& o : out) n->add_output(o);
  return n;
}

void GraphAttr(NodeProto* n, const std::string& name, const GraphProto& g) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(AttributeProto::GRAPH);
  *a->mutable_g() = g;
  if (g.name().empty()) a->mutable_g()->set_name(n->name() + "_" + name);
}

void IntAttr(NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(AttributeProto::INT);
  a->set_i(v);
}

void IntsAttr(NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void FloatInit(GraphProto* g, const std::string& name, std::vector<int64_t> shape,
               std::vector<float> data) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(TensorProto::FLOAT);
  for (int64_t d : shape) t->add_dims(d);
  for (float f : data) t->add_float_data(f);
}

void Int64Init(GraphProto* g, const std::string& name, std::vector<int64_t> shape,
               std::vector<int64_t> data) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(TensorProto::INT64);
  for (int64_t d : shape) t->add_dims(d);
  for (int64_t v : data) t->add_int64_data(v);
}

void BoolInit(GraphProto* g, const std::string& name, std::vector<int64_t> shape,
              std::vector<int> data) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(TensorProto::BOOL);
  for (int64_t d : shape) t->add_dims(d);
  for (int v : data) t->add_int32_data(v);
}

std::string Save(const onnx::ModelProto& m, const std::string& file) {
  static std::string dir = [] {
    char tmpl[] = "/tmp/opscope_cf_test_XXXXXX";
    return std::string(mkdtemp(tmpl));
  }();
  std::string path = dir + "/" + file;
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  return path;
}

onnx::ModelProto Model(const GraphProto& g, int opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* imp = m.add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  *m.mutable_graph() = g;
  m.mutable_graph()->set_name("main");
  return m;
}

Tensor Floats(std::vector<int64_t> shape, std::vector<float> v) {
  return testing::FloatTensor(shape, v);
}

Tensor Bool(bool v) {
  Tensor t(DataType::kBool, {});
  t.data<uint8_t>()[0] = v;
  return t;
}

Tensor I64(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return testing::IntTensor(shape, v);
}

// y = If(c) then (x * w_outer) else (Relu(x) + 1): branches read the outer x and w.
GraphProto IfGraph() {
  GraphProto then_g, else_g, g;
  then_g.set_name("then");
  AddNode(&then_g, "Mul", {"x", "w"}, {"t_out"}, "Mul_t");
  AddValue(then_g.mutable_output(), "t_out", TensorProto::FLOAT, {2, 3});
  else_g.set_name("else");
  FloatInit(&else_g, "one", {}, {1.f});
  AddNode(&else_g, "Relu", {"x"}, {"r"}, "Relu_e");
  AddNode(&else_g, "Add", {"r", "one"}, {"e_out"}, "Add_e");
  AddValue(else_g.mutable_output(), "e_out", TensorProto::FLOAT, {2, 3});
  AddValue(g.mutable_input(), "c", TensorProto::BOOL, {});
  AddValue(g.mutable_input(), "x", TensorProto::FLOAT, {2, 3});
  FloatInit(&g, "w", {3}, {2.f, -1.f, 0.5f});
  auto* n = AddNode(&g, "If", {"c"}, {"y"}, "If_0");
  GraphAttr(n, "then_branch", then_g);
  GraphAttr(n, "else_branch", else_g);
  AddValue(g.mutable_output(), "y", TensorProto::FLOAT, {2, 3});
  return g;
}

std::vector<float> Values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

TEST(ControlFlow, IfRunsTheChosenBranchOnOuterValues) {
  auto path = Save(Model(IfGraph()), "if.onnx");
  SessionOptions o;
  o.threads = 1;
  auto s = Session::Load(path, o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  std::vector<float> x = {1, -2, 3, -4, 5, -6};
  for (int run = 0; run < 3; ++run) {
    for (bool c : {true, false}) {
      ASSERT_TRUE((*s)->SetInput("c", Bool(c)).ok());
      ASSERT_TRUE((*s)->SetInput("x", Floats({2, 3}, x)).ok());
      Status st = (*s)->Run();
      ASSERT_TRUE(st.ok()) << st.message();
      std::vector<float> want;
      const float w[3] = {2.f, -1.f, 0.5f};
      for (int i = 0; i < 6; ++i) want.push_back(c ? x[i] * w[i % 3] : std::max(x[i], 0.f) + 1);
      EXPECT_EQ(Values(*(*s)->Output("y")), want) << "c=" << c << " run " << run;
    }
  }
}

TEST(ControlFlow, SubgraphNodesAreStepsNamedAfterTheirParentAndNestInsideIt) {
  auto path = Save(Model(IfGraph()), "if_names.onnx");
  SessionOptions o;
  o.threads = 1;
  auto s = Session::Load(path, o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  std::map<std::string, int> step_of;
  const auto& steps = (*s)->Steps();
  for (size_t i = 0; i < steps.size(); ++i) step_of[steps[i].name] = static_cast<int>(i);
  ASSERT_TRUE(step_of.count("If_0"));
  ASSERT_TRUE(step_of.count("If_0/then_branch/Mul_t"));
  ASSERT_TRUE(step_of.count("If_0/else_branch/Relu_e"));
  ASSERT_TRUE(step_of.count("If_0/else_branch/Add_e"));
  EXPECT_EQ(steps[step_of["If_0"]].parent_step, -1);
  EXPECT_EQ(steps[step_of["If_0/then_branch/Mul_t"]].parent_step, step_of["If_0"]);
  EXPECT_EQ(steps[step_of["If_0/else_branch/Add_e"]].parent_step, step_of["If_0"]);

  // The observer sees the branch's steps between the If's begin and end, the other branch's
  // not at all.
  struct Recorder : OpObserver {
    std::vector<std::string> events;
    const std::vector<StepInfo>* steps;
    void OnStepBegin(int s) override { events.push_back("+" + (*steps)[s].name); }
    void OnStepEnd(int s) override { events.push_back("-" + (*steps)[s].name); }
  } rec;
  rec.steps = &steps;
  ASSERT_TRUE((*s)->SetInput("c", Bool(false)).ok());
  ASSERT_TRUE((*s)->SetInput("x", Floats({2, 3}, {1, 2, 3, 4, 5, 6})).ok());
  ASSERT_TRUE((*s)->Run().ok());
  (*s)->SetObserver(&rec);
  ASSERT_TRUE((*s)->Run().ok());
  std::vector<std::string> want = {"+If_0",
                                   "+If_0/else_branch/Relu_e",
                                   "-If_0/else_branch/Relu_e",
                                   "+If_0/else_branch/Add_e",
                                   "-If_0/else_branch/Add_e",
                                   "-If_0"};
  EXPECT_EQ(rec.events, want);
  // Costs: the branch that ran in the planning run has its FLOPs, the other none.
  for (const NodeInfo& n : (*s)->Nodes()) {
    if (n.name == "If_0/else_branch/Add_e") {
      EXPECT_GT(n.flops, 0);
    }
    if (n.name == "If_0/then_branch/Mul_t") {
      EXPECT_EQ(n.flops, 0);
    }
  }
}

// Loop: M = trip count, cond from the body (stop when the sum exceeds a limit), one carried
// value (running sum), one scan output (each partial sum), and the iteration number used.
GraphProto LoopGraph(bool with_cond_stop, bool scan_shaped = true) {
  GraphProto body, g;
  body.set_name("body");
  AddValue(body.mutable_input(), "i", TensorProto::INT64, {});
  AddValue(body.mutable_input(), "cond_in", TensorProto::BOOL, {});
  AddValue(body.mutable_input(), "acc", TensorProto::FLOAT, {2});
  AddNode(&body, "Cast", {"i"}, {"fi"}, "Cast_i")->add_attribute()->CopyFrom([] {
    AttributeProto a;
    a.set_name("to");
    a.set_type(AttributeProto::INT);
    a.set_i(TensorProto::FLOAT);
    return a;
  }());
  AddNode(&body, "Mul", {"fi", "x"}, {"ix"}, "Mul_ix");  // x from the outer scope
  AddNode(&body, "Add", {"acc", "ix"}, {"acc_out"}, "Add_acc");
  AddNode(&body, "ReduceSum", {"acc_out"}, {"total"}, "Sum")->add_attribute()->CopyFrom([] {
    AttributeProto a;
    a.set_name("keepdims");
    a.set_type(AttributeProto::INT);
    a.set_i(0);
    return a;
  }());
  if (with_cond_stop) {
    AddNode(&body, "Less", {"total", "limit"}, {"cond_out"}, "Less_limit");
  } else {
    AddNode(&body, "Identity", {"cond_in"}, {"cond_out"}, "Keep");
  }
  AddNode(&body, "Identity", {"acc_out"}, {"scan"}, "Scan_out");
  AddValue(body.mutable_output(), "cond_out", TensorProto::BOOL, {});
  AddValue(body.mutable_output(), "acc_out", TensorProto::FLOAT, {2});
  AddValue(body.mutable_output(), "scan", TensorProto::FLOAT, {2});
  if (!scan_shaped)  // no declared shape at all
    body.mutable_output(2)->mutable_type()->mutable_tensor_type()->clear_shape();
  AddValue(g.mutable_input(), "m", TensorProto::INT64, {});
  AddValue(g.mutable_input(), "x", TensorProto::FLOAT, {2});
  FloatInit(&g, "acc0", {2}, {0.f, 10.f});
  FloatInit(&g, "limit", {}, {50.f});
  BoolInit(&g, "go", {}, {1});
  auto* n = AddNode(&g, "Loop", {"m", "go", "acc0"}, {"acc_final", "partials"}, "Loop_0");
  GraphAttr(n, "body", body);
  AddValue(g.mutable_output(), "acc_final", TensorProto::FLOAT, {2});
  AddValue(g.mutable_output(), "partials", TensorProto::FLOAT, {}, /*with_shape=*/false);
  return g;
}

TEST(ControlFlow, LoopCarriesValuesStacksScanOutputsAndStopsOnTripCountOrCondition) {
  for (bool cond_stop : {false, true}) {
    auto path = Save(Model(LoopGraph(cond_stop)), cond_stop ? "loop_c.onnx" : "loop.onnx");
    SessionOptions o;
    o.threads = 1;
    auto s = Session::Load(path, o);
    ASSERT_TRUE(s.ok()) << s.status().message();
    for (int64_t m : {0, 1, 4, 9}) {
      const std::vector<float> x = {1.5f, 2.f};
      ASSERT_TRUE((*s)->SetInput("m", I64({}, {m})).ok());
      ASSERT_TRUE((*s)->SetInput("x", Floats({2}, x)).ok());
      Status st = (*s)->Run();
      ASSERT_TRUE(st.ok()) << st.message();
      // Naive twin.
      std::vector<float> acc = {0.f, 10.f}, partials;
      int64_t iters = 0;
      for (int64_t i = 0; i < m; ++i) {
        for (int k = 0; k < 2; ++k) acc[k] += static_cast<float>(i) * x[k];
        partials.insert(partials.end(), acc.begin(), acc.end());
        ++iters;
        if (cond_stop && !(acc[0] + acc[1] < 50.f)) break;
      }
      EXPECT_EQ(Values(*(*s)->Output("acc_final")), acc) << "m=" << m;
      const Tensor* p = (*s)->Output("partials");
      // After zero iterations the per-iteration shape is the body's declared one: [0, 2].
      const std::vector<int64_t> want_shape =
          iters == 0 ? std::vector<int64_t>{0, 2} : std::vector<int64_t>{iters, 2};
      EXPECT_EQ(p->shape(), want_shape) << "m=" << m;
      EXPECT_EQ(Values(*p), partials) << "m=" << m;
    }
    // The body's nodes ran once per iteration in the planning run: FLOPs scale with it.
    const Tensor* unused = nullptr;
    (void)unused;
  }
}

// The body declares no shape for its scan output: shape inference gives it ([2], from Identity of
// the carried value), and the zero-iteration output takes its rank from that, as ORT does.
TEST(ControlFlow, ZeroIterationScanOutputTakesTheBodysInferredShape) {
  auto path = Save(Model(LoopGraph(false, /*scan_shaped=*/false)), "loop_noshape.onnx");
  SessionOptions o;
  o.threads = 1;
  auto s = Session::Load(path, o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE((*s)->SetInput("m", I64({}, {0})).ok());
  ASSERT_TRUE((*s)->SetInput("x", Floats({2}, {1.f, 2.f})).ok());
  Status st = (*s)->Run();
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ((*s)->Output("partials")->shape(), (std::vector<int64_t>{0, 2}));
  ASSERT_TRUE((*s)->SetInput("m", I64({}, {3})).ok());
  ASSERT_TRUE((*s)->Run().ok());
  EXPECT_EQ((*s)->Output("partials")->shape(), (std::vector<int64_t>{3, 2}));
}

TEST(ControlFlow, LoopRefusesANegativeTripCountNamingTheNode) {
  auto path = Save(Model(LoopGraph(false)), "loop_neg.onnx");
  auto s = Session::Load(path, SessionOptions{});
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE((*s)->SetInput("m", I64({}, {-3})).ok());
  ASSERT_TRUE((*s)->SetInput("x", Floats({2}, {1, 2})).ok());
  Status st = (*s)->Run();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("node 'Loop_0' (Loop): the trip count M is -3; it must be 0 or more"),
            std::string::npos)
      << st.message();
  EXPECT_EQ(st.message().find('\n'), std::string::npos);
}

// The loop iteration limit (memory_limit.h; the model fuzzers set it): a Loop that would run
// past it fails naming the node; one that ends before it runs as without a limit.
TEST(ControlFlow, LoopIterationLimitStopsALoopThatWouldRunPastIt) {
  auto path = Save(Model(LoopGraph(false)), "loop_limit.onnx");
  auto s = Session::Load(path, SessionOptions{});
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE((*s)->SetInput("x", Floats({2}, {1, 2})).ok());
  struct Reset {
    ~Reset() { SetLoopIterationLimit(0); }
  } reset;
  SetLoopIterationLimit(5);
  ASSERT_TRUE((*s)->SetInput("m", I64({}, {5})).ok());
  ASSERT_TRUE((*s)->Run().ok());
  EXPECT_EQ((*s)->Output("partials")->shape(), (std::vector<int64_t>{5, 2}));
  ASSERT_TRUE((*s)->SetInput("m", I64({}, {6})).ok());
  Status st = (*s)->Run();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("node 'Loop_0' (Loop): stopped after 5 iterations"),
            std::string::npos)
      << st.message();
  SetLoopIterationLimit(0);
  ASSERT_TRUE((*s)->Run().ok());
  EXPECT_EQ((*s)->Output("partials")->shape(), (std::vector<int64_t>{6, 2}));
}

TEST(ControlFlow, LoopBodyWithTheWrongSignatureIsRefusedAtLoad) {
  // One input too few.
  GraphProto g = LoopGraph(false);
  auto* body = g.mutable_node(0)->mutable_attribute(0)->mutable_g();
  GraphProto bad = g;
  bad.mutable_node(0)->mutable_attribute(0)->mutable_g()->mutable_input()->RemoveLast();
  // (the removed input 'acc' is now unresolved inside the body: refused either way, naming the
  // Loop's body or node)
  auto s = Session::Load(Save(Model(bad), "loop_sig1.onnx"), SessionOptions{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("Loop_0"), std::string::npos) << s.status().message();
  // Condition output of the wrong type.
  bad = g;
  auto* out0 = bad.mutable_node(0)->mutable_attribute(0)->mutable_g()->mutable_output(0);
  out0->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
  s = Session::Load(Save(Model(bad), "loop_sig2.onnx"), SessionOptions{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("Loop_0"), std::string::npos) << s.status().message();
  // A Loop with fewer carried values than its body takes.
  bad = g;
  bad.mutable_node(0)->mutable_input()->RemoveLast();
  s = Session::Load(Save(Model(bad), "loop_sig3.onnx"), SessionOptions{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("node 'Loop_0' (Loop): the body has 3 inputs"),
            std::string::npos)
      << s.status().message();
  (void)body;
}

TEST(ControlFlow, IfBranchesWithDifferentOutputCountsOrANonScalarConditionAreRefused) {
  GraphProto g = IfGraph();
  auto* else_g = g.mutable_node(0)->mutable_attribute(1)->mutable_g();
  AddValue(else_g->mutable_output(), "r", TensorProto::FLOAT, {2, 3});
  auto s = Session::Load(Save(Model(g, 16), "if_bad.onnx"), SessionOptions{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(
      s.status().message().find("node 'If_0' (If): then_branch has 1 output but else_branch has 2"),
      std::string::npos)
      << s.status().message();

  GraphProto g2 = IfGraph();
  g2.mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->add_dim()
      ->set_dim_value(2);
  auto s2 = Session::Load(Save(Model(g2), "if_cond.onnx"), SessionOptions{});
  ASSERT_TRUE(s2.ok()) << s2.status().message();
  Tensor c(DataType::kBool, {2});
  ASSERT_TRUE((*s2)->SetInput("c", std::move(c)).ok());
  ASSERT_TRUE((*s2)->SetInput("x", Floats({2, 3}, {1, 2, 3, 4, 5, 6})).ok());
  Status st = (*s2)->Run();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("node 'If_0' (If): the condition must be a single value (shape [] or "
                              "[1]), got shape [2]"),
            std::string::npos)
      << st.message();
}

TEST(ControlFlow, UnsupportedOperatorsInsideSubgraphsAreNamedWithTheirPath) {
  GraphProto g = IfGraph();
  g.mutable_node(0)->mutable_attribute(0)->mutable_g()->mutable_node(0)->set_op_type("NoSuchOp");
  // Opset 18: past libonnx's checker (which would refuse the unknown operator first).
  auto s = Session::Load(Save(Model(g, 18), "if_unsup.onnx"), SessionOptions{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("NoSuchOp ×1 (node 'If_0/then_branch/Mul_t')"),
            std::string::npos)
      << s.status().message();
}

// Loop body containing an If on the iteration number: nested subgraphs, captures across two
// levels (x from the main graph read inside the If inside the Loop).
TEST(ControlFlow, NestedIfInsideLoopReadsValuesTwoScopesOut) {
  GraphProto then_g, else_g, body, g;
  AddNode(&then_g, "Add", {"acc", "x"}, {"t"}, "Add_x");  // acc: body input; x: main graph
  AddValue(then_g.mutable_output(), "t", TensorProto::FLOAT, {2});
  AddNode(&else_g, "Sub", {"acc", "x"}, {"e"}, "Sub_x");
  AddValue(else_g.mutable_output(), "e", TensorProto::FLOAT, {2});
  AddValue(body.mutable_input(), "i", TensorProto::INT64, {});
  AddValue(body.mutable_input(), "c", TensorProto::BOOL, {});
  AddValue(body.mutable_input(), "acc", TensorProto::FLOAT, {2});
  Int64Init(&body, "two", {}, {2});
  AddNode(&body, "Mod", {"i", "two"}, {"r"}, "Mod");
  Int64Init(&body, "zero", {}, {0});
  AddNode(&body, "Equal", {"r", "zero"}, {"even"}, "Even");
  auto* in = AddNode(&body, "If", {"even"}, {"acc_out"}, "If_1");
  GraphAttr(in, "then_branch", then_g);
  GraphAttr(in, "else_branch", else_g);
  AddNode(&body, "Identity", {"c"}, {"c_out"}, "Keep");
  AddValue(body.mutable_output(), "c_out", TensorProto::BOOL, {});
  AddValue(body.mutable_output(), "acc_out", TensorProto::FLOAT, {2});
  AddValue(g.mutable_input(), "x", TensorProto::FLOAT, {2});
  Int64Init(&g, "m", {}, {5});
  FloatInit(&g, "a0", {2}, {0.f, 0.f});
  auto* n = AddNode(&g, "Loop", {"m", "", "a0"}, {"y"}, "Loop_0");
  GraphAttr(n, "body", body);
  AddValue(g.mutable_output(), "y", TensorProto::FLOAT, {2});
  auto s = Session::Load(Save(Model(g), "nested.onnx"), SessionOptions{});
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE((*s)->SetInput("x", Floats({2}, {1.f, 3.f})).ok());
  for (int run = 0; run < 2; ++run) {
    Status st = (*s)->Run();
    ASSERT_TRUE(st.ok()) << st.message();
    // i = 0..4: + - + - + => +1 x
    EXPECT_EQ(Values(*(*s)->Output("y")), (std::vector<float>{1.f, 3.f}));
  }
  bool found = false;
  const auto& steps = (*s)->Steps();
  for (const StepInfo& st : steps)
    if (st.name == "Loop_0/body/If_1/then_branch/Add_x") {
      found = true;
      ASSERT_GE(st.parent_step, 0);
      EXPECT_EQ(steps[st.parent_step].name, "Loop_0/body/If_1");
      EXPECT_EQ(steps[steps[st.parent_step].parent_step].name, "Loop_0");
    }
  EXPECT_TRUE(found);
  for (const NodeInfo& ni : (*s)->Nodes()) {  // 3 of 5 iterations took then_branch
    if (ni.name == "Loop_0/body/If_1/then_branch/Add_x") {
      EXPECT_DOUBLE_EQ(ni.flops, 3 * 2);
    }
  }
}

// Scan with two scan inputs read along different axes and directions, one state, two scan
// outputs written along different axes/directions; against a naive twin.
TEST(ControlFlow, ScanFollowsAxesAndDirections) {
  GraphProto body, g;
  AddValue(body.mutable_input(), "s", TensorProto::FLOAT, {3});
  AddValue(body.mutable_input(), "a", TensorProto::FLOAT, {3});
  AddValue(body.mutable_input(), "b", TensorProto::FLOAT, {3});
  AddNode(&body, "Add", {"s", "a"}, {"s1"}, "Add_a");
  AddNode(&body, "Mul", {"s1", "b"}, {"s_out"}, "Mul_b");
  AddNode(&body, "Identity", {"s_out"}, {"o1"}, "Id1");
  AddNode(&body, "Neg", {"a"}, {"o2"}, "Neg_a");
  AddValue(body.mutable_output(), "s_out", TensorProto::FLOAT, {3});
  AddValue(body.mutable_output(), "o1", TensorProto::FLOAT, {3});
  AddValue(body.mutable_output(), "o2", TensorProto::FLOAT, {3});
  AddValue(g.mutable_input(), "s0", TensorProto::FLOAT, {3});
  AddValue(g.mutable_input(), "A", TensorProto::FLOAT, {4, 3});  // scanned along axis 0
  AddValue(g.mutable_input(), "B", TensorProto::FLOAT, {3, 4});  // along axis 1 (= -1), reversed
  auto* n = AddNode(&g, "Scan", {"s0", "A", "B"}, {"sf", "O1", "O2"}, "Scan_0");
  GraphAttr(n, "body", body);
  IntAttr(n, "num_scan_inputs", 2);
  IntsAttr(n, "scan_input_axes", {0, -1});
  IntsAttr(n, "scan_input_directions", {0, 1});
  IntsAttr(n, "scan_output_axes", {1, 0});
  IntsAttr(n, "scan_output_directions", {0, 1});
  AddValue(g.mutable_output(), "sf", TensorProto::FLOAT, {3});
  AddValue(g.mutable_output(), "O1", TensorProto::FLOAT, {3, 4});
  AddValue(g.mutable_output(), "O2", TensorProto::FLOAT, {4, 3});
  auto s = Session::Load(Save(Model(g, 16), "scan.onnx"), SessionOptions{});
  ASSERT_TRUE(s.ok()) << s.status().message();
  Tensor s0 = testing::RandomTensor({3}, 1), A = testing::RandomTensor({4, 3}, 2),
         B = testing::RandomTensor({3, 4}, 3);
  std::vector<float> st(s0.data<float>(), s0.data<float>() + 3);
  std::vector<float> o1(12), o2(12);
  for (int t = 0; t < 4; ++t) {
    const int tb = 3 - t;  // B reversed
    for (int k = 0; k < 3; ++k) {
      st[k] = (st[k] + A.data<float>()[t * 3 + k]) * B.data<float>()[k * 4 + tb];
      o1[k * 4 + t] = st[k];                              // axis 1, forward
      o2[(3 - t) * 3 + k] = -A.data<float>()[t * 3 + k];  // axis 0, reversed
    }
  }
  ASSERT_TRUE((*s)->SetInput("s0", std::move(s0)).ok());
  ASSERT_TRUE((*s)->SetInput("A", std::move(A)).ok());
  ASSERT_TRUE((*s)->SetInput("B", std::move(B)).ok());
  for (int run = 0; run < 2; ++run) {
    Status rs = (*s)->Run();
    ASSERT_TRUE(rs.ok()) << rs.message();
    EXPECT_EQ(testing::CompareFloat(*(*s)->Output("sf"), Floats({3}, st), 1e-6f, 1e-6f), "");
    EXPECT_EQ(testing::CompareFloat(*(*s)->Output("O1"), Floats({3, 4}, o1), 1e-6f, 1e-6f), "");
    EXPECT_EQ(testing::CompareFloat(*(*s)->Output("O2"), Floats({4, 3}, o2), 1e-6f, 1e-6f), "");
  }
}

// The scan length comes from the inputs' shapes, so the loop iteration limit applies to Scan
// before its first iteration (an empty [2^32, 0] scan input would scan 2^32 times).
TEST(ControlFlow, ScanLongerThanTheLoopIterationLimitIsRefused) {
  GraphProto body, g;
  AddValue(body.mutable_input(), "s", TensorProto::FLOAT, {2});
  AddValue(body.mutable_input(), "a", TensorProto::FLOAT, {2});
  AddNode(&body, "Add", {"s", "a"}, {"s_out"}, "Add_a");
  AddValue(body.mutable_output(), "s_out", TensorProto::FLOAT, {2});
  AddValue(g.mutable_input(), "s0", TensorProto::FLOAT, {2});
  AddValue(g.mutable_input(), "A", TensorProto::FLOAT, {6, 2});
  auto* n = AddNode(&g, "Scan", {"s0", "A"}, {"sf"}, "Scan_0");
  GraphAttr(n, "body", body);
  IntAttr(n, "num_scan_inputs", 1);
  AddValue(g.mutable_output(), "sf", TensorProto::FLOAT, {2});
  auto s = Session::Load(Save(Model(g, 16), "scan_limit.onnx"), SessionOptions{});
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE((*s)->FillRandomInputs(1).ok());
  struct Reset {
    ~Reset() { SetLoopIterationLimit(0); }
  } reset;
  SetLoopIterationLimit(6);
  ASSERT_TRUE((*s)->Run().ok());
  SetLoopIterationLimit(5);
  Status st = (*s)->Run();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("node 'Scan_0' (Scan): would run 6 iterations, more than the loop "
                              "iteration limit 5"),
            std::string::npos)
      << st.message();
}

// A value produced by a Conv/Relu chain and read only inside a branch must not be fused away,
// folded, or freed (arena) before the If runs; the second (arena) run must match the first.
TEST(ControlFlow, CapturedValuesSurviveFusionFoldingAndTheArena) {
  GraphProto then_g, else_g, g;
  AddNode(&then_g, "Identity", {"h"}, {"t"}, "Id_t");
  AddValue(then_g.mutable_output(), "t", TensorProto::FLOAT, {1, 4});
  AddNode(&else_g, "Neg", {"h"}, {"e"}, "Neg_e");
  AddValue(else_g.mutable_output(), "e", TensorProto::FLOAT, {1, 4});
  AddValue(g.mutable_input(), "x", TensorProto::FLOAT, {1, 3});
  AddValue(g.mutable_input(), "c", TensorProto::BOOL, {});
  FloatInit(&g, "W", {3, 4}, {1, 2, 3, 4, -1, -2, -3, -4, 0.5, 0.5, 0.5, 0.5});
  AddNode(&g, "MatMul", {"x", "W"}, {"mm"}, "MatMul_0");
  AddNode(&g, "Relu", {"mm"}, {"h"}, "Relu_0");
  AddNode(&g, "MatMul", {"x", "W"}, {"other"}, "MatMul_1");
  auto* n = AddNode(&g, "If", {"c"}, {"y0"}, "If_0");
  GraphAttr(n, "then_branch", then_g);
  GraphAttr(n, "else_branch", else_g);
  AddNode(&g, "Add", {"y0", "other"}, {"y"}, "Add_0");
  AddValue(g.mutable_output(), "y", TensorProto::FLOAT, {1, 4});
  auto s = Session::Load(Save(Model(g), "capture.onnx"), SessionOptions{});
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE((*s)->SetInput("x", Floats({1, 3}, {1, 1, 1})).ok());
  // mm = [0.5, 0.5, 0.5, 0.5]; h = relu(mm)
  for (int run = 0; run < 3; ++run) {
    ASSERT_TRUE((*s)->SetInput("c", Bool(run % 2 == 0)).ok());
    Status st = (*s)->Run();
    ASSERT_TRUE(st.ok()) << st.message();
    const float h = 0.5f, other = 0.5f;
    const float want = (run % 2 == 0 ? h : -h) + other;
    EXPECT_EQ(Values(*(*s)->Output("y")), std::vector<float>(4, want)) << "run " << run;
  }
}

// The condition turns constant after the planning run (Size of a static-shaped input), but
// the branch reads the input's values: the If must still run every time, not be folded.
TEST(ControlFlow, IfOnAConditionFoldedAfterPlanningStillRunsEveryTime) {
  GraphProto then_g, else_g, g;
  AddNode(&then_g, "Neg", {"x"}, {"t"}, "Neg_t");
  AddValue(then_g.mutable_output(), "t", TensorProto::FLOAT, {2, 3});
  AddNode(&else_g, "Abs", {"x"}, {"e"}, "Abs_e");
  AddValue(else_g.mutable_output(), "e", TensorProto::FLOAT, {2, 3});
  AddValue(g.mutable_input(), "x", TensorProto::FLOAT, {2, 3});
  Int64Init(&g, "six", {}, {6});
  AddNode(&g, "Size", {"x"}, {"n"}, "Size_0");
  AddNode(&g, "Equal", {"n", "six"}, {"c"}, "Equal_0");
  auto* n = AddNode(&g, "If", {"c"}, {"y"}, "If_0");
  GraphAttr(n, "then_branch", then_g);
  GraphAttr(n, "else_branch", else_g);
  AddValue(g.mutable_output(), "y", TensorProto::FLOAT, {2, 3});
  auto s = Session::Load(Save(Model(g), "if_fold.onnx"), SessionOptions{});
  ASSERT_TRUE(s.ok()) << s.status().message();
  for (int run = 0; run < 3; ++run) {
    std::vector<float> x = {1.f * run, 2, 3, 4, 5, -6.f * run};
    ASSERT_TRUE((*s)->SetInput("x", Floats({2, 3}, x)).ok());
    ASSERT_TRUE((*s)->Run().ok());
    std::vector<float> want;
    for (float v : x) want.push_back(-v);
    EXPECT_EQ(Values(*(*s)->Output("y")), want) << "run " << run;
  }
}

TEST(ControlFlow, SequenceValuesInSubgraphsAreRefusedNamingTheSubgraph) {
  GraphProto g = LoopGraph(false);
  auto* in = g.mutable_node(0)->mutable_attribute(0)->mutable_g()->mutable_input(2);
  in->mutable_type()->clear_tensor_type();
  in->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(TensorProto::FLOAT);
  auto s = Session::Load(Save(Model(g, 18), "loop_seq.onnx"), SessionOptions{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("subgraph 'Loop_0/body': input 'acc' is not a tensor "
                                      "(sequences, maps and optionals are not supported)"),
            std::string::npos)
      << s.status().message();
  EXPECT_EQ(s.status().code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace opscope::engine
