// End-to-end tests of `opscope gpu` that need no GPU: the no-driver message, and the whole
// pipeline (injection, tracer, trace files, decoding, report, JSON) on a CPU program annotated
// with NVTX — the half of the tracer that works without CUDA.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "analysis/gpu_summary.h"
#include "base/files.h"
#include "gpu/launch.h"
#include "gpu/trace_forge_test_util.h"
#include "profile/profile_io.h"
#include "report/gpu_table.h"
#include "tests/cli_util.h"

namespace opscope {

struct Result {
  int code = -1;
  std::string out, err;
};

class GpuCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("opscope-gpu-cli-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Result Run(const std::string& args) {
    std::string out = (dir_ / "stdout").string(), err = (dir_ / "stderr").string();
    std::string cmd =
        std::string(OPSCOPE_BINARY_DIR "/opscope gpu ") + args + " >" + out + " 2>" + err;
    int status = std::system(cmd.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = ReadFile(out).value();
    r.err = ReadFile(err).value();
    return r;
  }
  std::string Path(const std::string& name) { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

TEST_F(GpuCliTest, NoDriverSaysSoInOneLineAndFails) {
  if (void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(lib);
    GTEST_SKIP() << "an NVIDIA driver is installed here: the no-driver path cannot be exercised";
  }
  Result r = Run("-- true");
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "opscope: error: no NVIDIA driver found (libcuda.so.1 not loadable): opscope gpu needs "
            "an NVIDIA GPU\n");
}

TEST_F(GpuCliTest, MetricsWithoutDriverIsTheSameOneLine) {
  if (void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(lib);
    GTEST_SKIP() << "an NVIDIA driver is installed here: the no-driver path cannot be exercised";
  }
  Result r = Run("--metrics -- true");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "opscope: error: no NVIDIA driver found (libcuda.so.1 not loadable): opscope gpu needs "
            "an NVIDIA GPU\n");
}

TEST_F(GpuCliTest, MetricsHelpSaysWhatItCosts) {
  Result r = Run("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--metrics"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("replays every kernel"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not comparable"), std::string::npos) << r.out;
}

// A trace as the tracer writes it with --metrics, reported through the command line.
TEST_F(GpuCliTest, FromTraceWithMetricsShowsThroughputAndBound) {
  gpu::testing::TraceForge f;
  f.Device(9, 0);
  f.MetricsConfig(7);
  uint32_t c = 1;
  for (int i = 0; i < 4; ++i) {
    int64_t b = 1'000'000 * (i + 1);
    f.Api("cudaLaunchKernel", b, b + 1'000, 5, c);
    f.Kernel("_Z4attnPKfPf", b + 2'000, b + 400'000, c);
    f.KernelMetrics(c++, "_Z4attnPKfPf", 18, 91, 90, 70, 60'000);
    f.Api("cudaLaunchKernel", b + 1'000, b + 2'000, 5, c);
    f.Kernel("_Z4gemmPKfPf", b + 400'000, b + 900'000, c);
    f.KernelMetrics(c++, "_Z4gemmPKfPf", 85, 40, 10, 45, 90'000);
  }
  f.End();
  ASSERT_TRUE(WriteFileAtomic(Path("gpu-1.trace"), f.bytes()).ok());
  std::string json = Path("m.json");
  Result r = Run("--from-trace " + dir_.string() + " -o " + json);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Kernel throughput (--metrics: CUPTI range profiler, 7 replay pass(es)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("memory-bound"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 memory-bound GPU kernel(s) take 40.0% of measured kernel time"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("not comparable with a run without --metrics"), std::string::npos) << r.out;
  auto p = profile::LoadProfile(json);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->gpu->metrics_passes, 7);
  ASSERT_EQ(p->gpu->kernels.size(), 8u);
  EXPECT_EQ(p->gpu->kernels[0].bound, "memory");
  EXPECT_EQ(p->gpu->kernels[1].bound, "compute");
  EXPECT_DOUBLE_EQ(p->gpu->kernels[1].sm_throughput_pct, 85);
  bool rule = false;
  for (const auto& finding : p->findings) rule = rule || finding.rule == "gpu-kernel-bound";
  EXPECT_TRUE(rule);
}

TEST_F(GpuCliTest, RecordsNvtxRangesOfAProgram) {
  std::string json = Path("p.json");
  Result r = Run("--no-driver-check -o " + json + " -- " NVTX_CPU_DEMO " 4");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("4 'iteration' iterations"), std::string::npos) << r.out;
  auto p = profile::LoadProfile(json);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->meta.kind, "gpu");
  EXPECT_NE(p->meta.source.find("nvtx_cpu_demo 4"), std::string::npos);
  ASSERT_TRUE(p->gpu.has_value());
  EXPECT_TRUE(p->gpu->complete);
  std::map<std::string, int> count;
  int main_tid = 0, worker_tid = 0;
  for (const auto& range : p->ranges) {
    ++count[range.name];
    EXPECT_LE(range.start_ns, range.end_ns);
    if (range.name == "iteration") {
      EXPECT_EQ(range.depth, 0);
      main_tid = range.tid;
    }
    if (range.name == "preprocess") {
      ASSERT_GE(range.parent, 0);
      EXPECT_EQ(p->ranges[range.parent].name, "iteration");
      EXPECT_GE(range.end_ns - range.start_ns, 500'000);  // it spins 500 us
    }
    if (range.name == "conv1 + relu1") {
      EXPECT_EQ(range.domain, "TensorRT");
      EXPECT_EQ(range.depth, 0);  // its own domain's stack
    }
    if (range.name == "worker") worker_tid = range.tid;
  }
  EXPECT_EQ(count["iteration"], 4);
  EXPECT_EQ(count["preprocess"], 4);
  EXPECT_EQ(count["conv1 + relu1"], 4);
  EXPECT_EQ(count["whole-run"], 1);
  EXPECT_EQ(count["worker"], 1);
  EXPECT_NE(main_tid, 0);
  EXPECT_NE(worker_tid, main_tid);
  EXPECT_EQ(p->meta.extra["thread." + std::to_string(main_tid)], "main-loop");
}

TEST_F(GpuCliTest, PassesArgumentsAndExitStatusThrough) {
  Result r = Run("--no-driver-check -- " NVTX_CPU_DEMO " --exit 3");
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("exited with status 3"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("1 NVTX ranges"), std::string::npos) << r.out;
}

// SIGTERM sent to opscope goes to the program's process group (the rule of stat, record and run),
// and opscope exits with 128+signal once the program has ended.
TEST_F(GpuCliTest, SigtermToOpscopeIsPassedToTheProgram) {
  const std::string ready = Path("ready"), pidfile = Path("pid");
  int pid = testing::StartInOwnGroup(
      {OPSCOPE_BINARY_DIR "/opscope", "gpu", "--no-driver-check", "--", "/bin/sh", "-c",
       "echo $$ > " + pidfile + " && touch " + ready + " && exec sleep 20"},
      Path("out.txt"), Path("err.txt"));
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(testing::WaitForFile(ready));
  kill(pid, SIGTERM);
  EXPECT_EQ(testing::WaitForExit(pid, 10), 128 + SIGTERM) << testing::ReadAll(Path("err.txt"));
  const pid_t target = static_cast<pid_t>(std::atoi(testing::ReadAll(pidfile).c_str()));
  ASSERT_GT(target, 0);
  EXPECT_NE(kill(target, 0), 0) << "the program must not outlive opscope";
  if (kill(target, 0) == 0) kill(target, SIGKILL);
}

TEST_F(GpuCliTest, CrashingProgramStillLeavesItsTrace) {
  std::string json = Path("crash.json");
  Result r = Run("--no-driver-check -o " + json + " -- " NVTX_CPU_DEMO " --crash");
  EXPECT_EQ(r.code, 128 + 11);
  EXPECT_NE(r.err.find("died of signal 11"), std::string::npos) << r.err;
  auto p = profile::LoadProfile(json);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->gpu->end_signal, 11);
  ASSERT_EQ(p->ranges.size(), 1u);
  EXPECT_EQ(p->ranges[0].name, "doomed");
}

TEST_F(GpuCliTest, TracerNeverFailsItsHostWithoutADriver) {
  if (void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(lib);
    GTEST_SKIP() << "an NVIDIA driver is installed here: CUPTI would succeed";
  }
  std::string json = Path("init.json");
  Result r = Run("--no-driver-check -o " + json + " -- " NVTX_CPU_DEMO " --cuda-init");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("InitializeInjection returned 1"), std::string::npos) << r.out;
  auto p = profile::LoadProfile(json);
  ASSERT_TRUE(p.ok());
  bool said = false;
  for (const auto& d : p->meta.degradations)
    said = said || d.find("cannot record kernels") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_EQ(p->ranges.size(), 1u);  // NVTX still works
}

TEST_F(GpuCliTest, TracerWithMetricsNeverFailsItsHostWithoutADriver) {
  if (void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(lib);
    GTEST_SKIP() << "an NVIDIA driver is installed here: CUPTI would succeed";
  }
  std::string json = Path("init.json");
  Result r = Run("--metrics --no-driver-check -o " + json + " -- " NVTX_CPU_DEMO " --cuda-init");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("InitializeInjection returned 1"), std::string::npos) << r.out;
  auto p = profile::LoadProfile(json);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ranges.size(), 1u);  // NVTX still works
  EXPECT_EQ(p->gpu->metrics_passes, 0);
}

TEST_F(GpuCliTest, BadInvocations) {
  Result r = Run("--no-driver-check -- /nonexistent/program");
  EXPECT_EQ(r.code, 127);  // the launcher's rule (README "Exit codes")
  EXPECT_NE(r.err.find("command not found: '/nonexistent/program' (no such file)"),
            std::string::npos)
      << r.err;
  r = Run("--no-driver-check -o " + Path("x.xyz") + " -- true");  // checked before the program runs
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("cannot tell the format"), std::string::npos) << r.err;
  r = Run("--no-driver-check -o " + Path("x.json") + " --format csv -- true");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("the .json extension means json, not csv"), std::string::npos) << r.err;
  r = Run("--no-driver-check -- true");  // no CUDA, no NVTX: no trace at all
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no GPU trace was written"), std::string::npos) << r.err;
}

}  // namespace opscope

// The prepared GPU script's checks (check_profile.py), run here on a trace forged to look like
// what gpu_demo.cu produces on a GPU, through the real decoder and Profile builder: the
// script and the pipeline agree on names and fields before the first GPU run, and the checks
// can fail.
namespace opscope::gpu {
namespace {

using testing::TraceForge;

std::string ForgeDemoTrace(int iterations, double* event_ms) {
  TraceForge f;
  f.Device(9, 0);
  f.Add(trace::kClock, trace::ClockRecord{1, 1, 1, 0});
  const uint32_t tid = 4321;
  const int64_t ms = 1'000'000;
  uint32_t c = 1;
  *event_ms = 0;
  for (int i = 0; i < iterations + 2; ++i) {
    bool warm = i < 2;
    int64_t b = 10 * ms + i * 3 * ms;
    f.Push(warm ? "warmup" : "iteration", b, tid);
    f.Push("preprocess", b, tid);
    f.Pop(b + ms, tid);
    f.Push("upload", b + ms, tid);
    f.Api("cudaMemcpy_v3020", b + ms, b + ms + 100'000, tid, c);
    f.Content(c, 1 << 20, 0xC0F16, /*sampled=*/false);  // the same configuration bytes every time
    f.Memcpy(trace::kHtoD, 1 << 20, b + ms + 10'000, b + ms + 90'000, c++, /*pageable=*/true);
    f.Api("cudaMemcpyAsync_v3020", b + ms + 100'000, b + ms + 101'000, tid, c);
    f.Content(c, 4 << 20, 0x1000 + i, /*sampled=*/true);  // a new input every iteration
    f.Memcpy(trace::kHtoD, 4 << 20, b + ms + 101'000, b + ms + 400'000, c++, false, true);
    f.Pop(b + ms + 102'000, tid);
    const char* layers[] = {"layer1_conv", "layer2_relu", "layer3_reduce"};
    const char* kernels[] = {"_Z9conv_likePKfS0_Pfii", "_Z10relu_scalePfii",
                             "_Z12block_reducePKfPfi"};
    int64_t run[] = {ms, ms / 4, 5'000};
    int64_t gpu = b + ms + 400'000;
    for (int k = 0; k < 3; ++k) {
      int64_t t = b + ms + 103'000 + k * 2'000;
      f.Push(layers[k], t, tid);
      f.Api("cudaLaunchKernel_v7000", t + 100, t + 900, tid, c);
      f.Pop(t + 1'000, tid);
      trace::KernelRecord kr{};
      kr.start_ns = gpu;
      kr.end_ns = gpu + run[k];
      kr.correlation = c++;
      kr.stream = 13;
      kr.grid[0] = 4096;
      kr.grid[1] = kr.grid[2] = 1;
      kr.block[0] = 256;
      kr.block[1] = kr.block[2] = 1;
      kr.registers_per_thread = 16;
      kr.dynamic_shared_bytes = k == 2 ? 1024 : 0;
      kr.name = f.Str(kernels[k]);
      f.Add(trace::kKernel, kr);
      gpu += run[k];
      if (!warm)
        *event_ms += static_cast<double>(run[k]) * 1.01 / 1e6;  // events bracket a bit more
    }
    int64_t t = b + ms + 110'000;
    f.Push("download", t, tid);
    f.Api("cudaMemcpyAsync_v3020", t, t + 1'000, tid, c);
    f.Memcpy(trace::kDtoH, 256 << 10, gpu, gpu + 20'000, c++, false, true);
    f.Api("cudaStreamSynchronize_v3020", t + 2'000, gpu + 21'000, tid, c);
    f.Sync(trace::kStreamSynchronize, t + 2'500, gpu + 20'500, c++);
    f.Pop(gpu + 22'000, tid);
    f.Push("postprocess", gpu + 22'000, tid);
    f.Pop(gpu + 322'000, tid);
    f.Pop(gpu + 323'000, tid);
  }
  f.End();
  return f.bytes();
}

class GpuScriptChecksTest : public opscope::GpuCliTest {};

TEST_F(GpuScriptChecksTest, CheckProfilePassesOnDemoShapedTraceAndCatchesErrors) {
  if (std::system("python3 -c 'import json' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 not available";
  double event_ms = 0;
  std::string trace_path = Path("gpu-1.trace");
  ASSERT_TRUE(WriteFileAtomic(trace_path, ForgeDemoTrace(6, &event_ms)).ok());
  auto p = ProfileFromTraces({trace_path});
  ASSERT_TRUE(p.ok()) << p.status().message();
  analysis::GpuSummary s = analysis::Summarize(*p);
  auto findings = GpuFindings(*p, s);
  p->findings.insert(p->findings.end(), findings.begin(), findings.end());
  std::string json = Path("demo.json");
  ASSERT_TRUE(profile::SaveProfile(*p, json).ok());
  std::string script = OPSCOPE_SOURCE_DIR "/tests/gpu/check_profile.py";
  std::string log = Path("check.log");
  auto check = [&](int iterations, double ms) {
    std::string cmd = "python3 " + script + " " + json + " " + std::to_string(iterations) + " " +
                      std::to_string(ms) + " >" + log + " 2>&1";
    int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  EXPECT_EQ(check(6, event_ms), 0) << ReadFile(log).value();
  if (std::getenv("SHOW_CHECK_LOG")) std::fputs(ReadFile(log).value().c_str(), stderr);
  // The report on the same trace, through the command line (--from-trace).
  Result r = Run("--from-trace " + dir_.string() + " --gpu-trace");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("conv_like(float const*, float const*, float*, int, int)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("layer1_conv"), std::string::npos);
  EXPECT_NE(r.out.find("is repeated every iteration"), std::string::npos) << r.out;
  // The Chrome trace of the same run: GPU kernels and copies on the GPU process, API calls on
  // the CPU threads, side by side.
  std::string trace_json = Path("demo.trace.json");
  Result t = Run("--from-trace " + dir_.string() + " -o " + trace_json);
  ASSERT_EQ(t.code, 0) << t.err;
  std::string trace = ReadFile(trace_json).value();
  EXPECT_NE(trace.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(trace.find("\"cat\":\"kernel\""), std::string::npos);
  EXPECT_NE(trace.find("\"cat\":\"memcpy\""), std::string::npos);
  EXPECT_NE(trace.find("\"cat\":\"cuda_api\""), std::string::npos);
  EXPECT_EQ(trace.find("displayTimeUnit"), std::string::npos);
  EXPECT_NE(t.err.find("opscope: wrote " + trace_json + " (chrome)"), std::string::npos) << t.err;
  // `opscope report` on the saved profile renders the same nvprof-style tables.
  std::string saved = Path("saved.json");
  ASSERT_EQ(Run("--from-trace " + dir_.string() + " -o " + saved).code, 0);
  ::opscope::testing::CommandResult rep =
      ::opscope::testing::RunShell(std::string(OPSCOPE_BINARY_DIR "/opscope report ") + saved);
  EXPECT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_NE(rep.out.find("GPU activities:"), std::string::npos) << rep.out;
  EXPECT_NE(rep.out.find("conv_like(float const*, float const*, float*, int, int)"),
            std::string::npos);
  if (const char* keep = std::getenv("OPSCOPE_KEEP_FORGED_TRACE")) {
    std::filesystem::copy_file(trace_path, std::string(keep) + "/gpu-1.trace",
                               std::filesystem::copy_options::overwrite_existing);
  }
  EXPECT_EQ(check(6, event_ms * 1.2), 1);  // kernel time 20% off the events: must fail
  EXPECT_NE(ReadFile(log).value().find("FAIL  kernel time"), std::string::npos);
  EXPECT_EQ(check(7, event_ms), 1);  // wrong iteration count: must fail
}

// The device check's figures script (check_war_story.py) on the forged war story, through the
// real decoder, builder, summary, findings and report: it passes, and fails when a kernel's
// class is wrong.
TEST_F(GpuScriptChecksTest, CheckWarStoryPassesOnForgedRunAndCatchesErrors) {
  if (std::system("python3 -c 'import json' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 not available";
  std::string trace_path = Path("gpu-1.trace");
  ASSERT_TRUE(WriteFileAtomic(trace_path, testing::ForgeWarStory(4321).bytes()).ok());
  auto p = ProfileFromTraces({trace_path});
  ASSERT_TRUE(p.ok()) << p.status().message();
  analysis::GpuSummary s = analysis::Summarize(*p);
  auto findings = GpuFindings(*p, s);
  p->findings.insert(p->findings.end(), findings.begin(), findings.end());
  Result r = Run("--from-trace " + dir_.string() + " -o " + Path("metrics.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  // The forged kernels last 5x their replayed duration: events of 10, 15 and 0.04 ms.
  const std::string line =
      "WAR_STORY iterations=3 loop_ms={} attention_ms=10.0 gemm_ms=15.0 bias_ms=0.04 "
      "checksum=1 device=\"Test GPU\" cc=9.0\n";
  auto with_loop = [&](const char* ms) {
    return std::string(line).replace(line.find("{}"), 2, ms);
  };
  ASSERT_TRUE(WriteFileAtomic(Path("alone-1.out"), with_loop("25.0")).ok());
  ASSERT_TRUE(
      WriteFileAtomic(Path("traced.out"), with_loop("27.5") + report::FormatGpuReport(*p, s, false))
          .ok());
  ASSERT_TRUE(WriteFileAtomic(Path("metrics.out"), with_loop("140.0") + r.out).ok());
  ASSERT_TRUE(profile::SaveProfile(*p, Path("traced.json")).ok());
  std::string log = Path("war.log");
  auto check = [&]() {
    std::string cmd = "python3 " OPSCOPE_SOURCE_DIR "/tests/gpu/check_war_story.py " +
                      dir_.string() + " >" + log + " 2>&1";
    int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  EXPECT_EQ(check(), 0) << ReadFile(log).value();
  std::string figures = ReadFile(log).value();
  EXPECT_NE(figures.find("attn_scores: 3 launches; SM 22.5%, memory 87.0%"), std::string::npos)
      << figures;
  EXPECT_NE(figures.find("PASS  sgemm_tiled classified compute-bound"), std::string::npos)
      << figures;
  if (std::getenv("SHOW_CHECK_LOG")) std::fputs(figures.c_str(), stderr);
  // A GEMM that comes out memory-bound must fail the check.
  auto m = profile::LoadProfile(Path("metrics.json"));
  ASSERT_TRUE(m.ok());
  for (auto& k : m->gpu->kernels)
    if (k.name.rfind("sgemm_tiled", 0) == 0) k.bound = "memory";
  ASSERT_TRUE(profile::SaveProfile(*m, Path("metrics.json")).ok());
  EXPECT_EQ(check(), 1);
  EXPECT_NE(ReadFile(log).value().find("FAIL  sgemm_tiled classified compute-bound (got memory)"),
            std::string::npos)
      << ReadFile(log).value();
}

}  // namespace
}  // namespace opscope::gpu
