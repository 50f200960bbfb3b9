// Data-movement kernels of the tensor family, side by side with the references that bound them:
// a memcpy of the same bytes (the bandwidth ceiling) and a naive index-decoding transpose (what
// the kernel replaces). Shapes are the ones BEV and transformer models spend time on.
//
//   build/release/bench/tensor_ops_bench --benchmark_filter=Transpose
// Results and the command used are in docs/ops-tensor.md.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstring>
#include <vector>

#include "engine/ops/common.h"
#include "engine/ops/layout_copy.h"
#include "engine/testing/kernel_runner.h"

namespace opscope::engine {
namespace {

struct Case {
  const char* name;
  std::vector<int64_t> shape, perm;
};

const Case kCases[] = {
    {"NCHW_to_NHWC_1x64x200x200", {1, 64, 200, 200}, {0, 2, 3, 1}},
    {"NHWC_to_NCHW_1x200x200x64", {1, 200, 200, 64}, {0, 3, 1, 2}},
    {"BEV_cams_6x256x16x44_to_6x16x44x256", {6, 256, 16, 44}, {0, 2, 3, 1}},
    {"Heads_8x512x8x64_to_8x8x512x64", {8, 512, 8, 64}, {0, 2, 1, 3}},
    {"Matrix_2048x2048_T", {2048, 2048}, {1, 0}},
};

void NaiveTranspose(const float* in, float* out, const std::vector<int64_t>& shape,
                    const std::vector<int64_t>& perm) {
  const int r = static_cast<int>(shape.size());
  std::vector<int64_t> os(r);
  for (int i = 0; i < r; ++i) os[i] = shape[perm[i]];
  const std::vector<int64_t> is = ContiguousStrides(shape);
  const int64_t n = Numel(shape);
  for (int64_t o = 0; o < n; ++o) {
    int64_t rem = o, off = 0;
    for (int d = r - 1; d >= 0; --d) {
      off += (rem % os[d]) * is[perm[d]];
      rem /= os[d];
    }
    out[o] = in[off];
  }
}

void SetCounters(benchmark::State& st, int64_t n) {
  st.SetBytesProcessed(st.iterations() * n * 4 * 2);  // read + write
}

void BM_Transpose(benchmark::State& st, const Case& c, int threads) {
  omp_set_num_threads(threads);
  Tensor x = testing::RandomTensor(c.shape, 1);
  std::vector<int64_t> os;
  for (int64_t p : c.perm) os.push_back(c.shape[p]);
  Tensor y(DataType::kFloat32, os);
  for (auto _ : st) {
    PermuteCopy(x.raw(), x.shape(), c.perm, y.raw(), 4);
    benchmark::DoNotOptimize(y.raw());
  }
  SetCounters(st, x.numel());
}

void BM_Naive(benchmark::State& st, const Case& c) {
  Tensor x = testing::RandomTensor(c.shape, 1);
  Tensor y(DataType::kFloat32, c.shape);
  for (auto _ : st) {
    NaiveTranspose(x.data<float>(), y.data<float>(), c.shape, c.perm);
    benchmark::DoNotOptimize(y.raw());
  }
  SetCounters(st, x.numel());
}

void BM_Memcpy(benchmark::State& st, const Case& c) {
  Tensor x = testing::RandomTensor(c.shape, 1);
  Tensor y(DataType::kFloat32, c.shape);
  for (auto _ : st) {
    std::memcpy(y.raw(), x.raw(), x.nbytes());
    benchmark::DoNotOptimize(y.raw());
  }
  SetCounters(st, x.numel());
}

int Register() {
  for (const Case& c : kCases) {
    const std::string n = c.name;
    benchmark::RegisterBenchmark(("Transpose/" + n + "/memcpy").c_str(), BM_Memcpy, c)->UseRealTime();
    benchmark::RegisterBenchmark(("Transpose/" + n + "/naive").c_str(), BM_Naive, c)->UseRealTime();
    benchmark::RegisterBenchmark(("Transpose/" + n + "/kernel_1t").c_str(), BM_Transpose, c, 1)->UseRealTime();
    benchmark::RegisterBenchmark(("Transpose/" + n + "/kernel_2t").c_str(), BM_Transpose, c, 2)->UseRealTime();
  }
  return 0;
}
const int kRegistered = Register();

}  // namespace
}  // namespace opscope::engine

BENCHMARK_MAIN();
