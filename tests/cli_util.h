// Runs the opscope binary (or any command) for end-to-end tests and captures its output.
#pragma once

#include <string>
#include <vector>

namespace opscope::testing {

struct CommandResult {
  int exit_code = -1;  // exit status, or 128+signal
  std::string out, err;
};

// argv[0] is resolved as given (use OpscopeBinary() for opscope). No shell involved.
CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& stdin_text = "");
// `cmd` is a /bin/sh command line (redirections, environment assignments, pipes).
CommandResult RunShell(const std::string& cmd);
// The bytes of a file; empty if it cannot be read.
std::string ReadAll(const std::string& path);
// The opscope binary as tests start it: the build's own, or in a cross build (the arm64 preset)
// a script that runs it under the emulator, so argv[0] and /bin/sh command lines work alike.
std::string OpscopeBinary();

// For signal tests: starts argv in a process group of its own (pid == pgid) with every signal at
// its default action, stdout and stderr going to the given files. Returns the pid, -1 on failure.
int StartInOwnGroup(const std::vector<std::string>& argv, const std::string& out_file,
                    const std::string& err_file);
// Polls every 10 ms until `path` exists; false after `timeout_s`.
bool WaitForFile(const std::string& path, double timeout_s = 60);
// Waits for `pid` (a child of this process): its exit status or 128+signal; -1 when it did not end
// within `timeout_s` (its process group is then killed).
int WaitForExit(int pid, double timeout_s = 60);
// A fresh temporary directory, removed at exit.
std::string TempDir();
// What report/trace_check.h finds wrong in the Chrome trace at `path` (nesting, times, required
// fields, names): "" when it keeps every rule. Every end-to-end test that writes a trace runs it.
std::string TraceProblems(const std::string& path);

}  // namespace opscope::testing
