// Decoding and Profile building on synthetic traces forged exactly as the tracer writes them.
#include "gpu/decoder.h"

#include <gtest/gtest.h>

#include <random>

#include "base/testing/fuzz_corpus.h"
#include "gpu/builder.h"
#include "gpu/trace_forge_test_util.h"
#include "profile/profile_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace opscope::gpu {
namespace {

using testing::TraceForge;
constexpr uint32_t kMain = 100, kWorker = 200;

// Two iterations of a two-layer model on thread kMain: "iter" > {"conv1", "relu1"}; a worker
// thread launches one kernel outside any range. Kernels overlap on two streams, and the GPU
// runs conv1's kernel after the CPU has left conv1 (asynchronous launch).
TraceForge TwoIterations() {
  TraceForge f;
  f.Device(8, 7);
  f.Add(trace::kClock, trace::ClockRecord{1000, 1000, 1, 0});
  for (int it = 0; it < 2; ++it) {
    int64_t b = 1'000'000 + it * 1'000'000;
    uint32_t c = 10 + it * 10;
    f.Push("iter", b, kMain);
    f.Api("cudaMemcpy", b + 1'000, b + 60'000, kMain, c);
    f.Memcpy(trace::kHtoD, 1 << 20, b + 5'000, b + 55'000, c, /*pageable=*/true);
    f.Push("conv1", b + 100'000, kMain);
    f.Api("cudaLaunchKernel", b + 110'000, b + 115'000, kMain, c + 1);
    f.Api("cuLaunchKernel", b + 111'000, b + 114'000, kMain, c + 1, trace::kDriverApi);
    f.Pop(b + 120'000, kMain);
    f.Push("relu1", b + 130'000, kMain);
    f.Api("cudaLaunchKernel", b + 140'000, b + 145'000, kMain, c + 2);
    f.Pop(b + 150'000, kMain);
    f.Pop(b + 160'000, kMain);
    // conv1 runs 200..400us, relu1 300..450us on another stream (overlap).
    f.Kernel("_Z5conv1PKfPfi", b + 200'000, b + 400'000, c + 1, 7);
    f.Kernel("_Z5relu1Pfi", b + 300'000, b + 450'000, c + 2, 8);
    f.Api("cudaStreamSynchronize", b + 460'000, b + 470'000, kMain, c + 3);
    f.Sync(trace::kStreamSynchronize, b + 461'000, b + 469'000, c + 3);
  }
  f.Api("cudaLaunchKernel", 5'000'000, 5'001'000, kWorker, 99);
  f.Kernel("plain_c_kernel", 5'002'000, 5'003'000, 99, 9);
  f.Dropped(3);
  f.Dropped(5);  // cumulative: the last value counts
  f.End();
  return f;
}

profile::Profile Build(const std::string& bytes) {
  auto t = DecodeTrace(bytes, "test.trace");
  EXPECT_TRUE(t.ok()) << t.status().message();
  profile::Profile p;
  p.meta.kind = "gpu";
  if (t.ok()) AddTraceToProfile(*t, &p);
  return p;
}

TEST(GpuDecoderTest, DecodesEveryRecordKind) {
  auto t = DecodeTrace(TwoIterations().bytes(), "x");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->pid, 4242);
  EXPECT_EQ(t->kernels.size(), 5u);
  EXPECT_EQ(t->kernel_names[0], "_Z5conv1PKfPfi");
  EXPECT_EQ(t->memcpys.size(), 2u);
  EXPECT_EQ(t->api_calls.size(), 11u);
  EXPECT_EQ(t->syncs.size(), 2u);
  EXPECT_EQ(t->nvtx.size(), 12u);
  EXPECT_EQ(t->devices.size(), 1u);
  EXPECT_EQ(t->cupti_dropped, 5u);
  EXPECT_TRUE(t->ended);
  EXPECT_FALSE(t->truncated);
  EXPECT_TRUE(t->problem.empty());
}

TEST(GpuBuilderTest, NestsRangesAndAttributesKernelsByLaunch) {
  profile::Profile p = Build(TwoIterations().bytes());
  ASSERT_TRUE(profile::Validate(p).ok()) << profile::Validate(p).message();
  ASSERT_EQ(p.ranges.size(), 6u);
  EXPECT_EQ(p.ranges[0].name, "iter");
  EXPECT_EQ(p.ranges[0].depth, 0);
  EXPECT_EQ(p.ranges[0].parent, -1);
  EXPECT_EQ(p.ranges[1].name, "conv1");
  EXPECT_EQ(p.ranges[1].parent, 0);
  EXPECT_EQ(p.ranges[1].depth, 1);
  EXPECT_EQ(p.ranges[1].domain, "nvtx");
  EXPECT_EQ(p.ranges[1].end_ns - p.ranges[1].start_ns, 20'000);

  const auto& g = *p.gpu;
  ASSERT_EQ(g.kernels.size(), 5u);
  // conv1's kernel ran after the CPU left conv1, yet belongs to conv1 (launch time decides).
  EXPECT_EQ(g.kernels[0].name, "conv1(float const*, float*, int)");
  EXPECT_EQ(p.ranges[g.kernels[0].range].name, "conv1");
  EXPECT_EQ(g.kernels[0].tid, static_cast<int32_t>(kMain));
  EXPECT_EQ(p.ranges[g.kernels[1].range].name, "relu1");
  EXPECT_EQ(g.kernels[2].range, 4);  // second iteration's conv1
  EXPECT_EQ(g.kernels.back().name, "plain_c_kernel");
  EXPECT_EQ(g.kernels.back().range, -1);
  EXPECT_EQ(g.kernels.back().tid, static_cast<int32_t>(kWorker));
  // The copy was issued inside "iter" but outside both layers.
  ASSERT_EQ(g.memcpys.size(), 2u);
  EXPECT_EQ(g.memcpys[0].kind, "HtoD");
  EXPECT_TRUE(g.memcpys[0].pageable);
  EXPECT_EQ(p.ranges[g.memcpys[0].range].name, "iter");
  // Occupancy from the cc 8.7 table: 256 threads, 32 registers -> full.
  EXPECT_NEAR(g.kernels[0].occupancy, 1.0, 1e-9);
  EXPECT_EQ(g.syncs.size(), 2u);
  EXPECT_EQ(g.syncs[0].type, "stream");
  EXPECT_EQ(g.syncs[0].tid, static_cast<int32_t>(kMain));
  EXPECT_EQ(g.dropped_records, 5u);
  EXPECT_TRUE(g.complete);
  bool said = false;
  for (const auto& d : p.meta.degradations) said = said || d.find("dropped 5") != std::string::npos;
  EXPECT_TRUE(said);

  // The profile survives its JSON form.
  auto back = profile::FromJsonString(profile::ToJsonString(p), "mem");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->gpu->kernels[0].range, g.kernels[0].range);
  EXPECT_EQ(back->gpu->memcpys[0].pageable, true);
  EXPECT_EQ(profile::ToJsonString(*back), profile::ToJsonString(p));
}

TEST(GpuBuilderTest, InnermostRangePerDomainAndThread) {
  TraceForge f;
  f.Push("outer", 100, kMain);
  f.Push("trt-layer", 150, kMain, "TensorRT");
  f.Push("inner", 200, kMain);
  f.Api("cudaLaunchKernel", 250, 260, kMain, 1);
  f.Pop(300, kMain);
  f.Api("cudaLaunchKernel", 320, 330, kMain, 2);  // inside trt-layer and outer
  f.Pop(350, kMain, "TensorRT");
  f.Api("cudaLaunchKernel", 360, 370, kWorker, 3);  // other thread: no range
  f.Pop(400, kMain);
  f.Kernel("k1", 1000, 1100, 1);
  f.Kernel("k2", 1100, 1200, 2);
  f.Kernel("k3", 1200, 1300, 3);
  f.End();
  profile::Profile p = Build(f.bytes());
  ASSERT_TRUE(profile::Validate(p).ok());
  const auto& k = p.gpu->kernels;
  EXPECT_EQ(p.ranges[k[0].range].name, "inner");
  EXPECT_EQ(p.ranges[k[1].range].name, "trt-layer");
  EXPECT_EQ(p.ranges[k[1].range].domain, "TensorRT");
  EXPECT_EQ(k[2].range, -1);
}

TEST(GpuBuilderTest, OpenRangesUnmatchedPopsAndMissingEnd) {
  TraceForge f;
  f.Pop(50, kMain);  // pop without push
  f.Push("never closed", 100, kMain);
  f.Api("cudaLaunchKernel", 150, 160, kMain, 1);
  f.Kernel("k", 200, 5000, 1);
  // no End(): the program was killed
  profile::Profile p = Build(f.bytes());
  ASSERT_TRUE(profile::Validate(p).ok());
  ASSERT_EQ(p.ranges.size(), 1u);
  EXPECT_EQ(p.ranges[0].end_ns, 5000);  // closed at the last event
  EXPECT_FALSE(p.gpu->complete);
  std::string all;
  for (const auto& d : p.meta.degradations) all += d + "\n";
  EXPECT_NE(all.find("still open"), std::string::npos) << all;
  EXPECT_NE(all.find("no matching push"), std::string::npos) << all;
  EXPECT_NE(all.find("no end record"), std::string::npos) << all;
}

TEST(GpuBuilderTest, SignalEndIsReported) {
  TraceForge f;
  f.Push("r", 1, kMain);
  f.End(11);
  profile::Profile p = Build(f.bytes());
  EXPECT_EQ(p.gpu->end_signal, 11);
  EXPECT_TRUE(p.gpu->complete);
}

TEST(GpuBuilderTest, ShiftsCuptiClockWhenOursWasRefused) {
  TraceForge f;
  f.Add(trace::kClock,
        trace::ClockRecord{5'000'000, 1'000, 0, 0});  // CUPTI clock behind by 4999000
  f.Push("r", 5'000'100, kMain);                      // NVTX is always on CLOCK_MONOTONIC
  f.Api("cudaLaunchKernel", 1'200, 1'300, kMain, 1);
  f.Kernel("k", 2'000, 3'000, 1);
  f.Pop(5'010'000, kMain);
  f.End();
  profile::Profile p = Build(f.bytes());
  EXPECT_EQ(p.gpu->kernels[0].start_ns, 2'000 + 4'999'000);
  EXPECT_EQ(p.gpu->kernels[0].range, 0);
  EXPECT_FALSE(p.meta.degradations.empty());
}

TEST(GpuBuilderTest, CopyFingerprintsAttachByCorrelation) {
  TraceForge f;
  f.Api("cudaMemcpy_v3020", 10, 100, kMain, 5);
  f.Content(5, 1 << 20, 0xABCDEF, false);
  f.Memcpy(trace::kHtoD, 1 << 20, 20, 90, 5, true);
  f.Api("cudaMemcpyAsync_v3020", 110, 120, kMain, 6);
  f.Content(6, 8 << 20, 0x1234, true);
  f.Memcpy(trace::kHtoD, 8 << 20, 130, 900, 6, false);
  f.Api("cudaMemcpy_v3020", 1000, 1100, kMain, 7);
  f.Content(7, 1 << 20, 0, false);  // source unreadable
  f.Memcpy(trace::kHtoD, 1 << 20, 1010, 1090, 7, true);
  f.End();
  profile::Profile p = Build(f.bytes());
  const auto& m = p.gpu->memcpys;
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].content_hash, "0000000000abcdef");
  EXPECT_FALSE(m[0].content_sampled);
  EXPECT_EQ(m[1].content_hash, "0000000000001234");
  EXPECT_TRUE(m[1].content_sampled);
  EXPECT_EQ(m[2].content_hash, "");
  EXPECT_EQ(p.gpu->api_calls[0].name, "cudaMemcpy");
}

TEST(GpuDecoderTest, RejectsForeignFiles) {
  EXPECT_EQ(DecodeTrace("", "a").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(DecodeTrace(std::string(64, 'x'), "a").status().code(), StatusCode::kDataLoss);
  std::string b = TraceForge().bytes();
  trace::FileHeader h;
  memcpy(&h, b.data(), sizeof h);
  h.version = 99;
  memcpy(b.data(), &h, sizeof h);
  auto r = DecodeTrace(b, "new.trace");
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("new.trace"), std::string::npos);
}

TEST(GpuDecoderTest, EveryTruncationKeepsWhatCameBefore) {
  const std::string full = TwoIterations().bytes();
  size_t previous_records = 0;
  for (size_t n = sizeof(trace::FileHeader); n < full.size(); ++n) {
    auto t = DecodeTrace(std::string_view(full).substr(0, n), "cut");
    ASSERT_TRUE(t.ok()) << n;
    EXPECT_GE(t->records, previous_records);
    previous_records = t->records;
    EXPECT_FALSE(t->ended);
    profile::Profile p;
    AddTraceToProfile(*t, &p);
    ASSERT_TRUE(profile::Validate(p).ok())
        << "cut at " << n << ": " << profile::Validate(p).message();
  }
}

TEST(GpuDecoderTest, SkipsUnknownRecordsAndReadsLongerPayloadsByPrefix) {
  TraceForge f;
  struct Future {
    uint64_t a, b;
  } future{1, 2};
  f.Add(static_cast<trace::RecordType>(200), future);
  struct LongerPop {
    trace::NvtxPopRecord pop;
    uint64_t extra;
  };
  f.Push("r", 10, kMain);
  f.Add(trace::kNvtxPop, LongerPop{{20, kMain, 0}, 77});
  f.End();
  auto t = DecodeTrace(f.bytes(), "x");
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->problem.empty()) << t->problem;
  EXPECT_EQ(t->nvtx.size(), 2u);
  EXPECT_TRUE(t->ended);
}

TEST(GpuDecoderTest, ShortPayloadStopsDecodingWithAReason) {
  TraceForge f;
  f.Push("r", 10, kMain);
  uint32_t tiny = 5;
  f.Add(trace::kKernel, tiny);
  f.End();
  auto t = DecodeTrace(f.bytes(), "bad.trace");
  ASSERT_TRUE(t.ok());
  EXPECT_NE(t->problem.find("corrupt record"), std::string::npos);
  EXPECT_EQ(t->nvtx.size(), 1u);
}

// Random damage must never crash the decoder or produce an invalid profile: the fuzz entry point
// (decoder_fuzz.cc, which also summarizes and formats) on the seed, its truncations and
// bit-flipped copies.
TEST(GpuDecoderTest, FuzzEntryPointSurvivesTruncationsAndBitFlips) {
  auto feed = [](const std::string& b) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  };
  const std::string full = TwoIterations().bytes();
  for (size_t n = 0; n <= full.size(); n += 7) feed(full.substr(0, n));
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string b = full;
    int flips = 1 + static_cast<int>(rng() % 8);
    for (int j = 0; j < flips; ++j) b[rng() % b.size()] ^= static_cast<char>(1u << (rng() % 8));
    feed(b);
    auto t = DecodeTrace(b, "flip");
    if (!t.ok()) continue;
    profile::Profile p;
    AddTraceToProfile(*t, &p);
    ASSERT_TRUE(profile::Validate(p).ok()) << profile::Validate(p).message();
  }
}

TEST(GpuBuilderTest, ApiNamesWithoutCuptiVersionSuffix) {
  EXPECT_EQ(ApiDisplayName("cudaMemcpy_v3020", true), "cudaMemcpy");
  EXPECT_EQ(ApiDisplayName("cudaLaunchKernel_ptsz_v7000", true), "cudaLaunchKernel_ptsz");
  EXPECT_EQ(ApiDisplayName("cudaLaunchKernelExC_v11060", true), "cudaLaunchKernelExC");
  EXPECT_EQ(ApiDisplayName("cuMemcpyHtoD_v2", false), "cuMemcpyHtoD_v2");
  EXPECT_EQ(ApiDisplayName("cudaFoo_vX123", true), "cudaFoo_vX123");
}

TEST(GpuBuilderTest, DemanglesOnlyMangledNames) {
  EXPECT_EQ(DemangleKernelName("_Z6vecAddPfS_S_i"), "vecAdd(float*, float*, float*, int)");
  EXPECT_EQ(DemangleKernelName("my_c_kernel"), "my_c_kernel");
  EXPECT_EQ(DemangleKernelName("_Zgarbage"), "_Zgarbage");
}

}  // namespace
TEST(GpuDecoderTest, FuzzRegressionCorpus) {
  int n = opscope::testing::ReplayFuzzCorpus("gpu_decoder_fuzz", [](const std::string& b) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  });
  EXPECT_GT(n, 0) << "tests/fuzz_corpus/gpu_decoder_fuzz is empty";
}

}  // namespace opscope::gpu
