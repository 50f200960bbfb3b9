// Elementwise / reduction / softmax kernels against naive twins, side by side in one run.
//
//   build/release/bench/elementwise_bench --benchmark_min_time=0.2
//
// Each pair runs the engine kernel (through the registry, output buffer reused as the arena
// would) and a straightforward loop computing the same result (index arithmetic with a division
// per dimension for broadcasting, std::exp for softmax, a single accumulator for reductions).
// Compare the pairs' times as ratios; absolute numbers depend on the machine.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cmath>
#include <memory>
#include <vector>

#include "engine/kernel.h"
#include "engine/testing/kernel_runner.h"

namespace opscope::engine {
namespace {

using testing::IntAttr;
using testing::IntsAttr;
using testing::MakeNode;
using testing::RandomTensor;

class ReuseContext : public KernelContext {
 public:
  explicit ReuseContext(std::vector<const Tensor*> in) : in_(std::move(in)) {}
  int num_inputs() const override { return static_cast<int>(in_.size()); }
  const Tensor* input(int i) const override { return i < num_inputs() ? in_[i] : nullptr; }
  int num_outputs() const override { return 1; }
  bool output_wanted(int i) const override { return i == 0; }
  StatusOr<Tensor*> Output(int, DataType dt, const std::vector<int64_t>& shape) override {
    if (out_.empty_data() || out_.shape() != shape || out_.dtype() != dt) out_ = Tensor(dt, shape);
    return &out_;
  }
  int threads() const override { return omp_get_max_threads(); }

 private:
  std::vector<const Tensor*> in_;
  Tensor out_;
};

void RunNode(benchmark::State& state, const Node& n, std::vector<const Tensor*> in, int64_t elems) {
  auto k = FindKernel("", n.op_type)(n);
  if (!k.ok()) {
    state.SkipWithError(k.status().message().c_str());
    return;
  }
  ReuseContext ctx(std::move(in));
  for (auto _ : state) {
    Status st = (*k)->Run(ctx);
    benchmark::DoNotOptimize(st);
  }
  state.SetItemsProcessed(state.iterations() * elems);
}

// ---- Add [8,64,56,56] + [1,64,1,1] (per-channel bias) ----
const std::vector<int64_t> kAct = {8, 64, 56, 56};
const std::vector<int64_t> kChan = {1, 64, 1, 1};

void BM_AddChannelBroadcast_Kernel(benchmark::State& state) {
  Tensor a = RandomTensor(kAct, 1), b = RandomTensor(kChan, 2);
  RunNode(state, MakeNode("Add", 2, 1), {&a, &b}, a.numel());
}
void BM_AddChannelBroadcast_Naive(benchmark::State& state) {
  Tensor a = RandomTensor(kAct, 1), b = RandomTensor(kChan, 2), o(DataType::kFloat32, kAct);
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* po = o.data<float>();
  for (auto _ : state) {
    for (int64_t i = 0; i < a.numel(); ++i) {
      int64_t c = (i / (56 * 56)) % 64;  // the division per element a plan avoids
      po[i] = pa[i] + pb[c];
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * a.numel());
}

// ---- Mul same shape [8,64,56,56] ----
void BM_MulSameShape_Kernel(benchmark::State& state) {
  Tensor a = RandomTensor(kAct, 1), b = RandomTensor(kAct, 2);
  RunNode(state, MakeNode("Mul", 2, 1), {&a, &b}, a.numel());
}

// ---- Softmax over the last axis of [256, 1000] ----
void BM_Softmax_Kernel(benchmark::State& state) {
  Tensor x = RandomTensor({256, 1000}, 3, -10, 10);
  RunNode(state, MakeNode("Softmax", 1, 1, 13), {&x}, x.numel());
}
void BM_Softmax_Naive(benchmark::State& state) {
  Tensor x = RandomTensor({256, 1000}, 3, -10, 10), y(DataType::kFloat32, {256, 1000});
  for (auto _ : state) {
    for (int64_t o = 0; o < 256; ++o) {
      const float* xr = x.data<float>() + o * 1000;
      float* yr = y.data<float>() + o * 1000;
      float m = xr[0];
      for (int r = 1; r < 1000; ++r) m = std::max(m, xr[r]);
      float s = 0;
      for (int r = 0; r < 1000; ++r) s += (yr[r] = std::exp(xr[r] - m));
      for (int r = 0; r < 1000; ++r) yr[r] /= s;
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * x.numel());
}

// ---- ReduceMean over the last axis of [4096, 768] (LayerNorm-style) ----
void BM_ReduceMeanLastAxis_Kernel(benchmark::State& state) {
  Tensor x = RandomTensor({4096, 768}, 4);
  Node n = MakeNode("ReduceMean", 1, 1, 13);
  n.attrs.Set("axes", IntsAttr({-1}));
  RunNode(state, n, {&x}, x.numel());
}
void BM_ReduceMeanLastAxis_Naive(benchmark::State& state) {
  Tensor x = RandomTensor({4096, 768}, 4), y(DataType::kFloat32, {4096, 1});
  for (auto _ : state) {
    for (int64_t o = 0; o < 4096; ++o) {
      float s = 0;
      for (int r = 0; r < 768; ++r) s += x.data<float>()[o * 768 + r];
      y.data<float>()[o] = s / 768;
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * x.numel());
}

// ---- ReduceSum over axis 0 of [512, 4096] (column sums) ----
void BM_ReduceSumAxis0_Kernel(benchmark::State& state) {
  Tensor x = RandomTensor({512, 4096}, 5);
  Node n = MakeNode("ReduceSum", 1, 1, 11);
  n.attrs.Set("axes", IntsAttr({0}));
  RunNode(state, n, {&x}, x.numel());
}
void BM_ReduceSumAxis0_Naive(benchmark::State& state) {
  Tensor x = RandomTensor({512, 4096}, 5), y(DataType::kFloat32, {1, 4096});
  for (auto _ : state) {
    for (int64_t i = 0; i < 4096; ++i) {  // column by column: strided reads
      float s = 0;
      for (int64_t r = 0; r < 512; ++r) s += x.data<float>()[r * 4096 + i];
      y.data<float>()[i] = s;
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * x.numel());
}

// ---- Sigmoid on [8,64,56,56] ----
void BM_Sigmoid_Kernel(benchmark::State& state) {
  Tensor x = RandomTensor(kAct, 6, -6, 6);
  RunNode(state, MakeNode("Sigmoid", 1, 1), {&x}, x.numel());
}

// ---- TopK k=5 of [64, 1000] ----
void BM_TopK5_Kernel(benchmark::State& state) {
  Tensor x = RandomTensor({64, 1000}, 7);
  Tensor k = testing::IntTensor({1}, {5});
  auto kern = FindKernel("", "TopK")(MakeNode("TopK", 2, 2, 11));
  struct Ctx : ReuseContext {
    using ReuseContext::ReuseContext;
    int num_outputs() const override { return 2; }
    StatusOr<Tensor*> Output(int i, DataType dt, const std::vector<int64_t>& s) override {
      if (i == 0) return ReuseContext::Output(0, dt, s);
      idx = Tensor(dt, s);
      return &idx;
    }
    Tensor idx;
  } ctx({&x, &k});
  for (auto _ : state) benchmark::DoNotOptimize((*kern)->Run(ctx));
  state.SetItemsProcessed(state.iterations() * x.numel());
}

BENCHMARK(BM_AddChannelBroadcast_Kernel)->UseRealTime();
BENCHMARK(BM_AddChannelBroadcast_Naive)->UseRealTime();
BENCHMARK(BM_MulSameShape_Kernel)->UseRealTime();
BENCHMARK(BM_Softmax_Kernel)->UseRealTime();
BENCHMARK(BM_Softmax_Naive)->UseRealTime();
BENCHMARK(BM_ReduceMeanLastAxis_Kernel)->UseRealTime();
BENCHMARK(BM_ReduceMeanLastAxis_Naive)->UseRealTime();
BENCHMARK(BM_ReduceSumAxis0_Kernel)->UseRealTime();
BENCHMARK(BM_ReduceSumAxis0_Naive)->UseRealTime();
BENCHMARK(BM_Sigmoid_Kernel)->UseRealTime();
BENCHMARK(BM_TopK5_Kernel)->UseRealTime();

}  // namespace
}  // namespace opscope::engine

BENCHMARK_MAIN();
