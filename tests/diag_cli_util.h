// Helpers of the end-to-end tests of `run`, `diff` and `machine`; commands run through
// RunShell (tests/cli_util.h).
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "tests/cli_util.h"

namespace opscope::testing {

// A folder of its own for the running test (CTest runs the tests of a file as parallel
// processes, so tests must not share output paths).
inline std::string PerTestTempDir(const std::string& prefix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string d = ::testing::TempDir() + "/" + prefix;
  mkdir(d.c_str(), 0755);
  d += std::string("/") + (info ? info->name() : "none");
  mkdir(d.c_str(), 0755);
  return d;
}

inline std::string Opscope() { return OpscopeBinary(); }

}  // namespace opscope::testing
