// Runs the opscope binary (or any command) through the shell and captures stdout, stderr and
// the exit status, for the end-to-end tests of `run`, `diff` and `machine`.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace opscope::testing {

struct Result {
  int code = -1;
  std::string out, err;
};

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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

inline std::string Opscope() { return std::string(OPSCOPE_BINARY_DIR) + "/opscope"; }

// `cmd` is a shell command line; stderr is captured through a temporary file.
inline Result Shell(const std::string& cmd, const std::string& tmpdir) {
  Result r;
  std::string err_path = tmpdir + "/stderr.txt";
  FILE* f = popen((cmd + " 2>" + err_path).c_str(), "r");
  if (!f) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.out.append(buf, n);
  int st = pclose(f);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.err = Slurp(err_path);
  return r;
}

}  // namespace opscope::testing
