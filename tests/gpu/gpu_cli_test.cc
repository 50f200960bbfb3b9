// End-to-end tests of `opscope gpu` that need no GPU: the no-driver message, and the whole
// pipeline (injection, tracer, trace files, decoding, report, JSON) on a CPU program annotated
// with NVTX — the half of the tracer that works without CUDA.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "base/files.h"
#include "profile/profile_io.h"

namespace opscope {
namespace {

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
    std::string cmd = std::string(OPSCOPE_BINARY_DIR "/opscope gpu ") + args + " >" + out + " 2>" + err;
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
            "opscope: error: no NVIDIA driver found (libcuda.so.1 not loadable): opscope gpu needs an NVIDIA GPU\n");
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
  for (const auto& d : p->meta.degradations) said = said || d.find("cannot record kernels") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_EQ(p->ranges.size(), 1u);  // NVTX still works
}

TEST_F(GpuCliTest, BadInvocations) {
  Result r = Run("--no-driver-check -- /nonexistent/program");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("command not found"), std::string::npos) << r.err;
  r = Run("--no-driver-check -o " + Path("x.csv") + " -- true");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("*.json"), std::string::npos);
  r = Run("--no-driver-check -- true");  // no CUDA, no NVTX: no trace at all
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no GPU trace was written"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace opscope
