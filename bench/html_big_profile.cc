// html_big_profile OUT.json [OPS] [RUNS]: writes a synthetic model profile shaped like a large
// transformer (OPS nodes, default 5000, in encoder/layer.N/... scopes, with fused steps, per-run
// times, op events for every run, machine ceilings and findings) for bench/html_load.py, which
// measures how fast its HTML report opens in headless Chromium.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "analysis/machine.h"
#include "analysis/rules.h"
#include "profile/profile.h"
#include "profile/profile_io.h"

int main(int argc, char** argv) {
  using namespace opscope;
  if (argc < 2) {
    std::fprintf(stderr, "usage: html_big_profile OUT.json [OPS] [RUNS]\n");
    return 2;
  }
  const int n_ops = argc > 2 ? std::atoi(argv[2]) : 5000;
  const int runs = argc > 3 ? std::atoi(argv[3]) : 20;
  profile::Profile p;
  profile::FillHostMeta(p.meta);
  p.meta.kind = "profile";
  p.meta.source = "synthetic/transformer_5000.onnx";
  p.meta.threads = 2;
  p.meta.warmup = 5;
  p.meta.runs = runs;
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(1.0, 0.03);
  static const char* kTypes[] = {
      "MatMul", "Add",  "Softmax", "Transpose", "Reshape", "LayerNormalization",
      "Mul",    "Gelu", "MatMul",  "Add"};
  for (int i = 0; i < n_ops; ++i) {
    profile::OpRecord op;
    const char* type = kTypes[i % 10];
    int layer = i / 10 / 4;
    const char* block = (i / 10) % 4 == 0   ? "attention"
                        : (i / 10) % 4 == 1 ? "attention/output"
                        : (i / 10) % 4 == 2 ? "mlp"
                                            : "mlp/output";
    op.name = "/encoder/layer." + std::to_string(layer) + "/" + block + "/" + type + "_" +
              std::to_string(i);
    op.op_type = type;
    op.index = i;
    op.input_shapes = {{1, 128, 768}};
    op.output_shapes = {{1, 128, 768}};
    const bool matmul = op.op_type == "MatMul";
    const double base = matmul ? 0.08 + 0.002 * (i % 17) : 0.004 + 0.0005 * (i % 7);
    op.flops = matmul ? 2.0 * 128 * 768 * 768 : 128 * 768;
    op.bytes = matmul ? 4.0 * (128 * 768 * 2 + 768 * 768) : 4.0 * 128 * 768 * 2;
    for (int r = 0; r < runs; ++r) op.runs_ms.push_back(base * noise(rng));
    if (type == std::string("Add") && i % 10 == 1) {
      op.status = profile::OpStatus::kFused;
      op.step = p.ops.back().name;
      op.fused_with = {p.ops.back().name};
      p.ops.back().status = profile::OpStatus::kFused;
      p.ops.back().step = p.ops.back().name;
      p.ops.back().fused_with = {op.name};
    }
    p.ops.push_back(op);
  }
  for (int r = 0; r < runs; ++r) {
    int64_t t = 1'000'000'000LL + r * 400'000'000LL;
    double total = 0;
    for (int i = 0; i < n_ops; ++i) {
      int64_t dur = static_cast<int64_t>(p.ops[i].runs_ms[r] * 1e6);
      p.op_events.push_back({i, r, 4242 + (i % 2), t, dur});
      t += dur + 2000;
      total += p.ops[i].runs_ms[r];
    }
    p.e2e.runs_ms.push_back(total * 1.02);
  }
  profile::FinalizeStats(p);
  analysis::MachineCeilings c;
  c.peak_gflops_all = 230;
  c.peak_gflops_one = 117;
  c.triad_gbps = 35;
  c.llc_gbps = 158;
  c.threads = 2;
  c.method = "manual";
  analysis::Diagnose(&p, &c);
  if (auto st = profile::SaveProfile(p, argv[1]); !st.ok()) {
    std::fprintf(stderr, "html_big_profile: %s\n", st.message().c_str());
    return 1;
  }
  return 0;
}
