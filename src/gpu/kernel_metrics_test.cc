// `opscope gpu --metrics` without a GPU: traces forged with the tracer's metric records (values
// shaped like what Nsight Compute reports for such kernels on an H100/H200, not a recording)
// through the decoder, the Profile builder, the classification, the summary, the rule and the
// report.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "analysis/gpu_summary.h"
#include "analysis/rules.h"
#include "base/testing/golden.h"
#include "gpu/builder.h"
#include "gpu/decoder.h"
#include "gpu/trace_forge_test_util.h"
#include "profile/gpu_kernel_bound.h"
#include "profile/profile_json.h"
#include "report/gpu_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace opscope::gpu {
namespace {

using profile::ClassifyKernelBound;
using profile::LowAchievedOccupancy;
using testing::ForgeWarStory;
using testing::kWarStoryAttention;
using testing::TraceForge;
constexpr uint32_t kTid = 77;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const char* kAttention = kWarStoryAttention;

TraceForge WarStory() { return ForgeWarStory(kTid); }

profile::Profile Build(const std::string& bytes) {
  auto t = DecodeTrace(bytes, "war.trace");
  EXPECT_TRUE(t.ok()) << t.status().message();
  profile::Profile p;
  p.meta.kind = "gpu";
  p.meta.source = "war_story";
  if (t.ok()) AddTraceToProfile(*t, &p);
  return p;
}

const profile::GpuKernel* FirstNamed(const profile::Profile& p, const std::string& prefix) {
  for (const auto& k : p.gpu->kernels)
    if (k.name.rfind(prefix, 0) == 0) return &k;
  return nullptr;
}

std::vector<profile::Finding> BoundFindings(const profile::Profile& p) {
  std::vector<profile::Finding> out;
  for (const analysis::Rule* rule : analysis::AllRules())
    if (std::string(rule->id) == "gpu-kernel-bound")
      rule->apply(analysis::RuleContext{p, nullptr, {}}, &out);
  return out;
}

bool HasDegradation(const profile::Profile& p, const std::string& part) {
  for (const auto& d : p.meta.degradations)
    if (d.find(part) != std::string::npos) return true;
  return false;
}

TEST(KernelBoundTest, SpeedOfLightThresholds) {
  EXPECT_EQ(ClassifyKernelBound(60, 59.9, -1), "compute");
  EXPECT_EQ(ClassifyKernelBound(60, 60, -1), "compute");  // a tie at the line counts as compute
  EXPECT_EQ(ClassifyKernelBound(59.9, 60, -1), "memory");
  EXPECT_EQ(ClassifyKernelBound(95, 97, 20), "memory");
  EXPECT_EQ(ClassifyKernelBound(59.9, 59.9, 99), "latency");  // memory % wins over DRAM %
  EXPECT_EQ(ClassifyKernelBound(30, -1, 75), "memory");       // DRAM when memory is unknown
  EXPECT_EQ(ClassifyKernelBound(0, 0, 0), "latency");
  EXPECT_EQ(ClassifyKernelBound(-1, 80, 80), "");
  EXPECT_EQ(ClassifyKernelBound(kNaN, 80, 80), "");
  EXPECT_EQ(ClassifyKernelBound(80, kNaN, kNaN), "");
  EXPECT_TRUE(LowAchievedOccupancy(24.9));
  EXPECT_FALSE(LowAchievedOccupancy(25));
  EXPECT_FALSE(LowAchievedOccupancy(-1));
}

TEST(KernelMetricsTraceTest, DecodesMetricRecords) {
  auto t = DecodeTrace(WarStory().bytes(), "x");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->version, trace::kVersion);
  ASSERT_EQ(t->metrics_configs.size(), 1u);
  EXPECT_EQ(t->metrics_configs[0].passes, 5u);
  EXPECT_EQ(t->metrics_chips[0], "GH100");
  ASSERT_EQ(t->kernel_metrics.size(), 9u);
  EXPECT_EQ(t->kernel_metrics[0].correlation, 2u);
  EXPECT_DOUBLE_EQ(t->kernel_metrics[0].memory_throughput_pct, 87.0);
  EXPECT_EQ(t->kernel_metrics_ranges[0], kAttention);
  EXPECT_EQ(t->kernel_metrics_ranges[2], "2");
  EXPECT_TRUE(std::isnan(t->kernel_metrics[2].dram_throughput_pct));
}

TEST(KernelMetricsTraceTest, OlderTracesStillDecodeNewerAreRefused) {
  TraceForge v1;
  v1.SetVersion(1);
  v1.Api("cudaLaunchKernel", 10, 20, kTid, 1);
  v1.Kernel("k", 30, 40, 1);
  v1.End();
  auto t = DecodeTrace(v1.bytes(), "old.trace");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->version, 1u);
  EXPECT_EQ(t->kernels.size(), 1u);
  EXPECT_TRUE(t->kernel_metrics.empty());
  profile::Profile p = Build(v1.bytes());
  EXPECT_EQ(p.gpu->metrics_passes, 0);
  EXPECT_EQ(p.gpu->kernels[0].bound, "");
  EXPECT_EQ(p.gpu->kernels[0].sm_throughput_pct, -1);

  TraceForge future;
  future.SetVersion(trace::kVersion + 1);
  auto refused = DecodeTrace(future.bytes(), "new.trace");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("reads versions 1 to 2"), std::string::npos)
      << refused.status().message();
}

TEST(KernelMetricsTraceTest, JoinsMetricsToKernelsAndClassifies) {
  profile::Profile p = Build(WarStory().bytes());
  ASSERT_TRUE(profile::Validate(p).ok()) << profile::Validate(p).message();
  EXPECT_EQ(p.gpu->metrics_passes, 5);
  ASSERT_EQ(p.gpu->kernels.size(), 9u);
  for (const auto& k : p.gpu->kernels) EXPECT_NE(k.bound, "") << k.name;

  const profile::GpuKernel* attn = FirstNamed(p, "attn_scores");
  ASSERT_NE(attn, nullptr);
  EXPECT_EQ(attn->bound, "memory");
  EXPECT_DOUBLE_EQ(attn->sm_throughput_pct, 22.5);
  EXPECT_DOUBLE_EQ(attn->dram_throughput_pct, 85.5);
  EXPECT_DOUBLE_EQ(attn->achieved_occupancy_pct, 70.0);
  EXPECT_DOUBLE_EQ(attn->metrics_duration_ns, 2'000'000);
  ASSERT_GE(attn->range, 0);
  EXPECT_EQ(p.ranges[attn->range].name, "attention");

  const profile::GpuKernel* gemm = FirstNamed(p, "sgemm_tiled");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->bound, "compute");
  EXPECT_EQ(gemm->registers_per_thread, 64);
  EXPECT_EQ(gemm->static_shared_bytes, 32768);

  const profile::GpuKernel* bias = FirstNamed(p, "bias_small");
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(bias->bound, "latency");
  EXPECT_EQ(bias->dram_throughput_pct, -1);  // NaN from CUPTI: unknown
  EXPECT_TRUE(HasDegradation(p, "--metrics replayed every kernel 5 time(s)"));
  EXPECT_FALSE(HasDegradation(p, "matched no kernel"));
  EXPECT_FALSE(HasDegradation(p, "name another kernel"));
}

TEST(KernelMetricsTraceTest, UnmatchedAndMisnamedMetricsAreSaid) {
  TraceForge f;
  f.MetricsConfig(3);
  f.Api("cudaLaunchKernel", 10, 20, kTid, 1);
  f.Kernel("_Z4realPf", 30, 40, 1);
  f.Api("cudaLaunchKernel", 50, 60, kTid, 2);
  f.Kernel("_Z5otherPf", 70, 80, 2);
  f.KernelMetrics(1, "neighbour_kernel", 70, 10, 10, 50, 10);  // CUPTI's range names another kernel
  f.KernelMetrics(0, "", 10, 70, 70, 50, 10);                  // the tracer could not pair it
  f.KernelMetrics(99, "", 10, 70, 70, 50, 10);                 // no such launch
  f.End();
  profile::Profile p = Build(f.bytes());
  EXPECT_TRUE(HasDegradation(p, "2 of 3 kernel metric records matched no kernel"))
      << p.meta.degradations.size();
  EXPECT_TRUE(HasDegradation(p, "1 kernel metric records name another kernel"));
  EXPECT_EQ(FirstNamed(p, "real")->bound, "compute");  // joined all the same, with the warning
  EXPECT_EQ(FirstNamed(p, "other")->bound, "");
}

TEST(KernelMetricsTraceTest, ThroughputRowsAverageByReplayedDuration) {
  profile::Profile p;
  p.meta.kind = "gpu";
  p.gpu.emplace();
  auto add = [&](const std::string& name, double sm, double mem, double occ, double ns) {
    profile::GpuKernel k;
    k.name = name;
    k.sm_throughput_pct = sm;
    k.memory_throughput_pct = mem;
    k.achieved_occupancy_pct = occ;
    k.metrics_duration_ns = ns;
    k.bound = ClassifyKernelBound(sm, mem, -1);
    p.gpu->kernels.push_back(k);
  };
  add("a", 90, 10, 50, 3000);  // compute
  add("a", 10, 50, 10, 1000);  // latency: weighted together, 70 / 20 / 40
  add("b", 5, 70, 20, 1000);
  add("unmeasured", -1, -1, -1, -1);
  p.gpu->kernels.back().bound = "";
  analysis::GpuSummary s = analysis::Summarize(p);
  ASSERT_EQ(s.throughput.size(), 2u);
  const analysis::KernelThroughputRow& a = s.throughput[0];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.launches, 2);
  EXPECT_DOUBLE_EQ(a.sm_pct, 70);
  EXPECT_DOUBLE_EQ(a.memory_pct, 20);
  EXPECT_DOUBLE_EQ(a.achieved_occupancy_pct, 40);
  EXPECT_DOUBLE_EQ(a.pct, 80);
  EXPECT_EQ(a.bound, "compute");
  EXPECT_EQ(a.dram_pct, -1);
  EXPECT_EQ(s.throughput[1].bound, "memory");
  EXPECT_FALSE(s.throughput[1].low_occupancy);
}

TEST(KernelMetricsTraceTest, RuleGroupsHotKernelsByBound) {
  profile::Profile p = Build(WarStory().bytes());
  std::vector<profile::Finding> f = BoundFindings(p);
  ASSERT_EQ(f.size(), 2u);  // bias_small is under 5% of the measured time: no finding of its own
  EXPECT_NE(f[0].title.find("1 memory-bound GPU kernel(s) take 39.9%"), std::string::npos)
      << f[0].title;
  EXPECT_EQ(f[0].severity, profile::Severity::kWarning);
  EXPECT_EQ(f[0].ops, std::vector<std::string>{
                          "attn_scores(__half const*, __half const*, float*, int, int, int)"});
  EXPECT_NE(f[1].title.find("1 compute-bound GPU kernel(s) take 59.9%"), std::string::npos)
      << f[1].title;
  EXPECT_EQ(f[1].severity, profile::Severity::kInfo);

  // Make the tiny kernel hot: a latency-bound finding that blames occupancy.
  for (auto& k : p.gpu->kernels)
    if (k.bound == "latency") k.metrics_duration_ns = 5'000'000;
  f = BoundFindings(p);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_NE(f[1].title.find("latency-bound"), std::string::npos) << f[1].title;
  EXPECT_NE(f[1].title.find("(low achieved occupancy)"), std::string::npos);
  EXPECT_NE(f[1].suggestion.find("raise occupancy"), std::string::npos);
  EXPECT_EQ(f[1].numbers.at("low_occupancy"), 1);

  p.gpu->kernels.clear();  // no metrics: silent
  EXPECT_TRUE(BoundFindings(p).empty());
}

TEST(KernelMetricsTraceTest, JsonKeepsTheFieldsAndOldProfilesLoad) {
  profile::Profile p = Build(WarStory().bytes());
  nlohmann::json j = *p.gpu;
  EXPECT_EQ(j["metrics_passes"], 5);
  profile::GpuSection back = j.get<profile::GpuSection>();
  ASSERT_EQ(back.kernels.size(), p.gpu->kernels.size());
  EXPECT_EQ(back.metrics_passes, 5);
  EXPECT_EQ(back.kernels[0].bound, p.gpu->kernels[0].bound);
  EXPECT_DOUBLE_EQ(back.kernels[0].memory_throughput_pct, p.gpu->kernels[0].memory_throughput_pct);
  // A profile written before --metrics existed has none of the fields.
  for (auto& k : j["kernels"])
    for (const char* key : {"sm_throughput_pct", "memory_throughput_pct", "dram_throughput_pct",
                            "achieved_occupancy_pct", "metrics_duration_ns", "bound"})
      k.erase(key);
  j.erase("metrics_passes");
  profile::GpuSection old = j.get<profile::GpuSection>();
  EXPECT_EQ(old.metrics_passes, 0);
  EXPECT_EQ(old.kernels[0].sm_throughput_pct, -1);
  EXPECT_EQ(old.kernels[0].bound, "");
}

TEST(KernelMetricsTraceTest, ReportGolden) {
  profile::Profile p = Build(WarStory().bytes());
  analysis::GpuSummary s = analysis::Summarize(p);
  p.findings = analysis::GpuFindings(p, s);
  for (auto& f : BoundFindings(p)) p.findings.push_back(f);
  ::opscope::testing::ExpectMatchesGolden(OPSCOPE_SOURCE_DIR
                                          "/src/gpu/testdata/war_story.metrics.report.txt",
                                          report::FormatGpuReport(p, s, /*gpu_trace=*/false));
}

TEST(KernelMetricsTraceTest, DecoderSurvivesDamagedMetricTraces) {
  const std::string bytes = WarStory().bytes();
  for (size_t n = 0; n <= bytes.size(); n += 7)
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), n);
  std::string flipped = bytes;
  for (size_t i = sizeof(trace::FileHeader); i < flipped.size(); i += 13) {
    flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(flipped.data()), flipped.size());
  }
}

}  // namespace
}  // namespace opscope::gpu
