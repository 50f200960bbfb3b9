// The executor (executor.cc): the plan check refuses broken plans with one line, steps run and
// are observed in order (the planning run and the planned runs alike), errors are placed at
// the node, inputs are checked.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/testing/kernel_runner.h"
#include "engine/testing/model_builder.h"
#include "engine/testing/session_peer.h"

namespace opscope::engine {
namespace {

using P = SessionImplPeer;
using testing::ModelBuilder;

std::string ChainModel(const std::string& file) {
  ModelBuilder b;
  b.Input("x", {4});
  b.Node("Relu", {"x"}, {"a"}, "relu");
  b.Node("Neg", {"a"}, {"n"}, "neg");
  b.Node("Exp", {"n"}, {"y"}, "exp");
  b.Output("y", {4});
  return b.Save(file);
}

void LoadSteps(SessionImpl& s, const std::string& path) {
  ASSERT_TRUE(P::LoadGraph(s, path).ok());
  ASSERT_TRUE(P::FoldConstantsAtLoad(s).ok());
  P::MakeSteps(s);
  P::IndexSteps(s);
}

TEST(Executor, CheckPlanRefusesStepsOutOfOrderAndMissingOutputs) {
  const std::string path = ChainModel("exec_plan.onnx");
  {
    SessionImpl s;
    LoadSteps(s, path);
    EXPECT_TRUE(P::CheckPlan(s).ok());
    std::swap(P::steps(s)[0], P::steps(s)[1]);  // Neg before the Relu it reads
    Status st = P::CheckPlan(s);
    EXPECT_EQ(st.code(), StatusCode::kInternal);
    EXPECT_NE(st.message().find("node 'neg' (Neg): internal error in the execution plan: it reads "
                                "'a', which no earlier step computes"),
              std::string::npos)
        << st.message();
  }
  {
    SessionImpl s;
    LoadSteps(s, path);
    P::steps(s)[2].active = false;  // nothing computes y
    Status st = P::CheckPlan(s);
    EXPECT_NE(st.message().find("graph output 'y' is not computed by any step (it comes from node "
                                "'exp')"),
              std::string::npos)
        << st.message();
  }
}

struct Recorder : OpObserver {
  std::vector<std::string> events;
  void OnRunBegin(int run) override { events.push_back("run" + std::to_string(run)); }
  void OnStepBegin(int step) override { events.push_back("+" + std::to_string(step)); }
  void OnStepEnd(int step) override { events.push_back("-" + std::to_string(step)); }
  void OnRunEnd(int run) override { events.push_back("end" + std::to_string(run)); }
};

TEST(Executor, RunsAndObservesStepsInOrder) {
  SessionOptions o;
  o.threads = 1;
  auto s = Session::Load(ChainModel("exec_observe.onnx"), o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  Recorder rec;
  (*s)->SetObserver(&rec);
  Status missing = (*s)->Run();
  EXPECT_NE(missing.message().find("input 'x' was not set"), std::string::npos);
  EXPECT_TRUE(rec.events.empty());
  ASSERT_TRUE((*s)->SetInput("x", testing::FloatTensor({4}, {-1, 0, 1, 2})).ok());
  ASSERT_TRUE((*s)->Run().ok());
  ASSERT_TRUE((*s)->Run().ok());
  const std::vector<std::string> one_run = {"+0", "-0", "+1", "-1", "+2", "-2"};
  std::vector<std::string> want = {"run0"};
  want.insert(want.end(), one_run.begin(), one_run.end());
  want.push_back("end0");
  want.push_back("run1");
  want.insert(want.end(), one_run.begin(), one_run.end());
  want.push_back("end1");
  EXPECT_EQ(rec.events, want);
  const Tensor* y = (*s)->Output("y");
  ASSERT_NE(y, nullptr);
  const float expect[] = {1.f, 1.f, std::exp(-1.f), std::exp(-2.f)};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y->data<float>()[i], expect[i], 1e-5f) << i;
  EXPECT_EQ((*s)->Output("nothing"), nullptr);
}

TEST(Executor, InputsAreCheckedAndKernelErrorsNameTheNode) {
  ModelBuilder b;
  b.Input("x", {2, 3});
  b.Input("shape", {2}, onnx::TensorProto::INT64);
  b.Node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  b.OutputAnyShape("y", 2);
  SessionOptions o;
  o.threads = 1;
  const std::string path = b.Save("exec_errors.onnx");
  auto s = Session::Load(path, o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  Status wrong = (*s)->SetInput("x", testing::FloatTensor({3, 2}, {1, 2, 3, 4, 5, 6}));
  EXPECT_NE(wrong.message().find("input 'x' has shape 3x2, the model expects 2x3"),
            std::string::npos)
      << wrong.message();
  EXPECT_NE((*s)->SetInput("z", Tensor()).message().find("the model has no input 'z'"),
            std::string::npos);
  ASSERT_TRUE((*s)->SetInput("x", testing::FloatTensor({2, 3}, {1, 2, 3, 4, 5, 6})).ok());
  ASSERT_TRUE((*s)->SetInput("shape", testing::IntTensor({2}, {4, 4})).ok());
  Status st = (*s)->Run();
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind(path + ": node 'reshape' (Reshape): ", 0), 0u) << st.message();
}

}  // namespace
}  // namespace opscope::engine
