#include "profile/profile.h"

#include <gtest/gtest.h>

#include "profile/profile_io.h"

namespace opscope::profile {
namespace {

Profile Sample() {
  Profile p;
  p.meta.kind = "profile";
  p.meta.source = "m.onnx";
  p.meta.runs = 3;
  p.e2e.runs_ms = {2, 3, 4};
  OpRecord a;
  a.name = "conv";
  a.op_type = "Conv";
  a.runs_ms = {1, 1.5, 2};
  a.input_shapes = {{1, 3, 8, 8}, {4, 3, 3, 3}};
  a.flops = 1000;
  OpRecord b;
  b.name = "relu";
  b.op_type = "Relu";
  b.status = "fused";
  b.step = "conv";
  b.runs_ms = {0.5, 0.5, 0.5};
  p.ops = {a, b};
  p.op_events.push_back({0, 0, 123, 1000, 500});
  SampleSection s;
  s.frames.push_back({"main", "a.out", "a.c", 3, 0x10, false});
  s.samples.push_back({{0}, 1, 1, 5, 1.0, 0});
  p.samples = s;
  FinalizeStats(p);
  return p;
}

TEST(ProfileTest, RoundTrip) {
  Profile p = Sample();
  ASSERT_TRUE(Validate(p).ok());
  auto back = FromJsonString(ToJsonString(p), "mem");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->ops.size(), 2u);
  EXPECT_EQ(back->ops[0].input_shapes, p.ops[0].input_shapes);
  EXPECT_DOUBLE_EQ(back->ops[1].share, p.ops[1].share);
  EXPECT_EQ(back->op_events[0].tid, 123);
  ASSERT_TRUE(back->samples.has_value());
  EXPECT_EQ(back->samples->frames[0].function, "main");
  EXPECT_EQ(ToJsonString(*back), ToJsonString(p));
}

TEST(ProfileTest, SharesSumToOne) {
  Profile p = Sample();
  double sum = 0;
  for (auto& op : p.ops) sum += op.share;
  EXPECT_NEAR(sum, 1.0, 1e-9);
  EXPECT_NEAR(p.ops[0].share, 1.5 / 2.0, 1e-9);
}

TEST(ProfileTest, RejectsBadInput) {
  EXPECT_EQ(FromJsonString("{\"schema\": \"opscope.pro", "t").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(FromJsonString("{\"traceEvents\": []}", "t").status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(FromJsonString("{\"schema\": \"opscope.profile/9\"}", "t").status().code(),
            StatusCode::kUnsupported);
  EXPECT_EQ(FromJsonString("{\"schema\": \"opscope.profile/1\", \"ops\": 5}", "t").status().code(),
            StatusCode::kDataLoss);
  Profile p = Sample();
  p.op_events.push_back({7, 0, 0, 0, 1});
  EXPECT_FALSE(Validate(p).ok());
  p = Sample();
  p.samples->samples[0].stack = {9};
  EXPECT_FALSE(Validate(p).ok());
  p = Sample();
  p.ops[1].name = "conv";
  EXPECT_FALSE(Validate(p).ok());
}

}  // namespace
}  // namespace opscope::profile
