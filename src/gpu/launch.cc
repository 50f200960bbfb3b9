#include "gpu/launch.h"

#include <dlfcn.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string_view>

#include "base/clock.h"
#include "base/files.h"
#include "base/launch.h"
#include "base/target_signals.h"
#include "gpu/builder.h"
#include "gpu/decoder.h"
#include "gpu/trace_format.h"

extern char** environ;

namespace opscope::gpu {

Status ProbeNvidiaDriver() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr)
    return Unavailable(
        "no NVIDIA driver found (libcuda.so.1 not loadable): opscope gpu needs an NVIDIA GPU");
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  if (init == nullptr || count == nullptr)
    return Unavailable(
        "libcuda.so.1 lacks cuInit/cuDeviceGetCount: the NVIDIA driver installation is broken");
  int r = init(0);
  if (r != 0)
    return Unavailable("the NVIDIA driver is installed but cuInit failed with CUDA error " +
                       std::to_string(r) +
                       (r == 100   ? " (no CUDA-capable device)"
                        : r == 999 ? " (unknown; check `nvidia-smi`)"
                                   : "") +
                       ": opscope gpu needs a working NVIDIA GPU");
  int n = 0;
  if (count(&n) != 0 || n <= 0)
    return Unavailable("the NVIDIA driver reports no CUDA device: opscope gpu needs an NVIDIA GPU");
  return Status::Ok();
}

StatusOr<std::string> FindTracerLibrary() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (const char* env = std::getenv("OPSCOPE_GPU_TRACER"); env != nullptr && env[0] != '\0') {
    if (!fs::exists(env, ec))
      return NotFound(std::string("OPSCOPE_GPU_TRACER=") + env + ": no such file");
    return fs::absolute(env, ec).string();
  }
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return Internal("cannot locate the opscope binary (/proc/self/exe): " + ec.message());
  fs::path lib = self.parent_path() / "libopscope_cupti_tracer.so";
  if (!fs::exists(lib, ec))
    return NotFound(
        lib.string() +
        ": the CUPTI tracer library is missing; it is built with opscope when the CUDA "
        "toolkit is found (cmake -DOPSCOPE_WITH_CUDA=ON), or set OPSCOPE_GPU_TRACER to its path");
  return lib.string();
}

StatusOr<TracedRun> RunTraced(const std::vector<std::string>& command, const RunOptions& o) {
  if (command.empty())
    return InvalidArgument("no program given: opscope gpu [options] -- PROGRAM [ARGS...]");
  if (const char* user = std::getenv("CUDA_INJECTION64_PATH");
      user != nullptr && std::string_view(user).find("opscope") == std::string_view::npos)
    std::fprintf(stderr,
                 "opscope: warning: replacing CUDA_INJECTION64_PATH=%s for the traced "
                 "program\n",
                 user);
  LaunchOptions launch;
  launch.argv = command;
  launch.unset_env = {"OPSCOPE_GPU_DRIVER_API", "OPSCOPE_GPU_HASH_COPIES", trace::kMetricsEnv};
  launch.set_env = {{"CUDA_INJECTION64_PATH", o.tracer},
                    {"NVTX_INJECTION64_PATH", o.tracer},
                    {trace::kOutDirEnv, o.out_dir}};
  if (!o.driver_api) launch.set_env.push_back({"OPSCOPE_GPU_DRIVER_API", "0"});
  if (!o.fingerprint_copies) launch.set_env.push_back({"OPSCOPE_GPU_HASH_COPIES", "0"});
  if (o.kernel_metrics) launch.set_env.push_back({trace::kMetricsEnv, "1"});

  // SIGINT/SIGTERM/SIGHUP/SIGQUIT sent to opscope go to the program's process group
  // (base/target_signals.h), so an interrupted program still gets its report.
  std::optional<TargetSignals> local_signals;
  TargetSignals* signals = o.signals ? o.signals : &local_signals.emplace();
  TracedRun run;
  TargetExit end;
  if (Status st = RunTarget(launch, signals, &end); !st.ok()) {
    if (st.code() == StatusCode::kInternal) return st;
    run.exec_error = st;
    return run;
  }
  run.wall_ms = static_cast<double>(end.wall_ns) / 1e6;
  run.exit_code = end.exit_code;
  run.term_signal = end.term_signal;

  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(o.out_dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("gpu-", 0) == 0 && name.size() > 10 && name.substr(name.size() - 6) == ".trace")
      run.trace_files.push_back(entry.path().string());
  }
  std::sort(run.trace_files.begin(), run.trace_files.end());
  return run;
}

StatusOr<profile::Profile> ProfileFromTraces(const std::vector<std::string>& files) {
  profile::Profile p;
  p.meta.kind = "gpu";
  std::string first_error;
  size_t decoded = 0;
  for (const std::string& f : files) {
    auto bytes = ReadFile(f);
    if (!bytes.ok()) {
      p.meta.degradations.push_back(bytes.status().message());
      if (first_error.empty()) first_error = bytes.status().message();
      continue;
    }
    auto t = DecodeTrace(*bytes, f);
    if (!t.ok()) {
      p.meta.degradations.push_back(t.status().message());
      if (first_error.empty()) first_error = t.status().message();
      continue;
    }
    AddTraceToProfile(*t, &p);
    ++decoded;
  }
  if (decoded == 0 && !files.empty()) return DataLoss("no GPU trace could be read: " + first_error);
  if (!p.gpu) p.gpu.emplace();
  OPSCOPE_RETURN_IF_ERROR(profile::Validate(p));
  return p;
}

}  // namespace opscope::gpu
