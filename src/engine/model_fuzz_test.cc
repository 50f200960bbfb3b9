// Runs the model-loading fuzz entry point over a seed corpus (the demo model, the test model and
// a sample of ONNX conformance models) with truncations and random byte flips: every input must
// come back as a Status, never a crash or a hang.
#include "engine/model_fuzz.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "base/files.h"
#include "base/testing/fuzz_corpus.h"

namespace opscope::engine {
namespace {

std::vector<std::string> Seeds() {
  std::vector<std::string> seeds;
  for (const char* rel :
       {"/models/bev_demo.onnx", "/tests/models/twin_matmul.onnx",
        "/tests/models/control_flow.onnx", "/tests/fuzz_corpus/model_fuzz/seed_cf_nested.onnx",
        "/tests/fuzz_corpus/model_fuzz/seed_cf_scan.onnx"}) {
    auto b = ReadFile(std::string(OPSCOPE_SOURCE_DIR) + rel);
    if (b.ok()) seeds.push_back(*b);
  }
  const char* dir = "/usr/share/libonnx-testdata/data/node";
  int taken = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (taken++ % 40 != 0) continue;
    auto b = ReadFile((e.path() / "model.onnx").string());
    if (b.ok()) seeds.push_back(*b);
  }
  return seeds;
}

TEST(ModelFuzzTest, TruncationsAndBitFlipsNeverCrash) {
  auto seeds = Seeds();
  ASSERT_FALSE(seeds.empty());
  std::mt19937 rng(12345);
  int cases = 0;
  for (const std::string& seed : seeds) {
    // Truncations at a spread of lengths (small seeds: every 7th byte).
    size_t step = std::max<size_t>(7, seed.size() / 25);
    for (size_t len = 0; len < seed.size(); len += step, ++cases)
      FuzzLoadModel(reinterpret_cast<const uint8_t*>(seed.data()), len);
    // Random flips, only into seeds small enough to load quickly.
    if (seed.size() > 100000) continue;
    for (int i = 0; i < 60; ++i, ++cases) {
      std::string m = seed;
      int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) m[rng() % m.size()] ^= static_cast<char>(1u << (rng() % 8));
      FuzzLoadModel(reinterpret_cast<const uint8_t*>(m.data()), m.size());
    }
  }
  RecordProperty("cases", cases);
  SUCCEED() << cases << " mutated models loaded without crashing";
}

// Both model fuzzers (byte-level model_fuzz, structure-aware model_struct_fuzz) share the entry
// point FuzzLoadModel.
TEST(ModelFuzzTest, RegressionCorpus) {
  for (const char* target : {"model_fuzz", "model_struct_fuzz"}) {
    int n = opscope::testing::ReplayFuzzCorpus(target, [](const std::string& b) {
      FuzzLoadModel(reinterpret_cast<const uint8_t*>(b.data()), b.size());
    });
    EXPECT_GT(n, 0) << "tests/fuzz_corpus/" << target << " is empty";
  }
}

}  // namespace
}  // namespace opscope::engine
