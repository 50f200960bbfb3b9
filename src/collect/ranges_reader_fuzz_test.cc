// Runs the fuzz entry point on the seed corpus, every truncation and every single-bit flip.
#include <dirent.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "base/testing/fuzz_corpus.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

TEST(RangesReaderFuzz, SeedsTruncationsBitFlips) {
  std::string dir = std::string(OPSCOPE_SOURCE_DIR) + "/src/collect/testdata/ranges_corpus";
  DIR* d = opendir(dir.c_str());
  ASSERT_NE(d, nullptr) << dir;
  int seeds = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(dir + "/" + e->d_name, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    ++seeds;
    auto run = [](const std::string& x) {
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(x.data()), x.size());
    };
    run(s);
    for (size_t n = 0; n < s.size(); ++n) run(s.substr(0, n));
    for (size_t i = 0; i < s.size(); ++i)
      for (int b = 0; b < 8; ++b) {
        std::string f = s;
        f[i] = static_cast<char>(f[i] ^ (1 << b));
        run(f);
      }
  }
  closedir(d);
  EXPECT_GE(seeds, 2);
}

TEST(RangesReaderFuzz, RegressionCorpus) {
  int n = opscope::testing::ReplayFuzzCorpus("ranges_reader_fuzz", [](const std::string& b) {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  });
  EXPECT_GT(n, 0) << "tests/fuzz_corpus/ranges_reader_fuzz is empty";
}

}  // namespace
