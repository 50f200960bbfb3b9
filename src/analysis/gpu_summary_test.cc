#include "analysis/gpu_summary.h"

#include <gtest/gtest.h>

#include "base/testing/golden.h"
#include "report/format.h"
#include "report/gpu_table.h"

namespace opscope::analysis {
namespace {

constexpr int64_t kMiB = 1 << 20;

// Five 900 us "infer" iterations (1 ms apart), each: a blocking 1 MiB pageable config copy
// (API 0..100us, GPU 10..90us), kernels conv 200..500us (in range "conv") and relu 500..600us
// (in range "relu"), a stream synchronization 300..600us. Iterations 0 and 1 also copy a 3 MiB
// pinned input asynchronously (GPU 150..160us). All numbers below are worked out by hand.
profile::Profile FiveIterations() {
  profile::Profile p;
  p.meta.kind = "gpu";
  p.meta.source = "demo";
  p.gpu.emplace();
  auto& g = *p.gpu;
  uint32_t corr = 1;
  for (int i = 0; i < 5; ++i) {
    int64_t b = i * 1'000'000;
    int32_t iter = static_cast<int32_t>(p.ranges.size());
    p.ranges.push_back({"infer", "nvtx", 1, b, b + 900'000, 0, -1, {}});
    int32_t conv = static_cast<int32_t>(p.ranges.size());
    p.ranges.push_back({"conv", "nvtx", 1, b + 180'000, b + 190'000, 1, iter, {}});
    int32_t relu = static_cast<int32_t>(p.ranges.size());
    p.ranges.push_back({"relu", "nvtx", 1, b + 190'000, b + 195'000, 1, iter, {}});

    g.api_calls.push_back({"cudaMemcpy", "runtime", 1, b, b + 100'000, corr});
    profile::GpuMemcpy cfg;
    cfg.kind = "HtoD";
    cfg.bytes = kMiB;
    cfg.pageable = true;
    cfg.start_ns = b + 10'000;
    cfg.end_ns = b + 90'000;
    cfg.correlation_id = corr++;
    cfg.range = iter;
    g.memcpys.push_back(cfg);
    if (i < 2) {
      g.api_calls.push_back({"cudaMemcpyAsync", "runtime", 1, b + 140'000, b + 141'000, corr});
      profile::GpuMemcpy in;
      in.kind = "HtoD";
      in.bytes = 3 * kMiB;
      in.async = true;
      in.start_ns = b + 150'000;
      in.end_ns = b + 160'000;
      in.correlation_id = corr++;
      in.range = iter;
      g.memcpys.push_back(in);
    }
    profile::GpuKernel k;
    k.name = "conv";
    k.start_ns = b + 200'000;
    k.end_ns = b + 500'000;
    k.range = conv;
    k.occupancy = 0.2;
    k.occupancy_limiter = 3;
    k.block[0] = 64;
    g.kernels.push_back(k);
    k.name = "relu";
    k.start_ns = b + 500'000;
    k.end_ns = b + 600'000;
    k.range = relu;
    k.occupancy = 1.0;
    g.kernels.push_back(k);
    g.syncs.push_back({"stream", 1, 7, b + 300'000, b + 600'000, 0});
  }
  EXPECT_TRUE(profile::Validate(p).ok()) << profile::Validate(p).message();
  return p;
}

TEST(GpuSummaryTest, ActivityTablesLikeNvprof) {
  GpuSummary s = Summarize(FiveIterations());
  ASSERT_EQ(s.gpu_activities.size(), 3u);
  const ActivityRow& conv = s.gpu_activities[0];
  EXPECT_EQ(conv.name, "conv");
  EXPECT_EQ(conv.calls, 5);
  EXPECT_DOUBLE_EQ(conv.total_ns, 1'500'000);
  EXPECT_DOUBLE_EQ(conv.avg_ns, 300'000);
  EXPECT_NEAR(conv.pct, 100.0 * 1.5 / 2.42, 1e-9);
  EXPECT_EQ(s.gpu_activities[1].name, "relu");
  const ActivityRow& copy = s.gpu_activities[2];
  EXPECT_EQ(copy.name, "[CUDA memcpy HtoD]");
  EXPECT_EQ(copy.calls, 7);
  EXPECT_DOUBLE_EQ(copy.min_ns, 10'000);
  EXPECT_DOUBLE_EQ(copy.max_ns, 80'000);
  ASSERT_EQ(s.api_calls.size(), 2u);
  EXPECT_EQ(s.api_calls[0].name, "cudaMemcpy");
  EXPECT_DOUBLE_EQ(s.kernel_ns, 2'000'000);
}

TEST(GpuSummaryTest, TimePerLayer) {
  GpuSummary s = Summarize(FiveIterations());
  ASSERT_EQ(s.layers.size(), 3u);
  EXPECT_EQ(s.layers[0].name, "conv");
  EXPECT_EQ(s.layers[0].instances, 5);
  EXPECT_EQ(s.layers[0].kernels, 5);
  EXPECT_DOUBLE_EQ(s.layers[0].pct, 75.0);
  EXPECT_DOUBLE_EQ(s.layers[0].range_ns, 5 * 10'000);
  EXPECT_EQ(s.layers[1].name, "relu");
  EXPECT_EQ(s.layers[2].name, "infer");  // copies only
  EXPECT_DOUBLE_EQ(s.layers[2].copy_ns, 420'000);
  EXPECT_EQ(s.layers[2].kernels, 0);
  EXPECT_EQ(s.layers[2].instances, 5);
}

TEST(GpuSummaryTest, CopiesRepeatedAndPageable) {
  GpuSummary s = Summarize(FiveIterations());
  ASSERT_EQ(s.copies.size(), 1u);
  const CopyDirection& d = s.copies[0];
  EXPECT_EQ(d.count, 7);
  EXPECT_EQ(d.bytes, 11 * kMiB);
  EXPECT_NEAR(d.gbps, 11.0 * kMiB / 420'000, 1e-9);
  EXPECT_EQ(d.pageable_count, 5);
  EXPECT_NEAR(d.pageable_gbps, 5.0 * kMiB / 400'000, 1e-9);
  EXPECT_NEAR(d.pinned_gbps, 6.0 * kMiB / 20'000, 1e-9);
  // The 1 MiB config copy is in every iteration; the 3 MiB input only in two.
  ASSERT_EQ(s.repeated_copies.size(), 1u);
  EXPECT_EQ(s.repeated_copies[0].bytes_each, kMiB);
  EXPECT_EQ(s.repeated_copies[0].iterations_with, 5);
  EXPECT_TRUE(s.repeated_copies[0].pageable);
}

TEST(GpuSummaryTest, FingerprintsTellConfigurationFromInput) {
  profile::Profile p = FiveIterations();
  // Make the 3 MiB copy an every-iteration input (same size each time, new bytes each time) and
  // fingerprint everything: the config (same bytes) is flagged, the input is not.
  auto& g = *p.gpu;
  int i = 0;
  for (auto& m : g.memcpys)
    m.content_hash = m.bytes == kMiB ? "00000000000000aa" : "in" + std::to_string(i++);
  for (int it = 2; it < 5; ++it) {
    profile::GpuMemcpy in;
    in.kind = "HtoD";
    in.bytes = 3 * kMiB;
    in.start_ns = it * 1'000'000 + 150'000;
    in.end_ns = in.start_ns + 10'000;
    in.content_hash = "in" + std::to_string(i++);
    g.memcpys.push_back(in);
  }
  GpuSummary s = Summarize(p);
  ASSERT_EQ(s.repeated_copies.size(), 1u);
  EXPECT_EQ(s.repeated_copies[0].bytes_each, kMiB);
  EXPECT_EQ(s.repeated_copies[0].fingerprinted, 5);
  EXPECT_EQ(s.repeated_copies[0].same_content, 5);
  auto f = GpuFindings(p, s);
  ASSERT_FALSE(f.empty());
  EXPECT_NE(f[0].title.find("with the same content"), std::string::npos) << f[0].title;
  // Without fingerprints the input would have been a (size-only) candidate too.
  for (auto& m : g.memcpys) m.content_hash.clear();
  EXPECT_EQ(Summarize(p).repeated_copies.size(), 2u);
}

TEST(GpuSummaryTest, IdleGapsAndWaiting) {
  GpuSummary s = Summarize(FiveIterations());
  EXPECT_EQ(s.idle.span_ns, 4'590'000);
  EXPECT_EQ(s.idle.busy_ns, 2'420'000);
  EXPECT_EQ(s.idle.gaps, 11);
  EXPECT_EQ(s.idle.gap_ns, 2'170'000);
  EXPECT_EQ(s.idle.largest_gap_ns, 410'000);
  EXPECT_EQ(s.waiting.sync_ns, 1'500'000);
  EXPECT_EQ(s.waiting.sync_calls, 5);
  EXPECT_EQ(s.waiting.sync_copy_ns, 500'000);
  EXPECT_EQ(s.waiting.sync_copy_calls, 5);
}

// Found by gpu_decoder_fuzz: a trace whose times lie near the int64 range made the sums of
// durations overflow (2^62.6 + 2^61.6 in the synchronization total, undefined behaviour). They
// saturate now, a record that ends before it starts lasts 0, and nothing wraps negative.
TEST(GpuSummaryTest, TimesNearTheInt64RangeSaturate) {
  profile::Profile p;
  p.meta.kind = "gpu";
  p.gpu.emplace();
  auto& g = *p.gpu;
  const int64_t big = int64_t{1} << 62;
  g.syncs.push_back({"stream", 1, 7, 0, big + (big >> 1), 0});
  g.syncs.push_back({"stream", 1, 7, 0, big, 0});
  g.syncs.push_back({"stream", 1, 7, 10, 5, 0});  // ends before it starts
  profile::GpuKernel k;
  k.name = "k";
  k.start_ns = -big;
  k.end_ns = big + (big >> 1);  // its duration alone exceeds INT64_MAX
  g.kernels.push_back(k);
  k.start_ns = INT64_MAX - 10;
  k.end_ns = INT64_MAX;
  g.kernels.push_back(k);
  GpuSummary s = Summarize(p);
  EXPECT_EQ(s.waiting.sync_ns, INT64_MAX);
  EXPECT_EQ(s.waiting.sync_calls, 3);
  EXPECT_EQ(s.idle.span_ns, INT64_MAX);
  EXPECT_GE(s.idle.busy_ns, 0);
  EXPECT_GE(s.idle.gap_ns, 0);
  EXPECT_GE(s.idle.largest_gap_ns, 0);
  EXPECT_GE(s.kernel_ns, 0);
}

TEST(GpuSummaryTest, IterationSplit) {
  GpuSummary s = Summarize(FiveIterations());
  EXPECT_EQ(s.split.range, "infer");
  EXPECT_EQ(s.split.iterations, 5);
  EXPECT_DOUBLE_EQ(s.split.window_ns, 900'000);
  EXPECT_DOUBLE_EQ(s.split.gpu_only_ns, 380'000);
  EXPECT_DOUBLE_EQ(s.split.overlap_ns, 104'000);
  EXPECT_DOUBLE_EQ(s.split.both_wait_ns, 20'000);
  EXPECT_DOUBLE_EQ(s.split.cpu_only_ns, 396'000);
  EXPECT_DOUBLE_EQ(
      s.split.cpu_only_ns + s.split.gpu_only_ns + s.split.overlap_ns + s.split.both_wait_ns,
      s.split.window_ns);
}

TEST(GpuSummaryTest, Findings) {
  profile::Profile p = FiveIterations();
  GpuSummary s = Summarize(p);
  auto findings = GpuFindings(p, s);
  std::map<std::string, const profile::Finding*> by_rule;
  for (const auto& f : findings) by_rule[f.rule] = &f;
  ASSERT_TRUE(by_rule.count("gpu-repeated-copy"));
  EXPECT_EQ(by_rule["gpu-repeated-copy"]->severity, profile::Severity::kWarning);
  EXPECT_NE(by_rule["gpu-repeated-copy"]->title.find("every iteration"), std::string::npos);
  EXPECT_EQ(by_rule["gpu-repeated-copy"]->numbers.at("iterations"), 5);
  ASSERT_TRUE(by_rule.count("gpu-pageable-copy"));
  EXPECT_EQ(by_rule["gpu-pageable-copy"]->severity, profile::Severity::kWarning);
  ASSERT_TRUE(by_rule.count("gpu-waits-for-cpu"));
  ASSERT_TRUE(by_rule.count("cpu-waits-for-gpu"));
  ASSERT_TRUE(by_rule.count("gpu-low-occupancy"));
  EXPECT_EQ(by_rule["gpu-low-occupancy"]->ops, std::vector<std::string>{"conv"});
  EXPECT_NE(by_rule["gpu-low-occupancy"]->evidence.find("registers"), std::string::npos);
  p.findings = findings;
  EXPECT_TRUE(profile::Validate(p).ok());
}

TEST(GpuSummaryTest, NoIterationRangeFallsBackToCounts) {
  profile::Profile p = FiveIterations();
  p.ranges.clear();
  for (auto& k : p.gpu->kernels) k.range = -1;
  for (auto& m : p.gpu->memcpys) m.range = -1;
  GpuSummary s = Summarize(p);
  EXPECT_TRUE(s.split.range.empty());
  EXPECT_EQ(s.split.iterations, 1);
  ASSERT_EQ(s.repeated_copies.size(), 1u);  // 5 x 1 MiB >= kMinRepeats; 2 x 3 MiB is not
  auto f = GpuFindings(p, s);
  bool titled = false;
  for (const auto& x : f) titled = titled || x.title.find("5 times") != std::string::npos;
  EXPECT_TRUE(titled);
}

TEST(GpuSummaryTest, ExplicitIterationRange) {
  SummaryOptions o;
  o.iteration_range = "conv";
  GpuSummary s = Summarize(FiveIterations(), o);
  EXPECT_EQ(s.split.range, "conv");
  EXPECT_EQ(s.split.iterations, 5);
  EXPECT_DOUBLE_EQ(s.split.window_ns, 10'000);
}

TEST(GpuSummaryTest, ReportMentionsEverySection) {
  profile::Profile p = FiveIterations();
  GpuSummary s = Summarize(p);
  p.findings = GpuFindings(p, s);
  std::string r = report::FormatGpuReport(p, s, /*gpu_trace=*/true);
  ::opscope::testing::ExpectMatchesGolden(
      std::string(OPSCOPE_SOURCE_DIR) + "/src/report/testdata/five_iterations.gpu-trace.txt", r);
  // The same text through the registry: the gpu section of the table format.
  report::ReportOptions o;
  o.gpu_trace = true;
  std::string table;
  ASSERT_TRUE(report::FindFormat("table")->write(p, o, &table).ok());
  EXPECT_NE(table.find(r), std::string::npos);
  for (const char* want :
       {"GPU activities:", "API calls (runtime):", "Per layer", "Copies:", "repeated: 5 x",
        "Idle and waiting:", "5 'infer' iterations", "Theoretical occupancy",
        "GPU trace:", "Findings:", "[CUDA memcpy HtoD] pageable", "13.11GB/s"})
    EXPECT_NE(r.find(want), std::string::npos) << want << "\n" << r;
}

TEST(GpuSummaryTest, LayerKeyDropsPyTorchCounters) {
  EXPECT_EQ(
      LayerKey(
          "aten::addmm, seq = 12, op_id = 345, sizes = [[8, 16], [16, 4]], input_op_ids = [3, 4]"),
      "aten::addmm, sizes = [[8, 16], [16, 4]]");
  EXPECT_EQ(LayerKey("aten::relu, seq = 7"), "aten::relu");
  EXPECT_EQ(LayerKey("conv1 + relu1"), "conv1 + relu1");
  EXPECT_EQ(LayerKey("a, seq = x"), "a, seq = x");  // not a counter
  EXPECT_EQ(LayerKey(""), "");
  // Instances with different counters share one row.
  profile::Profile p = FiveIterations();
  for (size_t i = 0; i < p.ranges.size(); ++i)
    if (p.ranges[i].name == "conv") p.ranges[i].name = "aten::conv2d, seq = " + std::to_string(i);
  GpuSummary s = Summarize(p);
  EXPECT_EQ(s.layers[0].name, "aten::conv2d");
  EXPECT_EQ(s.layers[0].instances, 5);
}

TEST(GpuSummaryTest, FormatNs) {
  EXPECT_EQ(FormatNs(850), "850ns");
  EXPECT_EQ(FormatNs(12'345), "12.35us");
  EXPECT_EQ(FormatNs(1'234'600), "1.235ms");
  EXPECT_EQ(FormatNs(2.5e9), "2.500s");
}

TEST(GpuSummaryTest, EmptyProfile) {
  profile::Profile p;
  GpuSummary s = Summarize(p);
  EXPECT_TRUE(s.gpu_activities.empty());
  EXPECT_TRUE(GpuFindings(p, s).empty());
  p.gpu.emplace();
  s = Summarize(p);
  EXPECT_EQ(s.idle.span_ns, 0);
  EXPECT_FALSE(report::FormatGpuReport(p, s, true).empty());
}

}  // namespace
}  // namespace opscope::analysis
