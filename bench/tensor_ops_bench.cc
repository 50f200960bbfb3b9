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

// A minimal context that keeps its outputs between iterations (no allocation in the loop).
class BenchContext : public KernelContext {
 public:
  explicit BenchContext(std::vector<const Tensor*> in) : in_(std::move(in)) {}
  int num_inputs() const override { return static_cast<int>(in_.size()); }
  const Tensor* input(int i) const override { return i < num_inputs() ? in_[i] : nullptr; }
  int num_outputs() const override { return 1; }
  bool output_wanted(int i) const override { return i == 0; }
  StatusOr<Tensor*> Output(int, DataType dt, const std::vector<int64_t>& shape) override {
    if (out_.shape() != shape || out_.dtype() != dt) out_ = Tensor(dt, shape);
    return &out_;
  }
  int threads() const override { return omp_get_max_threads(); }
  Tensor out_;

 private:
  std::vector<const Tensor*> in_;
};

// Resize 1x64x100x100 -> 1x64x200x200 (BEV feature upsampling) and GridSample of the same
// input at 200x200 points, against a memcpy of the output bytes.
void BM_Resize(benchmark::State& st, std::string mode, int threads) {
  omp_set_num_threads(threads);
  Node n = testing::MakeNode("Resize", 3, 1, 13);
  n.attrs.Set("mode", testing::StringAttr(mode));
  auto k = FindKernel("", "Resize")(n);
  Tensor x = testing::RandomTensor({1, 64, 100, 100}, 1);
  Tensor roi(DataType::kFloat32, {0});
  Tensor scales = testing::FloatTensor({4}, {1, 1, 2, 2});
  BenchContext ctx({&x, &roi, &scales});
  for (auto _ : st) {
    if (!(*k)->Run(ctx).ok()) st.SkipWithError("resize failed");
    benchmark::DoNotOptimize(ctx.out_.raw());
  }
  st.SetBytesProcessed(st.iterations() * static_cast<int64_t>(x.nbytes() + ctx.out_.nbytes()));
}

// Random points (worst case for locality) or a smooth warp (a slightly rotated and scaled
// identity grid, what BEV view transforms and deformable attention mostly sample).
void BM_GridSample(benchmark::State& st, std::string mode, int threads, bool smooth) {
  omp_set_num_threads(threads);
  Node n = testing::MakeNode("GridSample", 2, 1, 16);
  n.attrs.Set("mode", testing::StringAttr(mode));
  auto k = FindKernel("", "GridSample")(n);
  Tensor x = testing::RandomTensor({1, 64, 100, 100}, 1);
  Tensor g = testing::RandomTensor({1, 200, 200, 2}, 2, -1.1f, 1.1f);
  if (smooth) {
    float* p = g.data<float>();
    for (int i = 0; i < 200; ++i)
      for (int j = 0; j < 200; ++j) {
        const float u = j / 99.5f - 1, v = i / 99.5f - 1;
        p[(i * 200 + j) * 2] = 0.9f * (0.995f * u - 0.0998f * v);
        p[(i * 200 + j) * 2 + 1] = 0.9f * (0.0998f * u + 0.995f * v);
      }
  }
  BenchContext ctx({&x, &g});
  for (auto _ : st) {
    if (!(*k)->Run(ctx).ok()) st.SkipWithError("gridsample failed");
    benchmark::DoNotOptimize(ctx.out_.raw());
  }
  st.SetBytesProcessed(st.iterations() *
                       static_cast<int64_t>(x.nbytes() + g.nbytes() + ctx.out_.nbytes()));
}

void BM_OutputMemcpy(benchmark::State& st) {
  Tensor a = testing::RandomTensor({1, 64, 200, 200}, 1);
  Tensor b(DataType::kFloat32, {1, 64, 200, 200});
  for (auto _ : st) {
    std::memcpy(b.raw(), a.raw(), a.nbytes());
    benchmark::DoNotOptimize(b.raw());
  }
  st.SetBytesProcessed(st.iterations() * static_cast<int64_t>(2 * a.nbytes()));
}

int Register() {
  benchmark::RegisterBenchmark("Resize2x/1x64x100x100/memcpy_of_output", BM_OutputMemcpy)
      ->UseRealTime();
  for (const char* m : {"nearest", "linear", "cubic"})
    for (int t : {1, 2})
      benchmark::RegisterBenchmark(
          ("Resize2x/1x64x100x100/" + std::string(m) + "_" + std::to_string(t) + "t").c_str(),
          BM_Resize, m, t)
          ->UseRealTime();
  for (bool smooth : {false, true})
    for (const char* m : {"nearest", "bilinear", "bicubic"})
      for (int t : {1, 2})
        benchmark::RegisterBenchmark(
            ("GridSample/1x64x100x100_at_200x200/" + std::string(smooth ? "smooth_" : "random_") +
             m + "_" + std::to_string(t) + "t")
                .c_str(),
            BM_GridSample, m, t, smooth)
            ->UseRealTime();
  for (const Case& c : kCases) {
    const std::string n = c.name;
    benchmark::RegisterBenchmark(("Transpose/" + n + "/memcpy").c_str(), BM_Memcpy, c)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("Transpose/" + n + "/naive").c_str(), BM_Naive, c)->UseRealTime();
    benchmark::RegisterBenchmark(("Transpose/" + n + "/kernel_1t").c_str(), BM_Transpose, c, 1)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("Transpose/" + n + "/kernel_2t").c_str(), BM_Transpose, c, 2)
        ->UseRealTime();
  }
  return 0;
}
const int kRegistered = Register();

}  // namespace
}  // namespace opscope::engine

BENCHMARK_MAIN();
