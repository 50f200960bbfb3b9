// war_story: a CUDA inference loop shaped like the problems users bring to opscope, for the
// prepared device check (tests/gpu/device_check.sh, docs/gpu.md).
//
// Each iteration (NVTX range "infer") on one stream:
//   config_upload  the same 1 MiB of configuration copied HtoD with a blocking cudaMemcpy from
//                  pageable memory, every iteration (the copy that should be done once)
//   input_upload   a 4 MiB input HtoD with cudaMemcpyAsync from pinned memory
//   attention      attn_scores: one query against 512 Ki keys of 64 halves (64 MiB read per
//                  launch, 2 FLOP per 2 bytes): memory-bound
//   gemm           sgemm_tiled: 1024^3 fp32 GEMM with shared-memory and register tiling:
//                  compute-bound
//   bias           bias_small: one block of 32 threads: latency-bound, low occupancy
//   download       256 KiB DtoH async into pinned memory
// then, while the GPU works, the CPU pre-processes the next input (NVTX "preprocess", ~2 ms of
// arithmetic on the host), and only then waits for the stream (cudaStreamSynchronize): CPU
// pre-processing overlaps GPU work. CUDA events bracket the three kernels of every iteration
// after the warm-up, so the program reports the kernel times it measured itself.
//
// Usage: war_story [--iterations N] [--warmup W]
// Prints one line:
//   WAR_STORY iterations=N loop_ms=X attention_ms=A gemm_ms=G bias_ms=B checksum=C device="..."
// (A, G, B: mean per launch by CUDA events).
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                                        \
  do {                                                                                     \
    cudaError_t err_ = (call);                                                             \
    if (err_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "war_story: %s failed: %s\n", #call, cudaGetErrorString(err_)); \
      std::exit(2);                                                                        \
    }                                                                                      \
  } while (0)

constexpr int kHeadDim = 64;
constexpr int kKeys = 512 * 1024;
constexpr int kGemmN = 1024;
constexpr size_t kConfigBytes = 1 << 20;
constexpr size_t kInputBytes = 4 << 20;
constexpr size_t kOutputBytes = 256 << 10;

// scores[j] = q . K[j] / sqrt(d): each thread streams one 128-byte key row.
__global__ void attn_scores(const __half* q, const __half* keys, float* scores, int n_keys, int dim,
                            int stride) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n_keys) return;
  const __half2* row = reinterpret_cast<const __half2*>(keys + static_cast<size_t>(j) * stride);
  const __half2* qq = reinterpret_cast<const __half2*>(q);
  float acc = 0.f;
  for (int d = 0; d < dim / 2; ++d) {
    float2 k = __half22float2(row[d]);
    float2 x = __half22float2(qq[d]);
    acc += k.x * x.x + k.y * x.y;
  }
  scores[j] = acc * rsqrtf(static_cast<float>(dim));
}

// C = A * B (n x n, row-major). 64x64 block tile, 8-deep k slices, 4x4 outputs per thread.
constexpr int kTile = 64, kSlice = 8, kPerThread = 4;
__global__ void sgemm_tiled(const float* a, const float* b, float* c, int n, int m, int k) {
  __shared__ float as[kSlice][kTile];
  __shared__ float bs[kSlice][kTile];
  int tx = threadIdx.x % (kTile / kPerThread), ty = threadIdx.x / (kTile / kPerThread);
  int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;
  float acc[kPerThread][kPerThread] = {};
  for (int s = 0; s < k; s += kSlice) {
    // 256 threads load 64x8 of A (transposed into as) and 8x64 of B: two floats each.
    for (int l = threadIdx.x; l < kTile * kSlice; l += blockDim.x) {
      int r = l / kSlice, q = l % kSlice;
      as[q][r] = a[static_cast<size_t>(row0 + r) * k + s + q];
      int br = l / kTile, bc = l % kTile;
      bs[br][bc] = b[static_cast<size_t>(s + br) * m + col0 + bc];
    }
    __syncthreads();
#pragma unroll
    for (int q = 0; q < kSlice; ++q) {
      float ra[kPerThread], rb[kPerThread];
#pragma unroll
      for (int i = 0; i < kPerThread; ++i) {
        ra[i] = as[q][ty * kPerThread + i];
        rb[i] = bs[q][tx * kPerThread + i];
      }
#pragma unroll
      for (int i = 0; i < kPerThread; ++i)
#pragma unroll
        for (int j = 0; j < kPerThread; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < kPerThread; ++i)
    for (int j = 0; j < kPerThread; ++j)
      c[static_cast<size_t>(row0 + ty * kPerThread + i) * m + col0 + tx * kPerThread + j] =
          acc[i][j];
}

__global__ void bias_small(float* x, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] = x[i] * 0.5f + 1.0f;
}

// ~2 ms of host arithmetic: the next input's "pre-processing".
double Preprocess(std::vector<float>& input, int iteration) {
  double sum = 0;
  for (int pass = 0; pass < 6; ++pass)
    for (size_t i = 0; i < input.size(); ++i) {
      float v = std::sin(static_cast<float>(i + iteration) * 1e-3f) * 0.5f + input[i] * 0.25f;
      input[i] = v;
      sum += v;
    }
  return sum;
}

int main(int argc, char** argv) {
  int iterations = 20, warmup = 2;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iterations") && i + 1 < argc) {
      iterations = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--warmup") && i + 1 < argc) {
      warmup = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: war_story [--iterations N] [--warmup W]\n");
      return 2;
    }
  }
  if (iterations < 1 || warmup < 0) {
    std::fprintf(stderr, "war_story: --iterations must be >= 1 and --warmup >= 0\n");
    return 2;
  }
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));

  std::vector<unsigned char> config(kConfigBytes);  // pageable, constant
  for (size_t i = 0; i < config.size(); ++i) config[i] = static_cast<unsigned char>(i * 131 + 7);
  float *input_pinned, *output_pinned;
  CHECK(cudaMallocHost(&input_pinned, kInputBytes));
  CHECK(cudaMallocHost(&output_pinned, kOutputBytes));
  std::vector<float> next_input(kInputBytes / sizeof(float), 1.0f);

  unsigned char* d_config;
  float *d_input, *d_scores, *d_a, *d_b, *d_c, *d_bias;
  __half *d_q, *d_keys;
  CHECK(cudaMalloc(&d_config, kConfigBytes));
  CHECK(cudaMalloc(&d_input, kInputBytes));
  CHECK(cudaMalloc(&d_q, kHeadDim * sizeof(__half)));
  CHECK(cudaMalloc(&d_keys, static_cast<size_t>(kKeys) * kHeadDim * sizeof(__half)));
  CHECK(cudaMalloc(&d_scores, kKeys * sizeof(float)));
  size_t gemm_bytes = static_cast<size_t>(kGemmN) * kGemmN * sizeof(float);
  CHECK(cudaMalloc(&d_a, gemm_bytes));
  CHECK(cudaMalloc(&d_b, gemm_bytes));
  CHECK(cudaMalloc(&d_c, gemm_bytes));
  CHECK(cudaMalloc(&d_bias, 1024 * sizeof(float)));
  CHECK(cudaMemset(d_keys, 0x3c, static_cast<size_t>(kKeys) * kHeadDim * sizeof(__half)));  // ~1.0h
  CHECK(cudaMemset(d_q, 0x3c, kHeadDim * sizeof(__half)));
  CHECK(cudaMemset(d_a, 0, gemm_bytes));
  CHECK(cudaMemset(d_b, 0, gemm_bytes));
  CHECK(cudaMemset(d_bias, 0, 1024 * sizeof(float)));

  cudaEvent_t ev[4];
  for (auto& e : ev) CHECK(cudaEventCreate(&e));
  double attention_ms = 0, gemm_ms = 0, bias_ms = 0, checksum = 0;
  int measured = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int it = 0; it < warmup + iterations; ++it) {
    const bool measure = it >= warmup;
    if (it == warmup) t0 = std::chrono::steady_clock::now();
    nvtxRangePushA("infer");
    nvtxRangePushA("config_upload");
    CHECK(cudaMemcpy(d_config, config.data(), kConfigBytes, cudaMemcpyHostToDevice));
    nvtxRangePop();
    nvtxRangePushA("input_upload");
    std::memcpy(input_pinned, next_input.data(), kInputBytes);
    CHECK(cudaMemcpyAsync(d_input, input_pinned, kInputBytes, cudaMemcpyHostToDevice, stream));
    nvtxRangePop();

    nvtxRangePushA("attention");
    CHECK(cudaEventRecord(ev[0], stream));
    attn_scores<<<(kKeys + 255) / 256, 256, 0, stream>>>(d_q, d_keys, d_scores, kKeys, kHeadDim,
                                                         kHeadDim);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(ev[1], stream));
    nvtxRangePop();

    nvtxRangePushA("gemm");
    sgemm_tiled<<<dim3(kGemmN / kTile, kGemmN / kTile), 256, 0, stream>>>(d_a, d_b, d_c, kGemmN,
                                                                          kGemmN, kGemmN);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(ev[2], stream));
    nvtxRangePop();

    nvtxRangePushA("bias");
    bias_small<<<1, 32, 0, stream>>>(d_bias, 1024);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(ev[3], stream));
    nvtxRangePop();

    nvtxRangePushA("download");
    CHECK(cudaMemcpyAsync(output_pinned, d_scores, kOutputBytes, cudaMemcpyDeviceToHost, stream));
    nvtxRangePop();

    nvtxRangePushA("preprocess");  // overlaps the GPU work just queued
    checksum += Preprocess(next_input, it);
    nvtxRangePop();

    nvtxRangePushA("wait");
    CHECK(cudaStreamSynchronize(stream));
    nvtxRangePop();
    nvtxRangePop();  // infer
    if (measure) {
      float ms;
      CHECK(cudaEventElapsedTime(&ms, ev[0], ev[1]));
      attention_ms += ms;
      CHECK(cudaEventElapsedTime(&ms, ev[1], ev[2]));
      gemm_ms += ms;
      CHECK(cudaEventElapsedTime(&ms, ev[2], ev[3]));
      bias_ms += ms;
      ++measured;
    }
  }
  double loop_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  checksum += output_pinned[0];
  std::printf(
      "WAR_STORY iterations=%d loop_ms=%.3f attention_ms=%.6f gemm_ms=%.6f bias_ms=%.6f "
      "checksum=%.3f "
      "device=\"%s\" cc=%d.%d\n",
      measured, loop_ms, attention_ms / measured, gemm_ms / measured, bias_ms / measured, checksum,
      prop.name, prop.major, prop.minor);
  for (auto& e : ev) cudaEventDestroy(e);
  cudaFree(d_config);
  cudaFree(d_input);
  cudaFree(d_q);
  cudaFree(d_keys);
  cudaFree(d_scores);
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(d_c);
  cudaFree(d_bias);
  cudaFreeHost(input_pinned);
  cudaFreeHost(output_pinned);
  cudaStreamDestroy(stream);
  return 0;
}
