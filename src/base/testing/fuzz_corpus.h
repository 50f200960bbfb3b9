// Replays a fuzz target's regression corpus (tests/fuzz_corpus/<target>/, one input per file:
// crashes fuzzing found once, and inputs that reach deep into the parser) through its entry point
// in an ordinary test binary, so every build checks them without libFuzzer.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "base/files.h"

namespace opscope::testing {

// Calls `run(bytes)` for every file of the corpus (in name order, so a failure names its file)
// and returns how many there were.
template <typename Fn>
int ReplayFuzzCorpus(const std::string& target, Fn run) {
  std::string dir = std::string(OPSCOPE_SOURCE_DIR) + "/tests/fuzz_corpus/" + target;
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_regular_file()) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    auto bytes = ReadFile(f);
    EXPECT_TRUE(bytes.ok()) << f;
    if (!bytes.ok()) continue;
    SCOPED_TRACE(f);
    std::fprintf(stderr, "replaying %s\n", f.c_str());  // names the input if it crashes
    run(*bytes);
  }
  return static_cast<int>(files.size());
}

}  // namespace opscope::testing
