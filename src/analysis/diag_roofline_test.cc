#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "analysis/diag_test_util.h"
#include "analysis/format.h"
#include "analysis/machine_measure.h"
#include "analysis/roofline.h"
#include "analysis/rules.h"
#include "profile/profile_io.h"

namespace opscope::analysis {
namespace {

using testing::MakeOp;
using testing::MakeProfile;

MachineCeilings Ceilings() {
  MachineCeilings c;
  c.peak_gflops_all = 100;  // ridge = 100 / 10 = 10 FLOP/B
  c.peak_gflops_one = 40;
  c.triad_gbps = 10;
  c.llc_gbps = 50;
  c.threads = 2;
  c.cpu_model = "Test CPU";
  c.method = "manual";
  return c;
}

// One op per class, with numbers chosen so the expected values are easy to check by hand.
profile::Profile ClassesProfile() {
  return MakeProfile({
      // 8 GFLOP over 40 MB = 200 FLOP/B (compute side); 8e9 / 0.1 s = 80 GFLOP/s = 80% of peak.
      MakeOp("conv_big", "Conv", 100, 8e9, 40e6),
      // 10 MFLOP over 80 MB = 0.125 FLOP/B (memory side); 80 MB / 10 ms = 8 GB/s = 80% of bw.
      MakeOp("add_big", "Add", 10, 10e6, 80e6),
      // 1 kFLOP, 4 kB: ideal 0.4 us, takes 50 us: latency-bound.
      MakeOp("mul_tiny", "Mul", 0.05, 1e3, 4e3),
      // A Transpose moving 40 MB in 20 ms.
      MakeOp("transpose", "Transpose", 20, 0, 40e6),
      // No FLOPs/bytes and not data movement: no point.
      MakeOp("custom", "MyCustomOp", 1, 0, 0),
  });
}

TEST(DiagRoofline, ClassesAndNumbers) {
  auto points = ComputeRoofline(ClassesProfile(), Ceilings());
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[0].name, "conv_big");
  EXPECT_EQ(points[0].cls, BoundClass::kCompute);
  EXPECT_NEAR(points[0].intensity, 200, 1e-9);
  EXPECT_NEAR(points[0].achieved_gflops, 80, 1e-9);
  EXPECT_NEAR(points[0].attainable_gflops, 100, 1e-9);
  EXPECT_NEAR(points[0].pct_of_roof, 80, 1e-9);

  EXPECT_EQ(points[1].cls, BoundClass::kMemory);
  EXPECT_NEAR(points[1].intensity, 0.125, 1e-12);
  EXPECT_NEAR(points[1].attainable_gflops, 1.25, 1e-12);
  EXPECT_NEAR(points[1].achieved_gbps, 8, 1e-9);
  EXPECT_NEAR(points[1].pct_of_roof, 80, 1e-9);

  EXPECT_EQ(points[2].cls, BoundClass::kLatency);
  EXPECT_LT(points[2].pct_of_roof, kLatencyPctOfRoof);

  EXPECT_EQ(points[3].cls, BoundClass::kDataMovement);
  EXPECT_NEAR(points[3].achieved_gbps, 2, 1e-9);
  for (const auto& p : points) EXPECT_EQ(p.counter_confirmation, "no hardware counters");
}

// Diagnose stores each op's verdict in the profile, with its time at the roof: the JSON carries
// it (bound, intensity, pct_of_roof, expected_ms, ...) and reads it back; without ceilings, none.
TEST(DiagRoofline, DiagnoseStoresTheVerdictAndTheTimeAtTheRoofPerOp) {
  profile::Profile p = ClassesProfile();
  MachineCeilings c = Ceilings();
  Diagnose(&p, &c);
  ASSERT_TRUE(p.ops[0].roofline.has_value());
  const profile::OpRoofline& conv = *p.ops[0].roofline;
  EXPECT_EQ(conv.bound, BoundClass::kCompute);
  EXPECT_NEAR(conv.intensity, 200, 1e-9);
  EXPECT_NEAR(conv.pct_of_roof, 80, 1e-9);
  // 8 GFLOP at 100 GFLOP/s (40 MB at 10 GB/s is 4 ms): 80 ms, measured 100 ms.
  EXPECT_NEAR(conv.expected_ms, 80, 1e-9);
  EXPECT_NEAR(conv.measured_over_expected, 1.25, 1e-12);
  // 80 MB at 10 GB/s: 8 ms, measured 10 ms.
  ASSERT_TRUE(p.ops[1].roofline.has_value());
  EXPECT_EQ(p.ops[1].roofline->bound, BoundClass::kMemory);
  EXPECT_NEAR(p.ops[1].roofline->expected_ms, 8, 1e-9);
  EXPECT_NEAR(p.ops[1].roofline->measured_over_expected, 1.25, 1e-12);
  EXPECT_EQ(p.ops[2].roofline->bound, BoundClass::kLatency);
  EXPECT_EQ(p.ops[3].roofline->bound, BoundClass::kDataMovement);
  EXPECT_NEAR(p.ops[3].roofline->expected_ms, 4, 1e-9);  // 40 MB at 10 GB/s
  EXPECT_FALSE(p.ops[4].roofline.has_value()) << "no FLOPs, no bytes: no point";

  const std::string json = profile::ToJsonString(p);
  auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["ops"][0]["bound"], "compute-bound");
  EXPECT_NEAR(j["ops"][0]["expected_ms"].get<double>(), 80, 1e-9);
  EXPECT_EQ(j["ops"][1]["bound"], "memory-bound");
  EXPECT_FALSE(j["ops"][4].contains("bound"));
  auto back = profile::FromJsonString(json, "d.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_TRUE(back->ops[1].roofline.has_value());
  EXPECT_EQ(back->ops[1].roofline->bound, BoundClass::kMemory);
  EXPECT_NEAR(back->ops[1].roofline->pct_of_roof, 80, 1e-9);
  EXPECT_EQ(profile::ToJsonString(*back), json);

  // A bound class the schema does not have is refused, naming it.
  std::string bad = json;
  bad.replace(bad.find("\"compute-bound\""), 15, "\"cpu-bound\"");
  auto refused = profile::FromJsonString(bad, "d.json");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("unknown bound class 'cpu-bound'"), std::string::npos)
      << refused.status().message();

  // Diagnosed again without ceilings: the stored verdicts go.
  Diagnose(&p, nullptr);
  for (const auto& op : p.ops) EXPECT_FALSE(op.roofline.has_value()) << op.name;
}

// Renderers draw the stored verdicts: a profile that says op 0 is memory-bound (edited, or
// written by another opscope) is shown as it says, not recomputed.
TEST(DiagRoofline, RenderersShowTheStoredVerdict) {
  profile::Profile p = ClassesProfile();
  MachineCeilings c = Ceilings();
  Diagnose(&p, &c);
  p.ops[0].roofline->bound = BoundClass::kMemory;
  p.ops[0].roofline->pct_of_roof = 12.5;
  const auto shown = RooflineForDisplay(p, c);
  const auto computed = ComputeRoofline(p, c);
  ASSERT_FALSE(shown.empty());
  ASSERT_EQ(shown[0].op, 0);
  EXPECT_EQ(computed[0].cls, BoundClass::kCompute);
  EXPECT_EQ(shown[0].cls, BoundClass::kMemory);
  EXPECT_NEAR(shown[0].pct_of_roof, 12.5, 1e-12);
  const std::string table = FormatRoofline(shown, c, false, 10);
  const size_t row = table.find("conv_big");
  ASSERT_NE(row, std::string::npos) << table;
  const std::string line = table.substr(row, table.find('\n', row) - row);
  EXPECT_NE(line.find("memory"), std::string::npos) << line;
  EXPECT_EQ(line.find("compute"), std::string::npos) << line;
  // Without stored verdicts the computed ones are shown.
  for (auto& op : p.ops) op.roofline.reset();
  EXPECT_EQ(RooflineForDisplay(p, c)[0].cls, BoundClass::kCompute);
}

TEST(DiagRoofline, SingleThreadUsesOneCorePeak) {
  profile::Profile p = ClassesProfile();
  p.meta.threads = 1;
  auto points = ComputeRoofline(p, Ceilings());
  EXPECT_NEAR(points[0].attainable_gflops, 40, 1e-9);
  EXPECT_NEAR(points[0].pct_of_roof, 200, 1e-9);  // faster than the stated one-core roof: says so
}

TEST(DiagRoofline, SlowBigKernelIsNotLatencyBound) {
  // 8 GFLOP taking 10 s: 0.8% of peak, but its ideal time is 80 ms: a bad kernel, not overhead.
  auto points =
      ComputeRoofline(MakeProfile({MakeOp("slow_conv", "Conv", 10000, 8e9, 40e6)}), Ceilings());
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].cls, BoundClass::kCompute);
}

TEST(DiagRoofline, WithoutCeilingsOnlyDataMovementIsClassified) {
  auto points = ComputeRoofline(ClassesProfile(), MachineCeilings{});
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[0].cls, BoundClass::kUnknown);
  EXPECT_EQ(points[3].cls, BoundClass::kDataMovement);
}

TEST(DiagRoofline, CountersConfirmOrContradict) {
  std::map<std::string, double> mem = {
      {"instructions", 1e9}, {"cycles", 2e9}, {"cache-misses", 2e7}};
  EXPECT_TRUE(CounterConfirmation(mem, BoundClass::kMemory).starts_with("confirmed"));
  EXPECT_TRUE(CounterConfirmation(mem, BoundClass::kCompute).starts_with("contradicted"));
  std::map<std::string, double> cpu = {
      {"instructions", 3e9}, {"cycles", 1e9}, {"cache-misses", 1e5}};
  EXPECT_TRUE(CounterConfirmation(cpu, BoundClass::kCompute).starts_with("confirmed"));
  EXPECT_TRUE(CounterConfirmation(cpu, BoundClass::kMemory).starts_with("contradicted"));
  std::map<std::string, double> mid = {{"ipc", 1.5}};
  EXPECT_TRUE(CounterConfirmation(mid, BoundClass::kMemory).starts_with("inconclusive"));
  EXPECT_EQ(CounterConfirmation({{"task-clock", 3}}, BoundClass::kMemory), "no hardware counters");
}

TEST(DiagRoofline, MemoryBoundConfirmedByCountersInPoint) {
  profile::Profile p = ClassesProfile();
  p.ops[1].counters = {{"instructions", 1e7}, {"cycles", 4e7}, {"LLC-load-misses", 1e6}};
  auto points = ComputeRoofline(p, Ceilings());
  EXPECT_TRUE(points[1].counter_confirmation.starts_with("confirmed"))
      << points[1].counter_confirmation;
}

TEST(DiagRoofline, DataMovementList) {
  for (const char* t : {"Reshape", "Transpose", "Concat", "Slice", "Gather", "GatherND", "Split",
                        "Squeeze", "Unsqueeze", "Flatten", "Expand", "Tile", "Pad", "Identity",
                        "Cast", "DepthToSpace", "SpaceToDepth", "ScatterND"})
    EXPECT_TRUE(IsDataMovementOp(t)) << t;
  for (const char* t : {"Conv", "MatMul", "Add", "Resize", "Softmax", ""})
    EXPECT_FALSE(IsDataMovementOp(t)) << t;
}

TEST(DiagRoofline, GoldenTable) {
  auto points = ComputeRoofline(ClassesProfile(), Ceilings());
  testing::ExpectGolden("roofline_classes.ceil100-10.txt",
                        FormatRoofline(points, Ceilings(), false));
}

// Ceilings measured under load (21.7 GFLOP/s on a CPU that does ~200), written to a file by
// the test and read back as a command would: an op at 150 GFLOP/s is above the compute roof, so
// the roofline table and the findings say the ceilings are wrong.
TEST(DiagRoofline, OpsAboveTheCeilingsAreFlagged) {
  MachineCeilings loaded;
  loaded.peak_gflops_all = loaded.peak_gflops_one = 21.7;
  loaded.triad_gbps = 10;
  loaded.llc_gbps = 50;
  loaded.llc_bytes = 32 << 20;
  loaded.threads = 2;
  loaded.cpu_model = "AMD EPYC";
  loaded.method = "measured";
  loaded.measured_at = "2026-11-30T10:00:00Z";
  std::string f = ::testing::TempDir() + "/loaded_machine.json";
  ASSERT_TRUE(SaveMachineFile(loaded, f).ok());
  auto c = LoadMachineFile(f);
  ASSERT_TRUE(c.ok()) << c.status().message();

  profile::Profile p = MakeProfile({
      // 15 GFLOP in 100 ms = 150 GFLOP/s: 7x the stored peak.
      MakeOp("conv_fast", "Conv", 100, 15e9, 40e6),
      // 200 MB (more than the 32 MiB LLC) in 10 ms = 20 GB/s: 2x the DRAM roof.
      MakeOp("add_dram", "Add", 10, 50e6, 200e6),
      // 16 MB (fits in the LLC) in 1 ms = 16 GB/s: above DRAM but served from cache: fine.
      MakeOp("add_llc", "Add", 1, 4e6, 16e6),
      // 1 GFLOP in 100 ms = 10 GFLOP/s, under the roof: fine.
      MakeOp("conv_slow", "Conv", 100, 1e9, 4e6),
  });
  auto points = ComputeRoofline(p, *c);
  ASSERT_EQ(points.size(), 4u);
  EXPECT_NE(points[0].above_roof.find("150.0 GFLOP/s, above the compute roof of 21.7"),
            std::string::npos)
      << points[0].above_roof;
  EXPECT_NE(points[1].above_roof.find("above the memory roof of 10.0 GB/s"), std::string::npos)
      << points[1].above_roof;
  EXPECT_EQ(points[2].above_roof, "");
  EXPECT_EQ(points[3].above_roof, "");

  std::string table = FormatRoofline(points, *c, false, 10);
  EXPECT_NE(table.find("! 2 op(s) run above the machine ceilings"), std::string::npos) << table;
  EXPECT_NE(table.find("%! compute-bound"), std::string::npos) << table;

  Diagnose(&p, &*c);
  const profile::Finding* found = nullptr;
  for (const auto& x : p.findings)
    if (x.rule == "ceilings-exceeded") found = &x;
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->severity, profile::Severity::kWarning);
  EXPECT_EQ(found->ops, (std::vector<std::string>{"conv_fast", "add_dram"}));
  EXPECT_NE(found->suggestion.find("opscope machine"), std::string::npos);
}

// A fused post-op's time is a slice of its step's measured time, split by estimated cost: its
// own rate proves nothing (the demo's fused Relu showed 237 GFLOP/s against a 205 GFLOP/s peak).
// Only the step as a whole is judged, once, on its first node.
TEST(DiagRoofline, FusedNodesAreJudgedByTheirStepAsAWhole) {
  MachineCeilings c = Ceilings();
  const double peak = c.PeakGflops(2);
  auto fused = [](profile::OpRecord op, const std::string& step) {
    op.status = profile::OpStatus::kFused;
    op.step = step;
    return op;
  };
  profile::Profile p = MakeProfile({
      // Step 'ok': 0.5 x peak as a whole, its Relu's slice at 10 x peak.
      fused(MakeOp("conv", "Conv", 10, peak * 1e9 * 0.010 * 0.5, 1e6), "ok"),
      fused(MakeOp("conv.relu", "Relu", 0.001, peak * 1e9 * 0.00001, 1e6), "ok"),
      // Step 'fast': 3 x peak as a whole.
      fused(MakeOp("conv2", "Conv", 1, peak * 1e9 * 0.001 * 3, 1e6), "fast"),
      fused(MakeOp("conv2.relu", "Relu", 0.001, 1e3, 1e6), "fast"),
  });
  p.meta.threads = 2;
  auto points = ComputeRoofline(p, c);
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[0].above_roof, "");
  EXPECT_EQ(points[1].above_roof, "") << "an estimated slice is no evidence";
  EXPECT_NE(points[2].above_roof.find("its fused step 'fast' as a whole"), std::string::npos)
      << points[2].above_roof;
  EXPECT_EQ(points[3].above_roof, "") << "the step is reported once";
}

TEST(DiagRoofline, NothingAboveSaneCeilings) {
  auto points = ComputeRoofline(ClassesProfile(), Ceilings());
  for (const auto& pt : points) EXPECT_EQ(pt.above_roof, "") << pt.name;
  EXPECT_EQ(FormatRoofline(points, Ceilings(), false, 10).find("above the machine ceilings"),
            std::string::npos);
}

}  // namespace
}  // namespace opscope::analysis

namespace opscope::analysis {
namespace {

// A quantized Conv is placed against the int8 roof with its integer ops, not against the float
// peak with zero FLOPs.
TEST(DiagRoofline, Int8OpsUseTheIntegerCeiling) {
  MachineCeilings c;
  c.peak_gflops_all = c.peak_gflops_one = 100;
  c.peak_gops_int8_all = c.peak_gops_int8_one = 400;  // ridge 40 op/B
  c.triad_gbps = 10;
  c.threads = 2;
  c.method = "manual";
  // 30 G int ops over 100 MB = 300 op/B; 30e9 / 0.1 s = 300 GOP/s = 75% of the int8 peak (it
  // would be "above the roof" against the float peak).
  profile::OpRecord op = testing::MakeOp("qconv", "ConvInteger", 100, 0, 100e6);
  op.int_ops = 30e9;
  auto points = ComputeRoofline(testing::MakeProfile({op}), c);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].cls, BoundClass::kCompute);
  EXPECT_NEAR(points[0].pct_of_roof, 75, 1e-6);
  EXPECT_NEAR(points[0].intensity, 300, 1e-6);
  EXPECT_TRUE(points[0].above_roof.empty()) << points[0].above_roof;
  EXPECT_NE(points[0].reason.find("GOP/s"), std::string::npos) << points[0].reason;
  EXPECT_NE(points[0].reason.find("int8 peak"), std::string::npos) << points[0].reason;
  // Without an int8 ceiling: the float peak, said so.
  c.peak_gops_int8_all = c.peak_gops_int8_one = 0;
  points = ComputeRoofline(testing::MakeProfile({op}), c);
  EXPECT_NE(points[0].reason.find("no int8 ceiling"), std::string::npos) << points[0].reason;
}

TEST(DiagMachine, Int8CeilingRoundTripsAndIsMeasured) {
  MachineCeilings c;
  c.peak_gflops_all = 10;
  c.peak_gops_int8_all = 123.5;
  c.peak_gops_int8_one = 61.25;
  c.triad_gbps = 5;
  auto back = CeilingsFromJson(CeilingsToJson(c), "test");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->peak_gops_int8_all, 123.5);
  EXPECT_EQ(back->PeakGopsInt8(1), 61.25);
  profile::Profile p;
  p.meta.machine = c;
  auto m = profile::FromJsonString(profile::ToJsonString(p), "test");
  ASSERT_TRUE(m.ok() && m->meta.machine.has_value());
  EXPECT_EQ(m->meta.machine->peak_gops_int8_all, 123.5);
  // A file without the field (written before it existed) reads as 0 = unknown.
  auto old = CeilingsFromJson(
      "{\"schema\": \"opscope.machine/2\", \"peak_gflops_all\": 3, "
      "\"triad_gbps\": 2}",
      "old");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->PeakGopsInt8(2), 0);
  // The measurement itself: short, but positive and finite.
  const double g = MeasurePeakGopsInt8(1, 0.02, 2);
  EXPECT_GT(g, 0);
  EXPECT_TRUE(std::isfinite(g));
}

}  // namespace
}  // namespace opscope::analysis
