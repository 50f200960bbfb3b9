#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>

#include "analysis/format.h"
#include "analysis/machine.h"
#include "analysis/machine_measure.h"

namespace opscope::analysis {
namespace {

MachineCeilings Sample() {
  MachineCeilings c;
  c.peak_gflops_all = 150.5;
  c.peak_gflops_one = 80.25;
  c.triad_gbps = 20.125;
  c.llc_gbps = 90;
  c.llc_bytes = 32 << 20;
  c.threads = 4;
  c.cpu_model = "AMD EPYC 7B13";
  c.measured_at = "2026-11-29T15:00:00Z";
  c.method = "measured";
  return c;
}

TEST(DiagMachine, JsonRoundTrip) {
  auto back = CeilingsFromJson(CeilingsToJson(Sample()), "x.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->peak_gflops_all, 150.5);
  EXPECT_EQ(back->triad_gbps, 20.125);
  EXPECT_EQ(back->cpu_model, "AMD EPYC 7B13");
  EXPECT_EQ(back->threads, 4);
}

TEST(DiagMachine, BadJson) {
  EXPECT_EQ(CeilingsFromJson("{", "m.json").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(CeilingsFromJson("{\"schema\":\"other\"}", "m.json").status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(CeilingsFromJson("{\"schema\":\"opscope.machine/1\",\"triad_gbps\":\"x\"}", "m.json").status().code(),
            StatusCode::kDataLoss);
  EXPECT_EQ(CeilingsFromJson("{\"schema\":\"opscope.machine/1\",\"triad_gbps\":-1}", "m.json").status().code(),
            StatusCode::kDataLoss);
}

TEST(DiagMachine, MetaRoundTripAndMismatch) {
  profile::Meta m;
  CeilingsToMeta(Sample(), &m);
  auto back = CeilingsFromMeta(m);
  ASSERT_TRUE(back.has_value());
  EXPECT_NEAR(back->peak_gflops_one, 80.25, 1e-9);
  EXPECT_EQ(back->method, "measured");
  EXPECT_FALSE(CeilingsFromMeta(profile::Meta{}).has_value());
  EXPECT_EQ(CeilingsMismatch(Sample(), "AMD EPYC 7B13"), "");
  EXPECT_NE(CeilingsMismatch(Sample(), "Cortex-A78AE").find("measured on 'AMD EPYC 7B13'"), std::string::npos);
  EXPECT_EQ(Sample().PeakGflops(1), 80.25);
  EXPECT_EQ(Sample().PeakGflops(4), 150.5);
}

TEST(DiagMachine, ResolveCeilingsByHandAndFromFile) {
  std::string dir = ::testing::TempDir() + "/diag_machine_cfg";
  setenv("XDG_CONFIG_HOME", dir.c_str(), 1);
  unlink((dir + "/opscope/machine.json").c_str());
  auto none = ResolveCeilings("", 0, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto half = ResolveCeilings("", 100, 0);
  EXPECT_EQ(half.status().code(), StatusCode::kInvalidArgument);
  auto manual = ResolveCeilings("", 100, 10);
  ASSERT_TRUE(manual.ok());
  EXPECT_EQ((*manual)->method, "manual");
  ASSERT_TRUE(SaveMachineFile(Sample(), DefaultMachineFile()).ok());
  auto stored = ResolveCeilings("", 0, 12);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->triad_gbps, 12);
  EXPECT_EQ((*stored)->peak_gflops_all, 150.5);
  EXPECT_EQ((*stored)->method, "measured+manual");
  EXPECT_EQ(ResolveCeilings(dir + "/missing.json", 0, 0).status().code(), StatusCode::kNotFound);
  unsetenv("XDG_CONFIG_HOME");
}

// The kernels run for real (short): the numbers must be positive and finite; no speed asserted.
TEST(DiagMachine, KernelsMeasureSomething) {
  double g = MeasurePeakGflops(1, 0.01, 1);
  EXPECT_TRUE(std::isfinite(g));
  EXPECT_GT(g, 0.1);
  double bw = MeasureTriadGbps(4 << 20, 1, 0.01, 1);
  EXPECT_TRUE(std::isfinite(bw));
  EXPECT_GT(bw, 0.01);
  EXPECT_NE(FormatCeilings(Sample()).find("ridge 7.5 FLOP/B"), std::string::npos) << FormatCeilings(Sample());
}

}  // namespace
}  // namespace opscope::analysis
