#include "engine/memory_plan.h"

#include <gtest/gtest.h>

#include <random>

namespace opscope::engine {
namespace {

bool Overlap(const PlannedBuffer& a, const PlannedBuffer& b) {
  bool time = !(a.last_step < b.first_step || b.last_step < a.first_step);
  bool space = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
  return time && space;
}

TEST(MemoryPlanTest, ChainReusesMemory) {
  // A chain a->b->c->d: each buffer lives two steps; only two need to coexist.
  std::vector<PlannedBuffer> bufs = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  MemoryStats st = PlanArena(bufs);
  EXPECT_EQ(st.naive_bytes, 4u * 1024);
  EXPECT_EQ(st.arena_bytes, 2u * 1024);
  for (size_t i = 0; i < bufs.size(); ++i)
    for (size_t j = i + 1; j < bufs.size(); ++j)
      EXPECT_FALSE(Overlap(bufs[i], bufs[j])) << i << "," << j;
}

TEST(MemoryPlanTest, RandomLifetimesNeverOverlap) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<PlannedBuffer> bufs;
    for (int i = 0; i < 40; ++i) {
      int a = static_cast<int>(rng() % 30), len = static_cast<int>(rng() % 6);
      bufs.push_back({1 + rng() % 100000, a, a + len});
    }
    MemoryStats st = PlanArena(bufs);
    EXPECT_LE(st.arena_bytes, st.naive_bytes);
    for (size_t i = 0; i < bufs.size(); ++i) {
      EXPECT_EQ(bufs[i].offset % 64, 0u);
      EXPECT_LE(bufs[i].offset + bufs[i].bytes, st.arena_bytes);
      for (size_t j = i + 1; j < bufs.size(); ++j) ASSERT_FALSE(Overlap(bufs[i], bufs[j]));
    }
  }
}

}  // namespace
}  // namespace opscope::engine
