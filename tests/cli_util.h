// Runs the opscope binary (or any command) for end-to-end tests and captures its output.
#pragma once

#include <string>
#include <vector>

namespace opscope::testing {

struct CommandResult {
  int exit_code = -1;     // exit status, or 128+signal
  std::string out, err;
};

// argv[0] is resolved as given (use OpscopeBinary() for opscope). No shell involved.
CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& stdin_text = "");
// `cmd` is a /bin/sh command line (redirections, environment assignments, pipes).
CommandResult RunShell(const std::string& cmd);
// The bytes of a file; empty if it cannot be read.
std::string ReadAll(const std::string& path);
std::string OpscopeBinary();
// A fresh temporary directory, removed at exit.
std::string TempDir();

}  // namespace opscope::testing
