#include "collect/sampler_ops.h"

#include <gtest/gtest.h>

namespace opscope::collect {
namespace {

profile::Profile TwoOps() {
  profile::Profile p;
  p.ops.resize(3);
  p.ops[0].name = "conv";
  p.ops[1].name = "relu";
  p.ops[2].name = "branch";
  // Run 0: conv [100, 200) on tid 1, relu [200, 250) on tid 1; a parallel branch [120, 180) on
  // tid 2.
  p.op_events = {{0, 0, 1, 100, 100}, {1, 0, 1, 200, 50}, {2, 0, 2, 120, 60}};
  p.samples.emplace();
  auto add = [&](int32_t tid, int64_t t) {
    profile::Sample s;
    s.tid = tid;
    s.time_ns = t;
    p.samples->samples.push_back(s);
  };
  add(1, 150);  // conv (own thread)
  add(2, 150);  // branch (own thread wins over conv)
  add(3, 150);  // pool thread: innermost = latest start = branch
  add(3, 110);  // pool thread during conv only
  add(1, 225);  // relu
  add(1, 250);  // end is exclusive: outside
  add(1, 50);   // before everything
  return p;
}

TEST(AttributeSamplesToOps, ByTimeIntervalPreferringTheSamplesThread) {
  profile::Profile p = TwoOps();
  AttributionStats st = AttributeSamplesToOps(p);
  std::vector<int32_t> ops;
  for (const auto& s : p.samples->samples) ops.push_back(s.op);
  EXPECT_EQ(ops, (std::vector<int32_t>{0, 2, 2, 0, 1, -1, -1}));
  EXPECT_EQ(st.attributed, 5u);
  EXPECT_EQ(st.outside, 2u);
  EXPECT_TRUE(profile::Validate(p).ok());
}

TEST(AttributeSamplesToOps, NoEventsOrNoSamples) {
  profile::Profile p = TwoOps();
  p.op_events.clear();
  EXPECT_EQ(AttributeSamplesToOps(p).attributed, 0u);
  profile::Profile q;
  EXPECT_EQ(AttributeSamplesToOps(q).attributed, 0u);
}

}  // namespace
}  // namespace opscope::collect
