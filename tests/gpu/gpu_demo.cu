// gpu_demo: a small CUDA "model" whose profile is known by construction, for tests/gpu/run.sh.
//
// Each iteration (NVTX range "iteration") does, in order:
//   preprocess     ~1 ms of CPU work while the GPU is idle
//   upload         a 1 MiB configuration copied HtoD from pageable memory with cudaMemcpy —
//                  the same bytes every iteration, deliberately (the copy opscope must flag) —
//                  then a 4 MiB input copied HtoD asynchronously from pinned memory
//   layer1_conv    kernel conv_like (long, compute-bound)
//   layer2_relu    kernel relu_scale
//   layer3_reduce  kernel block_reduce (dynamic shared memory)
//   download       256 KiB DtoH into pinned memory, then cudaStreamSynchronize
//   postprocess    ~0.3 ms of CPU work
// CUDA events bracket every kernel of the measured iterations, so the program reports the
// kernel time it measured itself; opscope's kernel times must agree within 5%.
//
// Usage: gpu_demo [--iterations N] [--work W] [--crash-after K]
// Prints one line: GPU_DEMO iterations=N kernels=K event_kernel_ms=X loop_ms=Y device="..."
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                                       \
  do {                                                                                    \
    cudaError_t err_ = (call);                                                            \
    if (err_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "gpu_demo: %s failed: %s\n", #call, cudaGetErrorString(err_)); \
      std::exit(2);                                                                       \
    }                                                                                     \
  } while (0)

__global__ void conv_like(const float* in, const float* cfg, float* out, int n, int reps) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = in[i];
  for (int r = 0; r < reps; ++r) acc = acc * cfg[r & 255] + 0.5f;
  out[i] = acc;
}

__global__ void relu_scale(float* x, int n, int reps) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int r = 0; r < reps; ++r) v = fmaxf(v * 0.999f, 0.f) + 1e-6f;
  x[i] = v;
}

__global__ void block_reduce(const float* x, float* partial, int n) {
  extern __shared__ float buf[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[threadIdx.x] = i < n ? x[i] : 0.f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = buf[0];
}

static void Spin(int us) {
  auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}

int main(int argc, char** argv) {
  int iterations = 50, work = 20000,
      crash_after = -1;  // work: ~1 ms of conv_like on an H100-class GPU
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--iterations"))
      iterations = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--work"))
      work = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--crash-after"))
      crash_after = std::atoi(argv[i + 1]);
  }
  const int n = 1 << 20;  // 4 MiB of floats
  const int threads = 256, blocks = n / threads;
  const size_t config_floats = (1 << 20) / sizeof(float);      // 1 MiB
  const size_t out_floats = blocks;                            // 4096 partial sums = 16 KiB ...
  const size_t download_floats = (256 << 10) / sizeof(float);  // ... downloaded as 256 KiB

  cudaDeviceProp prop;
  CHECK(cudaSetDevice(0));
  CHECK(cudaGetDeviceProperties(&prop, 0));

  std::vector<float> config(config_floats);  // pageable on purpose
  for (size_t i = 0; i < config_floats; ++i)
    config[i] = 0.5f + 0.25f * static_cast<float>(i % 3) / 3.f;
  float *h_in = nullptr, *h_out = nullptr;
  CHECK(cudaMallocHost(&h_in, n * sizeof(float)));
  CHECK(cudaMallocHost(&h_out, download_floats * sizeof(float)));
  float *d_cfg, *d_in, *d_mid, *d_partial;
  CHECK(cudaMalloc(&d_cfg, config_floats * sizeof(float)));
  CHECK(cudaMalloc(&d_in, n * sizeof(float)));
  CHECK(cudaMalloc(&d_mid, n * sizeof(float)));
  CHECK(cudaMalloc(&d_partial, download_floats * sizeof(float)));
  CHECK(cudaMemset(d_partial, 0, download_floats * sizeof(float)));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  std::vector<cudaEvent_t> events(6);
  for (auto& e : events) CHECK(cudaEventCreate(&e));
  (void)out_floats;

  double event_ms = 0;
  int kernels = 0;
  auto one_iteration = [&](const char* name, bool measure, int index) {
    nvtxRangePushA(name);
    nvtxRangePushA("preprocess");
    Spin(1000);
    for (int i = 0; i < n; i += 1024) h_in[i] = static_cast<float>(index + i);
    nvtxRangePop();

    nvtxRangePushA("upload");
    CHECK(cudaMemcpy(d_cfg, config.data(), config_floats * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpyAsync(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice, stream));
    nvtxRangePop();

    nvtxRangePushA("layer1_conv");
    CHECK(cudaEventRecord(events[0], stream));
    conv_like<<<blocks, threads, 0, stream>>>(d_in, d_cfg, d_mid, n, work);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(events[1], stream));
    nvtxRangePop();

    nvtxRangePushA("layer2_relu");
    CHECK(cudaEventRecord(events[2], stream));
    relu_scale<<<blocks, threads, 0, stream>>>(d_mid, n, work / 4);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(events[3], stream));
    nvtxRangePop();

    nvtxRangePushA("layer3_reduce");
    CHECK(cudaEventRecord(events[4], stream));
    block_reduce<<<blocks, threads, threads * sizeof(float), stream>>>(d_mid, d_partial, n);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(events[5], stream));
    nvtxRangePop();

    nvtxRangePushA("download");
    CHECK(cudaMemcpyAsync(h_out, d_partial, download_floats * sizeof(float), cudaMemcpyDeviceToHost,
                          stream));
    CHECK(cudaStreamSynchronize(stream));
    nvtxRangePop();

    if (measure) {
      for (int k = 0; k < 3; ++k) {
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, events[2 * k], events[2 * k + 1]));
        event_ms += ms;
        ++kernels;
      }
    }
    nvtxRangePushA("postprocess");
    Spin(300);
    nvtxRangePop();
    nvtxRangePop();
  };

  for (int w = 0; w < 2; ++w) one_iteration("warmup", false, w);
  auto t0 = std::chrono::steady_clock::now();
  for (int it = 0; it < iterations; ++it) {
    if (it == crash_after) {
      std::fflush(stdout);
      volatile int* null = nullptr;
      *null = 1;  // a crash in the middle of tracing: opscope must still report what came before
    }
    one_iteration("iteration", true, it);
  }
  double loop_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "GPU_DEMO iterations=%d kernels=%d event_kernel_ms=%.6f loop_ms=%.3f device=\"%s\" "
      "cc=%d.%d\n",
      iterations, kernels, event_ms, loop_ms, prop.name, prop.major, prop.minor);
  std::fflush(stdout);
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(d_cfg));
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_mid));
  CHECK(cudaFree(d_partial));
  CHECK(cudaFreeHost(h_in));
  CHECK(cudaFreeHost(h_out));
  return 0;
}
