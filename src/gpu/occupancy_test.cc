#include "gpu/occupancy.h"

#include <gtest/gtest.h>

namespace opscope::gpu {
namespace {

SmLimits Cc(int major, int minor) {
  auto l = LimitsForComputeCapability(major, minor);
  EXPECT_TRUE(l.has_value()) << major << "." << minor;
  return l.value_or(SmLimits{});
}

// Expected values worked out by hand from the per-SM limits (and agreeing with NVIDIA's
// occupancy calculator for the same inputs).
TEST(OccupancyTest, FullWhenNothingLimits) {
  Occupancy o = TheoreticalOccupancy(Cc(8, 0), 256, 32, 0);
  EXPECT_EQ(o.active_blocks, 8);
  EXPECT_DOUBLE_EQ(o.fraction, 1.0);
  EXPECT_EQ(o.limiter, kLimitWarps);
}

TEST(OccupancyTest, RegistersLimit) {
  // 64 regs x 32 threads = 2048 per warp; 16384 per partition -> 8 warps x 4 = 32 warps = 4 blocks.
  Occupancy o = TheoreticalOccupancy(Cc(8, 0), 256, 64, 0);
  EXPECT_EQ(o.active_blocks, 4);
  EXPECT_DOUBLE_EQ(o.fraction, 0.5);
  EXPECT_EQ(o.limiter, kLimitRegisters);
  // 255 registers round up to 8192 per warp: 2 warps per partition -> 8 warps -> 1 block of 8.
  o = TheoreticalOccupancy(Cc(8, 0), 256, 255, 0);
  EXPECT_EQ(o.active_blocks, 1);
  EXPECT_DOUBLE_EQ(o.fraction, 8.0 / 64);
}

TEST(OccupancyTest, SharedMemoryLimitIncludesReservedBytes) {
  // 48 KiB + 1 KiB reserved per block; 164 KiB per SM -> 3 blocks of 8 warps.
  Occupancy o = TheoreticalOccupancy(Cc(8, 0), 256, 32, 48 * 1024);
  EXPECT_EQ(o.active_blocks, 3);
  EXPECT_DOUBLE_EQ(o.fraction, 24.0 / 64);
  EXPECT_EQ(o.limiter, kLimitSharedMemory);
}

TEST(OccupancyTest, BlocksPerSmLimitSmallBlocks) {
  // 32-thread blocks on Orin (8.7): 16 blocks x 1 warp of 48.
  Occupancy o = TheoreticalOccupancy(Cc(8, 7), 32, 16, 0);
  EXPECT_EQ(o.active_blocks, 16);
  EXPECT_DOUBLE_EQ(o.fraction, 16.0 / 48);
  EXPECT_EQ(o.limiter, kLimitBlocks);
}

TEST(OccupancyTest, LargeBlocksOnSmallerSms) {
  EXPECT_DOUBLE_EQ(TheoreticalOccupancy(Cc(8, 6), 1024, 16, 0).fraction, 32.0 / 48);
  EXPECT_DOUBLE_EQ(TheoreticalOccupancy(Cc(7, 5), 1024, 16, 0).fraction, 1.0);
  // Odd block size: 100 threads = 4 warps.
  EXPECT_EQ(TheoreticalOccupancy(Cc(9, 0), 100, 32, 0).active_blocks, 16);
}

// A warp size read from a trace file can be anything: 2^31 - 1 made the warp count's rounding
// overflow int (UBSan, found by gpu_decoder_fuzz after 6.4 M executions). One warp per block
// then, and no overflow anywhere.
TEST(OccupancyTest, HugeWarpSizeFromATraceFileDoesNotOverflow) {
  SmLimits sm = Cc(8, 0);
  sm.warp_size = 2147483647;
  Occupancy o = TheoreticalOccupancy(sm, 1048576, 32, 0);
  EXPECT_EQ(o.active_blocks, 0);  // one warp of 2^31 - 1 threads needs too many registers
  EXPECT_EQ(o.limiter, kLimitRegisters);
  o = TheoreticalOccupancy(sm, 2147483647, 0, 0);
  EXPECT_EQ(o.active_blocks, 32);  // registers unknown: the blocks-per-SM limit
  EXPECT_DOUBLE_EQ(o.fraction, 32.0 / 64);
}

TEST(OccupancyTest, UnknownOrImpossible) {
  EXPECT_FALSE(LimitsForComputeCapability(3, 5).has_value());
  EXPECT_EQ(TheoreticalOccupancy(Cc(7, 5), 2048, 16, 0).fraction, 0.0);  // block too large
  EXPECT_EQ(TheoreticalOccupancy(Cc(8, 0), 0, 16, 0).fraction, 0.0);
  EXPECT_EQ(TheoreticalOccupancy(SmLimits{}, 128, 16, 0).fraction, 0.0);
}

}  // namespace
}  // namespace opscope::gpu
