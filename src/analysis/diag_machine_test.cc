#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "analysis/format.h"
#include "analysis/machine.h"
#include "analysis/machine_measure.h"
#include "analysis/rules.h"
#include "profile/profile_io.h"

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
  EXPECT_EQ(CeilingsFromJson("{\"schema\":\"other\"}", "m.json").status().code(),
            StatusCode::kUnsupported);
  EXPECT_EQ(CeilingsFromJson("{\"schema\":\"opscope.machine/1\",\"triad_gbps\":\"x\"}", "m.json")
                .status()
                .code(),
            StatusCode::kDataLoss);
  EXPECT_EQ(CeilingsFromJson("{\"schema\":\"opscope.machine/1\",\"triad_gbps\":-1}", "m.json")
                .status()
                .code(),
            StatusCode::kDataLoss);
}

TEST(DiagMachine, MetaRoundTripAndMismatch) {
  // The ceilings travel in the profile's JSON as a typed meta.machine object.
  profile::Profile p;
  p.meta.kind = "profile";
  p.meta.machine = Sample();
  auto back = profile::FromJsonString(profile::ToJsonString(p), "test");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_TRUE(back->meta.machine.has_value());
  EXPECT_NEAR(back->meta.machine->peak_gflops_one, 80.25, 1e-9);
  EXPECT_EQ(back->meta.machine->method, "measured");
  EXPECT_EQ(back->meta.machine->cpu_model, Sample().cpu_model);
  EXPECT_TRUE(back->meta.extra.empty());
  EXPECT_FALSE(profile::FromJsonString(profile::ToJsonString(profile::Profile{}), "test")
                   ->meta.machine.has_value());
  EXPECT_EQ(CeilingsMismatch(Sample(), "AMD EPYC 7B13"), "");
  EXPECT_NE(CeilingsMismatch(Sample(), "Cortex-A78AE").find("measured on 'AMD EPYC 7B13'"),
            std::string::npos);
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

MachineCeilings Stamped() {
  MachineCeilings c = Sample();
  c.cpu_flags = "avx2 fma sse2 sse4_2";
  c.cpus = 4;
  return c;
}

// A ceilings file written by the test, as `opscope machine` writes it.
std::string WriteCeilingsFile(const std::string& name, const std::string& json) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << json;
  return path;
}

TEST(DiagMachine, StampRoundTripsThroughTheFile) {
  auto back = CeilingsFromJson(CeilingsToJson(Stamped()), "x.json");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->cpu_flags, "avx2 fma sse2 sse4_2");
  EXPECT_EQ(back->cpus, 4);
  EXPECT_NE(CeilingsToJson(Stamped()).find("opscope.machine/2"), std::string::npos);
}

TEST(DiagMachine, RelevantFlagsAreFilteredAndSorted) {
  EXPECT_EQ(RelevantCpuFlags(" fpu vme fma sse2 avx2 ht avx512f sse2 rdrand"),
            "avx2 avx512f fma sse2");
  EXPECT_EQ(RelevantCpuFlags("fp asimd evtstrm aes asimddp sve"), "asimd asimddp sve");
  EXPECT_EQ(RelevantCpuFlags(""), "");
}

TEST(DiagMachine, StampedCeilingsAreRefusedOnAnotherCpu) {
  std::string f = WriteCeilingsFile("stamped_machine.json", CeilingsToJson(Stamped()));
  CpuStamp same{"AMD EPYC 7B13", "avx2 fma sse2 sse4_2", 4};
  auto ok = ResolveCeilings(f, 0, 0, &same);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ASSERT_TRUE(ok->has_value());
  EXPECT_EQ((*ok)->verification, "same CPU");

  CpuStamp other{"Intel Xeon Gold 6338", "avx2 avx512f fma sse2 sse4_2", 64};
  auto refused = ResolveCeilings(f, 0, 0, &other);
  ASSERT_FALSE(refused.ok());
  const std::string m = refused.status().message();
  EXPECT_NE(m.find(f), std::string::npos) << m;  // which file
  EXPECT_NE(m.find("measured on 'AMD EPYC 7B13' (4 CPUs, flags: avx2 fma sse2 sse4_2)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("this CPU is 'Intel Xeon Gold 6338' (64 CPUs"), std::string::npos) << m;
  EXPECT_NE(m.find("new here: avx512f"), std::string::npos) << m;
  EXPECT_NE(m.find("run `opscope machine` again"), std::string::npos) << m;

  // Same model name, but fewer CPUs (another VM size) or other ISA flags: still refused.
  CpuStamp smaller{"AMD EPYC 7B13", "avx2 fma sse2 sse4_2", 2};
  EXPECT_FALSE(ResolveCeilings(f, 0, 0, &smaller).ok());
  CpuStamp no_avx2{"AMD EPYC 7B13", "fma sse2 sse4_2", 4};
  auto r = ResolveCeilings(f, 0, 0, &no_avx2);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("missing here: avx2"), std::string::npos);
  // Both roofs by hand replace the file: nothing to refuse.
  EXPECT_TRUE(ResolveCeilings(f, 100, 10, &other).ok());
}

TEST(DiagMachine, UnstampedOldFileIsUsedButUnverified) {
  std::string f =
      WriteCeilingsFile("old_machine.json",
                        "{\"schema\": \"opscope.machine/1\", \"peak_gflops_all\": 21.7, "
                        "\"peak_gflops_one\": 20, \"triad_gbps\": 9, "
                        "\"cpu_model\": \"AMD EPYC\", \"method\": \"measured\"}");
  CpuStamp here{"Intel Xeon Gold 6338", "avx2 fma", 64};
  auto c = ResolveCeilings(f, 0, 0, &here);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_TRUE(c->has_value());
  EXPECT_EQ((*c)->peak_gflops_all, 21.7);
  EXPECT_EQ((*c)->verification.rfind("unverified: " + f, 0), 0u) << (*c)->verification;
  EXPECT_NE((*c)->verification.find("run `opscope machine` again"), std::string::npos);
  // The profile says so, in its metadata and in its degradations.
  profile::Profile p;
  p.meta.cpu_model = "AMD EPYC";
  Diagnose(&p, &**c);
  ASSERT_TRUE(p.meta.machine.has_value());
  EXPECT_EQ(p.meta.machine->verification, (*c)->verification);
  bool noted = false;
  for (const auto& d : p.meta.degradations) noted |= d.find("unverified") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(DiagMachine, NoisyMeasurementsAreNotStored) {
  MachineCeilings c = Stamped();
  c.repeats = 5;
  c.spread_pct = 2;
  c.spread_of = "peak float32, all cores";
  EXPECT_TRUE(CheckCeilingsStable(c).ok());
  c.spread_pct = 34;
  Status st = CheckCeilingsStable(c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("peak float32, all cores varied 34% between 5 repeats"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("quiet machine"), std::string::npos);
  // Stable but loaded throughout: the all-core peak cannot be below one core's.
  c.spread_pct = 1;
  c.peak_gflops_all = 21.7;
  c.peak_gflops_one = 60;
  st = CheckCeilingsStable(c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("all-core peak (21.7 GFLOP/s on 4 threads)"), std::string::npos)
      << st.message();
}

// The kernels run for real (short): the numbers must be positive and finite; no speed asserted.
TEST(DiagMachine, KernelsMeasureSomething) {
  double spread = -1;
  double g = MeasurePeakGflops(1, 0.01, 3, &spread);
  EXPECT_TRUE(std::isfinite(g));
  EXPECT_GE(spread, 0);
  EXPECT_LT(spread, 100);
  CpuStamp here = ThisCpuStamp();
  EXPECT_GT(here.cpus, 0);
  EXPECT_GT(g, 0.1);
  double bw = MeasureTriadGbps(4 << 20, 1, 0.01, 1);
  EXPECT_TRUE(std::isfinite(bw));
  EXPECT_GT(bw, 0.01);
  EXPECT_NE(FormatCeilings(Sample()).find("ridge 7.5 FLOP/B"), std::string::npos)
      << FormatCeilings(Sample());
}

}  // namespace
}  // namespace opscope::analysis
