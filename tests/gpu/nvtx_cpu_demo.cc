// A CPU-only program annotated with NVTX, for testing the tracer where there is no GPU: the
// NVTX half of the tracer works without CUDA, so `opscope gpu --no-driver-check` records these
// ranges exactly as it would in a CUDA program.
//
//   nvtx_cpu_demo [ITERATIONS]   iterations of nested ranges on two threads and two domains
//   nvtx_cpu_demo --exit N       exit with status N inside a range
//   nvtx_cpu_demo --crash        die of SIGSEGV inside a range
//   nvtx_cpu_demo --cuda-init    also call the tracer's CUDA entry point as libcuda would
//   nvtx_cpu_demo --bench N      time N nvtxRangePushA/nvtxRangePop pairs (cost per pair)
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

static void Spin(int us) {
  auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}

int main(int argc, char** argv) {
  int iterations = 3;
  if (argc > 1 && std::strcmp(argv[1], "--exit") == 0) {
    nvtxRangePushA("exiting");
    return argc > 2 ? std::atoi(argv[2]) : 1;
  }
  if (argc > 2 && std::strcmp(argv[1], "--bench") == 0) {
    long n = std::atol(argv[2]);
    const char* names[] = {"conv1", "relu1", "pool1", "fc1"};
    nvtxRangePushA("warm-up");  // the first call loads the injection library
    nvtxRangePop();
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; ++i) {
      nvtxRangePushA(names[i & 3]);
      nvtxRangePop();
    }
    double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    std::printf("nvtx push+pop: %.1f ns per pair over %ld pairs\n", ns / static_cast<double>(n), n);
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--crash") == 0) {
    nvtxRangePushA("doomed");
    Spin(1000);
    volatile int* null = nullptr;
    *null = 1;
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--cuda-init") == 0) {
    // What libcuda does with CUDA_INJECTION64_PATH during cuInit; without a driver CUPTI fails,
    // and the tracer must say so and let the program go on.
    const char* path = std::getenv("CUDA_INJECTION64_PATH");
    void* lib = path ? dlopen(path, RTLD_NOW) : nullptr;
    auto init = lib ? reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection")) : nullptr;
    if (init == nullptr) {
      std::fprintf(stderr, "cannot load InitializeInjection from %s\n", path ? path : "(unset)");
      return 5;
    }
    int ok = init();
    nvtxRangePushA("after-cuda-init");
    nvtxRangePop();
    std::printf("InitializeInjection returned %d\n", ok);
    return 0;
  }
  if (argc > 1) iterations = std::atoi(argv[1]);

  nvtxNameOsThreadA(static_cast<uint32_t>(syscall(SYS_gettid)), "main-loop");
  nvtxDomainHandle_t trt = nvtxDomainCreateA("TensorRT");
  nvtxStringHandle_t layer = nvtxDomainRegisterStringA(trt, "conv1 + relu1");
  std::thread worker([] {
    nvtxRangePushA("worker");
    Spin(2000);
    nvtxRangePop();
  });
  nvtxRangeId_t whole = nvtxRangeStartA("whole-run");
  for (int i = 0; i < iterations; ++i) {
    nvtxRangePushA("iteration");
    nvtxRangePushA("preprocess");
    Spin(500);
    nvtxRangePop();
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = layer;
    nvtxDomainRangePushEx(trt, &a);
    Spin(300);
    nvtxDomainRangePop(trt);
    nvtxMarkA("tick");
    nvtxRangePop();
  }
  nvtxRangeEnd(whole);
  worker.join();
  std::printf("done %d iterations\n", iterations);
  return 0;
}
